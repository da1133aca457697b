//! Share groups' durable state into Kafka. Each share partition's state is kept in
//! `__share_group_state` under its key `group:topic id:partition`, in the partition that key's
//! text hashes to; Kafka's topics have ids of their own, so ferrolog's records of that topic
//! cannot be copied as they are (every key would name an id Kafka never knew, in a partition
//! Kafka never looks in). Instead each of Kafka's (empty) `__share_group_state` partitions
//! gets one `ShareSnapshot` per share partition it places there under Kafka's ids: what
//! Kafka's share coordinator writes itself after an initialization or a run of updates.
//!
//! Each snapshot keeps ferrolog's state: the start offset, the acknowledged, released and
//! archived ranges with their delivery counts, the state epoch (at most the group's epoch,
//! which the move keeps, so Kafka's later initializations are not fenced) and the
//! delivery-complete count. Its leader epoch is 0: Kafka's share coordinator fences a reader
//! whose leader epoch is below the stored one, and a moved topic's leader epoch starts again
//! in Kafka; the first read stores Kafka's. Records acquired and not acknowledged were never
//! stored (by Kafka either) and are delivered again, with their delivery counts.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use ferrolog_coordinator::share_state::{PartitionState, ShareStateConfig, ShareStateCoordinator};
use ferrolog_records::consumer_group_records::TopicIdBytes;
use ferrolog_records::consumer_offsets::coordinator_partition;
use ferrolog_records::share_state_records::{ShareStateKey, ShareStateRecordType};
use ferrolog_storage::manager::{LogManager, TopicId};

pub use ferrolog_coordinator::share_state::SHARE_STATE_TOPIC;

use super::segment::KeyValue;

/// Kafka's leader-epoch checkpoint of a partition.
const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";

/// One share partition's state, by names.
#[derive(Debug, Clone)]
struct SharePartition {
    group: String,
    topic: String,
    partition: i32,
    state: PartitionState,
}

/// The state of every share partition ferrolog holds.
#[derive(Debug, Default)]
pub struct ShareStates {
    /// ferrolog's `__share_group_state` partition count.
    pub partitions: i32,
    states: Vec<SharePartition>,
    /// Share partitions of topics ferrolog no longer holds, left behind.
    pub of_deleted_topics: usize,
}

/// The records one Kafka `__share_group_state` partition gets, and the time they carry (the
/// latest write among them, so every run and every replica writes the same bytes).
#[derive(Debug, Default, PartialEq)]
pub struct PartitionSnapshots {
    pub records: Vec<KeyValue>,
    pub timestamp: i64,
}

impl ShareStates {
    /// The share partitions' state in ferrolog's directories, read without writing anything;
    /// `None` when there is no `__share_group_state`.
    pub fn read(manager: &Arc<LogManager>) -> anyhow::Result<Option<Self>> {
        if manager.partitions_of(SHARE_STATE_TOPIC).is_empty() {
            return Ok(None);
        }
        let coordinator =
            ShareStateCoordinator::open(Arc::clone(manager), ShareStateConfig::default())
                .context("reading ferrolog's __share_group_state")?;
        let mut found = ShareStates {
            partitions: coordinator.partitions(),
            ..ShareStates::default()
        };
        for (key, state) in coordinator.states() {
            let Some(topic) = manager.topic_with_id(key.topic_id) else {
                found.of_deleted_topics += 1;
                continue;
            };
            found.states.push(SharePartition {
                group: key.group,
                topic,
                partition: key.partition,
                state,
            });
        }
        Ok(Some(found))
    }

    /// The topics the share partitions belong to.
    pub fn topic_names(&self) -> impl Iterator<Item = &String> {
        self.states.iter().map(|share| &share.topic)
    }

    /// The snapshots of each of Kafka's `kafka_partitions` partitions of the topic, keyed
    /// and placed by Kafka's topic ids (`kafka_ids`, by name). Topics without a Kafka id here
    /// are refused, by name: their state would be lost, and their records delivered again.
    pub fn snapshots(
        &self,
        kafka_ids: &BTreeMap<String, (TopicIdBytes, i32)>,
        kafka_partitions: i32,
    ) -> anyhow::Result<BTreeMap<i32, PartitionSnapshots>> {
        let mut unmapped: Vec<&str> = Vec::new();
        let mut placed: BTreeMap<i32, PartitionSnapshots> = BTreeMap::new();
        for share in &self.states {
            let Some((kafka_id, _)) = kafka_ids.get(&share.topic) else {
                unmapped.push(&share.topic);
                continue;
            };
            let text = format!("{}:{}:{}", share.group, TopicId(*kafka_id), share.partition);
            let key = ShareStateKey {
                kind: ShareStateRecordType::Snapshot,
                group: share.group.clone(),
                topic_id: *kafka_id,
                partition: share.partition,
            };
            let mut snapshot = share.state.to_snapshot();
            snapshot.leader_epoch = 0;
            let target = placed
                .entry(coordinator_partition(&text, kafka_partitions))
                .or_default();
            target.timestamp = target.timestamp.max(snapshot.write_timestamp);
            target.records.push((key.encode(), snapshot.encode()));
        }
        unmapped.sort_unstable();
        unmapped.dedup();
        if !unmapped.is_empty() {
            bail!(
                "share groups hold state for topics this Kafka broker holds no partition of, so their ids in Kafka are not known here: {}; run `copy` with directories holding them",
                unmapped.join(", ")
            );
        }
        Ok(placed)
    }
}

/// The latest leader epoch in Kafka's leader-epoch checkpoint of `partition_dir` (0 when it
/// names none): the batches written there carry it, never a higher one, which Kafka would
/// take for a leader it never had.
pub fn last_leader_epoch(partition_dir: &Path) -> anyhow::Result<i32> {
    let path = partition_dir.join(LEADER_EPOCH_CHECKPOINT);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(error).with_context(|| format!("reading {}", path.display())),
    };
    let mut lines = text.lines();
    let version = lines.next();
    if version.is_none_or(|line| line.trim().is_empty()) {
        return Ok(0);
    }
    let malformed = |what: &str| anyhow::anyhow!("{}: {what}", path.display());
    if version != Some("0") {
        return Err(malformed("not version 0"));
    }
    let count: usize = lines
        .next()
        .and_then(|line| line.trim().parse().ok())
        .ok_or_else(|| malformed("line 2 is not an entry count"))?;
    let mut last = 0;
    for (index, line) in lines.take(count).enumerate() {
        last = line
            .split_whitespace()
            .next()
            .and_then(|epoch| epoch.parse().ok())
            .ok_or_else(|| malformed(&format!("line {} is not `epoch offset`", index + 3)))?;
    }
    Ok(last)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use ferrolog_records::share_state_records::{ShareSnapshot, StateBatch};

    fn share(group: &str, topic: &str, partition: i32, written: i64) -> SharePartition {
        SharePartition {
            group: group.into(),
            topic: topic.into(),
            partition,
            state: PartitionState {
                snapshot_epoch: 4,
                state_epoch: 2,
                leader_epoch: 9,
                start_offset: 100,
                delivery_complete_count: 3,
                create_timestamp: 10,
                write_timestamp: written,
                batches: vec![StateBatch {
                    first_offset: 100,
                    last_offset: 104,
                    delivery_state: 2,
                    delivery_count: 1,
                }],
            },
        }
    }

    #[test]
    fn each_share_partition_becomes_a_snapshot_under_kafkas_id_where_kafka_places_it() {
        let states = ShareStates {
            partitions: 50,
            states: vec![
                share("queue", "orders", 0, 500),
                share("queue", "orders", 1, 700),
            ],
            of_deleted_topics: 0,
        };
        let kafka_id = [5u8; 16];
        let kafka = BTreeMap::from([("orders".to_owned(), (kafka_id, 2))]);
        let placed = states.snapshots(&kafka, 50).unwrap();
        let mut seen = Vec::new();
        for (partition, snapshots) in &placed {
            for (key, value) in &snapshots.records {
                let key = ShareStateKey::decode(key).unwrap();
                assert_eq!(key.kind, ShareStateRecordType::Snapshot);
                assert_eq!(key.topic_id, kafka_id);
                let text = format!("queue:{}:{}", TopicId(kafka_id), key.partition);
                assert_eq!(coordinator_partition(&text, 50), *partition);
                let value = ShareSnapshot::decode(value).unwrap();
                let expected = ShareSnapshot {
                    leader_epoch: 0,
                    write_timestamp: if key.partition == 0 { 500 } else { 700 },
                    ..share("queue", "orders", 0, 0).state.to_snapshot()
                };
                assert_eq!(value, expected);
                assert!(snapshots.timestamp >= value.write_timestamp);
                seen.push(key.partition);
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, vec![0, 1]);

        let error = states.snapshots(&BTreeMap::new(), 50).unwrap_err();
        assert!(error.to_string().contains("orders"), "{error}");
    }

    #[test]
    fn the_last_leader_epoch_comes_from_kafkas_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(last_leader_epoch(dir.path()).unwrap(), 0);
        let path = dir.path().join(LEADER_EPOCH_CHECKPOINT);
        std::fs::write(&path, "").unwrap();
        assert_eq!(last_leader_epoch(dir.path()).unwrap(), 0);
        std::fs::write(&path, "0\n2\n0 0\n3 17\n").unwrap();
        assert_eq!(last_leader_epoch(dir.path()).unwrap(), 3);
        std::fs::write(&path, "0\n2\n0 0\nthree 17\n").unwrap();
        let error = last_leader_epoch(dir.path()).unwrap_err().to_string();
        assert!(error.contains("line 4"), "{error}");
    }
}
