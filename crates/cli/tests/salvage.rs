//! `ferrolog recover --salvage`: damage of every kind planted in sealed segments and at the
//! end of a log (a flipped byte, a zeroed stretch across batches, a broken length field, a
//! torn last batch) loses only the batches it touches. Every other record is read back at its
//! offset through the log (indexes rebuilt, the gaps read past), the offsets lost are listed
//! in a `.salvaged` file beside each segment and in the output, and `verify` then passes;
//! where plain recovery (`--force`, as Kafka's) only cuts the torn end.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use ferrolog_records::EntryIter;
use ferrolog_storage::log::FetchBound;
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{LogConfig, SystemClock, TopicPartition};
use ferrolog_testkit::numbered_batch;

/// Records written to each partition, two to a batch.
const RECORDS: i64 = 240;

/// Two partitions of 2 KiB segments, `RECORDS` records two to a batch, stopped cleanly.
fn written_dir(dir: &Path) {
    let config = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        log_defaults: LogConfig {
            segment_bytes: 2048,
            ..LogConfig::default()
        },
        ..ManagerConfig::default()
    };
    let manager = LogManager::open(config, Arc::new(SystemClock)).unwrap();
    for partition in 0..2 {
        let log = manager
            .get_or_create(&TopicPartition::new("events", partition))
            .unwrap();
        for i in 0..RECORDS as usize / 2 {
            log.append_as_leader(numbered_batch(i * 2, 2, 1_700_000_000_000))
                .unwrap();
        }
    }
    manager.shutdown().unwrap();
}

fn ferrolog(args: &[&str], dir: &Path) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_ferrolog"))
        .args(args)
        .arg("--log-dirs")
        .arg(dir)
        .env("FERROLOG_LOG", "error")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// The `.log` files of a partition directory, by base offset.
fn segments(partition: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(partition)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs
}

/// Each batch of a `.log` file: its byte range and its offsets.
fn batches(log: &Path) -> Vec<(Range<u64>, Range<i64>)> {
    let bytes = std::fs::read(log).unwrap();
    EntryIter::new(&bytes)
        .map(|entry| {
            let (position, entry) = entry.unwrap();
            let ferrolog_records::FileEntry::V2(batch) = entry else {
                panic!("v2 batches");
            };
            let end = position + entry.size_in_bytes();
            (
                position as u64..end as u64,
                batch.base_offset()..entry.last_offset() + 1,
            )
        })
        .collect()
}

/// Every record of the log of `partition`, read from offset 0 through the log as a fetch
/// reads it, by offset.
fn read_back(dir: &Path, partition: i32) -> BTreeMap<i64, String> {
    let config = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        ..ManagerConfig::default()
    };
    let manager = LogManager::open(config, Arc::new(SystemClock)).unwrap();
    let log = manager
        .get(&TopicPartition::new("events", partition))
        .unwrap();
    let records = common::logs::records_from(&log, 0, FetchBound::HighWatermark)
        .into_iter()
        .map(|record| (record.offset, record.value_text().unwrap()))
        .collect();
    drop(log);
    manager.shutdown().unwrap();
    records
}

/// What the writer wrote, less the offsets in `lost`.
fn expected(lost: &[Range<i64>]) -> BTreeMap<i64, String> {
    (0..RECORDS)
        .filter(|offset| !lost.iter().any(|range| range.contains(offset)))
        .map(|offset| (offset, format!("value-{offset}")))
        .collect()
}

#[test]
fn salvage_keeps_every_record_outside_the_damaged_batches() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    written_dir(&dir);
    let first = dir.join("events-0");
    let second = dir.join("events-1");
    let (logs, other_logs) = (segments(&first), segments(&second));
    assert!(logs.len() >= 6, "{logs:?}");

    // Partition 0: a flipped byte in segment 1, a zeroed stretch from the middle of one batch
    // of segment 3 to the middle of the next, and a torn last batch.
    let mut lost0 = Vec::new();
    let batch = &batches(&logs[1])[2];
    let mut bytes = std::fs::read(&logs[1]).unwrap();
    bytes[batch.0.end as usize - 5] ^= 0x40;
    std::fs::write(&logs[1], bytes).unwrap();
    lost0.push(batch.1.clone());
    let (a, b) = (&batches(&logs[3])[1], &batches(&logs[3])[2]);
    let mut bytes = std::fs::read(&logs[3]).unwrap();
    bytes[a.0.start as usize + 30..b.0.start as usize + 30].fill(0);
    std::fs::write(&logs[3], bytes).unwrap();
    lost0.push(a.1.start..b.1.end);
    let last = logs.last().unwrap();
    let tail = batches(last).last().unwrap().clone();
    let bytes = std::fs::read(last).unwrap();
    std::fs::write(last, &bytes[..tail.0.end as usize - 7]).unwrap();
    lost0.push(tail.1.clone());
    // Partition 1: a length field pointing far past the end, in segment 2.
    let batch = &batches(&other_logs[2])[1];
    let mut bytes = std::fs::read(&other_logs[2]).unwrap();
    let field = batch.0.start as usize + 8;
    bytes[field..field + 4].copy_from_slice(&0x00ff_ffffi32.to_be_bytes());
    std::fs::write(&other_logs[2], bytes).unwrap();
    let lost1 = vec![batch.1.clone()];

    let (ok, out) = ferrolog(&["verify"], &dir);
    assert!(!ok, "the damage is there: {out}");

    // Plain recovery of a copy (as Kafka's) starts at the recovery point: it cuts the torn
    // end, and leaves the damage in the sealed segments for readers to meet.
    let cut = temp.path().join("cut");
    ferrolog_testkit::copy_dir(&dir, &cut);
    let (_, out) = ferrolog(&["recover", "--force"], &cut);
    assert!(out.contains("cut "), "{out}");
    let (ok, out) = ferrolog(&["verify"], &cut);
    assert!(!ok, "sealed damage stays: {out}");

    let (ok, out) = ferrolog(&["recover", "--salvage"], &dir);
    assert!(ok, "{out}");
    // The offsets of the sealed segments' stretches are known; a torn write at the log's end
    // could have held any number of records.
    for range in lost0[..2].iter().chain(&lost1) {
        let line = format!("lost offsets {}-{}", range.start, range.end - 1);
        assert!(out.contains(&line), "{line} missing in\n{out}");
    }
    assert!(
        out.contains("lost offsets unknown (the log's end)"),
        "{out}"
    );
    assert_eq!(read_back(&dir, 0), expected(&lost0));
    assert_eq!(read_back(&dir, 1), expected(&lost1));
    let listed = std::fs::read_to_string(logs[3].with_extension("salvaged")).unwrap();
    assert!(
        listed.contains(&format!(
            "lost offsets {}-{}",
            lost0[1].start,
            lost0[1].end - 1
        )),
        "{listed}"
    );
    let (ok, out) = ferrolog(&["verify"], &dir);
    assert!(ok, "after salvage: {out}");
    // A second salvage finds nothing to do.
    let (ok, out) = ferrolog(&["recover", "--salvage"], &dir);
    assert!(ok && !out.contains("salvaged, kept"), "{out}");
}

/// A transaction whose COMMIT marker salvage drops stays open: `recover --salvage` names it,
/// with the `kafka-transactions abort` that ends it, and so does a broker salvaging at startup
/// after an unclean stop (`ferrolog.recovery.salvage`), in its log.
#[test]
fn a_transaction_whose_marker_was_lost_is_named_with_its_remedy() {
    use ferrolog_records::BatchBuilder;
    use ferrolog_storage::log::MarkerRequest;
    use ferrolog_storage::producer::MarkerKind;
    use ferrolog_storage::{CoordinatorEpoch, ProducerEpoch};

    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let config = ManagerConfig {
        log_dirs: vec![dir.clone()],
        log_defaults: LogConfig {
            segment_bytes: 2048,
            ..LogConfig::default()
        },
        ..ManagerConfig::default()
    };
    let manager = LogManager::open(config, Arc::new(SystemClock)).unwrap();
    let log = manager
        .get_or_create(&TopicPartition::new("events", 0))
        .unwrap();
    let mut builder = BatchBuilder::new(0).producer(7, 0, 0).transactional(true);
    builder
        .append(1, None, Some(b"in a transaction"), &[])
        .unwrap();
    log.append_as_follower(&builder.build().unwrap()).unwrap();
    let marker = MarkerRequest {
        producer_id: 7,
        epoch: ProducerEpoch::new(0),
        coordinator_epoch: CoordinatorEpoch::new(1),
        kind: MarkerKind::Commit,
    };
    log.append_marker(marker, false).unwrap();
    for i in 0..60 {
        log.append_as_leader(numbered_batch(i, 2, 1_700_000_000_000))
            .unwrap();
    }
    drop(log);
    manager.shutdown().unwrap();
    // The marker, at offset 1, in whichever segment holds it.
    let holding = segments(&dir.join("events-0"))
        .into_iter()
        .find(|log| batches(log).iter().any(|batch| batch.1 == (1..2)))
        .unwrap();
    let marker_batch = batches(&holding)
        .into_iter()
        .find(|batch| batch.1 == (1..2))
        .unwrap();
    let mut bytes = std::fs::read(&holding).unwrap();
    bytes[marker_batch.0.end as usize - 2] ^= 0x01;
    std::fs::write(&holding, bytes).unwrap();

    // A broker stopped uncleanly, with no recovery point: its recovery salvages from 0.
    let served = temp.path().join("served");
    ferrolog_testkit::copy_dir(&dir, &served);
    std::fs::remove_file(served.join(".kafka_cleanshutdown")).unwrap();
    std::fs::remove_file(served.join("recovery-point-offset-checkpoint")).unwrap();
    let server = common::Server::start_with(&served, &["ferrolog.recovery.salvage=true"]);
    let logged = server.stderr();
    assert!(
        logged.contains("may have lost its marker")
            && logged.contains("abort --topic events --partition 0 --start-offset 0"),
        "{logged}"
    );
    server.stop();

    let (ok, out) = ferrolog(&["recover", "--salvage"], &dir);
    assert!(ok, "{out}");
    assert!(out.contains("lost offsets 1-1"), "{out}");
    assert!(
        out.contains("transaction of producer 7 open since offset 0")
            && out.contains("abort --topic events --partition 0 --start-offset 0"),
        "{out}"
    );
}

/// Real Kafka data directories: salvage finds nothing to drop and no index to rebuild (Kafka's
/// indexes, one entry per append at its first batch, agree with its data).
#[test]
fn salvage_changes_nothing_in_real_kafka_dirs() {
    let Some(fixtures) = ferrolog_testkit::kafka_fixtures() else {
        return;
    };
    for name in [
        "KAIPASUBHASH-kafka-logs",
        "LDI-POC",
        "VolodymyrZee-kafka",
        "kafka-gleam",
    ] {
        let copy = ferrolog_testkit::copy_to_temp(&fixtures.join(name));
        let (ok, out) = ferrolog(&["recover", "--salvage"], copy.path());
        assert!(ok, "{name}: {out}");
        assert!(
            !out.contains("salvaged") && !out.contains("indexes disagreed"),
            "{name}: {out}"
        );
        let (ok, out) = ferrolog(&["verify"], copy.path());
        assert!(ok, "{name}: {out}");
    }
}
