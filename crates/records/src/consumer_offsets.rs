//! The records of the internal `__consumer_offsets` topic: committed offsets and group metadata,
//! with Kafka's exact key and value schemas, so a Kafka data dir's groups load here and ours load
//! in Kafka.
//!
//! | key version | key fields                                   | value versions read (written) |
//! |-------------|----------------------------------------------|-------------------------------|
//! | 0, 1        | group, topic, partition: an offset commit    | 0–4 (3; 1 when it expires)    |
//! | 2           | group: the group's metadata                  | 0–4 (3)                       |
//! | 3–8, 16     | consumer groups of the KIP-848 protocol: see [`crate::consumer_group_records`] | 0 (0) |
//! | 17, 19–23   | streams groups (KIP-1071): see [`crate::streams_group_records`] | 0 (0) |
//! | 10–15       | share groups (KIP-932): see [`crate::share_group_records`] | 0 (0) |
//! | 9, 18       | types Kafka no longer writes (share and streams partition metadata): kept on disk, skipped when groups load |
//!
//! A record with a null value is a tombstone: the offset or the group is gone. Versions 0–3 use
//! classic strings (`i16` length) and bytes (`i32` length); version 4 is flexible (unsigned
//! varint lengths + 1 and tagged fields), written by newer Kafka versions.

use crate::coordinator_codec::{Reader, put_bytes, put_nullable_string, put_string};
use crate::error::RecordsError;

/// Whether a key's record type (key version) is one Kafka 4.4 no longer writes (9, the share
/// groups' partition metadata; 18, the streams groups'), or a later type: these records stay
/// in the log as they are (a directory moved back to Kafka keeps them) and are passed over
/// when groups load, as Kafka passes over types it does not know.
pub fn is_other_group_record_type(kind: i16) -> bool {
    kind == 9 || kind == 18 || kind > 23
}

/// The record type (key version) a `__consumer_offsets` key starts with.
pub fn record_type(key: &[u8]) -> Option<i16> {
    match key {
        [high, low, ..] => Some(i16::from_be_bytes([*high, *low])),
        _ => None,
    }
}

/// Which record a key names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OffsetsKey {
    /// A committed offset (key versions 0 and 1; both have this layout).
    Offset {
        group: String,
        topic: String,
        partition: i32,
    },
    /// A group's metadata (key version 2).
    Group { group: String },
    /// A consumer group's record of one of the types 3–8 and 16 (KIP-848), keyed by the group
    /// and, for the member records, the member id (or the regular expression, type 16).
    Consumer {
        kind: ConsumerRecordType,
        group: String,
        /// The member id (types 5, 7, 8) or the regular expression (16); empty otherwise.
        sub_key: String,
    },
}

/// The consumer-group record types of `__consumer_offsets` (Kafka's coordinator record types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConsumerRecordType {
    /// 3: the group epoch and metadata hash.
    GroupMetadata,
    /// 4: the subscribed topics' metadata, which Kafka 4.4 only tombstones.
    PartitionMetadata,
    /// 5: a member's subscription and client details.
    MemberMetadata,
    /// 6: the target assignment's epoch.
    TargetAssignmentMetadata,
    /// 7: a member's target assignment.
    TargetAssignmentMember,
    /// 8: a member's current assignment and epochs.
    CurrentMemberAssignment,
    /// 10: a share member's subscription and client details.
    ShareMemberMetadata,
    /// 11: a share group's epoch and metadata hash.
    ShareGroupMetadata,
    /// 12: a share group's target assignment epoch.
    ShareTargetAssignmentMetadata,
    /// 13: a share member's target assignment.
    ShareTargetAssignmentMember,
    /// 14: a share member's current assignment and epochs.
    ShareCurrentMemberAssignment,
    /// 15: which partitions of a share group have their share state initialized.
    ShareStatePartitionMetadata,
    /// 16: the topics a regular-expression subscription resolved to.
    RegularExpression,
    /// 17: a streams group's epoch, metadata hash and assignment configs.
    StreamsGroupMetadata,
    /// 19: a streams member's process, endpoint and client details.
    StreamsMemberMetadata,
    /// 20: a streams group's target assignment epoch.
    StreamsTargetAssignmentMetadata,
    /// 21: a streams member's target tasks.
    StreamsTargetAssignmentMember,
    /// 22: a streams member's current tasks and epochs.
    StreamsCurrentMemberAssignment,
    /// 23: a streams group's topology.
    StreamsTopology,
}

impl ConsumerRecordType {
    pub fn id(self) -> i16 {
        match self {
            Self::GroupMetadata => 3,
            Self::PartitionMetadata => 4,
            Self::MemberMetadata => 5,
            Self::TargetAssignmentMetadata => 6,
            Self::TargetAssignmentMember => 7,
            Self::CurrentMemberAssignment => 8,
            Self::ShareMemberMetadata => 10,
            Self::ShareGroupMetadata => 11,
            Self::ShareTargetAssignmentMetadata => 12,
            Self::ShareTargetAssignmentMember => 13,
            Self::ShareCurrentMemberAssignment => 14,
            Self::ShareStatePartitionMetadata => 15,
            Self::RegularExpression => 16,
            Self::StreamsGroupMetadata => 17,
            Self::StreamsMemberMetadata => 19,
            Self::StreamsTargetAssignmentMetadata => 20,
            Self::StreamsTargetAssignmentMember => 21,
            Self::StreamsCurrentMemberAssignment => 22,
            Self::StreamsTopology => 23,
        }
    }

    pub fn from_id(id: i16) -> Option<Self> {
        Some(match id {
            3 => Self::GroupMetadata,
            4 => Self::PartitionMetadata,
            5 => Self::MemberMetadata,
            6 => Self::TargetAssignmentMetadata,
            7 => Self::TargetAssignmentMember,
            8 => Self::CurrentMemberAssignment,
            10 => Self::ShareMemberMetadata,
            11 => Self::ShareGroupMetadata,
            12 => Self::ShareTargetAssignmentMetadata,
            13 => Self::ShareTargetAssignmentMember,
            14 => Self::ShareCurrentMemberAssignment,
            15 => Self::ShareStatePartitionMetadata,
            16 => Self::RegularExpression,
            17 => Self::StreamsGroupMetadata,
            19 => Self::StreamsMemberMetadata,
            20 => Self::StreamsTargetAssignmentMetadata,
            21 => Self::StreamsTargetAssignmentMember,
            22 => Self::StreamsCurrentMemberAssignment,
            23 => Self::StreamsTopology,
            _ => return None,
        })
    }

    /// Whether the key carries a second string after the group id.
    fn has_sub_key(self) -> bool {
        matches!(
            self,
            Self::MemberMetadata
                | Self::TargetAssignmentMember
                | Self::CurrentMemberAssignment
                | Self::RegularExpression
                | Self::ShareMemberMetadata
                | Self::ShareTargetAssignmentMember
                | Self::ShareCurrentMemberAssignment
                | Self::StreamsMemberMetadata
                | Self::StreamsTargetAssignmentMember
                | Self::StreamsCurrentMemberAssignment
        )
    }

    /// Whether the record is a share group's (KIP-932).
    pub fn is_share(self) -> bool {
        (10..=15).contains(&self.id())
    }

    /// Whether the record is a streams group's (KIP-1071).
    pub fn is_streams(self) -> bool {
        matches!(
            self,
            Self::StreamsGroupMetadata
                | Self::StreamsMemberMetadata
                | Self::StreamsTargetAssignmentMetadata
                | Self::StreamsTargetAssignmentMember
                | Self::StreamsCurrentMemberAssignment
                | Self::StreamsTopology
        )
    }
}

impl OffsetsKey {
    pub fn group(&self) -> &str {
        match self {
            Self::Offset { group, .. } | Self::Group { group } | Self::Consumer { group, .. } => {
                group
            }
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = Reader::new(bytes, "__consumer_offsets key");
        let version = reader.i16()?;
        match version {
            0 | 1 => Ok(Self::Offset {
                group: reader.string()?,
                topic: reader.string()?,
                partition: reader.i32()?,
            }),
            2 => Ok(Self::Group {
                group: reader.string()?,
            }),
            other => {
                let kind =
                    ConsumerRecordType::from_id(other).ok_or(RecordsError::InvalidLength {
                        what: "__consumer_offsets key version",
                        value: i64::from(other),
                    })?;
                let group = reader.string()?;
                let sub_key = if kind.has_sub_key() {
                    reader.string()?
                } else {
                    String::new()
                };
                Ok(Self::Consumer {
                    kind,
                    group,
                    sub_key,
                })
            }
        }
    }

    /// Encodes as Kafka does: key version 1 for offsets, 2 for group metadata.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Self::Offset {
                group,
                topic,
                partition,
            } => {
                out.extend_from_slice(&1i16.to_be_bytes());
                put_string(&mut out, group);
                put_string(&mut out, topic);
                out.extend_from_slice(&partition.to_be_bytes());
            }
            Self::Group { group } => {
                out.extend_from_slice(&2i16.to_be_bytes());
                put_string(&mut out, group);
            }
            Self::Consumer {
                kind,
                group,
                sub_key,
            } => {
                out.extend_from_slice(&kind.id().to_be_bytes());
                put_string(&mut out, group);
                if kind.has_sub_key() {
                    put_string(&mut out, sub_key);
                }
            }
        }
        out
    }
}

/// A committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetValue {
    pub offset: i64,
    /// -1 when unknown (value versions below 3 do not carry it).
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
    /// Only value version 1 carries an explicit expiry (a retention time set by the client).
    pub expire_timestamp: Option<i64>,
}

impl OffsetValue {
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = Reader::new(bytes, "__consumer_offsets offset value");
        let version = reader.i16()?;
        if !(0..=4).contains(&version) {
            return Err(unknown_version("offset value", version));
        }
        reader.flexible = version >= 4;
        let offset = reader.i64()?;
        let leader_epoch = if version >= 3 { reader.i32()? } else { -1 };
        let metadata = reader.string()?;
        let commit_timestamp = reader.i64()?;
        let expire_timestamp = if version == 1 {
            Some(reader.i64()?)
        } else {
            None
        };
        reader.skip_tagged_fields()?;
        Ok(Self {
            offset,
            leader_epoch,
            metadata,
            commit_timestamp,
            expire_timestamp,
        })
    }

    /// Version 3, or version 1 when an expiry is set, as Kafka 3.x writes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(expire) = self.expire_timestamp {
            out.extend_from_slice(&1i16.to_be_bytes());
            out.extend_from_slice(&self.offset.to_be_bytes());
            put_string(&mut out, &self.metadata);
            out.extend_from_slice(&self.commit_timestamp.to_be_bytes());
            out.extend_from_slice(&expire.to_be_bytes());
        } else {
            out.extend_from_slice(&3i16.to_be_bytes());
            out.extend_from_slice(&self.offset.to_be_bytes());
            out.extend_from_slice(&self.leader_epoch.to_be_bytes());
            put_string(&mut out, &self.metadata);
            out.extend_from_slice(&self.commit_timestamp.to_be_bytes());
        }
        out
    }
}

/// A group's metadata: its generation, protocol and members as of the last rebalance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupValue {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    /// -1 when unknown (value versions below 2).
    pub current_state_timestamp: i64,
    pub members: Vec<MemberValue>,
}

/// One member of a [`GroupValue`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberValue {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub subscription: Vec<u8>,
    pub assignment: Vec<u8>,
}

impl GroupValue {
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = Reader::new(bytes, "__consumer_offsets group value");
        let version = reader.i16()?;
        if !(0..=4).contains(&version) {
            return Err(unknown_version("group value", version));
        }
        reader.flexible = version >= 4;
        let protocol_type = reader.string()?;
        let generation = reader.i32()?;
        let protocol = reader.nullable_string()?;
        let leader = reader.nullable_string()?;
        let current_state_timestamp = if version >= 2 { reader.i64()? } else { -1 };
        let count = reader.array_len()?;
        let mut members = Vec::with_capacity(count.min(1024));
        for _ in 0..count {
            let member_id = reader.string()?;
            let group_instance_id = if version >= 3 {
                reader.nullable_string()?
            } else {
                None
            };
            let client_id = reader.string()?;
            let client_host = reader.string()?;
            let rebalance_timeout_ms = if version >= 1 { reader.i32()? } else { -1 };
            let session_timeout_ms = reader.i32()?;
            let subscription = reader.bytes()?;
            let assignment = reader.bytes()?;
            reader.skip_tagged_fields()?;
            let rebalance_timeout_ms = if version >= 1 {
                rebalance_timeout_ms
            } else {
                session_timeout_ms
            };
            members.push(MemberValue {
                member_id,
                group_instance_id,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                subscription,
                assignment,
            });
        }
        reader.skip_tagged_fields()?;
        Ok(Self {
            protocol_type,
            generation,
            protocol,
            leader,
            current_state_timestamp,
            members,
        })
    }

    /// Version 3, as Kafka 3.x writes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&3i16.to_be_bytes());
        put_string(&mut out, &self.protocol_type);
        out.extend_from_slice(&self.generation.to_be_bytes());
        put_nullable_string(&mut out, self.protocol.as_deref());
        put_nullable_string(&mut out, self.leader.as_deref());
        out.extend_from_slice(&self.current_state_timestamp.to_be_bytes());
        out.extend_from_slice(&(self.members.len() as i32).to_be_bytes());
        for member in &self.members {
            put_string(&mut out, &member.member_id);
            put_nullable_string(&mut out, member.group_instance_id.as_deref());
            put_string(&mut out, &member.client_id);
            put_string(&mut out, &member.client_host);
            out.extend_from_slice(&member.rebalance_timeout_ms.to_be_bytes());
            out.extend_from_slice(&member.session_timeout_ms.to_be_bytes());
            put_bytes(&mut out, &member.subscription);
            put_bytes(&mut out, &member.assignment);
        }
        out
    }
}

/// The `__consumer_offsets` partition that holds `group`, as Kafka's group coordinator places
/// it: see [`coordinator_partition`].
pub fn partition_for_group(group: &str, partitions: i32) -> i32 {
    coordinator_partition(group, partitions)
}

/// The partition of a coordinator's internal topic that holds `id` (a group id in
/// `__consumer_offsets`, a transactional id in `__transaction_state`): Kafka's
/// `Utils.abs(id.hashCode()) % partitions`, with Java's `String.hashCode` over UTF-16 code units
/// and `Utils.abs`, which is the absolute value except for `i32::MIN`, which it makes 0.
pub fn coordinator_partition(id: &str, partitions: i32) -> i32 {
    let hash = id.encode_utf16().fold(0i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(i32::from(unit))
    });
    let abs = if hash == i32::MIN { 0 } else { hash.abs() };
    abs % partitions.max(1)
}

fn unknown_version(what: &'static str, version: i16) -> RecordsError {
    RecordsError::Inconsistent(format!(
        "unknown __consumer_offsets {what} version {version}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_round_trip() {
        let key = OffsetsKey::Offset {
            group: "g".into(),
            topic: "t".into(),
            partition: 3,
        };
        assert_eq!(OffsetsKey::decode(&key.encode()).unwrap(), key);
        let key = OffsetsKey::Group { group: "g".into() };
        assert_eq!(OffsetsKey::decode(&key.encode()).unwrap(), key);
        for expire in [None, Some(99)] {
            let value = OffsetValue {
                offset: 42,
                leader_epoch: if expire.is_some() { -1 } else { 7 },
                metadata: "m".into(),
                commit_timestamp: 1_700_000_000_000,
                expire_timestamp: expire,
            };
            assert_eq!(OffsetValue::decode(&value.encode()).unwrap(), value);
        }
        let group = GroupValue {
            protocol_type: "consumer".into(),
            generation: 4,
            protocol: Some("range".into()),
            leader: Some("a".into()),
            current_state_timestamp: 5,
            members: vec![MemberValue {
                member_id: "a".into(),
                group_instance_id: Some("static".into()),
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                rebalance_timeout_ms: 300_000,
                session_timeout_ms: 45_000,
                subscription: vec![1, 2],
                assignment: vec![3],
            }],
        };
        assert_eq!(GroupValue::decode(&group.encode()).unwrap(), group);
    }

    #[test]
    fn flexible_version_4_values_decode() {
        // OffsetCommitValue v4: offset, leader epoch, compact metadata "x", commit timestamp,
        // then an empty tagged-field section.
        let mut value = vec![0, 4];
        value.extend_from_slice(&5i64.to_be_bytes());
        value.extend_from_slice(&(-1i32).to_be_bytes());
        value.extend_from_slice(&[2, b'x']);
        value.extend_from_slice(&9i64.to_be_bytes());
        value.push(0);
        let decoded = OffsetValue::decode(&value).unwrap();
        assert_eq!((decoded.offset, decoded.metadata.as_str()), (5, "x"));
        assert_eq!(decoded.commit_timestamp, 9);
    }

    #[test]
    fn coordinator_partitions_follow_java_string_hash_code_and_kafka_s_abs() {
        // Kafka 4.4's own answers (`Utils.abs(id.hashCode()) % 50`): a negative hash is
        // negated, i32::MIN becomes 0, and characters count as UTF-16 code units.
        for (id, partition) in [
            ("my-txn", 45),
            ("txn-1", 10),
            ("transactional-id", 31),
            ("a", 47),
            ("", 0),
            ("polygenelubricants", 0),
            ("é-txn", 44),
            ("😀", 49),
        ] {
            assert_eq!(coordinator_partition(id, 50), partition, "{id:?}");
            assert_eq!(partition_for_group(id, 50), partition, "{id:?}");
        }
    }

    #[test]
    fn damaged_records_are_errors_not_panics() {
        let value = GroupValue::default().encode();
        for cut in 0..value.len() {
            assert!(GroupValue::decode(&value[..cut]).is_err());
        }
        assert!(OffsetsKey::decode(&[0, 9, 0, 0]).is_err());
        assert!(OffsetValue::decode(&[0, 3, 0xff]).is_err());
    }
}
