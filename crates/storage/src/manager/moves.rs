//! Moving partitions between data directories while they serve (Kafka's AlterReplicaLogDirs and
//! future logs). Asking for another directory creates a `<topic>-<partition>.<id>-future` log
//! there; the mover thread (`log-dir-mover`) copies the current log into it, a chunk per
//! partition in turn, within `replica.alter.log.dirs.io.max.bytes.per.second`; once it has
//! caught up, the future log takes the current log's place under the log's writer lock
//! ([`Log::take_over`]), the old directory is renamed `-delete` and removed by the deleter,
//! and both directories' checkpoints are rewritten.
//!
//! While a partition moves, the cleaner leaves it alone (as Kafka pauses cleaning it) and new
//! partitions go elsewhere than the directory it leaves. Retention goes on over the current
//! log; the copy follows its log start offset.
//!
//! Lock order: `create_lock` (held by every step that adds or removes a current or future
//! log, the swap included), then a log's writer lock, then the map's lock.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::LogManager;
use super::dirs::DataDirs;
use super::load::{DeletedDir, Loaded, LoadedLog};
use super::log_map::FutureEntry;
use super::topic_ids;
use crate::error::{Result, StorageError};
use crate::log::{Log, SwapPaths, partition_dir};
use crate::types::{TopicPartition, delete_dir_name, future_dir_name, random_unique_id};

/// Bytes copied into one future log per turn (Kafka's `replica.fetch.max.bytes`, 1 MiB).
pub const COPY_CHUNK_BYTES: u64 = 1 << 20;
/// The most bytes a swap copies while appends to the partition wait: a future log further
/// behind goes on copying first.
pub const SWAP_TAIL_BYTES: u64 = 1 << 20;
/// How long the mover rests when no copy made progress.
const IDLE_WAIT: Duration = Duration::from_millis(200);

/// What [`Moves::alter_log_dir`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogDirChange {
    /// The partition's log is already in that directory (a move elsewhere, if any, was
    /// abandoned).
    AlreadyThere,
    /// A future log in that directory is being filled (new, or already under way).
    Moving,
    /// The partition does not exist: it will be created in that directory.
    Preferred,
}

/// A future log as the manager reports it.
#[derive(Debug, Clone)]
pub struct FutureLog {
    /// The partition moving.
    pub topic_partition: TopicPartition,
    /// The copy growing in the target directory.
    pub log: Arc<Log>,
    /// The target directory's index in `log.dirs`.
    pub dir_index: usize,
}

/// Moving partitions between data directories (Kafka's AlterReplicaLogDirs): asking for a
/// move, the future logs under way, the mover's turn and its rate. Returned by
/// [`LogManager::moves`].
#[derive(Debug, Clone, Copy)]
pub struct Moves<'a> {
    pub(super) manager: &'a LogManager,
}

impl Moves<'_> {
    /// Kafka's AlterReplicaLogDirs for one partition: moves its log to the data directory at
    /// `path`, or remembers the directory for a partition not created yet (for at most
    /// `ferrolog.max.partitions` such partitions; beyond, the wish is not kept).
    pub fn alter_log_dir(
        &self,
        topic_partition: &TopicPartition,
        path: &Path,
    ) -> Result<LogDirChange> {
        let dir_index =
            self.manager
                .dir_index_of(path)
                .ok_or_else(|| StorageError::UnknownLogDir {
                    path: path.to_path_buf(),
                })?;
        let dir = &self.manager.dirs[dir_index];
        dir.health().ensure_online()?;
        self.manager.ensure_running()?;
        let _changing = self.manager.create_lock.lock();
        let (current, future) = {
            let logs = self.manager.logs.read();
            (
                logs.get(topic_partition).cloned(),
                logs.futures.get(topic_partition).cloned(),
            )
        };
        let Some(current) = current else {
            // Remembered for the partition's creation, for as many partitions as this node may
            // hold: requests naming millions of partitions that do not exist must not grow
            // memory without end (Kafka's map has no bound).
            let mut logs = self.manager.logs.write();
            let known = logs.preferred_dirs.contains_key(topic_partition);
            if known || logs.preferred_dirs.len() < self.manager.config.max_partitions {
                logs.preferred_dirs
                    .insert(topic_partition.clone(), dir_index);
            }
            return Ok(LogDirChange::Preferred);
        };
        if let Some(future) = &future {
            if future.dir_index == dir_index {
                return Ok(LogDirChange::Moving);
            }
            self.manager.abandon_future(topic_partition)?;
        }
        if current.dir_index == dir_index {
            return Ok(LogDirChange::AlreadyThere);
        }
        // As Kafka: no future log is made while any directory is offline, one that could not
        // be opened at startup included.
        if let Some(offline) = self.manager.dirs.first_offline() {
            return Err(StorageError::LogDirOffline { dir: offline });
        }
        self.manager
            .create_future(topic_partition, &current.log, dir_index)?;
        Ok(LogDirChange::Moving)
    }

    /// Changes `replica.alter.log.dirs.io.max.bytes.per.second` (a dynamic broker config);
    /// `None` goes back to the configured value.
    pub fn set_rate(&self, bytes_per_second: Option<f64>) {
        let rate = bytes_per_second.unwrap_or(self.manager.config.move_max_bytes_per_second);
        self.manager.maintenance.move_throttle.set_rate(rate);
        // A wait reckoned at the old rate ends now (one batch larger than a second's worth can
        // have made it hours long); the next turn is held to the new rate.
        self.manager.maintenance.move_pause.rate_changed();
        self.manager.maintenance.mover_wakeup.wake();
    }

    /// Every future log, by partition.
    pub fn future_logs(&self) -> Vec<FutureLog> {
        let mut futures: Vec<FutureLog> = self
            .manager
            .logs
            .read()
            .futures
            .iter()
            .map(|(topic_partition, future)| FutureLog {
                topic_partition: topic_partition.clone(),
                log: Arc::clone(&future.log),
                dir_index: future.dir_index,
            })
            .collect();
        futures.sort_by(|a, b| a.topic_partition.cmp(&b.topic_partition));
        futures
    }

    /// Whether `topic_partition` is moving to another directory.
    pub fn is_moving(&self, topic_partition: &TopicPartition) -> bool {
        self.manager
            .logs
            .read()
            .futures
            .contains_key(topic_partition)
    }

    /// One turn of the mover: a chunk copied into each future log, and the swap of each that
    /// has caught up. Returns how long to rest before the next turn (none after progress); a
    /// turn over the rate of `replica.alter.log.dirs.io.max.bytes.per.second` rests until the
    /// rate allows more, in the mover's interruptible sleep.
    pub fn move_once(&self) -> Duration {
        let throttle = &self.manager.maintenance.move_throttle;
        // A rate of 0 stops every copy, as Kafka's quota of 0 does.
        if throttle.rate() < 1.0 {
            return IDLE_WAIT;
        }
        let chunk = copy_chunk(throttle);
        let mut progressed = false;
        for future in self.future_logs() {
            if let Some(wait) = self.manager.maintenance.move_pause.remaining() {
                return wait;
            }
            let topic_partition = &future.topic_partition;
            match self.manager.move_step(&future, chunk) {
                Ok(step_progressed) => progressed |= step_progressed,
                Err(StorageError::LogDirOffline { dir }) => {
                    // A failed target directory takes only the future log with it.
                    if self.manager.dirs[future.dir_index].is_offline() {
                        let _changing = self.manager.create_lock.lock();
                        if let Err(error) = self.manager.abandon_future(topic_partition) {
                            tracing::warn!(partition = %topic_partition, %error, "could not abandon a move");
                        }
                    } else {
                        tracing::debug!(partition = %topic_partition, dir = %dir.display(), "not moving a log of an offline directory");
                    }
                }
                Err(StorageError::LogClosed(_)) => {}
                Err(error) => {
                    metrics::counter!("ferrolog_log_dir_move_failures_total").increment(1);
                    tracing::warn!(partition = %topic_partition, %error, "a log's move to another data directory did not go on; it is tried again");
                }
            }
        }
        if progressed {
            Duration::ZERO
        } else {
            IDLE_WAIT
        }
    }
}

impl LogManager {
    /// The index in `log.dirs` of the directory whose absolute path is exactly `path`, as
    /// DescribeLogDirs reports it (Kafka compares the text: a relative path or a trailing `/`
    /// names no directory).
    pub(crate) fn dir_index_of(&self, path: &Path) -> Option<usize> {
        self.dirs
            .iter()
            .position(|dir| dir.path().as_os_str() == path.as_os_str())
    }

    /// Creates `topic_partition`'s future log in directory `dir_index`; the caller holds
    /// `create_lock`.
    fn create_future(
        &self,
        topic_partition: &TopicPartition,
        current: &Arc<Log>,
        dir_index: usize,
    ) -> Result<()> {
        let dir = &self.dirs[dir_index];
        let unique_id = random_unique_id();
        let name = future_dir_name(topic_partition, &unique_id);
        let created = Log::create_named_in(
            dir.path(),
            &name,
            (*current.config()).clone(),
            self.log_services().environment_in(dir),
        )
        .and_then(|log| {
            if let Some(topic_id) = self.topic_id(&topic_partition.topic) {
                topic_ids::write(&log.dir(), topic_id)?;
            }
            Ok(log)
        });
        let log = match created {
            Ok(log) => Arc::new(log),
            Err(error) => {
                dir.health().observe(&error);
                let partial = dir.path().join(&name);
                if let Err(cleanup) = std::fs::remove_dir_all(&partial)
                    && cleanup.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!(path = %partial.display(), error = %cleanup, "could not remove a partly created future log");
                }
                return Err(error);
            }
        };
        self.logs.write().futures.insert(
            topic_partition.clone(),
            FutureEntry {
                log,
                dir_index,
                unique_id,
            },
        );
        // The cleaner leaves a moving partition alone until its swap or its abandonment: a
        // pass under way is aborted and waited for (its files would be renamed under it).
        if let Some(cleaner) = self.cleaner() {
            cleaner.abort_and_pause(topic_partition);
        }
        tracing::info!(partition = %topic_partition, dir = %dir.path().display(), "moving a log to another data directory");
        self.maintenance.mover_wakeup.wake();
        Ok(())
    }

    /// Drops `topic_partition`'s future log: its directory is renamed `-delete` and removed
    /// after `file.delete.delay.ms` (on an offline directory nothing can be done until the
    /// next start, which abandons it again). The caller holds `create_lock`.
    pub(super) fn abandon_future(&self, topic_partition: &TopicPartition) -> Result<()> {
        let Some(future) = self.logs.write().futures.remove(topic_partition) else {
            return Ok(());
        };
        future.log.close_for_deletion();
        if let Some(cleaner) = self.cleaner() {
            cleaner.resume(topic_partition);
        }
        let dir = &self.dirs[future.dir_index];
        tracing::info!(partition = %topic_partition, dir = %dir.path().display(), "abandoned a log's move to another data directory");
        if dir.is_offline() {
            return Ok(());
        }
        let to = self.rename_for_deletion(
            future.dir_index,
            &future.log.dir(),
            topic_partition,
            &future.unique_id,
        )?;
        self.checkpoint_dir(future.dir_index)?;
        self.maintenance
            .deleter
            .schedule_dir(to, self.topic_configs().defaults().file_delete_delay);
        Ok(())
    }

    /// Copies a chunk into `future` and swaps it in once it has caught up. Returns whether
    /// anything was copied or swapped.
    fn move_step(&self, future: &FutureLog, chunk: u64) -> Result<bool> {
        let Some(current) = self.get(&future.topic_partition) else {
            return Ok(false);
        };
        let chunk = chunk.min(future.log.config().segment_size());
        let rate_changes = self.maintenance.move_pause.rate_changes();
        let step = current.copy_into(&future.log, chunk)?;
        let wait = self.maintenance.move_throttle.charge(step.copied_bytes);
        self.maintenance.move_pause.pause_for(wait, rate_changes);
        if step.offset_lag > 0 {
            return Ok(step.copied_bytes > 0);
        }
        // The big fsync before the swap, outside the log's lock: the swap's own covers the tail.
        future
            .log
            .flush_up_to(current.recovery_point().min(future.log.log_end_offset()))?;
        Ok(self.swap(&future.topic_partition)? || step.copied_bytes > 0)
    }

    /// Swaps `topic_partition`'s future log in for its current log, if it is close enough;
    /// see [`Log::take_over`].
    fn swap(&self, topic_partition: &TopicPartition) -> Result<bool> {
        let _changing = self.create_lock.lock();
        let (current, future) = {
            let logs = self.logs.read();
            match (logs.get(topic_partition), logs.futures.get(topic_partition)) {
                (Some(current), Some(future)) => (current.clone(), future.clone()),
                _ => return Ok(false),
            }
        };
        let source = &self.dirs[current.dir_index];
        let target = &self.dirs[future.dir_index];
        let paths = SwapPaths {
            retired: source
                .path()
                .join(delete_dir_name(topic_partition, &future.unique_id)),
            final_dir: partition_dir(target.path(), topic_partition),
        };
        if !current
            .log
            .take_over(&future.log, &paths, SWAP_TAIL_BYTES)?
        {
            return Ok(false);
        }
        {
            let mut logs = self.logs.write();
            logs.futures.remove(topic_partition);
            logs.set_dir(topic_partition, future.dir_index);
        }
        if let Some(cleaner) = self.cleaner() {
            cleaner.resume(topic_partition);
        }
        tracing::info!(partition = %topic_partition, from = %source.path().display(), to = %target.path().display(), "moved a log to another data directory");
        metrics::counter!("ferrolog_log_dir_moves_total").increment(1);
        self.maintenance.deleter.schedule_dir(
            paths.retired,
            self.topic_configs().defaults().file_delete_delay,
        );
        // The partition's entries, its cleaner offset among them, go with it.
        let mut first_error = None;
        for dir_index in [future.dir_index, current.dir_index] {
            let written = self
                .checkpoint_dir(dir_index)
                .and_then(|()| self.write_cleaner_checkpoint(dir_index));
            if let Err(error) = written {
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(true), Err)
    }
}

/// Bytes copied per turn: a second's worth at the throttle's rate, at most 1 MiB (one batch
/// larger than that still comes whole).
pub(super) fn copy_chunk(throttle: &crate::throttle::Throttle) -> u64 {
    if throttle.is_unlimited() {
        return COPY_CHUNK_BYTES;
    }
    (throttle.rate() as u64).clamp(1, COPY_CHUNK_BYTES)
}

/// When the mover may copy again after going over its rate.
#[derive(Debug, Default)]
pub(super) struct MovePause {
    state: parking_lot::Mutex<PauseState>,
}

#[derive(Debug, Default)]
struct PauseState {
    until: Option<std::time::Instant>,
    /// Times the rate changed: a wait reckoned before the latest change is not kept.
    rate_changes: u64,
}

impl MovePause {
    /// How many times the rate has changed so far, for [`MovePause::pause_for`].
    fn rate_changes(&self) -> u64 {
        self.state.lock().rate_changes
    }

    /// No copy for `wait` from now (nothing when `wait` is zero), unless the rate changed
    /// since `rate_changes` was read: that wait was reckoned at a rate no longer set.
    fn pause_for(&self, wait: Duration, rate_changes: u64) {
        let mut state = self.state.lock();
        if !wait.is_zero() && state.rate_changes == rate_changes {
            state.until = Some(std::time::Instant::now() + wait);
        }
    }

    /// Ends the pause: the rate changed.
    fn rate_changed(&self) {
        let mut state = self.state.lock();
        state.until = None;
        state.rate_changes += 1;
    }

    /// How long the pause still lasts, if it does.
    fn remaining(&self) -> Option<Duration> {
        let until = self.state.lock().until?;
        let left = until.saturating_duration_since(std::time::Instant::now());
        (!left.is_zero()).then_some(left)
    }
}

/// The logs loading found, with the future logs settled.
pub(super) struct Settled {
    /// The partitions' current logs, promoted future logs among them.
    pub current: Vec<LoadedLog>,
    /// Future logs whose move goes on.
    pub future: Vec<LoadedLog>,
    /// Partitions whose interrupted swap loading finished.
    pub completed: Vec<TopicPartition>,
    /// The `-delete` directories found, to be removed now that nothing depends on them.
    pub deleted: Vec<DeletedDir>,
}

/// Decides what each future log found at startup is, by what else is there:
/// - beside its current log in another directory, the move goes on (Kafka resumes it too
///   unless its controller had already taken the new directory, which a single node has no
///   record of); a future log longer than its current log, which recovery cut, is cut to the
///   same end first, so the two never differ at an offset;
/// - beside a current log of another topic id, it is a copy of an older topic of the same
///   name and is removed;
/// - alone, with a `-delete` directory of the same unique id found by this load, it is the
///   complete copy of a swap interrupted between its two renames: it takes the partition's
///   plain name and is its log;
/// - alone otherwise (its current log is in a directory offline or no longer in `log.dirs`),
///   it is left on disk, not served, with a warning: it may be an incomplete copy;
/// - in the same directory as its current log, which no move makes, it is removed.
pub(super) fn settle_futures(loaded: Loaded, dirs: &DataDirs) -> Result<Settled> {
    let deleted_ids: HashSet<String> = loaded
        .deleted
        .iter()
        .filter_map(|dir| dir.unique_id.clone())
        .collect();
    let (futures, mut current): (Vec<LoadedLog>, Vec<LoadedLog>) = loaded
        .logs
        .into_iter()
        .partition(|log| log.future_id.is_some());
    let current_dirs: HashMap<TopicPartition, (usize, Arc<Log>)> = current
        .iter()
        .map(|log| {
            (
                log.topic_partition.clone(),
                (log.dir_index, Arc::clone(&log.log)),
            )
        })
        .collect();
    let mut settled_futures = Vec::new();
    let mut completed = Vec::new();
    for future in futures {
        let topic_partition = future.topic_partition.clone();
        let unique_id = future.future_id.clone().unwrap_or_default();
        let path = future.log.dir();
        match current_dirs.get(&topic_partition) {
            Some((dir_index, _)) if *dir_index == future.dir_index => {
                future.log.close_for_deletion();
                std::fs::remove_dir_all(&path).map_err(StorageError::io("delete", &path))?;
                tracing::warn!(path = %path.display(), "removed a future log in its current log's own directory");
            }
            Some((_, current_log))
                if topic_ids::read(&path)
                    .ok()
                    .flatten()
                    .is_some_and(|future_id| {
                        topic_ids::read(&current_log.dir())
                            .ok()
                            .flatten()
                            .is_some_and(|current_id| current_id != future_id)
                    }) =>
            {
                // A copy of an older topic of the same name, deleted while its directory was
                // offline: not this partition's.
                future.log.close_for_deletion();
                std::fs::remove_dir_all(&path).map_err(StorageError::io("delete", &path))?;
                tracing::warn!(path = %path.display(), "removed a future log of another topic id than its partition's");
            }
            Some((_, current_log)) => {
                if future.log.log_end_offset() > current_log.log_end_offset() {
                    future.log.truncate_to(current_log.log_end_offset())?;
                }
                tracing::info!(partition = %topic_partition, path = %path.display(), "a log's move to another data directory goes on");
                settled_futures.push(future);
            }
            None if deleted_ids.contains(&unique_id) => {
                let final_dir = partition_dir(dirs[future.dir_index].path(), &topic_partition);
                future.log.rename_dir(&final_dir)?;
                tracing::info!(partition = %topic_partition, path = %final_dir.display(), "finished a move to another data directory interrupted in its swap");
                completed.push(topic_partition);
                current.push(LoadedLog {
                    future_id: None,
                    ..future
                });
            }
            None => {
                tracing::warn!(
                    partition = %topic_partition,
                    path = %path.display(),
                    "a future log without its current log is not served: it may be an incomplete copy; if it holds the partition's data, rename it to {} while the broker is stopped, else delete it",
                    topic_partition.dir_name()
                );
            }
        }
    }
    Ok(Settled {
        current,
        future: settled_futures,
        completed,
        deleted: loaded.deleted,
    })
}
