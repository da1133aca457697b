//! The state decisions of `super::state`, against Kafka's tables.

#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;

fn tp(topic: &str, partition: i32) -> TxnPartition {
    (topic.to_owned(), partition)
}

fn epoch(value: i16) -> ProducerEpoch {
    ProducerEpoch::new(value)
}

fn initialized(epoch: ProducerEpoch) -> TxnMetadata {
    TxnMetadata {
        producer_epoch: epoch,
        ..TxnMetadata::new(1000, 60_000, 0)
    }
}

fn no_new_id() -> Result<i64, i16> {
    panic!("no new producer id expected")
}

fn write(decision: InitDecision) -> TxnMetadata {
    match decision {
        InitDecision::Write(next) => next,
        other => panic!("expected a write, got {other:?}"),
    }
}

#[test]
fn init_producer_id_bumps_the_epoch_and_fences_an_ongoing_transaction() {
    let fresh = TxnMetadata::new(1000, 60_000, 5);
    let first = write(fresh.init_producer_id(30_000, None, 10, 0, no_new_id));
    assert_eq!(
        (first.producer_id, first.producer_epoch, first.state),
        (1000, epoch(0), TxnStatus::Empty)
    );
    assert_eq!((first.timeout_ms, first.start_ms), (30_000, -1));
    let second = write(first.init_producer_id(30_000, None, 20, 0, no_new_id));
    assert_eq!(second.producer_epoch, epoch(1));

    let ongoing = second
        .add_partitions(1000, epoch(1), &[tp("t", 0)], 0, 30)
        .unwrap()
        .unwrap();
    match ongoing.init_producer_id(30_000, None, 40, 0, no_new_id) {
        InitDecision::FenceOngoing(abort) => {
            assert_eq!(abort.state, TxnStatus::PrepareAbort);
            assert_eq!(abort.producer_epoch, epoch(2));
            assert_eq!(abort.partitions, BTreeSet::from([tp("t", 0)]));
            // Once complete, the next InitProducerId bumps again: the new producer gets 3.
            let again = write(
                abort
                    .completed(50)
                    .init_producer_id(30_000, None, 60, 0, no_new_id),
            );
            assert_eq!(again.producer_epoch, epoch(3));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        ongoing
            .fenced_abort(0, 0, no_new_id)
            .unwrap()
            .init_producer_id(1, None, 0, 0, no_new_id),
        InitDecision::Refuse(errors::CONCURRENT_TRANSACTIONS)
    );
}

#[test]
fn init_producer_id_with_an_expected_epoch_follows_kip_360() {
    let state = initialized(epoch(4));
    // The current epoch: bumped, and a retry with the same expectation gets the same epoch.
    let bumped = write(state.init_producer_id(1, Some((1000, epoch(4))), 0, 0, no_new_id));
    assert_eq!(
        (bumped.producer_epoch, bumped.last_producer_epoch),
        (epoch(5), epoch(4))
    );
    let retried = write(bumped.init_producer_id(1, Some((1000, epoch(4))), 0, 0, no_new_id));
    assert_eq!(retried.producer_epoch, epoch(5));
    // Any other epoch, or another producer id, is fenced.
    assert_eq!(
        bumped.init_producer_id(1, Some((1000, epoch(2))), 0, 0, no_new_id),
        InitDecision::Refuse(errors::PRODUCER_FENCED)
    );
    assert_eq!(
        bumped.init_producer_id(1, Some((7, epoch(5))), 0, 0, no_new_id),
        InitDecision::Refuse(errors::PRODUCER_FENCED)
    );
}

#[test]
fn an_exhausted_epoch_moves_the_id_to_a_new_producer_id() {
    let state = initialized(EXHAUSTED_EPOCH);
    let rotated = write(state.init_producer_id(1, None, 0, 0, || Ok(2000)));
    assert_eq!(
        (
            rotated.producer_id,
            rotated.producer_epoch,
            rotated.previous_producer_id
        ),
        (2000, epoch(0), 1000)
    );
    // A producer that asked with its exhausted epoch, retrying, is recognised by its
    // previous id and gets the same id and epoch again.
    let asked = write(state.init_producer_id(1, Some((1000, EXHAUSTED_EPOCH)), 0, 0, || Ok(2000)));
    let retry = write(asked.init_producer_id(1, Some((1000, EXHAUSTED_EPOCH)), 0, 0, no_new_id));
    assert_eq!((retry.producer_id, retry.producer_epoch), (2000, epoch(0)));
    // Without that expectation, the old producer is fenced.
    assert_eq!(
        rotated.init_producer_id(1, Some((1000, EXHAUSTED_EPOCH)), 0, 0, no_new_id),
        InitDecision::Refuse(errors::PRODUCER_FENCED)
    );
    assert_eq!(
        state.init_producer_id(1, None, 0, 0, || Err(errors::COORDINATOR_LOAD_IN_PROGRESS)),
        InitDecision::Refuse(errors::COORDINATOR_LOAD_IN_PROGRESS)
    );
}

#[test]
fn partitions_are_added_by_the_current_producer_only() {
    let state = initialized(epoch(0));
    assert_eq!(
        state.add_partitions(999, epoch(0), &[tp("t", 0)], 0, 1),
        Err(errors::INVALID_PRODUCER_ID_MAPPING)
    );
    assert_eq!(
        state.add_partitions(1000, epoch(1), &[tp("t", 0)], 0, 1),
        Err(errors::PRODUCER_FENCED)
    );
    let ongoing = state
        .add_partitions(1000, epoch(0), &[tp("t", 0)], 0, 7)
        .unwrap()
        .unwrap();
    assert_eq!((ongoing.state, ongoing.start_ms), (TxnStatus::Ongoing, 7));
    // Already in: nothing to write; a new one joins and the start stays.
    assert_eq!(
        ongoing.add_partitions(1000, epoch(0), &[tp("t", 0)], 0, 9),
        Ok(None)
    );
    let more = ongoing
        .add_partitions(1000, epoch(0), &[tp("u", 3)], 0, 9)
        .unwrap()
        .unwrap();
    assert_eq!(more.start_ms, 7);
    assert_eq!(more.partitions.len(), 2);
    assert_eq!(more.verify(1000, epoch(0), &tp("u", 3)), Ok(()));
    assert_eq!(
        more.verify(1000, epoch(0), &tp("v", 0)),
        Err(errors::TRANSACTION_ABORTABLE)
    );
    let EndDecision::Prepare(preparing) = more.end_txn(1000, epoch(0), true, 10) else {
        panic!()
    };
    assert_eq!(
        preparing.add_partitions(1000, epoch(0), &[tp("t", 0)], 0, 11),
        Err(errors::CONCURRENT_TRANSACTIONS)
    );
    assert_eq!(
        preparing.verify(1000, epoch(0), &tp("t", 0)),
        Err(errors::CONCURRENT_TRANSACTIONS)
    );
    // The next transaction after completion starts afresh.
    let next = preparing
        .completed(12)
        .add_partitions(1000, epoch(0), &[tp("v", 0)], 0, 13)
        .unwrap()
        .unwrap();
    assert_eq!(next.partitions, BTreeSet::from([tp("v", 0)]));
    assert_eq!(next.start_ms, 13);
}

#[test]
fn end_txn_follows_kafka_s_state_table_for_transactions_v1() {
    let ongoing = initialized(epoch(0))
        .add_partitions(1000, epoch(0), &[tp("t", 0)], 0, 1)
        .unwrap()
        .unwrap();
    let EndDecision::Prepare(commit) = ongoing.end_txn(1000, epoch(0), true, 2) else {
        panic!()
    };
    assert_eq!(
        (commit.state, commit.producer_epoch),
        (TxnStatus::PrepareCommit, epoch(0))
    );
    let cases = [
        (
            &commit,
            true,
            EndDecision::Refuse(errors::CONCURRENT_TRANSACTIONS),
        ),
        (
            &commit,
            false,
            EndDecision::Refuse(errors::INVALID_TXN_STATE),
        ),
    ];
    for (state, is_commit, expected) in cases {
        assert_eq!(state.end_txn(1000, epoch(0), is_commit, 3), expected);
    }
    let done = commit.completed(3);
    assert_eq!(done.state, TxnStatus::CompleteCommit);
    assert!(done.partitions.is_empty());
    assert_eq!(
        done.end_txn(1000, epoch(0), true, 4),
        EndDecision::AlreadyComplete
    );
    assert_eq!(
        done.end_txn(1000, epoch(0), false, 4),
        EndDecision::Refuse(errors::INVALID_TXN_STATE)
    );
    assert_eq!(
        initialized(epoch(0)).end_txn(1000, epoch(0), true, 4),
        EndDecision::Refuse(errors::INVALID_TXN_STATE)
    );
    assert_eq!(
        done.end_txn(1000, epoch(1), true, 4),
        EndDecision::Refuse(errors::PRODUCER_FENCED)
    );
    assert_eq!(
        done.end_txn(1, epoch(0), true, 4),
        EndDecision::Refuse(errors::INVALID_PRODUCER_ID_MAPPING)
    );
}

#[test]
fn timeouts_and_expiry_count_from_kafka_s_timestamps() {
    let ongoing = initialized(epoch(0))
        .add_partitions(1000, epoch(0), &[tp("t", 0)], 0, 1_000)
        .unwrap()
        .unwrap();
    assert!(!ongoing.timed_out(61_000));
    assert!(ongoing.timed_out(61_001));
    assert!(!ongoing.expired(i64::MAX, 1));
    let empty = initialized(epoch(0));
    assert!(empty.expired(10, 10));
    assert!(!empty.expired(9, 10));
}

#[test]
fn values_round_trip_with_partitions_grouped_by_topic() {
    let ongoing = initialized(epoch(3))
        .add_partitions(1000, epoch(3), &[tp("b", 1), tp("a", 2), tp("b", 0)], 0, 5)
        .unwrap()
        .unwrap();
    let value = ongoing.to_value();
    assert_eq!(
        value.partitions,
        Some(vec![("a".into(), vec![2]), ("b".into(), vec![0, 1])])
    );
    let back = TxnMetadata::from_value(&TxnLogValue::decode(&value.encode(1).unwrap()).unwrap());
    assert_eq!(
        back,
        TxnMetadata {
            last_producer_epoch: ProducerEpoch::NONE,
            ..ongoing
        }
    );
    assert_eq!(initialized(epoch(0)).to_value().partitions, None);
}

#[test]
fn end_txn_v2_follows_kafka_s_table() {
    let no = || -> Result<i64, i16> { panic!("no new producer id expected") };
    let ongoing = initialized(epoch(4))
        .add_partitions(1000, epoch(4), &[tp("t", 0)], TV_2, 1)
        .unwrap()
        .unwrap();
    let EndDecision::Prepare(prepared) = ongoing.end_txn_v2(1000, epoch(4), true, 2, no) else {
        panic!()
    };
    assert_eq!(
        (
            prepared.state,
            prepared.producer_epoch,
            prepared.last_producer_epoch
        ),
        (TxnStatus::PrepareCommit, epoch(5), epoch(4))
    );
    // While preparing: a retry at the old epoch commits again (CONCURRENT), an abort is
    // INVALID_TXN_STATE, the new epoch is fenced.
    assert_eq!(
        prepared.end_txn_v2(1000, epoch(4), true, 3, no),
        EndDecision::Refuse(errors::CONCURRENT_TRANSACTIONS)
    );
    assert_eq!(
        prepared.end_txn_v2(1000, epoch(4), false, 3, no),
        EndDecision::Refuse(errors::INVALID_TXN_STATE)
    );
    assert_eq!(
        prepared.end_txn_v2(1000, epoch(5), true, 3, no),
        EndDecision::Refuse(errors::PRODUCER_FENCED)
    );
    let done = prepared.completed(4);
    // CompleteCommit: a retry of the commit is done; of an abort INVALID_TXN_STATE; at the
    // current epoch an abort bumps again, a commit is INVALID_TXN_STATE.
    let cases = [
        (epoch(4), true, EndDecision::AlreadyComplete),
        (
            epoch(4),
            false,
            EndDecision::Refuse(errors::INVALID_TXN_STATE),
        ),
        (
            epoch(5),
            true,
            EndDecision::Refuse(errors::INVALID_TXN_STATE),
        ),
        (epoch(3), true, EndDecision::Refuse(errors::PRODUCER_FENCED)),
    ];
    for (epoch, commit, expected) in cases {
        assert_eq!(
            done.end_txn_v2(1000, epoch, commit, 5, no),
            expected,
            "{epoch} {commit}"
        );
    }
    let EndDecision::Prepare(empty_abort) = done.end_txn_v2(1000, epoch(5), false, 6, no) else {
        panic!()
    };
    assert_eq!(
        (
            empty_abort.producer_epoch,
            empty_abort.start_ms,
            empty_abort.partitions.len()
        ),
        (epoch(6), 6, 0)
    );
    // Empty: abort at the current epoch bumps, commit is INVALID_TXN_STATE, a retry epoch
    // is fenced.
    let empty = initialized(epoch(2));
    assert!(matches!(
        empty.end_txn_v2(1000, epoch(2), false, 1, no),
        EndDecision::Prepare(_)
    ));
    assert_eq!(
        empty.end_txn_v2(1000, epoch(2), true, 1, no),
        EndDecision::Refuse(errors::INVALID_TXN_STATE)
    );
    assert_eq!(
        empty.end_txn_v2(1000, epoch(1), false, 1, no),
        EndDecision::Refuse(errors::PRODUCER_FENCED)
    );
    assert_eq!(
        empty.end_txn_v2(7, epoch(2), false, 1, no),
        EndDecision::Refuse(errors::INVALID_PRODUCER_ID_MAPPING)
    );
}

#[test]
fn a_v2_end_at_an_exhausted_epoch_moves_to_a_new_producer_id() {
    let ongoing = initialized(EXHAUSTED_EPOCH)
        .add_partitions(1000, EXHAUSTED_EPOCH, &[tp("t", 0)], TV_2, 1)
        .unwrap()
        .unwrap();
    let EndDecision::Prepare(prepared) =
        ongoing.end_txn_v2(1000, EXHAUSTED_EPOCH, true, 2, || Ok(2000))
    else {
        panic!()
    };
    // The markers go at i16::MAX under the old id; completion moves to the new one.
    assert_eq!(
        (prepared.producer_id, prepared.producer_epoch),
        (1000, ProducerEpoch::MAX)
    );
    assert_eq!(prepared.next_producer_id, 2000);
    assert_eq!(prepared.to_value().next_producer_id, 2000);
    let done = prepared.completed(3);
    assert_eq!(
        (
            done.producer_id,
            done.producer_epoch,
            done.previous_producer_id
        ),
        (2000, epoch(0), 1000)
    );
    // The old producer retrying its EndTxn is recognised and answered with the new id.
    assert_eq!(
        done.end_txn_v2(1000, EXHAUSTED_EPOCH, true, 4, || panic!()),
        EndDecision::AlreadyComplete
    );
}

#[test]
fn fencing_follows_the_cluster_s_transaction_version() {
    let ongoing = initialized(EXHAUSTED_EPOCH)
        .add_partitions(1000, EXHAUSTED_EPOCH, &[tp("t", 0)], 0, 1)
        .unwrap()
        .unwrap();
    // v2: as a v2 abort, to a new producer id once the epoch runs out (KAFKA-20090).
    let v2 = ongoing.fenced_abort(2, TV_2, || Ok(2000)).unwrap();
    assert_eq!(
        (v2.producer_epoch, v2.client_tv),
        (ProducerEpoch::MAX, TV_2)
    );
    assert_eq!(v2.completed(3).producer_id, 2000);
    // v1: the epoch bumped, the markers v1's.
    let v1 = initialized(epoch(3))
        .add_partitions(1000, epoch(3), &[tp("t", 0)], 0, 1)
        .unwrap()
        .unwrap()
        .fenced_abort(2, 1, || panic!())
        .unwrap();
    assert_eq!((v1.producer_epoch, v1.client_tv), (epoch(4), 0));
}

#[test]
fn a_v1_end_of_a_transaction_a_v2_write_added_to_keeps_the_epoch() {
    let ongoing = initialized(epoch(0))
        .add_partitions(1000, epoch(0), &[tp("t", 0)], TV_2, 1)
        .unwrap()
        .unwrap();
    let EndDecision::Prepare(prepared) = ongoing.end_txn(1000, epoch(0), true, 2) else {
        panic!()
    };
    assert_eq!((prepared.producer_epoch, prepared.client_tv), (epoch(0), 0));
}
