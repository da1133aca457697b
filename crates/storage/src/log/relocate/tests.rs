//! A log moving to another directory: copied while it takes appends, swapped under its lock,
//! the same object serving the moved files with its producers' state.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::PathBuf;
use std::sync::Arc;

use ferrolog_records::builder::BatchBuilder;
use ferrolog_testkit::numbered_batch;

use super::*;
use crate::clock::ManualClock;
use crate::config::LogConfig;
use crate::log::{LoadParams, LogEnvironment};
use crate::types::{TopicPartition, future_dir_name};

const NOW: i64 = 1_700_000_000_000;
const PRODUCER: i64 = 7;

struct Move {
    _temp: tempfile::TempDir,
    source_dir: PathBuf,
    target_dir: PathBuf,
    clock: Arc<ManualClock>,
    current: Log,
    future: Log,
}

fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 4096,
        ..LogConfig::default()
    }
}

impl Move {
    fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let source_dir = temp.path().join("a");
        let target_dir = temp.path().join("b");
        std::fs::create_dir_all(&source_dir).unwrap();
        std::fs::create_dir_all(&target_dir).unwrap();
        let clock = Arc::new(ManualClock::new(NOW));
        let tp = TopicPartition::new("topic", 0);
        let current = Log::create(&source_dir, &tp, small_segments(), clock.clone()).unwrap();
        let future = Log::create_named_in(
            &target_dir,
            &future_dir_name(&tp, "0123456789abcdef0123456789abcdef"),
            small_segments(),
            LogEnvironment::standalone(&target_dir, clock.clone()),
        )
        .unwrap();
        Self {
            _temp: temp,
            source_dir,
            target_dir,
            clock,
            current,
            future,
        }
    }

    fn paths(&self) -> SwapPaths {
        SwapPaths {
            retired: self
                .source_dir
                .join("topic-0.0123456789abcdef0123456789abcdef-delete"),
            final_dir: self.target_dir.join("topic-0"),
        }
    }

    /// Appends ten records as the broker does (the high watermark follows).
    fn produce(&self, first: usize) {
        self.current
            .append_as_leader(numbered_batch(first, 10, NOW))
            .unwrap();
        self.current
            .maybe_increment_high_watermark(self.current.log_end_offset());
    }
}

fn idempotent_batch(sequence: i32) -> Vec<u8> {
    let mut builder = BatchBuilder::new(0).producer(PRODUCER, 0, sequence);
    for index in 0..3 {
        builder
            .append(
                NOW,
                None,
                Some(format!("v{sequence}-{index}").as_bytes()),
                &[],
            )
            .unwrap();
    }
    builder.build().unwrap()
}

/// Every byte of the log from its start, whole batches, in offset order.
fn all_bytes(log: &Log) -> Vec<u8> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let data = log
            .read(FetchParams {
                start_offset: offset,
                max_bytes: 1 << 20,
                bound: FetchBound::LogEnd,
                first_batch: FirstBatch::Whole,
            })
            .unwrap();
        let bytes = data.slice.unwrap().read_bytes().unwrap();
        let whole = whole_batches(&bytes);
        let mut position = 0;
        while position < whole.len() {
            let length = i32::from_be_bytes(whole[position + 8..position + 12].try_into().unwrap());
            let end = position + LOG_OVERHEAD + length as usize;
            let last = ferrolog_records::RecordBatch::new(&whole[position..end])
                .unwrap()
                .last_offset();
            offset = Offset::new(last + 1);
            position = end;
        }
        out.extend_from_slice(whole);
    }
    out
}

#[test]
fn a_log_copied_while_it_takes_appends_swaps_in_whole_and_keeps_serving() {
    let moving = Move::new();
    for round in 0..20 {
        moving.produce(round * 10);
    }
    let before_first_copy = all_bytes(&moving.current);
    // Copies interleave with appends, as producers go on during a move.
    for round in 20..40 {
        let step = moving.current.copy_into(&moving.future, 1500).unwrap();
        assert!(step.copied_bytes > 0, "round {round}");
        moving.produce(round * 10);
    }
    // Five batches more than the copy has: more than the tail a swap may copy under the lock.
    for first in (400..450).step_by(10) {
        moving.produce(first);
    }
    // A reader that took its snapshot before the swap reads on through it.
    let old_view = moving.current.view();
    let expected = all_bytes(&moving.current);
    assert!(expected.starts_with(&before_first_copy));
    let paths = moving.paths();
    // The tail is copied under the lock only while it is small.
    assert!(
        !moving
            .current
            .take_over(&moving.future, &paths, 100)
            .unwrap()
    );
    while moving
        .current
        .copy_into(&moving.future, 1500)
        .unwrap()
        .offset_lag
        > 0
    {}
    moving.produce(400);
    assert!(
        moving
            .current
            .take_over(&moving.future, &paths, 1 << 20)
            .unwrap()
    );

    let log = &moving.current;
    assert_eq!(log.dir(), paths.final_dir);
    assert!(!moving.source_dir.join("topic-0").exists());
    assert!(paths.retired.join("00000000000000000000.log").exists());
    assert_eq!(log.log_end_offset(), Offset::new(460));
    assert_eq!(log.high_watermark(), Offset::new(460));
    let moved = all_bytes(log);
    assert!(moved.starts_with(&expected));
    assert_eq!(
        moved.len(),
        expected.len() + numbered_batch(400, 10, NOW).len()
    );
    assert!(
        old_view.segments.iter().all(|segment| segment.size() > 0),
        "the old files stay readable"
    );
    // The moved log goes on: appends, rolls, flushes and a clean reopen in its new home.
    moving.produce(460);
    log.roll().unwrap();
    log.flush().unwrap();
    log.close().unwrap();
    let (reopened, _) = Log::open(
        &paths.final_dir,
        small_segments(),
        LoadParams {
            had_clean_shutdown: true,
            ..LoadParams::default()
        },
        moving.clock.clone(),
    )
    .unwrap();
    assert_eq!(reopened.log_end_offset(), Offset::new(470));
    assert!(all_bytes(&reopened).starts_with(&moved));
}

#[test]
fn the_future_log_follows_the_log_start_and_a_move_keeps_producer_state() {
    let moving = Move::new();
    for sequence in (0..30).step_by(3) {
        moving
            .current
            .append_as_leader(idempotent_batch(sequence))
            .unwrap();
    }
    moving
        .current
        .maybe_increment_high_watermark(moving.current.log_end_offset());
    moving.current.copy_into(&moving.future, 200).unwrap();
    // DeleteRecords past what was copied: the copy starts over at the new start.
    moving
        .current
        .maybe_increment_log_start_offset(Offset::new(20))
        .unwrap();
    let step = moving.current.copy_into(&moving.future, 1 << 20).unwrap();
    assert_eq!(step.offset_lag, 0);
    assert_eq!(moving.future.log_start_offset(), Offset::new(20));
    assert!(
        moving
            .current
            .take_over(&moving.future, &moving.paths(), 1 << 20)
            .unwrap()
    );
    let log = &moving.current;
    assert_eq!(log.log_start_offset(), Offset::new(20));
    assert_eq!(log.log_end_offset(), Offset::new(30));
    // The producer's last batch again is a duplicate: answered with its offsets, not written.
    let duplicate = log.append_as_leader(idempotent_batch(27)).unwrap();
    assert_eq!(duplicate.first_offset, Offset::new(27));
    assert_eq!(log.log_end_offset(), Offset::new(30));
    // A gap in the sequence is refused; the next one is taken.
    assert!(log.append_as_leader(idempotent_batch(33)).is_err());
    let next = log.append_as_leader(idempotent_batch(30)).unwrap();
    assert_eq!(next.first_offset, Offset::new(30));
}

#[test]
fn a_log_whose_end_is_damaged_is_not_copied() {
    let moving = Move::new();
    moving.produce(0);
    moving.current.close().unwrap();
    let log_file = moving.source_dir.join("topic-0/00000000000000000000.log");
    let mut bytes = std::fs::read(&log_file).unwrap();
    bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 80, 1, 2, 3]);
    std::fs::write(&log_file, &bytes).unwrap();
    let (current, _) = Log::open(
        &moving.source_dir.join("topic-0"),
        small_segments(),
        LoadParams {
            had_clean_shutdown: true,
            ..LoadParams::default()
        },
        moving.clock.clone(),
    )
    .unwrap();
    assert!(current.view().damaged_end.is_some());
    let refused = current.copy_into(&moving.future, 1 << 20).unwrap_err();
    assert!(
        matches!(refused, StorageError::DamagedEnd { .. }),
        "{refused}"
    );
    assert_eq!(moving.future.log_end_offset(), Offset::ZERO);
}
