//! Records of format v2 inside a batch (after decompression). Varints are zig-zag (see
//! [`crate::varint`]).
//!
//! | field            | encoding                                  |
//! |------------------|-------------------------------------------|
//! | `length`         | varint: bytes of everything below         |
//! | `attributes`     | i8, unused (0)                            |
//! | `timestampDelta` | varlong, from the batch's `baseTimestamp` |
//! | `offsetDelta`    | varint, from the batch's `baseOffset`     |
//! | `keyLength`      | varint, −1 for a null key                 |
//! | `key`            | bytes                                     |
//! | `valueLength`    | varint, −1 for a null value (tombstone)   |
//! | `value`          | bytes                                     |
//! | `headerCount`    | varint                                    |
//! | headers          | per header: `keyLength` varint + UTF-8 key, `valueLength` varint (−1 null) + value |

use crate::error::RecordsError;
use crate::varint::{read_varint, read_varlong};

/// One record, borrowing its key, value and headers from the batch (or its decompressed bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'b> {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<&'b [u8]>,
    pub value: Option<&'b [u8]>,
    /// The encoded headers; iterate with [`Record::headers`].
    headers: &'b [u8],
    header_count: i32,
}

/// One record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'b> {
    pub key: &'b [u8],
    pub value: Option<&'b [u8]>,
}

impl<'b> Record<'b> {
    pub(crate) fn legacy(
        offset: i64,
        timestamp: i64,
        key: Option<&'b [u8]>,
        value: Option<&'b [u8]>,
    ) -> Self {
        Self {
            offset,
            timestamp,
            key,
            value,
            headers: &[],
            header_count: 0,
        }
    }

    /// The record's headers, in order. Already validated when the record was parsed.
    pub fn headers(&self) -> impl Iterator<Item = Header<'b>> + 'b {
        let mut rest = self.headers;
        (0..self.header_count).map_while(move |_| {
            let (header, used) = parse_header(rest).ok()?;
            rest = &rest[used..];
            Some(header)
        })
    }

    pub fn header_count(&self) -> usize {
        usize::try_from(self.header_count).unwrap_or(0)
    }
}

/// A cursor over a byte slice that turns every shortfall into a message.
struct Cursor<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl<'b> Cursor<'b> {
    fn varint(&mut self, what: &str) -> Result<i32, String> {
        let (value, used) =
            read_varint(&self.bytes[self.at..]).ok_or_else(|| format!("bad varint for {what}"))?;
        self.at += used;
        Ok(value)
    }
    fn varlong(&mut self, what: &str) -> Result<i64, String> {
        let (value, used) = read_varlong(&self.bytes[self.at..])
            .ok_or_else(|| format!("bad varlong for {what}"))?;
        self.at += used;
        Ok(value)
    }
    fn take(&mut self, len: usize, what: &str) -> Result<&'b [u8], String> {
        let end = self
            .at
            .checked_add(len)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| format!("{what} of {len} bytes runs past the record"))?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }
    fn nullable_bytes(&mut self, what: &str) -> Result<Option<&'b [u8]>, String> {
        let len = self.varint(what)?;
        match len {
            -1 => Ok(None),
            len if len < 0 => Err(format!("{what} length {len}")),
            len => self.take(len as usize, what).map(Some),
        }
    }
}

fn parse_header(bytes: &[u8]) -> Result<(Header<'_>, usize), String> {
    let mut cursor = Cursor { bytes, at: 0 };
    let key = cursor
        .nullable_bytes("header key")?
        .ok_or_else(|| "null header key".to_owned())?;
    std::str::from_utf8(key).map_err(|_| "header key is not UTF-8".to_owned())?;
    let value = cursor.nullable_bytes("header value")?;
    Ok((Header { key, value }, cursor.at))
}

/// Parses one record from the start of `bytes`; returns it and the bytes it took.
fn parse_record(
    bytes: &[u8],
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
) -> Result<(Record<'_>, usize), String> {
    let (length, prefix) =
        read_varint(bytes).ok_or_else(|| "bad varint for record length".to_owned())?;
    if length < 0 {
        return Err(format!("record length {length}"));
    }
    let end = prefix + length as usize;
    if end > bytes.len() {
        return Err(format!(
            "record of {length} bytes runs past the end of the batch ({} bytes left)",
            bytes.len() - prefix
        ));
    }
    let mut cursor = Cursor {
        bytes: &bytes[..end],
        at: prefix,
    };
    cursor.take(1, "attributes")?;
    let timestamp_delta = cursor.varlong("timestamp delta")?;
    let offset_delta = cursor.varint("offset delta")?;
    let key = cursor.nullable_bytes("key")?;
    let value = cursor.nullable_bytes("value")?;
    let header_count = cursor.varint("header count")?;
    if header_count < 0 {
        return Err(format!("header count {header_count}"));
    }
    let headers_start = cursor.at;
    for _ in 0..header_count {
        let (_, used) = parse_header(&cursor.bytes[cursor.at..])?;
        cursor.at += used;
    }
    if cursor.at != end {
        return Err(format!(
            "record length says {length} bytes but its fields take {}",
            cursor.at - prefix
        ));
    }
    let record = Record {
        offset: base_offset.wrapping_add(i64::from(offset_delta)),
        timestamp: log_append_time.unwrap_or_else(|| base_timestamp.wrapping_add(timestamp_delta)),
        key,
        value,
        headers: &bytes[headers_start..end],
        header_count,
    };
    Ok((record, end))
}

/// Iterates over the records of a v2 batch. Yields at most `count` records; a malformed record
/// is yielded as an error and ends the iteration, as do bytes left over after the last record.
#[derive(Debug)]
pub struct RecordIter<'b> {
    rest: &'b [u8],
    index: usize,
    count: usize,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
    failed: bool,
}

impl<'b> RecordIter<'b> {
    pub(crate) fn new(
        data: &'b [u8],
        count: i32,
        base_offset: i64,
        base_timestamp: i64,
        log_append_time: Option<i64>,
    ) -> Self {
        Self {
            rest: data,
            index: 0,
            count: usize::try_from(count).unwrap_or(0),
            base_offset,
            base_timestamp,
            log_append_time,
            failed: false,
        }
    }
}

impl<'b> Iterator for RecordIter<'b> {
    type Item = Result<Record<'b>, RecordsError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.index == self.count {
            if self.rest.is_empty() {
                return None;
            }
            self.failed = true;
            return Some(Err(RecordsError::Inconsistent(format!(
                "{} bytes follow the last of {} records",
                self.rest.len(),
                self.count
            ))));
        }
        let index = self.index;
        match parse_record(
            self.rest,
            self.base_offset,
            self.base_timestamp,
            self.log_append_time,
        ) {
            Ok((record, used)) => {
                self.rest = &self.rest[used..];
                self.index += 1;
                Some(Ok(record))
            }
            Err(reason) => {
                self.failed = true;
                Some(Err(RecordsError::InvalidRecord { index, reason }))
            }
        }
    }
}

/// What validation needs of one record, read without building a [`Record`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordSummary {
    pub offset_delta: i32,
    pub timestamp_delta: i64,
    pub has_key: bool,
}

/// Walks the framing of `count` uncompressed records, checking every length as
/// [`RecordIter`] does, and calls `visit(index, summary)` for each. Faster than building
/// records when only offsets, timestamps and key presence matter (append validation).
pub fn walk_record_summaries<E>(
    data: &[u8],
    count: i32,
    mut visit: impl FnMut(usize, RecordSummary) -> Result<(), E>,
) -> Result<Result<(), E>, RecordsError> {
    let invalid = |index: usize, reason: String| RecordsError::InvalidRecord { index, reason };
    let count = usize::try_from(count).unwrap_or(0);
    let mut at = 0usize;
    for index in 0..count {
        let rest = &data[at..];
        let (length, prefix) = read_varint(rest)
            .ok_or_else(|| invalid(index, "bad varint for record length".into()))?;
        let end = usize::try_from(length)
            .ok()
            .map(|length| prefix + length)
            .filter(|end| *end <= rest.len())
            .ok_or_else(|| {
                invalid(
                    index,
                    format!("record length {length} runs past the end of the batch"),
                )
            })?;
        let record = &rest[..end];
        // Every read is bounded by `record`, so a lying length is caught, never overrun.
        let mut position = prefix + 1; // attributes
        let varint_at = |position: &mut usize, what: &str| {
            let (value, used) = record
                .get(*position..)
                .and_then(read_varint)
                .ok_or_else(|| invalid(index, format!("bad varint for {what}")))?;
            *position += used;
            Ok::<i32, RecordsError>(value)
        };
        let (timestamp_delta, used) = record
            .get(position..)
            .and_then(read_varlong)
            .ok_or_else(|| invalid(index, "bad varint for timestamp delta".into()))?;
        position += used;
        let offset_delta = varint_at(&mut position, "offset delta")?;
        let skip = |position: &mut usize, what: &str| -> Result<bool, RecordsError> {
            let length = varint_at(position, what)?;
            match length {
                -1 => Ok(false),
                length if length < 0 => Err(invalid(index, format!("{what} {length}"))),
                length => {
                    *position += length as usize;
                    if *position > end {
                        return Err(invalid(
                            index,
                            format!("{what} {length} runs past the record"),
                        ));
                    }
                    Ok(true)
                }
            }
        };
        let has_key = skip(&mut position, "key length")?;
        skip(&mut position, "value length")?;
        let header_count = varint_at(&mut position, "header count")?;
        if header_count < 0 {
            return Err(invalid(index, format!("header count {header_count}")));
        }
        for _ in 0..header_count {
            let (_, used) = record
                .get(position..)
                .ok_or_else(|| invalid(index, "headers run past the record".into()))
                .and_then(|rest| parse_header(rest).map_err(|reason| invalid(index, reason)))?;
            position += used;
        }
        if position != end {
            return Err(invalid(
                index,
                format!(
                    "record length says {length} bytes but its fields take {}",
                    position - prefix
                ),
            ));
        }
        if let Err(error) = visit(
            index,
            RecordSummary {
                offset_delta,
                timestamp_delta,
                has_key,
            },
        ) {
            return Ok(Err(error));
        }
        at += end;
    }
    if at != data.len() {
        return Err(RecordsError::Inconsistent(format!(
            "{} bytes follow the last of {count} records",
            data.len() - at
        )));
    }
    Ok(Ok(()))
}
