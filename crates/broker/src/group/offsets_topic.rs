//! The internal `__consumer_offsets` topic: where group metadata and committed offsets are kept,
//! one partition per group (by [`partition_for_group`]), compacted so only the latest record
//! per key (and tombstones, for a while) survives.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use ferrolog_records::consumer_offsets::{
    OTHER_GROUP_RECORD_TYPES, OffsetsKey, partition_for_group, record_type,
};
use ferrolog_records::{BatchBuilder, DEFAULT_MAX_DECOMPRESSED_BYTES, EntryIter, FileEntry};
use ferrolog_storage::TopicPartition;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_storage::manager::LogManager;
use ferrolog_storage::{Offset, Result, StorageError};

pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// A record of the offsets topic: its key, and its value or `None` for a tombstone.
pub type OffsetsRecord = (OffsetsKey, Option<Vec<u8>>);

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
        if self.manager.topic_overrides(OFFSETS_TOPIC).is_empty() {
            let overrides = BTreeMap::from([
                ("cleanup.policy".to_owned(), "compact".to_owned()),
                ("segment.bytes".to_owned(), self.segment_bytes.to_string()),
            ]);
            self.manager.set_topic_overrides(OFFSETS_TOPIC, overrides)?;
        }
        let all: Vec<TopicPartition> = (0..self.partitions)
            .map(|partition| TopicPartition::new(OFFSETS_TOPIC, partition))
            .collect();
        self.manager.create_all(&all)
    }

    /// Appends `records` for `group` as one batch (visible at once: the log moves its high
    /// watermark with every append).
    pub fn append(&self, group: &str, records: &[OffsetsRecord], now_ms: i64) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let topic_partition = TopicPartition::new(OFFSETS_TOPIC, self.partition_of(group));
        let log = self.manager.get_or_create(&topic_partition)?;
        let mut builder = BatchBuilder::new(0);
        for (key, value) in records {
            builder
                .append(now_ms, Some(&key.encode()), value.as_deref(), &[])
                .map_err(invalid)?;
        }
        log.append_as_leader(builder.build().map_err(invalid)?)?;
        Ok(())
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
    pub fn load(&self, mut visit: impl FnMut(OffsetsRecord)) -> Result<usize> {
        let mut placed_keys: HashSet<OffsetsKey> = HashSet::new();
        let mut misplaced: Vec<OffsetsRecord> = Vec::new();
        let loaded = self.load_partitions(|partition, record| {
            if self.partition_of(record.0.group()) == partition {
                placed_keys.insert(record.0.clone());
                visit(record);
            } else {
                misplaced.push(record);
            }
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
            visit(record);
        }
        Ok(loaded)
    }

    /// Every record of every partition that exists, with the partition it is in (see
    /// [`OffsetsTopic::load`]).
    fn load_partitions(&self, mut visit: impl FnMut(i32, OffsetsRecord)) -> Result<usize> {
        let mut loaded = 0;
        for partition in 0..self.partitions {
            let topic_partition = TopicPartition::new(OFFSETS_TOPIC, partition);
            let Some(log) = self.manager.get(&topic_partition) else {
                continue;
            };
            let mut next = log.log_start_offset();
            let end = log.log_end_offset();
            while next < end {
                let read = log.read(FetchParams {
                    start_offset: next,
                    max_bytes: 1 << 20,
                    bound: FetchBound::LogEnd,
                    first_batch: FirstBatch::Whole,
                });
                let data = match read {
                    Ok(data) => data,
                    Err(error @ StorageError::Corrupt { .. }) => {
                        next = skip_damaged_segment(&log, &topic_partition, next, &error);
                        continue;
                    }
                    Err(error) => return Err(error),
                };
                let bytes = data.read_bytes()?;
                if bytes.is_empty() {
                    break;
                }
                let before = next;
                // The slice may end inside a batch (max_bytes): the iterator stops before it,
                // and the next read starts there.
                for item in EntryIter::new(&bytes) {
                    let entry = match item {
                        Ok((_, entry)) => entry,
                        Err((position, error)) => {
                            let error = StorageError::Corrupt {
                                path: data.segment_path().unwrap_or_default(),
                                position: data.offset_metadata.position.bytes() + position as u64,
                                reason: error.to_string(),
                            };
                            next = skip_damaged_segment(&log, &topic_partition, next, &error);
                            break;
                        }
                    };
                    let entry_next = Offset::new(entry.next_offset());
                    if entry_next <= next {
                        continue;
                    }
                    if let Err(error) = entry.validate() {
                        tracing::error!(
                            partition = %topic_partition,
                            offset = entry.last_offset(),
                            %error,
                            "skipping a damaged batch of the offsets topic: the group records in it are lost"
                        );
                    } else {
                        loaded +=
                            visit_entry(&topic_partition, &entry, next.value(), &mut |record| {
                                visit(partition, record)
                            });
                    }
                    next = entry_next;
                }
                if next == before {
                    // Nothing whole was read where a batch should start.
                    let error = StorageError::Corrupt {
                        path: data.segment_path().unwrap_or_default(),
                        position: data.offset_metadata.position.bytes(),
                        reason: "no whole batch where the read started".into(),
                    };
                    next = skip_damaged_segment(&log, &topic_partition, next, &error);
                }
            }
        }
        Ok(loaded)
    }
}

/// Where loading goes on after damage at `offset`: the next segment's base, or the log end.
fn skip_damaged_segment(
    log: &Log,
    topic_partition: &TopicPartition,
    offset: Offset,
    error: &StorageError,
) -> Offset {
    let view = log.view();
    let resume = view
        .segments
        .iter()
        .map(|segment| segment.base_offset())
        .find(|base| *base > offset)
        .unwrap_or(view.log_end.offset);
    tracing::error!(
        partition = %topic_partition,
        %offset,
        resume_at = %resume,
        %error,
        "damaged data in the offsets topic: the group records from here to the next segment cannot be read and are skipped"
    );
    resume
}

fn invalid(error: ferrolog_records::RecordsError) -> StorageError {
    StorageError::InvalidRecord {
        batch_index: 0,
        record_index: None,
        reason: error.to_string(),
    }
}

/// Visits the records of one batch at or above `from`; returns how many were visited.
fn visit_entry(
    topic_partition: &TopicPartition,
    entry: &FileEntry<'_>,
    from: i64,
    visit: &mut impl FnMut(OffsetsRecord),
) -> usize {
    if let FileEntry::V2(batch) = entry
        && batch.is_control()
    {
        return 0;
    }
    let records = match entry.records(DEFAULT_MAX_DECOMPRESSED_BYTES).and_then(|r| {
        r.to_vec().map(|v| {
            v.into_iter()
                .map(|record| {
                    (
                        record.offset,
                        record.key.map(<[u8]>::to_vec),
                        record.value.map(<[u8]>::to_vec),
                    )
                })
                .collect::<Vec<_>>()
        })
    }) {
        Ok(records) => records,
        Err(error) => {
            tracing::warn!(partition = %topic_partition, offset = entry.last_offset(), %error, "skipping an unreadable batch of the offsets topic");
            return 0;
        }
    };
    let mut visited = 0;
    for (offset, key, value) in records {
        if offset < from {
            continue;
        }
        let Some(key) = key else { continue };
        if record_type(&key).is_some_and(|kind| OTHER_GROUP_RECORD_TYPES.contains(&kind)) {
            continue;
        }
        match OffsetsKey::decode(&key) {
            Ok(key) => {
                visit((key, value));
                visited += 1;
            }
            Err(error) => {
                tracing::warn!(partition = %topic_partition, offset, %error, "skipping an unreadable record of the offsets topic");
            }
        }
    }
    visited
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
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
            .append("my-txn", &[(offset(0), Some(b"new".to_vec()))], 2)
            .unwrap();
        let mut visited = Vec::new();
        topic.load(|record| visited.push(record)).unwrap();
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
