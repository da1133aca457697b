//! The values of the `__consumer_offsets` records Kafka 4.4 writes for share groups (KIP-932,
//! record types 10 to 15). Every one is value version 0, flexible.
//!
//! | type | value                                          | tagged fields              |
//! |------|------------------------------------------------|----------------------------|
//! | 10   | [`ShareMemberMetadata`]                        |                            |
//! | 11   | [`ShareGroupMetadata`]: epoch and metadata hash (not tagged, unlike type 3) | |
//! | 12   | target assignment metadata (type 6's layout)   | 0: assignment timestamp (0) |
//! | 13   | a member's target (type 7's layout)            |                            |
//! | 14   | [`ShareCurrentAssignment`]                     |                            |
//! | 15   | [`ShareStatePartitions`]: share state initializing, initialized, deleting | |

use crate::consumer_group_records::{
    TopicIdBytes, TopicPartitions, read_topic_partitions, value_reader, value_writer,
    write_topic_partitions,
};
use crate::coordinator_codec::{FlexWriter, Reader};
use crate::error::RecordsError;

/// Type 10: a member's subscription and who it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareMemberMetadata {
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
}

/// Type 11: the group epoch and the hash of its subscribed topics' metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareGroupMetadata {
    pub epoch: i32,
    pub metadata_hash: i64,
}

/// A topic's partitions, by topic id (types 13 and 14).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareTopicPartitions {
    pub topic_id: TopicIdBytes,
    pub partitions: Vec<i32>,
}

/// Type 14: a member's epochs, state and assigned partitions (share groups revoke nothing, so
/// there is no list pending revocation).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareCurrentAssignment {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    /// Kafka's `MemberState`: 0 stable.
    pub state: i8,
    pub assigned: Vec<ShareTopicPartitions>,
}

/// A topic in type 15: its id, its name and (but for deleting topics) its partitions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StateTopic {
    pub topic_id: TopicIdBytes,
    pub topic_name: String,
    pub partitions: Vec<i32>,
}

/// Type 15: the partitions whose share state is being initialized, those initialized (only
/// these are assigned), and the topics whose share state is being deleted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareStatePartitions {
    pub initializing: Vec<StateTopic>,
    pub initialized: Vec<StateTopic>,
    /// Only id and name are kept for these.
    pub deleting: Vec<StateTopic>,
}

impl ShareMemberMetadata {
    const WHAT: &'static str = "share group member metadata value";

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let value = Self {
            rack_id: reader.nullable_string()?,
            client_id: reader.string()?,
            client_host: reader.string()?,
            subscribed_topic_names: reader.strings()?,
        };
        reader.tagged_fields()?;
        reader.finish()?;
        Ok(value)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut writer = value_writer();
        writer
            .nullable_string(self.rack_id.as_deref())
            .string(&self.client_id)
            .string(&self.client_host)
            .strings(&self.subscribed_topic_names)
            .no_tags();
        writer.out
    }
}

impl ShareGroupMetadata {
    const WHAT: &'static str = "share group metadata value";

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let value = Self {
            epoch: reader.i32()?,
            metadata_hash: reader.i64()?,
        };
        reader.tagged_fields()?;
        reader.finish()?;
        Ok(value)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut writer = value_writer();
        writer.i32(self.epoch).i64(self.metadata_hash).no_tags();
        writer.out
    }
}

/// A share group's topic partitions: laid out as a consumer group's (types 7 and 8) without
/// their tagged assignment epochs.
fn read_topics(
    reader: &mut Reader<'_>,
    what: &'static str,
) -> Result<Vec<ShareTopicPartitions>, RecordsError> {
    Ok(read_topic_partitions(reader, what)?
        .into_iter()
        .map(|topic| ShareTopicPartitions {
            topic_id: topic.topic_id,
            partitions: topic.partitions,
        })
        .collect())
}

fn write_topics(writer: &mut FlexWriter, topics: &[ShareTopicPartitions]) {
    let topics: Vec<TopicPartitions> = topics
        .iter()
        .map(|topic| TopicPartitions {
            topic_id: topic.topic_id,
            partitions: topic.partitions.clone(),
            assignment_epochs: Vec::new(),
        })
        .collect();
    write_topic_partitions(writer, &topics);
}

/// Type 13, a member's target: its partitions.
pub fn decode_target_member(bytes: &[u8]) -> Result<Vec<ShareTopicPartitions>, RecordsError> {
    const WHAT: &str = "share group target assignment member value";
    let mut reader = value_reader(bytes, WHAT)?;
    let topics = read_topics(&mut reader, WHAT)?;
    reader.tagged_fields()?;
    reader.finish()?;
    Ok(topics)
}

pub fn encode_target_member(topics: &[ShareTopicPartitions]) -> Vec<u8> {
    let mut writer = value_writer();
    write_topics(&mut writer, topics);
    writer.no_tags();
    writer.out
}

impl ShareCurrentAssignment {
    const WHAT: &'static str = "share group current member assignment value";

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let value = Self {
            member_epoch: reader.i32()?,
            previous_member_epoch: reader.i32()?,
            state: reader.i8()?,
            assigned: read_topics(&mut reader, Self::WHAT)?,
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
        write_topics(&mut writer, &self.assigned);
        writer.no_tags();
        writer.out
    }
}

fn read_state_topics(
    reader: &mut Reader<'_>,
    with_partitions: bool,
) -> Result<Vec<StateTopic>, RecordsError> {
    let count = reader.array_len()?;
    let mut topics = Vec::with_capacity(reader.capacity_for(count));
    for _ in 0..count {
        topics.push(StateTopic {
            topic_id: reader.uuid()?,
            topic_name: reader.string()?,
            partitions: if with_partitions {
                reader.i32s()?
            } else {
                Vec::new()
            },
        });
        reader.tagged_fields()?;
    }
    Ok(topics)
}

fn write_state_topics(writer: &mut FlexWriter, topics: &[StateTopic], with_partitions: bool) {
    writer.length(Some(topics.len()));
    for topic in topics {
        writer.uuid(&topic.topic_id).string(&topic.topic_name);
        if with_partitions {
            writer.i32s(&topic.partitions);
        }
        writer.no_tags();
    }
}

impl ShareStatePartitions {
    const WHAT: &'static str = "share group state partition metadata value";

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let value = Self {
            initializing: read_state_topics(&mut reader, true)?,
            initialized: read_state_topics(&mut reader, true)?,
            deleting: read_state_topics(&mut reader, false)?,
        };
        reader.tagged_fields()?;
        reader.finish()?;
        Ok(value)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut writer = value_writer();
        write_state_topics(&mut writer, &self.initializing, true);
        write_state_topics(&mut writer, &self.initialized, true);
        write_state_topics(&mut writer, &self.deleting, false);
        writer.no_tags();
        writer.out
    }
}

#[cfg(test)]
mod tests;
