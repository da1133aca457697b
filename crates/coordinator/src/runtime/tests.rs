//! The runtime over a toy coordinator: named counters in an internal topic of two partitions.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::producer::{MarkerKind, TxnVerifier};
use ferrolog_storage::{
    CoordinatorEpoch, ManualClock, ProducerEpoch, StorageError, TopicPartition,
};

use super::*;

const TOPIC: &str = "__toy_counters";
const PARTITIONS: i32 = 2;

/// A counter's name and value; `None` forgets it.
type Counter = (String, Option<Vec<u8>>);

struct Toy;

impl Codec for Toy {
    type Record = Counter;
    const TOPIC: &'static str = TOPIC;
    const WHAT: &'static str = "counter";

    fn encode(
        (name, value): &Counter,
    ) -> std::result::Result<(Vec<u8>, Option<Vec<u8>>), StorageError> {
        Ok((name.as_bytes().to_vec(), value.clone()))
    }

    fn decode(_: &TopicPartition, _: i64, key: &[u8], value: Option<Vec<u8>>) -> Option<Counter> {
        Some((String::from_utf8(key.to_vec()).ok()?, value))
    }
}

#[derive(Debug, Default, PartialEq)]
struct Counters {
    values: HashMap<String, Vec<u8>>,
    /// Records of open transactions, by producer.
    pending: HashMap<i64, Vec<Counter>>,
}

impl Counters {
    fn apply(&mut self, (name, value): Counter) {
        match value {
            Some(value) => self.values.insert(name, value),
            None => self.values.remove(&name),
        };
    }
}

impl Shard for Counters {
    type Codec = Toy;

    fn replay(&mut self, event: LoadEvent<Counter>, _now_ms: i64) {
        match event {
            LoadEvent::Record {
                record,
                producer_id: None,
            } => self.apply(record),
            LoadEvent::Record {
                record,
                producer_id: Some(producer),
            } => self.pending.entry(producer).or_default().push(record),
            LoadEvent::Marker {
                producer_id,
                commit,
            } => {
                for record in self.pending.remove(&producer_id).unwrap_or_default() {
                    if commit {
                        self.apply(record);
                    }
                }
            }
        }
    }
}

/// A verifier for which every producer's transaction includes the partition.
struct InTransaction;

impl TxnVerifier for InTransaction {
    fn verify(&self, _: i64, _: ProducerEpoch) -> ferrolog_storage::Result<()> {
        Ok(())
    }
}

fn manager(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Arc<LogManager> {
    let config = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        ..ManagerConfig::default()
    };
    Arc::new(
        LogManager::open(
            config,
            Arc::clone(clock) as Arc<dyn ferrolog_storage::Clock>,
        )
        .unwrap(),
    )
}

/// The toy coordinator over `manager`, rebuilt from its topic.
fn open(manager: &Arc<LogManager>, missing: Missing) -> Runtime<Counters> {
    let mut shards: Vec<Counters> = (0..PARTITIONS).map(|_| Counters::default()).collect();
    let now = manager.clock().now_ms();
    loader::load::<Toy>(manager, PARTITIONS, |partition, event| {
        shards[partition as usize].replay(event, now)
    })
    .unwrap();
    let journal = Journal::new(Arc::clone(manager), TOPIC, missing);
    Runtime::new(
        shards,
        BTreeSet::new(),
        journal,
        Arc::clone(manager.clock()),
    )
}

fn set(
    runtime: &Runtime<Counters>,
    partition: i32,
    name: &str,
    value: &str,
) -> Result<(), StorageError> {
    runtime.write(partition, |shard, ctx| {
        let record = (name.to_owned(), Some(value.as_bytes().to_vec()));
        ctx.append(std::slice::from_ref(&record))?;
        shard.apply(record);
        Ok(())
    })
}

fn value(runtime: &Runtime<Counters>, partition: i32, name: &str) -> Option<String> {
    runtime.read(partition, |shard| {
        shard
            .values
            .get(name)
            .map(|value| String::from_utf8(value.clone()).unwrap())
    })
}

#[test]
fn a_write_applied_after_its_append_is_what_a_reload_replays() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000));
    let manager = manager(dir.path(), &clock);
    let runtime = open(&manager, Missing::Create);
    set(&runtime, 0, "a", "1").unwrap();
    set(&runtime, 1, "b", "2").unwrap();
    set(&runtime, 0, "a", "3").unwrap();
    runtime.write(1, |shard, ctx| {
        let gone = ("b".to_owned(), None);
        ctx.append(std::slice::from_ref(&gone)).unwrap();
        shard.apply(gone);
    });
    let live = runtime.read_each(|shard| shard.values.clone());

    let reloaded = open(&manager, Missing::Create);
    assert_eq!(reloaded.read_each(|shard| shard.values.clone()), live);
    assert_eq!(value(&reloaded, 0, "a").as_deref(), Some("3"));
    assert_eq!(value(&reloaded, 1, "b"), None);
}

#[test]
fn a_refused_partition_is_not_made_and_nothing_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000));
    let manager = manager(dir.path(), &clock);
    let runtime = open(&manager, Missing::Refuse);
    let refused = set(&runtime, 1, "a", "1");
    assert!(
        matches!(refused, Err(StorageError::UnknownTopicOrPartition { .. })),
        "{refused:?}"
    );
    assert!(manager.get(&TopicPartition::new(TOPIC, 1)).is_none());
    assert_eq!(value(&runtime, 1, "a"), None);

    let creating = open(&manager, Missing::Create);
    set(&creating, 1, "a", "1").unwrap();
    assert!(manager.get(&TopicPartition::new(TOPIC, 1)).is_some());
}

#[test]
fn transactional_records_wait_for_their_marker_on_reload() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000));
    let manager = manager(dir.path(), &clock);
    let runtime = open(&manager, Missing::Create);
    let producer = manager.next_producer_id().unwrap();
    // A marker on a partition that does not exist writes nothing and makes nothing.
    let marker = |kind| ferrolog_storage::log::MarkerRequest {
        producer_id: producer,
        epoch: ProducerEpoch::new(0),
        coordinator_epoch: CoordinatorEpoch::new(0),
        kind,
    };
    assert!(!runtime.write(1, |_, ctx| {
        ctx.append_marker(marker(MarkerKind::Commit), false)
            .unwrap()
    }));
    runtime.write(0, |_, ctx| {
        let records = [("kept".to_owned(), Some(b"1".to_vec()))];
        ctx.append_transactional(&records, (producer, ProducerEpoch::new(0)), &InTransaction)
            .unwrap();
    });
    assert_eq!(value(&open(&manager, Missing::Create), 0, "kept"), None);
    assert!(runtime.write(0, |_, ctx| {
        ctx.append_marker(marker(MarkerKind::Commit), false)
            .unwrap()
    }));
    assert_eq!(
        value(&open(&manager, Missing::Create), 0, "kept").as_deref(),
        Some("1")
    );
}

#[test]
fn each_shard_is_visited_in_partition_order_at_one_instant() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_000));
    let manager = manager(dir.path(), &clock);
    let runtime = open(&manager, Missing::Create);
    let mut visited = Vec::new();
    runtime.write_each(42, |_, ctx| visited.push((ctx.partition, ctx.now_ms)));
    assert_eq!(visited, [(0, 42), (1, 42)]);
    clock.advance(Duration::from_millis(5));
    assert_eq!(runtime.write(1, |_, ctx| ctx.now_ms), 1_005);
}

#[test]
fn a_periodic_check_is_due_once_per_interval_from_the_last() {
    let mut check = Periodic::new(1_000, Duration::from_millis(100));
    assert!(!check.due(1_099));
    assert!(check.due(1_100));
    assert!(!check.due(1_150));
    // Late: the next one counts from when it ran.
    assert!(check.due(1_450));
    assert!(!check.due(1_549));
    assert!(check.due(1_550));
}
