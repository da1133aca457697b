//! The transaction coordinator over a real LogManager, driven by a manual clock: markers end
//! transactions in every partition, a transaction past its timeout is fenced and aborted, one
//! found preparing at startup is completed, idle ids expire with a tombstone, offsets committed
//! in a transaction stay pending until its marker, and the state survives a restart; a
//! Produce naming two transactional producers is refused whole.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "../common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Duration;

use ferrolog_broker::group::{CommitEntry, Fetched, GroupConfig, GroupCoordinator, TxnCommitter};
use ferrolog_broker::txn::topic::{TRANSACTION_STATE_TOPIC, TxnStateTopic};
use ferrolog_broker::txn::{TransactionCoordinator, TxnConfig, VerifyFor};
use ferrolog_records::BatchBuilder;
use ferrolog_records::transaction_state::{TxnLogValue, TxnStatus};
use ferrolog_storage::log::Log;
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::producer::TxnMarker;
use ferrolog_storage::{Clock, ManualClock, ProducerEpoch, StorageError, TopicPartition};

mod v2;

const TOPIC: &str = "orders";
const INVALID_TXN_STATE: i16 = 48;
const PRODUCER_FENCED: i16 = 90;
const INVALID_PRODUCER_EPOCH: i16 = 47;

/// An id's state, epoch and partitions.
type IdState = (TxnStatus, i16, Vec<(String, i32)>);

struct Node {
    manager: Arc<LogManager>,
    groups: GroupCoordinator,
    transactions: TransactionCoordinator,
}

fn config() -> TxnConfig {
    TxnConfig {
        state_log_partitions: 3,
        abort_timed_out_interval: Duration::from_secs(1),
        remove_expired_interval: Duration::from_secs(60),
        id_expiration: Duration::from_secs(3600),
        ..TxnConfig::default()
    }
}

fn open(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Node {
    let manager = Arc::new(
        LogManager::open(
            ManagerConfig {
                log_dirs: vec![dir.to_path_buf()],
                ..ManagerConfig::default()
            },
            Arc::clone(clock) as Arc<dyn ferrolog_storage::Clock>,
        )
        .unwrap(),
    );
    let groups = GroupCoordinator::open(
        Arc::clone(&manager),
        GroupConfig {
            offsets_topic_partitions: 2,
            ..GroupConfig::default()
        },
    )
    .unwrap();
    let transactions = TransactionCoordinator::open(Arc::clone(&manager), config()).unwrap();
    Node {
        manager,
        groups,
        transactions,
    }
}

impl Node {
    fn log(&self, partition: i32) -> Arc<Log> {
        self.manager
            .get(&TopicPartition::new(TOPIC, partition))
            .unwrap()
    }

    fn init(&self, id: &str, timeout_ms: i32) -> (i64, ProducerEpoch) {
        self.transactions
            .init_producer_id(&self.groups, id, timeout_ms, None)
            .answer
            .unwrap()
    }

    /// Appends one transactional record of `producer` to `partition`, verified as Produce
    /// verifies it.
    fn produce(
        &self,
        id: &str,
        (producer_id, epoch): (i64, ProducerEpoch),
        partition: i32,
        sequence: i32,
        value: &str,
    ) -> Result<(), StorageError> {
        let mut builder = BatchBuilder::new(0)
            .producer(producer_id, epoch.value(), sequence)
            .transactional(true);
        builder
            .append(1_700_000_000_000, None, Some(value.as_bytes()), &[])
            .unwrap();
        let verifier = self.transactions.verifier(
            id,
            (TOPIC.to_owned(), partition),
            VerifyFor::Produce { version: 9 },
        );
        self.log(partition)
            .append_as_leader_verified(builder.build().unwrap(), &verifier)
            .map(|_| ())
    }

    fn state(&self, id: &str) -> Option<IdState> {
        self.transactions
            .describe(id)
            .map(|d| (d.state, d.producer_epoch.value(), d.partitions))
    }
}

/// The markers in `log`, as (producer id, epoch, COMMIT?).
fn markers(log: &Log) -> Vec<(i64, i16, bool)> {
    let mut found = Vec::new();
    let mut next = log.log_start_offset();
    // A read returns one segment's batches: read on until the log end.
    while next < log.log_end_offset() {
        let bytes = log
            .read(ferrolog_storage::log::FetchParams {
                start_offset: next,
                max_bytes: 1 << 20,
                bound: ferrolog_storage::log::FetchBound::LogEnd,
                first_batch: ferrolog_storage::log::FirstBatch::Whole,
            })
            .unwrap()
            .read_bytes()
            .unwrap();
        for entry in ferrolog_records::EntryIter::new(&bytes) {
            let ferrolog_records::FileEntry::V2(batch) = entry.unwrap().1 else {
                continue;
            };
            next = ferrolog_storage::Offset::new(batch.last_offset() + 1);
            if let Some(marker) = TxnMarker::of(&batch).unwrap() {
                found.push((
                    marker.producer_id,
                    marker.epoch.value(),
                    marker.kind == ferrolog_storage::producer::MarkerKind::Commit,
                ));
            }
        }
    }
    found
}

fn setup(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Node {
    let node = open(dir, clock);
    node.transactions.find_coordinator().unwrap();
    node.groups.find_coordinator().unwrap();
    node.manager
        .create_all(&[0, 1, 2].map(|partition| TopicPartition::new(TOPIC, partition)))
        .unwrap();
    node
}

#[test]
fn a_transaction_ends_with_a_marker_in_each_partition_and_its_state_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let node = setup(dir.path(), &clock);
    let producer = node.init("t", 60_000);
    assert_eq!(producer.1.value(), 0);
    // A partition not added to the transaction is refused, before anything is written.
    let refused = node.produce("t", producer, 0, 0, "early").unwrap_err();
    assert_eq!(
        ferrolog_broker::errors::code_of(&refused),
        INVALID_TXN_STATE
    );
    let partitions = [(TOPIC.to_owned(), 0), (TOPIC.to_owned(), 1)];
    assert_eq!(
        node.transactions
            .add_partitions("t", producer.0, producer.1, &partitions, 0),
        0
    );
    node.produce("t", producer, 0, 0, "a").unwrap();
    node.produce("t", producer, 1, 0, "b").unwrap();
    // Partition 2 was not added.
    let refused = node.produce("t", producer, 2, 0, "c").unwrap_err();
    assert_eq!(
        ferrolog_broker::errors::code_of(&refused),
        INVALID_TXN_STATE
    );
    assert_eq!(node.log(0).view().last_stable_offset().value(), 0);

    let ended = node
        .transactions
        .end_txn(&node.groups, "t", producer, true, false);
    assert_eq!(ended.answer.code, 0);
    assert_eq!(ended.marked.len(), 2);
    for partition in [0, 1] {
        let log = node.log(partition);
        assert_eq!(markers(&log), [(producer.0, 0, true)]);
        assert_eq!(log.view().last_stable_offset(), log.high_watermark());
    }
    assert_eq!(
        node.state("t"),
        Some((TxnStatus::CompleteCommit, 0, Vec::new()))
    );
    // A retry of the same EndTxn is answered NONE, and writes nothing.
    assert_eq!(
        node.transactions
            .end_txn(&node.groups, "t", producer, true, false)
            .answer
            .code,
        0
    );
    assert_eq!(markers(&node.log(0)).len(), 1);
    drop(node);

    let node = open(dir.path(), &clock);
    assert_eq!(
        node.state("t"),
        Some((TxnStatus::CompleteCommit, 0, Vec::new()))
    );
    // The next producer with the id fences the old one.
    let successor = node.init("t", 60_000);
    assert_eq!(successor, (producer.0, ProducerEpoch::new(1)));
    assert_eq!(
        node.transactions
            .add_partitions("t", producer.0, producer.1, &partitions, 0),
        PRODUCER_FENCED
    );
}

#[test]
fn a_transaction_past_its_timeout_is_fenced_and_aborted_by_the_timer() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let node = setup(dir.path(), &clock);
    let producer = node.init("slow", 5_000);
    node.transactions
        .add_partitions("slow", producer.0, producer.1, &[(TOPIC.to_owned(), 0)], 0);
    node.produce("slow", producer, 0, 0, "late").unwrap();
    clock.advance_ms(5_000);
    assert!(node.transactions.tick(&node.groups).is_empty());
    assert_eq!(node.state("slow").unwrap().0, TxnStatus::Ongoing);
    clock.advance_ms(1_001);
    let marked = node.transactions.tick(&node.groups);
    assert_eq!(marked, [TopicPartition::new(TOPIC, 0)]);
    assert_eq!(node.state("slow").unwrap().0, TxnStatus::CompleteAbort);
    assert_eq!(node.state("slow").unwrap().1, 1, "fenced at the next epoch");
    let log = node.log(0);
    assert_eq!(markers(&log), [(producer.0, 1, false)]);
    assert_eq!(log.view().last_stable_offset(), log.high_watermark());
    // The fenced producer can neither write nor commit.
    let refused = node.produce("slow", producer, 0, 1, "zombie").unwrap_err();
    assert_eq!(
        ferrolog_broker::errors::code_of(&refused),
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(
        node.transactions
            .end_txn(&node.groups, "slow", producer, true, false)
            .answer
            .code,
        PRODUCER_FENCED
    );
}

#[test]
fn a_transaction_found_preparing_at_startup_is_completed() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let node = setup(dir.path(), &clock);
    let producer = node.init("crashed", 60_000);
    node.transactions.add_partitions(
        "crashed",
        producer.0,
        producer.1,
        &[(TOPIC.to_owned(), 2)],
        0,
    );
    node.produce("crashed", producer, 2, 0, "x").unwrap();
    // What a crash right after the PrepareCommit record leaves: the record, no marker.
    let topic = TxnStateTopic::new(Arc::clone(&node.manager), 3, 1 << 20);
    let prepared = TxnLogValue {
        producer_id: producer.0,
        previous_producer_id: producer.0,
        next_producer_id: -1,
        producer_epoch: producer.1.value(),
        next_producer_epoch: -1,
        timeout_ms: 60_000,
        status: TxnStatus::PrepareCommit,
        partitions: Some(vec![(TOPIC.to_owned(), vec![2])]),
        last_update_ms: clock.now_ms(),
        start_ms: clock.now_ms(),
        client_transaction_version: 0,
    };
    topic
        .append("crashed", Some(&prepared), clock.now_ms())
        .unwrap();
    drop((topic, node));

    let node = open(dir.path(), &clock);
    assert_eq!(node.state("crashed").unwrap().0, TxnStatus::PrepareCommit);
    assert_eq!(node.log(2).view().last_stable_offset().value(), 0);
    let marked = node.transactions.tick(&node.groups);
    assert_eq!(marked, [TopicPartition::new(TOPIC, 2)]);
    assert_eq!(node.state("crashed").unwrap().0, TxnStatus::CompleteCommit);
    let log = node.log(2);
    assert_eq!(markers(&log), [(producer.0, producer.1.value(), true)]);
    assert_eq!(log.view().last_stable_offset(), log.high_watermark());
}

#[test]
fn idle_ids_expire_with_a_tombstone() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let node = setup(dir.path(), &clock);
    node.init("idle", 60_000);
    let busy = node.init("busy", 60_000);
    node.transactions
        .add_partitions("busy", busy.0, busy.1, &[(TOPIC.to_owned(), 0)], 0);
    clock.advance(Duration::from_secs(3601));
    // The ongoing one times out and is aborted; the idle one is forgotten at the next check.
    node.transactions.tick(&node.groups);
    clock.advance(Duration::from_secs(60));
    node.transactions.tick(&node.groups);
    assert_eq!(node.state("idle"), None);
    assert_eq!(node.state("busy").unwrap().0, TxnStatus::CompleteAbort);
    drop(node);
    let node = open(dir.path(), &clock);
    assert_eq!(node.state("idle"), None, "the tombstone is read back");
    assert!(node.state("busy").is_some());
}

#[test]
fn offsets_committed_in_a_transaction_are_pending_until_its_marker() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let node = setup(dir.path(), &clock);
    let offsets_partition = (
        "__consumer_offsets".to_owned(),
        node.groups.partition_of("g"),
    );
    let commit = |node: &Node, producer: (i64, ProducerEpoch), offset: i64| {
        let verifier = node.transactions.verifier(
            "worker",
            offsets_partition.clone(),
            VerifyFor::TxnOffsetCommit { version: 3 },
        );
        node.groups.commit_transactional(
            "g",
            producer,
            TxnCommitter {
                generation: -1,
                member_id: "",
                group_instance_id: None,
            },
            &[CommitEntry {
                topic: TOPIC.to_owned(),
                partition: 0,
                offset,
                leader_epoch: -1,
                metadata: String::new(),
            }],
            &verifier,
        )
    };
    let fetched = |node: &Node| {
        node.groups
            .fetch_offsets_stable("g", Some(&[(TOPIC.to_owned(), vec![0])]), true)
            .remove(0)
            .2
    };
    let producer = node.init("worker", 60_000);
    // Without AddOffsetsToTxn, the group's partition is not in the transaction.
    assert_eq!(commit(&node, producer, 5), [INVALID_TXN_STATE]);
    node.transactions.add_partitions(
        "worker",
        producer.0,
        producer.1,
        std::slice::from_ref(&offsets_partition),
        0,
    );
    assert_eq!(commit(&node, producer, 5), [0]);
    assert_eq!(fetched(&node), Fetched::Unstable);
    node.transactions
        .end_txn(&node.groups, "worker", producer, true, false);
    let Fetched::Committed(Some(value)) = fetched(&node) else {
        panic!("{:?}", fetched(&node))
    };
    assert_eq!(value.offset, 5);

    // An aborted transaction's offset never shows.
    node.transactions.add_partitions(
        "worker",
        producer.0,
        producer.1,
        std::slice::from_ref(&offsets_partition),
        0,
    );
    assert_eq!(commit(&node, producer, 9), [0]);
    drop(node);
    // Pending across a restart, then aborted.
    let node = open(dir.path(), &clock);
    assert_eq!(fetched(&node), Fetched::Unstable);
    node.transactions
        .end_txn(&node.groups, "worker", producer, false, false);
    let Fetched::Committed(Some(value)) = fetched(&node) else {
        panic!("{:?}", fetched(&node))
    };
    assert_eq!(value.offset, 5);
    drop(node);
    let node = open(dir.path(), &clock);
    let Fetched::Committed(Some(value)) = fetched(&node) else {
        panic!("{:?}", fetched(&node))
    };
    assert_eq!(value.offset, 5, "the abort is replayed too");
}

#[test]
fn no_transaction_can_include_the_transaction_state_topic() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let node = setup(dir.path(), &clock);
    let producer = node.init("t", 60_000);
    let mut builder = BatchBuilder::new(0)
        .producer(producer.0, producer.1.value(), 0)
        .transactional(true);
    // A key, as the compacted topic requires: what is refused is the transaction.
    builder.append(1, Some(b"k"), Some(b"x"), &[]).unwrap();
    let log = node
        .manager
        .get(&TopicPartition::new(TRANSACTION_STATE_TOPIC, 0))
        .unwrap();
    let verifier = node.transactions.verifier(
        "t",
        (TRANSACTION_STATE_TOPIC.to_owned(), 0),
        VerifyFor::Produce { version: 9 },
    );
    let refused = log
        .append_as_leader_verified(builder.build().unwrap(), &verifier)
        .unwrap_err();
    assert_eq!(
        ferrolog_broker::errors::code_of(&refused),
        INVALID_TXN_STATE
    );
}

/// A transactional batch of one record.
fn transactional_batch(producer_id: i64, epoch: i16) -> bytes::Bytes {
    let mut builder = BatchBuilder::new(0)
        .producer(producer_id, epoch, 0)
        .transactional(true);
    builder.append(1, None, Some(b"v"), &[]).unwrap();
    bytes::Bytes::from(builder.build().unwrap())
}

#[tokio::test]
async fn a_produce_with_transactional_batches_of_two_producers_is_refused_whole() {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse, TopicName};
    use kafka_protocol::protocol::StrBytes;

    let dir = tempfile::tempdir().unwrap();
    let broker = common::Broker::start(dir.path()).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic(TOPIC, 2, &[]).await.error_code, 0);
    let request = ProduceRequest::default()
        .with_transactional_id(Some(kafka_protocol::messages::TransactionalId(
            StrBytes::from_static_str("t"),
        )))
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(transactional_batch(7, 0))),
                    PartitionProduceData::default()
                        .with_index(1)
                        .with_records(Some(transactional_batch(8, 0))),
                ]),
        ]);
    let response: ProduceResponse = client.send(ApiKey::Produce, 9, &request).await;
    let codes: Vec<i16> = response.responses[0]
        .partition_responses
        .iter()
        .map(|partition| partition.error_code)
        .collect();
    assert_eq!(codes, [49, 49], "INVALID_PRODUCER_ID_MAPPING");
    for partition in [0, 1] {
        let log = broker
            .context
            .manager
            .get(&TopicPartition::new(TOPIC, partition))
            .unwrap();
        assert_eq!(log.log_end_offset().value(), 0, "nothing written");
    }
}

impl Node {
    /// Appends one transactional record as a transactions-v2 producer does (Produce v12: the
    /// write adds its partition to the transaction).
    fn produce_v2(
        &self,
        id: &str,
        (producer_id, epoch): (i64, ProducerEpoch),
        partition: i32,
        sequence: i32,
    ) -> Result<(), StorageError> {
        let mut builder = BatchBuilder::new(0)
            .producer(producer_id, epoch.value(), sequence)
            .transactional(true);
        builder.append(1, None, Some(b"v2"), &[]).unwrap();
        let verifier = self.transactions.verifier(
            id,
            (TOPIC.to_owned(), partition),
            VerifyFor::Produce { version: 12 },
        );
        self.log(partition)
            .append_as_leader_verified(builder.build().unwrap(), &verifier)
            .map(|_| ())
    }
}
