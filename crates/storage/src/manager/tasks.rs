//! The background jobs of the LogManager, on the scheduler thread (named jobs, Kafka's keys):
//!
//! | job | period | what |
//! |---|---|---|
//! | `log-retention` | `log.retention.check.interval.ms` | [`Log::delete_old_segments`] on every log |
//! | `roll-idle-segments` | `log.retention.check.interval.ms` | [`Log::roll_if_idle`] on every log |
//! | `log-flusher` | `log.flush.scheduler.interval.ms` | [`Log::flush_if_due`] (`flush.ms`) |
//! | `recovery-point-checkpoint` | `log.flush.offset.checkpoint.interval.ms` | every dir's recovery points |
//! | `log-start-offset-checkpoint` | `log.flush.start.offset.checkpoint.interval.ms` | every dir's log start offsets |
//!
//! Each job only inspects and decides, one log at a time; removing files is the deleter's work.
//! [`Maintenance`] owns what runs beside the logs (deleter, scheduler, cleaner).
//! A log whose directory is offline is skipped; any other failure is logged, counted by the
//! scheduler, and does not stop the job's pass over the other logs.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{Deleter, LogManager};
use crate::cleaner::LogCleaner;
use crate::error::{Result, StorageError};
use crate::log::Log;
use crate::scheduler::{BackgroundThread, SchedulerThread, Wakeup};
use crate::scheduler::{JobStats, Scheduler};
use crate::throttle::Throttle;
use crate::types::TopicPartition;

/// Logs handled between pauses of a long pass.
const PACING_CHUNK: usize = 128;
/// After each chunk a pass rests this many times as long as the chunk took: at most an eighth
/// of a core goes to maintenance, leaving the rest to appends and fetches (and to the kernel's
/// writeback, which appends depend on) on a small machine. A pass over 10,000 logs still takes
/// well under a second.
const PACING_IDLE_FACTOR: u32 = 7;

/// The manager's periodic jobs and checkpoints, each one pass over every log or every data
/// directory: what the scheduler of [`LogManager::start_background`] runs, for an application
/// (or a test) that runs them itself. Returned by [`LogManager::jobs`].
#[derive(Debug, Clone, Copy)]
pub struct Jobs<'a> {
    pub(super) manager: &'a LogManager,
}

impl Jobs<'_> {
    /// Runs `action` on every log, skipping logs of offline directories; returns the first
    /// other failure after trying them all. A pass over many logs paces itself (see
    /// [`PACING_CHUNK`]) so it never holds a core for long.
    fn for_each_log(&self, action: impl Fn(&Log) -> Result<()>) -> Result<()> {
        let mut first_error = None;
        let mut chunk_started = Instant::now();
        for (index, (_, log)) in self.manager.logs().into_iter().enumerate() {
            if index > 0 && index % PACING_CHUNK == 0 {
                std::thread::sleep(chunk_started.elapsed() * PACING_IDLE_FACTOR);
                chunk_started = Instant::now();
            }
            match action(&log) {
                Ok(()) | Err(StorageError::LogDirOffline { .. } | StorageError::LogClosed(_)) => {}
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// One retention pass over every log.
    pub fn run_retention(&self) -> Result<()> {
        self.for_each_log(|log| log.delete_old_segments().map(|_| ()))
    }

    /// Rolls every idle active segment older than `segment.ms`.
    pub fn roll_idle_segments(&self) -> Result<()> {
        self.for_each_log(|log| log.roll_if_idle().map(|_| ()))
    }

    /// Forgets, in every log, idempotent producers idle for `producer.id.expiration.ms`.
    fn expire_producer_ids(&self) -> Result<()> {
        let expiration = self.manager.config.background.producer_id_expiration;
        self.for_each_log(|log| {
            log.remove_expired_producers(expiration);
            Ok(())
        })
    }

    /// Flushes every log whose `flush.ms` has passed.
    pub fn flush_due_logs(&self) -> Result<()> {
        self.for_each_log(|log| log.flush_if_due().map(|_| ()))
    }
}

impl LogManager {
    /// The scheduler with the manager's jobs, not yet running. [`LogManager::start_background`]
    /// runs it on its thread; tests drive it with a manual clock through
    /// [`Scheduler::run_due`].
    pub fn background_jobs(self: &Arc<Self>) -> (Scheduler, Vec<JobStats>) {
        let background = self.config.background;
        let start_ms = self.clock.now_ms();
        let mut scheduler = Scheduler::new();
        let mut stats = Vec::new();
        let mut add = |name, period, job: fn(&LogManager) -> Result<()>| {
            let manager: Weak<LogManager> = Arc::downgrade(self);
            stats.push(scheduler.add(
                name,
                start_ms,
                background.initial_delay,
                period,
                move |_| manager.upgrade().map_or(Ok(()), |manager| job(&manager)),
            ));
        };
        add(
            "log-retention",
            Some(background.retention_check_interval),
            |manager| manager.jobs().run_retention(),
        );
        add(
            "roll-idle-segments",
            Some(background.retention_check_interval),
            |manager| manager.jobs().roll_idle_segments(),
        );
        add("log-flusher", background.flush_check_interval, |manager| {
            manager.jobs().flush_due_logs()
        });
        add(
            "recovery-point-checkpoint",
            Some(background.recovery_point_checkpoint_interval),
            |manager| manager.jobs().checkpoint_recovery_points(),
        );
        add(
            "log-start-offset-checkpoint",
            Some(background.log_start_offset_checkpoint_interval),
            |manager| manager.jobs().checkpoint_log_start_offsets(),
        );
        add(
            "producer-id-expiration",
            Some(background.producer_id_expiration_check_interval),
            |manager| manager.jobs().expire_producer_ids(),
        );
        (scheduler, stats)
    }

    /// Starts the scheduler thread, the deleter thread and (when `log.cleaner.enable`) the
    /// cleaner threads. Stopped by [`LogManager::shutdown`].
    pub fn start_background(self: &Arc<Self>) -> Result<Vec<JobStats>> {
        let (scheduler, stats) = self.background_jobs();
        let cannot_start = |error: std::io::Error| {
            StorageError::Fatal(format!("cannot start a background thread: {error}"))
        };
        let scheduler = scheduler
            .start(Arc::clone(&self.clock))
            .map_err(cannot_start)?;
        let deleter = self.maintenance.deleter.start().map_err(cannot_start)?;
        // The cleaner first: the mover resumes its cleaning of a partition it has moved.
        self.start_cleaner()?;
        let mover = {
            let manager: Weak<LogManager> = Arc::downgrade(self);
            let wakeup = Arc::clone(&self.maintenance.mover_wakeup);
            BackgroundThread::spawn("log-dir-mover", wakeup, move || {
                manager.upgrade().map_or(Duration::from_secs(1), |manager| {
                    manager.moves().move_once()
                })
            })
            .map_err(cannot_start)?
        };
        let scrubber = {
            let manager: Weak<LogManager> = Arc::downgrade(self);
            let wakeup = Arc::clone(self.maintenance.scrubber.wakeup());
            BackgroundThread::spawn("log-scrubber", wakeup, move || {
                manager.upgrade().map_or(Duration::from_secs(1), |manager| {
                    manager.maintenance.scrubber.scrub_once(&manager)
                })
            })
            .map_err(cannot_start)?
        };
        *self.maintenance.background.lock() = Some(Background {
            scheduler,
            deleter,
            mover,
            scrubber,
        });
        Ok(stats)
    }
}

/// What runs beside the logs: the deleter, the scheduler's jobs, the cleaner and its
/// checkpoints. Owned by the [`LogManager`]; started by [`LogManager::start_background`] and
/// stopped first at shutdown.
#[derive(Debug)]
pub(super) struct Maintenance {
    /// Removes deleted segments' files and deleted partitions after `file.delete.delay.ms`.
    pub deleter: Arc<Deleter>,
    /// The scheduler and deleter threads, once started.
    pub background: Mutex<Option<Background>>,
    /// The running cleaner, once started.
    pub cleaner: Mutex<Option<Arc<LogCleaner>>>,
    /// First dirty offset per compacted partition (`cleaner-offset-checkpoint`).
    pub cleaner_checkpoints: Mutex<HashMap<TopicPartition, i64>>,
    /// Wakes the mover when a move starts.
    pub mover_wakeup: Arc<Wakeup>,
    /// `replica.alter.log.dirs.io.max.bytes.per.second`, over every move.
    pub move_throttle: Throttle,
    /// Set when the moves went over that rate.
    pub move_pause: super::moves::MovePause,
    /// Re-reads sealed segments, looking for damage.
    pub scrubber: super::Scrubber,
}

/// The running background threads.
#[derive(Debug)]
pub(super) struct Background {
    scheduler: SchedulerThread,
    deleter: BackgroundThread,
    mover: BackgroundThread,
    scrubber: BackgroundThread,
}

impl Maintenance {
    pub fn new(deleter: Arc<Deleter>, config: &super::ManagerConfig) -> Self {
        Self {
            deleter,
            background: Mutex::new(None),
            cleaner: Mutex::new(None),
            cleaner_checkpoints: Mutex::new(HashMap::new()),
            mover_wakeup: Arc::new(Wakeup::default()),
            move_throttle: Throttle::new(config.move_max_bytes_per_second),
            move_pause: super::moves::MovePause::default(),
            scrubber: super::Scrubber::new(&config.scrub),
        }
    }

    /// Stops the cleaner, then the scheduler and deleter threads.
    pub fn stop(&self) {
        if let Some(cleaner) = self.cleaner.lock().take() {
            cleaner.stop();
        }
        if let Some(mut background) = self.background.lock().take() {
            background.scheduler.stop();
            background.deleter.stop();
            background.mover.stop();
            background.scrubber.stop();
        }
    }
}
