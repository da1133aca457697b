//! The share partition against the cases Kafka's own rules single out: whole-batch and
//! record-limit acquisition, acknowledgement by type and by offset, the holder check, the
//! delivery-count limit, lock expiry, the redelivery throttle, state loaded with holes,
//! aborted transactions and the in-flight bound.

use ferrolog_records::share_state_records::StateBatch;

use super::acquire::AcquireRequest;
use super::*;

const NOW: i64 = 1_000_000;

fn log(ranges: &[(i64, i64)]) -> Vec<LogBatch> {
    ranges
        .iter()
        .map(|&(first, last)| LogBatch {
            first,
            last,
            ..LogBatch::default()
        })
        .collect()
}

fn fresh(limits: Limits) -> SharePartition {
    let stored = PartitionState {
        start_offset: 0,
        ..PartitionState::default()
    };
    SharePartition::load(&stored, 0, 0, limits).unwrap()
}

fn acquire(
    sp: &mut SharePartition,
    member: &str,
    mode: AcquireMode,
    max: i32,
    batches: &[LogBatch],
) -> Vec<(i64, i64, i16)> {
    let request = AcquireRequest {
        member,
        mode,
        batch_size: 500,
        max_records: max,
        batches,
        aborted: None,
        now_ms: NOW,
    };
    sp.acquire(&request)
        .into_iter()
        .map(|a| (a.first, a.last, a.count))
        .collect()
}

fn ack(first: i64, last: i64, kind: i8) -> AckBatch {
    AckBatch {
        first,
        last,
        types: vec![kind],
    }
}

fn batch(first: i64, last: i64, state: RecordState, count: i16) -> StateBatch {
    StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: state.id(),
        delivery_count: count,
    }
}

#[test]
fn batch_optimized_hands_out_whole_batches_and_accepting_moves_the_start() {
    let mut sp = fresh(Limits::default());
    let batches = log(&[(0, 9), (10, 19)]);
    assert_eq!(
        acquire(&mut sp, "a", AcquireMode::BatchOptimized, 5, &batches),
        vec![(0, 9, 1)]
    );
    assert_eq!(sp.next_fetch_offset(), 10);
    assert_eq!(
        acquire(
            &mut sp,
            "b",
            AcquireMode::BatchOptimized,
            5,
            &log(&[(10, 19)])
        ),
        vec![(10, 19, 1)]
    );
    assert_eq!(
        sp.acknowledge("a", &[ack(0, 9, 1)], NOW),
        Ok(vec![batch(0, 9, RecordState::Acknowledged, 1)])
    );
    assert_eq!(sp.start_offset(), 10);
    assert_eq!(
        sp.acknowledge("a", &[ack(10, 19, 1)], NOW),
        Err(errors_invalid_state())
    );
}

fn errors_invalid_state() -> i16 {
    crate::errors::INVALID_RECORD_STATE
}

#[test]
fn record_limit_hands_out_exactly_what_was_asked() {
    let mut sp = fresh(Limits::default());
    let batches = log(&[(0, 9)]);
    assert_eq!(
        acquire(&mut sp, "a", AcquireMode::RecordLimit, 3, &batches),
        vec![(0, 2, 1)]
    );
    assert_eq!(sp.next_fetch_offset(), 3);
    assert_eq!(
        acquire(&mut sp, "b", AcquireMode::RecordLimit, 3, &batches),
        vec![(3, 5, 1)]
    );
    assert_eq!(
        acquire(&mut sp, "b", AcquireMode::RecordLimit, 10, &batches),
        vec![(6, 9, 1)]
    );
}

#[test]
fn per_offset_acknowledgements_and_the_holder_check() {
    let mut sp = fresh(Limits::default());
    acquire(
        &mut sp,
        "a",
        AcquireMode::BatchOptimized,
        10,
        &log(&[(0, 9)]),
    );
    let before = sp.clone();
    assert_eq!(
        sp.acknowledge("b", &[ack(2, 4, 1)], NOW),
        Err(errors_invalid_state())
    );
    let mixed = AckBatch {
        first: 0,
        last: 2,
        types: vec![1, 2, 3],
    };
    let changed = before.clone().acknowledge("a", &[mixed], NOW).unwrap();
    assert_eq!(
        changed,
        vec![
            batch(0, 0, RecordState::Acknowledged, 1),
            batch(1, 1, RecordState::Available, 1),
            batch(2, 2, RecordState::Archived, 1),
        ]
    );
    let mut sp = before;
    sp.acknowledge(
        "a",
        &[AckBatch {
            first: 0,
            last: 2,
            types: vec![1, 2, 3],
        }],
        NOW,
    )
    .unwrap();
    assert_eq!(
        sp.start_offset(),
        1,
        "offset 0 is done; 1 is available again"
    );
    assert_eq!(sp.next_fetch_offset(), 1);
    assert_eq!(
        acquire(
            &mut sp,
            "b",
            AcquireMode::BatchOptimized,
            10,
            &log(&[(0, 9)])
        ),
        vec![(1, 1, 2)]
    );
    assert_eq!(
        sp.delivery_complete_count(),
        1,
        "offset 2 archived after the start"
    );
}

#[test]
fn a_record_released_at_the_delivery_limit_is_archived() {
    let limits = Limits {
        delivery_count_limit: 2,
        ..Limits::default()
    };
    let mut sp = fresh(limits);
    let batches = log(&[(0, 0)]);
    assert_eq!(
        acquire(&mut sp, "a", AcquireMode::BatchOptimized, 1, &batches),
        vec![(0, 0, 1)]
    );
    assert_eq!(
        sp.acknowledge("a", &[ack(0, 0, 2)], NOW).unwrap(),
        vec![batch(0, 0, RecordState::Available, 1)]
    );
    assert_eq!(
        acquire(&mut sp, "a", AcquireMode::BatchOptimized, 1, &batches),
        vec![(0, 0, 2)]
    );
    assert_eq!(
        sp.acknowledge("a", &[ack(0, 0, 2)], NOW).unwrap(),
        vec![batch(0, 0, RecordState::Archived, 2)]
    );
    assert_eq!(sp.start_offset(), 1);
}

#[test]
fn lapsed_locks_give_records_back_and_renewing_keeps_them() {
    let mut sp = fresh(Limits::default());
    acquire(
        &mut sp,
        "a",
        AcquireMode::BatchOptimized,
        10,
        &log(&[(0, 4), (5, 9)]),
    );
    assert_eq!(sp.next_lock_deadline(), Some(NOW + 30_000));
    assert!(sp.expire_locks(NOW + 29_999).is_empty());
    let renew = AckBatch {
        first: 5,
        last: 9,
        types: vec![4],
    };
    assert_eq!(sp.acknowledge("a", &[renew], NOW + 20_000), Ok(vec![]));
    // The renewal split the acquired range [0, 9] into offsets: each lapses on its own.
    let expired = sp.expire_locks(NOW + 30_000);
    let each = |from: i64, to: i64| {
        (from..=to)
            .map(|o| batch(o, o, RecordState::Available, 1))
            .collect::<Vec<_>>()
    };
    assert_eq!(expired, each(0, 4));
    assert_eq!(sp.next_fetch_offset(), 0);
    assert_eq!(sp.expire_locks(NOW + 50_000), each(5, 9));
    let released = fresh(Limits::default());
    let mut sp = released;
    acquire(
        &mut sp,
        "a",
        AcquireMode::BatchOptimized,
        10,
        &log(&[(0, 4)]),
    );
    assert_eq!(
        sp.release("a"),
        vec![batch(0, 4, RecordState::Available, 1)]
    );
    assert!(sp.release("a").is_empty());
}

#[test]
fn a_batch_delivered_often_goes_out_alone_and_in_parts() {
    let stored = PartitionState {
        start_offset: 0,
        batches: vec![batch(0, 99, RecordState::Available, 3)],
        ..PartitionState::default()
    };
    let mut sp = SharePartition::load(&stored, 0, 0, Limits::default()).unwrap();
    let batches = log(&[(0, 99), (100, 109)]);
    assert_eq!(
        acquire(&mut sp, "a", AcquireMode::BatchOptimized, 500, &batches),
        vec![(0, 49, 4)]
    );
    // At its last delivery, one record a fetch.
    let at_four = PartitionState {
        start_offset: 0,
        batches: vec![batch(0, 99, RecordState::Available, 4)],
        ..PartitionState::default()
    };
    let mut sp = SharePartition::load(&at_four, 0, 0, Limits::default()).unwrap();
    assert_eq!(
        acquire(&mut sp, "a", AcquireMode::BatchOptimized, 500, &batches),
        vec![(0, 0, 5)]
    );
}

#[test]
fn stored_state_with_holes_delivers_the_holes_first() {
    let stored = PartitionState {
        start_offset: 10,
        batches: vec![
            batch(10, 12, RecordState::Acknowledged, 1),
            batch(15, 16, RecordState::Available, 1),
        ],
        ..PartitionState::default()
    };
    let mut sp = SharePartition::load(&stored, 10, 0, Limits::default()).unwrap();
    assert_eq!(sp.start_offset(), 13);
    assert_eq!(sp.next_fetch_offset(), 13);
    let got = acquire(
        &mut sp,
        "a",
        AcquireMode::BatchOptimized,
        500,
        &log(&[(10, 20)]),
    );
    assert_eq!(got, vec![(13, 14, 1), (15, 16, 2), (17, 20, 1)]);
}

#[test]
fn aborted_transactions_are_left_out_under_read_committed() {
    let mut sp = fresh(Limits::default());
    let batches = vec![
        LogBatch {
            first: 0,
            last: 4,
            producer_id: 7,
            transactional: true,
            abort_marker: false,
        },
        LogBatch {
            first: 5,
            last: 5,
            producer_id: 7,
            transactional: true,
            abort_marker: true,
        },
        LogBatch {
            first: 6,
            last: 9,
            ..LogBatch::default()
        },
    ];
    let aborted = [(7, 0)];
    let request = AcquireRequest {
        member: "a",
        mode: AcquireMode::BatchOptimized,
        batch_size: 500,
        max_records: 500,
        batches: &batches,
        aborted: Some(&aborted),
        now_ms: NOW,
    };
    let got: Vec<(i64, i64)> = sp
        .acquire(&request)
        .into_iter()
        .map(|a| (a.first, a.last))
        .collect();
    assert_eq!(
        got,
        vec![(5, 9)],
        "the marker stays, for the client to acknowledge as a gap"
    );
    assert_eq!(sp.start_offset(), 5, "the aborted records are done");
}

#[test]
fn the_in_flight_span_is_bounded() {
    let limits = Limits {
        max_in_flight: 10,
        ..Limits::default()
    };
    let mut sp = fresh(limits);
    let batches = log(&[(0, 9), (10, 19), (20, 29)]);
    let got = acquire(&mut sp, "a", AcquireMode::BatchOptimized, 50, &batches);
    assert_eq!(got, vec![(0, 9, 1)]);
    assert!(acquire(&mut sp, "b", AcquireMode::BatchOptimized, 50, &batches[1..]).is_empty());
    sp.acknowledge("a", &[ack(0, 9, 1)], NOW).unwrap();
    let got = acquire(&mut sp, "b", AcquireMode::BatchOptimized, 50, &batches[1..]);
    assert_eq!(got, vec![(10, 19, 1)]);
}

#[test]
fn the_log_start_passing_records_archives_them() {
    let mut sp = fresh(Limits::default());
    acquire(
        &mut sp,
        "a",
        AcquireMode::BatchOptimized,
        10,
        &log(&[(0, 9)]),
    );
    sp.release("a");
    sp.advance_to_log_start(5);
    assert_eq!(sp.start_offset(), 5);
    assert_eq!(sp.next_fetch_offset(), 5);
    // The log now starts at 5 (its first batch read from there holds 0-9): only 5-9 go out.
    let got = acquire(
        &mut sp,
        "b",
        AcquireMode::BatchOptimized,
        10,
        &log(&[(0, 9)]),
    );
    assert_eq!(got, vec![(5, 9, 2)]);
}

#[test]
fn kafka_s_checks_of_acknowledgement_batches() {
    let ok = |batches: &[AckBatch]| check_ack_batches(batches, 2, false);
    assert!(
        ok(&[ack(0, 4, 1), ack(4, 6, 1)]),
        "one shared offset passes here, as in Kafka"
    );
    assert!(!ok(&[ack(5, 4, 1)]));
    assert!(!ok(&[ack(4, 6, 1), ack(0, 3, 1)]));
    assert!(!ok(&[AckBatch {
        first: 0,
        last: 4,
        types: vec![]
    }]));
    assert!(!ok(&[AckBatch {
        first: 0,
        last: 4,
        types: vec![1, 1]
    }]));
    assert!(!ok(&[ack(0, 4, 4)]), "RENEW only on a renewing request");
    assert!(check_ack_batches(&[ack(0, 4, 4)], 2, true));
    assert!(
        !check_ack_batches(&[ack(0, 4, 4)], 1, true),
        "RENEW is version 2's"
    );
    assert!(!ok(&[ack(0, 4, 5)]));
}
