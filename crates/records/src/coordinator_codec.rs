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
