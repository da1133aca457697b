//! A segment's files as a whole: flushes (the `.log` and `.txnindex`, then the indexes),
//! suffix changes, moves to another directory, and deletion.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Segment, with_added_suffix, without_suffix};
use crate::error::Result;
use crate::fs::{remove_if_exists, rename_if_exists};

impl Segment {
    /// fsyncs the `.log`, then the indexes, if anything changed since the last flush.
    pub fn flush(&self) -> Result<()> {
        let _flushing = self.flushing.lock();
        self.flush_records_locked()?;
        if !self.indexes_dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let unflushed = StillDirty([&self.indexes_dirty]);
        self.offset_index
            .read()
            .flush()
            .and_then(|()| self.time_index.read().flush())?;
        unflushed.flushed();
        Ok(())
    }

    /// fsyncs the `.log` and the `.txnindex`, if they changed since the last flush, but not the
    /// offset and time indexes, which stay marked for the next [`Segment::flush`]. For the
    /// segment holding the log's recovery point only: recovery after a crash re-reads that
    /// segment whole and rebuilds both its indexes (as Kafka's does), so fsyncing them would buy
    /// nothing, and with `flush.messages=1` it would cost two more fsyncs per append.
    pub fn flush_records(&self) -> Result<()> {
        let _flushing = self.flushing.lock();
        self.flush_records_locked()
    }

    fn flush_records_locked(&self) -> Result<()> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        // The indexes too, as any write marks them: what failed may have been half written.
        let unflushed = StillDirty([&self.dirty, &self.indexes_dirty]);
        self.log
            .flush()
            .and_then(|()| self.txn_index.lock().fsync())?;
        unflushed.flushed();
        Ok(())
    }

    /// Renames every file of the segment from suffix `old` to `new` (`""`, `.deleted`, `.swap`,
    /// `.cleaned`), e.g. `…0.log` → `…0.log.deleted`.
    pub fn change_file_suffixes(&self, old: &str, new: &str) -> Result<()> {
        let rename = |path: PathBuf| -> Result<PathBuf> {
            let stem = if old.is_empty() {
                path.clone()
            } else {
                without_suffix(&path, old).unwrap_or_else(|| path.clone())
            };
            let target = with_added_suffix(&stem, new);
            rename_if_exists(&path, &target)?;
            Ok(target)
        };
        let log_target = rename(self.log.path())?;
        self.log.set_path(log_target);
        let mut offset_index = self.offset_index.write();
        let target = rename(offset_index.path().to_path_buf())?;
        offset_index.set_path(target);
        let mut time_index = self.time_index.write();
        let target = rename(time_index.path().to_path_buf())?;
        time_index.set_path(target);
        // The `.txnindex` goes with its segment, as Kafka's `changeFileSuffixes` takes it.
        let mut txn_index = self.txn_index.lock();
        let target = rename(txn_index.path().to_path_buf())?;
        txn_index.set_path(target);
        Ok(())
    }

    /// Points every file of the segment into `dir`, keeping their names, after their partition
    /// directory was renamed to `dir` (open handles follow a rename; only the paths change).
    pub fn moved_to(&self, dir: &Path) {
        let moved = |path: &Path| match path.file_name() {
            Some(name) => dir.join(name),
            None => path.to_path_buf(),
        };
        self.log.set_path(moved(&self.log.path()));
        let mut offset_index = self.offset_index.write();
        let path = moved(offset_index.path());
        offset_index.set_path(path);
        let mut time_index = self.time_index.write();
        let path = moved(time_index.path());
        time_index.set_path(path);
        let mut txn_index = self.txn_index.lock();
        let path = moved(txn_index.path());
        txn_index.set_path(path);
    }

    /// The segment's `.txnindex` path, with the same suffix as its `.log`; the file may not exist.
    pub fn txn_index_path(&self) -> PathBuf {
        self.txn_index.lock().path().to_path_buf()
    }

    /// Deletes every file of the segment (a missing index is fine).
    pub fn delete_files(&self) -> Result<()> {
        self.file_paths()
            .iter()
            .try_for_each(|path| remove_if_exists(path).map(|_| ()))
    }

    /// Paths of the segment's files: `.log`, `.index`, `.timeindex` and `.txnindex` (which
    /// may not exist).
    pub fn file_paths(&self) -> [PathBuf; 4] {
        [
            self.log.path(),
            self.offset_index.read().path().to_path_buf(),
            self.time_index.read().path().to_path_buf(),
            self.txn_index_path(),
        ]
    }
}

/// The dirty flags a flush cleared, set again when it is dropped before its fsyncs ended (an
/// error, or a panic): what it was to write stays marked for the next flush, which would
/// otherwise find it clean and let the recovery point pass data never fsynced.
struct StillDirty<'a, const N: usize>([&'a AtomicBool; N]);

impl<const N: usize> StillDirty<'_, N> {
    /// The fsyncs ended: the flags stay cleared.
    fn flushed(self) {
        std::mem::forget(self);
    }
}

impl<const N: usize> Drop for StillDirty<'_, N> {
    fn drop(&mut self) {
        for flag in self.0 {
            flag.store(true, Ordering::Release);
        }
    }
}
