//! `ferrolog demo` creates its data directory, survives its own unclean restart, reads every
//! record back, and leaves a directory that opens cleanly.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::process::Command;

#[test]
fn demo_round_trips_through_an_unclean_restart() {
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_ferrolog"))
            .args([
                "demo",
                "--records",
                "3000",
                "--record-bytes",
                "200",
                "--data-dir",
            ])
            .arg(&data_dir)
            .output()
            .unwrap()
    };
    let first = run();
    let stdout = String::from_utf8_lossy(&first.stdout);
    assert!(
        first.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(
        stdout.contains("read back          3000 records"),
        "{stdout}"
    );
    assert!(
        stdout.contains("4 logs loaded, 4 segments recovered"),
        "{stdout}"
    );
    assert!(data_dir.join(".kafka_cleanshutdown").exists());
    // A second run appends after the first run's records.
    let second = run();
    let stdout = String::from_utf8_lossy(&second.stdout);
    assert!(second.status.success(), "{stdout}");
    assert!(
        stdout.contains("demo-0           offsets 0..1504"),
        "{stdout}"
    );
}
