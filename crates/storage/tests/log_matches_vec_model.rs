//! Property test: a Log against a plain `Vec` of batches of (offset, value) under random
//! sequences of append, read, truncate, roll, flush and reopen (clean and unclean). Truncation
//! targets batch boundaries, as every caller of Kafka's `truncateTo` does (a target inside a
//! batch drops the whole batch; the segment tests cover that case).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benches fail loudly"
)]

use std::path::Path;
use std::sync::Arc;

use ferrolog_records::{DEFAULT_MAX_DECOMPRESSED_BYTES, EntryIter};
use ferrolog_storage::Offset;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, LoadParams, Log, partition_dir};
use ferrolog_storage::{LogConfig, ManualClock, TopicPartition};
use ferrolog_testkit::{TestRecord, batch};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Append(Vec<usize>),
    Read { from_fraction: u8, max_bytes: u16 },
    Truncate { to_fraction: u8 },
    Roll,
    Flush,
    ReopenClean,
    ReopenUnclean,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop::collection::vec(0usize..200, 1..6).prop_map(Op::Append),
        3 => (any::<u8>(), any::<u16>()).prop_map(|(from_fraction, max_bytes)| Op::Read { from_fraction, max_bytes }),
        1 => any::<u8>().prop_map(|to_fraction| Op::Truncate { to_fraction }),
        1 => Just(Op::Roll),
        1 => Just(Op::Flush),
        1 => Just(Op::ReopenClean),
        1 => Just(Op::ReopenUnclean),
    ]
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1_500,
        index_interval_bytes: 200,
        segment_index_bytes: 120,
        ..LogConfig::default()
    }
}

fn value(offset: usize, length: usize) -> Vec<u8> {
    let mut value = format!("{offset}:").into_bytes();
    value.resize(value.len() + length, b'a' + (offset % 26) as u8);
    value
}

/// Records readable from `start` (in slices of at most `max_bytes`, first batch always whole).
fn read_from(log: &Log, start: i64, max_bytes: u64) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut offset = start;
    while offset < log.log_end_offset().value() {
        let data = log
            .read(FetchParams {
                start_offset: Offset::new(offset),
                max_bytes,
                bound: FetchBound::LogEnd,
                first_batch: FirstBatch::Whole,
            })
            .expect("read in range");
        let bytes = data.read_bytes().expect("bytes");
        let mut advanced = false;
        for entry in EntryIter::new(&bytes) {
            let (_, entry) = entry.expect("whole entry");
            entry.validate().expect("valid batch");
            let records = entry
                .records(DEFAULT_MAX_DECOMPRESSED_BYTES)
                .expect("records");
            for record in records.to_vec().expect("records") {
                if record.offset >= offset {
                    out.push((record.offset, record.value.expect("value").to_vec()));
                }
            }
            offset = offset.max(entry.next_offset());
            advanced = true;
        }
        assert!(
            advanced,
            "a read at {offset} below the LEO returned no whole batch"
        );
    }
    out
}

fn open(dir: &Path, clock: &Arc<ManualClock>, params: LoadParams) -> Log {
    Log::open(dir, config(), params, clock.clone())
        .expect("open")
        .0
}

fn run(ops: Vec<Op>) {
    let temp = tempfile::tempdir().expect("temp dir");
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let tp = TopicPartition::new("model", 0);
    let dir = partition_dir(temp.path(), &tp);
    let mut log = Log::create(temp.path(), &tp, config(), clock.clone()).expect("create");
    let mut model: Vec<Vec<(i64, Vec<u8>)>> = Vec::new();
    let mut next_offset = 0i64;

    for op in ops {
        match op {
            Op::Append(lengths) => {
                let records: Vec<TestRecord> = lengths
                    .iter()
                    .enumerate()
                    .map(|(i, length)| {
                        let offset = next_offset as usize + i;
                        TestRecord::new(
                            1_700_000_000_000,
                            Some(b"k"),
                            Some(&value(offset, *length)),
                        )
                    })
                    .collect();
                let info = log.append_as_leader(batch(&records)).expect("append");
                assert_eq!(info.first_offset, Offset::new(next_offset));
                let mut model_batch = Vec::new();
                for record in records {
                    model_batch.push((next_offset, record.value.expect("value")));
                    next_offset += 1;
                }
                model.push(model_batch);
            }
            Op::Read {
                from_fraction,
                max_bytes,
            } => {
                let start = next_offset * i64::from(from_fraction) / 255;
                let expected: Vec<_> = model
                    .iter()
                    .flatten()
                    .filter(|(offset, _)| *offset >= start)
                    .cloned()
                    .collect();
                assert_eq!(
                    read_from(&log, start, u64::from(max_bytes)),
                    expected,
                    "read from {start}"
                );
            }
            Op::Truncate { to_fraction } => {
                let boundary = usize::from(to_fraction) * (model.len() + 1) / 256;
                let to = model
                    .get(boundary)
                    .map_or(next_offset, |model_batch| model_batch[0].0);
                log.truncate_to(Offset::new(to)).expect("truncate");
                model.retain(|model_batch| model_batch.last().is_some_and(|(last, _)| *last < to));
                next_offset = next_offset.min(to);
            }
            Op::Roll => {
                log.roll().expect("roll");
            }
            Op::Flush => {
                log.flush().expect("flush");
                assert_eq!(log.recovery_point(), Offset::new(next_offset));
            }
            Op::ReopenClean => {
                log.close().expect("close");
                drop(log);
                log = open(
                    &dir,
                    &clock,
                    LoadParams {
                        had_clean_shutdown: true,
                        ..LoadParams::default()
                    },
                );
            }
            Op::ReopenUnclean => {
                let recovery_point = log.recovery_point();
                drop(log);
                log = open(
                    &dir,
                    &clock,
                    LoadParams {
                        recovery_point,
                        ..LoadParams::default()
                    },
                );
            }
        }
        assert_eq!(log.log_end_offset(), Offset::new(next_offset));
        assert!(log.recovery_point() <= log.log_end_offset());
    }
    assert_eq!(read_from(&log, 0, 4096), model.concat());
}

proptest! {
    // 64 cases by default; PROPTEST_CASES raises it for a longer hunt.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn log_matches_vec_model(ops in prop::collection::vec(op(), 1..60)) {
        run(ops);
    }
}

/// Pinned: truncation to the base of a later segment, an unclean reopen, then an append and a
/// one-byte read.
#[test]
fn regression_truncate_to_segment_base_then_unclean_reopen() {
    run(vec![
        Op::Append(vec![150; 5]),
        Op::Append(vec![150; 5]),
        Op::Append(vec![150; 5]),
        Op::Truncate { to_fraction: 170 },
        Op::ReopenUnclean,
        Op::Append(vec![10]),
        Op::Read {
            from_fraction: 0,
            max_bytes: 1,
        },
    ]);
}

/// Pinned from a found failure: truncating away everything, then a clean reopen.
#[test]
fn regression_truncate_everything_then_clean_reopen() {
    run(vec![
        Op::Append(vec![0, 0]),
        Op::Truncate { to_fraction: 0 },
        Op::ReopenClean,
        Op::Append(vec![1]),
    ]);
}
