//! What the security tests share: Java client configuration files, running Kafka's tools and
//! kcat with security settings, and telling a refusal from other failures.

use std::path::Path;
use std::process::{Command, Stdio};

use super::kafka::kafka_tool;

pub const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
pub const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// SASL credentials: mechanism, user, password.
pub type Credentials<'a> = (&'a str, &'a str, &'a str);

/// A client's TLS files: the CA to trust (PEM) and, for client authentication, its certificate
/// and key (PEM files).
#[derive(Clone, Debug)]
pub struct ClientTls {
    pub ca: String,
    pub identity: Option<(String, String)>,
}

/// The security protocol a client with `sasl` and `tls` speaks.
pub fn protocol(sasl: Option<Credentials<'_>>, tls: Option<&ClientTls>) -> &'static str {
    match (sasl.is_some(), tls.is_some()) {
        (false, false) => "PLAINTEXT",
        (false, true) => "SSL",
        (true, false) => "SASL_PLAINTEXT",
        (true, true) => "SASL_SSL",
    }
}

/// A Java client configuration file `name` in `dir`, with short timeouts; its path.
pub fn java_config(
    dir: &Path,
    name: &str,
    sasl: Option<Credentials<'_>>,
    tls: Option<&ClientTls>,
) -> String {
    let mut text = format!(
        "request.timeout.ms=4000\ndefault.api.timeout.ms=8000\nmax.block.ms=8000\nsecurity.protocol={}\n",
        protocol(sasl, tls)
    );
    if let Some((mechanism, user, password)) = sasl {
        let module = if mechanism == "PLAIN" {
            PLAIN_MODULE
        } else {
            SCRAM_MODULE
        };
        text.push_str(&format!(
            "sasl.mechanism={mechanism}\nsasl.jaas.config={module} required username=\"{user}\" password=\"{password}\";\n"
        ));
    }
    if let Some(tls) = tls {
        text.push_str(&format!(
            "ssl.truststore.type=PEM\nssl.truststore.location={}\n",
            tls.ca
        ));
        if let Some((certificate, key)) = &tls.identity {
            // Kafka's PEM key store: one file holding the key and the certificate.
            let both = dir.join(format!("{name}.pem"));
            let text_of = |path: &str| std::fs::read_to_string(path).unwrap();
            std::fs::write(&both, format!("{}{}", text_of(key), text_of(certificate))).unwrap();
            text.push_str(&format!(
                "ssl.keystore.type=PEM\nssl.keystore.location={}\n",
                both.display()
            ));
        }
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Runs a Kafka tool; `ok <stdout>` or `failed`, and all it printed.
pub fn tool(class: &str, args: &[&str], stdin: &[u8]) -> (String, String) {
    let output = kafka_tool(class, args, stdin);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let outcome = if output.status.success() {
        format!("ok {}", stdout.trim())
    } else {
        "failed".to_owned()
    };
    (outcome, format!("{stdout}{stderr}"))
}

/// How `output` shows the client was refused, or what it says when it was not refused.
pub fn refusal(output: &str) -> String {
    if output.contains("Authentication failed") {
        "refused: authentication failed".into()
    } else if output.contains("SSL handshake failed")
        || output.contains("SslAuthenticationException")
    {
        "refused: SSL handshake failed".into()
    } else if output.contains("Authorization failed") || output.contains("not authorized") {
        "refused: not authorized".into()
    } else if output.contains("Timed out")
        || output.contains("timed out")
        || output.contains("Timeout")
    {
        "refused: timed out".into()
    } else {
        format!("not refused as expected: {output}")
    }
}

/// Runs kcat against `port` with `sasl` and `tls`; `ok <sorted lines>` or how it was refused.
pub fn kcat_run(
    kcat: &Path,
    port: u16,
    sasl: Option<Credentials<'_>>,
    tls: Option<&ClientTls>,
    args: &[&str],
    stdin: &[u8],
) -> String {
    let mut settings = vec![format!("security.protocol={}", protocol(sasl, tls))];
    if let Some((mechanism, user, password)) = sasl {
        settings.push(format!("sasl.mechanisms={mechanism}"));
        settings.push(format!("sasl.username={user}"));
        settings.push(format!("sasl.password={password}"));
    }
    if let Some(tls) = tls {
        settings.push(format!("ssl.ca.location={}", tls.ca));
        if let Some((certificate, key)) = &tls.identity {
            settings.push(format!("ssl.certificate.location={certificate}"));
            settings.push(format!("ssl.key.location={key}"));
        }
    }
    let mut command = Command::new(kcat);
    command.args(["-b", &format!("127.0.0.1:{port}"), "-m", "8"]);
    for setting in &settings {
        command.args(["-X", setting]);
    }
    let mut child = command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        let mut lines: Vec<&str> = stdout.lines().collect();
        lines.sort_unstable();
        return format!("ok {}", lines.join(","));
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("Authentication failed") || stderr.contains("SASL authentication error") {
        "refused: authentication failed".into()
    } else if stderr.contains("SSL handshake failed") || stderr.contains("SSL transport error") {
        "refused: SSL handshake failed".into()
    } else if stderr.contains("metadata") {
        // Without credentials librdkafka never gets metadata.
        "refused: no metadata".into()
    } else {
        format!("refused: {}", stderr.trim())
    }
}

/// Runs `tests/python/sasl_clients.py` with `client` (`kafka-python` or `confluent`) against
/// `port`, producing five records to `topic` and reading them back in `group`: `exit Some(0),
/// ok 5`, or `exit Some(2), refused` when the broker would not let it in, or what it printed.
pub fn python_client(
    python: &str,
    client: &str,
    port: u16,
    sasl: Option<Credentials<'_>>,
    tls: Option<&ClientTls>,
    topic: &str,
    group: &str,
) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/sasl_clients.py");
    let mut command = Command::new(python);
    command.arg(script).args([&port.to_string(), client]);
    scripted_client(command, sasl, tls, topic, group)
}

/// Runs `tools/nodeclients/security_clients.js` (kafkajs, from `node_modules`) as
/// [`python_client`] runs its script, with the same outcomes.
pub fn kafkajs_client(
    node_modules: &Path,
    port: u16,
    sasl: Option<Credentials<'_>>,
    tls: Option<&ClientTls>,
    topic: &str,
    group: &str,
) -> String {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/nodeclients/security_clients.js");
    let mut command = Command::new("node");
    command
        .env("NODE_PATH", node_modules)
        .arg(script)
        .arg(port.to_string());
    scripted_client(command, sasl, tls, topic, group)
}

/// A client driven by a script that produces five records and reads them back: kafka-python
/// or confluent-kafka (`tests/python/sasl_clients.py`), or kafkajs.
#[derive(Debug, Clone)]
pub enum ScriptedClient {
    /// The Python interpreter and the client's name (`kafka-python` or `confluent`).
    Python(String, &'static str),
    /// The `node_modules` holding kafkajs.
    Kafkajs(std::path::PathBuf),
}

impl ScriptedClient {
    /// Every scripted client installed here: kafka-python and confluent-kafka, then kafkajs.
    pub fn installed() -> Vec<Self> {
        let mut clients = Vec::new();
        if let Some(python) = super::python_with_confluent_kafka() {
            for name in ["kafka-python", "confluent"] {
                clients.push(Self::Python(python.clone(), name));
            }
        }
        clients.extend(super::kafkajs_modules().map(Self::Kafkajs));
        clients
    }

    pub fn name(&self) -> &'static str {
        match self {
            Self::Python(_, name) => name,
            Self::Kafkajs(_) => "kafkajs",
        }
    }

    /// Produces five records to `topic` and reads them back in `group` (see
    /// [`python_client`]): `exit Some(0), ok 5`, or `exit Some(2), refused`.
    pub fn run(
        &self,
        port: u16,
        sasl: Option<Credentials<'_>>,
        tls: Option<&ClientTls>,
        topic: &str,
        group: &str,
    ) -> String {
        match self {
            Self::Python(python, name) => {
                python_client(python, name, port, sasl, tls, topic, group)
            }
            Self::Kafkajs(modules) => kafkajs_client(modules, port, sasl, tls, topic, group),
        }
    }
}

/// Runs a client script given its credentials, TLS files, topic and group (the arguments and
/// environment both scripts take) and says how it went.
fn scripted_client(
    mut command: Command,
    sasl: Option<Credentials<'_>>,
    tls: Option<&ClientTls>,
    topic: &str,
    group: &str,
) -> String {
    let (mechanism, user, password) = sasl.unwrap_or(("none", "-", "-"));
    command.args([mechanism, user, password, topic, group]);
    if let Some(tls) = tls {
        command.env("FERROLOG_TLS_CA", &tls.ca);
        if let Some((certificate, key)) = &tls.identity {
            command
                .env("FERROLOG_TLS_CERT", certificate)
                .env("FERROLOG_TLS_KEY", key);
        }
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let said = if stdout.starts_with("refused") {
        "refused".to_owned()
    } else {
        stdout.trim().to_owned()
    };
    format!("exit {:?}, {said}", output.status.code())
}
