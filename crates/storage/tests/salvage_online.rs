//! Salvage of a running log's sealed segments (`LogManager::salvage_partition`, an operator's
//! request): a batch damaged in the middle of a sealed segment while the log is open is the
//! only thing lost; every other record reads back at its offset at once, the aborted
//! transaction before it stays aborted for `read_committed` readers, and a restart finds the
//! rewritten segment whole.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;
use std::sync::Arc;

use ferrolog_records::BatchBuilder;
use ferrolog_storage::log::{FetchBound, Log, MarkerRequest};
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::producer::MarkerKind;
use ferrolog_storage::{CoordinatorEpoch, LogConfig, ProducerEpoch, SystemClock, TopicPartition};

fn open(dir: &Path) -> LogManager {
    let config = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        log_defaults: LogConfig {
            segment_bytes: 2048,
            ..LogConfig::default()
        },
        ..ManagerConfig::default()
    };
    LogManager::open(config, Arc::new(SystemClock)).unwrap()
}

/// An aborted transaction (offsets 0 and 1, its marker at 2), then 100 records a batch each.
fn write(log: &Log) {
    let mut builder = BatchBuilder::new(0).producer(9, 0, 0).transactional(true);
    builder.append(1, None, Some(b"aborted-0"), &[]).unwrap();
    builder.append(1, None, Some(b"aborted-1"), &[]).unwrap();
    log.append_as_follower(&builder.build().unwrap()).unwrap();
    let marker = MarkerRequest {
        producer_id: 9,
        epoch: ProducerEpoch::new(0),
        coordinator_epoch: CoordinatorEpoch::new(1),
        kind: MarkerKind::Abort,
    };
    log.append_marker(marker, false).unwrap();
    for i in 3..103 {
        let mut builder = BatchBuilder::new(i);
        builder
            .append(1, None, Some(format!("value-{i}").as_bytes()), &[])
            .unwrap();
        log.append_as_follower(&builder.build().unwrap()).unwrap();
    }
    log.maybe_increment_high_watermark(log.log_end_offset());
}

fn values(log: &Log, bound: FetchBound) -> Vec<(i64, String)> {
    common::records_from(log, 0, bound)
        .into_iter()
        .map(|record| (record.offset, record.value_text().unwrap_or_default()))
        .collect()
}

#[test]
fn a_running_log_loses_only_the_damaged_batch() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let manager = open(&dir);
    let tp = TopicPartition::new("online", 0);
    let log = manager.get_or_create(&tp).unwrap();
    write(&log);
    let before = values(&log, FetchBound::LogEnd);
    // The batch of offset 20, in a sealed segment, damaged under the running log.
    let view = log.view();
    let holding = (0..view.segments.len() - 1)
        .find(|index| {
            view.segments[*index].base_offset().value() <= 20
                && view.segments[index + 1].base_offset().value() > 20
        })
        .expect("offset 20 in a sealed segment");
    let path = view.segments[holding].log_path();
    let mut bytes = std::fs::read(&path).unwrap();
    let mut position = 0usize;
    while i64::from_be_bytes(bytes[position..position + 8].try_into().unwrap()) != 20 {
        let size = i32::from_be_bytes(bytes[position + 8..position + 12].try_into().unwrap());
        position += 12 + size as usize;
    }
    bytes[position + 70] ^= 0x02;
    std::fs::write(&path, bytes).unwrap();
    drop(view);

    let salvaged = manager.salvage_partition(&tp).unwrap().unwrap();
    assert_eq!(salvaged.len(), 1);
    assert_eq!(salvaged[0].lost[0].offsets, Some(20..21));
    let expected: Vec<(i64, String)> = before
        .iter()
        .filter(|(offset, _)| *offset != 20)
        .cloned()
        .collect();
    assert_eq!(values(&log, FetchBound::LogEnd), expected);
    // The aborted transaction's index entry is kept: a read_committed read is told of it.
    let aborted = log
        .read(ferrolog_storage::log::FetchParams {
            start_offset: ferrolog_storage::Offset::new(0),
            max_bytes: 1 << 20,
            bound: FetchBound::LastStable,
            first_batch: ferrolog_storage::log::FirstBatch::Whole,
        })
        .unwrap()
        .aborted_txns
        .unwrap();
    assert_eq!(aborted.len(), 1);
    assert_eq!(aborted[0].producer_id, 9);
    // Nothing more to salvage; and a restart opens the rewritten segment as it is.
    assert!(manager.salvage_partition(&tp).unwrap().unwrap().is_empty());
    assert!(
        manager
            .salvage_partition(&TopicPartition::new("online", 7))
            .unwrap()
            .is_none()
    );
    drop(log);
    manager.shutdown().unwrap();
    drop(manager);
    let manager = open(&dir);
    let log = manager.get(&tp).unwrap();
    assert_eq!(values(&log, FetchBound::LogEnd), expected);
}

/// A sealed segment with nothing valid left (zeroed from its first byte) is replaced by an
/// empty segment: its offsets are reported lost, and every record of the other segments reads
/// back at its offset, before and after a restart.
#[test]
fn a_segment_with_nothing_valid_left_is_emptied() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let manager = open(&dir);
    let tp = TopicPartition::new("online", 0);
    let log = manager.get_or_create(&tp).unwrap();
    write(&log);
    let before = values(&log, FetchBound::LogEnd);
    let view = log.view();
    assert!(view.segments.len() >= 4);
    let (base, end) = (
        view.segments[1].base_offset().value(),
        view.segments[2].base_offset().value(),
    );
    let path = view.segments[1].log_path();
    let size = std::fs::metadata(&path).unwrap().len() as usize;
    std::fs::write(&path, vec![0u8; size]).unwrap();
    drop(view);

    let salvaged = manager.salvage_partition(&tp).unwrap().unwrap();
    assert_eq!(salvaged.len(), 1);
    assert_eq!(salvaged[0].kept_bytes, 0);
    let lost: Vec<_> = salvaged[0].lost.iter().map(|l| l.offsets.clone()).collect();
    assert_eq!(lost, vec![Some(base..end)]);
    assert_eq!(log.view().segments[1].size(), 0);
    let expected: Vec<(i64, String)> = before
        .iter()
        .filter(|(offset, _)| !(base..end).contains(offset))
        .cloned()
        .collect();
    assert_eq!(values(&log, FetchBound::LogEnd), expected);
    drop(log);
    manager.shutdown().unwrap();
    drop(manager);
    let manager = open(&dir);
    let log = manager.get(&tp).unwrap();
    assert_eq!(values(&log, FetchBound::LogEnd), expected);
}
