//! Transactions v2 (KIP-890): the epoch bumped at every end, partitions added with their writes.

use super::*;

#[test]
fn transactions_v2_bump_the_epoch_at_every_end_and_add_partitions_with_their_writes() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let node = setup(dir.path(), &clock);
    let producer = node.init("v2", 60_000);
    // No AddPartitionsToTxn: the writes add their partitions.
    node.produce_v2("v2", producer, 0, 0).unwrap();
    node.produce_v2("v2", producer, 1, 0).unwrap();
    assert_eq!(
        node.state("v2"),
        Some((
            TxnStatus::Ongoing,
            0,
            vec![(TOPIC.to_owned(), 0), (TOPIC.to_owned(), 1)]
        ))
    );
    let ended = node
        .transactions
        .end_txn(&node.groups, "v2", producer, true, true);
    assert_eq!(
        (
            ended.answer.code,
            ended.answer.producer_id,
            ended.answer.epoch.value()
        ),
        (0, producer.0, 1),
        "the producer goes on at the next epoch"
    );
    for partition in [0, 1] {
        assert_eq!(markers(&node.log(partition)), [(producer.0, 1, true)]);
    }
    // A retry of that EndTxn (at the old epoch) is answered with where the producer is.
    let retried = node
        .transactions
        .end_txn(&node.groups, "v2", producer, true, true);
    assert_eq!(
        (retried.answer.code, retried.answer.epoch.value()),
        (0, 1),
        "{retried:?}"
    );
    // An abort of the old epoch's committed transaction is INVALID_TXN_STATE.
    assert_eq!(
        node.transactions
            .end_txn(&node.groups, "v2", producer, false, true)
            .answer
            .code,
        INVALID_TXN_STATE
    );
    // The next transaction, at epoch 1: its first write to partition 0 is verified again.
    let next = (producer.0, ProducerEpoch::new(1));
    node.produce_v2("v2", next, 0, 0).unwrap();
    // The old epoch is fenced from writing.
    let zombie = node.produce_v2("v2", producer, 2, 0).unwrap_err();
    assert_eq!(
        ferrolog_broker::errors::code_of(&zombie),
        INVALID_PRODUCER_EPOCH
    );
    let aborted = node
        .transactions
        .end_txn(&node.groups, "v2", next, false, true);
    assert_eq!((aborted.answer.code, aborted.answer.epoch.value()), (0, 2));
    assert_eq!(
        markers(&node.log(0)),
        [(producer.0, 1, true), (producer.0, 2, false)]
    );
    // An abort with nothing open bumps the epoch too; a commit is INVALID_TXN_STATE.
    let idle = (producer.0, ProducerEpoch::new(2));
    assert_eq!(
        node.transactions
            .end_txn(&node.groups, "v2", idle, true, true)
            .answer
            .code,
        INVALID_TXN_STATE
    );
    let empty_abort = node
        .transactions
        .end_txn(&node.groups, "v2", idle, false, true);
    assert_eq!(
        (empty_abort.answer.code, empty_abort.answer.epoch.value()),
        (0, 3)
    );
    assert!(empty_abort.marked.is_empty());
}

#[test]
fn a_v2_transaction_whose_completion_was_lost_completes_again_with_the_same_markers() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let node = setup(dir.path(), &clock);
    let producer = node.init("again", 60_000);
    node.produce_v2("again", producer, 0, 0).unwrap();
    node.transactions
        .end_txn(&node.groups, "again", producer, true, true);
    assert_eq!(markers(&node.log(0)), [(producer.0, 1, true)]);
    // As if the CompleteCommit had not reached the disk: the PrepareCommit is the last record.
    let topic = TxnStateTopic::new(Arc::clone(&node.manager), 3, 1 << 20);
    let prepared = TxnLogValue {
        producer_id: producer.0,
        previous_producer_id: producer.0,
        next_producer_id: -1,
        producer_epoch: 1,
        next_producer_epoch: -1,
        timeout_ms: 60_000,
        status: TxnStatus::PrepareCommit,
        partitions: Some(vec![(TOPIC.to_owned(), vec![0])]),
        last_update_ms: clock.now_ms(),
        start_ms: clock.now_ms(),
        client_transaction_version: 2,
    };
    topic
        .append("again", Some(&prepared), clock.now_ms())
        .unwrap();
    drop((topic, node));
    let node = open(dir.path(), &clock);
    // The marker is written again at the same epoch: the partition takes it as a retry.
    node.transactions.tick(&node.groups);
    assert_eq!(node.state("again").unwrap().0, TxnStatus::CompleteCommit);
    assert_eq!(
        markers(&node.log(0)),
        [(producer.0, 1, true), (producer.0, 1, true)]
    );
}
