//! An index file of one entry type: what the offset index and the time index share. The entry
//! type says how an entry is laid out ([`IndexEntry`]: pure encode and decode, also used by
//! `ferrolog verify` to read index files it does not open as indexes); [`IndexFile`] keeps the
//! memory-mapped file. What differs between the two indexes (their lookups, their append rules,
//! their sanity checks) is in `offset_index.rs` and `time_index.rs`.

use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use super::index_file::{IndexFile, SealedIn, Slots};
use crate::error::{Result, StorageError};
use crate::offset::{Offset, RelativeOffset};

/// One fixed-size entry of an index file, stored relative to the segment's base offset.
pub trait IndexEntry: Copy + std::fmt::Debug {
    /// Bytes per entry.
    const BYTES: usize;
    /// The entry in `slot` (exactly [`Self::BYTES`] long) of a segment based at `base_offset`.
    /// A damaged file's negative relative offset decodes below the base, for the sanity check
    /// to find.
    fn decode(slot: &[u8], base_offset: Offset) -> Self;
    /// Writes the entry into `slot` (exactly [`Self::BYTES`] long), its offset given relative to
    /// the base.
    fn encode(&self, relative_offset: RelativeOffset, slot: &mut [u8]);
    /// The offset the entry is for.
    fn offset(&self) -> Offset;
}

/// An index file of `E` entries for the segment based at `base_offset`.
#[derive(Debug)]
pub struct Index<E: IndexEntry> {
    file: IndexFile,
    base_offset: Offset,
    entry: PhantomData<E>,
}

impl<E: IndexEntry> Index<E> {
    /// Opens `path`, creating it empty when missing; a new index may grow to `max_index_bytes`.
    pub fn open(path: &Path, base_offset: Offset, max_index_bytes: u32) -> Result<Self> {
        Ok(Self {
            file: IndexFile::open(path, max_index_bytes, E::BYTES)?,
            base_offset,
            entry: PhantomData,
        })
    }

    /// Opens a sealed segment's `path` (creating it empty when missing), to be mapped in
    /// `sealed` when read.
    pub(crate) fn open_sealed(path: &Path, base_offset: Offset, sealed: SealedIn) -> Result<Self> {
        Ok(Self {
            file: IndexFile::open_sealed(path, E::BYTES, sealed)?,
            base_offset,
            entry: PhantomData,
        })
    }

    /// The segment is sealed: the index is mapped in `sealed` when read, and unmapped with it.
    pub(crate) fn seal(&mut self, sealed: SealedIn) {
        self.file.seal(sealed);
    }

    /// The entries as they are now, to read (a sealed index is mapped first, and stays mapped
    /// while the view is held).
    pub fn view(&self) -> Result<IndexView<'_, E>> {
        Ok(IndexView {
            slots: self.file.slots()?,
            base_offset: self.base_offset,
            entry: PhantomData,
        })
    }

    /// The base offset of the segment; entries store their offsets relative to it.
    pub fn base_offset(&self) -> Offset {
        self.base_offset
    }
    /// The index file's path, which follows the segment's suffix changes.
    pub fn path(&self) -> &Path {
        self.file.path()
    }
    pub(crate) fn set_path(&mut self, path: PathBuf) {
        self.file.set_path(path);
    }
    /// How many entries the index holds.
    pub fn entries(&self) -> usize {
        self.file.entries()
    }
    /// The most entries the index may hold: `segment.index.bytes` worth for a new index, and
    /// for one opened from an existing file the entries it has, until [`Self::resize`].
    pub fn max_entries(&self) -> usize {
        self.file.max_entries()
    }
    /// Bytes of the entries held.
    pub fn size_in_bytes(&self) -> u64 {
        (self.entries() * E::BYTES) as u64
    }
    /// The size the index may reach, in bytes.
    pub fn length_bytes(&self) -> u64 {
        self.file.length_bytes()
    }
    /// The file's length on disk now (it grows in allocated steps).
    #[cfg(test)]
    pub(crate) fn file_length(&self) -> Result<u64> {
        self.file.file_length()
    }

    /// Writes `entry` after the last one; the caller has checked the ordering rules.
    pub(crate) fn push(&mut self, entry: E) -> Result<()> {
        let relative =
            entry
                .offset()
                .relative_to(self.base_offset)
                .ok_or(StorageError::OffsetOverflow {
                    offset: entry.offset().value(),
                    base_offset: self.base_offset.value(),
                })?;
        let mut slot = [0u8; 16];
        let slot = &mut slot[..E::BYTES];
        entry.encode(relative, slot);
        self.file.push(slot)
    }

    /// Removes every entry whose offset is ≥ `offset`.
    pub fn truncate_to(&mut self, offset: Offset) -> Result<()> {
        let keep = {
            let view = self.view()?;
            match view.slots.largest_lower_bound(offset.value(), |slot| {
                E::decode(slot, self.base_offset).offset().value()
            }) {
                None => 0,
                Some(n) if view.decode(n).offset() == offset => n,
                Some(n) => n + 1,
            }
        };
        self.file.truncate_entries(keep);
        Ok(())
    }

    /// Removes every entry.
    pub fn truncate_all(&mut self) {
        self.file.truncate_entries(0);
    }

    /// Sets the size the index may reach (the active segment's: `segment.index.bytes`).
    pub fn resize(&mut self, max_index_bytes: u64) -> Result<bool> {
        self.file.resize(max_index_bytes)
    }
    /// Shrinks the file to its entries (an inactive segment's index).
    pub fn trim_to_valid_size(&mut self) -> Result<bool> {
        self.file.trim_to_valid_size()
    }
    /// Writes the entries to disk (msync, then fsync); an index file deleted meanwhile is no error.
    pub fn flush(&self) -> Result<()> {
        self.file.flush()
    }

    /// A failed sanity check of this index.
    pub(crate) fn corrupt(&self, reason: String) -> StorageError {
        self.file.corrupt(reason)
    }
    /// The part of Kafka's sanity check both indexes share: the file holds whole entries.
    pub(crate) fn check_whole_entries(&self) -> Result<()> {
        self.file.check_whole_entries()
    }
}

/// An index's entries as read at one moment, from [`Index::view`].
#[derive(Debug)]
pub struct IndexView<'a, E: IndexEntry> {
    slots: Slots<'a>,
    base_offset: Offset,
    entry: PhantomData<E>,
}

impl<E: IndexEntry> IndexView<'_, E> {
    /// How many entries.
    pub fn len(&self) -> usize {
        self.slots.len()
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The base offset of the segment.
    pub fn base_offset(&self) -> Offset {
        self.base_offset
    }

    /// Entry `n`, which must be below [`Self::len`].
    pub(crate) fn decode(&self, n: usize) -> E {
        E::decode(self.slots.slot(n), self.base_offset)
    }

    /// Entry `n`; `None` past the last entry.
    pub fn entry(&self, n: usize) -> Option<E> {
        (n < self.len()).then(|| self.decode(n))
    }

    /// The last entry, if any.
    pub(crate) fn last(&self) -> Option<E> {
        self.len().checked_sub(1).map(|n| self.decode(n))
    }

    /// All entries, in order.
    pub fn all_entries(&self) -> Vec<E> {
        (0..self.len()).map(|n| self.decode(n)).collect()
    }

    /// The last entry whose `key` is ≤ `target`, by binary search (the keys must not decrease).
    pub(crate) fn largest_lower_bound(&self, target: i64, key: impl Fn(E) -> i64) -> Option<E> {
        self.slots
            .largest_lower_bound(target, |slot| key(E::decode(slot, self.base_offset)))
            .map(|n| self.decode(n))
    }

    /// The first entry whose `key` is ≥ `target`, by binary search (the keys must not
    /// decrease).
    pub(crate) fn smallest_upper_bound(&self, target: i64, key: impl Fn(E) -> i64) -> Option<E> {
        self.slots
            .smallest_upper_bound(target, |slot| key(E::decode(slot, self.base_offset)))
            .map(|n| self.decode(n))
    }
}
