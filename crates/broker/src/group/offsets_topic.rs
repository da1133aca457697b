//! The internal `__consumer_offsets` topic: where group metadata and committed offsets are kept,
//! one partition per group (by [`partition_for_group`]), compacted so only the latest record
//! per key (and tombstones, for a while) survives.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrolog_records::consumer_offsets::{OffsetsKey, partition_for_group};
use ferrolog_records::{BatchBuilder, EntryIter, FileEntry};
use ferrolog_storage::TopicPartition;
use ferrolog_storage::log::{FetchBound, FetchParams};
use ferrolog_storage::manager::LogManager;
use ferrolog_storage::{Result, StorageError};

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
        for partition in 0..self.partitions {
            let topic_partition = TopicPartition::new(OFFSETS_TOPIC, partition);
            if self.manager.get(&topic_partition).is_none() {
                self.manager.get_or_create(&topic_partition)?;
            }
        }
        Ok(())
    }

    /// Appends `records` for `group` as one batch, and makes them visible (high watermark).
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
        let mut batch = builder.build().map_err(invalid)?;
        log.append_as_leader(&mut batch, 0)?;
        log.maybe_increment_high_watermark(log.log_end_offset());
        Ok(())
    }

    /// Every record of every partition that exists, oldest first within a partition. Records
    /// that do not decode are skipped with a warning naming the partition and offset.
    pub fn load(&self, mut visit: impl FnMut(OffsetsRecord)) -> Result<usize> {
        let mut loaded = 0;
        for partition in 0..self.partitions {
            let topic_partition = TopicPartition::new(OFFSETS_TOPIC, partition);
            let Some(log) = self.manager.get(&topic_partition) else {
                continue;
            };
            let mut next = log.log_start_offset();
            let end = log.log_end_offset();
            while next < end {
                let data = log.read(FetchParams {
                    start_offset: next,
                    max_bytes: 1 << 20,
                    bound: FetchBound::LogEnd,
                    min_one_batch: true,
                })?;
                let bytes = data.read_bytes()?;
                if bytes.is_empty() {
                    break;
                }
                for item in EntryIter::new(&bytes) {
                    let Ok((_, entry)) = item else {
                        break;
                    };
                    let entry_next = entry.next_offset();
                    if entry_next > next {
                        loaded += visit_entry(&topic_partition, &entry, next, &mut visit);
                        next = entry_next;
                    }
                }
            }
        }
        Ok(loaded)
    }
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
    let records = match entry.records(usize::MAX).and_then(|r| {
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
