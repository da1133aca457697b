//! The data directories of `log.dirs` as a whole: which opened at startup and which failed,
//! which are offline now, and in which order a new partition tries them. One directory's own
//! state (its lock, health, markers) is [`DataDir`]'s.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::config::PlacementPolicy;
use super::data_dir::DataDir;
use crate::error::{Result, StorageError};

/// Every data directory of the node, in `log.dirs` order.
#[derive(Debug)]
pub struct DataDirs {
    /// The directories that opened at startup; each may go offline later.
    dirs: Vec<Arc<DataDir>>,
    /// Directories that failed before they could be opened.
    failed_at_start: Vec<PathBuf>,
}

impl DataDirs {
    /// Opens (creating, checking and locking) every directory of `log.dirs`. One that cannot
    /// be used is left offline; fails when none can, when one is listed twice, or when a
    /// directory is already locked by another process.
    pub(crate) fn open(log_dirs: &[PathBuf]) -> Result<Self> {
        if log_dirs.is_empty() {
            return Err(StorageError::InvalidConfig {
                key: "log.dirs".into(),
                value: String::new(),
                reason: "at least one data directory is required".into(),
            });
        }
        let mut dirs: Vec<Arc<DataDir>> = Vec::new();
        let mut failed_at_start = Vec::new();
        let mut canonical: HashMap<PathBuf, PathBuf> = HashMap::new();
        for configured in log_dirs {
            let path = absolute(configured);
            let opened = DataDir::open(&path);
            let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if let Some(first) = canonical.insert(key, configured.clone()) {
                return Err(StorageError::Fatal(format!(
                    "log.dirs lists the same directory twice: {} and {}",
                    first.display(),
                    configured.display()
                )));
            }
            match opened {
                Ok(dir) => dirs.push(Arc::new(dir)),
                Err(fatal @ StorageError::Fatal(_)) => return Err(fatal),
                Err(error) => {
                    tracing::error!(dir = %path.display(), error = %error, "data directory is offline at startup");
                    failed_at_start.push(path);
                }
            }
        }
        if dirs.is_empty() {
            return Err(StorageError::Fatal(format!(
                "no data directory is usable: {}",
                failed_at_start
                    .iter()
                    .map(|dir| dir.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        Ok(Self {
            dirs,
            failed_at_start,
        })
    }

    /// The directories that opened at startup, in `log.dirs` order.
    pub fn all(&self) -> &[Arc<DataDir>] {
        &self.dirs
    }
    /// The directories that opened at startup, in `log.dirs` order.
    pub fn iter(&self) -> std::slice::Iter<'_, Arc<DataDir>> {
        self.dirs.iter()
    }
    /// How many directories opened at startup, offline ones included.
    pub fn len(&self) -> usize {
        self.dirs.len()
    }
    /// Whether no directory opened; never true, as opening fails when none can be used.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }
    /// The directory at `index`, counting only the directories that opened.
    pub fn get(&self, index: usize) -> Option<&Arc<DataDir>> {
        self.dirs.get(index)
    }
    /// Directories that could not be opened at startup.
    pub fn failed_at_start(&self) -> &[PathBuf] {
        &self.failed_at_start
    }

    /// Directories offline now (failed at startup or since).
    pub fn offline_count(&self) -> usize {
        self.failed_at_start.len() + self.dirs.iter().filter(|dir| dir.is_offline()).count()
    }

    /// One directory offline now, if any: the first that failed at startup, else the first
    /// that failed since.
    pub fn first_offline(&self) -> Option<PathBuf> {
        self.failed_at_start.first().cloned().or_else(|| {
            self.dirs
                .iter()
                .find(|dir| dir.is_offline())
                .map(|dir| dir.path().to_path_buf())
        })
    }

    /// True once every directory is offline: nothing can be served any more.
    pub fn is_halted(&self) -> bool {
        self.dirs.iter().all(|dir| dir.is_offline())
    }

    /// Fails when every directory is offline.
    pub(crate) fn ensure_some_online(&self) -> Result<()> {
        if self.is_halted() {
            return Err(StorageError::Fatal(
                "every data directory is offline".into(),
            ));
        }
        Ok(())
    }

    /// Online directories in the order a new partition should try them, given how many
    /// partitions each holds (`partitions_per_dir`, by index).
    pub(crate) fn placement_order(
        &self,
        policy: PlacementPolicy,
        partitions_per_dir: &[usize],
        draining: &[bool],
    ) -> Vec<usize> {
        let online: Vec<usize> = (0..self.dirs.len())
            .filter(|&index| !self.dirs[index].is_offline())
            .collect();
        let free_bytes: Vec<u64> = match policy {
            PlacementPolicy::FewestPartitions => Vec::new(),
            PlacementPolicy::MostFreeBytes => {
                self.dirs.iter().map(|dir| dir.free_bytes()).collect()
            }
        };
        placement_order(policy, online, partitions_per_dir, &free_bytes, draining)
    }

    /// Releases every directory's lock at shutdown (an offline directory's is only dropped).
    /// Returns the first failure.
    pub(crate) fn release_locks(&self) -> Result<()> {
        let mut first_error = None;
        for dir in &self.dirs {
            if dir.is_offline() {
                dir.drop_lock();
            } else if let Err(error) = dir.release_lock() {
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// The placement policy itself: `online` directories (indexes) sorted by the policy, ties to the
/// first listed; directories being drained (a partition is moving out of them) come after every
/// other, tried only when no other can take the partition. `partitions_per_dir`, `free_bytes`
/// and `draining` are by index; missing entries count as 0 and not draining.
pub(crate) fn placement_order(
    policy: PlacementPolicy,
    mut online: Vec<usize>,
    partitions_per_dir: &[usize],
    free_bytes: &[u64],
    draining: &[bool],
) -> Vec<usize> {
    let count = |index: usize, of: &[usize]| of.get(index).copied().unwrap_or(0);
    let is_draining = |index: usize| draining.get(index).copied().unwrap_or(false);
    match policy {
        PlacementPolicy::FewestPartitions => {
            online.sort_by_key(|&index| {
                (is_draining(index), count(index, partitions_per_dir), index)
            });
        }
        PlacementPolicy::MostFreeBytes => {
            let free = |index: usize| free_bytes.get(index).copied().unwrap_or(0);
            online
                .sort_by_key(|&index| (is_draining(index), std::cmp::Reverse(free(index)), index));
        }
    }
    online
}

impl std::ops::Index<usize> for DataDirs {
    type Output = Arc<DataDir>;
    fn index(&self, index: usize) -> &Arc<DataDir> {
        &self.dirs[index]
    }
}

impl<'a> IntoIterator for &'a DataDirs {
    type Item = &'a Arc<DataDir>;
    type IntoIter = std::slice::Iter<'a, Arc<DataDir>>;
    fn into_iter(self) -> Self::IntoIter {
        self.dirs.iter()
    }
}

/// `path` made absolute, without a trailing `/`, as Kafka's `File.getAbsolutePath` gives it
/// (AlterReplicaLogDirs compares requested paths with it as text).
fn absolute(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    absolute.components().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewest_partitions_first_ties_to_the_first_listed() {
        let order = placement_order(
            PlacementPolicy::FewestPartitions,
            vec![0, 1, 2],
            &[3, 1, 1],
            &[],
            &[],
        );
        assert_eq!(order, vec![1, 2, 0]);
    }

    #[test]
    fn directories_being_drained_come_last_under_either_policy() {
        let draining = [false, true, false];
        let order = placement_order(
            PlacementPolicy::FewestPartitions,
            vec![0, 1, 2],
            &[3, 0, 1],
            &[],
            &draining,
        );
        assert_eq!(order, vec![2, 0, 1]);
        let order = placement_order(
            PlacementPolicy::MostFreeBytes,
            vec![0, 1, 2],
            &[],
            &[100, 900, 50],
            &draining,
        );
        assert_eq!(order, vec![0, 2, 1]);
    }

    #[test]
    fn most_free_bytes_first_ties_to_the_first_listed_offline_left_out() {
        let free = [500, 900, 900, 10_000];
        let order = placement_order(
            PlacementPolicy::MostFreeBytes,
            vec![0, 1, 2],
            &[0, 9, 9, 0],
            &free,
            &[],
        );
        assert_eq!(
            order,
            vec![1, 2, 0],
            "dir 3 is offline; partition counts do not matter"
        );
    }
}
