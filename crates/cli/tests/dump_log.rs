//! `ferrolog dump-log` on Kafka's files and on damaged ones: batch headers and records are
//! printed as kafka-dump-log.sh prints them, indexes are checked against the log, and damage is
//! reported with its byte position and a non-zero exit, never a panic.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::Path;
use std::process::Command;

use ferrolog_testkit::{copy_to_temp, kafka_fixtures};

fn dump(args: &[&str], files: &[&Path]) -> (bool, String) {
    let files: Vec<String> = files
        .iter()
        .map(|path| path.display().to_string())
        .collect();
    let output = Command::new(env!("CARGO_BIN_EXE_ferrolog"))
        .arg("dump-log")
        .args(args)
        .arg("--files")
        .arg(files.join(","))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn dumps_a_kafka_segment_with_its_records_and_checks_its_indexes() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let dir = fixtures.join("LDI-POC/__consumer_offsets-6");
    let (ok, out) = dump(
        &["--print-data-log"],
        &[
            &dir.join("00000000000000000000.log"),
            &dir.join("00000000000000000000.index"),
            &dir.join("00000000000000000000.timeindex"),
        ],
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("baseOffset: 3 lastOffset: 3 count: 1"),
        "{out}"
    );
    assert!(out.contains("position: 4730"), "{out}");
    assert!(out.contains("isvalid: true"));
    assert!(
        out.contains("| offset: 12 CreateTime: 1769793578176"),
        "{out}"
    );
    assert!(
        out.contains("offset: 3 position: 4730\noffset: 7 position: 9571"),
        "{out}"
    );
    assert!(out.contains("timestamp: 1769793578176 offset: 12"), "{out}");
    assert_eq!(
        out.matches("every entry agrees with the log").count(),
        2,
        "{out}"
    );
}

#[test]
fn prints_values_of_a_zookeeper_era_topic() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let log = fixtures.join("VolodymyrZee-kafka/first_topic-0/00000000000000000000.log");
    let (ok, out) = dump(&["--print-data-log"], &[&log]);
    assert!(ok);
    assert!(out.contains("payload: just for fun"), "{out}");
    assert!(out.contains("payload: because lets try"), "{out}");
}

#[test]
fn reports_a_flipped_byte_and_a_torn_tail_with_their_positions() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let copy = copy_to_temp(&fixtures.join("LDI-POC/__consumer_offsets-6"));
    let log = copy.path().join("00000000000000000000.log");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[4730 + 70] ^= 0x40; // inside the batch at position 4730
    bytes.truncate(bytes.len() - 10); // tear the last batch
    std::fs::write(&log, &bytes).unwrap();
    let (ok, out) = dump(&[], &[&log]);
    assert!(!ok);
    assert!(out.contains("invalid batch at position 4730"), "{out}");
    assert!(out.contains("are not a whole batch"), "{out}");
}

#[test]
fn reports_an_index_entry_pointing_past_the_log() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let copy = copy_to_temp(&fixtures.join("LDI-POC/__consumer_offsets-6"));
    let index = copy.path().join("00000000000000000000.index");
    let mut bytes = std::fs::read(&index).unwrap();
    bytes[12..16].copy_from_slice(&1_000_000i32.to_be_bytes());
    std::fs::write(&index, &bytes).unwrap();
    let (ok, out) = dump(&[], &[&index]);
    assert!(!ok);
    assert!(
        out.contains("entry 1 (byte 8): position 1000000 is past the end of the log"),
        "{out}"
    );
}

#[test]
fn garbage_files_are_reported_not_panicked_on() {
    let temp = tempfile::tempdir().unwrap();
    let mut state = 7u32;
    for (name, len) in [
        ("00000000000000000000.log", 5000),
        ("00000000000000000000.index", 83),
        ("00000000000000000000.timeindex", 97),
    ] {
        let garbage: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                state as u8
            })
            .collect();
        std::fs::write(temp.path().join(name), garbage).unwrap();
    }
    let paths: Vec<_> = [
        "00000000000000000000.log",
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
    ]
    .iter()
    .map(|name| temp.path().join(name))
    .collect();
    let refs: Vec<&Path> = paths.iter().map(|path| path.as_path()).collect();
    let (ok, _) = dump(&["--print-data-log"], &refs);
    assert!(!ok);
    let (ok, out) = dump(&[], &[&temp.path().join("00000000000000000099.log")]);
    assert!(!ok);
    assert!(out.contains("no such file"), "{out}");
}
