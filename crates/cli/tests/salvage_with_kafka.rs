//! The same damaged Kafka 4.4 data directory, recovered by Kafka and salvaged by ferrolog.
//!
//! Kafka writes 6,000 records into one partition of 1 MiB segments and stops cleanly; one
//! batch in the middle of its second segment gets a flipped byte (its checksum no longer
//! matches). Kafka, told its stop was unclean and without a recovery point, recovers the
//! partition as it must: it cuts the segment at the bad batch and deletes every later
//! segment, and consumers read the records before it only, though Kafka's own
//! `kafka-dump-log` finds that one batch invalid and every other valid. `ferrolog recover
//! --salvage` on a copy drops the one batch, and consumers of `ferrolog serve` read every
//! other record, the later segments' included, at their offsets.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::Server;
use common::kafka::{KafkaPeer, kafka_available, kafka_tool_ok};
use ferrolog_records::{EntryIter, FileEntry};

const TOPIC: &str = "salvaged";
const RECORDS: usize = 6_000;

/// Kafka's console producer writes record i as `i:<i padded to 1,000 bytes>`.
fn produce(bootstrap: &str) {
    let input: String = (0..RECORDS).map(|i| format!("{i}:{i:0>1000}\n")).collect();
    kafka_tool_ok(
        "org.apache.kafka.tools.ConsoleProducer",
        &[
            "--bootstrap-server",
            bootstrap,
            "--topic",
            TOPIC,
            "--reader-property",
            "parse.key=true",
            "--reader-property",
            "key.separator=:",
            "--producer-property",
            "linger.ms=50",
        ],
        input.as_bytes(),
    );
}

/// The keys Kafka's console consumer reads from the start, sorted as numbers.
fn consume(bootstrap: &str) -> Vec<usize> {
    let out = kafka_tool_ok(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        &[
            "--bootstrap-server",
            bootstrap,
            "--topic",
            TOPIC,
            "--from-beginning",
            "--timeout-ms",
            "10000",
            "--formatter-property",
            "print.key=true",
            "--formatter-property",
            "print.value=false",
        ],
        b"",
    );
    let mut keys: Vec<usize> = out
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect();
    keys.sort_unstable();
    keys
}

fn segments(partition: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(partition)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs
}

/// The batch lines of Kafka's `kafka-dump-log --files log` that contain `marked`.
fn dumped_batches(log: &Path, marked: &str) -> Vec<String> {
    kafka_tool_ok(
        "org.apache.kafka.tools.DumpLogSegments",
        &["--files", log.to_str().unwrap()],
        b"",
    )
    .lines()
    .filter(|line| line.starts_with("baseOffset: ") && line.contains(marked))
    .map(str::to_owned)
    .collect()
}

/// Flips a byte inside a batch in the middle of `log`; returns the batch's offsets and its
/// byte position.
fn damage_a_batch(log: &Path) -> (Range<usize>, usize) {
    let mut bytes = std::fs::read(log).unwrap();
    let batches: Vec<(usize, usize, Range<usize>)> = EntryIter::new(&bytes)
        .map(|entry| {
            let (position, entry) = entry.unwrap();
            let FileEntry::V2(batch) = entry else {
                panic!("Kafka 4.4 writes v2 batches");
            };
            let offsets = batch.base_offset() as usize..entry.last_offset() as usize + 1;
            (position, entry.size_in_bytes(), offsets)
        })
        .collect();
    let (position, size, offsets) = batches[batches.len() / 2].clone();
    bytes[position + size - 100] ^= 0x01;
    std::fs::write(log, bytes).unwrap();
    (offsets, position)
}

#[test]
fn kafka_recovery_cuts_at_the_damage_and_salvage_keeps_the_rest() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka_dir = temp.path().join("kafka").join("data");
    let mut kafka = KafkaPeer::start(&kafka_dir, &["log.segment.bytes=1048576"]);
    produce(&kafka.bootstrap());
    kafka.stop();
    let partition = kafka_dir.join(format!("{TOPIC}-0"));
    let logs = segments(&partition);
    assert!(logs.len() >= 4, "{logs:?}");
    let (lost, _) = damage_a_batch(&logs[1]);
    let copy = temp.path().join("copy");
    common::copy_dir(&kafka_dir, &copy);
    // Kafka's kafka-dump-log reads the damaged segment whole: the one batch is invalid, the
    // batches after it are valid.
    let invalid = dumped_batches(&logs[1], "isvalid: false");
    assert_eq!(invalid.len(), 1, "{invalid:?}");
    assert!(
        invalid[0].starts_with(&format!("baseOffset: {} ", lost.start)),
        "{invalid:?}"
    );
    let valid_after = dumped_batches(&logs[1], "isvalid: true").len();

    // Kafka, as after an unclean stop with no recovery point for the partition.
    std::fs::remove_file(kafka_dir.join(".kafka_cleanshutdown")).unwrap();
    std::fs::remove_file(kafka_dir.join("recovery-point-offset-checkpoint")).unwrap();
    kafka.restart();
    let kept_by_kafka = consume(&kafka.bootstrap());
    kafka.stop();
    assert_eq!(
        kept_by_kafka,
        (0..lost.start).collect::<Vec<_>>(),
        "{}",
        kafka.log()
    );
    assert_eq!(
        segments(&partition).len(),
        2,
        "Kafka deleted every later segment"
    );
    // ...and its recovery kept none of them: the segment now ends before the bad batch.
    let after_recovery = dumped_batches(&logs[1], "isvalid: true");
    let last = after_recovery.last().unwrap();
    assert!(
        last.contains(&format!("lastOffset: {} ", lost.start - 1)),
        "{last}"
    );
    assert!(after_recovery.len() < valid_after, "{after_recovery:?}");

    let output = Command::new(env!("CARGO_BIN_EXE_ferrolog"))
        .args(["recover", "--salvage", "--log-dirs"])
        .arg(&copy)
        .env("FERROLOG_LOG", "error")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{out}");
    let line = format!("lost offsets {}-{}", lost.start, lost.end - 1);
    assert!(out.contains(&line), "{line} missing in\n{out}");
    // Kafka's own indexes (an entry per append, at its first batch) agree with its data.
    assert!(!out.contains("indexes disagreed"), "{out}");
    let server = Server::start(&copy);
    let kept_by_ferrolog = consume(&format!("127.0.0.1:{}", server.port));
    let expected: Vec<usize> = (0..RECORDS).filter(|i| !lost.contains(i)).collect();
    assert_eq!(kept_by_ferrolog, expected, "{}", server.stderr());
    println!(
        "of {RECORDS} records, a damaged batch at offsets {}-{}: Kafka 4.4's recovery keeps {}, ferrolog's salvage {}",
        lost.start,
        lost.end - 1,
        kept_by_kafka.len(),
        kept_by_ferrolog.len()
    );
}

/// Salvage while `ferrolog serve` runs, asked for as Kafka's tools set a broker config
/// (`kafka-configs --add-config ferrolog.salvage.partitions=...`): a batch damaged in a sealed
/// segment under the running broker is the only thing Kafka's console consumer then misses.
#[test]
fn a_running_broker_salvages_a_partition_when_asked_with_kafka_configs() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("ferrolog");
    let server = Server::start_with(&dir, &["log.segment.bytes=1048576"]);
    let bootstrap = format!("127.0.0.1:{}", server.port);
    produce(&bootstrap);
    let partition = dir.join(format!("{TOPIC}-0"));
    let logs = segments(&partition);
    assert!(logs.len() >= 4, "{logs:?}");
    let (lost, _) = damage_a_batch(&logs[1]);
    set_broker_config(
        &bootstrap,
        &format!("ferrolog.salvage.partitions={TOPIC}-0"),
    );
    let expected: Vec<usize> = (0..RECORDS).filter(|i| !lost.contains(i)).collect();
    assert_eq!(consume(&bootstrap), expected, "{}", server.stderr());
    let listed = std::fs::read_to_string(logs[1].with_extension("salvaged")).unwrap();
    let line = format!("lost offsets {}-{}", lost.start, lost.end - 1);
    assert!(listed.contains(&line), "{listed}");
}

/// `kafka-configs --alter --entity-type brokers --entity-default --add-config setting`.
fn set_broker_config(bootstrap: &str, setting: &str) {
    common::kafka::kafka_tool_ok(
        common::kafka::CONFIG_COMMAND,
        &[
            "--bootstrap-server",
            bootstrap,
            "--alter",
            "--entity-type",
            "brokers",
            "--entity-default",
            "--add-config",
            setting,
        ],
        b"",
    );
}

/// `ferrolog log-dirs` against `bootstrap`: whether it found every directory whole, and what
/// it printed.
fn log_dirs(bootstrap: &str) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_ferrolog"))
        .args(["log-dirs", "--bootstrap-server", bootstrap])
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    match output.status.code() {
        Some(0) => (true, printed),
        Some(1) => (false, printed),
        _ => panic!("ferrolog log-dirs failed: {printed}"),
    }
}

/// The scrubber under a running broker, paused (rate 0) until the damage is done and then
/// started with kafka-configs, as Kafka's tools change a dynamic broker config: it finds the
/// damaged batch, `ferrolog log-dirs` names its file and byte position (DescribeLogDirs'
/// damage field) and fails, Kafka's own `kafka-log-dirs` still reads the same answer, and
/// after an online salvage the partition is whole again with only that batch gone.
#[test]
fn the_scrubber_finds_damage_under_a_running_broker_and_log_dirs_names_it() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("ferrolog");
    let server = Server::start_with(
        &dir,
        &[
            "log.segment.bytes=1048576",
            "log.initial.task.delay.ms=0",
            "ferrolog.scrub.bytes.per.second=0",
        ],
    );
    let bootstrap = format!("127.0.0.1:{}", server.port);
    produce(&bootstrap);
    let logs = segments(&dir.join(format!("{TOPIC}-0")));
    assert!(logs.len() >= 4, "{logs:?}");
    let (lost, position) = damage_a_batch(&logs[1]);
    let (whole, listed) = log_dirs(&bootstrap);
    assert!(whole, "nothing is known before the scrubber runs: {listed}");
    assert!(listed.contains(&format!("  {TOPIC}-0: ")), "{listed}");

    set_broker_config(&bootstrap, "ferrolog.scrub.bytes.per.second=100000000");
    let started = std::time::Instant::now();
    let listed = loop {
        let (whole, listed) = log_dirs(&bootstrap);
        if !whole {
            break listed;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the scrubber found nothing: {listed}\n{}",
            server.stderr()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let named = format!("DAMAGED: {} at byte {position}: ", logs[1].display());
    assert!(listed.contains(&named), "{listed}");
    assert_eq!(listed.matches("DAMAGED:").count(), 1, "{listed}");
    let kafka_view = kafka_tool_ok(
        "org.apache.kafka.tools.LogDirsCommand",
        &[
            "--bootstrap-server",
            &bootstrap,
            "--describe",
            "--topic-list",
            TOPIC,
        ],
        b"",
    );
    assert!(
        kafka_view.contains(&format!("\"partition\":\"{TOPIC}-0\"")),
        "{kafka_view}"
    );

    set_broker_config(
        &bootstrap,
        &format!("ferrolog.salvage.partitions={TOPIC}-0"),
    );
    let (whole, listed) = log_dirs(&bootstrap);
    assert!(whole, "{listed}");
    let expected: Vec<usize> = (0..RECORDS).filter(|i| !lost.contains(i)).collect();
    assert_eq!(consume(&bootstrap), expected, "{}", server.stderr());
}
