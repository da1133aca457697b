//! One data directory (`log.dirs` entry): its lock, its identity, its checkpoints, its
//! clean-shutdown marker, and whether it still serves.
//!
//! Files at the top of a data directory:
//!
//! | file | meaning |
//! |---|---|
//! | `.lock` | held with an exclusive non-blocking lock for the process's life; removed at shutdown |
//! | `meta.properties` | cluster and node the directory belongs to |
//! | `.kafka_cleanshutdown` | present only after a clean shutdown; deleted as soon as it is read |
//! | `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint` | per partition of this directory |

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::checkpoint::{
    CLEANER_OFFSET_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, OffsetMap, RECOVERY_POINT_CHECKPOINT,
    read_offset_checkpoint, write_offset_checkpoint,
};
use crate::error::{Result, StorageError};
use crate::fs::{atomic_write, atomic_write_private, fsync_dir, remove_if_exists};
use crate::health::DirHealth;

/// The lock file at a data directory's top, held with an exclusive `flock` while in use.
pub const LOCK_FILE: &str = ".lock";
/// The clean-shutdown marker, written at a clean shutdown and deleted as soon as it is read.
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";

/// Loading progress of one directory, as Kafka's `remainingLogsToRecover` and
/// `remainingSegmentsToRecover` gauges report it.
#[derive(Debug, Default)]
pub struct LoadProgress {
    pub remaining_logs: AtomicUsize,
    pub remaining_segments: AtomicUsize,
}

/// One opened data directory of `log.dirs`: its lock, health, markers and loading progress.
#[derive(Debug)]
pub struct DataDir {
    path: PathBuf,
    health: Arc<DirHealth>,
    lock: Mutex<Option<File>>,
    had_clean_shutdown: bool,
    /// Every log of the directory has been loaded (a shutdown before that must not write the
    /// clean-shutdown marker: the unloaded logs were never recovered, KAFKA-15375).
    loaded: AtomicBool,
    pub(crate) progress: LoadProgress,
    /// Held while a checkpoint file is replaced: two writers of one file (the scheduler's job
    /// and a deletion or a move, say) would share its temporary file.
    checkpoint_writes: Mutex<()>,
    /// Held while the record of documents' generations is replaced: the documents' owners
    /// write changes of different documents independently.
    pub(crate) generation_writes: Mutex<()>,
}

impl DataDir {
    /// Creates the directory if missing, checks it is a writable directory, and takes its lock.
    /// Another process holding the lock is fatal; other failures are I/O errors for the caller
    /// to turn into an offline directory.
    pub(crate) fn open(path: &Path) -> Result<Self> {
        if !path.exists() {
            std::fs::create_dir_all(path)
                .map_err(StorageError::io("create data directory", path))?;
            if let Some(parent) = path.parent() {
                fsync_dir(parent)?;
            }
        }
        let metadata =
            std::fs::metadata(path).map_err(StorageError::io("stat data directory", path))?;
        if !metadata.is_dir() {
            return Err(StorageError::io("use data directory", path)(
                std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            ));
        }
        let lock_path = path.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(StorageError::io("create lock file", &lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StorageError::Fatal(format!(
                    "another process (ferrolog or Kafka) is using the data directory {}: its {LOCK_FILE} is locked",
                    path.display()
                )));
            }
            Err(std::fs::TryLockError::Error(error)) => {
                return Err(StorageError::io("lock", &lock_path)(error));
            }
        }
        let marker = path.join(CLEAN_SHUTDOWN_FILE);
        let had_clean_shutdown = marker.exists();
        if had_clean_shutdown {
            // Deleted at once, so a crash during this run is recovered next time (KAFKA-10471).
            remove_if_exists(&marker)?;
            fsync_dir(path)?;
        }
        Ok(Self {
            health: Arc::new(DirHealth::new(path)),
            path: path.to_path_buf(),
            lock: Mutex::new(Some(lock)),
            had_clean_shutdown,
            loaded: AtomicBool::new(false),
            progress: LoadProgress::default(),
            checkpoint_writes: Mutex::new(()),
            generation_writes: Mutex::new(()),
        })
    }

    /// The directory's absolute path.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// The directory's health, shared with every log in it.
    pub fn health(&self) -> &Arc<DirHealth> {
        &self.health
    }
    /// Whether an I/O error has taken the directory offline (until the process restarts).
    pub fn is_offline(&self) -> bool {
        self.health.is_offline()
    }
    /// Whether the clean-shutdown marker was there at startup (its logs then skip recovery).
    pub fn had_clean_shutdown(&self) -> bool {
        self.had_clean_shutdown
    }
    pub(crate) fn mark_loaded(&self) {
        self.loaded.store(true, Ordering::Release);
    }
    /// Whether every log of the directory has loaded; only then may shutdown write the marker.
    pub fn is_loaded(&self) -> bool {
        self.loaded.load(Ordering::Acquire)
    }
    /// Logs still to load at startup (Kafka's `remainingLogsToRecover`).
    pub fn remaining_logs_to_recover(&self) -> usize {
        self.progress.remaining_logs.load(Ordering::Relaxed)
    }
    /// Segments still to recover in the logs loading now (Kafka's `remainingSegmentsToRecover`).
    pub fn remaining_segments_to_recover(&self) -> usize {
        self.progress.remaining_segments.load(Ordering::Relaxed)
    }

    /// Free bytes of the file system holding the directory (0 when it cannot be read).
    pub fn free_bytes(&self) -> u64 {
        fs4::available_space(&self.path).unwrap_or(0)
    }

    /// The size of the file system holding the directory, 0 if it cannot be read.
    pub fn total_bytes(&self) -> u64 {
        fs4::total_space(&self.path).unwrap_or(0)
    }

    /// Reads a checkpoint of this directory; a malformed one is reported and read as empty
    /// (every log then recovers from offset 0), as Kafka's startup does.
    pub(crate) fn read_checkpoint_or_empty(&self, name: &str) -> OffsetMap {
        let path = self.path.join(name);
        match read_offset_checkpoint(&path) {
            Ok(entries) => entries,
            Err(error) => {
                tracing::warn!(error = %error, "ignoring an unreadable checkpoint; the logs of this directory recover from offset 0");
                OffsetMap::new()
            }
        }
    }

    pub(crate) fn write_recovery_points(&self, entries: &OffsetMap) -> Result<()> {
        self.write_checkpoint(RECOVERY_POINT_CHECKPOINT, entries)
    }

    /// Replaces the cleaner's checkpoint (`cleaner-offset-checkpoint`).
    pub(crate) fn write_cleaner_offsets(&self, entries: &OffsetMap) -> Result<()> {
        self.write_checkpoint(CLEANER_OFFSET_CHECKPOINT, entries)
    }

    /// Replaces the offset checkpoint `name` of this directory with `entries`.
    pub(crate) fn write_checkpoint(&self, name: &str, entries: &OffsetMap) -> Result<()> {
        self.health.ensure_online()?;
        let _writing = self.checkpoint_writes.lock();
        self.observed(write_offset_checkpoint(&self.path.join(name), entries))
    }

    /// Replaces the document file `name` with `text` (see `documents`).
    /// Writes a document, readable by the broker's user alone (documents hold credentials
    /// and authorization).
    pub(crate) fn write_document(&self, name: &str, text: &str) -> Result<()> {
        self.health.ensure_online()?;
        self.observed(atomic_write_private(&self.path.join(name), text.as_bytes()))
    }

    /// Records `reserved_up_to` as the first producer id not yet reserved.
    pub(crate) fn write_producer_ids(&self, reserved_up_to: i64) -> Result<()> {
        self.health.ensure_online()?;
        self.observed(atomic_write(
            &self.path.join(super::producer_ids::PRODUCER_IDS_FILE),
            super::producer_ids::format(reserved_up_to).as_bytes(),
        ))
    }

    pub(crate) fn write_log_start_offsets(&self, entries: &OffsetMap) -> Result<()> {
        self.health.ensure_online()?;
        let _writing = self.checkpoint_writes.lock();
        self.observed(write_offset_checkpoint(
            &self.path.join(LOG_START_OFFSET_CHECKPOINT),
            entries,
        ))
    }

    /// Writes the clean-shutdown marker (Kafka 3.7's JSON form; older Kafka reads only its
    /// existence) and makes it durable.
    pub(crate) fn write_clean_shutdown_marker(&self) -> Result<()> {
        let marker = self.path.join(CLEAN_SHUTDOWN_FILE);
        let result = std::fs::write(&marker, br#"{"version":0,"brokerEpoch":-1}"#)
            .map_err(StorageError::io("write", &marker))
            .and_then(|()| {
                File::open(&marker)
                    .and_then(|file| file.sync_all())
                    .map_err(StorageError::sync("fsync", &marker))
            })
            .and_then(|()| fsync_dir(&self.path));
        self.observed(result)
    }

    /// Unlocks and deletes `.lock`.
    pub(crate) fn release_lock(&self) -> Result<()> {
        if let Some(lock) = self.lock.lock().take() {
            drop(lock);
            remove_if_exists(&self.path.join(LOCK_FILE))?;
        }
        Ok(())
    }

    /// Drops the lock without deleting the file (an offline directory).
    pub(crate) fn drop_lock(&self) {
        self.lock.lock().take();
    }

    fn observed<T>(&self, result: Result<T>) -> Result<T> {
        if let Err(error) = &result {
            self.health.observe(error);
        }
        result
    }
}
