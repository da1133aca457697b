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

use super::index::{Index, IndexEntry, IndexView};
use crate::error::{Result, StorageError};
use crate::offset::{FilePosition, Offset, RelativeOffset};

/// Bytes per offset-index entry: `relativeOffset` and `position`, 4 bytes each.
pub const OFFSET_ENTRY_BYTES: usize = 8;

/// An offset and the byte position of the batch holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    /// The offset, absolute (stored as `relativeOffset`, relative to the base offset).
    pub offset: Offset,
    /// Byte position in the `.log` where the batch holding `offset` starts (stored in 32 bits:
    /// [`Index::append`] refuses a position that does not fit).
    pub position: FilePosition,
}

impl IndexEntry for OffsetPosition {
    const BYTES: usize = OFFSET_ENTRY_BYTES;
    fn decode(slot: &[u8], base_offset: Offset) -> Self {
        Self {
            offset: base_offset + i64::from(be::i32_at(slot, 0)),
            position: FilePosition::from(be::u32_at(slot, 4)),
        }
    }
    fn encode(&self, relative_offset: RelativeOffset, slot: &mut [u8]) {
        // `append` admits only positions that fit the field.
        let position = self.position.index_field().unwrap_or(u32::MAX);
        slot[..4].copy_from_slice(&relative_offset.index_field().to_be_bytes());
        slot[4..8].copy_from_slice(&position.to_be_bytes());
    }
    fn offset(&self) -> Offset {
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

    /// Adds an entry; the offset must be above the last one, the position must fit the index's
    /// 32-bit field, and the index may not be full.
    pub fn append(&mut self, offset: Offset, position: FilePosition) -> Result<()> {
        let last_offset = self.view()?.last_offset();
        if self.entries() > 0 && offset <= last_offset {
            return Err(StorageError::InvalidIndexAppend {
                path: self.path().to_path_buf(),
                reason: format!("offset {offset} is not larger than the last offset {last_offset}"),
            });
        }
        if position.index_field().is_none() {
            return Err(StorageError::InvalidIndexAppend {
                path: self.path().to_path_buf(),
                reason: format!("position {position} does not fit an index entry"),
            });
        }
        self.push(OffsetPosition { offset, position })
    }

    /// Kafka's sanity check: the last offset may not be below the base, and the file must hold
    /// whole entries.
    pub fn sanity_check(&self) -> Result<()> {
        let last_offset = self.view()?.last_offset();
        if self.entries() > 0 && last_offset < self.base_offset() {
            return Err(self.corrupt(format!(
                "last offset {last_offset} is below the base offset {}",
                self.base_offset()
            )));
        }
        self.check_whole_entries()
    }
}

impl IndexView<'_, OffsetPosition> {
    /// The last entry's offset, or the base offset when empty.
    pub fn last_offset(&self) -> Offset {
        self.last().map_or(self.base_offset(), |entry| entry.offset)
    }

    /// The entry with the largest offset ≤ `target`, or `(base, 0)`.
    pub fn lookup(&self, target: Offset) -> OffsetPosition {
        self.largest_lower_bound(target.value(), |entry| entry.offset.value())
            .unwrap_or(OffsetPosition {
                offset: self.base_offset(),
                position: FilePosition::START,
            })
    }

    /// The first entry whose position is at or after `start + fetch_size`: the offset a fetch of
    /// that many bytes from `start` cannot reach.
    pub fn fetch_upper_bound_offset(
        &self,
        start: OffsetPosition,
        fetch_size: u32,
    ) -> Option<OffsetPosition> {
        let target = start.position.bytes().saturating_add(u64::from(fetch_size));
        let target = i64::try_from(target).unwrap_or(i64::MAX);
        self.smallest_upper_bound(target, |entry| entry.position.bytes() as i64)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const BASE: i64 = 45;

    /// An entry from plain numbers.
    fn at(offset: i64, position: u32) -> OffsetPosition {
        OffsetPosition {
            offset: Offset::new(offset),
            position: FilePosition::from(position),
        }
    }

    fn index(dir: &tempfile::TempDir, max_entries: u32) -> OffsetIndex {
        OffsetIndex::open(
            &dir.path().join("00000000000000000045.index"),
            Offset::new(BASE),
            max_entries * 8,
        )
        .unwrap()
    }

    #[test]
    fn lookup_extreme_cases() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 30);
        assert_eq!(
            idx.view().unwrap().lookup(Offset::new(BASE)),
            at(BASE, 0),
            "empty index"
        );
        for i in 0..idx.max_entries() as i64 {
            idx.append(
                Offset::new(BASE + i + 1),
                FilePosition::from((i + 1) as u32),
            )
            .unwrap();
        }
        assert_eq!(idx.view().unwrap().lookup(Offset::new(BASE)), at(BASE, 0));
        assert_eq!(
            idx.view().unwrap().lookup(Offset::new(BASE + 1000)),
            idx.view().unwrap().entry(idx.entries() - 1).unwrap()
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
            idx.append(Offset::new(offset), FilePosition::from(i * 10))
                .unwrap();
            model.insert(offset, i * 10);
        }
        for target in BASE - 5..offset + 5 {
            let expected = model
                .range(..=target)
                .next_back()
                .map_or(at(BASE, 0), |(&offset, &position)| at(offset, position));
            assert_eq!(
                idx.view().unwrap().lookup(Offset::new(target)),
                expected,
                "target {target}"
            );
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
                idx.append(Offset::new(offset), FilePosition::from(i as u32 * 7)).unwrap();
                entries.push(OffsetPosition { offset: Offset::new(offset), position: FilePosition::from(i as u32 * 7) });
            }
            for target in targets {
                let target = BASE - 10 + target;
                let expected = entries
                    .iter()
                    .rev()
                    .find(|entry| entry.offset <= Offset::new(target))
                    .copied()
                    .unwrap_or(at(BASE, 0));
                proptest::prop_assert_eq!(idx.view().unwrap().lookup(Offset::new(target)), expected);
            }
        }
    }

    #[test]
    fn append_too_many_fails() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 3);
        for i in 0..3 {
            idx.append(Offset::new(BASE + i + 1), FilePosition::from(i as u32))
                .unwrap();
        }
        assert!(idx.is_full());
        assert!(
            idx.append(Offset::new(BASE + 10), FilePosition::from(10))
                .is_err()
        );
    }

    #[test]
    fn append_out_of_order_fails() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 10);
        idx.append(Offset::new(51), FilePosition::START).unwrap();
        assert!(idx.append(Offset::new(50), FilePosition::from(1)).is_err());
        assert!(idx.append(Offset::new(51), FilePosition::from(1)).is_err());
    }

    #[test]
    fn entry_overflow_fails() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 10);
        idx.append(Offset::new(BASE + 1), FilePosition::from(5))
            .unwrap();
        assert!(idx.view().unwrap().entry(0).is_some());
        assert!(idx.view().unwrap().entry(1).is_none());
    }

    #[test]
    fn truncate() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 20);
        for i in 1..10 {
            idx.append(Offset::new(BASE + i), FilePosition::from(i as u32))
                .unwrap();
        }
        idx.truncate_to(Offset::new(BASE + 12)).unwrap();
        assert_eq!(idx.entries(), 9, "past the end: no change");
        idx.truncate_to(Offset::new(BASE + 9)).unwrap();
        assert_eq!(
            idx.view().unwrap().last_offset(),
            Offset::new(BASE + 8),
            "at an entry: it and later go"
        );
        // Entries now at offsets BASE+1..=BASE+8; make a gap and truncate inside it.
        let gappy_dir = tempfile::tempdir().unwrap();
        let mut gappy = index(&gappy_dir, 20);
        for i in [2, 4, 6] {
            gappy
                .append(Offset::new(BASE + i), FilePosition::from(i as u32))
                .unwrap();
        }
        gappy.truncate_to(Offset::new(BASE + 5)).unwrap();
        assert_eq!(
            gappy.view().unwrap().last_offset(),
            Offset::new(BASE + 4),
            "between entries: the lower is kept"
        );
        idx.truncate_to(Offset::ZERO).unwrap();
        assert_eq!(idx.entries(), 0, "below everything: empty");
    }

    #[test]
    fn reopen_preserves_entries_and_lookups() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 50);
        for i in 1..=5 {
            idx.append(
                Offset::new(BASE + i * 2),
                FilePosition::from((i * 100) as u32),
            )
            .unwrap();
        }
        idx.trim_to_valid_size().unwrap();
        idx.flush().unwrap();
        let path = idx.path().to_path_buf();
        drop(idx);
        let reopened = OffsetIndex::open(&path, Offset::new(BASE), 50 * 8).unwrap();
        assert_eq!(reopened.entries(), 5);
        assert_eq!(
            reopened.view().unwrap().last_offset(),
            Offset::new(BASE + 10)
        );
        assert_eq!(
            reopened.view().unwrap().lookup(Offset::new(BASE + 5)),
            at(BASE + 4, 200)
        );
    }

    #[test]
    fn sanity_last_offset_equal_to_base_offset_passes() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 10);
        idx.append(Offset::new(BASE), FilePosition::START).unwrap();
        idx.sanity_check().unwrap();
    }

    #[test]
    fn fetch_upper_bound_offset_is_first_entry_at_or_after_start_plus_size() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 10);
        for (offset, position) in [(50, 0), (60, 100), (70, 200), (80, 300)] {
            idx.append(Offset::new(offset), FilePosition::from(position))
                .unwrap();
        }
        let start = at(50, 0);
        assert_eq!(
            idx.view()
                .unwrap()
                .fetch_upper_bound_offset(start, 150)
                .map(|e| e.offset),
            Some(Offset::new(70))
        );
        assert_eq!(
            idx.view()
                .unwrap()
                .fetch_upper_bound_offset(start, 200)
                .map(|e| e.offset),
            Some(Offset::new(70))
        );
        assert_eq!(
            idx.view().unwrap().fetch_upper_bound_offset(start, 301),
            None
        );
    }

    #[test]
    fn the_file_grows_in_allocated_steps_and_shrinks_to_its_entries_when_trimmed() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir, 100_000);
        let blocks = |idx: &OffsetIndex| std::fs::metadata(idx.path()).unwrap().blocks() * 512;
        assert_eq!(idx.file_length().unwrap(), 0, "a new index holds no space");
        idx.append(Offset::new(BASE + 1), FilePosition::from(1))
            .unwrap();
        assert_eq!(idx.file_length().unwrap(), 4096, "a page at first");
        assert!(blocks(&idx) >= 4096, "with its blocks allocated");
        for i in 2..=600 {
            idx.append(Offset::new(BASE + i), FilePosition::from(i as u32))
                .unwrap();
        }
        assert_eq!(idx.file_length().unwrap(), 8192, "then twice as much");
        assert!(blocks(&idx) >= 8192);
        assert_eq!(idx.max_entries(), 100_000, "the limit is unchanged");
        idx.trim_to_valid_size().unwrap();
        assert_eq!(idx.file_length().unwrap(), 600 * 8);
        assert_eq!(
            idx.view().unwrap().lookup(Offset::new(BASE + 300)).position,
            FilePosition::new(300)
        );
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
