//! Transaction verification before the partition's writer lock, as Kafka verifies: the
//! coordinator is asked with no lock of the partition held (so it may even write to it), and a
//! marker that overtakes its answer before the write refuses the write, where the answer would
//! otherwise open a transaction no marker will end.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use ferrolog_records::BatchBuilder;
use ferrolog_storage::log::{AppendInfo, LoadParams, Log, MarkerRequest};
use ferrolog_storage::producer::{MarkerKind, TxnVerifier};
use ferrolog_storage::{
    Clock, CoordinatorEpoch, LogConfig, ManualClock, Offset, ProducerEpoch, Result, StorageError,
};

const START: i64 = 1_700_000_000_000;
const PRODUCER: i64 = 7;

fn open(dir: &std::path::Path) -> Arc<Log> {
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(START));
    let params = LoadParams {
        recovery_point: Offset::ZERO,
        log_start_offset: Offset::ZERO,
        had_clean_shutdown: true,
        ..LoadParams::default()
    };
    Arc::new(
        Log::open(&dir.join("events-0"), LogConfig::default(), params, clock)
            .unwrap()
            .0,
    )
}

fn batch(producer: Option<i64>, sequence: i32, transactional: bool) -> Vec<u8> {
    let mut builder = BatchBuilder::new(0);
    if let Some(producer) = producer {
        builder = builder
            .producer(producer, 0, sequence)
            .transactional(transactional);
    }
    builder.append(START, Some(b"k"), Some(b"v"), &[]).unwrap();
    builder.build().unwrap()
}

/// A verifier that runs `answer` when asked.
struct Asked<F>(F);

impl<F: Fn(i64, ProducerEpoch) -> Result<()>> TxnVerifier for Asked<F> {
    fn verify(&self, producer_id: i64, epoch: ProducerEpoch) -> Result<()> {
        (self.0)(producer_id, epoch)
    }
}

/// Appends the producer's first transactional batch with `verifier` on another thread; its
/// outcome, or a panic if it has not returned within 30 s (a deadlock).
fn append_within_30s(
    log: &Arc<Log>,
    verifier: impl TxnVerifier + Send + 'static,
) -> Result<AppendInfo> {
    let (done, outcome) = mpsc::channel();
    let log = Arc::clone(log);
    std::thread::spawn(move || {
        let appended = log.append_as_leader_verified(batch(Some(PRODUCER), 0, true), &verifier);
        let _ = done.send(appended);
    });
    outcome
        .recv_timeout(Duration::from_secs(30))
        .expect("the append returned: verification holds no lock of the partition")
}

#[test]
fn the_coordinator_is_asked_with_no_lock_of_the_partition_held() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    let writer = Arc::clone(&log);
    // A verifier that writes to the partition it verifies, as a coordinator appending
    // elsewhere under its own locks could make another appender wait.
    let verifier = Asked(move |_, _| {
        writer.append_as_leader(batch(None, 0, false)).unwrap();
        Ok(())
    });
    let appended = append_within_30s(&log, verifier).unwrap();
    assert_eq!(
        appended.first_offset,
        Offset::new(1),
        "after the verifier's own write"
    );
    let state = log.producer_state();
    assert_eq!(
        state.entries()[0].current_txn_first_offset,
        Some(Offset::new(1))
    );
}

#[test]
fn a_marker_that_overtakes_the_answer_refuses_the_write() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    let marker_writer = Arc::clone(&log);
    // The coordinator says yes, then the transaction ends (its ABORT marker written) before the
    // batch reaches the log: the yes no longer holds.
    let verifier = Asked(move |producer_id, epoch| {
        let marker = MarkerRequest {
            producer_id,
            epoch,
            coordinator_epoch: CoordinatorEpoch::new(0),
            kind: MarkerKind::Abort,
        };
        marker_writer.append_marker(marker, false).unwrap();
        Ok(())
    });
    let refused = append_within_30s(&log, verifier);
    assert!(
        matches!(
            refused,
            Err(StorageError::InvalidTxnState {
                producer_id: PRODUCER,
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(
        log.log_end_offset(),
        Offset::new(1),
        "the marker alone was written"
    );
    assert!(
        log.producer_state()
            .entries()
            .iter()
            .all(|entry| entry.current_txn_first_offset.is_none()),
        "no transaction is left open that no marker will end"
    );
}

#[test]
fn a_retry_of_a_written_batch_asks_nothing_and_a_refusal_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    let refusing = Asked(|producer_id, _| {
        Err(StorageError::InvalidTxnState {
            producer_id,
            reason: "not in the transaction".into(),
        })
    });
    let refused = log.append_as_leader_verified(batch(Some(PRODUCER), 0, true), &refusing);
    assert!(
        matches!(refused, Err(StorageError::InvalidTxnState { .. })),
        "{refused:?}"
    );
    assert_eq!(log.log_end_offset(), Offset::ZERO);

    let asked = Arc::new(AtomicUsize::new(0));
    let counting = {
        let asked = Arc::clone(&asked);
        Asked(move |_, _| {
            asked.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    };
    let first = log
        .append_as_leader_verified(batch(Some(PRODUCER), 0, true), &counting)
        .unwrap();
    let retry = log
        .append_as_leader_verified(batch(Some(PRODUCER), 0, true), &counting)
        .unwrap();
    assert_eq!(retry.first_offset, first.first_offset);
    assert_eq!(log.log_end_offset(), Offset::new(1));
    assert_eq!(asked.load(Ordering::SeqCst), 1, "the retry asked nothing");
    // The transaction is open here now: its next batch asks nothing either.
    log.append_as_leader_verified(batch(Some(PRODUCER), 1, true), &counting)
        .unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}
