//! Apache Kafka 4.4 beside ferrolog: a single-node KRaft broker started and stopped through
//! `scripts/kafka.sh`, and Kafka's command-line tools run by their main classes. Tests that
//! need them are skipped with a message where Java or Kafka's jars (`scripts/kafka.sh install`)
//! are missing, except under CI, where the README's test command installs them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::free_port;

/// Kafka's `kafka-configs` main class.
pub const CONFIG_COMMAND: &str = "org.apache.kafka.tools.ConfigCommand";
/// Kafka's `kafka-topics`.
pub const TOPIC_COMMAND: &str = "org.apache.kafka.tools.TopicCommand";

/// `kafka-configs` arguments (after `--bootstrap-server`) that delete node 0's throttle of
/// moves between data directories, going back to its `server.properties`.
pub const DELETE_MOVE_THROTTLE: &[&str] = &[
    "--alter",
    "--entity-type",
    "brokers",
    "--entity-name",
    "0",
    "--delete-config",
    "replica.alter.log.dirs.io.max.bytes.per.second",
];

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh")
}

/// Whether Kafka 4.4 can run here; prints why a test is skipped when it cannot.
pub fn kafka_available() -> bool {
    let libs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/kafka/libs/.complete");
    let java = Command::new("java")
        .arg("-version")
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if java && libs.exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "Java and Kafka 4.4's jars (scripts/kafka.sh install) are required under CI"
    );
    eprintln!("skipped: Kafka 4.4 is not installed here (scripts/kafka.sh install; needs Java 17)");
    false
}

/// The Go clients' scenario runner (tools/goclients, built by the test command), or `None`
/// after saying why the test is skipped; under CI it is required.
pub fn go_clients() -> Option<PathBuf> {
    let binary = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/goclients/goclients");
    if binary.exists() {
        return Some(binary);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the Go clients (target/goclients/goclients, built by scripts/test.sh) are required under CI"
    );
    eprintln!("skipped: the Go clients are not built (scripts/test.sh builds them)");
    None
}

/// A running Kafka 4.4 broker; killed when dropped.
pub struct KafkaPeer {
    pid: u32,
    pub port: u16,
    pub data_dir: PathBuf,
    controller_port: u16,
    /// Lines added to the broker's configuration.
    extra: Vec<String>,
}

impl KafkaPeer {
    /// Formats `data_dir` when it is new and starts a broker on it; returns once it answers.
    pub fn start(data_dir: &Path, extra: &[&str]) -> Self {
        let extra: Vec<String> = extra.iter().map(|line| (*line).to_owned()).collect();
        Self::start_with_ports(data_dir, |_, _| extra)
    }

    /// As [`KafkaPeer::start`], with configuration lines that name the broker's port and its
    /// controller's (`extra(port, controller_port)`), to add listeners, say.
    pub fn start_with_ports(data_dir: &Path, extra: impl FnOnce(u16, u16) -> Vec<String>) -> Self {
        let (port, controller_port) = (free_port(), free_port());
        let extra = extra(port, controller_port);
        let pid = start(data_dir, port, controller_port, &extra);
        Self {
            pid,
            port,
            data_dir: data_dir.to_owned(),
            controller_port,
            extra,
        }
    }

    /// Starts a broker again on the same data dir and ports, after [`KafkaPeer::stop`] or
    /// [`KafkaPeer::kill`].
    pub fn restart(&mut self) {
        self.pid = start(&self.data_dir, self.port, self.controller_port, &self.extra);
    }

    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A clean shutdown (SIGTERM), waiting until the process is gone.
    pub fn stop(&mut self) {
        let status = Command::new(script())
            .args(["stop", &self.pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.wait_gone();
    }

    /// SIGKILL: no shutdown at all.
    pub fn kill(&mut self) {
        let _ = Command::new("kill")
            .args(["-9", &self.pid.to_string()])
            .status();
        self.wait_gone();
    }

    fn wait_gone(&self) {
        let started = Instant::now();
        while Path::new(&format!("/proc/{}", self.pid)).exists()
            && !is_zombie(self.pid)
            && started.elapsed() < Duration::from_secs(60)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The broker's own log, shown when a test fails.
    pub fn log(&self) -> String {
        let log = self
            .data_dir
            .parent()
            .unwrap()
            .join(format!("kafka-{}.log", self.port));
        std::fs::read_to_string(log).unwrap_or_default()
    }
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn start(data_dir: &Path, port: u16, controller_port: u16, extra: &[String]) -> u32 {
    let output = Command::new(script())
        .arg("start")
        .arg(data_dir)
        .args([port.to_string(), controller_port.to_string()])
        .env("FERROLOG_KAFKA_EXTRA", extra.join("\n"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "Kafka did not start: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap()
}

impl Drop for KafkaPeer {
    fn drop(&mut self) {
        if Path::new(&format!("/proc/{}", self.pid)).exists() {
            self.kill();
        }
    }
}

/// Runs one of Kafka's tools (its main class) with `args`, feeding it `stdin`.
pub fn kafka_tool(class: &str, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(script())
        .arg("run")
        .arg(class)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

/// Runs a Kafka tool that must succeed; returns its stdout.
pub fn kafka_tool_ok(class: &str, args: &[&str], stdin: &[u8]) -> String {
    let output = kafka_tool(class, args, stdin);
    assert!(
        output.status.success(),
        "{class} {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The APIs Kafka 4.4 lists in ApiVersions that ferrolog does not (docs/operations.md says
/// why), as `kafka-broker-api-versions` names them.
pub const LISTED_BY_KAFKA_ONLY: [&str; 9] = [
    "AddRaftVoter",
    "DeleteShareGroupState",
    "InitializeShareGroupState",
    "ReadShareGroupState",
    "ReadShareGroupStateSummary",
    "RemoveRaftVoter",
    "UnregisterBroker",
    "UnregisterController",
    "WriteShareGroupState",
];

/// What `kafka-broker-api-versions` prints for the broker at `bootstrap`, and the names of the
/// APIs it finds usable there.
pub fn listed_apis(bootstrap: &str) -> (String, std::collections::BTreeSet<String>) {
    let versions = kafka_tool_ok(
        "org.apache.kafka.tools.BrokerApiVersionsCommand",
        &["--bootstrap-server", bootstrap],
        b"",
    );
    let names = versions
        .lines()
        .filter(|line| line.contains("[usable: "))
        .filter_map(|line| line.trim().split('(').next())
        .map(str::to_owned)
        .collect();
    (versions, names)
}
