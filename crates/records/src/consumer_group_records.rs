//! The values of the `__consumer_offsets` records Kafka 4.4 writes for consumer groups of the
//! KIP-848 protocol (record types 3 to 8 and 16). Every one is value version 0, flexible:
//! compact strings and arrays, and tagged fields, which are written only when they differ from
//! their default, as Kafka writes them.
//!
//! | type | value                                   | tagged fields                        |
//! |------|-----------------------------------------|--------------------------------------|
//! | 3    | [`ConsumerGroupMetadata`]: group epoch  | 0: metadata hash (default 0)         |
//! | 4    | subscription metadata: only tombstoned  |                                      |
//! | 5    | [`ConsumerMemberMetadata`]              | 0: classic member metadata (null)    |
//! | 6    | [`TargetAssignmentMetadata`]            | 0: assignment timestamp (default 0)  |
//! | 7    | [`TargetAssignmentMember`]              |                                      |
//! | 8    | [`CurrentMemberAssignment`]             | per topic, 0: assignment epochs      |
//! | 16   | [`RegularExpressionValue`]              |                                      |

use crate::coordinator_codec::{FlexWriter, Reader};
use crate::error::RecordsError;

/// A topic id, as Kafka's UUIDs are written: 16 bytes, most significant first.
pub type TopicIdBytes = [u8; 16];

/// Type 3: the group's epoch, and the hash of its subscribed topics' metadata (KIP-1101).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerGroupMetadata {
    pub epoch: i32,
    pub metadata_hash: i64,
}

/// Type 5: what a member subscribes to and who it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerMemberMetadata {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
    /// Set for a member of the classic protocol in a consumer group.
    pub classic: Option<ClassicMemberMetadata>,
}

/// A classic-protocol member's session timeout and protocols, kept in its type-5 record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClassicMemberMetadata {
    pub session_timeout_ms: i32,
    pub protocols: Vec<(String, Vec<u8>)>,
}

/// Type 6: the epoch of the group's target assignment and when it was computed (KIP-1263).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TargetAssignmentMetadata {
    pub assignment_epoch: i32,
    pub assignment_timestamp: i64,
}

/// A topic's partitions in an assignment, with the epoch each was assigned at where known.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicPartitions {
    pub topic_id: TopicIdBytes,
    pub partitions: Vec<i32>,
    /// Type 8 only: the epoch each partition was assigned at, as long as `partitions`, or
    /// empty when not known (Kafka leaves the tagged field out when empty).
    pub assignment_epochs: Vec<i32>,
}

/// Type 7: a member's target assignment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TargetAssignmentMember {
    pub partitions: Vec<TopicPartitions>,
}

/// Type 8: a member's current assignment, its epochs and reconciliation state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CurrentMemberAssignment {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    /// Kafka's `MemberState`: 0 stable, 1 unrevoked partitions, 2 unreleased partitions,
    /// 127 unknown.
    pub state: i8,
    pub assigned: Vec<TopicPartitions>,
    pub pending_revocation: Vec<TopicPartitions>,
}

/// Type 16: the topics a regular expression resolved to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegularExpressionValue {
    pub topics: Vec<String>,
    pub version: i64,
    pub timestamp: i64,
}

/// Starts reading a version-0 flexible value; any other version is an error naming it.
pub(crate) fn value_reader<'a>(
    bytes: &'a [u8],
    what: &'static str,
) -> Result<Reader<'a>, RecordsError> {
    let mut reader = Reader::new(bytes, what);
    let version = reader.i16()?;
    if version != 0 {
        return Err(RecordsError::Inconsistent(format!(
            "{what}: unknown value version {version}"
        )));
    }
    reader.flexible = true;
    Ok(reader)
}

pub(crate) fn value_writer() -> FlexWriter {
    let mut writer = FlexWriter::default();
    writer.i16(0);
    writer
}

/// A tagged field's bytes, read on their own.
pub(crate) fn tag_reader<'a>(bytes: &'a [u8], what: &'static str) -> Reader<'a> {
    let mut reader = Reader::new(bytes, what);
    reader.flexible = true;
    reader
}

/// The shape of types 3 and 6: an `int32`, then an `int64` in tag 0 whose default is 0.
pub(crate) fn decode_i32_tagged_i64(
    bytes: &[u8],
    what: &'static str,
) -> Result<(i32, i64), RecordsError> {
    let mut reader = value_reader(bytes, what)?;
    let first = reader.i32()?;
    let mut tagged = 0;
    for (tag, field) in reader.tagged_fields()? {
        if tag == 0 {
            tagged = tag_reader(field, what).i64()?;
        }
    }
    reader.finish()?;
    Ok((first, tagged))
}

pub(crate) fn encode_i32_tagged_i64(first: i32, tagged: i64) -> Vec<u8> {
    let mut writer = value_writer();
    writer.i32(first);
    if tagged == 0 {
        writer.no_tags();
    } else {
        writer.tagged(&[(0, tagged.to_be_bytes().to_vec())]);
    }
    writer.out
}

impl ConsumerGroupMetadata {
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let (epoch, metadata_hash) = decode_i32_tagged_i64(bytes, "consumer group metadata value")?;
        Ok(Self {
            epoch,
            metadata_hash,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        encode_i32_tagged_i64(self.epoch, self.metadata_hash)
    }
}

impl ConsumerMemberMetadata {
    const WHAT: &'static str = "consumer group member metadata value";

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let mut value = Self {
            instance_id: reader.nullable_string()?,
            rack_id: reader.nullable_string()?,
            client_id: reader.string()?,
            client_host: reader.string()?,
            subscribed_topic_names: reader.strings()?,
            subscribed_topic_regex: reader.nullable_string()?,
            rebalance_timeout_ms: reader.i32()?,
            server_assignor: reader.nullable_string()?,
            classic: None,
        };
        for (tag, field) in reader.tagged_fields()? {
            if tag == 0 {
                value.classic = ClassicMemberMetadata::decode(field)?;
            }
        }
        reader.finish()?;
        Ok(value)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut writer = value_writer();
        writer
            .nullable_string(self.instance_id.as_deref())
            .nullable_string(self.rack_id.as_deref())
            .string(&self.client_id)
            .string(&self.client_host)
            .strings(&self.subscribed_topic_names)
            .nullable_string(self.subscribed_topic_regex.as_deref())
            .i32(self.rebalance_timeout_ms)
            .nullable_string(self.server_assignor.as_deref());
        // Kafka writes the tag even for a member of the consumer protocol: a null struct.
        writer.tagged(&[(0, ClassicMemberMetadata::encode(self.classic.as_ref()))]);
        writer.out
    }
}

impl ClassicMemberMetadata {
    const WHAT: &'static str = "classic member metadata";

    /// The nullable struct in tag 0 of a type-5 value.
    fn decode(bytes: &[u8]) -> Result<Option<Self>, RecordsError> {
        let mut reader = tag_reader(bytes, Self::WHAT);
        // A nullable struct in a tagged field starts with a varint: 0 for null, 1 if present.
        if reader.unsigned_varint()? == 0 {
            return Ok(None);
        }
        let session_timeout_ms = reader.i32()?;
        let count = reader.array_len()?;
        let mut protocols = Vec::with_capacity(reader.capacity_for(count));
        for _ in 0..count {
            let name = reader.string()?;
            let metadata = reader.bytes()?;
            reader.tagged_fields()?;
            protocols.push((name, metadata));
        }
        reader.tagged_fields()?;
        reader.finish()?;
        Ok(Some(Self {
            session_timeout_ms,
            protocols,
        }))
    }

    fn encode(value: Option<&Self>) -> Vec<u8> {
        let Some(value) = value else {
            return vec![0];
        };
        let mut writer = FlexWriter::default();
        writer.i8(1).i32(value.session_timeout_ms);
        writer.length(Some(value.protocols.len()));
        for (name, metadata) in &value.protocols {
            writer.string(name).bytes(metadata).no_tags();
        }
        writer.no_tags();
        writer.out
    }
}

impl TargetAssignmentMetadata {
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let (assignment_epoch, assignment_timestamp) =
            decode_i32_tagged_i64(bytes, "consumer group target assignment metadata value")?;
        Ok(Self {
            assignment_epoch,
            assignment_timestamp,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        encode_i32_tagged_i64(self.assignment_epoch, self.assignment_timestamp)
    }
}

pub(crate) fn read_topic_partitions(
    reader: &mut Reader<'_>,
    what: &'static str,
) -> Result<Vec<TopicPartitions>, RecordsError> {
    let count = reader.array_len()?;
    let mut topics = Vec::with_capacity(reader.capacity_for(count));
    for _ in 0..count {
        let mut topic = TopicPartitions {
            topic_id: reader.uuid()?,
            partitions: reader.i32s()?,
            assignment_epochs: Vec::new(),
        };
        for (tag, field) in reader.tagged_fields()? {
            if tag == 0 {
                topic.assignment_epochs = tag_reader(field, what).i32s()?;
            }
        }
        let epochs = topic.assignment_epochs.len();
        if epochs != 0 && epochs != topic.partitions.len() {
            return Err(RecordsError::Inconsistent(format!(
                "{what}: {epochs} assignment epochs for {} partitions",
                topic.partitions.len()
            )));
        }
        topics.push(topic);
    }
    Ok(topics)
}

pub(crate) fn write_topic_partitions(writer: &mut FlexWriter, topics: &[TopicPartitions]) {
    writer.length(Some(topics.len()));
    for topic in topics {
        writer.uuid(&topic.topic_id).i32s(&topic.partitions);
        if topic.assignment_epochs.is_empty() {
            writer.no_tags();
        } else {
            let mut field = FlexWriter::default();
            field.i32s(&topic.assignment_epochs);
            writer.tagged(&[(0, field.out)]);
        }
    }
}

impl TargetAssignmentMember {
    const WHAT: &'static str = "consumer group target assignment member value";

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let partitions = read_topic_partitions(&mut reader, Self::WHAT)?;
        reader.tagged_fields()?;
        reader.finish()?;
        Ok(Self { partitions })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut writer = value_writer();
        write_topic_partitions(&mut writer, &self.partitions);
        writer.no_tags();
        writer.out
    }
}

impl CurrentMemberAssignment {
    const WHAT: &'static str = "consumer group current member assignment value";

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let value = Self {
            member_epoch: reader.i32()?,
            previous_member_epoch: reader.i32()?,
            state: reader.i8()?,
            assigned: read_topic_partitions(&mut reader, Self::WHAT)?,
            pending_revocation: read_topic_partitions(&mut reader, Self::WHAT)?,
        };
        reader.tagged_fields()?;
        reader.finish()?;
        Ok(value)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut writer = value_writer();
        writer
            .i32(self.member_epoch)
            .i32(self.previous_member_epoch)
            .i8(self.state);
        write_topic_partitions(&mut writer, &self.assigned);
        write_topic_partitions(&mut writer, &self.pending_revocation);
        writer.no_tags();
        writer.out
    }
}

impl RegularExpressionValue {
    const WHAT: &'static str = "consumer group regular expression value";

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let value = Self {
            topics: reader.strings()?,
            version: reader.i64()?,
            timestamp: reader.i64()?,
        };
        reader.tagged_fields()?;
        reader.finish()?;
        Ok(value)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut writer = value_writer();
        writer
            .strings(&self.topics)
            .i64(self.version)
            .i64(self.timestamp)
            .no_tags();
        writer.out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn topic(id: u8, partitions: &[i32], epochs: Option<&[i32]>) -> TopicPartitions {
        TopicPartitions {
            topic_id: [id; 16],
            partitions: partitions.to_vec(),
            assignment_epochs: epochs.unwrap_or_default().to_vec(),
        }
    }

    #[test]
    fn every_value_round_trips() {
        let metadata = ConsumerGroupMetadata {
            epoch: 7,
            metadata_hash: -3,
        };
        assert_eq!(
            ConsumerGroupMetadata::decode(&metadata.encode()).unwrap(),
            metadata
        );
        let member = ConsumerMemberMetadata {
            instance_id: Some("i".into()),
            rack_id: None,
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            subscribed_topic_names: vec!["a".into(), "b".into()],
            subscribed_topic_regex: Some("t.*".into()),
            rebalance_timeout_ms: 300_000,
            server_assignor: Some("range".into()),
            classic: Some(ClassicMemberMetadata {
                session_timeout_ms: 45_000,
                protocols: vec![("range".into(), vec![0, 1, 2])],
            }),
        };
        assert_eq!(
            ConsumerMemberMetadata::decode(&member.encode()).unwrap(),
            member
        );
        let target = TargetAssignmentMetadata {
            assignment_epoch: 4,
            assignment_timestamp: 1_700_000_000_000,
        };
        assert_eq!(
            TargetAssignmentMetadata::decode(&target.encode()).unwrap(),
            target
        );
        let member_target = TargetAssignmentMember {
            partitions: vec![topic(1, &[0, 2], None), topic(2, &[], None)],
        };
        assert_eq!(
            TargetAssignmentMember::decode(&member_target.encode()).unwrap(),
            member_target
        );
        let current = CurrentMemberAssignment {
            member_epoch: 5,
            previous_member_epoch: 4,
            state: 1,
            assigned: vec![topic(1, &[0, 2], Some(&[3, 5]))],
            pending_revocation: vec![topic(2, &[1], None)],
        };
        assert_eq!(
            CurrentMemberAssignment::decode(&current.encode()).unwrap(),
            current
        );
        let regex = RegularExpressionValue {
            topics: vec!["ta".into(), "tb".into()],
            version: 9,
            timestamp: 10,
        };
        assert_eq!(
            RegularExpressionValue::decode(&regex.encode()).unwrap(),
            regex
        );
    }

    #[test]
    fn defaults_are_left_out_as_kafka_leaves_them() {
        // Version 0, epoch 7, no tagged fields: Kafka's bytes for an epoch with a zero hash.
        let bytes = ConsumerGroupMetadata {
            epoch: 7,
            metadata_hash: 0,
        }
        .encode();
        assert_eq!(bytes, [0, 0, 0, 0, 0, 7, 0]);
        let bytes = TargetAssignmentMetadata {
            assignment_epoch: 1,
            assignment_timestamp: 0,
        }
        .encode();
        assert_eq!(bytes, [0, 0, 0, 0, 0, 1, 0]);
        // A member of the consumer protocol: Kafka writes tag 0 holding a null struct.
        let bytes = ConsumerMemberMetadata {
            client_id: "c".into(),
            client_host: "h".into(),
            rebalance_timeout_ms: -1,
            ..ConsumerMemberMetadata::default()
        }
        .encode();
        let expected: &[u8] = &[
            0, 0, // version
            0, 0, // instance id, rack id: null
            2, b'c', 2, b'h', // client id and host
            1, 0, // no topic names, null regex
            0xff, 0xff, 0xff, 0xff, // rebalance timeout -1
            0,    // null server assignor
            1, 0, 1, 0, // one tagged field: tag 0, one byte, null
        ];
        assert_eq!(bytes, expected);
        assert_eq!(
            ConsumerMemberMetadata::decode(&bytes).unwrap().classic,
            None
        );
    }

    #[test]
    fn damaged_values_are_errors_not_panics() {
        let current = CurrentMemberAssignment {
            member_epoch: 5,
            previous_member_epoch: 4,
            state: 0,
            assigned: vec![topic(1, &[0, 1, 2], Some(&[1, 2, 3]))],
            pending_revocation: vec![],
        }
        .encode();
        for cut in 0..current.len() {
            assert!(CurrentMemberAssignment::decode(&current[..cut]).is_err());
        }
        let mut longer = current.clone();
        longer.push(0);
        assert!(CurrentMemberAssignment::decode(&longer).is_err());
        let mut version_1 = current;
        version_1[1] = 1;
        let error = CurrentMemberAssignment::decode(&version_1).unwrap_err();
        assert!(
            error.to_string().contains("unknown value version 1"),
            "{error}"
        );
    }
}
