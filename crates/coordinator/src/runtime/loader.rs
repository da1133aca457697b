//! Loading a coordinator's state: every record and transaction marker of its internal topic's
//! partitions, read whole at startup (`internal_log`), decoded by the topic's [`Codec`], in log
//! order within each partition. The coordinator replays them into its shards.

use ferrolog_records::FileEntry;
use ferrolog_storage::manager::LogManager;
use ferrolog_storage::producer::{MarkerKind, TxnMarker};
use ferrolog_storage::{LeaderEpoch, Result, TopicPartition};

use super::internal_log;
use super::{Codec, LoadEvent};

/// What loading read besides the records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSummary {
    /// Records visited (markers not counted).
    pub records: usize,
    /// The highest partition leader epoch the batches carry (0 for ferrolog's own).
    pub highest_leader_epoch: LeaderEpoch,
}

/// Visits every record and marker of the partitions `0..partitions` of `C::TOPIC` that exist
/// here, oldest first within a partition, with the partition each is in. Damaged data is
/// reported and stepped over (`internal_log::for_each_batch`); records that do not decode are
/// passed over by the codec.
pub fn load<C: Codec>(
    manager: &LogManager,
    partitions: i32,
    mut visit: impl FnMut(i32, LoadEvent<C::Record>),
) -> Result<LoadSummary> {
    let mut summary = LoadSummary {
        records: 0,
        highest_leader_epoch: LeaderEpoch::new(0),
    };
    for partition in 0..partitions {
        let topic_partition = TopicPartition::new(C::TOPIC, partition);
        let Some(log) = manager.get(&topic_partition) else {
            continue;
        };
        internal_log::for_each_batch(&log, C::WHAT, |entry, from| {
            if let FileEntry::V2(batch) = entry {
                summary.highest_leader_epoch = summary
                    .highest_leader_epoch
                    .max(LeaderEpoch::new(batch.partition_leader_epoch()));
            }
            summary.records += visit_entry::<C>(&topic_partition, entry, from, &mut |event| {
                visit(partition, event)
            });
        })?;
    }
    Ok(summary)
}

/// Visits the records of one batch at or above `from` (or the transaction marker it is);
/// returns how many records were visited.
fn visit_entry<C: Codec>(
    topic_partition: &TopicPartition,
    entry: &FileEntry<'_>,
    from: i64,
    visit: &mut impl FnMut(LoadEvent<C::Record>),
) -> usize {
    let mut producer_id = None;
    if let FileEntry::V2(batch) = entry {
        if batch.is_control() {
            match TxnMarker::of(batch) {
                Ok(Some(marker)) => visit(LoadEvent::Marker {
                    producer_id: marker.producer_id,
                    commit: marker.kind == MarkerKind::Commit,
                }),
                Ok(None) => {}
                Err(reason) => {
                    tracing::error!(partition = %topic_partition, offset = batch.base_offset(), reason, "skipping a transaction marker of an internal topic that does not read: the transaction's records in the partition stay pending");
                }
            }
            return 0;
        }
        if batch.is_transactional() {
            producer_id = Some(batch.producer_id());
        }
    }
    let records = match internal_log::owned_records(entry) {
        Ok(records) => records,
        Err(error) => {
            tracing::warn!(partition = %topic_partition, offset = entry.last_offset(), %error, "skipping an unreadable batch of an internal topic");
            return 0;
        }
    };
    let mut visited = 0;
    for (offset, key, value) in records {
        if offset < from {
            continue;
        }
        let Some(key) = key else { continue };
        if let Some(record) = C::decode(topic_partition, offset, &key, value) {
            visit(LoadEvent::Record {
                record,
                producer_id,
            });
            visited += 1;
        }
    }
    visited
}
