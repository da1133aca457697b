//! Whether a data directory still serves. Every log in a directory shares one [`DirHealth`];
//! the first I/O error in any of them takes the whole directory offline (Kafka's log-dir
//! failure), after which its logs fail fast with [`StorageError::LogDirOffline`] naming the
//! directory, while the other directories keep serving.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Result, StorageError};

/// Whether one data directory still serves: online until its first I/O error, offline after.
#[derive(Debug)]
pub struct DirHealth {
    dir: PathBuf,
    offline: AtomicBool,
}

impl DirHealth {
    /// The health of `dir`, online to begin with.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            offline: AtomicBool::new(false),
        }
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// True once the directory is offline, which lasts until the process restarts.
    pub fn is_offline(&self) -> bool {
        self.offline.load(Ordering::Acquire)
    }

    /// Fails with [`StorageError::LogDirOffline`] once the directory is offline.
    pub fn ensure_online(&self) -> Result<()> {
        if self.is_offline() {
            return Err(StorageError::LogDirOffline {
                dir: self.dir.clone(),
            });
        }
        Ok(())
    }

    /// Takes the directory offline; returns true for the call that did it.
    pub fn mark_offline(&self, cause: &StorageError) -> bool {
        let first = !self.offline.swap(true, Ordering::AcqRel);
        if first {
            tracing::error!(dir = %self.dir.display(), error = %cause, "data directory is offline after an I/O error");
        }
        first
    }

    /// Takes the directory offline if `error` is a file-system failure (not an input error).
    pub fn observe(&self, error: &StorageError) {
        if error.is_storage_failure() {
            self.mark_offline(error);
        }
    }
}
