//! The log cleaner: `log.cleaner.threads` threads (`cleaner-<n>`) that compact logs whose
//! `cleanup.policy` includes `compact`, keeping the latest value of every key.
//!
//! Each thread loops: pick the filthiest cleanable log ([`select`]), clean it ([`pass`]),
//! record the new first dirty offset, or back off `log.cleaner.backoff.ms` when none is due.
//! Appends and reads go on throughout: a pass reads sealed segments only, and takes the log's
//! lock just to swap its output in. A log whose cleaning fails (corrupt data, say) is marked
//! uncleanable and skipped; the thread lives on. Cleaning of a partition can be paused (and an
//! ongoing pass aborted) before it is truncated or deleted.
//!
//! The cleaner sees logs only through [`CleanerHost`], which the LogManager implements.

mod filter;
mod map_build;
pub mod offset_map;
pub mod pass;
pub mod select;
mod threads;
mod transactions;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::clock::Clock;
use crate::error::{Result, StorageError};
use crate::log::Log;
use crate::offset::Offset;
use crate::scheduler::Wakeup;
use crate::throttle::Throttle;
use crate::types::TopicPartition;
use offset_map::OffsetMap;
use pass::PassStats;
use select::{Cleanable, LogInfo, SegmentInfo};

/// The cleaner's settings (broker keys `log.cleaner.*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CleanerConfig {
    /// `log.cleaner.enable`. Default true.
    pub enable: bool,
    /// `log.cleaner.threads`. Default 1.
    pub threads: usize,
    /// `log.cleaner.dedupe.buffer.size`: offset map memory shared by the threads. Default 128 MiB.
    pub dedupe_buffer_bytes: usize,
    /// `log.cleaner.io.buffer.load.factor`. Default 0.9.
    pub load_factor: f64,
    /// `log.cleaner.io.max.bytes.per.second`. Default unlimited.
    pub max_io_bytes_per_second: f64,
    /// `log.cleaner.backoff.ms`: how long a thread with nothing to clean sleeps. Default 15 s.
    pub backoff: Duration,
}

impl Default for CleanerConfig {
    fn default() -> Self {
        Self {
            enable: true,
            threads: 1,
            dedupe_buffer_bytes: 128 * 1024 * 1024,
            load_factor: 0.9,
            max_io_bytes_per_second: f64::MAX,
            backoff: Duration::from_secs(15),
        }
    }
}

/// What the cleaner needs from whoever owns the logs.
pub trait CleanerHost: Send + Sync {
    /// Every log whose policy includes `compact`, with its partition.
    fn compacted_logs(&self) -> Vec<(TopicPartition, Arc<Log>)>;
    /// The first dirty offset recorded for a partition.
    fn cleaner_checkpoint(&self, topic_partition: &TopicPartition) -> Option<Offset>;
    /// Records (durably) that `topic_partition` is clean below `offset`.
    fn record_cleaner_checkpoint(
        &self,
        topic_partition: &TopicPartition,
        offset: Offset,
    ) -> Result<()>;
}

/// Figures for operators, as Kafka's LogCleaner and LogCleanerManager metrics.
#[derive(Debug, Default)]
pub struct CleanerStats {
    /// 100 × the largest dirty ratio among compacted logs at the last selection.
    pub max_dirty_percent: AtomicU64,
    /// Longest pass, in milliseconds.
    pub max_clean_time_ms: AtomicU64,
    /// Largest time a log waited past `max.compaction.lag.ms`, in milliseconds.
    pub max_compaction_delay_ms: AtomicU64,
    /// 100 × bytes written / bytes read of the last pass.
    pub recopy_percent: AtomicU64,
    /// 100 × map utilization of the last pass.
    pub buffer_utilization_percent: AtomicU64,
    /// Cleaner threads that died of a panic since startup (Kafka's `DeadThreadCount` counts
    /// those of the threads running now); new threads replace them only when the cleaner's
    /// settings change.
    pub dead_threads: AtomicUsize,
    /// Passes finished without error since startup.
    pub passes: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    in_progress: HashMap<TopicPartition, Arc<AtomicBool>>,
    paused: HashMap<TopicPartition, usize>,
    uncleanable: HashSet<TopicPartition>,
}

/// The cleaner's shared state and its threads.
pub struct LogCleaner {
    /// Changed at run time by [`LogCleaner::reconfigure`], which restarts the threads.
    config: parking_lot::RwLock<CleanerConfig>,
    host: Arc<dyn CleanerHost>,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    state_changed: Condvar,
    throttle: Throttle,
    /// The figures the metrics endpoint reads, updated by the threads as they go.
    pub stats: CleanerStats,
    /// The threads running now: replaced whole when the config changes.
    threads: Mutex<threads::Threads>,
}

impl std::fmt::Debug for LogCleaner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogCleaner")
            .field("config", &*self.config.read())
            .finish_non_exhaustive()
    }
}

/// Selection inputs of one log at this moment.
fn describe(log: &Log) -> Result<(Vec<SegmentInfo>, Offset, Offset, Offset)> {
    let view = log.view();
    let segments = view
        .segments
        .iter()
        .map(|segment| {
            Ok(SegmentInfo {
                base_offset: segment.base_offset(),
                size_bytes: segment.size(),
                largest_timestamp_ms: segment.max_timestamp()?,
                first_timestamp_ms: segment.first_batch_timestamp()?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((
        segments,
        view.log_start_offset,
        view.log_end.offset,
        // Open transactions are not cleaned: the cleaner stops at the last stable offset, as
        // Kafka's does.
        view.last_stable_offset(),
    ))
}

impl LogCleaner {
    /// A cleaner of `host`'s compacted logs; no thread runs until [`LogCleaner::start`].
    pub fn new(config: CleanerConfig, host: Arc<dyn CleanerHost>, clock: Arc<dyn Clock>) -> Self {
        Self {
            throttle: Throttle::new(config.max_io_bytes_per_second),
            config: parking_lot::RwLock::new(config),
            host,
            clock,
            state: Mutex::new(State::default()),
            state_changed: Condvar::new(),
            stats: CleanerStats::default(),
            threads: Mutex::new(threads::Threads::default()),
        }
    }

    /// The `log.cleaner.*` settings it runs with.
    pub fn config(&self) -> CleanerConfig {
        *self.config.read()
    }

    /// Partitions marked uncleanable since startup.
    pub fn uncleanable_partitions(&self) -> Vec<TopicPartition> {
        let mut partitions: Vec<_> = self.state.lock().uncleanable.iter().cloned().collect();
        partitions.sort();
        partitions
    }

    /// Bytes held by uncleanable partitions (Kafka's `uncleanable-bytes`).
    pub fn uncleanable_bytes(&self) -> u64 {
        let uncleanable = self.state.lock().uncleanable.clone();
        self.host
            .compacted_logs()
            .iter()
            .filter(|(topic_partition, _)| uncleanable.contains(topic_partition))
            .map(|(_, log)| log.size_in_bytes())
            .sum()
    }

    /// Picks the filthiest due log not being cleaned, paused or uncleanable, and marks it in
    /// progress; none once `stop` (the calling thread's) is stopped.
    fn grab_filthiest(
        &self,
        stop: Option<&Wakeup>,
    ) -> Option<(TopicPartition, Arc<Log>, Cleanable, Arc<AtomicBool>)> {
        let now_ms = self.clock.now_ms();
        let logs = self.host.compacted_logs();
        let mut state = self.state.lock();
        // Looked at under the state lock: whoever stops the threads stops the wakeup before it
        // takes this lock to abort the passes in progress, so a pass either is aborted or
        // never starts.
        if stop.is_some_and(Wakeup::is_stopped) {
            return None;
        }
        let mut described = Vec::new();
        for (topic_partition, log) in logs {
            if state.in_progress.contains_key(&topic_partition)
                || state.paused.contains_key(&topic_partition)
                || state.uncleanable.contains(&topic_partition)
            {
                continue;
            }
            let (segments, log_start, log_end, last_stable_offset) = match describe(&log) {
                Ok(described) => described,
                Err(error @ StorageError::Corrupt { .. }) => {
                    tracing::error!(
                        partition = %topic_partition,
                        %error,
                        "cannot tell how dirty the log is: it is marked uncleanable until restart"
                    );
                    state.uncleanable.insert(topic_partition);
                    continue;
                }
                // An offline directory or a log being deleted: nothing to clean now.
                Err(_) => continue,
            };
            let config = log.config();
            let info = LogInfo {
                segments: &segments,
                log_start_offset: log_start,
                log_end_offset: log_end,
                last_stable_offset,
                checkpointed_dirty_offset: self.host.cleaner_checkpoint(&topic_partition),
                config: &config,
            };
            let cleanable = select::cleanable(&info, now_ms);
            if cleanable.dirty_offset_reset
                && let Err(error) = self
                    .host
                    .record_cleaner_checkpoint(&topic_partition, cleanable.first_dirty_offset)
            {
                // The pass goes on from the reset offset; the next checkpoint write retries.
                tracing::warn!(partition = %topic_partition, %error, "could not record the reset cleaner checkpoint");
            }
            described.push((topic_partition, log, cleanable, config));
        }
        let max_ratio = described
            .iter()
            .map(|(_, _, c, _)| c.dirty_ratio)
            .fold(0.0, f64::max);
        self.stats
            .max_dirty_percent
            .store((max_ratio * 100.0) as u64, Ordering::Relaxed);
        let max_delay = described
            .iter()
            .filter_map(|(_, _, c, _)| c.overdue_ms)
            .max()
            .unwrap_or(0);
        self.stats
            .max_compaction_delay_ms
            .store(max_delay.max(0) as u64, Ordering::Relaxed);
        let candidates: Vec<(Cleanable, &crate::config::LogConfig)> = described
            .iter()
            .map(|(_, _, cleanable, config)| (*cleanable, config.as_ref()))
            .collect();
        let chosen = select::filthiest(&candidates)?;
        let (topic_partition, log, cleanable, _) = described.swap_remove(chosen);
        let abort = Arc::new(AtomicBool::new(false));
        state
            .in_progress
            .insert(topic_partition.clone(), Arc::clone(&abort));
        Some((topic_partition, log, cleanable, abort))
    }

    /// Cleans the filthiest due log once, with `map`. Returns whether a log was cleaned.
    pub fn clean_once(&self, map: &mut OffsetMap) -> bool {
        self.clean_next(map, None)
    }

    /// [`LogCleaner::clean_once`] on a cleaner thread, which starts no pass once `stop` is
    /// stopped.
    fn clean_next(&self, map: &mut OffsetMap, stop: Option<&Wakeup>) -> bool {
        let Some((topic_partition, log, cleanable, abort)) = self.grab_filthiest(stop) else {
            return false;
        };
        let started = std::time::Instant::now();
        // A pass that panics fails like one that errs: the partition is marked uncleanable and
        // leaves `in_progress`, so whoever waits for it (a deletion, a truncation) goes on, and
        // the thread cleans the other partitions, as Kafka's cleaner does.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pass::clean(
                &log,
                cleanable.first_dirty_offset,
                cleanable.first_uncleanable_offset,
                map,
                self.clock.now_ms(),
                &self.throttle,
                &abort,
            )
        }))
        .unwrap_or_else(|panic| {
            metrics::counter!("ferrolog_log_cleaner_pass_panics_total").increment(1);
            Err(StorageError::Fatal(format!(
                "the cleaning pass panicked: {}",
                crate::scheduler::panic_message(panic.as_ref())
            )))
        });
        let aborted = abort.load(Ordering::Relaxed);
        match result {
            Ok(stats) => {
                if let Err(error) = self
                    .host
                    .record_cleaner_checkpoint(&topic_partition, stats.end_offset)
                {
                    tracing::error!(partition = %topic_partition, error = %error, "could not record the cleaner checkpoint");
                }
                self.record(&topic_partition, &stats, started.elapsed());
            }
            Err(_) if aborted => {
                tracing::info!(partition = %topic_partition, "cleaning aborted");
            }
            Err(error @ (StorageError::Io { .. } | StorageError::LogDirOffline { .. })) => {
                tracing::error!(partition = %topic_partition, error = %error, "cleaning failed on a storage error");
            }
            // Not the partition's fault: a later pass tries again once there is room.
            Err(error @ (StorageError::NoSpace { .. } | StorageError::OutOfResources { .. })) => {
                tracing::warn!(partition = %topic_partition, error = %error, "cleaning failed for lack of space or resources; it is tried again later");
            }
            Err(StorageError::LogClosed(reason) | StorageError::Dropped(reason)) => {
                tracing::info!(partition = %topic_partition, reason, "cleaning pass dropped");
            }
            Err(error) => {
                tracing::error!(
                    partition = %topic_partition,
                    error = %error,
                    "cleaning failed; the partition is marked uncleanable until restart"
                );
                self.state
                    .lock()
                    .uncleanable
                    .insert(topic_partition.clone());
            }
        }
        let mut state = self.state.lock();
        state.in_progress.remove(&topic_partition);
        self.state_changed.notify_all();
        true
    }

    fn record(&self, topic_partition: &TopicPartition, stats: &PassStats, elapsed: Duration) {
        let mb = |bytes: u64| bytes as f64 / 1e6;
        let seconds = elapsed.as_secs_f64().max(1e-9);
        self.stats.passes.fetch_add(1, Ordering::Relaxed);
        self.stats
            .max_clean_time_ms
            .fetch_max(elapsed.as_millis() as u64, Ordering::Relaxed);
        if stats.bytes_read > 0 {
            self.stats.recopy_percent.store(
                100 * stats.bytes_written / stats.bytes_read.max(1),
                Ordering::Relaxed,
            );
        }
        self.stats
            .buffer_utilization_percent
            .store((stats.map_utilization * 100.0) as u64, Ordering::Relaxed);
        tracing::info!(
            partition = %topic_partition,
            dirty_section = %format!("[{}, {})", stats.first_dirty_offset, stats.end_offset),
            mb_processed = mb(stats.map_bytes_read + stats.bytes_read),
            seconds,
            mb_per_second = mb(stats.map_bytes_read + stats.bytes_read) / seconds,
            indexed_seconds = stats.index_seconds,
            buffer_utilization_percent = stats.map_utilization * 100.0,
            cleaned_seconds = stats.clean_seconds,
            start_size_mb = mb(stats.bytes_read),
            start_messages = stats.records_read,
            end_size_mb = mb(stats.bytes_written),
            end_messages = stats.records_written,
            size_reduction_percent = 100.0 * (1.0 - stats.bytes_written as f64 / stats.bytes_read.max(1) as f64),
            "log cleaner cleaned a log"
        );
        if stats.invalid_records > 0 {
            tracing::warn!(partition = %topic_partition, invalid = stats.invalid_records, "found records without a key during compaction; they were removed");
        }
    }

    /// Stops cleaning `topic_partition`: an ongoing pass is aborted and waited for. Pauses nest.
    pub fn abort_and_pause(&self, topic_partition: &TopicPartition) {
        let mut state = self.state.lock();
        *state.paused.entry(topic_partition.clone()).or_insert(0) += 1;
        if let Some(abort) = state.in_progress.get(topic_partition) {
            abort.store(true, Ordering::Relaxed);
        }
        while state.in_progress.contains_key(topic_partition) {
            self.state_changed.wait(&mut state);
        }
    }

    /// Undoes one [`LogCleaner::abort_and_pause`].
    pub fn resume(&self, topic_partition: &TopicPartition) {
        let mut state = self.state.lock();
        if let Some(count) = state.paused.get_mut(topic_partition) {
            *count -= 1;
            if *count == 0 {
                state.paused.remove(topic_partition);
            }
        }
    }

    /// Forgets a deleted partition (after [`LogCleaner::abort_and_pause`]).
    pub fn forget(&self, topic_partition: &TopicPartition) {
        let mut state = self.state.lock();
        state.paused.remove(topic_partition);
        state.uncleanable.remove(topic_partition);
    }
}
