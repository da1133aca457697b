//! The values of the `__consumer_offsets` records Kafka 4.4 writes for streams groups
//! (KIP-1071, record types 17 and 19 to 23). Every one is value version 0, flexible: compact
//! strings and arrays, a tagged-fields section after each struct, and tagged fields written
//! only when they differ from their default, as Kafka writes them.
//!
//! | type | value                                  | tagged fields                               |
//! |------|----------------------------------------|---------------------------------------------|
//! | 17   | [`StreamsGroupMetadata`]               | 0: validated topology epoch (-1); 1: last assignment configs (null); 2, 3: description epochs (-1) |
//! | 19   | [`StreamsMemberMetadata`]              |                                             |
//! | 20   | target assignment metadata (as type 6) | 0: assignment timestamp (0)                 |
//! | 21   | [`StreamsTasks`]: a member's target    |                                             |
//! | 22   | [`StreamsCurrentAssignment`]           | per active task entry, 0: assignment epochs |
//! | 23   | [`StreamsTopology`]                    |                                             |

use crate::consumer_group_records::{
    TargetAssignmentMetadata, decode_i32_tagged_i64, encode_i32_tagged_i64, tag_reader,
    value_reader, value_writer,
};
use crate::coordinator_codec::{FlexWriter, Reader};
use crate::error::RecordsError;

/// A configuration or tag: key and value.
pub type KeyValue = (String, String);

/// Type 17: the group's epoch, the hash of its topics, and what its topology stands at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsGroupMetadata {
    pub epoch: i32,
    pub metadata_hash: i64,
    /// The topology epoch whose topics were found present and valid (-1: none).
    pub validated_topology_epoch: i32,
    /// The assignment configurations last used (null: none recorded).
    pub last_assignment_configs: Option<Vec<KeyValue>>,
    /// The topology epoch whose description a plugin holds (-1: none; -2: uncertain).
    pub stored_description_topology_epoch: i32,
    /// The topology epoch whose description a plugin refused for good (-1: none).
    pub failed_description_topology_epoch: i32,
}

impl Default for StreamsGroupMetadata {
    fn default() -> Self {
        Self {
            epoch: 0,
            metadata_hash: 0,
            validated_topology_epoch: -1,
            last_assignment_configs: None,
            stored_description_topology_epoch: -1,
            failed_description_topology_epoch: -1,
        }
    }
}

/// Type 19: a member's process, endpoint and client details.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamsMemberMetadata {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub topology_epoch: i32,
    pub process_id: String,
    /// The host and port of its interactive queries, if it serves them.
    pub user_endpoint: Option<(String, u16)>,
    pub client_tags: Vec<KeyValue>,
}

/// The partitions of one subtopology a member works on (Kafka's `TaskIds`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskIds {
    pub subtopology_id: String,
    pub partitions: Vec<i32>,
    /// Type 22 only, for active tasks: the epoch each was assigned at, as long as
    /// `partitions` (null: not kept).
    pub assignment_epochs: Option<Vec<i32>>,
}

/// Type 21: a member's target, its active, standby and warm-up tasks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamsTasks {
    pub active: Vec<TaskIds>,
    pub standby: Vec<TaskIds>,
    pub warmup: Vec<TaskIds>,
}

/// Type 22: a member's epochs, reconciliation state, tasks and tasks it must give up.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamsCurrentAssignment {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: i8,
    pub tasks: StreamsTasks,
    pub pending_revocation: StreamsTasks,
}

/// A topic a subtopology needs, as the topology declares it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicInfo {
    pub name: String,
    /// 0: no number required (always 0 for changelogs).
    pub partitions: i32,
    /// 0: the broker's default.
    pub replication_factor: i16,
    pub configs: Vec<KeyValue>,
}

/// Source topics of a subtopology that must have as many partitions as each other, by index
/// into the subtopology's lists.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CopartitionGroup {
    pub source_topics: Vec<i16>,
    pub source_topic_regex: Vec<i16>,
    pub repartition_source_topics: Vec<i16>,
}

/// One subtopology of a streams application.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subtopology {
    pub id: String,
    pub source_topics: Vec<String>,
    pub source_topic_regex: Vec<String>,
    pub state_changelog_topics: Vec<TopicInfo>,
    pub repartition_sink_topics: Vec<String>,
    pub repartition_source_topics: Vec<TopicInfo>,
    pub copartition_groups: Vec<CopartitionGroup>,
}

/// Type 23: the group's topology, as its members declared it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamsTopology {
    pub epoch: i32,
    pub subtopologies: Vec<Subtopology>,
}

/// Type 20 has type 6's layout.
pub type StreamsTargetAssignmentMetadata = TargetAssignmentMetadata;

/// Decodes type 20.
pub fn decode_target_metadata(bytes: &[u8]) -> Result<TargetAssignmentMetadata, RecordsError> {
    let (assignment_epoch, assignment_timestamp) =
        decode_i32_tagged_i64(bytes, "streams group target assignment metadata value")?;
    Ok(TargetAssignmentMetadata {
        assignment_epoch,
        assignment_timestamp,
    })
}

/// Encodes type 20.
pub fn encode_target_metadata(value: &TargetAssignmentMetadata) -> Vec<u8> {
    encode_i32_tagged_i64(value.assignment_epoch, value.assignment_timestamp)
}

/// An array of structs: its compact length, then each.
fn read_array<T>(
    reader: &mut Reader<'_>,
    mut read: impl FnMut(&mut Reader<'_>) -> Result<T, RecordsError>,
) -> Result<Vec<T>, RecordsError> {
    let count = reader.array_len()?;
    let mut items = Vec::with_capacity(reader.capacity_for(count));
    for _ in 0..count {
        items.push(read(reader)?);
    }
    Ok(items)
}

fn read_key_values(reader: &mut Reader<'_>) -> Result<Vec<KeyValue>, RecordsError> {
    read_array(reader, |reader| {
        let pair = (reader.string()?, reader.string()?);
        reader.tagged_fields()?;
        Ok(pair)
    })
}

fn write_key_values(writer: &mut FlexWriter, pairs: &[KeyValue]) {
    writer.length(Some(pairs.len()));
    for (key, value) in pairs {
        writer.string(key).string(value).no_tags();
    }
}

fn read_i16s(reader: &mut Reader<'_>) -> Result<Vec<i16>, RecordsError> {
    read_array(reader, |reader| reader.i16())
}

fn write_i16s(writer: &mut FlexWriter, values: &[i16]) {
    writer.length(Some(values.len()));
    for value in values {
        writer.i16(*value);
    }
}

impl StreamsGroupMetadata {
    const WHAT: &'static str = "streams group metadata value";

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let mut value = Self {
            epoch: reader.i32()?,
            metadata_hash: reader.i64()?,
            ..Self::default()
        };
        for (tag, field) in reader.tagged_fields()? {
            let mut field = tag_reader(field, Self::WHAT);
            match tag {
                0 => value.validated_topology_epoch = field.i32()?,
                1 => {
                    value.last_assignment_configs = match field.length(false)? {
                        None => None,
                        Some(count) => {
                            let mut pairs = Vec::with_capacity(field.capacity_for(count));
                            for _ in 0..count {
                                pairs.push((field.string()?, field.string()?));
                                field.tagged_fields()?;
                            }
                            Some(pairs)
                        }
                    }
                }
                2 => value.stored_description_topology_epoch = field.i32()?,
                3 => value.failed_description_topology_epoch = field.i32()?,
                _ => {}
            }
        }
        reader.finish()?;
        Ok(value)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut writer = value_writer();
        writer.i32(self.epoch).i64(self.metadata_hash);
        let mut tags = Vec::new();
        if self.validated_topology_epoch != -1 {
            tags.push((0, self.validated_topology_epoch.to_be_bytes().to_vec()));
        }
        if let Some(configs) = &self.last_assignment_configs {
            let mut field = FlexWriter::default();
            write_key_values(&mut field, configs);
            tags.push((1, field.out));
        }
        if self.stored_description_topology_epoch != -1 {
            tags.push((
                2,
                self.stored_description_topology_epoch
                    .to_be_bytes()
                    .to_vec(),
            ));
        }
        if self.failed_description_topology_epoch != -1 {
            tags.push((
                3,
                self.failed_description_topology_epoch
                    .to_be_bytes()
                    .to_vec(),
            ));
        }
        writer.tagged(&tags);
        writer.out
    }
}

impl StreamsMemberMetadata {
    const WHAT: &'static str = "streams group member metadata value";

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let mut value = Self {
            instance_id: reader.nullable_string()?,
            rack_id: reader.nullable_string()?,
            client_id: reader.string()?,
            client_host: reader.string()?,
            rebalance_timeout_ms: reader.i32()?,
            topology_epoch: reader.i32()?,
            process_id: reader.string()?,
            ..Self::default()
        };
        // A nullable struct: -1 when absent, 1 before the struct.
        if reader.i8()? >= 0 {
            let host = reader.string()?;
            let port = u16::from_be_bytes(reader.array()?);
            reader.tagged_fields()?;
            value.user_endpoint = Some((host, port));
        }
        value.client_tags = read_key_values(&mut reader)?;
        reader.tagged_fields()?;
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
            .i32(self.rebalance_timeout_ms)
            .i32(self.topology_epoch)
            .string(&self.process_id);
        match &self.user_endpoint {
            None => {
                writer.i8(-1);
            }
            Some((host, port)) => {
                writer.i8(1).string(host);
                writer.out.extend_from_slice(&port.to_be_bytes());
                writer.no_tags();
            }
        }
        write_key_values(&mut writer, &self.client_tags);
        writer.no_tags();
        writer.out
    }
}

fn read_task_ids(
    reader: &mut Reader<'_>,
    what: &'static str,
) -> Result<Vec<TaskIds>, RecordsError> {
    read_array(reader, |reader| {
        let mut task = TaskIds {
            subtopology_id: reader.string()?,
            partitions: reader.i32s()?,
            assignment_epochs: None,
        };
        for (tag, field) in reader.tagged_fields()? {
            if tag == 0 {
                task.assignment_epochs = tag_reader(field, what).nullable_i32s()?;
            }
        }
        if let Some(epochs) = &task.assignment_epochs
            && epochs.len() != task.partitions.len()
        {
            return Err(RecordsError::Inconsistent(format!(
                "{what}: {} assignment epochs for {} partitions of subtopology {}",
                epochs.len(),
                task.partitions.len(),
                task.subtopology_id
            )));
        }
        Ok(task)
    })
}

fn write_task_ids(writer: &mut FlexWriter, tasks: &[TaskIds]) {
    writer.length(Some(tasks.len()));
    for task in tasks {
        writer.string(&task.subtopology_id).i32s(&task.partitions);
        match &task.assignment_epochs {
            None => writer.no_tags(),
            Some(epochs) => {
                let mut field = FlexWriter::default();
                field.i32s(epochs);
                writer.tagged(&[(0, field.out)])
            }
        };
    }
}

impl StreamsTasks {
    const WHAT: &'static str = "streams group target assignment member value";

    fn read(reader: &mut Reader<'_>, what: &'static str) -> Result<Self, RecordsError> {
        Ok(Self {
            active: read_task_ids(reader, what)?,
            standby: read_task_ids(reader, what)?,
            warmup: read_task_ids(reader, what)?,
        })
    }

    fn write(&self, writer: &mut FlexWriter) {
        write_task_ids(writer, &self.active);
        write_task_ids(writer, &self.standby);
        write_task_ids(writer, &self.warmup);
    }

    /// Decodes type 21.
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let value = Self::read(&mut reader, Self::WHAT)?;
        reader.tagged_fields()?;
        reader.finish()?;
        Ok(value)
    }

    /// Encodes type 21.
    pub fn encode(&self) -> Vec<u8> {
        let mut writer = value_writer();
        self.write(&mut writer);
        writer.no_tags();
        writer.out
    }
}

impl StreamsCurrentAssignment {
    const WHAT: &'static str = "streams group current member assignment value";

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let value = Self {
            member_epoch: reader.i32()?,
            previous_member_epoch: reader.i32()?,
            state: reader.i8()?,
            tasks: StreamsTasks::read(&mut reader, Self::WHAT)?,
            pending_revocation: StreamsTasks::read(&mut reader, Self::WHAT)?,
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
        self.tasks.write(&mut writer);
        self.pending_revocation.write(&mut writer);
        writer.no_tags();
        writer.out
    }
}

fn read_topic_infos(reader: &mut Reader<'_>) -> Result<Vec<TopicInfo>, RecordsError> {
    read_array(reader, |reader| {
        let topic = TopicInfo {
            name: reader.string()?,
            partitions: reader.i32()?,
            replication_factor: reader.i16()?,
            configs: read_key_values(reader)?,
        };
        reader.tagged_fields()?;
        Ok(topic)
    })
}

fn write_topic_infos(writer: &mut FlexWriter, topics: &[TopicInfo]) {
    writer.length(Some(topics.len()));
    for topic in topics {
        writer
            .string(&topic.name)
            .i32(topic.partitions)
            .i16(topic.replication_factor);
        write_key_values(writer, &topic.configs);
        writer.no_tags();
    }
}

impl StreamsTopology {
    const WHAT: &'static str = "streams group topology value";

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let epoch = reader.i32()?;
        let subtopologies = read_array(&mut reader, |reader| {
            let subtopology = Subtopology {
                id: reader.string()?,
                source_topics: reader.strings()?,
                source_topic_regex: reader.strings()?,
                state_changelog_topics: read_topic_infos(reader)?,
                repartition_sink_topics: reader.strings()?,
                repartition_source_topics: read_topic_infos(reader)?,
                copartition_groups: read_array(reader, |reader| {
                    let group = CopartitionGroup {
                        source_topics: read_i16s(reader)?,
                        source_topic_regex: read_i16s(reader)?,
                        repartition_source_topics: read_i16s(reader)?,
                    };
                    reader.tagged_fields()?;
                    Ok(group)
                })?,
            };
            reader.tagged_fields()?;
            Ok(subtopology)
        })?;
        reader.tagged_fields()?;
        reader.finish()?;
        Ok(Self {
            epoch,
            subtopologies,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut writer = value_writer();
        writer.i32(self.epoch);
        writer.length(Some(self.subtopologies.len()));
        for subtopology in &self.subtopologies {
            writer
                .string(&subtopology.id)
                .strings(&subtopology.source_topics)
                .strings(&subtopology.source_topic_regex);
            write_topic_infos(&mut writer, &subtopology.state_changelog_topics);
            writer.strings(&subtopology.repartition_sink_topics);
            write_topic_infos(&mut writer, &subtopology.repartition_source_topics);
            writer.length(Some(subtopology.copartition_groups.len()));
            for group in &subtopology.copartition_groups {
                write_i16s(&mut writer, &group.source_topics);
                write_i16s(&mut writer, &group.source_topic_regex);
                write_i16s(&mut writer, &group.repartition_source_topics);
                writer.no_tags();
            }
            writer.no_tags();
        }
        writer.no_tags();
        writer.out
    }
}

#[cfg(test)]
mod tests;
