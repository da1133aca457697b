use super::*;

fn batch(
    producer_id: i64,
    epoch: i16,
    first_seq: i32,
    count: i32,
    first_offset: i64,
) -> ProducerBatch {
    ProducerBatch {
        producer_id,
        epoch: ProducerEpoch::new(epoch),
        first_seq,
        last_seq: first_seq.wrapping_add(count - 1) & i32::MAX,
        first_offset: Offset::new(first_offset),
        last_offset: Offset::new(first_offset + i64::from(count) - 1),
        timestamp: 1_000 + first_offset,
        transactional: false,
    }
}

/// A transactional batch of `count` records.
fn txn_batch(
    producer_id: i64,
    epoch: i16,
    first_seq: i32,
    count: i32,
    first_offset: i64,
) -> ProducerBatch {
    ProducerBatch {
        transactional: true,
        ..batch(producer_id, epoch, first_seq, count, first_offset)
    }
}

fn marker(producer_id: i64, epoch: i16, kind: MarkerKind, offset: i64) -> TxnMarker {
    TxnMarker {
        producer_id,
        epoch: ProducerEpoch::new(epoch),
        coordinator_epoch: CoordinatorEpoch::new(3),
        kind,
        offset: Offset::new(offset),
        timestamp: 5_000 + offset,
    }
}

/// A coordinator that finds every transaction in order.
struct Accepting;

impl TxnVerifier for Accepting {
    fn verify(&self, _producer_id: i64, _epoch: ProducerEpoch) -> Result<()> {
        Ok(())
    }
}

fn applied(batches: &[ProducerBatch]) -> ProducerState {
    let mut state = ProducerState::default();
    for b in batches {
        assert_eq!(
            state
                .check_verified(std::slice::from_ref(b), &Accepting, BatchOrigin::Client)
                .unwrap(),
            None
        );
        state.apply(b);
    }
    state
}

#[test]
fn sequences_must_follow_and_duplicates_are_recognised() {
    let state = applied(&[batch(7, 0, 0, 5, 0), batch(7, 0, 5, 5, 5)]);
    // A retry of either of the last batches is a duplicate, answered with its offsets.
    let original = state.check(&[batch(7, 0, 0, 5, 99)]).unwrap().unwrap();
    assert_eq!(
        (original.first_offset, original.last_offset),
        (Offset::new(0), Offset::new(4))
    );
    // A gap, or a repeat that is not one of the remembered batches, is out of order.
    let gap = state.check(&[batch(7, 0, 11, 1, 10)]).unwrap_err();
    assert!(
        matches!(
            gap,
            StorageError::OutOfOrderSequence {
                expected: 10,
                received: 11,
                ..
            }
        ),
        "{gap}"
    );
    assert!(state.check(&[batch(7, 0, 3, 5, 10)]).is_err());
    // The next batch, and batches of one append checked against each other.
    assert_eq!(
        state
            .check(&[batch(7, 0, 10, 2, 10), batch(7, 0, 12, 1, 12)])
            .unwrap(),
        None
    );
    assert!(
        state
            .check(&[batch(7, 0, 10, 2, 10), batch(7, 0, 13, 1, 12)])
            .is_err()
    );
}

#[test]
fn epochs_fence_older_producers_and_a_new_epoch_starts_at_zero() {
    let state = applied(&[batch(7, 3, 0, 5, 0)]);
    let fenced = state.check(&[batch(7, 2, 5, 1, 5)]).unwrap_err();
    assert!(
        matches!(
            fenced,
            StorageError::InvalidProducerEpoch { epoch, current, .. }
                if (epoch.value(), current.value()) == (2, 3)
        ),
        "{fenced}"
    );
    assert_eq!(state.check(&[batch(7, 4, 0, 1, 5)]).unwrap(), None);
    assert!(
        state.check(&[batch(7, 4, 5, 1, 5)]).is_err(),
        "a new epoch must start at 0"
    );
}

#[test]
fn unknown_producers_start_anywhere_and_only_five_batches_are_remembered() {
    let mut state = applied(&[batch(9, 0, 40, 1, 0)]);
    for i in 1..=6 {
        let next = batch(9, 0, 40 + i, 1, i64::from(i));
        assert_eq!(
            state
                .check_verified(&[next], &Accepting, BatchOrigin::Client)
                .unwrap(),
            None
        );
        state.apply(&next);
    }
    assert_eq!(state.get(9).unwrap().batches.len(), BATCHES_PER_PRODUCER);
    // The oldest batches are forgotten: their retry is no longer a duplicate but out of order.
    assert!(state.check(&[batch(9, 0, 40, 1, 50)]).is_err());
    assert!(state.check(&[batch(9, 0, 46, 1, 50)]).unwrap().is_some());
}

#[test]
fn sequences_wrap_after_i32_max() {
    let state = applied(&[batch(5, 0, i32::MAX, 1, 0)]);
    assert_eq!(state.check(&[batch(5, 0, 0, 1, 1)]).unwrap(), None);
}

#[test]
fn expiry_and_log_start_eviction_forget_producers() {
    let mut state = applied(&[batch(1, 0, 0, 1, 0), batch(2, 0, 0, 1, 10)]);
    state.evict_below(Offset::new(5));
    assert_eq!(state.producer_ids(), HashSet::from([2]));
    assert_eq!(
        state.remove_expired(1_010 + 999, std::time::Duration::from_millis(1_000)),
        0
    );
    assert_eq!(
        state.remove_expired(1_010 + 1_000, std::time::Duration::from_millis(1_000)),
        1
    );
    assert!(state.is_empty());
}

#[test]
fn snapshots_round_trip_in_kafka_s_format_and_damage_is_refused() {
    let state = applied(&[
        batch(1, 0, 0, 3, 0),
        batch(1, 0, 3, 2, 3),
        batch(2, 5, 7, 1, 5),
    ]);
    let bytes = snapshot::encode(state.entries().into_iter());
    assert_eq!(bytes.len(), 10 + 2 * 46);
    let path = std::path::Path::new("00000000000000000006.snapshot");
    let loaded = ProducerState::from_entries(snapshot::decode(path, &bytes).unwrap());
    // Only each producer's last batch is kept, as in Kafka.
    let one = loaded.get(1).unwrap();
    assert_eq!(one.batches.len(), 1);
    assert_eq!(
        *one.batches.back().unwrap(),
        *state.get(1).unwrap().batches.back().unwrap()
    );
    assert_eq!(loaded.get(2).unwrap().epoch, ProducerEpoch::new(5));
    for position in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[position] ^= 0x40;
        assert!(
            snapshot::decode(path, &damaged).is_err(),
            "flipped byte {position}"
        );
    }
    assert!(snapshot::decode(path, &bytes[..bytes.len() - 1]).is_err());
}

#[test]
fn a_batch_whose_sequences_wrapped_is_still_recognised_after_a_snapshot() {
    // Sequences i32::MAX - 1, i32::MAX, 0, 1: the batch wrapped past i32::MAX.
    let wrapped = batch(3, 0, i32::MAX - 1, 4, 100);
    assert_eq!(wrapped.last_seq, 1);
    let state = applied(&[wrapped]);
    let bytes = snapshot::encode(state.entries().into_iter());
    let path = std::path::Path::new("00000000000000000104.snapshot");
    let loaded = ProducerState::from_entries(snapshot::decode(path, &bytes).unwrap());
    assert_eq!(
        *loaded.get(3).unwrap().batches.back().unwrap(),
        *state.get(3).unwrap().batches.back().unwrap(),
        "the first sequence wraps back as it wrapped forward"
    );
    // A retry of it after the restart is a duplicate, not out of order.
    let original = loaded.check(&[batch(3, 0, i32::MAX - 1, 4, 200)]).unwrap();
    assert_eq!(original.map(|o| o.first_offset), Some(Offset::new(100)));
}

#[test]
fn transactions_open_at_their_first_batch_and_close_at_their_marker() {
    let mut state = applied(&[txn_batch(1, 0, 0, 2, 10), batch(9, 0, 0, 1, 12)]);
    assert_eq!(state.first_unstable_offset(), Some(Offset::new(10)));
    // More of the same transaction, and a second producer's transaction behind it.
    for next in [txn_batch(1, 0, 2, 1, 13), txn_batch(2, 0, 0, 2, 14)] {
        assert_eq!(
            state
                .check_verified(&[next], &Accepting, BatchOrigin::Client)
                .unwrap(),
            None
        );
        state.apply(&next);
    }
    assert_eq!(
        state.open_txns().collect::<Vec<_>>(),
        [(Offset::new(10), 1), (Offset::new(14), 2)]
    );
    // A plain batch of a producer whose transaction is open is refused, also within one append.
    for refused in [
        vec![batch(1, 0, 3, 1, 16)],
        vec![txn_batch(9, 0, 1, 1, 16), batch(9, 0, 2, 1, 17)],
    ] {
        let error = state
            .check_verified(&refused, &Accepting, BatchOrigin::Client)
            .unwrap_err();
        assert!(
            matches!(error, StorageError::InvalidTxnState { .. }),
            "{error}"
        );
    }
    // Producer 1 aborts: stable up to producer 2's transaction, which stays open.
    let completed = state
        .apply_marker(&marker(1, 0, MarkerKind::Abort, 16))
        .unwrap();
    assert_eq!(
        completed,
        CompletedTxn {
            producer_id: 1,
            first_offset: Offset::new(10),
            last_offset: Offset::new(16),
            aborted: true,
            last_stable_offset: Offset::new(14),
        }
    );
    assert_eq!(state.first_unstable_offset(), Some(Offset::new(14)));
    // Producer 2 commits: nothing else open, so stable past its marker.
    let completed = state
        .apply_marker(&marker(2, 0, MarkerKind::Commit, 17))
        .unwrap();
    assert_eq!(
        (
            completed.first_offset,
            completed.aborted,
            completed.last_stable_offset
        ),
        (Offset::new(14), false, Offset::new(18))
    );
    assert_eq!(state.first_unstable_offset(), None);
    // A marker with nothing open completes nothing, but the producer takes its epochs.
    assert_eq!(
        state.apply_marker(&marker(1, 0, MarkerKind::Commit, 18)),
        None
    );
    assert_eq!(
        state.apply_marker(&marker(7, 4, MarkerKind::Abort, 19)),
        None
    );
    let seven = state.get(7).unwrap();
    assert_eq!(
        (seven.epoch, seven.coordinator_epoch, seven.last_timestamp),
        (ProducerEpoch::new(4), CoordinatorEpoch::new(3), 5_019)
    );
    // The producer may write plain batches again once its transaction closed.
    assert_eq!(state.check(&[batch(1, 0, 3, 1, 20)]).unwrap(), None);
}

#[test]
fn markers_of_older_producer_or_coordinator_epochs_are_refused() {
    let mut state = applied(&[txn_batch(1, 5, 0, 1, 0)]);
    let at = |epoch, coordinator_epoch| TxnMarker {
        coordinator_epoch: CoordinatorEpoch::new(coordinator_epoch),
        ..marker(1, epoch, MarkerKind::Commit, 1)
    };
    let stale = state.check_marker(&at(4, 3), false).unwrap_err();
    assert!(
        matches!(
            stale,
            StorageError::InvalidProducerEpoch { epoch, current, .. }
                if (epoch.value(), current.value()) == (4, 5)
        ),
        "{stale}"
    );
    assert!(state.check_marker(&at(5, 3), false).is_ok());
    // Transactions v2 bump the epoch with every marker: the same epoch is stale then.
    assert!(state.check_marker(&at(5, 3), true).is_err());
    assert!(state.check_marker(&at(6, 3), true).is_ok());
    state.apply_marker(&at(5, 3)).unwrap();
    let fenced = state.check_marker(&at(5, 2), false).unwrap_err();
    assert!(
        matches!(
            fenced,
            StorageError::CoordinatorFenced { marker, current, .. }
                if (marker.value(), current.value()) == (2, 3)
        ),
        "{fenced}"
    );
    assert!(state.check_marker(&at(5, 3), false).is_ok());
    // With the transaction closed, the same marker again is a retry, which v2 accepts too
    // (KAFKA-19999); an older epoch stays stale.
    assert!(state.check_marker(&at(5, 3), true).is_ok());
    assert!(state.check_marker(&at(4, 3), true).is_err());
    // A producer the partition does not know takes any marker.
    assert!(
        state
            .check_marker(&marker(8, 0, MarkerKind::Abort, 2), true)
            .is_ok()
    );
}

#[test]
fn after_a_marker_moves_a_producer_to_a_new_epoch_its_sequences_restart() {
    let mut state = applied(&[txn_batch(1, 0, 0, 3, 0)]);
    state.apply_marker(&marker(1, 1, MarkerKind::Commit, 3));
    let entry = state.get(1).unwrap();
    assert!(entry.batches.is_empty() && entry.epoch == ProducerEpoch::new(1));
    let error = state
        .check_verified(&[txn_batch(1, 1, 3, 1, 4)], &Accepting, BatchOrigin::Client)
        .unwrap_err();
    assert!(
        matches!(error, StorageError::OutOfOrderSequence { expected: 0, .. }),
        "{error}"
    );
    assert_eq!(
        state
            .check_verified(&[txn_batch(1, 1, 0, 1, 4)], &Accepting, BatchOrigin::Client)
            .unwrap(),
        None
    );
    assert!(
        state
            .check_verified(&[txn_batch(1, 0, 3, 1, 4)], &Accepting, BatchOrigin::Client)
            .is_err(),
        "the old epoch is fenced"
    );
}

#[test]
fn beyond_the_limit_the_producers_least_recently_in_the_log_go_open_transactions_stay() {
    // Producer 0 has a transaction open from offset 0; producers 1..=20 append one batch each
    // at offsets 1..=20, producer 5 once more at the end.
    let mut batches = vec![txn_batch(0, 0, 0, 1, 0)];
    batches.extend((1..=20).map(|id| batch(id, 0, 0, 1, id)));
    batches.push(batch(5, 0, 1, 1, 21));
    let mut state = applied(&batches);
    assert_eq!(state.evict_beyond(21), 0);
    // Down to nine tenths of 10: the oldest 12 idle ones go.
    assert_eq!(state.evict_beyond(10), 12);
    let mut kept: Vec<i64> = state.producer_ids().into_iter().collect();
    kept.sort_unstable();
    assert_eq!(kept, [0, 5, 14, 15, 16, 17, 18, 19, 20]);
    assert_eq!(
        state.first_unstable_offset(),
        Some(Offset::ZERO),
        "the open transaction stays"
    );
    // A forgotten producer starts again at any sequence, as an expired one.
    assert!(state.check(&[batch(1, 0, 7, 1, 22)]).unwrap().is_none());
}

#[test]
fn producers_with_open_transactions_neither_expire_nor_leave_with_old_segments() {
    let mut state = applied(&[txn_batch(1, 0, 0, 1, 0), batch(2, 0, 0, 1, 1)]);
    state.apply_marker(&marker(3, 0, MarkerKind::Abort, 2));
    state.evict_below(Offset::new(10));
    assert_eq!(state.producer_ids(), HashSet::from([1, 3]));
    assert_eq!(
        state.remove_expired(1_000_000, std::time::Duration::from_millis(1_000)),
        1
    );
    assert_eq!(state.producer_ids(), HashSet::from([1]));
    assert_eq!(state.first_unstable_offset(), Some(Offset::ZERO));
}

#[test]
fn snapshots_carry_open_transactions_and_producers_without_batches() {
    let mut state = applied(&[txn_batch(1, 2, 0, 2, 7), batch(2, 0, 0, 1, 9)]);
    state.apply_marker(&marker(3, 6, MarkerKind::Commit, 10));
    let bytes = snapshot::encode(state.entries().into_iter());
    assert_eq!(bytes.len(), 10 + 3 * 46);
    // The third entry, producer 3's: no batch, so sequence and offset −1 and delta 0, with its
    // epochs, its marker's timestamp and no open transaction.
    let mut expected = Vec::new();
    expected.extend_from_slice(&3i64.to_be_bytes());
    expected.extend_from_slice(&6i16.to_be_bytes());
    expected.extend_from_slice(&(-1i32).to_be_bytes());
    expected.extend_from_slice(&(-1i64).to_be_bytes());
    expected.extend_from_slice(&0i32.to_be_bytes());
    expected.extend_from_slice(&5_010i64.to_be_bytes());
    expected.extend_from_slice(&3i32.to_be_bytes());
    expected.extend_from_slice(&(-1i64).to_be_bytes());
    assert_eq!(&bytes[10 + 2 * 46..], expected.as_slice());
    // Producer 1's open transaction: CurrentTxnFirstOffset 7.
    assert_eq!(&bytes[10 + 38..10 + 46], &7i64.to_be_bytes());
    let path = std::path::Path::new("00000000000000000011.snapshot");
    let loaded = ProducerState::from_entries(snapshot::decode(path, &bytes).unwrap());
    assert_eq!(loaded.first_unstable_offset(), Some(Offset::new(7)));
    assert_eq!(loaded.get(3), state.get(3));
    assert_eq!(
        loaded.get(1).unwrap().current_txn_first_offset,
        Some(Offset::new(7))
    );
}

/// A verifier that records what it was asked and answers yes only for `allowed`.
struct Recording {
    allowed: Option<(i64, i16)>,
    asked: std::cell::RefCell<Vec<(i64, i16)>>,
}

impl TxnVerifier for Recording {
    fn verify(&self, producer_id: i64, epoch: ProducerEpoch) -> Result<()> {
        self.asked.borrow_mut().push((producer_id, epoch.value()));
        if self.allowed == Some((producer_id, epoch.value())) {
            Ok(())
        } else {
            Err(StorageError::TxnNotVerified {
                producer_id,
                epoch,
                error_code: 48,
                reason: "not in the transaction".into(),
            })
        }
    }
}

#[test]
fn only_a_batch_starting_a_transaction_is_verified() {
    let verifier = Recording {
        allowed: Some((7, 0)),
        asked: Default::default(),
    };
    let mut state = ProducerState::default();
    // Unknown producer, first transactional batch: asked once; the second batch of the same
    // append joins the transaction the first opened and is not asked about.
    let first = [txn_batch(7, 0, 0, 2, 0), txn_batch(7, 0, 2, 1, 2)];
    assert_eq!(
        state
            .check_verified(&first, &verifier, BatchOrigin::Client)
            .unwrap(),
        None
    );
    assert_eq!(*verifier.asked.borrow(), [(7, 0)]);
    for b in &first {
        state.apply(b);
    }
    // The transaction is open at this epoch: later batches are not asked about.
    state
        .check_verified(&[txn_batch(7, 0, 3, 1, 3)], &verifier, BatchOrigin::Client)
        .unwrap();
    assert_eq!(verifier.asked.borrow().len(), 1);
    // Once a marker ends it, the next transaction's first batch is asked about again.
    state.apply(&txn_batch(7, 0, 3, 1, 3));
    state.apply_marker(&marker(7, 0, MarkerKind::Commit, 4));
    state
        .check_verified(&[txn_batch(7, 0, 4, 1, 5)], &verifier, BatchOrigin::Client)
        .unwrap();
    assert_eq!(verifier.asked.borrow().len(), 2);
    // A refusal is the producer's answer, before any sequence check.
    let refused = state
        .check_verified(&[txn_batch(8, 0, 9, 1, 6)], &verifier, BatchOrigin::Client)
        .unwrap_err();
    assert!(matches!(
        refused,
        StorageError::TxnNotVerified { producer_id: 8, .. }
    ));
    // An older epoch is fenced before the verifier is asked.
    let before = verifier.asked.borrow().len();
    state.apply_marker(&marker(7, 2, MarkerKind::Abort, 7));
    let fenced = state
        .check_verified(&[txn_batch(7, 1, 0, 1, 8)], &verifier, BatchOrigin::Client)
        .unwrap_err();
    assert!(matches!(fenced, StorageError::InvalidProducerEpoch { .. }));
    assert_eq!(verifier.asked.borrow().len(), before);
    // Without a coordinator, a batch that would start a transaction is refused.
    let alone = state.check(&[txn_batch(9, 0, 0, 1, 8)]).unwrap_err();
    assert!(matches!(alone, StorageError::InvalidTxnState { .. }));
}
