//! The time index (`.timeindex`): "the largest timestamp seen up to this offset is T".
//!
//! | offset | size | field            | notes                                |
//! |--------|------|------------------|--------------------------------------|
//! | 0      | 8    | `timestamp`      | max timestamp so far in the segment  |
//! | 8      | 4    | `relativeOffset` | offset − segment base offset         |
//!
//! Entries are added beside offset-index entries, and once more when a segment stops being
//! active, so the last entry always holds the segment's max timestamp. An entry is written only
//! when its timestamp is larger than the last entry's; the last slot is reserved for that final
//! entry, so the index counts as full one entry early.

use ferrolog_records::be;

use super::index::{Index, IndexEntry, IndexView};
use crate::error::{Result, StorageError};
use crate::offset::{Offset, RelativeOffset};

/// Bytes per time-index entry: an 8-byte `timestamp` and a 4-byte `relativeOffset`.
pub const TIME_ENTRY_BYTES: usize = 12;
/// Kafka's "no timestamp".
pub const NO_TIMESTAMP: i64 = -1;

/// A timestamp and the offset it was reached at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    /// The timestamp; [`NO_TIMESTAMP`] (−1) for none.
    pub timestamp: i64,
    /// The offset, absolute (stored as `relativeOffset`, relative to the base offset).
    pub offset: Offset,
}

impl IndexEntry for TimestampOffset {
    const BYTES: usize = TIME_ENTRY_BYTES;
    fn decode(slot: &[u8], base_offset: Offset) -> Self {
        Self {
            timestamp: be::i64_at(slot, 0),
            offset: base_offset + i64::from(be::i32_at(slot, 8)),
        }
    }
    fn encode(&self, relative_offset: RelativeOffset, slot: &mut [u8]) {
        slot[..8].copy_from_slice(&self.timestamp.to_be_bytes());
        slot[8..12].copy_from_slice(&relative_offset.index_field().to_be_bytes());
    }
    fn offset(&self) -> Offset {
        self.offset
    }
}

/// The time index of one segment.
pub type TimeIndex = Index<TimestampOffset>;

/// Which slots a time-index entry may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeEntry {
    /// An entry beside an offset-index entry: refused once only the reserved slot is left.
    Regular,
    /// The final entry, at roll or close (or after recovery): it may take the reserved last
    /// slot.
    Final,
}

impl Index<TimestampOffset> {
    /// Full one entry early: the last slot is kept for the entry written at roll or close.
    pub fn is_full(&self) -> bool {
        self.entries() + 1 >= self.max_entries()
    }

    /// Adds `(timestamp, offset)` if the timestamp is larger than the last entry's. Offsets and
    /// timestamps going backwards are errors; so is a full index for a
    /// [`TimeEntry::Regular`] entry (a [`TimeEntry::Final`] one uses the reserved slot).
    pub fn maybe_append(&mut self, timestamp: i64, offset: Offset, kind: TimeEntry) -> Result<()> {
        let invalid = |reason: String| StorageError::InvalidIndexAppend {
            path: self.path().to_path_buf(),
            reason,
        };
        if kind == TimeEntry::Regular && self.is_full() {
            return Err(invalid(format!(
                "the time index is full at {} entries",
                self.entries()
            )));
        }
        let last = self.view()?.last_entry();
        if self.entries() > 0 && offset < last.offset {
            return Err(invalid(format!(
                "offset {offset} is below the last entry's offset {}",
                last.offset
            )));
        }
        if self.entries() > 0 && timestamp < last.timestamp {
            return Err(invalid(format!(
                "timestamp {timestamp} is below the last entry's timestamp {}",
                last.timestamp
            )));
        }
        if timestamp <= last.timestamp {
            return Ok(());
        }
        self.push(TimestampOffset { timestamp, offset })
    }

    /// Kafka's sanity check: timestamps and offsets may not end below where they start.
    pub fn sanity_check(&self) -> Result<()> {
        let view = self.view()?;
        if let (Some(first), Some(last)) = (view.entry(0), view.last()) {
            if last.timestamp < first.timestamp {
                return Err(self.corrupt(format!(
                    "last timestamp {} is below the first {}",
                    last.timestamp, first.timestamp
                )));
            }
            if last.offset < self.base_offset() {
                return Err(self.corrupt(format!(
                    "last offset {} is below the base offset {}",
                    last.offset,
                    self.base_offset()
                )));
            }
        }
        drop(view);
        self.check_whole_entries()
    }
}

impl IndexView<'_, TimestampOffset> {
    /// The last entry, or `(−1, base)` when empty.
    pub fn last_entry(&self) -> TimestampOffset {
        self.last().unwrap_or(TimestampOffset {
            timestamp: NO_TIMESTAMP,
            offset: self.base_offset(),
        })
    }

    /// The entry with the largest timestamp ≤ `target`, or `(−1, base)`.
    pub fn lookup(&self, target: i64) -> TimestampOffset {
        self.largest_lower_bound(target, |entry| entry.timestamp)
            .unwrap_or(TimestampOffset {
                timestamp: NO_TIMESTAMP,
                offset: self.base_offset(),
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    const BASE: i64 = 45;

    fn index(dir: &tempfile::TempDir, max_entries: u32) -> TimeIndex {
        TimeIndex::open(
            &dir.path().join("00000000000000000045.timeindex"),
            Offset::new(BASE),
            max_entries * 12,
        )
        .unwrap()
    }

    #[test]
    fn look_up() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 30);
        assert_eq!(
            idx.view().unwrap().lookup(100),
            TimestampOffset {
                timestamp: -1,
                offset: Offset::new(BASE)
            }
        );
        for (timestamp, offset) in [(100, 50), (200, 60), (300, 70)] {
            idx.maybe_append(timestamp, Offset::new(offset), TimeEntry::Regular)
                .unwrap();
        }
        assert_eq!(
            idx.view().unwrap().lookup(99),
            TimestampOffset {
                timestamp: -1,
                offset: Offset::new(BASE)
            },
            "below first"
        );
        assert_eq!(
            idx.view().unwrap().lookup(250),
            TimestampOffset {
                timestamp: 200,
                offset: Offset::new(60)
            },
            "between"
        );
        assert_eq!(
            idx.view().unwrap().lookup(300),
            TimestampOffset {
                timestamp: 300,
                offset: Offset::new(70)
            },
            "exact"
        );
    }

    proptest::proptest! {
        /// Floor lookups by timestamp agree with a linear scan over the same entries.
        #[test]
        fn lookup_matches_a_linear_scan(steps in proptest::collection::vec((1i64..30, 1i64..30), 0..300), targets in proptest::collection::vec(0i64..10_000, 1..50)) {
            let dir = tempfile::tempdir().unwrap();
            let mut idx = index(&dir, 400);
            let mut entries = Vec::new();
            let (mut timestamp, mut offset) = (0i64, BASE);
            for (timestamp_step, offset_step) in steps {
                timestamp += timestamp_step;
                offset += offset_step;
                idx.maybe_append(timestamp, Offset::new(offset), TimeEntry::Regular).unwrap();
                entries.push(TimestampOffset { timestamp, offset: Offset::new(offset) });
            }
            for target in targets {
                let expected = entries
                    .iter()
                    .rev()
                    .find(|entry| entry.timestamp <= target)
                    .copied()
                    .unwrap_or(TimestampOffset { timestamp: -1, offset: Offset::new(BASE) });
                proptest::prop_assert_eq!(idx.view().unwrap().lookup(target), expected);
            }
        }
    }

    #[test]
    fn is_full_one_entry_early_and_forced_append_uses_the_last_slot() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 3);
        idx.maybe_append(10, Offset::new(46), TimeEntry::Regular)
            .unwrap();
        idx.maybe_append(20, Offset::new(47), TimeEntry::Regular)
            .unwrap();
        assert!(idx.is_full());
        assert!(
            idx.maybe_append(30, Offset::new(48), TimeEntry::Regular)
                .is_err()
        );
        idx.maybe_append(30, Offset::new(48), TimeEntry::Final)
            .unwrap();
        assert_eq!(idx.entries(), 3);
    }

    #[test]
    fn append_rules() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 10);
        idx.maybe_append(100, Offset::new(50), TimeEntry::Regular)
            .unwrap();
        assert!(
            idx.maybe_append(200, Offset::new(49), TimeEntry::Regular)
                .is_err(),
            "smaller offset"
        );
        assert!(
            idx.maybe_append(90, Offset::new(60), TimeEntry::Regular)
                .is_err(),
            "smaller timestamp"
        );
        idx.maybe_append(100, Offset::new(60), TimeEntry::Regular)
            .unwrap();
        assert_eq!(idx.entries(), 1, "equal timestamp is a no-op");
    }

    #[test]
    fn sanity_check_catches_backwards_entries_and_partial_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000045.timeindex");
        let mut raw = Vec::new();
        for (timestamp, relative) in [(200i64, 1i32), (100, 2)] {
            raw.extend_from_slice(&timestamp.to_be_bytes());
            raw.extend_from_slice(&relative.to_be_bytes());
        }
        std::fs::write(&path, &raw).unwrap();
        assert!(
            TimeIndex::open(&path, Offset::new(BASE), 120)
                .unwrap()
                .sanity_check()
                .is_err(),
            "last ts < first"
        );

        raw.clear();
        raw.extend_from_slice(&100i64.to_be_bytes());
        raw.extend_from_slice(&(-5i32).to_be_bytes());
        std::fs::write(&path, &raw).unwrap();
        assert!(
            TimeIndex::open(&path, Offset::new(BASE), 120)
                .unwrap()
                .sanity_check()
                .is_err(),
            "offset < base"
        );

        raw.push(0);
        std::fs::write(&path, &raw).unwrap();
        assert!(
            TimeIndex::open(&path, Offset::new(BASE), 120)
                .unwrap()
                .sanity_check()
                .is_err(),
            "length % 12"
        );
    }

    #[test]
    fn resize_to_same_size_is_false_and_to_another_true() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 10);
        assert!(!idx.resize(120).unwrap());
        assert!(idx.resize(240).unwrap());
    }

    #[test]
    fn truncate_removes_entries_at_and_after_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 10);
        for (timestamp, offset) in [(1, 50), (2, 60), (3, 70)] {
            idx.maybe_append(timestamp, Offset::new(offset), TimeEntry::Regular)
                .unwrap();
        }
        idx.truncate_to(Offset::new(60)).unwrap();
        assert_eq!(
            idx.view().unwrap().last_entry(),
            TimestampOffset {
                timestamp: 1,
                offset: Offset::new(50)
            }
        );
        idx.truncate_to(Offset::new(55)).unwrap();
        assert_eq!(idx.entries(), 1);
    }
}
