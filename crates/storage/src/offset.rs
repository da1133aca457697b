//! The three numbers a partition log's code mixes up most easily, each its own type: an
//! [`Offset`] (a record's place in the partition), a [`RelativeOffset`] (an offset less its
//! segment's base, as the indexes store it) and a [`FilePosition`] (a byte position in a
//! segment's `.log`).
//!
//! They are used above the byte formats: by segments, indexes and logs, and in what the log
//! hands its callers. Structs that mirror bytes on disk or on the wire (a batch header, a
//! producer snapshot entry, a checkpoint line, a Kafka request) keep Kafka's `i64` as the format
//! defines it, and become these types where they enter a segment or a log.

use std::fmt;
use std::ops::{Add, Sub};

/// An offset in a partition's log: the place of a record in the partition's sequence, from 0.
/// The log's bounds (log start, high watermark, log end) are offsets too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Offset(i64);

impl Offset {
    /// Offset 0, where every partition starts.
    pub const ZERO: Self = Self(0);
    /// The largest offset: a bound no log reaches ("to the end").
    pub const MAX: Self = Self(i64::MAX);

    /// The offset Kafka writes as `value`.
    pub const fn new(value: i64) -> Self {
        Self(value)
    }

    /// The offset as Kafka writes it.
    pub const fn value(self) -> i64 {
        self.0
    }

    /// The offset after this one.
    pub const fn next(self) -> Self {
        Self(self.0.saturating_add(1))
    }

    /// This offset relative to `base`, if an index can store it (0 to `i32::MAX` above `base`).
    pub fn relative_to(self, base: Self) -> Option<RelativeOffset> {
        let relative = self.0.checked_sub(base.0)?;
        u32::try_from(relative)
            .ok()
            .filter(|relative| *relative <= i32::MAX as u32)
            .map(RelativeOffset)
    }
}

/// The offset `count` records later (earlier, when negative), saturating.
impl Add<i64> for Offset {
    type Output = Self;
    fn add(self, count: i64) -> Self {
        Self(self.0.saturating_add(count))
    }
}

/// The offset `count` records earlier, saturating.
impl Sub<i64> for Offset {
    type Output = Self;
    fn sub(self, count: i64) -> Self {
        Self(self.0.saturating_sub(count))
    }
}

/// How many offsets lie from `earlier` up to this one (negative when `earlier` is later).
impl Sub for Offset {
    type Output = i64;
    fn sub(self, earlier: Self) -> i64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for Offset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// An offset less its segment's base offset: what the `.index` and `.timeindex` files store, as
/// a non-negative 32-bit integer. A segment takes no offset whose relative offset would not fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelativeOffset(u32);

impl RelativeOffset {
    /// The field as an index file stores it (a negative field decodes to nothing).
    pub fn from_index_field(field: i32) -> Option<Self> {
        u32::try_from(field).ok().map(Self)
    }

    /// The field an index file stores.
    pub fn index_field(self) -> i32 {
        // Constructed only from values in 0..=i32::MAX.
        self.0 as i32
    }

    /// The absolute offset, given the segment's base.
    pub fn absolute(self, base: Offset) -> Offset {
        base + i64::from(self.0)
    }
}

/// A byte position in one segment's `.log` file: where a batch starts, or a read begins.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FilePosition(u64);

impl FilePosition {
    /// The start of the file.
    pub const START: Self = Self(0);

    /// Byte `bytes` of the file.
    pub const fn new(bytes: u64) -> Self {
        Self(bytes)
    }

    /// The position in bytes from the start of the file.
    pub const fn bytes(self) -> u64 {
        self.0
    }

    /// The field an offset index stores, if the position fits in it (segments are at most
    /// `i32::MAX` bytes, as in Kafka).
    pub fn index_field(self) -> Option<u32> {
        u32::try_from(self.0).ok()
    }
}

impl From<u32> for FilePosition {
    fn from(field: u32) -> Self {
        Self(u64::from(field))
    }
}

impl fmt::Display for FilePosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_offsets_are_what_an_index_can_store() {
        let base = Offset::new(1_000);
        assert_eq!(
            Offset::new(1_000)
                .relative_to(base)
                .map(|r| r.index_field()),
            Some(0)
        );
        assert_eq!(
            Offset::new(1_007)
                .relative_to(base)
                .map(|r| r.index_field()),
            Some(7)
        );
        assert_eq!(Offset::new(999).relative_to(base), None, "below the base");
        let last = Offset::new(1_000 + i64::from(i32::MAX));
        assert_eq!(
            last.relative_to(base).map(|r| r.index_field()),
            Some(i32::MAX)
        );
        assert_eq!(last.next().relative_to(base), None, "past i32::MAX");
        assert_eq!(Offset::MAX.relative_to(Offset::new(-5)), None, "overflow");
        let relative = RelativeOffset::from_index_field(7).unwrap_or_else(|| unreachable!());
        assert_eq!(relative.absolute(base), Offset::new(1_007));
        assert_eq!(RelativeOffset::from_index_field(-1), None);
    }

    #[test]
    fn offsets_count_and_saturate() {
        assert_eq!(Offset::new(5).next(), Offset::new(6));
        assert_eq!(Offset::MAX.next(), Offset::MAX);
        assert_eq!(Offset::new(10) - Offset::new(4), 6);
        assert_eq!(Offset::new(4) + -4, Offset::ZERO);
        assert_eq!(Offset::new(4) - 4, Offset::ZERO);
        assert_eq!(Offset::MAX + 1, Offset::MAX);
        assert_eq!(
            FilePosition::new(u64::from(u32::MAX) + 1).index_field(),
            None
        );
        assert_eq!(FilePosition::from(12u32).bytes(), 12);
    }
}
