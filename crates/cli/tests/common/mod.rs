//! What the real-client tests share: a `ferrolog serve` child process on a free port, and the
//! clients (a python with kafka-python and confluent-kafka, kcat), which are skipped with a
//! message when missing, except under CI, where they are required.

#![allow(dead_code, reason = "each test file uses part of this")]

pub mod answers;
pub mod consumer_groups;
pub mod epochs;
pub mod group_member;
pub mod kafka;
pub mod logs;
pub mod security;
pub mod wire;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct Server {
    child: Child,
    pub port: u16,
    /// The broker's stderr (warnings and errors), shown when it fails.
    stderr: tempfile::NamedTempFile,
}

impl Server {
    pub fn start(data_dir: &Path) -> Self {
        Self::start_with(data_dir, &[])
    }

    /// Starts with `--override key=value` for each of `overrides`.
    pub fn start_with(data_dir: &Path, overrides: &[&str]) -> Self {
        Self::start_logging(data_dir, overrides, "warn")
    }

    /// Starts with `overrides` and `FERROLOG_LOG=log_filter`; see [`Server::stderr`].
    pub fn start_logging(data_dir: &Path, overrides: &[&str], log_filter: &str) -> Self {
        Self::start_under(&[], data_dir, overrides, log_filter)
    }

    /// Starts as an argument of `wrapper` (say, `prlimit --nofile=N`), with `overrides`.
    pub fn start_under(
        wrapper: &[&str],
        data_dir: &Path,
        overrides: &[&str],
        log_filter: &str,
    ) -> Self {
        Self::start_on(free_port(), wrapper, data_dir, overrides, log_filter)
    }

    /// Starts listening on `port` (overrides may add listeners, keeping a PLAINTEXT one on it:
    /// the broker is taken to have started when it accepts a connection there).
    pub fn start_on(
        port: u16,
        wrapper: &[&str],
        data_dir: &Path,
        overrides: &[&str],
        log_filter: &str,
    ) -> Self {
        let stderr = tempfile::NamedTempFile::new().unwrap();
        let program = env!("CARGO_BIN_EXE_ferrolog");
        let mut command = match wrapper.split_first() {
            Some((first, rest)) => {
                let mut command = Command::new(first);
                command.args(rest).arg(program);
                command
            }
            None => Command::new(program),
        };
        let child = command
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--log-dirs",
            ])
            .arg(data_dir)
            .args(overrides.iter().flat_map(|o| ["--override", o]))
            .env("FERROLOG_LOG", log_filter)
            .stdout(Stdio::null())
            .stderr(stderr.reopen().unwrap())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the broker did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child,
            port,
            stderr,
        }
    }

    /// The broker's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the broker process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// What the broker has logged so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr.path()).unwrap_or_default()
    }

    /// SIGTERM, then wait for the clean shutdown to finish.
    pub fn stop(mut self) {
        let status = Command::new("kill")
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
        let status = self.child.wait().unwrap();
        assert!(
            status.success(),
            "clean shutdown exits 0: {status:?}; stderr:\n{}",
            std::fs::read_to_string(self.stderr.path()).unwrap_or_default()
        );
    }
}

impl Server {
    /// SIGKILL: no shutdown at all.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn python() -> Option<String> {
    let python = std::env::var("FERROLOG_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let ok = Command::new(&python)
        .args(["-c", "import kafka, lz4, zstandard, snappy"])
        .status()
        .is_ok_and(|status| status.success());
    if ok {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "kafka-python is required under CI"
    );
    eprintln!("skipped: no python with kafka-python (set FERROLOG_PYTHON)");
    None
}

/// Whether `prlimit` can lower a process's file limit here (it needs util-linux, and a
/// sandbox may forbid it); when not, the test says it skipped.
pub fn prlimit_works() -> bool {
    let works = std::process::Command::new("prlimit")
        .args(["--nofile=64:64", "true"])
        .status()
        .is_ok_and(|status| status.success());
    if !works {
        println!("skipped: prlimit cannot lower the file limit here");
    }
    works
}

pub fn kcat() -> Option<PathBuf> {
    let found = Command::new("kcat")
        .arg("-V")
        .output()
        .is_ok_and(|output| output.status.success());
    if found {
        return Some(PathBuf::from("kcat"));
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "kcat is required under CI"
    );
    eprintln!("skipped: kcat is not installed");
    None
}

/// Runs kcat with `args` against the broker on `port`; returns its output lines, failing the
/// test with kcat's stderr when it fails.
pub fn kcat_lines(kcat: &Path, port: u16, args: &[&str]) -> Vec<String> {
    let output = Command::new(kcat)
        .args(["-b", &format!("127.0.0.1:{port}")])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "kcat {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A python that also has confluent-kafka (`None`, after a message, when it lacks it).
pub fn python_with_confluent_kafka() -> Option<String> {
    let python = python()?;
    let has_client = Command::new(&python)
        .args(["-c", "import confluent_kafka"])
        .status()
        .is_ok_and(|status| status.success());
    if has_client {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "confluent-kafka is required under CI"
    );
    eprintln!("skipped: no confluent-kafka in {python}");
    None
}

/// Copies the directory `from` to `to` with everything in it (`cp -a`): a test's copy of a
/// data directory a broker wrote.
pub fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
}

/// The `node_modules` holding kafkajs (`target/nodeclients`, installed by scripts/test.sh),
/// when it and Node.js are there; required under CI.
pub fn kafkajs_modules() -> Option<PathBuf> {
    let modules =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/nodeclients/node_modules");
    let node_runs = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if node_runs && modules.join("kafkajs").is_dir() {
        return Some(modules);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "Node.js and kafkajs (target/nodeclients, installed by scripts/test.sh) are required under CI"
    );
    eprintln!("skipped: kafkajs is not installed (scripts/test.sh installs it)");
    None
}

/// Runs `tests/python/<script>` with the port and `args`; returns its stdout, failing the test
/// with both outputs when it fails.
pub fn run_script(python: &str, script: &str, port: u16, args: &[&str]) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(script);
    let output = Command::new(python)
        .arg(path)
        .arg(port.to_string())
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{script} {args:?} failed:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// `ferrolog move-to-kafka ARGS`, which must succeed: its standard output.
pub fn move_to_kafka(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_ferrolog"))
        .arg("move-to-kafka")
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "ferrolog move-to-kafka {args:?}:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}
