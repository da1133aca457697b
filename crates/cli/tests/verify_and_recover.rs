//! `ferrolog verify` passes clean data dirs (Kafka's and ferrolog's) and finds each planted
//! fault with its file and position; `ferrolog recover` cuts the damage verify found, says what
//! it cut, and leaves a directory verify passes.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use ferrolog_testkit::{copy_to_temp, kafka_fixtures};

fn ferrolog(args: &[&str], dir: &Path) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_ferrolog"))
        .args(args)
        .arg("--log-dirs")
        .arg(dir)
        .env("FERROLOG_LOG", "warn")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

fn verify(dir: &Path) -> (bool, String) {
    ferrolog(&["verify"], dir)
}

/// A data dir written by ferrolog itself, shut down cleanly: four partitions of 2,000 records.
fn ferrolog_dir() -> (tempfile::TempDir, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let output = Command::new(env!("CARGO_BIN_EXE_ferrolog"))
        .args([
            "demo",
            "--records",
            "2000",
            "--record-bytes",
            "100",
            "--data-dir",
        ])
        .arg(&dir)
        .env("FERROLOG_LOG", "warn")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    (temp, dir)
}

fn append(path: &Path, bytes: &[u8]) {
    OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

fn flip_byte(path: &Path, position: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[position as usize] ^= 0xff;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn clean_kafka_and_ferrolog_dirs_pass() {
    let (_temp, dir) = ferrolog_dir();
    let (ok, out) = verify(&dir);
    assert!(ok, "{out}");
    assert!(
        out.contains("4 partitions") && out.contains("No problems found."),
        "{out}"
    );
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    for name in ["KAIPASUBHASH-kafka-logs", "LDI-POC", "VolodymyrZee-kafka"] {
        let copy = copy_to_temp(&fixtures.join(name));
        let (ok, out) = verify(copy.path());
        assert!(ok, "{name}: {out}");
    }
}

#[test]
fn every_planted_fault_is_found_with_its_file_and_position() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let copy = copy_to_temp(&fixtures.join("LDI-POC"));
    let dir = copy.path();
    let partition = dir.join("__consumer_offsets-6");
    let log = partition.join("00000000000000000000.log");
    // A flipped byte inside the batch at position 4730 (base offset 3).
    flip_byte(&log, 4730 + 100);
    // A torn tail: half a batch header after the last batch.
    let log_length = std::fs::metadata(&log).unwrap().len();
    append(&log, &[0, 0, 0, 0, 0, 0, 0, 13, 0, 0, 1, 0, 0, 0, 0, 0, 9]);
    // An index entry pointing past the log: relative offset 20 at position 99,999.
    let index = partition.join("00000000000000000000.index");
    append(&index, &[0, 0, 0, 20, 0, 1, 0x86, 0x9f]);
    // A recovery point beyond TestTopicPatient-0's end (3).
    let checkpoint = dir.join("recovery-point-offset-checkpoint");
    let text = std::fs::read_to_string(&checkpoint).unwrap();
    let planted: Vec<&str> = text
        .lines()
        .map(|line| {
            if line == "TestTopicPatient 0 0" {
                "TestTopicPatient 0 77"
            } else {
                line
            }
        })
        .collect();
    std::fs::write(&checkpoint, planted.join("\n") + "\n").unwrap();
    // A stray .swap from an interrupted cleaning.
    let swap = dir.join("TestTopicPatient-0/00000000000000000000.log.swap");
    std::fs::write(&swap, b"").unwrap();

    let (ok, out) = verify(dir);
    assert!(!ok, "{out}");
    let expect = |needle: String| assert!(out.contains(&needle), "missing {needle:?} in\n{out}");
    expect(format!(
        "{}: batch at position 4730: checksum mismatch",
        log.display()
    ));
    expect(format!(
        "{}: 17 bytes at position {log_length} do not hold a whole batch",
        log.display()
    ));
    expect(format!(
        "{}: entry 2 (byte 16): position 99999 is past the end of the log",
        index.display()
    ));
    expect(format!(
        "{}: TestTopicPatient-0: recovery point 77 is beyond the log end offset 3",
        checkpoint.display()
    ));
    expect(format!("{}: a leftover .swap file", swap.display()));
    assert!(out.contains("5 problem(s)"), "{out}");
}

#[test]
fn recover_cuts_what_verify_found_and_the_dir_then_verifies() {
    let (_temp, dir) = ferrolog_dir();
    let partition = dir.join("demo-0");
    let mut logs: Vec<PathBuf> = std::fs::read_dir(&partition)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let last = logs.last().unwrap().clone();
    let length = std::fs::metadata(&last).unwrap().len();
    flip_byte(&last, length - 10);
    let (ok, out) = verify(&dir);
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!("{}: batch at position", last.display())),
        "{out}"
    );

    // A clean shutdown marker is there, so only --force recovers the damaged segment.
    let (ok, out) = ferrolog(&["recover", "--force"], &dir);
    assert!(ok, "{out}");
    assert!(out.contains("demo-0:") && out.contains("cut "), "{out}");
    assert!(
        out.contains("checksum mismatch"),
        "the reason is named: {out}"
    );
    let (ok, out) = verify(&dir);
    assert!(ok, "after recovery: {out}");
}
