//! The encodings of Kafka's coordinator records (`__consumer_offsets`, `__transaction_state`):
//! classic strings (`i16` length) and bytes (`i32` length), and in flexible versions unsigned
//! varint lengths + 1 and tagged fields. Every read checks the length first.

use crate::error::RecordsError;

pub(crate) fn put_string(out: &mut Vec<u8>, value: &str) {
    let length = i16::try_from(value.len()).unwrap_or(i16::MAX);
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(&value.as_bytes()[..length as usize]);
}

pub(crate) fn put_nullable_string(out: &mut Vec<u8>, value: Option<&str>) {
    match value {
        Some(value) => put_string(out, value),
        None => out.extend_from_slice(&(-1i16).to_be_bytes()),
    }
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, value: &[u8]) {
    out.extend_from_slice(&(value.len() as i32).to_be_bytes());
    out.extend_from_slice(value);
}

/// Reads the classic and flexible encodings; every read checks the length first.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
    what: &'static str,
    /// Flexible versions: compact lengths (unsigned varint + 1) and tagged fields.
    pub(crate) flexible: bool,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Self {
            bytes,
            position: 0,
            what,
            flexible: false,
        }
    }

    pub(crate) fn take(&mut self, count: usize) -> Result<&'a [u8], RecordsError> {
        let available = self.bytes.len() - self.position;
        if count > available {
            return Err(RecordsError::Truncated {
                what: self.what,
                needed: self.position + count,
                available: self.bytes.len(),
            });
        }
        let slice = &self.bytes[self.position..self.position + count];
        self.position += count;
        Ok(slice)
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], RecordsError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub(crate) fn i16(&mut self) -> Result<i16, RecordsError> {
        self.array().map(i16::from_be_bytes)
    }
    pub(crate) fn i32(&mut self) -> Result<i32, RecordsError> {
        self.array().map(i32::from_be_bytes)
    }
    pub(crate) fn i64(&mut self) -> Result<i64, RecordsError> {
        self.array().map(i64::from_be_bytes)
    }

    pub(crate) fn unsigned_varint(&mut self) -> Result<u32, RecordsError> {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let byte = self.take(1)?[0];
            value |= u32::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(RecordsError::InvalidLength {
            what: "unsigned varint longer than 5 bytes",
            value: i64::from(value),
        })
    }

    /// A length, or `None` for null: `i16`/`i32` with -1 for null, or in flexible versions an
    /// unsigned varint holding length + 1 with 0 for null.
    pub(crate) fn length(&mut self, wide: bool) -> Result<Option<usize>, RecordsError> {
        let length = if self.flexible {
            i64::from(self.unsigned_varint()?) - 1
        } else if wide {
            i64::from(self.i32()?)
        } else {
            i64::from(self.i16()?)
        };
        match length {
            -1 => Ok(None),
            length if length < -1 => Err(RecordsError::InvalidLength {
                what: self.what,
                value: length,
            }),
            length => Ok(Some(length as usize)),
        }
    }

    pub(crate) fn nullable_string(&mut self) -> Result<Option<String>, RecordsError> {
        let Some(length) = self.length(false)? else {
            return Ok(None);
        };
        let bytes = self.take(length)?;
        String::from_utf8(bytes.to_vec()).map(Some).map_err(|_| {
            RecordsError::Inconsistent(format!("{}: a string is not UTF-8", self.what))
        })
    }

    pub(crate) fn string(&mut self) -> Result<String, RecordsError> {
        Ok(self.nullable_string()?.unwrap_or_default())
    }

    pub(crate) fn bytes(&mut self) -> Result<Vec<u8>, RecordsError> {
        Ok(match self.length(true)? {
            Some(length) => self.take(length)?.to_vec(),
            None => Vec::new(),
        })
    }

    pub(crate) fn array_len(&mut self) -> Result<usize, RecordsError> {
        Ok(self.length(true)?.unwrap_or(0))
    }

    pub(crate) fn skip_tagged_fields(&mut self) -> Result<(), RecordsError> {
        if !self.flexible {
            return Ok(());
        }
        let count = self.unsigned_varint()?;
        for _ in 0..count {
            self.unsigned_varint()?; // tag
            let size = self.unsigned_varint()? as usize;
            self.take(size)?;
        }
        Ok(())
    }
}

/// Writes `value` as an unsigned varint (7 bits a byte, low first).
pub(crate) fn put_unsigned_varint(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

impl<'a> Reader<'a> {
    /// A 16-byte UUID (Kafka's topic ids).
    pub(crate) fn uuid(&mut self) -> Result<[u8; 16], RecordsError> {
        self.array()
    }

    pub(crate) fn i8(&mut self) -> Result<i8, RecordsError> {
        self.array().map(i8::from_be_bytes)
    }

    /// An array of `int32`, or `None` for null.
    pub(crate) fn nullable_i32s(&mut self) -> Result<Option<Vec<i32>>, RecordsError> {
        let Some(count) = self.length(true)? else {
            return Ok(None);
        };
        let mut values = Vec::with_capacity(count.min(self.remaining() / 4));
        for _ in 0..count {
            values.push(self.i32()?);
        }
        Ok(Some(values))
    }

    pub(crate) fn i32s(&mut self) -> Result<Vec<i32>, RecordsError> {
        Ok(self.nullable_i32s()?.unwrap_or_default())
    }

    pub(crate) fn strings(&mut self) -> Result<Vec<String>, RecordsError> {
        let count = self.array_len()?;
        let mut values = Vec::with_capacity(count.min(self.remaining()));
        for _ in 0..count {
            values.push(self.string()?);
        }
        Ok(values)
    }

    /// An array's length, capped for preallocation by the bytes left (each element takes at
    /// least one byte), so a damaged length cannot make a huge allocation.
    pub(crate) fn capacity_for(&self, count: usize) -> usize {
        count.min(self.remaining())
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    /// A flexible struct's tagged fields: each tag with its bytes, in the order written.
    pub(crate) fn tagged_fields(&mut self) -> Result<Vec<(u32, &'a [u8])>, RecordsError> {
        let count = self.unsigned_varint()?;
        let mut fields = Vec::new();
        for _ in 0..count {
            let tag = self.unsigned_varint()?;
            let size = self.unsigned_varint()? as usize;
            fields.push((tag, self.take(size)?));
        }
        Ok(fields)
    }

    /// Fails unless every byte was read: a value longer than its schema is damaged.
    pub(crate) fn finish(&self) -> Result<(), RecordsError> {
        if self.position == self.bytes.len() {
            Ok(())
        } else {
            Err(RecordsError::Inconsistent(format!(
                "{}: {} bytes after the end of the value",
                self.what,
                self.bytes.len() - self.position
            )))
        }
    }
}

/// Writes the flexible (compact) encodings of Kafka's coordinator records.
#[derive(Debug, Default)]
pub(crate) struct FlexWriter {
    pub(crate) out: Vec<u8>,
}

impl FlexWriter {
    pub(crate) fn i8(&mut self, value: i8) -> &mut Self {
        self.out.extend_from_slice(&value.to_be_bytes());
        self
    }
    pub(crate) fn i16(&mut self, value: i16) -> &mut Self {
        self.out.extend_from_slice(&value.to_be_bytes());
        self
    }
    pub(crate) fn i32(&mut self, value: i32) -> &mut Self {
        self.out.extend_from_slice(&value.to_be_bytes());
        self
    }
    pub(crate) fn i64(&mut self, value: i64) -> &mut Self {
        self.out.extend_from_slice(&value.to_be_bytes());
        self
    }
    pub(crate) fn uuid(&mut self, value: &[u8; 16]) -> &mut Self {
        self.out.extend_from_slice(value);
        self
    }
    /// A compact length: `length + 1`, or 0 for null.
    pub(crate) fn length(&mut self, length: Option<usize>) -> &mut Self {
        let encoded = length.map_or(0, |length| length as u32 + 1);
        put_unsigned_varint(&mut self.out, encoded);
        self
    }
    pub(crate) fn nullable_string(&mut self, value: Option<&str>) -> &mut Self {
        self.length(value.map(str::len));
        if let Some(value) = value {
            self.out.extend_from_slice(value.as_bytes());
        }
        self
    }
    pub(crate) fn string(&mut self, value: &str) -> &mut Self {
        self.nullable_string(Some(value))
    }
    pub(crate) fn bytes(&mut self, value: &[u8]) -> &mut Self {
        self.length(Some(value.len()));
        self.out.extend_from_slice(value);
        self
    }
    pub(crate) fn i32s(&mut self, values: &[i32]) -> &mut Self {
        self.length(Some(values.len()));
        for value in values {
            self.i32(*value);
        }
        self
    }
    pub(crate) fn strings(&mut self, values: &[String]) -> &mut Self {
        self.length(Some(values.len()));
        for value in values {
            self.string(value);
        }
        self
    }
    /// A tagged-fields section: the fields present, in tag order.
    pub(crate) fn tagged(&mut self, fields: &[(u32, Vec<u8>)]) -> &mut Self {
        put_unsigned_varint(&mut self.out, fields.len() as u32);
        for (tag, bytes) in fields {
            put_unsigned_varint(&mut self.out, *tag);
            put_unsigned_varint(&mut self.out, bytes.len() as u32);
            self.out.extend_from_slice(bytes);
        }
        self
    }
    pub(crate) fn no_tags(&mut self) -> &mut Self {
        self.tagged(&[])
    }
}
