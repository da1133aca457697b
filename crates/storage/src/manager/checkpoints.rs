//! The LogManager's side of the recovery-point and log-start-offset checkpoints: each data
//! directory's files are rewritten from its logs, one directory at a time, and a directory
//! whose write fails goes offline while the others are still written.

use super::{Jobs, LogManager};
use crate::checkpoint::OffsetMap;
use crate::error::Result;

impl LogManager {
    /// Rewrites one directory's recovery-point checkpoint.
    pub(super) fn checkpoint_recovery_points_of(&self, dir_index: usize) -> Result<()> {
        let dir = &self.dirs[dir_index];
        if dir.is_offline() {
            return Ok(());
        }
        let entries: OffsetMap = self
            .all_logs_in(dir_index)
            .iter()
            .map(|(topic_partition, log)| (topic_partition.clone(), log.recovery_point().value()))
            .collect();
        dir.write_recovery_points(&entries)
    }

    /// Rewrites one directory's log-start-offset checkpoint: only logs whose start offset is
    /// above their first segment's base need an entry.
    pub(super) fn checkpoint_log_start_offsets_of(&self, dir_index: usize) -> Result<()> {
        let dir = &self.dirs[dir_index];
        if dir.is_offline() {
            return Ok(());
        }
        let entries: OffsetMap = self
            .all_logs_in(dir_index)
            .iter()
            .filter_map(|(topic_partition, log)| {
                let view = log.view();
                (view.log_start_offset > view.segments[0].base_offset())
                    .then(|| (topic_partition.clone(), view.log_start_offset.value()))
            })
            .collect();
        dir.write_log_start_offsets(&entries)
    }

    pub(super) fn checkpoint_dir(&self, dir_index: usize) -> Result<()> {
        self.checkpoint_recovery_points_of(dir_index)?;
        self.checkpoint_log_start_offsets_of(dir_index)
    }

    /// Runs `write` for every directory; a directory whose write fails goes offline and the
    /// others are still written. Returns the first failure.
    fn for_each_dir(&self, write: impl Fn(&Self, usize) -> Result<()>) -> Result<()> {
        let mut first_error = None;
        for index in 0..self.dirs.len() {
            if let Err(error) = write(self, index) {
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Jobs<'_> {
    /// Rewrites every online directory's recovery-point checkpoint.
    pub fn checkpoint_recovery_points(&self) -> Result<()> {
        self.manager
            .for_each_dir(LogManager::checkpoint_recovery_points_of)
    }

    /// Rewrites every online directory's log-start-offset checkpoint.
    pub fn checkpoint_log_start_offsets(&self) -> Result<()> {
        self.manager
            .for_each_dir(LogManager::checkpoint_log_start_offsets_of)
    }

    /// Rewrites both checkpoints of every online directory.
    pub fn checkpoint_all(&self) -> Result<()> {
        self.manager.for_each_dir(LogManager::checkpoint_dir)
    }
}
