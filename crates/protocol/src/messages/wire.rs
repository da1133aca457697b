//! The primitives of Kafka's flexible message encoding, for the generated codecs: unsigned
//! varints, compact strings and arrays (length + 1, 0 for null), nullable structs (an `int8`
//! marker) and tagged-field sections. Every read names the field it reads in its error and
//! never reserves more than the bytes left could hold.

use anyhow::{Result, bail};
use bytes::{Buf, BufMut, Bytes};
use uuid::Uuid;

fn need<B: Buf>(buf: &B, bytes: usize, field: &str) -> Result<()> {
    if buf.remaining() < bytes {
        bail!("{field}: {bytes} bytes needed, {} left", buf.remaining());
    }
    Ok(())
}

/// An unsigned varint of at most 32 bits.
pub fn read_uvarint<B: Buf>(buf: &mut B, field: &str) -> Result<u32> {
    let mut value: u32 = 0;
    for index in 0..5 {
        need(buf, 1, field)?;
        let byte = buf.get_u8();
        value |= u32::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    bail!("{field}: a varint longer than 5 bytes")
}

pub fn write_uvarint<B: BufMut>(buf: &mut B, mut value: u32) {
    while value >= 0x80 {
        buf.put_u8((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    buf.put_u8(value as u8);
}

/// A compact length: `None` for null (0), else the length (the varint less one).
fn read_compact_length<B: Buf>(buf: &mut B, field: &str) -> Result<Option<usize>> {
    let raw = read_uvarint(buf, field)?;
    Ok(raw.checked_sub(1).map(|length| length as usize))
}

fn write_compact_length<B: BufMut>(buf: &mut B, length: Option<usize>) -> Result<()> {
    let raw = match length {
        None => 0,
        Some(length) => u32::try_from(length)
            .ok()
            .and_then(|length| length.checked_add(1))
            .ok_or_else(|| anyhow::anyhow!("a length of {length} does not fit a varint"))?,
    };
    write_uvarint(buf, raw);
    Ok(())
}

macro_rules! fixed {
    ($read:ident, $write:ident, $type:ty, $get:ident, $put:ident) => {
        pub fn $read<B: Buf>(buf: &mut B, field: &str) -> Result<$type> {
            need(buf, std::mem::size_of::<$type>(), field)?;
            Ok(buf.$get())
        }

        pub fn $write<B: BufMut>(buf: &mut B, value: $type) {
            buf.$put(value);
        }
    };
}

fixed!(read_i8, write_i8, i8, get_i8, put_i8);
fixed!(read_i16, write_i16, i16, get_i16, put_i16);
fixed!(read_i32, write_i32, i32, get_i32, put_i32);
fixed!(read_i64, write_i64, i64, get_i64, put_i64);
fixed!(read_u16, write_u16, u16, get_u16, put_u16);

pub fn read_bool<B: Buf>(buf: &mut B, field: &str) -> Result<bool> {
    Ok(read_i8(buf, field)? != 0)
}

pub fn write_bool<B: BufMut>(buf: &mut B, value: bool) {
    buf.put_u8(u8::from(value));
}

pub fn read_nullable_string<B: Buf>(buf: &mut B, field: &str) -> Result<Option<String>> {
    let Some(length) = read_compact_length(buf, field)? else {
        return Ok(None);
    };
    need(buf, length, field)?;
    let mut bytes = vec![0; length];
    buf.copy_to_slice(&mut bytes);
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| anyhow::anyhow!("{field}: a string that is not UTF-8"))
}

pub fn read_string<B: Buf>(buf: &mut B, field: &str) -> Result<String> {
    read_nullable_string(buf, field)?
        .ok_or_else(|| anyhow::anyhow!("{field}: null where a string is required"))
}

pub fn write_nullable_string<B: BufMut>(buf: &mut B, value: Option<&str>) {
    // A string longer than 4 GiB cannot be in a message; the length always fits.
    let _ = write_compact_length(buf, value.map(str::len));
    if let Some(value) = value {
        buf.put_slice(value.as_bytes());
    }
}

pub fn write_string<B: BufMut>(buf: &mut B, value: &str) {
    write_nullable_string(buf, Some(value));
}

/// A UUID: sixteen bytes, most significant first.
pub fn read_uuid<B: Buf>(buf: &mut B, field: &str) -> Result<Uuid> {
    need(buf, 16, field)?;
    Ok(Uuid::from_u128(buf.get_u128()))
}

pub fn write_uuid<B: BufMut>(buf: &mut B, value: Uuid) {
    buf.put_u128(value.as_u128());
}

/// Compact bytes (records too): the length + 1, then the bytes, copied out once.
pub fn read_nullable_bytes<B: Buf>(buf: &mut B, field: &str) -> Result<Option<Bytes>> {
    let Some(length) = read_compact_length(buf, field)? else {
        return Ok(None);
    };
    need(buf, length, field)?;
    Ok(Some(buf.copy_to_bytes(length)))
}

pub fn read_bytes<B: Buf>(buf: &mut B, field: &str) -> Result<Bytes> {
    read_nullable_bytes(buf, field)?
        .ok_or_else(|| anyhow::anyhow!("{field}: null where bytes are required"))
}

/// Writes the bytes with one `put_slice`, so a response's record placeholder is recognised
/// and spliced (`response::SplicingBuf`) rather than copied.
pub fn write_nullable_bytes<B: BufMut>(buf: &mut B, value: Option<&[u8]>) {
    // Bytes longer than 4 GiB cannot be in a message; the length always fits.
    let _ = write_compact_length(buf, value.map(<[u8]>::len));
    if let Some(value) = value {
        buf.put_slice(value);
    }
}

pub fn write_bytes<B: BufMut>(buf: &mut B, value: &[u8]) {
    write_nullable_bytes(buf, Some(value));
}

pub fn read_nullable_array<B: Buf, T>(
    buf: &mut B,
    field: &str,
    mut item: impl FnMut(&mut B) -> Result<T>,
) -> Result<Option<Vec<T>>> {
    let Some(count) = read_compact_length(buf, field)? else {
        return Ok(None);
    };
    // Each element takes at least one byte: a count beyond the bytes left is a lie.
    if count > buf.remaining() {
        bail!(
            "{field}: {count} elements declared, {} bytes left",
            buf.remaining()
        );
    }
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        items.push(item(buf)?);
    }
    Ok(Some(items))
}

pub fn read_array<B: Buf, T>(
    buf: &mut B,
    field: &str,
    item: impl FnMut(&mut B) -> Result<T>,
) -> Result<Vec<T>> {
    read_nullable_array(buf, field, item)?
        .ok_or_else(|| anyhow::anyhow!("{field}: null where an array is required"))
}

pub fn write_nullable_array<B: BufMut, T>(
    buf: &mut B,
    items: Option<&[T]>,
    mut item: impl FnMut(&mut B, &T) -> Result<()>,
) -> Result<()> {
    write_compact_length(buf, items.map(<[T]>::len))?;
    for each in items.unwrap_or_default() {
        item(buf, each)?;
    }
    Ok(())
}

pub fn write_array<B: BufMut, T>(
    buf: &mut B,
    items: &[T],
    item: impl FnMut(&mut B, &T) -> Result<()>,
) -> Result<()> {
    write_nullable_array(buf, Some(items), item)
}

/// A struct that may be null: an `int8` marker, −1 for null, 1 when the fields follow.
pub fn read_nullable_struct<B: Buf, T>(
    buf: &mut B,
    field: &str,
    read: impl FnOnce(&mut B) -> Result<T>,
) -> Result<Option<T>> {
    match read_i8(buf, field)? {
        -1 => Ok(None),
        1 => read(buf).map(Some),
        other => bail!("{field}: a null marker of {other}"),
    }
}

pub fn write_nullable_struct<B: BufMut, T>(
    buf: &mut B,
    value: Option<&T>,
    write: impl FnOnce(&mut B, &T) -> Result<()>,
) -> Result<()> {
    match value {
        None => {
            buf.put_i8(-1);
            Ok(())
        }
        Some(value) => {
            buf.put_i8(1);
            write(buf, value)
        }
    }
}

/// Skips a tagged-field section: none of the generated messages defines a tag, so every
/// field in it is one a later version added, which Kafka's rules let a reader ignore.
pub fn skip_tagged_fields<B: Buf>(buf: &mut B) -> Result<()> {
    let count = read_uvarint(buf, "tagged fields")?;
    for _ in 0..count {
        read_uvarint(buf, "a tag")?;
        let size = read_uvarint(buf, "a tagged field's size")? as usize;
        need(buf, size, "a tagged field")?;
        buf.advance(size);
    }
    Ok(())
}

pub fn write_no_tagged_fields<B: BufMut>(buf: &mut B) {
    buf.put_u8(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_their_edges() {
        for value in [0, 1, 127, 128, 16_383, 16_384, u32::MAX] {
            let mut out = Vec::new();
            write_uvarint(&mut out, value);
            assert_eq!(read_uvarint(&mut out.as_slice(), "v").unwrap(), value);
        }
        let too_long = [0xff_u8; 6];
        assert!(read_uvarint(&mut too_long.as_slice(), "v").is_err());
    }

    #[test]
    fn an_array_count_beyond_the_bytes_left_is_refused_before_reserving() {
        let mut out = Vec::new();
        write_uvarint(&mut out, 2_000_000_001);
        let error = read_array(&mut out.as_slice(), "Things", |buf| read_i32(buf, "x"))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("Things: 2000000000 elements declared"),
            "{error}"
        );
    }

    #[test]
    fn strings_name_the_field_when_short_or_null() {
        let mut out = Vec::new();
        write_uvarint(&mut out, 10);
        out.extend_from_slice(b"abc");
        let error = read_string(&mut out.as_slice(), "GroupId")
            .unwrap_err()
            .to_string();
        assert_eq!(error, "GroupId: 9 bytes needed, 3 left");
        let error = read_string(&mut [0_u8].as_slice(), "GroupId")
            .unwrap_err()
            .to_string();
        assert_eq!(error, "GroupId: null where a string is required");
    }
}
