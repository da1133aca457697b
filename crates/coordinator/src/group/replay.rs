//! Rebuilding the groups from the records of the offsets topic at startup: offsets, classic
//! groups, consumer groups and streams groups, each record applied as it was written.

use std::collections::HashMap;

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
        } if kind.is_share() => replay_share(groups, kind, &group, &sub_key, value.as_deref(), now),
        OffsetsKey::Consumer {
            kind,
            group,
            sub_key,
        } if kind.is_streams() => {
            replay_streams(groups, kind, &group, &sub_key, value.as_deref(), now)
        }
        OffsetsKey::Consumer {
            kind,
            group,
            sub_key,
        } => replay_consumer(groups, kind, &group, &sub_key, value.as_deref(), now),
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

/// Applies a record of a consumer group (KIP-848) to the groups being rebuilt. A group whose
/// epoch record is tombstoned is gone; its offsets stay, as Kafka keeps them apart.
fn replay_consumer(
    groups: &mut HashMap<String, Group>,
    kind: ConsumerRecordType,
    group_id: &str,
    sub_key: &str,
    value: Option<&[u8]>,
    now: i64,
) {
    let entry = groups
        .entry(group_id.to_owned())
        .or_insert_with(|| Group::new(group_id, now));
    if kind == ConsumerRecordType::GroupMetadata && value.is_none() {
        entry.consumer = None;
        if entry.offsets.is_empty() && entry.pending_txn_offsets.is_empty() {
            groups.remove(group_id);
        }
        return;
    }
    if !entry.members.is_empty() {
        // Kafka writes a classic group's tombstone before it writes the group as a consumer
        // group; a classic group still with members here is one rebuilt from an older record.
        *entry = Group {
            offsets: std::mem::take(&mut entry.offsets),
            pending_txn_offsets: std::mem::take(&mut entry.pending_txn_offsets),
            ..Group::new(group_id, now)
        };
    }
    let consumer = entry
        .consumer
        .get_or_insert_with(|| Box::new(consumer::new_group(group_id)));
    if let Err(error) = consumer::records::replay(consumer, kind, sub_key, value) {
        tracing::warn!(group = group_id, record_type = kind.id(), %error, "skipping an unreadable consumer group record");
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

/// Applies a record of a share group (KIP-932) to the groups being rebuilt. A group whose
/// metadata record is tombstoned is gone (it keeps no offsets of its own).
fn replay_share(
    groups: &mut HashMap<String, Group>,
    kind: ConsumerRecordType,
    group_id: &str,
    sub_key: &str,
    value: Option<&[u8]>,
    now: i64,
) {
    let exists = groups.get(group_id).is_some_and(|g| g.share.is_some());
    if value.is_none() && !exists {
        return;
    }
    let entry = groups
        .entry(group_id.to_owned())
        .or_insert_with(|| Group::new(group_id, now));
    if kind == ConsumerRecordType::ShareGroupMetadata && value.is_none() {
        entry.share = None;
        if entry.offsets.is_empty() && entry.pending_txn_offsets.is_empty() {
            groups.remove(group_id);
        }
        return;
    }
    if !entry.members.is_empty() || entry.consumer.is_some() || entry.streams.is_some() {
        tracing::warn!(
            group = group_id,
            "a share group record for a group of another kind: it becomes a share group, as the later record says"
        );
        *entry = Group {
            offsets: std::mem::take(&mut entry.offsets),
            pending_txn_offsets: std::mem::take(&mut entry.pending_txn_offsets),
            ..Group::new(group_id, now)
        };
    }
    let group = entry
        .share
        .get_or_insert_with(|| Box::new(share::ShareGroup::new(group_id)));
    if let Err(error) = share::records::replay(group, kind, sub_key, value) {
        tracing::warn!(group = group_id, record_type = kind.id(), %error, "skipping an unreadable share group record");
    }
}

/// Applies a record of a streams group (KIP-1071) to the groups being rebuilt. A group whose
/// metadata record is tombstoned is gone; its offsets stay.
fn replay_streams(
    groups: &mut HashMap<String, Group>,
    kind: ConsumerRecordType,
    group_id: &str,
    sub_key: &str,
    value: Option<&[u8]>,
    now: i64,
) {
    // A tombstone never makes a group: those written after the group's own (deleting it, in
    // Kafka's order) find none and change nothing.
    let exists = groups.get(group_id).is_some_and(|g| g.streams.is_some());
    if value.is_none() && !exists {
        return;
    }
    let entry = groups
        .entry(group_id.to_owned())
        .or_insert_with(|| Group::new(group_id, now));
    if kind == ConsumerRecordType::StreamsGroupMetadata && value.is_none() {
        entry.streams = None;
        if entry.offsets.is_empty() && entry.pending_txn_offsets.is_empty() {
            groups.remove(group_id);
        }
        return;
    }
    if !entry.members.is_empty() || entry.consumer.is_some() {
        // A group of another kind before: Kafka tombstoned it before writing this one.
        *entry = Group {
            offsets: std::mem::take(&mut entry.offsets),
            pending_txn_offsets: std::mem::take(&mut entry.pending_txn_offsets),
            ..Group::new(group_id, now)
        };
    }
    let group = entry
        .streams
        .get_or_insert_with(|| Box::new(streams::StreamsGroup::new(group_id)));
    if let Err(error) = streams::records::replay(group, kind, sub_key, value) {
        tracing::warn!(group = group_id, record_type = kind.id(), %error, "skipping an unreadable streams group record");
    }
}
