//! Transactions compacted as Kafka compacts them: aborted data dropped, markers kept while their transaction has data.

use super::*;

/// Appends a transactional batch of one record for producer `id` at the log end, as a replica
/// would (the broker does not take transactional produce yet), and commits it.
fn put_in_transaction(log: &Log, id: i64, sequence: i32, key: &str, value: &str) {
    let mut builder = BatchBuilder::new(log.log_end_offset().value())
        .producer(id, 0, sequence)
        .transactional(true);
    builder
        .append(START, Some(key.as_bytes()), Some(value.as_bytes()), &[])
        .unwrap();
    log.append_as_follower(&builder.build().unwrap()).unwrap();
    log.maybe_increment_high_watermark(log.log_end_offset());
}

fn end_transaction(log: &Log, id: i64, kind: ferrolog_storage::producer::MarkerKind) {
    let marker = ferrolog_storage::log::MarkerRequest {
        producer_id: id,
        epoch: ProducerEpoch::new(0),
        coordinator_epoch: CoordinatorEpoch::new(0),
        kind,
    };
    log.append_marker(marker, false).unwrap();
}

#[test]
fn transactions_are_compacted_as_kafka_compacts_them() {
    use ferrolog_storage::producer::MarkerKind::{Abort, Commit};
    let setup = setup(600);
    let log = &setup.log;
    // Producer 1 commits a = committed; producer 2 later aborts a = aborted. The aborted value
    // is the newer one, and must not push the committed one out.
    put_in_transaction(log, 1, 0, "a", "committed");
    end_transaction(log, 1, Commit);
    put_in_transaction(log, 2, 0, "a", "aborted");
    put_in_transaction(log, 2, 1, "b", "aborted");
    end_transaction(log, 2, Abort);
    for round in 0..6 {
        put(log, "filler", &format!("{round}"));
    }
    // Cleaning stops at the base of the segment holding the last stable offset.
    log.roll().unwrap();
    // Producer 3 leaves a transaction open: nothing from its first record on is cleaned.
    put_in_transaction(log, 3, 0, "c", "open");
    let open_at = log.log_end_offset().value() - 1;
    put(log, "c", "plain");
    put(log, "c", "plainer");
    log.roll().unwrap();
    assert_eq!(log.watermarks().last_stable_offset.value(), open_at);
    let untouched: Vec<_> = records(log)
        .into_iter()
        .filter(|(offset, _, _)| *offset >= open_at)
        .collect();
    clean_until_quiet(&setup, 1 << 20);

    let kept = records(log);
    let values_of = |key: &str| -> Vec<String> {
        kept.iter()
            .filter(|(_, k, _)| k.as_deref() == Some(key))
            .filter_map(|(_, _, value)| value.clone())
            .collect()
    };
    assert_eq!(values_of("a"), ["committed"], "{kept:?}");
    assert!(
        values_of("b").is_empty(),
        "aborted data is dropped: {kept:?}"
    );
    assert_eq!(values_of("filler"), ["5"]);
    assert_eq!(
        kept.iter()
            .filter(|(offset, _, _)| *offset >= open_at)
            .cloned()
            .collect::<Vec<_>>(),
        untouched,
        "nothing at or past the last stable offset is cleaned"
    );
    // Producer 2's batch stays as an empty batch (its last), so its abort still guards data:
    // the marker stays, and a read_committed reader still learns of the transaction.
    let committed = log
        .read(FetchParams {
            start_offset: Offset::ZERO,
            max_bytes: 1 << 20,
            bound: FetchBound::LastStable,
            first_batch: FirstBatch::Whole,
        })
        .unwrap();
    let aborted: Vec<i64> = committed
        .aborted_txns
        .unwrap()
        .iter()
        .map(|txn| txn.producer_id)
        .collect();
    assert_eq!(aborted, [2]);
    let producers: Vec<i64> = producer_batches(log).iter().map(|p| p.0).collect();
    assert!(
        producers.contains(&2),
        "producer 2's batches: {producers:?}"
    );
}
