//! The sealed segments held open at once, at most a limit
//! (`ferrolog.max.open.sealed.segments`): a partition's active segment keeps its `.log` open
//! and its indexes mapped (appends go there); a sealed one opens its `.log` and maps an index
//! when something reads them, and closes and unmaps them all again when others were read more
//! recently and the limit is reached. So the file descriptors and memory mappings a broker
//! holds for its data are bounded by its partitions and this limit, whatever the number of
//! segments: tiny segments rolled by the thousand, a long retention, a Kafka data directory
//! brought over.
//!
//! Kafka keeps every segment's file open, and every index it has read mapped; a broker with
//! many segments needs a high `ulimit -n` and `vm.max_map_count` there, and one that runs out
//! refuses its work. Here a file closed too early costs one `open` when it is read again, an
//! index one `mmap`.
//!
//! A file with writes not yet fsynced through it is never closed: the fsync that makes them
//! durable must see their errors. A reader that got the file or a mapping before it was closed
//! keeps it until done (it closes with its last holder), so the bound can be exceeded by reads
//! in progress, briefly.

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use memmap2::Mmap;
use parking_lot::Mutex;

/// The default of `ferrolog.max.open.sealed.segments`.
pub const DEFAULT_MAX_OPEN_SEALED: usize = 1000;

/// The sealed segments open now, across every log that shares it.
#[derive(Debug)]
pub struct OpenFiles {
    limit: usize,
    open: Mutex<Vec<Weak<SegmentSlot>>>,
    /// A counter standing for time: each use of a file takes the next value.
    uses: AtomicU64,
    reopened: AtomicU64,
    mapped: AtomicU64,
}

/// Which of a segment's indexes a mapping is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexKind {
    /// The `.index`.
    Offset = 0,
    /// The `.timeindex`.
    Time = 1,
}

/// One segment's `.log` descriptor and, once it is sealed, its index mappings, each when it
/// has them. An active segment's indexes own their mappings ([`super::index_file`]).
#[derive(Debug)]
pub(crate) struct SegmentSlot {
    file: Mutex<Option<Arc<File>>>,
    /// A sealed segment's index mappings, by [`IndexKind`].
    mappings: Mutex<[Option<Arc<Mmap>>; 2]>,
    last_used: AtomicU64,
    /// A sealed segment's file, which [`OpenFiles`] may close; an active segment's is not.
    sealed: AtomicBool,
    /// Bytes were written through the file since its last fsync.
    unsynced: AtomicBool,
}

impl OpenFiles {
    /// At most `limit` sealed segments' files open (at least one).
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit: limit.max(1),
            open: Mutex::new(Vec::new()),
            uses: AtomicU64::new(0),
            reopened: AtomicU64::new(0),
            mapped: AtomicU64::new(0),
        })
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Sealed segments with their file open or an index mapped now.
    pub fn open_count(&self) -> usize {
        let mut open = self.open.lock();
        open.retain(|slot| slot.upgrade().is_some_and(|slot| slot.is_open()));
        open.len()
    }

    /// Files of sealed segments opened again after they were closed (or opened lazily), since
    /// start.
    pub fn reopened(&self) -> u64 {
        self.reopened.load(Ordering::Relaxed)
    }

    /// Indexes of sealed segments mapped again after they were unmapped (or mapped lazily),
    /// since start.
    pub fn remapped(&self) -> u64 {
        self.mapped.load(Ordering::Relaxed)
    }

    fn next_use(&self) -> u64 {
        self.uses.fetch_add(1, Ordering::Relaxed)
    }

    /// Counts `slot`, a sealed segment open now, and closes the least recently used
    /// others while more than the limit are open.
    fn admit(&self, slot: &Arc<SegmentSlot>) {
        let mut open = self.open.lock();
        open.retain(|other| other.upgrade().is_some_and(|other| other.is_open()));
        if !open
            .iter()
            .any(|other| std::ptr::eq(other.as_ptr(), Arc::as_ptr(slot)))
        {
            open.push(Arc::downgrade(slot));
        }
        while open.len() > self.limit {
            let coldest = open
                .iter()
                .enumerate()
                .filter_map(|(index, other)| Some((index, other.upgrade()?)))
                .filter(|(_, other)| !Arc::ptr_eq(other, slot) && other.may_close())
                .min_by_key(|(_, other)| other.last_used.load(Ordering::Relaxed));
            let Some((index, coldest)) = coldest else {
                // Every other open file has writes to fsync, or is being read: over the limit
                // until they are done.
                break;
            };
            coldest.close();
            open.swap_remove(index);
        }
    }
}

impl SegmentSlot {
    /// A slot holding `file`, an active segment's (never closed by [`OpenFiles`]) until
    /// [`SegmentSlot::seal`].
    pub(crate) fn open(file: File) -> Arc<Self> {
        Arc::new(Self {
            file: Mutex::new(Some(Arc::new(file))),
            mappings: Mutex::new([None, None]),
            last_used: AtomicU64::new(0),
            sealed: AtomicBool::new(false),
            unsynced: AtomicBool::new(false),
        })
    }

    /// A sealed segment's slot with its file not open yet.
    pub(crate) fn closed() -> Arc<Self> {
        Arc::new(Self {
            file: Mutex::new(None),
            mappings: Mutex::new([None, None]),
            last_used: AtomicU64::new(0),
            sealed: AtomicBool::new(true),
            unsynced: AtomicBool::new(false),
        })
    }

    fn is_open(&self) -> bool {
        self.file.lock().is_some() || self.mappings.lock().iter().any(Option::is_some)
    }

    /// Whether the slot may be closed now: sealed, nothing to fsync, something open, and
    /// nothing being handed out this instant.
    fn may_close(&self) -> bool {
        if !self.sealed.load(Ordering::Acquire) || self.unsynced.load(Ordering::Acquire) {
            return false;
        }
        let (Some(file), Some(mappings)) = (self.file.try_lock(), self.mappings.try_lock()) else {
            return false;
        };
        file.is_some() || mappings.iter().any(Option::is_some)
    }

    fn close(&self) {
        if let Some(mut file) = self.file.try_lock() {
            *file = None;
        }
        if let Some(mut mappings) = self.mappings.try_lock() {
            *mappings = [None, None];
        }
    }

    /// The segment is sealed: from now on `files` may close its file.
    pub(crate) fn seal(self: &Arc<Self>, files: &OpenFiles) {
        self.sealed.store(true, Ordering::Release);
        if self.is_open() {
            self.last_used.store(files.next_use(), Ordering::Relaxed);
            files.admit(self);
        }
    }

    /// The file, opened with `open` if it is closed, and then counted in `files` (a sealed
    /// segment's); `None` for an active segment's, which is never closed.
    pub(crate) fn get(
        self: &Arc<Self>,
        files: Option<&OpenFiles>,
        open: impl FnOnce() -> io::Result<File>,
    ) -> io::Result<Arc<File>> {
        if let Some(files) = files {
            self.last_used.store(files.next_use(), Ordering::Relaxed);
        }
        let reopened = {
            let mut slot = self.file.lock();
            if let Some(file) = slot.as_ref() {
                return Ok(Arc::clone(file));
            }
            let file = Arc::new(open()?);
            *slot = Some(Arc::clone(&file));
            file
        };
        if let Some(files) = files {
            files.reopened.fetch_add(1, Ordering::Relaxed);
            if self.sealed.load(Ordering::Acquire) {
                files.admit(self);
            }
        }
        Ok(reopened)
    }

    /// The `kind` index's mapping, made with `map` if there is none, and then counted in
    /// `files` (the slot is a sealed segment's).
    pub(crate) fn mapping(
        self: &Arc<Self>,
        files: &OpenFiles,
        kind: IndexKind,
        map: impl FnOnce() -> io::Result<Mmap>,
    ) -> io::Result<Arc<Mmap>> {
        self.last_used.store(files.next_use(), Ordering::Relaxed);
        let made = {
            let mut mappings = self.mappings.lock();
            if let Some(mapping) = &mappings[kind as usize] {
                return Ok(Arc::clone(mapping));
            }
            let mapping = Arc::new(map()?);
            mappings[kind as usize] = Some(Arc::clone(&mapping));
            mapping
        };
        files.mapped.fetch_add(1, Ordering::Relaxed);
        files.admit(self);
        Ok(made)
    }

    /// Drops the `kind` index's mapping: the index changes and maps itself again.
    pub(crate) fn forget_mapping(&self, kind: IndexKind) {
        self.mappings.lock()[kind as usize] = None;
    }

    /// Bytes were written through the file: it stays open until they are fsynced.
    pub(crate) fn written(&self) {
        self.unsynced.store(true, Ordering::Release);
    }

    /// Everything written before the fsync that just ended is durable.
    pub(crate) fn synced(&self) {
        self.unsynced.store(false, Ordering::Release);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn scratch_file(dir: &std::path::Path, name: &str) -> io::Result<File> {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(name))
    }

    #[test]
    fn at_most_the_limit_of_sealed_files_stay_open_the_coldest_closed_first() {
        let dir = tempfile::tempdir().unwrap();
        let files = OpenFiles::new(2);
        let slots: Vec<Arc<SegmentSlot>> = (0..4).map(|_| SegmentSlot::closed()).collect();
        for (index, slot) in slots.iter().enumerate() {
            slot.get(Some(&files), || {
                scratch_file(dir.path(), &format!("{index}"))
            })
            .unwrap();
        }
        assert_eq!(files.open_count(), 2);
        assert!(
            !slots[0].is_open() && !slots[1].is_open(),
            "the coldest went first"
        );
        // Using 2 makes 3 the coldest.
        slots[2].get(Some(&files), || unreachable!()).unwrap();
        slots[0]
            .get(Some(&files), || scratch_file(dir.path(), "0"))
            .unwrap();
        assert!(slots[0].is_open() && slots[2].is_open() && !slots[3].is_open());
        assert_eq!(files.reopened(), 5);
    }

    #[test]
    fn active_files_and_files_with_unsynced_writes_stay_open() {
        let dir = tempfile::tempdir().unwrap();
        let files = OpenFiles::new(1);
        let active = SegmentSlot::open(scratch_file(dir.path(), "active").unwrap());
        let written = SegmentSlot::open(scratch_file(dir.path(), "written").unwrap());
        written.written();
        written.seal(&files);
        let read = SegmentSlot::closed();
        read.get(Some(&files), || scratch_file(dir.path(), "read"))
            .unwrap();
        assert!(active.is_open() && written.is_open(), "not closed");
        assert_eq!(
            files.open_count(),
            2,
            "over the limit while writes wait for their fsync"
        );
        written.synced();
        let other = SegmentSlot::closed();
        other
            .get(Some(&files), || scratch_file(dir.path(), "other"))
            .unwrap();
        assert_eq!(files.open_count(), 1);
        assert!(active.is_open(), "an active segment's file is never closed");
    }

    #[test]
    fn a_reader_keeps_its_file_after_it_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let files = OpenFiles::new(1);
        let first = SegmentSlot::closed();
        let held = first
            .get(Some(&files), || scratch_file(dir.path(), "a"))
            .unwrap();
        SegmentSlot::closed()
            .get(Some(&files), || scratch_file(dir.path(), "b"))
            .unwrap();
        assert!(!first.is_open());
        use std::os::unix::fs::FileExt;
        held.write_all_at(b"still readable", 0).unwrap();
    }

    fn mapped(dir: &std::path::Path, name: &str) -> io::Result<Mmap> {
        let file = scratch_file(dir, name)?;
        file.set_len(4096)?;
        // SAFETY: a scratch file of this test alone, 4 KiB long, only read.
        #[allow(unsafe_code)]
        unsafe {
            Mmap::map(&file)
        }
    }

    #[test]
    fn index_mappings_count_as_their_segment_open_and_go_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let files = OpenFiles::new(1);
        let first = SegmentSlot::closed();
        let held = first
            .mapping(&files, IndexKind::Time, || mapped(dir.path(), "a"))
            .unwrap();
        first
            .mapping(&files, IndexKind::Time, || unreachable!("mapped once"))
            .unwrap();
        assert_eq!(files.open_count(), 1);
        let second = SegmentSlot::closed();
        second
            .mapping(&files, IndexKind::Offset, || mapped(dir.path(), "b"))
            .unwrap();
        assert!(!first.is_open(), "the colder segment's mapping went");
        assert_eq!(files.open_count(), 1);
        assert_eq!(files.remapped(), 2);
        assert_eq!(held.len(), 4096, "a reader keeps what it holds");
        first
            .mapping(&files, IndexKind::Time, || mapped(dir.path(), "a"))
            .unwrap();
        assert!(!second.is_open());
        assert_eq!(files.remapped(), 3);
    }
}
