//! The records of the `__share_group_state` topic, where Kafka 4.4's share coordinator keeps
//! each share partition's durable state: its start offset and the delivery state and count of
//! the in-flight records it has acknowledged, released or archived.
//!
//! | type | key                          | value                                          |
//! |------|------------------------------|------------------------------------------------|
//! | 0    | group, topic id, partition   | [`ShareSnapshot`]: the whole state             |
//! | 1    | group, topic id, partition   | [`ShareUpdate`]: batches changed since         |
//!
//! Keys are version 0, not flexible; values version 0, flexible, with the delivery-complete
//! count in tag 0 (default −1, written only when set). A tombstone is a snapshot key with a
//! null value.

use crate::consumer_group_records::{TopicIdBytes, tag_reader, value_reader, value_writer};
use crate::coordinator_codec::{FlexWriter, Reader, put_string};
use crate::error::RecordsError;

/// Which of the two record types a key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShareStateRecordType {
    Snapshot,
    Update,
}

/// The key of both types: one share partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShareStateKey {
    pub kind: ShareStateRecordType,
    pub group: String,
    pub topic_id: TopicIdBytes,
    pub partition: i32,
}

/// A range of offsets in one delivery state, with its delivery count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StateBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    /// Kafka's `RecordState` id: 0 available, 2 acknowledged, 4 archived (1, acquired, is
    /// never written).
    pub delivery_state: i8,
    pub delivery_count: i16,
}

/// Type 0: the whole state of a share partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareSnapshot {
    pub snapshot_epoch: i32,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    /// −1: not known.
    pub delivery_complete_count: i32,
    pub create_timestamp: i64,
    pub write_timestamp: i64,
    pub batches: Vec<StateBatch>,
}

/// Type 1: the batches one write changed, over the snapshot of the same epoch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareUpdate {
    pub snapshot_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    /// −1: not known.
    pub delivery_complete_count: i32,
    pub batches: Vec<StateBatch>,
}

impl ShareStateKey {
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = Reader::new(bytes, "__share_group_state key");
        let kind = match reader.i16()? {
            0 => ShareStateRecordType::Snapshot,
            1 => ShareStateRecordType::Update,
            other => {
                return Err(RecordsError::InvalidLength {
                    what: "__share_group_state record type",
                    value: i64::from(other),
                });
            }
        };
        let key = Self {
            kind,
            group: reader.string()?,
            topic_id: reader.uuid()?,
            partition: reader.i32()?,
        };
        reader.finish()?;
        Ok(key)
    }

    pub fn encode(&self) -> Vec<u8> {
        let kind: i16 = match self.kind {
            ShareStateRecordType::Snapshot => 0,
            ShareStateRecordType::Update => 1,
        };
        let mut out = kind.to_be_bytes().to_vec();
        put_string(&mut out, &self.group);
        out.extend_from_slice(&self.topic_id);
        out.extend_from_slice(&self.partition.to_be_bytes());
        out
    }
}

fn read_batches(reader: &mut Reader<'_>) -> Result<Vec<StateBatch>, RecordsError> {
    let count = reader.array_len()?;
    let mut batches = Vec::with_capacity(reader.capacity_for(count));
    for _ in 0..count {
        batches.push(StateBatch {
            first_offset: reader.i64()?,
            last_offset: reader.i64()?,
            delivery_state: reader.i8()?,
            delivery_count: reader.i16()?,
        });
        reader.tagged_fields()?;
    }
    Ok(batches)
}

fn write_batches(writer: &mut FlexWriter, batches: &[StateBatch]) {
    writer.length(Some(batches.len()));
    for batch in batches {
        writer
            .i64(batch.first_offset)
            .i64(batch.last_offset)
            .i8(batch.delivery_state)
            .i16(batch.delivery_count)
            .no_tags();
    }
}

/// The value's tagged fields: tag 0 is the delivery-complete count.
fn read_complete_count(reader: &mut Reader<'_>, what: &'static str) -> Result<i32, RecordsError> {
    let mut count = -1;
    for (tag, field) in reader.tagged_fields()? {
        if tag == 0 {
            count = tag_reader(field, what).i32()?;
        }
    }
    Ok(count)
}

fn write_complete_count(writer: &mut FlexWriter, count: i32) {
    if count == -1 {
        writer.no_tags();
    } else {
        writer.tagged(&[(0, count.to_be_bytes().to_vec())]);
    }
}

impl ShareSnapshot {
    const WHAT: &'static str = "share snapshot value";

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let mut value = Self {
            snapshot_epoch: reader.i32()?,
            state_epoch: reader.i32()?,
            leader_epoch: reader.i32()?,
            start_offset: reader.i64()?,
            delivery_complete_count: -1,
            create_timestamp: reader.i64()?,
            write_timestamp: reader.i64()?,
            batches: read_batches(&mut reader)?,
        };
        value.delivery_complete_count = read_complete_count(&mut reader, Self::WHAT)?;
        reader.finish()?;
        Ok(value)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut writer = value_writer();
        writer
            .i32(self.snapshot_epoch)
            .i32(self.state_epoch)
            .i32(self.leader_epoch)
            .i64(self.start_offset)
            .i64(self.create_timestamp)
            .i64(self.write_timestamp);
        write_batches(&mut writer, &self.batches);
        write_complete_count(&mut writer, self.delivery_complete_count);
        writer.out
    }
}

impl ShareUpdate {
    const WHAT: &'static str = "share update value";

    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = value_reader(bytes, Self::WHAT)?;
        let mut value = Self {
            snapshot_epoch: reader.i32()?,
            leader_epoch: reader.i32()?,
            start_offset: reader.i64()?,
            delivery_complete_count: -1,
            batches: read_batches(&mut reader)?,
        };
        value.delivery_complete_count = read_complete_count(&mut reader, Self::WHAT)?;
        reader.finish()?;
        Ok(value)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut writer = value_writer();
        writer
            .i32(self.snapshot_epoch)
            .i32(self.leader_epoch)
            .i64(self.start_offset);
        write_batches(&mut writer, &self.batches);
        write_complete_count(&mut writer, self.delivery_complete_count);
        writer.out
    }
}

#[cfg(test)]
mod tests;
