//! Legacy message formats, magic 0 (Kafka < 0.10) and magic 1 (0.10.x). ferrolog reads them so
//! old data directories open; it never writes them.
//!
//! A log entry is `offset i64`, `size i32`, then one message of `size` bytes:
//!
//! | offset in entry | size | field        | notes                                           |
//! |-----------------|------|--------------|-------------------------------------------------|
//! | 12              | 4    | `crc`        | CRC-32 (IEEE) of bytes 16..end                  |
//! | 16              | 1    | `magic`      | 0 or 1                                          |
//! | 17              | 1    | `attributes` | bits 0–2 codec; bit 3 LogAppendTime (magic 1)   |
//! | 18              | 8    | `timestamp`  | magic 1 only                                    |
//! | 18 / 26         | 4    | `keyLength`  | −1 null, then the key                           |
//! | …               | 4    | `valueLength`| −1 null, then the value                         |
//!
//! A compressed message (a "wrapper") holds in its value a compressed stream of inner entries.
//! The wrapper's offset is the offset of its last inner message; magic 1 inner offsets are
//! relative (0, 1, …), magic 0 inner offsets absolute.

use std::borrow::Cow;

use crate::batch::{LOG_OVERHEAD, NO_TIMESTAMP, TimestampType};
use crate::be;
use crate::compression::Compression;
use crate::error::RecordsError;
use crate::record::Record;

/// Byte offsets within a legacy log entry.
pub mod field {
    pub const OFFSET: usize = 0;
    pub const SIZE: usize = 8;
    pub const CRC: usize = 12;
    pub const MAGIC: usize = 16;
    pub const ATTRIBUTES: usize = 17;
    pub const TIMESTAMP_V1: usize = 18;
    pub const KEY_LENGTH_V0: usize = 18;
    pub const KEY_LENGTH_V1: usize = 26;
}

/// Smallest message (after the 12-byte log overhead) of magic 0: crc, magic, attributes and
/// two null lengths.
pub const MESSAGE_OVERHEAD_V0: usize = 14;
/// Smallest message of magic 1 (adds the timestamp).
pub const MESSAGE_OVERHEAD_V1: usize = 22;

/// A message's key and value, each possibly null.
pub type KeyValue<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// A borrowed view of one legacy log entry (overhead and message).
#[derive(Debug, Clone, Copy)]
pub struct LegacyEntry<'a> {
    bytes: &'a [u8],
}

impl<'a> LegacyEntry<'a> {
    /// Views the legacy entry at the start of `buf`.
    pub fn parse_prefix(buf: &'a [u8]) -> Result<Self, RecordsError> {
        if buf.len() <= field::ATTRIBUTES {
            return Err(RecordsError::Truncated {
                what: "legacy message header",
                needed: field::ATTRIBUTES + 1,
                available: buf.len(),
            });
        }
        let magic = buf[field::MAGIC];
        let minimum = match magic {
            0 => MESSAGE_OVERHEAD_V0,
            1 => MESSAGE_OVERHEAD_V1,
            other => return Err(RecordsError::UnsupportedMagic(other)),
        };
        let size = be::i32_at(buf, field::SIZE);
        if size < minimum as i32 {
            return Err(RecordsError::InvalidLength {
                what: "legacy message size",
                value: i64::from(size),
            });
        }
        let total = LOG_OVERHEAD + size as usize;
        if buf.len() < total {
            return Err(RecordsError::Truncated {
                what: "legacy message",
                needed: total,
                available: buf.len(),
            });
        }
        Ok(Self {
            bytes: &buf[..total],
        })
    }

    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    pub fn size_in_bytes(&self) -> usize {
        self.bytes.len()
    }
    /// The entry's offset: the message's own, or for a wrapper the last inner message's.
    pub fn offset(&self) -> i64 {
        be::i64_at(self.bytes, field::OFFSET)
    }
    pub fn magic(&self) -> u8 {
        self.bytes[field::MAGIC]
    }
    pub fn attributes(&self) -> u8 {
        self.bytes[field::ATTRIBUTES]
    }
    pub fn stored_crc(&self) -> u32 {
        be::u32_at(self.bytes, field::CRC)
    }
    pub fn computed_crc(&self) -> u32 {
        crc32fast::hash(&self.bytes[field::MAGIC..])
    }
    pub fn compression(&self) -> Result<Compression, RecordsError> {
        Compression::from_id(self.attributes() & 0x07)
    }
    pub fn timestamp_type(&self) -> TimestampType {
        if self.magic() >= 1 && self.attributes() & 0x08 != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }
    /// The message timestamp (−1 for magic 0).
    pub fn timestamp(&self) -> i64 {
        if self.magic() == 0 {
            NO_TIMESTAMP
        } else {
            be::i64_at(self.bytes, field::TIMESTAMP_V1)
        }
    }

    /// Key and value; an error if their lengths do not fit the message.
    pub fn key_value(&self) -> Result<KeyValue<'a>, RecordsError> {
        let start = if self.magic() == 0 {
            field::KEY_LENGTH_V0
        } else {
            field::KEY_LENGTH_V1
        };
        let (key, after_key) = nullable_bytes(self.bytes, start, "key")?;
        let (value, end) = nullable_bytes(self.bytes, after_key, "value")?;
        if end != self.bytes.len() {
            return Err(RecordsError::Inconsistent(format!(
                "legacy message of {} bytes ends after {end}",
                self.bytes.len()
            )));
        }
        Ok((key, value))
    }

    /// Checks the CRC-32, the codec and the key/value layout.
    pub fn validate(&self) -> Result<(), RecordsError> {
        let (stored, computed) = (self.stored_crc(), self.computed_crc());
        if stored != computed {
            return Err(RecordsError::ChecksumMismatch { stored, computed });
        }
        self.compression()?;
        self.key_value()?;
        Ok(())
    }

    /// The messages this entry holds: itself, or a wrapper's decompressed inner messages.
    pub fn records(
        &self,
        max_decompressed_bytes: usize,
    ) -> Result<LegacyRecords<'a>, RecordsError> {
        let (key, value) = self.key_value()?;
        let codec = self.compression()?;
        if codec == Compression::None {
            return Ok(LegacyRecords {
                outer: *self,
                inner: None,
                single: (key, value),
            });
        }
        let compressed = value.unwrap_or_default();
        let inner = if codec == Compression::Lz4 && self.magic() == 0 {
            let repaired = repair_kafka_08_lz4_header(compressed);
            codec.decompress(&repaired, max_decompressed_bytes)?
        } else {
            codec.decompress(compressed, max_decompressed_bytes)?
        };
        Ok(LegacyRecords {
            outer: *self,
            inner: Some(Cow::Owned(inner)),
            single: (None, None),
        })
    }
}

/// Kafka 0.8 and 0.9 wrote LZ4 frames for magic 0 with a header checksum computed over the
/// frame magic as well as the descriptor; Kafka's own reader accepts it for magic 0. Returns the
/// frame with the checksum the format specifies, so a standard decoder takes it.
fn repair_kafka_08_lz4_header(frame: &[u8]) -> Cow<'_, [u8]> {
    const MAGIC_LEN: usize = 4;
    const CONTENT_SIZE_FLAG: u8 = 0x08;
    let Some(&flags) = frame.get(MAGIC_LEN) else {
        return Cow::Borrowed(frame);
    };
    let descriptor_end = MAGIC_LEN + 2 + if flags & CONTENT_SIZE_FLAG != 0 { 8 } else { 0 };
    if frame.len() <= descriptor_end {
        return Cow::Borrowed(frame);
    }
    let broken = (twox_hash::XxHash32::oneshot(0, &frame[..descriptor_end]) >> 8) as u8;
    if frame[descriptor_end] != broken {
        return Cow::Borrowed(frame);
    }
    let mut repaired = frame.to_vec();
    repaired[descriptor_end] =
        (twox_hash::XxHash32::oneshot(0, &frame[MAGIC_LEN..descriptor_end]) >> 8) as u8;
    Cow::Owned(repaired)
}

fn nullable_bytes<'a>(
    bytes: &'a [u8],
    at: usize,
    what: &'static str,
) -> Result<(Option<&'a [u8]>, usize), RecordsError> {
    if at + 4 > bytes.len() {
        return Err(RecordsError::Truncated {
            what,
            needed: at + 4,
            available: bytes.len(),
        });
    }
    let len = be::i32_at(bytes, at);
    let start = at + 4;
    match len {
        -1 => Ok((None, start)),
        len if len < 0 => Err(RecordsError::InvalidLength {
            what,
            value: i64::from(len),
        }),
        len => {
            let end = start + len as usize;
            if end > bytes.len() {
                return Err(RecordsError::Truncated {
                    what,
                    needed: end,
                    available: bytes.len(),
                });
            }
            Ok((Some(&bytes[start..end]), end))
        }
    }
}

/// The messages of one legacy entry.
#[derive(Debug)]
pub struct LegacyRecords<'a> {
    outer: LegacyEntry<'a>,
    inner: Option<Cow<'a, [u8]>>,
    single: KeyValue<'a>,
}

impl LegacyRecords<'_> {
    /// Every message with its absolute offset and timestamp.
    pub fn to_vec(&self) -> Result<Vec<Record<'_>>, RecordsError> {
        let outer = &self.outer;
        let Some(inner) = &self.inner else {
            let (key, value) = self.single;
            return Ok(vec![Record::legacy(
                outer.offset(),
                outer.timestamp(),
                key,
                value,
            )]);
        };
        let mut entries = Vec::new();
        let mut rest: &[u8] = inner;
        while !rest.is_empty() {
            let entry =
                LegacyEntry::parse_prefix(rest).map_err(|error| RecordsError::InvalidRecord {
                    index: entries.len(),
                    reason: format!("inner message: {error}"),
                })?;
            entry
                .validate()
                .map_err(|error| RecordsError::InvalidRecord {
                    index: entries.len(),
                    reason: format!("inner message: {error}"),
                })?;
            rest = &rest[entry.size_in_bytes()..];
            entries.push(entry);
        }
        // Magic 1 inner offsets are relative to a base derived from the wrapper's offset. A
        // wrapper no broker has assigned yet (a producer's) gives a negative base; as in Kafka,
        // the inner offsets are then taken as they are.
        let last_inner = entries.last().map_or(0, LegacyEntry::offset);
        let absolute_base = if outer.magic() == 0 {
            -1
        } else {
            outer.offset() - last_inner
        };
        let mut records = Vec::with_capacity(entries.len());
        for entry in &entries {
            let offset = if absolute_base >= 0 {
                absolute_base + entry.offset()
            } else {
                entry.offset()
            };
            let timestamp = if outer.timestamp_type() == TimestampType::LogAppendTime {
                outer.timestamp()
            } else {
                entry.timestamp()
            };
            let (key, value) = entry.key_value()?;
            records.push(Record::legacy(offset, timestamp, key, value));
        }
        Ok(records)
    }
}

/// Builds a legacy entry. Only tests and tools use it: ferrolog never writes magic 0 or 1.
pub fn build_legacy_entry(
    offset: i64,
    magic: u8,
    attributes: u8,
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Vec<u8> {
    let mut message = vec![magic, attributes];
    if magic >= 1 {
        message.extend_from_slice(&timestamp.to_be_bytes());
    }
    for part in [key, value] {
        match part {
            None => message.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(bytes) => {
                message.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                message.extend_from_slice(bytes);
            }
        }
    }
    let crc = crc32fast::hash(&message);
    let mut out = Vec::with_capacity(LOG_OVERHEAD + 4 + message.len());
    out.extend_from_slice(&offset.to_be_bytes());
    out.extend_from_slice(&((4 + message.len()) as i32).to_be_bytes());
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&message);
    out
}
