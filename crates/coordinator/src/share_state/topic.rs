//! The internal `__share_group_state` topic: each share partition's durable state, in the
//! partition Kafka places it (`Utils.abs("<group>:<topic id>:<partition>".hashCode()) %
//! share.coordinator.state.topic.num.partitions`). Unlike the other internal topics it is not
//! compacted (`cleanup.policy=delete`, `retention.ms=-1`): records no key needs any more are
//! removed from the front by moving the log start (see `ShareStateCoordinator::prune`).

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrolog_records::consumer_offsets::coordinator_partition;
use ferrolog_records::share_state_records::{
    ShareSnapshot, ShareStateKey, ShareStateRecordType, ShareUpdate,
};
use ferrolog_storage::manager::{LogManager, TopicId};
use ferrolog_storage::{Result, TopicPartition};

use crate::runtime::{Codec, Journal, LoadEvent, Missing, loader};

pub const SHARE_STATE_TOPIC: &str = "__share_group_state";

/// One share partition: the group, the topic's id, the partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShareKey {
    pub group: String,
    pub topic_id: TopicId,
    pub partition: i32,
}

impl ShareKey {
    pub fn new(group: &str, topic_id: TopicId, partition: i32) -> Self {
        Self {
            group: group.to_owned(),
            topic_id,
            partition,
        }
    }

    /// The text Kafka hashes to place the key.
    fn placement_text(&self) -> String {
        format!("{}:{}:{}", self.group, self.topic_id, self.partition)
    }
}

/// A record's value: the whole state, what one write changed, or a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareValue {
    Snapshot(ShareSnapshot),
    Update(ShareUpdate),
    Tombstone,
}

/// A record of the topic, with the offset it was read at (`None` when written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareRecord {
    pub key: ShareKey,
    pub value: ShareValue,
    pub offset: Option<i64>,
}

#[derive(Debug)]
pub struct ShareStateTopic {
    manager: Arc<LogManager>,
    partitions: i32,
    segment_bytes: u64,
}

impl ShareStateTopic {
    /// `partitions` is `share.coordinator.state.topic.num.partitions`, `segment_bytes`
    /// `share.coordinator.state.topic.segment.bytes`. A topic that exists keeps its count.
    pub fn new(manager: Arc<LogManager>, partitions: i32, segment_bytes: u64) -> Self {
        let existing = manager
            .partitions_of(SHARE_STATE_TOPIC)
            .into_iter()
            .max()
            .map(|highest| highest + 1);
        Self {
            manager,
            partitions: existing.unwrap_or(partitions).max(1),
            segment_bytes,
        }
    }

    pub fn partitions(&self) -> i32 {
        self.partitions
    }

    pub fn partition_of(&self, key: &ShareKey) -> i32 {
        coordinator_partition(&key.placement_text(), self.partitions)
    }

    /// Creates every partition, with Kafka's settings for the topic, unless it exists.
    pub fn ensure_created(&self) -> Result<()> {
        if !self.manager.partitions_of(SHARE_STATE_TOPIC).is_empty() {
            return Ok(());
        }
        if self
            .manager
            .topic_configs()
            .overrides(SHARE_STATE_TOPIC)
            .is_empty()
        {
            let overrides = BTreeMap::from([
                ("cleanup.policy".to_owned(), "delete".to_owned()),
                ("retention.ms".to_owned(), "-1".to_owned()),
                ("segment.bytes".to_owned(), self.segment_bytes.to_string()),
                ("compression.type".to_owned(), "producer".to_owned()),
            ]);
            self.manager
                .topic_configs()
                .set(SHARE_STATE_TOPIC, overrides)?;
        }
        let all: Vec<TopicPartition> = (0..self.partitions)
            .map(|partition| TopicPartition::new(SHARE_STATE_TOPIC, partition))
            .collect();
        self.manager.create_all(&all)
    }

    /// The topic's writer; a missing partition is refused (the topic is made before a write).
    pub fn journal(&self) -> Journal {
        Journal::new(
            Arc::clone(&self.manager),
            SHARE_STATE_TOPIC,
            Missing::Refuse,
        )
    }

    /// Every record of every partition here, oldest first within a partition.
    pub fn load(&self, mut visit: impl FnMut(i32, ShareRecord)) -> Result<usize> {
        let summary =
            loader::load::<ShareStateCodec>(&self.manager, self.partitions, |partition, event| {
                if let LoadEvent::Record { record, .. } = event {
                    visit(partition, record);
                }
            })?;
        Ok(summary.records)
    }
}

/// The records of `__share_group_state` in Kafka 4.4's schemas.
#[derive(Debug)]
pub struct ShareStateCodec;

impl Codec for ShareStateCodec {
    type Record = ShareRecord;
    const TOPIC: &'static str = SHARE_STATE_TOPIC;
    const WHAT: &'static str = "share state";

    fn encode(record: &ShareRecord) -> Result<(Vec<u8>, Option<Vec<u8>>)> {
        let (kind, value) = match &record.value {
            ShareValue::Snapshot(snapshot) => {
                (ShareStateRecordType::Snapshot, Some(snapshot.encode()))
            }
            ShareValue::Update(update) => (ShareStateRecordType::Update, Some(update.encode())),
            ShareValue::Tombstone => (ShareStateRecordType::Snapshot, None),
        };
        let key = ShareStateKey {
            kind,
            group: record.key.group.clone(),
            topic_id: record.key.topic_id.0,
            partition: record.key.partition,
        };
        Ok((key.encode(), value))
    }

    fn decode(
        partition: &TopicPartition,
        offset: i64,
        key: &[u8],
        value: Option<Vec<u8>>,
    ) -> Option<ShareRecord> {
        let key = match ShareStateKey::decode(key) {
            Ok(key) => key,
            Err(error) => {
                tracing::warn!(%partition, offset, %error, "skipping a share state record whose key does not read");
                return None;
            }
        };
        let decoded = match (key.kind, value.as_deref()) {
            (_, None) => Ok(ShareValue::Tombstone),
            (ShareStateRecordType::Snapshot, Some(bytes)) => {
                ShareSnapshot::decode(bytes).map(ShareValue::Snapshot)
            }
            (ShareStateRecordType::Update, Some(bytes)) => {
                ShareUpdate::decode(bytes).map(ShareValue::Update)
            }
        };
        match decoded {
            Ok(value) => Some(ShareRecord {
                key: ShareKey::new(&key.group, TopicId(key.topic_id), key.partition),
                value,
                offset: Some(offset),
            }),
            Err(error) => {
                tracing::warn!(%partition, offset, group = key.group, %error, "skipping a share state record whose value does not read");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_placed_by_kafka_s_text_of_them() {
        // Kafka 4.4's `SharePartitionKey.asCoordinatorKey()` for a topic id of bytes 1..=16.
        let key = ShareKey::new(
            "g",
            TopicId([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]),
            7,
        );
        assert_eq!(key.placement_text(), "g:AQIDBAUGBwgJCgsMDQ4PEA:7");
        // Kafka's own `Math.abs(key.asCoordinatorKey().hashCode()) % 50`.
        assert_eq!(coordinator_partition(&key.placement_text(), 50), 3);
    }
}
