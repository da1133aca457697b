//! `ferrolog.log.level` sets the log filter from the configuration; an invalid filter stops
//! startup naming the key; `FERROLOG_LOG` in the environment wins over it.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::process::{Command, Stdio};
use std::time::Duration;

/// Starts `serve` with `level`, stops it after a moment, returns its stderr.
fn serve_with_level(level: &str, environment: Option<&str>) -> (bool, String) {
    let temp = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_ferrolog"));
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--log-dirs"])
        .arg(temp.path().join("data"))
        .args(["--override", &format!("ferrolog.log.level={level}")])
        .env_remove("FERROLOG_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(filter) = environment {
        command.env("FERROLOG_LOG", filter);
    }
    let child = command.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let output = child.wait_with_output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_configured_level_filters_and_the_environment_wins() {
    let (ok, quiet) = serve_with_level("warn", None);
    assert!(ok, "{quiet}");
    assert!(!quiet.contains("INFO"), "warn hides info lines:\n{quiet}");
    let (_, loud) = serve_with_level("warn", Some("info"));
    assert!(loud.contains("INFO"), "FERROLOG_LOG wins:\n{loud}");
}

#[test]
fn log_lines_written_to_a_pipe_carry_no_colour_codes() {
    let (_, lines) = serve_with_level("info", None);
    assert!(lines.contains("INFO"), "{lines}");
    assert!(
        !lines.contains('\u{1b}'),
        "terminal escape codes in a pipe:\n{lines:?}"
    );
}

#[test]
fn an_invalid_level_stops_startup_naming_the_key() {
    let (ok, stderr) = serve_with_level("info,=[", None);
    assert!(!ok);
    assert!(stderr.contains("ferrolog.log.level"), "{stderr}");
}
