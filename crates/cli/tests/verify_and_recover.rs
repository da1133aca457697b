//! `ferrolog verify` passes clean data dirs (Kafka's and ferrolog's) and finds each planted
//! fault with its file and position; `ferrolog recover` cuts the damage verify found, says what
//! it cut, and leaves a directory verify passes.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use std::sync::Arc;

use ferrolog_storage::Offset;
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{LogConfig, SystemClock, TopicPartition};
use ferrolog_testkit::{copy_to_temp, kafka_fixtures, numbered_batch};

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

/// Plants five faults in `dir`: a flipped byte in the batch at `batch_position` of
/// `partition`'s first (and only) segment, a torn tail on it, an index entry past its end, a
/// recovery point beyond the end of `checkpointed` (whose log ends at `end`), and a stray
/// `.swap` in `swap_partition`. Then verify must name each, with its file and position: the
/// damage as problems, the `.swap` as a note (startup settles it), and the torn tail as a
/// problem after a clean stop but a note after an unclean one (a crash tears the last write,
/// and startup recovery cuts it).
fn plant_and_verify(
    dir: &Path,
    partition: &str,
    batch_position: u64,
    checkpointed: (&str, i32, i64),
    swap_partition: &str,
) {
    let stopped_cleanly = dir.join(".kafka_cleanshutdown").exists();
    let log = dir.join(partition).join("00000000000000000000.log");
    flip_byte(&log, batch_position + 70);
    let log_length = std::fs::metadata(&log).unwrap().len();
    append(&log, &[0, 0, 0, 0, 0, 0, 0, 13, 0, 0, 1, 0, 0, 0, 0, 0, 9]);
    let index = dir.join(partition).join("00000000000000000000.index");
    let entries = std::fs::metadata(&index).unwrap().len() / 8;
    // Relative offset 0x7fff0000 at position 99,999: after every real entry, past the log.
    append(&index, &[0x7f, 0xff, 0, 0, 0, 1, 0x86, 0x9f]);
    let checkpoint = dir.join("recovery-point-offset-checkpoint");
    let (topic, number, end) = checkpointed;
    let text = std::fs::read_to_string(&checkpoint).unwrap();
    let planted: Vec<String> = text
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            if fields.len() == 3 && fields[0] == topic && fields[1] == number.to_string() {
                format!("{topic} {number} {}", end + 74)
            } else {
                line.to_owned()
            }
        })
        .collect();
    std::fs::write(&checkpoint, planted.join("\n") + "\n").unwrap();
    let swap = dir
        .join(swap_partition)
        .join("00000000000000000000.log.swap");
    std::fs::write(&swap, b"").unwrap();

    let (ok, out) = verify(dir);
    assert!(!ok, "{out}");
    let (notes, problems) = out.split_once("problem(s):").unwrap();
    let expect = |within: &str, needle: String| {
        assert!(within.contains(&needle), "missing {needle:?} in\n{out}");
    };
    expect(
        problems,
        format!(
            "{}: batch at position {batch_position}: checksum mismatch",
            log.display()
        ),
    );
    expect(
        if stopped_cleanly { problems } else { notes },
        format!(
            "{}: the last 17 bytes, from position {log_length}, are not a whole batch",
            log.display()
        ),
    );
    expect(
        problems,
        format!(
            "{}: entry {entries} (byte {}): position 99999 is past the end of the log",
            index.display(),
            entries * 8
        ),
    );
    expect(
        problems,
        format!(
            "{}: {topic}-{number}: recovery point {} is beyond the log end offset {end}",
            checkpoint.display(),
            end + 74
        ),
    );
    expect(notes, format!("note: {}: a .swap file", swap.display()));
    let count = if stopped_cleanly { 4 } else { 3 };
    assert!(out.contains(&format!("{count} problem(s)")), "{out}");
}

#[test]
fn every_planted_fault_is_found_in_a_kafka_dir() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let copy = copy_to_temp(&fixtures.join("LDI-POC"));
    // The batch at position 4730 of __consumer_offsets-6 holds offset 3.
    plant_and_verify(
        copy.path(),
        "__consumer_offsets-6",
        4730,
        ("TestTopicPatient", 0, 3),
        "TestTopicPatient-0",
    );
}

#[test]
fn every_planted_fault_is_found_in_a_ferrolog_dir() {
    let (_temp, dir) = ferrolog_dir();
    let (ok, out) = verify(&dir);
    assert!(ok, "{out}");
    plant_and_verify(
        &dir,
        "demo-0",
        0,
        ("demo", 1, log_end(&dir, "demo-1")),
        "demo-2",
    );
}

/// The log end offset of a partition of a ferrolog dir, from `dump-log`'s last batch line.
fn log_end(dir: &Path, partition: &str) -> i64 {
    let log = dir.join(partition).join("00000000000000000000.log");
    let output = Command::new(env!("CARGO_BIN_EXE_ferrolog"))
        .args(["dump-log", "--files"])
        .arg(&log)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let last = text
        .lines()
        .rev()
        .filter_map(|line| line.split("lastOffset: ").nth(1))
        .find_map(|rest| rest.split(' ').next()?.parse::<i64>().ok())
        .unwrap();
    last + 1
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

#[test]
fn garbage_is_reported_file_by_file_never_panicked_on() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let partition = dir.join("t-0");
    std::fs::create_dir(&partition).unwrap();
    std::fs::create_dir(dir.join("no_partition_number")).unwrap();
    // Deterministic noise (xorshift), so failures reproduce.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = |length: usize| -> Vec<u8> {
        (0..length)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect()
    };
    for (name, length) in [
        ("00000000000000000000.log", 5000),
        ("00000000000000000000.index", 1001),
        ("00000000000000000000.timeindex", 77),
        ("00000000000000000005.snapshot", 99),
    ] {
        std::fs::write(partition.join(name), noise(length)).unwrap();
    }
    std::fs::write(dir.join("recovery-point-offset-checkpoint"), noise(300)).unwrap();
    let (ok, out) = verify(dir);
    assert!(!ok, "{out}");
    for needle in [
        "no_partition_number: ",
        "00000000000000000000.log: ",
        "00000000000000000000.index: the file ends with 1 bytes",
        "more problems in this file",
        "00000000000000000005.snapshot",
        "recovery-point-offset-checkpoint: ",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
}

/// A data dir written through the LogManager: `partitions` logs of 2 KiB segments, 60 batches
/// each, so every log has several sealed segments.
fn written_dir(dir: &Path) -> Arc<LogManager> {
    let config = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        log_defaults: LogConfig {
            segment_bytes: 2048,
            ..LogConfig::default()
        },
        ..ManagerConfig::default()
    };
    let manager = Arc::new(LogManager::open(config, Arc::new(SystemClock)).unwrap());
    for partition in 0..2 {
        let log = manager
            .get_or_create(&TopicPartition::new("events", partition))
            .unwrap();
        for i in 0..60 {
            let batch = numbered_batch(i, 2, 1_700_000_000_000);
            log.append_as_leader(batch).unwrap();
        }
    }
    manager
}

#[test]
fn an_unclean_stop_and_pending_deletions_are_notes_not_problems() {
    let temp = tempfile::tempdir().unwrap();
    // Retention has renamed the oldest segments `.deleted`; the deleter has not removed them
    // yet (file.delete.delay.ms). Then a clean stop.
    let pending = temp.path().join("pending");
    let manager = written_dir(&pending);
    let log = manager.get(&TopicPartition::new("events", 0)).unwrap();
    log.maybe_increment_high_watermark(log.log_end_offset());
    log.maybe_increment_log_start_offset(Offset::new(40))
        .unwrap();
    assert!(log.delete_old_segments().unwrap().plan.delete_count() > 0);
    drop(log);
    manager.shutdown().unwrap();
    let (ok, out) = verify(&pending);
    assert!(ok, "{out}");
    assert!(out.contains(".log.deleted: a .deleted file"), "{out}");

    // The process dies: nothing is closed, trimmed or checkpointed, and the active segments'
    // indexes keep their preallocated zero tails.
    let crashed = temp.path().join("crashed");
    let manager = written_dir(&crashed);
    std::mem::forget(manager);
    assert!(!crashed.join(".kafka_cleanshutdown").exists());
    let (ok, out) = verify(&crashed);
    assert!(ok, "{out}");
    assert!(out.contains("No problems found."), "{out}");
}

#[test]
fn damage_in_the_middle_of_a_sealed_segment_is_a_problem_whatever_the_stop() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let manager = written_dir(&dir);
    let sealed = manager
        .get(&TopicPartition::new("events", 1))
        .unwrap()
        .view()
        .segments[1]
        .log_path();
    std::mem::forget(manager);
    // The length field of the second batch: far past the end of the file.
    let mut bytes = std::fs::read(&sealed).unwrap();
    let second = u64::from(u32::from_be_bytes(bytes[8..12].try_into().unwrap())) + 12;
    bytes[second as usize + 8..second as usize + 12].copy_from_slice(&0x7fff_0000u32.to_be_bytes());
    std::fs::write(&sealed, bytes).unwrap();
    let (ok, out) = verify(&dir);
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!(
            "{}: the last {} bytes, from position {second}, are not a whole batch",
            sealed.display(),
            std::fs::metadata(&sealed).unwrap().len() - second
        )),
        "{out}"
    );
    assert!(out.contains("1 problem(s)"), "{out}");
}

#[test]
fn a_zero_tail_is_a_torn_write_only_at_the_end_of_an_unclean_log() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let manager = written_dir(&dir);
    let segments = manager
        .get(&TopicPartition::new("events", 0))
        .unwrap()
        .view()
        .segments
        .clone();
    let (sealed, active) = (segments[0].log_path(), segments.last().unwrap().log_path());
    std::mem::forget(manager);
    // A crash extended the active segment before its data arrived: recovery cuts that.
    let active_length = std::fs::metadata(&active).unwrap().len();
    append(&active, &[0; 300]);
    let (ok, out) = verify(&dir);
    assert!(ok, "{out}");
    assert!(
        out.contains(&format!(
            "note: {}: 300 zero bytes from position {active_length} on hold no batch (a write torn by an unclean stop",
            active.display()
        )),
        "{out}"
    );
    // The same in a sealed segment is damage: cutting it there would take every later
    // segment with it.
    let sealed_length = std::fs::metadata(&sealed).unwrap().len();
    append(&sealed, &[0; 300]);
    let (ok, out) = verify(&dir);
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!(
            "{}: 300 zero bytes from position {sealed_length} on hold no batch",
            sealed.display()
        )) && out.contains("1 problem(s)"),
        "{out}"
    );
    // After a clean stop, nothing cuts the active segment's zeros: damage too.
    std::fs::write(dir.join(".kafka_cleanshutdown"), b"").unwrap();
    let (ok, out) = verify(&dir);
    assert!(!ok, "{out}");
    assert!(out.contains("2 problem(s)"), "{out}");
}
