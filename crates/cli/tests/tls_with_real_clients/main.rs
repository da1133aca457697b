//! Real clients over TLS, against `ferrolog serve` and a Kafka 4.4 broker configured alike, with
//! certificates made by `openssl` as an operator makes them:
//!
//! - an SSL listener requiring client certificates (a PEM key store), whose principal rule
//!   makes `O=Example, CN=alice` the super user `alice`;
//! - a SASL_SSL listener (a PKCS#12 key store) with PLAIN and SCRAM-SHA-512.
//!
//! Kafka's Java tools and console clients, kcat and confluent-kafka (librdkafka), kafka-python,
//! kafkajs and franz-go connect over both; each is refused with a certificate from a CA the broker does
//! not trust, without a certificate, and with a wrong password; a trusted certificate without
//! ACLs is refused by the authorizer. Both brokers must give the same transcript.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "../common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::kafka::{KafkaPeer, go_clients, kafka_available};
use common::security::{
    self, ClientTls, Credentials, PLAIN_MODULE, SCRAM_MODULE, ScriptedClient, java_config, refusal,
    tool,
};
use common::{Server, free_port, kcat};

mod certificates;

use certificates::certificates;

const CONFIGS: &str = "org.apache.kafka.tools.ConfigCommand";
const TOPICS: &str = "org.apache.kafka.tools.TopicCommand";
const ACLS: &str = "org.apache.kafka.tools.AclCommand";
const PRODUCER: &str = "org.apache.kafka.tools.ConsoleProducer";
const CONSUMER: &str = "org.apache.kafka.tools.consumer.ConsoleConsumer";

/// The TLS configuration both brokers share, beside their listeners and `super_users`.
fn security_lines(dir: &Path, super_users: &str) -> Vec<String> {
    let path = |file: &str| dir.join(file).display().to_string();
    vec![
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer".into(),
        format!("super.users={super_users}"),
        "ssl.keystore.type=PEM".into(),
        format!("ssl.keystore.location={}", path("broker.pem")),
        "ssl.truststore.type=PEM".into(),
        format!("ssl.truststore.location={}", path("test-ca.pem")),
        "listener.name.ssl.ssl.client.auth=required".into(),
        "ssl.principal.mapping.rules=RULE:^CN=(.*?),O=Example$/$1/,DEFAULT".into(),
        "listener.name.sasl_ssl.ssl.keystore.type=PKCS12".into(),
        format!(
            "listener.name.sasl_ssl.ssl.keystore.location={}",
            path("broker.p12")
        ),
        "listener.name.sasl_ssl.ssl.keystore.password=broker-secret".into(),
        "listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512".into(),
        format!(
            r#"listener.name.sasl_ssl.plain.sasl.jaas.config={PLAIN_MODULE} required user_admin="admin-secret";"#
        ),
        format!("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config={SCRAM_MODULE} required;"),
    ]
}

fn client(dir: &Path, identity: Option<&str>, ca: &str) -> ClientTls {
    let path = |file: String| dir.join(file).display().to_string();
    ClientTls {
        ca: path(format!("{ca}-ca.pem")),
        identity: identity.map(|name| (path(format!("{name}.crt")), path(format!("{name}.key")))),
    }
}

/// Everything the clients meet on one broker, one line per step.
fn transcript(ssl: u16, sasl_ssl: u16, certs: &Path, dir: &Path) -> Vec<String> {
    let ssl_bootstrap = format!("127.0.0.1:{ssl}");
    let sasl_bootstrap = format!("127.0.0.1:{sasl_ssl}");
    let alice = client(certs, Some("alice"), "test");
    let server_only = client(certs, None, "test");
    let admin: Credentials<'_> = ("PLAIN", "admin", "admin-secret");
    let mut lines = Vec::new();
    let java =
        |name: &str, bootstrap: &str, class: &str, config: &str, args: &[&str], stdin: &[u8]| {
            let mut all = vec!["--bootstrap-server", bootstrap, "--command-config", config];
            all.extend_from_slice(args);
            let (outcome, output) = tool(class, &all, stdin);
            if outcome.starts_with("ok") {
                format!("java {name}: {}", outcome.replace('\n', ","))
            } else {
                format!("java {name}: {outcome} {}", refusal(&output))
            }
        };

    // As alice, by her certificate: topics for each client, and bob's ACLs.
    let alice_config = java_config(dir, "alice.properties", None, Some(&alice));
    for topic in [
        "orders-java",
        "orders-kcat",
        "orders-kafka-python",
        "orders-confluent",
        "orders-kafkajs",
    ] {
        let line = java(
            "create as alice",
            &ssl_bootstrap,
            TOPICS,
            &alice_config,
            &[
                "--create",
                "--topic",
                topic,
                "--partitions",
                "1",
                "--replication-factor",
                "1",
            ],
            b"",
        );
        assert!(line.contains(": ok"), "{line}");
    }
    lines.push("java create as alice: ok".to_owned());
    for shape in [&["--producer"][..], &["--consumer", "--group", "billing"]] {
        let mut args = vec![
            "--add",
            "--allow-principal",
            "User:bob",
            "--topic",
            "orders-",
            "--resource-pattern-type",
            "prefixed",
        ];
        args.extend_from_slice(shape);
        let line = java("acls", &ssl_bootstrap, ACLS, &alice_config, &args, b"");
        assert!(line.contains(": ok"), "{line}");
    }
    let line = java(
        "acls",
        &ssl_bootstrap,
        ACLS,
        &alice_config,
        &[
            "--add",
            "--allow-principal",
            "User:bob",
            "--operation",
            "Read",
            "--group",
            "billing",
            "--resource-pattern-type",
            "prefixed",
        ],
        b"",
    );
    assert!(line.contains(": ok"), "{line}");

    // Refused in the handshake, or by the authorizer.
    for (name, tls) in [
        (
            "a stranger's certificate",
            client(certs, Some("eve"), "test"),
        ),
        ("no certificate", server_only.clone()),
    ] {
        let config = java_config(dir, "refused.properties", None, Some(&tls));
        lines.push(java(
            name,
            &ssl_bootstrap,
            TOPICS,
            &config,
            &["--list"],
            b"",
        ));
    }
    let mallory = java_config(
        dir,
        "mallory.properties",
        None,
        Some(&client(certs, Some("mallory"), "test")),
    );
    lines.push(java(
        "mallory creates",
        &ssl_bootstrap,
        TOPICS,
        &mallory,
        &[
            "--create",
            "--topic",
            "by-mallory",
            "--partitions",
            "1",
            "--replication-factor",
            "1",
        ],
        b"",
    ));

    // SASL_SSL: a SCRAM user made as the PLAIN administrator, producing and consuming.
    let admin_config = java_config(dir, "admin.properties", Some(admin), Some(&server_only));
    for (user, password) in [("bob", "bob-secret"), ("admin", "admin-secret")] {
        let config = format!("SCRAM-SHA-512=[password={password}]");
        lines.push(java(
            &format!("kafka-configs {user}"),
            &sasl_bootstrap,
            CONFIGS,
            &admin_config,
            &[
                "--alter",
                "--entity-type",
                "users",
                "--entity-name",
                user,
                "--add-config",
                &config,
            ],
            b"",
        ));
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    let bob = java_config(
        dir,
        "bob.properties",
        Some(("SCRAM-SHA-512", "bob", "bob-secret")),
        Some(&server_only),
    );
    lines.push(java(
        "producer as bob",
        &sasl_bootstrap,
        PRODUCER,
        &bob,
        &["--topic", "orders-java"],
        b"one\ntwo\nthree\n",
    ));
    lines.push(java(
        "consumer as bob",
        &sasl_bootstrap,
        CONSUMER,
        &bob,
        &[
            "--topic",
            "orders-java",
            "--group",
            "billing-java",
            "--from-beginning",
            "--max-messages",
            "3",
            "--timeout-ms",
            "30000",
        ],
        b"",
    ));
    // Bob's principal is his own: no ACL lets him write outside `orders-`.
    lines.push(java(
        "producer as bob outside his topics",
        &sasl_bootstrap,
        TOPICS,
        &bob,
        &[
            "--create",
            "--topic",
            "not-orders",
            "--partitions",
            "1",
            "--replication-factor",
            "1",
        ],
        b"",
    ));
    let wrong = java_config(
        dir,
        "wrong.properties",
        Some(("SCRAM-SHA-512", "bob", "bob-secreT")),
        Some(&server_only),
    );
    lines.push(java(
        "wrong password",
        &sasl_bootstrap,
        TOPICS,
        &wrong,
        &["--list"],
        b"",
    ));

    if let Some(kcat) = kcat() {
        let produced = security::kcat_run(
            &kcat,
            ssl,
            None,
            Some(&alice),
            &["-P", "-t", "orders-kcat"],
            b"a\nb\n",
        );
        let consumed = security::kcat_run(
            &kcat,
            ssl,
            None,
            Some(&alice),
            &["-C", "-t", "orders-kcat", "-e", "-q"],
            b"",
        );
        lines.push(format!(
            "kcat SSL alice: produce {produced}; consume {consumed}"
        ));
        let listed = security::kcat_run(
            &kcat,
            sasl_ssl,
            Some(admin),
            Some(&server_only),
            &["-L", "-t", "orders-kcat"],
            b"",
        );
        lines.push(format!(
            "kcat SASL_SSL admin: {}",
            if listed.starts_with("ok") {
                "ok"
            } else {
                &listed
            }
        ));
        for (name, sasl, tls) in [
            (
                "a stranger's certificate",
                None,
                client(certs, Some("eve"), "test"),
            ),
            ("no certificate", None, server_only.clone()),
            (
                "wrong password",
                Some(("PLAIN", "admin", "nope")),
                server_only.clone(),
            ),
        ] {
            let port = if sasl.is_some() { sasl_ssl } else { ssl };
            lines.push(format!(
                "kcat {name}: {}",
                security::kcat_run(&kcat, port, sasl, Some(&tls), &["-L"], b"")
            ));
        }
    }

    // kafka-python, confluent-kafka and kafkajs.
    for client_tool in ScriptedClient::installed() {
        let client_name = client_tool.name();
        let topic = format!("orders-{client_name}");
        for (name, port, sasl, tls) in [
            ("SSL alice", ssl, None, alice.clone()),
            (
                "SASL_SSL bob",
                sasl_ssl,
                Some(("SCRAM-SHA-512", "bob", "bob-secret")),
                server_only.clone(),
            ),
            (
                "a stranger's certificate",
                ssl,
                None,
                client(certs, Some("eve"), "test"),
            ),
            ("no certificate", ssl, None, server_only.clone()),
            (
                "wrong password",
                sasl_ssl,
                Some(("SCRAM-SHA-512", "bob", "nope")),
                server_only.clone(),
            ),
        ] {
            let group = format!("billing-{client_name}-{}", name.replace([' ', '\''], "-"));
            let outcome = client_tool.run(port, sasl, Some(&tls), &topic, &group);
            lines.push(format!("{client_name} {name}: {outcome}"));
        }
    }

    if let Some(go_clients) = go_clients() {
        for (name, sasl, tls) in [
            ("SSL alice", None, alice.clone()),
            (
                "SASL_SSL admin",
                Some("SCRAM-SHA-512:admin:admin-secret"),
                server_only.clone(),
            ),
            (
                "a stranger's certificate",
                None,
                client(certs, Some("eve"), "test"),
            ),
        ] {
            let port = if sasl.is_some() { sasl_ssl } else { ssl };
            let mut command = Command::new(&go_clients);
            command
                .args([
                    "franz",
                    &format!("127.0.0.1:{port}"),
                    &format!("franz-{}", name.replace(' ', "-").replace('\'', "")),
                ])
                .env("FERROLOG_TLS_CA", &tls.ca);
            if let Some(sasl) = sasl {
                command.env("FERROLOG_SASL", sasl);
            }
            if let Some((certificate, key)) = &tls.identity {
                command
                    .env("FERROLOG_TLS_CERT", certificate)
                    .env("FERROLOG_TLS_KEY", key);
            }
            let output = command.output().unwrap();
            lines.push(format!(
                "franz-go {name}: {}",
                if output.status.success() {
                    "ok"
                } else {
                    "failed"
                }
            ));
        }
    }
    lines
}

fn openssl_available() -> bool {
    let found = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "openssl is required under CI"
        );
        eprintln!("skipped: openssl is not installed");
    }
    found
}

#[test]
fn real_clients_speak_tls_and_are_refused_as_with_kafka() {
    if !kafka_available() || !openssl_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let certs: PathBuf = temp.path().join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    certificates(&certs);

    // The same clients against Kafka and against ferrolog, side by side: each mostly waits for
    // its clients' JVMs and timeouts.
    let certs = certs.as_path();
    let (from_kafka, (from_ferrolog, server)) = std::thread::scope(|scope| {
        let kafka_side = scope.spawn(|| {
            let (kafka_ssl, kafka_sasl) = (free_port(), free_port());
            let kafka = KafkaPeer::start_with_ports(&temp.path().join("kafka"), |port, controller| {
                let mut lines = vec![
                    format!("listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller},SSL://127.0.0.1:{kafka_ssl},SASL_SSL://127.0.0.1:{kafka_sasl}"),
                    format!("advertised.listeners=PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{kafka_ssl},SASL_SSL://127.0.0.1:{kafka_sasl}"),
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL".into(),
                ];
                // Kafka's own controller connects over PLAINTEXT as User:ANONYMOUS.
                lines.extend(security_lines(
                    certs,
                    "User:admin;User:alice;User:ANONYMOUS",
                ));
                lines
            });
            let kafka_dir = temp.path().join("kafka-clients");
            std::fs::create_dir_all(&kafka_dir).unwrap();
            let from_kafka = transcript(kafka_ssl, kafka_sasl, certs, &kafka_dir);
            drop(kafka);
            from_kafka
        });
        let (port, ssl, sasl_ssl) = (free_port(), free_port(), free_port());
        let mut overrides = vec![format!(
            "listeners=PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{ssl},SASL_SSL://127.0.0.1:{sasl_ssl}"
        )];
        // No ANONYMOUS here: a client wrongly taken for anonymous would not be a super user.
        overrides.extend(security_lines(certs, "User:admin;User:alice"));
        let overrides: Vec<&str> = overrides.iter().map(String::as_str).collect();
        let server = Server::start_on(port, &[], &temp.path().join("ferrolog"), &overrides, "warn");
        let ferrolog_dir = temp.path().join("ferrolog-clients");
        std::fs::create_dir_all(&ferrolog_dir).unwrap();
        let from_ferrolog = transcript(ssl, sasl_ssl, certs, &ferrolog_dir);
        (kafka_side.join().unwrap(), (from_ferrolog, server))
    });

    for line in &from_kafka {
        eprintln!("{line}");
    }
    for expected in [
        "java a stranger's certificate: failed refused: SSL handshake failed",
        "java no certificate: failed refused: SSL handshake failed",
        "java mallory creates: failed refused: not authorized",
        "java consumer as bob: ok one,two,three",
        "java producer as bob outside his topics: failed refused: not authorized",
        "java wrong password: failed refused: authentication failed",
        "kafkajs SSL alice: exit Some(0), ok 5",
        "kafkajs SASL_SSL bob: exit Some(0), ok 5",
        "kafkajs a stranger's certificate: exit Some(2), refused",
        "kafkajs no certificate: exit Some(2), refused",
        "kafkajs wrong password: exit Some(2), refused",
    ] {
        assert!(
            from_kafka.iter().any(|line| line == expected),
            "Kafka's transcript lacks {expected:?}: {from_kafka:#?}"
        );
    }
    assert_eq!(
        from_ferrolog, from_kafka,
        "ferrolog (left) and Kafka (right)"
    );
    server.stop();
}
