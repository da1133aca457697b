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
        epoch,
        first_seq,
        last_seq: first_seq.wrapping_add(count - 1) & i32::MAX,
        first_offset,
        last_offset: first_offset + i64::from(count) - 1,
        timestamp: 1_000 + first_offset,
    }
}

fn applied(batches: &[ProducerBatch]) -> ProducerState {
    let mut state = ProducerState::default();
    for b in batches {
        assert_eq!(state.check(std::slice::from_ref(b)).unwrap(), None);
        state.apply(b);
    }
    state
}

#[test]
fn sequences_must_follow_and_duplicates_are_recognised() {
    let state = applied(&[batch(7, 0, 0, 5, 0), batch(7, 0, 5, 5, 5)]);
    // A retry of either of the last batches is a duplicate, answered with its offsets.
    let original = state.check(&[batch(7, 0, 0, 5, 99)]).unwrap().unwrap();
    assert_eq!((original.first_offset, original.last_offset), (0, 4));
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
            StorageError::InvalidProducerEpoch {
                epoch: 2,
                current: 3,
                ..
            }
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
        assert_eq!(state.check(&[next]).unwrap(), None);
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
    state.evict_below(5);
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
    assert_eq!(loaded.get(2).unwrap().epoch, 5);
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
    assert_eq!(original.map(|o| o.first_offset), Some(100));
}
