//! Big-endian integers at fixed positions, the byte order of every Kafka format (batch headers,
//! index entries, snapshots, checkpoints). One set of readers for the whole project.
//!
//! Each reads `N` bytes from `at` and panics if `bytes` is shorter than `at + N`: callers read
//! fields of a structure whose length they have already checked (a batch header, an index entry
//! of a known size), so a short slice is a bug, not bad input.

/// The `i16` at `at`.
pub fn i16_at(bytes: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([bytes[at], bytes[at + 1]])
}

/// The `i32` at `at`.
pub fn i32_at(bytes: &[u8], at: usize) -> i32 {
    let mut buf = [0u8; 4];
    buf.copy_from_slice(&bytes[at..at + 4]);
    i32::from_be_bytes(buf)
}

/// The `u32` at `at`.
pub fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut buf = [0u8; 4];
    buf.copy_from_slice(&bytes[at..at + 4]);
    u32::from_be_bytes(buf)
}

/// The `i64` at `at`.
pub fn i64_at(bytes: &[u8], at: usize) -> i64 {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(&bytes[at..at + 8]);
    i64::from_be_bytes(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_width_at_an_offset() {
        let bytes = [0xff, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08];
        assert_eq!(i16_at(&bytes, 1), 0x0102);
        assert_eq!(i32_at(&bytes, 1), 0x0102_0304);
        assert_eq!(u32_at(&bytes, 0), 0xff01_0203);
        assert_eq!(i32_at(&bytes, 0), 0xff01_0203_u32 as i32);
        assert_eq!(i64_at(&bytes, 1), 0x0102_0304_0506_0708);
    }
}
