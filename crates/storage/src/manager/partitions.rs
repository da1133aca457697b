//! Making and removing partitions: a new log placed in a data directory by the placement
//! policy (a directory that fails the creation goes offline and the next is tried), creation
//! all or nothing, and deletion by renaming the directory for the deleter.

use std::path::PathBuf;
use std::sync::Arc;

use super::log_map::Entry;
use super::{LogManager, TopicId, topic_ids};
use crate::error::{Result, StorageError};
use crate::fs::fsync_dir;
use crate::log::{Log, partition_dir};
use crate::types::{TopicPartition, delete_dir_name, random_unique_id};

impl LogManager {
    /// The log of `topic_partition`, created in a data directory chosen by the placement policy
    /// when it does not exist. A directory that fails the creation goes offline and the next
    /// candidate is tried.
    pub fn get_or_create(&self, topic_partition: &TopicPartition) -> Result<Arc<Log>> {
        if let Some(log) = self.get(topic_partition) {
            return Ok(log);
        }
        self.ensure_running()?;
        let _creating = self.create_lock.lock();
        if let Some(log) = self.get(topic_partition) {
            return Ok(log);
        }
        self.check_room_for(1)?;
        self.create_locked(topic_partition)
    }

    /// Creates the logs of `partitions` that do not exist yet, all or none: the room for them
    /// (`ferrolog.max.partitions`) is checked, under the lock that serializes creations, before
    /// the first is made, and a creation that fails part way (out of file descriptors, a full
    /// or failing disk) deletes the ones it made.
    pub fn create_all(&self, partitions: &[TopicPartition]) -> Result<()> {
        self.ensure_running()?;
        let _creating = self.create_lock.lock();
        let missing: Vec<&TopicPartition> = partitions
            .iter()
            .filter(|topic_partition| self.get(topic_partition).is_none())
            .collect();
        self.check_room_for(missing.len())?;
        for (made, topic_partition) in missing.iter().enumerate() {
            if let Err(error) = self.create_locked(topic_partition) {
                // All or nothing, as Kafka's one metadata record for a topic: the partitions
                // made before the failure go again.
                for undone in &missing[..made] {
                    if let Err(undoing) = self.delete_locked(undone) {
                        tracing::warn!(partition = %undone, error = %undoing, "could not remove a partition of a creation that failed");
                    }
                }
                return Err(error);
            }
        }
        Ok(())
    }

    /// Creates `topic_partition`'s log; the caller holds `create_lock` and checked the room.
    fn create_locked(&self, topic_partition: &TopicPartition) -> Result<Arc<Log>> {
        let config = self.topic_configs().config(&topic_partition.topic);
        // A new partition of a topic takes the topic's id; a new topic gets one.
        let topic_id = self
            .topic_id(&topic_partition.topic)
            .unwrap_or_else(TopicId::random);
        let mut last_error = None;
        // A directory asked for before the partition existed comes first (Kafka's preferred
        // log dir), then the placement policy's order.
        let preferred = self.logs.write().preferred_dirs.remove(topic_partition);
        let mut order = self.placement_order();
        if let Some(preferred) = preferred
            && let Some(position) = order.iter().position(|index| *index == preferred)
        {
            order.remove(position);
            order.insert(0, preferred);
        }
        for dir_index in order {
            let dir = &self.dirs[dir_index];
            let partition_path = partition_dir(dir.path(), topic_partition);
            let existed = partition_path.exists();
            let created = Log::create_in(
                dir.path(),
                topic_partition,
                config.clone(),
                self.log_services().environment_in(dir),
            )
            .and_then(|log| {
                topic_ids::write(&log.dir(), topic_id)?;
                Ok(log)
            });
            match created {
                Ok(log) => {
                    let log = Arc::new(log);
                    let mut logs = self.logs.write();
                    logs.insert(
                        topic_partition.clone(),
                        Entry {
                            log: Arc::clone(&log),
                            dir_index,
                        },
                    );
                    logs.set_topic_id(&topic_partition.topic, topic_id);
                    drop(logs);
                    tracing::info!(partition = %topic_partition, dir = %dir.path().display(), "created log");
                    return Ok(log);
                }
                Err(error) => {
                    // A partition that could not be made leaves nothing behind, or the next
                    // start would load a log that was never acknowledged as created. A
                    // directory that was there before is not this call's to remove.
                    if !existed
                        && let Err(cleanup) = std::fs::remove_dir_all(&partition_path)
                        && cleanup.kind() != std::io::ErrorKind::NotFound
                    {
                        tracing::warn!(path = %partition_path.display(), error = %cleanup, "could not remove a partly created partition directory");
                    }
                    match error {
                        StorageError::Io { .. } => {
                            dir.health().mark_offline(&error);
                        }
                        // Another directory may have the space or the file descriptors.
                        StorageError::NoSpace { .. } | StorageError::OutOfResources { .. } => {
                            tracing::warn!(partition = %topic_partition, dir = %dir.path().display(), %error, "could not create a log here");
                        }
                        error => return Err(error),
                    }
                    last_error = Some(error);
                }
            }
        }
        self.dirs.ensure_some_online()?;
        Err(last_error.unwrap_or_else(|| StorageError::Fatal("no data directory is online".into())))
    }

    /// Online directories in the order a new partition should try them.
    fn placement_order(&self) -> Vec<usize> {
        let (counts, draining) = {
            let logs = self.logs.read();
            let draining: Vec<bool> = (0..self.dirs.len())
                .map(|index| logs.is_draining(index))
                .collect();
            (logs.logs_per_dir(self.dirs.len()), draining)
        };
        self.dirs
            .placement_order(self.config.placement, &counts, &draining)
    }

    /// Removes `topic_partition`'s log: it leaves the map at once, its directory is renamed
    /// `<topic>-<partition>.<id>-delete`, then removed; the checkpoints of its data directory
    /// are rewritten without it. Returns false when there was no such log.
    pub fn delete(&self, topic_partition: &TopicPartition) -> Result<bool> {
        let _deleting = self.create_lock.lock();
        self.delete_locked(topic_partition)
    }

    /// [`LogManager::delete`]; the caller holds `create_lock`.
    fn delete_locked(&self, topic_partition: &TopicPartition) -> Result<bool> {
        if self.get(topic_partition).is_none() {
            return Ok(false);
        }
        self.stop_cleaning_for_deletion(topic_partition);
        // The future log goes first: a future log found alone at startup is then always the
        // end of an interrupted swap, never the leftover of a deletion.
        self.abandon_future(topic_partition)?;
        let Some(entry) = self.logs.write().remove(topic_partition) else {
            return Ok(false);
        };
        entry.log.close_for_deletion();
        let from = partition_dir(self.dirs[entry.dir_index].path(), topic_partition);
        let to =
            self.rename_for_deletion(entry.dir_index, &from, topic_partition, &random_unique_id())?;
        self.checkpoint_dir(entry.dir_index)?;
        self.write_cleaner_checkpoint(entry.dir_index)?;
        // The rename made the deletion durable and invisible; the files go after the delay.
        self.maintenance
            .deleter
            .schedule_dir(to, self.topic_configs().defaults().file_delete_delay);
        tracing::info!(partition = %topic_partition, "deleted log");
        Ok(true)
    }

    /// Renames the partition directory `from`, in directory `dir_index`, to
    /// `<topic>-<partition>.<unique_id>-delete` and makes the rename durable; a failure takes
    /// the directory offline. Returns the new path, for the deleter.
    pub(super) fn rename_for_deletion(
        &self,
        dir_index: usize,
        from: &std::path::Path,
        topic_partition: &TopicPartition,
        unique_id: &str,
    ) -> Result<PathBuf> {
        let dir = &self.dirs[dir_index];
        let to = dir.path().join(delete_dir_name(topic_partition, unique_id));
        let renamed = crate::fs::rename(from, &to)
            .map_err(StorageError::io("rename for deletion", from))
            .and_then(|()| fsync_dir(dir.path()));
        if let Err(error) = renamed {
            dir.health().observe(&error);
            return Err(error);
        }
        Ok(to)
    }
}
