//! The internal `__consumer_offsets` topic: where group metadata and committed offsets are kept,
//! one partition per group (by [`partition_for_group`]), compacted so only the latest record
//! per key (and tombstones, for a while) survives.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use ferrolog_records::consumer_offsets::{
    OffsetsKey, is_other_group_record_type, partition_for_group, record_type,
};
use ferrolog_storage::manager::LogManager;
use ferrolog_storage::{Result, TopicPartition};

use crate::runtime::{Codec, Journal, LoadEvent, Missing, loader};

pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// A record of the offsets topic: its key, and its value or `None` for a tombstone.
pub type OffsetsRecord = (OffsetsKey, Option<Vec<u8>>);

/// What loading the offsets topic meets, in log order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OffsetsEvent {
    /// A record; `producer_id` is the transactional producer that wrote it (a TxnOffsetCommit,
    /// pending until its transaction's marker), `None` for a plain one.
    Record {
        record: OffsetsRecord,
        producer_id: Option<i64>,
    },
    /// A transaction marker in `partition`: the producer's pending offsets there are committed
    /// or dropped.
    Marker {
        partition: i32,
        producer_id: i64,
        commit: bool,
    },
}

#[derive(Debug)]
pub struct OffsetsTopic {
    manager: Arc<LogManager>,
    partitions: i32,
    segment_bytes: u64,
}

impl OffsetsTopic {
    /// `partitions` is `offsets.topic.num.partitions`, `segment_bytes` is
    /// `offsets.topic.segment.bytes`.
    pub fn new(manager: Arc<LogManager>, partitions: i32, segment_bytes: u64) -> Self {
        Self {
            manager,
            partitions: partitions.max(1),
            segment_bytes,
        }
    }

    pub fn manager(&self) -> &LogManager {
        &self.manager
    }

    pub fn partitions(&self) -> i32 {
        self.partitions
    }

    pub fn partition_of(&self, group: &str) -> i32 {
        partition_for_group(group, self.partitions)
    }

    /// Creates every partition (as Kafka does on the first FindCoordinator) with the internal
    /// topic's settings: compacted, `offsets.topic.segment.bytes` segments. Settings an operator
    /// has already given the topic are kept.
    pub fn ensure_created(&self) -> Result<()> {
        if self
            .manager
            .topic_configs()
            .overrides(OFFSETS_TOPIC)
            .is_empty()
        {
            let overrides = BTreeMap::from([
                ("cleanup.policy".to_owned(), "compact".to_owned()),
                ("segment.bytes".to_owned(), self.segment_bytes.to_string()),
            ]);
            self.manager.topic_configs().set(OFFSETS_TOPIC, overrides)?;
        }
        let all: Vec<TopicPartition> = (0..self.partitions)
            .map(|partition| TopicPartition::new(OFFSETS_TOPIC, partition))
            .collect();
        self.manager.create_all(&all)
    }

    /// The topic's writer: a write to a partition that does not exist creates it.
    pub fn journal(&self) -> Journal {
        Journal::new(Arc::clone(&self.manager), OFFSETS_TOPIC, Missing::Create)
    }

    /// Every record of every partition that exists, oldest first within a partition. Records
    /// that do not decode are skipped with a warning naming the partition and offset. Damaged
    /// data is reported at ERROR with its file and position and stepped over: a batch failing
    /// its checksum alone, a damaged frame with the rest of its segment (whose batches cannot be
    /// found past it); loading goes on with what follows, so one damaged place costs the groups
    /// only the commits written there.
    ///
    /// Before ferrolog placed groups as Kafka does, a group whose id hashes negative went to
    /// another partition. Records found outside their group's partition are read too, after the
    /// others, and only where the group's own partition holds nothing newer for the same key:
    /// they are older than anything written there since.
    pub fn load(&self, mut visit: impl FnMut(OffsetsEvent)) -> Result<usize> {
        let mut placed_keys: HashSet<OffsetsKey> = HashSet::new();
        let mut misplaced: Vec<OffsetsRecord> = Vec::new();
        let loaded = self.load_partitions(|partition, event| match event {
            OffsetsEvent::Record {
                record,
                producer_id: None,
            } if self.partition_of(record.0.group()) != partition => misplaced.push(record),
            OffsetsEvent::Record {
                record,
                producer_id,
            } => {
                placed_keys.insert(record.0.clone());
                visit(OffsetsEvent::Record {
                    record,
                    producer_id,
                });
            }
            marker @ OffsetsEvent::Marker { .. } => visit(marker),
        })?;
        let older: Vec<OffsetsRecord> = misplaced
            .into_iter()
            .filter(|(key, _)| !placed_keys.contains(key))
            .collect();
        if !older.is_empty() {
            tracing::info!(
                records = older.len(),
                "read group records found outside the offsets-topic partition their group belongs to (written by an older ferrolog); each group's next commit goes to its own partition"
            );
        }
        for record in older {
            visit(OffsetsEvent::Record {
                record,
                producer_id: None,
            });
        }
        Ok(loaded)
    }

    /// Every record and marker of every partition that exists, with the partition it is in
    /// (see [`OffsetsTopic::load`]).
    fn load_partitions(&self, mut visit: impl FnMut(i32, OffsetsEvent)) -> Result<usize> {
        let summary =
            loader::load::<OffsetsCodec>(&self.manager, self.partitions, |partition, event| {
                visit(
                    partition,
                    match event {
                        LoadEvent::Record {
                            record,
                            producer_id,
                        } => OffsetsEvent::Record {
                            record,
                            producer_id,
                        },
                        LoadEvent::Marker {
                            producer_id,
                            commit,
                        } => OffsetsEvent::Marker {
                            partition,
                            producer_id,
                            commit,
                        },
                    },
                )
            })?;
        Ok(summary.records)
    }
}

/// The records of `__consumer_offsets` a classic group coordinator keeps: offsets and group
/// metadata (the other group record types, of Kafka 4's newer group protocols, are passed
/// over).
#[derive(Debug)]
pub struct OffsetsCodec;

impl Codec for OffsetsCodec {
    type Record = OffsetsRecord;
    const TOPIC: &'static str = OFFSETS_TOPIC;
    const WHAT: &'static str = "group";

    fn encode((key, value): &OffsetsRecord) -> Result<(Vec<u8>, Option<Vec<u8>>)> {
        Ok((key.encode(), value.clone()))
    }

    fn decode(
        partition: &TopicPartition,
        offset: i64,
        key: &[u8],
        value: Option<Vec<u8>>,
    ) -> Option<OffsetsRecord> {
        if record_type(key).is_some_and(is_other_group_record_type) {
            return None;
        }
        match OffsetsKey::decode(key) {
            Ok(key) => Some((key, value)),
            Err(error) => {
                tracing::warn!(%partition, offset, %error, "skipping an unreadable record of the offsets topic");
                None
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use ferrolog_records::BatchBuilder;
    use ferrolog_storage::SystemClock;
    use ferrolog_storage::manager::ManagerConfig;

    /// Appends `records` for `group` to `partition`, wherever the group belongs.
    fn append_to(topic: &OffsetsTopic, partition: i32, records: &[OffsetsRecord]) {
        let log = topic
            .manager
            .get_or_create(&TopicPartition::new(OFFSETS_TOPIC, partition))
            .unwrap();
        let mut builder = BatchBuilder::new(0);
        for (key, value) in records {
            builder
                .append(1, Some(&key.encode()), value.as_deref(), &[])
                .unwrap();
        }
        log.append_as_leader(builder.build().unwrap()).unwrap();
    }

    #[test]
    fn records_an_older_ferrolog_placed_elsewhere_are_read_under_newer_ones() {
        let temp = tempfile::tempdir().unwrap();
        let manager = Arc::new(
            LogManager::open(
                ManagerConfig {
                    log_dirs: vec![temp.path().to_path_buf()],
                    ..ManagerConfig::default()
                },
                Arc::new(SystemClock),
            )
            .unwrap(),
        );
        let topic = OffsetsTopic::new(manager, 50, 1 << 20);
        topic.ensure_created().unwrap();
        // "my-txn" hashes negative: Kafka keeps it in partition 45; masking the sign bit, as
        // ferrolog once did, put it in 3.
        assert_eq!(topic.partition_of("my-txn"), 45);
        let offset = |partition| OffsetsKey::Offset {
            group: "my-txn".into(),
            topic: "t".into(),
            partition,
        };
        let group = OffsetsKey::Group {
            group: "my-txn".into(),
        };
        append_to(
            &topic,
            3,
            &[
                (offset(0), Some(b"old".to_vec())),
                (offset(1), Some(b"only-old".to_vec())),
                (group.clone(), Some(b"old-group".to_vec())),
            ],
        );
        topic
            .journal()
            .append::<OffsetsCodec>(45, &[(offset(0), Some(b"new".to_vec()))], 2)
            .unwrap();
        let mut visited = Vec::new();
        topic
            .load(|event| {
                if let OffsetsEvent::Record { record, .. } = event {
                    visited.push(record)
                }
            })
            .unwrap();
        assert_eq!(
            visited,
            [
                (offset(0), Some(b"new".to_vec())),
                (offset(1), Some(b"only-old".to_vec())),
                (group, Some(b"old-group".to_vec())),
            ]
        );
    }
}
