//! The offset index (`.index`): a sparse map from offsets to byte positions in the `.log`.
//!
//! | offset | size | field            | notes                                      |
//! |--------|------|------------------|--------------------------------------------|
//! | 0      | 4    | `relativeOffset` | offset − segment base offset               |
//! | 4      | 4    | `position`       | byte position in the `.log` of that batch  |
//!
//! An entry maps the last offset of a batch to the position where that batch starts. Lookups
//! take the entry with the largest offset ≤ the target (or `(base, 0)`), then the caller scans
//! batch headers forward from that position.

use ferrolog_records::be;

use super::index::{Index, IndexEntry};
use crate::error::{Result, StorageError};

/// Bytes per offset-index entry: `relativeOffset` and `position`, 4 bytes each.
pub const OFFSET_ENTRY_BYTES: usize = 8;

/// An offset and the byte position of the batch holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    /// The offset, absolute (stored as `relativeOffset`, relative to the base offset).
    pub offset: i64,
    /// Byte position in the `.log` where the batch holding `offset` starts.
    pub position: u32,
}

impl IndexEntry for OffsetPosition {
    const BYTES: usize = OFFSET_ENTRY_BYTES;
    fn decode(slot: &[u8], base_offset: i64) -> Self {
        Self {
            offset: base_offset + i64::from(be::i32_at(slot, 0)),
            position: be::u32_at(slot, 4),
        }
    }
    fn encode(&self, relative_offset: i32, slot: &mut [u8]) {
        slot[..4].copy_from_slice(&relative_offset.to_be_bytes());
        slot[4..8].copy_from_slice(&self.position.to_be_bytes());
    }
    fn offset(&self) -> i64 {
        self.offset
    }
}

/// The offset index of one segment.
pub type OffsetIndex = Index<OffsetPosition>;

impl Index<OffsetPosition> {
    /// Whether the index holds as many entries as it may; the segment then rolls.
    pub fn is_full(&self) -> bool {
        self.entries() >= self.max_entries()
    }

    /// The last entry's offset, or the base offset when empty.
    pub fn last_offset(&self) -> i64 {
        self.last().map_or(self.base_offset(), |entry| entry.offset)
    }

    /// The entry with the largest offset ≤ `target`, or `(base, 0)`.
    pub fn lookup(&self, target: i64) -> OffsetPosition {
        self.largest_lower_bound(target, |entry| entry.offset)
            .unwrap_or(OffsetPosition {
                offset: self.base_offset(),
                position: 0,
            })
    }

    /// The first entry whose position is at or after `start + fetch_size`: the offset a fetch of
    /// that many bytes from `start` cannot reach.
    pub fn fetch_upper_bound_offset(
        &self,
        start: OffsetPosition,
        fetch_size: u32,
    ) -> Option<OffsetPosition> {
        let target = i64::from(start.position) + i64::from(fetch_size);
        self.smallest_upper_bound(target, |entry| i64::from(entry.position))
    }

    /// Adds an entry; the offset must be above the last one and the index not full.
    pub fn append(&mut self, offset: i64, position: u32) -> Result<()> {
        if self.entries() > 0 && offset <= self.last_offset() {
            return Err(StorageError::InvalidIndexAppend {
                path: self.path().to_path_buf(),
                reason: format!(
                    "offset {offset} is not larger than the last offset {}",
                    self.last_offset()
                ),
            });
        }
        self.push(OffsetPosition { offset, position })
    }

    /// Kafka's sanity check: the last offset may not be below the base, and the file must hold
    /// whole entries.
    pub fn sanity_check(&self) -> Result<()> {
        if self.entries() > 0 && self.last_offset() < self.base_offset() {
            return Err(self.corrupt(format!(
                "last offset {} is below the base offset {}",
                self.last_offset(),
                self.base_offset()
            )));
        }
        self.check_whole_entries()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const BASE: i64 = 45;

    fn index(dir: &tempfile::TempDir, max_entries: u32) -> OffsetIndex {
        OffsetIndex::open(
            &dir.path().join("00000000000000000045.index"),
            BASE,
            max_entries * 8,
        )
        .unwrap()
    }

    #[test]
    fn lookup_extreme_cases() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 30);
        assert_eq!(
            idx.lookup(BASE),
            OffsetPosition {
                offset: BASE,
                position: 0
            },
            "empty index"
        );
        for i in 0..idx.max_entries() as i64 {
            idx.append(BASE + i + 1, (i + 1) as u32).unwrap();
        }
        assert_eq!(
            idx.lookup(BASE),
            OffsetPosition {
                offset: BASE,
                position: 0
            }
        );
        assert_eq!(
            idx.lookup(BASE + 1000),
            idx.entry(idx.entries() - 1).unwrap()
        );
    }

    #[test]
    fn random_lookup_matches_sorted_map_floor() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 1000);
        let mut model = BTreeMap::new();
        let mut offset = BASE;
        let mut state = 7u64;
        for i in 0..500u32 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            offset += 1 + (state >> 60) as i64;
            idx.append(offset, i * 10).unwrap();
            model.insert(offset, i * 10);
        }
        for target in BASE - 5..offset + 5 {
            let expected = model.range(..=target).next_back().map_or(
                OffsetPosition {
                    offset: BASE,
                    position: 0,
                },
                |(&offset, &position)| OffsetPosition { offset, position },
            );
            assert_eq!(idx.lookup(target), expected, "target {target}");
        }
    }

    proptest::proptest! {
        /// Floor lookups agree with a linear scan over the same entries.
        #[test]
        fn lookup_matches_a_linear_scan(gaps in proptest::collection::vec(1i64..50, 0..300), targets in proptest::collection::vec(0i64..20_000, 1..50)) {
            let dir = tempfile::tempdir().unwrap();
            let mut idx = index(&dir, 400);
            let mut entries = Vec::new();
            let mut offset = BASE;
            for (i, gap) in gaps.iter().enumerate() {
                offset += gap;
                idx.append(offset, i as u32 * 7).unwrap();
                entries.push(OffsetPosition { offset, position: i as u32 * 7 });
            }
            for target in targets {
                let target = BASE - 10 + target;
                let expected = entries
                    .iter()
                    .rev()
                    .find(|entry| entry.offset <= target)
                    .copied()
                    .unwrap_or(OffsetPosition { offset: BASE, position: 0 });
                proptest::prop_assert_eq!(idx.lookup(target), expected);
            }
        }
    }

    #[test]
    fn append_too_many_fails() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 3);
        for i in 0..3 {
            idx.append(BASE + i + 1, i as u32).unwrap();
        }
        assert!(idx.is_full());
        assert!(idx.append(BASE + 10, 10).is_err());
    }

    #[test]
    fn append_out_of_order_fails() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 10);
        idx.append(51, 0).unwrap();
        assert!(idx.append(50, 1).is_err());
        assert!(idx.append(51, 1).is_err());
    }

    #[test]
    fn entry_overflow_fails() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 10);
        idx.append(BASE + 1, 5).unwrap();
        assert!(idx.entry(0).is_ok());
        assert!(idx.entry(1).is_err());
    }

    #[test]
    fn truncate() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 20);
        for i in 1..10 {
            idx.append(BASE + i, i as u32).unwrap();
        }
        idx.truncate_to(BASE + 12);
        assert_eq!(idx.entries(), 9, "past the end: no change");
        idx.truncate_to(BASE + 9);
        assert_eq!(idx.last_offset(), BASE + 8, "at an entry: it and later go");
        // Entries now at offsets BASE+1..=BASE+8; make a gap and truncate inside it.
        let gappy_dir = tempfile::tempdir().unwrap();
        let mut gappy = index(&gappy_dir, 20);
        for i in [2, 4, 6] {
            gappy.append(BASE + i, i as u32).unwrap();
        }
        gappy.truncate_to(BASE + 5);
        assert_eq!(
            gappy.last_offset(),
            BASE + 4,
            "between entries: the lower is kept"
        );
        idx.truncate_to(0);
        assert_eq!(idx.entries(), 0, "below everything: empty");
    }

    #[test]
    fn reopen_preserves_entries_and_lookups() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 50);
        for i in 1..=5 {
            idx.append(BASE + i * 2, (i * 100) as u32).unwrap();
        }
        idx.trim_to_valid_size().unwrap();
        idx.flush().unwrap();
        let path = idx.path().to_path_buf();
        drop(idx);
        let reopened = OffsetIndex::open(&path, BASE, 50 * 8).unwrap();
        assert_eq!(reopened.entries(), 5);
        assert_eq!(reopened.last_offset(), BASE + 10);
        assert_eq!(
            reopened.lookup(BASE + 5),
            OffsetPosition {
                offset: BASE + 4,
                position: 200
            }
        );
    }

    #[test]
    fn sanity_last_offset_equal_to_base_offset_passes() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 10);
        idx.append(BASE, 0).unwrap();
        idx.sanity_check().unwrap();
    }

    #[test]
    fn fetch_upper_bound_offset_is_first_entry_at_or_after_start_plus_size() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 10);
        for (offset, position) in [(50, 0), (60, 100), (70, 200), (80, 300)] {
            idx.append(offset, position).unwrap();
        }
        let start = OffsetPosition {
            offset: 50,
            position: 0,
        };
        assert_eq!(
            idx.fetch_upper_bound_offset(start, 150).map(|e| e.offset),
            Some(70)
        );
        assert_eq!(
            idx.fetch_upper_bound_offset(start, 200).map(|e| e.offset),
            Some(70)
        );
        assert_eq!(idx.fetch_upper_bound_offset(start, 301), None);
    }

    #[test]
    fn the_file_grows_in_allocated_steps_and_shrinks_to_its_entries_when_trimmed() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 100_000);
        let blocks = |idx: &OffsetIndex| std::fs::metadata(idx.path()).unwrap().blocks() * 512;
        assert_eq!(idx.file_length().unwrap(), 0, "a new index holds no space");
        idx.append(BASE + 1, 1).unwrap();
        assert_eq!(idx.file_length().unwrap(), 4096, "a page at first");
        assert!(blocks(&idx) >= 4096, "with its blocks allocated");
        for i in 2..=600 {
            idx.append(BASE + i, i as u32).unwrap();
        }
        assert_eq!(idx.file_length().unwrap(), 8192, "then twice as much");
        assert!(blocks(&idx) >= 8192);
        assert_eq!(idx.max_entries(), 100_000, "the limit is unchanged");
        idx.trim_to_valid_size().unwrap();
        assert_eq!(idx.file_length().unwrap(), 600 * 8);
        assert_eq!(idx.lookup(BASE + 300).position, 300);
    }

    #[test]
    fn resize_reports_whether_the_size_changed() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 10);
        assert!(!idx.resize(80).unwrap());
        assert!(idx.resize(160).unwrap());
        assert_eq!(idx.max_entries(), 20);
    }
}
