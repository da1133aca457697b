//! Rebuilding the groups from the records of the offsets topic at startup: offsets, classic
//! groups, consumer, streams and share groups, each record applied as it was written.

use std::collections::HashMap;

use ferrolog_records::RecordsError;
use ferrolog_records::consumer_offsets::{ConsumerRecordType, GroupValue, OffsetValue, OffsetsKey};

use super::offsets_topic::OffsetsRecord;
use super::state::Group;
use super::{consumer, share, streams};

/// Applies one record of the offsets topic to the groups being rebuilt at startup.
pub(super) fn replay(groups: &mut HashMap<String, Group>, (key, value): OffsetsRecord, now: i64) {
    match key {
        OffsetsKey::Offset {
            group,
            topic,
            partition,
        } => match value.map(|bytes| OffsetValue::decode(&bytes)) {
            Some(Ok(value)) => {
                groups
                    .entry(group.clone())
                    .or_insert_with(|| Group::new(&group, now))
                    .offsets
                    .insert((topic, partition), value);
            }
            Some(Err(error)) => {
                tracing::warn!(group, topic, partition, %error, "skipping an unreadable offset record");
            }
            None => {
                if let Some(existing) = groups.get_mut(&group) {
                    existing.remove_pending(&topic, partition);
                    existing.offsets.remove(&(topic, partition));
                }
            }
        },
        OffsetsKey::Consumer {
            kind,
            group,
            sub_key,
        } => replay_modern(groups, kind, &group, &sub_key, value.as_deref(), now),
        OffsetsKey::Group { group } => match value.map(|bytes| GroupValue::decode(&bytes)) {
            Some(Ok(value)) => {
                let mut rebuilt = Group::from_value(&group, value, now);
                if let Some(old) = groups.remove(&group) {
                    rebuilt.offsets = old.offsets;
                    rebuilt.pending_txn_offsets = old.pending_txn_offsets;
                }
                groups.insert(group, rebuilt);
            }
            Some(Err(error)) => {
                tracing::warn!(group, %error, "skipping an unreadable group metadata record");
            }
            None => {
                // The group's metadata is gone; offsets recorded after this stay, in an empty
                // group, as Kafka keeps them.
                if let Some(existing) = groups.remove(&group) {
                    let mut empty = Group::new(&group, now);
                    empty.offsets = existing.offsets;
                    empty.pending_txn_offsets = existing.pending_txn_offsets;
                    if !empty.offsets.is_empty() || !empty.pending_txn_offsets.is_empty() {
                        groups.insert(group, empty);
                    }
                }
            }
        },
    }
}

/// Applies one offset record of a transaction (a TxnOffsetCommit of `producer_id`) to the
/// groups being rebuilt: pending until the transaction's marker.
pub(super) fn replay_transactional(
    groups: &mut HashMap<String, Group>,
    (key, value): OffsetsRecord,
    producer_id: i64,
    now: i64,
) {
    let OffsetsKey::Offset {
        group,
        topic,
        partition,
    } = key
    else {
        // Kafka's coordinator writes only offsets in transactions.
        return replay(groups, (key, value), now);
    };
    match value.map(|bytes| OffsetValue::decode(&bytes)) {
        Some(Ok(value)) => {
            groups
                .entry(group.clone())
                .or_insert_with(|| Group::new(&group, now))
                .pending_txn_offsets
                .entry(producer_id)
                .or_default()
                .insert((topic, partition), value);
        }
        Some(Err(error)) => {
            tracing::warn!(group, topic, partition, %error, "skipping an unreadable transactional offset record");
        }
        None => {}
    }
}

/// The group protocols whose records are keyed as KIP-848's: each group of one of them is
/// kept in its own field of the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Modern {
    Consumer,
    Streams,
    Share,
}

impl Modern {
    fn of(kind: ConsumerRecordType) -> Self {
        if kind.is_share() {
            Self::Share
        } else if kind.is_streams() {
            Self::Streams
        } else {
            Self::Consumer
        }
    }

    /// The record whose tombstone ends a group of this protocol.
    fn metadata_record(self) -> ConsumerRecordType {
        match self {
            Self::Consumer => ConsumerRecordType::GroupMetadata,
            Self::Streams => ConsumerRecordType::StreamsGroupMetadata,
            Self::Share => ConsumerRecordType::ShareGroupMetadata,
        }
    }

    fn held_by(self, group: &Group) -> bool {
        match self {
            Self::Consumer => group.consumer.is_some(),
            Self::Streams => group.streams.is_some(),
            Self::Share => group.share.is_some(),
        }
    }

    fn end(self, group: &mut Group) {
        match self {
            Self::Consumer => group.consumer = None,
            Self::Streams => group.streams = None,
            Self::Share => group.share = None,
        }
    }

    /// Whether `group` is of another kind: a classic group with members, or another protocol's.
    fn other_kind_in(self, group: &Group) -> bool {
        !group.members.is_empty()
            || [Self::Consumer, Self::Streams, Self::Share]
                .into_iter()
                .any(|other| other != self && other.held_by(group))
    }

    /// Applies one record to `group`'s group of this protocol, made if it has none.
    fn apply(
        self,
        group: &mut Group,
        kind: ConsumerRecordType,
        sub_key: &str,
        value: Option<&[u8]>,
    ) -> Result<(), RecordsError> {
        let id = group.id.clone();
        match self {
            Self::Consumer => {
                let made = group
                    .consumer
                    .get_or_insert_with(|| Box::new(consumer::new_group(&id)));
                consumer::records::replay(made, kind, sub_key, value)
            }
            Self::Streams => {
                let made = group
                    .streams
                    .get_or_insert_with(|| Box::new(streams::StreamsGroup::new(&id)));
                streams::records::replay(made, kind, sub_key, value)
            }
            Self::Share => {
                let made = group
                    .share
                    .get_or_insert_with(|| Box::new(share::ShareGroup::new(&id)));
                share::records::replay(made, kind, sub_key, value)
            }
        }
    }
}

/// Applies a record of a consumer (KIP-848), streams (KIP-1071) or share (KIP-932) group to
/// the groups being rebuilt. A group whose metadata record is tombstoned is gone; its offsets
/// stay, as Kafka keeps them apart.
fn replay_modern(
    groups: &mut HashMap<String, Group>,
    kind: ConsumerRecordType,
    group_id: &str,
    sub_key: &str,
    value: Option<&[u8]>,
    now: i64,
) {
    let protocol = Modern::of(kind);
    // A tombstone never makes a group: those written after the group's own (deleting it, in
    // Kafka's order) find none and change nothing.
    let exists = groups.get(group_id).is_some_and(|g| protocol.held_by(g));
    if value.is_none() && !exists {
        return;
    }
    let entry = groups
        .entry(group_id.to_owned())
        .or_insert_with(|| Group::new(group_id, now));
    if kind == protocol.metadata_record() && value.is_none() {
        protocol.end(entry);
        if entry.offsets.is_empty() && entry.pending_txn_offsets.is_empty() {
            groups.remove(group_id);
        }
        return;
    }
    if protocol.other_kind_in(entry) {
        // A group of another kind before: Kafka tombstoned it before writing this one (or a
        // classic group was rebuilt from a record older than its tombstone).
        *entry = Group {
            offsets: std::mem::take(&mut entry.offsets),
            pending_txn_offsets: std::mem::take(&mut entry.pending_txn_offsets),
            ..Group::new(group_id, now)
        };
    }
    if let Err(error) = protocol.apply(entry, kind, sub_key, value) {
        tracing::warn!(group = group_id, record_type = kind.id(), %error, "skipping an unreadable group record");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::consumer::records as consumer_records;
    use crate::group::share::records as share_records;

    #[test]
    fn a_tombstone_after_a_groups_end_makes_no_group() {
        let mut groups = HashMap::new();
        for record in [
            consumer_records::group_epoch("g", 3, 0),
            consumer_records::tombstone(ConsumerRecordType::GroupMetadata, "g", ""),
            // Kafka writes some of a deleted group's tombstones after its epoch's.
            consumer_records::tombstone(ConsumerRecordType::TargetAssignmentMetadata, "g", ""),
        ] {
            replay(&mut groups, record, 0);
        }
        assert!(groups.is_empty());
    }

    #[test]
    fn a_later_group_of_another_protocol_replaces_the_earlier() {
        let mut groups = HashMap::new();
        replay(&mut groups, consumer_records::group_epoch("g", 3, 0), 0);
        replay(&mut groups, share_records::group_metadata("g", 5, 0), 0);
        let group = &groups["g"];
        assert!(group.consumer.is_none());
        assert_eq!(group.share.as_ref().map(|share| share.epoch), Some(5));
    }
}
