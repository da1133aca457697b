//! The LogManager's side of log compaction: it hosts the cleaner (hands it the compacted logs)
//! and keeps each data directory's `cleaner-offset-checkpoint`.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use super::LogManager;
use crate::checkpoint::{CLEANER_OFFSET_CHECKPOINT, OffsetMap};
use crate::cleaner::{CleanerHost, LogCleaner};
use crate::error::{Result, StorageError};
use crate::log::Log;
use crate::offset::Offset;
use crate::types::TopicPartition;

/// The cleaner's view of the manager; holds it weakly so the manager can be dropped.
struct Host(Weak<LogManager>);

impl CleanerHost for Host {
    fn compacted_logs(&self) -> Vec<(TopicPartition, Arc<Log>)> {
        let Some(manager) = self.0.upgrade() else {
            return Vec::new();
        };
        // A partition moving to another directory is not cleaned until it has moved, as Kafka
        // pauses cleaning it (the running cleaner is paused on it too, which also stops a pass
        // that picked the log just before its move began).
        manager
            .logs()
            .into_iter()
            .filter(|(topic_partition, log)| {
                log.config().cleanup_policy.compact
                    && !log.health().is_offline()
                    && !manager.moves().is_moving(topic_partition)
            })
            .collect()
    }

    fn cleaner_checkpoint(&self, topic_partition: &TopicPartition) -> Option<Offset> {
        self.0
            .upgrade()?
            .maintenance
            .cleaner_checkpoints
            .lock()
            .get(topic_partition)
            .map(|&offset| Offset::new(offset))
    }

    fn record_cleaner_checkpoint(
        &self,
        topic_partition: &TopicPartition,
        offset: Offset,
    ) -> Result<()> {
        let Some(manager) = self.0.upgrade() else {
            return Ok(());
        };
        manager
            .maintenance
            .cleaner_checkpoints
            .lock()
            .insert(topic_partition.clone(), offset.value());
        manager.write_cleaner_checkpoint_of(topic_partition)
    }
}

impl LogManager {
    /// Reads every directory's cleaner checkpoint (unreadable ones count as empty).
    pub(super) fn load_cleaner_checkpoints(&self) {
        let mut all = HashMap::new();
        for dir in &self.dirs {
            if !dir.is_offline() {
                all.extend(dir.read_checkpoint_or_empty(CLEANER_OFFSET_CHECKPOINT));
            }
        }
        *self.maintenance.cleaner_checkpoints.lock() = all;
    }

    /// Rewrites the cleaner checkpoint of the directory holding `topic_partition`.
    fn write_cleaner_checkpoint_of(&self, topic_partition: &TopicPartition) -> Result<()> {
        let dir_index = self
            .logs
            .read()
            .get(topic_partition)
            .map(|entry| entry.dir_index);
        dir_index.map_or(Ok(()), |index| self.write_cleaner_checkpoint(index))
    }

    /// Rewrites directory `dir_index`'s cleaner checkpoint from the logs it holds now.
    pub(super) fn write_cleaner_checkpoint(&self, dir_index: usize) -> Result<()> {
        let dir = &self.dirs[dir_index];
        if dir.is_offline() {
            return Ok(());
        }
        let entries: OffsetMap = {
            let checkpoints = self.maintenance.cleaner_checkpoints.lock();
            self.logs_in(dir_index)
                .into_iter()
                .filter_map(|(tp, _)| checkpoints.get(&tp).map(|offset| (tp, *offset)))
                .collect()
        };
        dir.write_cleaner_offsets(&entries)
    }

    /// The first dirty offset the cleaner recorded for `topic_partition`.
    pub fn cleaner_checkpoint(&self, topic_partition: &TopicPartition) -> Option<i64> {
        self.maintenance
            .cleaner_checkpoints
            .lock()
            .get(topic_partition)
            .copied()
    }

    /// A cleaner over this manager's logs, not started: [`LogCleaner::start`] runs its threads,
    /// tests call [`LogCleaner::clean_once`] directly.
    pub fn new_cleaner(self: &Arc<Self>) -> Arc<LogCleaner> {
        Arc::new(LogCleaner::new(
            self.config.cleaner,
            Arc::new(Host(Arc::downgrade(self))),
            Arc::clone(&self.clock),
        ))
    }

    /// Starts the cleaner threads (when `log.cleaner.enable`).
    pub(super) fn start_cleaner(self: &Arc<Self>) -> Result<()> {
        if !self.config.cleaner.enable {
            return Ok(());
        }
        let cleaner = self.new_cleaner();
        // Partitions whose move goes on from before the start are not cleaned until it ends.
        for future in self.moves().future_logs() {
            cleaner.abort_and_pause(&future.topic_partition);
        }
        cleaner.start().map_err(|error| {
            StorageError::Fatal(format!("cannot start the cleaner threads: {error}"))
        })?;
        *self.maintenance.cleaner.lock() = Some(cleaner);
        Ok(())
    }

    /// The running cleaner, if started.
    pub fn cleaner(&self) -> Option<Arc<LogCleaner>> {
        self.maintenance.cleaner.lock().clone()
    }

    /// Stops any cleaning of `topic_partition` before it is deleted, and forgets its checkpoint.
    pub(super) fn stop_cleaning_for_deletion(&self, topic_partition: &TopicPartition) {
        if let Some(cleaner) = self.cleaner() {
            cleaner.abort_and_pause(topic_partition);
            cleaner.forget(topic_partition);
        }
        self.maintenance
            .cleaner_checkpoints
            .lock()
            .remove(topic_partition);
    }
}
