//! Zig-zag variable-length integers as Kafka's record format v2 uses them (protobuf's
//! `sint32`/`sint64` encoding): `varint` for 32-bit values, `varlong` for 64-bit values.
//!
//! Decoders return the value and the number of bytes consumed, or `None` when the input ends
//! mid-number or the number is longer than its type allows (5 bytes for a varint, 10 for a
//! varlong), so a corrupt length can never make a reader run away.

/// Longest encoding of a 32-bit varint.
pub const MAX_VARINT_LEN: usize = 5;
/// Longest encoding of a 64-bit varlong.
pub const MAX_VARLONG_LEN: usize = 10;

/// Decodes a zig-zag varint (i32) from the start of `bytes`.
#[inline]
pub fn read_varint(bytes: &[u8]) -> Option<(i32, usize)> {
    let (raw, len) = read_unsigned(bytes, MAX_VARINT_LEN)?;
    let raw = u32::try_from(raw).ok()?;
    Some((((raw >> 1) as i32) ^ -((raw & 1) as i32), len))
}

/// Decodes a zig-zag varlong (i64) from the start of `bytes`.
#[inline]
pub fn read_varlong(bytes: &[u8]) -> Option<(i64, usize)> {
    let (raw, len) = read_unsigned(bytes, MAX_VARLONG_LEN)?;
    Some((((raw >> 1) as i64) ^ -((raw & 1) as i64), len))
}

#[inline]
fn read_unsigned(bytes: &[u8], max_len: usize) -> Option<(u64, usize)> {
    // Most record fields (attributes, deltas, small lengths) fit one or two bytes.
    match bytes {
        [first, ..] if first & 0x80 == 0 => return Some((u64::from(*first), 1)),
        [first, second, ..] if second & 0x80 == 0 => {
            return Some((u64::from(first & 0x7f) | (u64::from(*second) << 7), 2));
        }
        _ => {}
    }
    let mut value: u64 = 0;
    for (i, &byte) in bytes.iter().take(max_len).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Appends the zig-zag varint encoding of `value` to `out`.
pub fn write_varint(out: &mut Vec<u8>, value: i32) {
    write_unsigned(out, u64::from(((value << 1) ^ (value >> 31)) as u32));
}

/// Appends the zig-zag varlong encoding of `value` to `out`.
pub fn write_varlong(out: &mut Vec<u8>, value: i64) {
    write_unsigned(out, ((value << 1) ^ (value >> 63)) as u64);
}

fn write_unsigned(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Bytes the zig-zag varint encoding of `value` takes.
pub fn varint_len(value: i32) -> usize {
    unsigned_len(u64::from(((value << 1) ^ (value >> 31)) as u32))
}

/// Bytes the zig-zag varlong encoding of `value` takes.
pub fn varlong_len(value: i64) -> usize {
    unsigned_len(((value << 1) ^ (value >> 63)) as u64)
}

fn unsigned_len(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings_match_kafka() {
        let cases: &[(i32, &[u8])] = &[
            (0, &[0x00]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (-64, &[0x7f]),
            (64, &[0x80, 0x01]),
            (i32::MAX, &[0xfe, 0xff, 0xff, 0xff, 0x0f]),
            (i32::MIN, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
        ];
        for &(value, encoded) in cases {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            assert_eq!(out, encoded, "encoding {value}");
            assert_eq!(read_varint(encoded), Some((value, encoded.len())));
            assert_eq!(varint_len(value), encoded.len());
        }
    }

    #[test]
    fn overlong_and_truncated_inputs_are_rejected() {
        assert_eq!(read_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00]), None);
        assert_eq!(read_varint(&[0x80]), None);
        assert_eq!(read_varint(&[]), None);
        assert_eq!(read_varlong(&[0xff; 11]), None);
        // Five bytes that overflow 32 bits are not a varint.
        assert_eq!(read_varint(&[0xff, 0xff, 0xff, 0xff, 0x7f]), None);
    }

    proptest! {
        #[test]
        fn varint_round_trips(value: i32) {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            prop_assert_eq!(out.len(), varint_len(value));
            prop_assert_eq!(read_varint(&out), Some((value, out.len())));
        }

        #[test]
        fn varlong_round_trips(value: i64) {
            let mut out = Vec::new();
            write_varlong(&mut out, value);
            prop_assert_eq!(out.len(), varlong_len(value));
            prop_assert_eq!(read_varlong(&out), Some((value, out.len())));
        }
    }
}
