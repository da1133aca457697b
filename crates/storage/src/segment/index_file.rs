//! A memory-mapped file of fixed-size entries sorted by offset: the shared machinery of the
//! offset index and the time index.
//!
//! Every page of the mapping that an entry is written into has its disk block allocated first.
//! A write through a mapping into a hole of a sparse file makes the kernel allocate the block
//! at the page fault, and on a full file system that fault kills the process with SIGBUS. So
//! the file grows in steps as entries are added, each step allocated with `fallocate` before it
//! is mapped, and a step that finds no space fails as an error the caller can act on (the
//! segment then simply adds no entry: an index with fewer entries is still correct, only its
//! lookups walk further). Kafka instead sizes a new index to `segment.index.bytes` at once as a
//! sparse file; allocating that much for every active segment would cost 20 MiB of disk per
//! partition, so ferrolog keeps `segment.index.bytes` as the limit that rolls a segment and
//! allocates only what the entries use, a page at first, doubling.
//!
//! An existing file is taken at its length: every whole entry in it counts, which is why
//! inactive segments' indexes are trimmed to their valid entries, and why recovery rebuilds an
//! active segment's. Its blocks are not assumed allocated (a file Kafka wrote may be sparse):
//! the first write into it allocates them too.
//!
//! No file descriptor is kept once the file is mapped (the mapping stays valid without one),
//! as in Kafka: a broker with many segments would otherwise run out of descriptors. Growing,
//! resizing and fsync reopen the file by path.
//!
//! Nor does a sealed segment's index keep a mapping of its own: it is mapped read-only when
//! read, in its segment's slot, and unmapped when the slot closes ([`OpenFiles`]), so the
//! mappings a broker holds are bounded whatever its number of segments (each is one of the
//! process's `vm.max_map_count`, 65,530 by default). A sealed index that changes again (the
//! segment truncated back into activity, recovered, resized) maps itself writable first. Its
//! entries written through the earlier mapping need no `msync` before that mapping goes: the
//! pages stay in the page cache, the next fsync of the file (by path) writes them, and a
//! write-back error no one has seen yet is reported to that fsync too.
//!
//! On copy-on-write file systems (btrfs, ZFS) even a write into an allocated block needs a new
//! one, so there no amount of allocation ahead makes a mapped write safe on a full disk; the
//! data directories belong on ext4 or XFS, as Kafka's do.
//!
//! Not thread-safe by itself; [`crate::segment::Segment`] guards each index with a lock.

use std::fs::{File, OpenOptions};
use std::ops::Deref;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::{Mmap, MmapMut};

use super::open_files::{IndexKind, OpenFiles, SegmentSlot};
use crate::error::{Result, StorageError};

/// The first allocation step of an index that grows: one page.
const FIRST_STEP_BYTES: u64 = 4096;

/// Where a sealed index is mapped when read: its segment's slot, counted in the open segments.
#[derive(Debug, Clone)]
pub(crate) struct SealedIn {
    pub(crate) slot: Arc<SegmentSlot>,
    pub(crate) files: Arc<OpenFiles>,
    pub(crate) kind: IndexKind,
}

#[derive(Debug)]
pub(crate) struct IndexFile {
    path: PathBuf,
    /// An active index's own mapping: `None` while the file is empty (an empty mapping is not
    /// allowed), and while the index is sealed.
    mmap: Option<MmapMut>,
    /// Set while the index is sealed: it is mapped in its segment's slot when read.
    sealed: Option<SealedIn>,
    entry_size: usize,
    entries: usize,
    /// The limit from `segment.index.bytes`: a full index rolls its segment.
    max_entries: usize,
    /// Entries the file (and the mapping) holds room for.
    capacity: usize,
    /// Entries whose bytes are known to have their disk blocks.
    allocated: usize,
}

impl IndexFile {
    /// Opens `path`, creating it empty when missing. A new index may grow to `max_index_bytes`.
    pub(crate) fn open(path: &Path, max_index_bytes: u32, entry_size: usize) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(StorageError::io("open index", path))?;
        let length = file
            .metadata()
            .map_err(StorageError::io("stat index", path))?
            .len();
        let entries = (length / entry_size as u64) as usize;
        let max_entries = if length == 0 {
            (u64::from(max_index_bytes) / entry_size as u64) as usize
        } else {
            entries
        };
        Ok(Self {
            path: path.to_path_buf(),
            mmap: map(&file, length, path)?,
            sealed: None,
            entry_size,
            entries,
            max_entries,
            capacity: entries,
            allocated: 0,
        })
    }

    /// Opens a sealed segment's `path` (creating it empty when missing) without mapping it:
    /// it is mapped in `sealed` when read. It holds the entries its length does.
    pub(crate) fn open_sealed(path: &Path, entry_size: usize, sealed: SealedIn) -> Result<Self> {
        let length = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .and_then(|file| file.metadata())
            .map_err(StorageError::io("open index", path))?
            .len();
        let entries = (length / entry_size as u64) as usize;
        Ok(Self {
            path: path.to_path_buf(),
            mmap: None,
            sealed: Some(sealed),
            entry_size,
            entries,
            max_entries: entries,
            capacity: entries,
            allocated: 0,
        })
    }

    /// The segment is sealed: its own mapping goes, and the index is mapped in `sealed` when
    /// read.
    pub(crate) fn seal(&mut self, sealed: SealedIn) {
        sealed.slot.forget_mapping(sealed.kind);
        self.mmap = None;
        self.sealed = Some(sealed);
    }

    /// A sealed index about to change maps itself writable again, at the file's length.
    fn own(&mut self) -> Result<()> {
        let Some(sealed) = self.sealed.as_ref() else {
            return Ok(());
        };
        let file = self.reopen()?;
        let length = file
            .metadata()
            .map_err(StorageError::io("stat index", &self.path))?
            .len();
        let capacity = (length / self.entry_size as u64) as usize;
        if capacity < self.entries {
            return Err(self.shorter_than_entries(length));
        }
        let length = (capacity * self.entry_size) as u64;
        self.mmap = map(&file, length, &self.path)?;
        sealed.slot.forget_mapping(sealed.kind);
        self.sealed = None;
        self.capacity = capacity;
        self.allocated = 0;
        Ok(())
    }

    fn shorter_than_entries(&self, length: u64) -> StorageError {
        self.corrupt(format!(
            "the file is {length} bytes, shorter than its {} entries",
            self.entries
        ))
    }

    /// The entries as they are now, mapped first if the index is sealed and not mapped.
    pub(crate) fn slots(&self) -> Result<Slots<'_>> {
        let length = self.entries * self.entry_size;
        let bytes = match (&self.mmap, &self.sealed) {
            _ if length == 0 => EntryBytes::Own(&[]),
            (Some(mmap), _) => EntryBytes::Own(&mmap[..length]),
            (None, Some(sealed)) => {
                let mapping = sealed
                    .slot
                    .mapping(&sealed.files, sealed.kind, || {
                        self.map_read_only(length as u64)
                    })
                    .map_err(|source| match source.downcast::<StorageError>() {
                        Ok(error) => error,
                        Err(source) => StorageError::io("mmap index", &self.path)(source),
                    })?;
                EntryBytes::Shared(mapping, length)
            }
            (None, None) => {
                return Err(self.corrupt(format!("{} entries but no mapping", self.entries)));
            }
        };
        Ok(Slots {
            bytes,
            entry_size: self.entry_size,
        })
    }

    /// Maps `length` bytes of the file read-only, after checking it holds them: touching a
    /// mapped page past the end of a file kills the process.
    fn map_read_only(&self, length: u64) -> std::io::Result<Mmap> {
        let file = OpenOptions::new().read(true).open(&self.path)?;
        let file_length = file.metadata()?.len();
        if file_length < length {
            return Err(std::io::Error::other(
                self.shorter_than_entries(file_length),
            ));
        }
        crate::fault::point("index.mmap")?;
        // SAFETY: as for `map` below; the mapping is only read, below `length`, which the file
        // was just checked to hold, and only while its segment's slot or a reader holds it.
        #[allow(unsafe_code)]
        let mmap = unsafe { memmap2::MmapOptions::new().len(length as usize).map(&file) }?;
        Ok(mmap)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
    pub(crate) fn set_path(&mut self, path: PathBuf) {
        self.path = path;
    }
    pub(crate) fn entries(&self) -> usize {
        self.entries
    }
    pub(crate) fn max_entries(&self) -> usize {
        self.max_entries
    }
    /// The size the index may reach, in bytes (its file is only as long as its entries need).
    pub(crate) fn length_bytes(&self) -> u64 {
        (self.max_entries * self.entry_size) as u64
    }
    pub(crate) fn file_length(&self) -> Result<u64> {
        std::fs::metadata(&self.path)
            .map(|metadata| metadata.len())
            .map_err(StorageError::io("stat index", &self.path))
    }

    /// A sanity-check failure of this index.
    pub(crate) fn corrupt(&self, reason: String) -> StorageError {
        StorageError::Corrupt {
            path: self.path.clone(),
            position: 0,
            reason,
        }
    }

    /// The part of Kafka's sanity check both indexes share: the file holds whole entries.
    pub(crate) fn check_whole_entries(&self) -> Result<()> {
        let length = self.file_length()?;
        if length % self.entry_size as u64 != 0 {
            return Err(self.corrupt(format!(
                "length {length} is not a multiple of {}",
                self.entry_size
            )));
        }
        Ok(())
    }

    fn reopen(&self) -> Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)
            .map_err(StorageError::io("open index", &self.path))
    }

    /// Writes one entry after the last, first allocating room for it if needed. The caller has
    /// checked ordering. Fails, writing nothing, when the index is full or no disk space can be
    /// allocated for the entry ([`StorageError::NoSpace`]).
    pub(crate) fn push(&mut self, entry: &[u8]) -> Result<()> {
        self.own()?;
        if self.entries >= self.max_entries {
            return Err(StorageError::InvalidIndexAppend {
                path: self.path.clone(),
                reason: format!("the index is full at {} entries", self.max_entries),
            });
        }
        if self.entries >= self.allocated {
            self.allocate_step()?;
        }
        let start = self.entries * self.entry_size;
        if let Some(mmap) = &mut self.mmap {
            mmap[start..start + self.entry_size].copy_from_slice(entry);
        }
        self.entries += 1;
        Ok(())
    }

    /// Allocates disk blocks for the next step of entries (growing the file and the mapping
    /// when the step reaches past them): twice what is allocated, at least a page, at most
    /// the limit.
    fn allocate_step(&mut self) -> Result<()> {
        let entry = self.entry_size as u64;
        let allocated_bytes = self.allocated as u64 * entry;
        let wanted = (allocated_bytes * 2)
            .max(FIRST_STEP_BYTES)
            .min(self.max_entries as u64 * entry);
        let end = round_down(wanted, self.entry_size).max((self.entries as u64 + 1) * entry);
        let file = self.reopen()?;
        // The entries already there hold data: only where `fallocate` is missing does this
        // matter, and zeros must not be written over them.
        let written_bytes = (self.entries * self.entry_size) as u64;
        crate::fault::point("index.allocate")
            .and_then(|()| allocate(&file, allocated_bytes, written_bytes, end))
            .map_err(StorageError::io("allocate index", &self.path))?;
        let allocated = (end / entry) as usize;
        if allocated > self.capacity {
            // The old mapping stays until the new one exists: a failure leaves the index as
            // it was (the file may have grown, which only its next step reuses).
            self.mmap = map(&file, end, &self.path)?;
            self.capacity = allocated;
        }
        self.allocated = allocated;
        Ok(())
    }

    /// Forgets entries from `n` on.
    pub(crate) fn truncate_entries(&mut self, n: usize) {
        self.entries = self.entries.min(n);
    }

    /// Sets the limit to `new_bytes` rounded down to whole entries; the file shrinks when it
    /// holds more room than the new limit (entries past it are dropped). Returns whether the
    /// limit or the file's size changed.
    pub(crate) fn resize(&mut self, new_bytes: u64) -> Result<bool> {
        self.own()?;
        let max_entries =
            (round_down(new_bytes, self.entry_size) / self.entry_size as u64) as usize;
        let capacity = self.capacity.min(max_entries);
        let length = (capacity * self.entry_size) as u64;
        let file_changes = length != self.file_length()?;
        let changed = max_entries != self.max_entries || file_changes;
        if file_changes {
            // The new mapping is made before the file changes, so a failure leaves the index
            // as it was. A mapping may reach past the end of the file while nothing reads there.
            let file = self.reopen()?;
            let mmap = map(&file, length, &self.path)?;
            file.set_len(length)
                .map_err(StorageError::io("resize index", &self.path))?;
            self.mmap = mmap;
            self.capacity = capacity;
            self.allocated = self.allocated.min(capacity);
        }
        self.max_entries = max_entries;
        self.entries = self.entries.min(max_entries);
        Ok(changed)
    }

    /// Shrinks the file to its valid entries (done when a segment stops being active).
    pub(crate) fn trim_to_valid_size(&mut self) -> Result<bool> {
        self.resize((self.entries * self.entry_size) as u64)
    }

    /// Writes the mapped pages back to the file (msync; a sealed index has no writable
    /// mapping) and fsyncs the file.
    pub(crate) fn flush(&self) -> Result<()> {
        if let Some(mmap) = &self.mmap {
            mmap.flush()
                .map_err(StorageError::sync("flush index", &self.path))?;
        }
        match self.reopen() {
            Ok(file) => crate::fault::point("index.fsync")
                .and_then(|()| file.sync_all())
                .map_err(StorageError::sync("fsync index", &self.path)),
            // The segment was deleted meanwhile (retention, compaction): nothing to make
            // durable. Most flushes run outside the log's lock, so they can meet this race.
            Err(StorageError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Ok(())
            }
            Err(error) => Err(error),
        }
    }
}

/// The bytes of an index's entries: borrowed from its own mapping, or shared with its
/// sealed segment's slot (kept mapped while held).
#[derive(Debug)]
enum EntryBytes<'a> {
    Own(&'a [u8]),
    Shared(Arc<Mmap>, usize),
}

impl Deref for EntryBytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Self::Own(bytes) => bytes,
            Self::Shared(mapping, length) => &mapping[..*length],
        }
    }
}

/// An index's entries as read at one moment: fixed-size slots, sorted.
#[derive(Debug)]
pub(crate) struct Slots<'a> {
    bytes: EntryBytes<'a>,
    entry_size: usize,
}

impl Slots<'_> {
    /// How many entries.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len() / self.entry_size
    }

    /// The bytes of entry `n`, which must be below [`Self::len`].
    pub(crate) fn slot(&self, n: usize) -> &[u8] {
        let start = n * self.entry_size;
        &self.bytes[start..start + self.entry_size]
    }

    /// Largest-lower-bound search: the highest slot whose key is ≤ `target`, where `key` reads
    /// a slot's sort key; `None` when every entry is above `target` or there are none.
    pub(crate) fn largest_lower_bound(
        &self,
        target: i64,
        key: impl Fn(&[u8]) -> i64,
    ) -> Option<usize> {
        if self.len() == 0 || key(self.slot(0)) > target {
            return None;
        }
        let (mut low, mut high) = (0usize, self.len() - 1);
        while low < high {
            let mid = low + (high - low).div_ceil(2);
            if key(self.slot(mid)) <= target {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        Some(low)
    }

    /// Smallest-upper-bound search: the lowest slot whose key is ≥ `target`.
    pub(crate) fn smallest_upper_bound(
        &self,
        target: i64,
        key: impl Fn(&[u8]) -> i64,
    ) -> Option<usize> {
        if self.len() == 0 || key(self.slot(self.len() - 1)) < target {
            return None;
        }
        let (mut low, mut high) = (0usize, self.len() - 1);
        while low < high {
            let mid = low + (high - low) / 2;
            if key(self.slot(mid)) >= target {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        Some(low)
    }
}

fn round_down(bytes: u64, entry_size: usize) -> u64 {
    bytes - bytes % entry_size as u64
}

/// Gives `[from, to)` of the file disk blocks (extending the file to `to` if shorter):
/// `fallocate` where the file system has it; where it does not, zeros written from `written`
/// (the bytes below it hold entries, which a write gave their blocks).
fn allocate(file: &File, from: u64, written: u64, to: u64) -> std::io::Result<()> {
    if to <= from {
        return Ok(());
    }
    match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), from, to - from) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::OPNOTSUPP) => {
            let start = from.max(written);
            if to <= start {
                return Ok(());
            }
            file.write_all_at(&vec![0u8; (to - start) as usize], start)
        }
        Err(error) => Err(error.into()),
    }
}

#[allow(unsafe_code)]
fn map(file: &File, length: u64, path: &Path) -> Result<Option<MmapMut>> {
    if length == 0 {
        return Ok(None);
    }
    crate::fault::point("index.mmap").map_err(StorageError::io("mmap index", path))?;
    // SAFETY: the mapping belongs to this IndexFile (no other code maps or writes the file);
    // every read is of an entry below `entries` and every write of the entry at `entries`,
    // both below `capacity`, the mapped length; a write goes only into an entry whose block
    // was allocated first; a remap is made before the mapping it replaces is dropped. The data
    // directory's lock keeps other ferrolog or Kafka processes from truncating the file
    // underneath the mapping.
    let mmap = unsafe {
        memmap2::MmapOptions::new()
            .len(length as usize)
            .map_mut(file)
    }
    .map_err(StorageError::io("mmap index", path))?;
    Ok(Some(mmap))
}
