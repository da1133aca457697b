//! The scrubber: a background thread that re-reads every sealed segment, a pass at a time, at
//! a throttled rate (`ferrolog.scrub.bytes.per.second`, 0 pausing it), checking each as
//! [`scrub_segment`] does, so that damage is found before a reader or the cleaner meets it.
//!
//! A pass goes through the logs in partition order and each log's sealed segments in offset
//! order; how far it got in each partition (the base offset of the next segment to read) is
//! kept in each directory's `ferrolog-scrub-checkpoint`, written after every segment, so a
//! restart resumes where it stopped (at a damaged segment, if the pass found one: reading it
//! again records its damage again). A new pass starts `ferrolog.scrub.interval.ms` after the
//! last one started; that start is kept in the same checkpoint (under [`PASS_STARTED_TOPIC`],
//! partition -1, which no partition is), so that a broker restarted more often than the
//! interval still begins new passes. The active segment is left to recovery, which reads it
//! after a crash.
//!
//! Damage found is logged at ERROR with the file and byte position, counted
//! (`ferrolog_log_scrub_damage_found_total`), and recorded on the segment
//! ([`crate::segment::Segment::mark_damaged`]): from then on reads that reach it are refused
//! with `CORRUPT_MESSAGE`, and the cleaner leaves the partition alone. `ferrolog recover
//! --salvage` repairs it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::{LogManager, ScrubConfig};
use crate::checkpoint::OffsetMap;
use crate::error::StorageError;
use crate::log::Log;
use crate::scheduler::Wakeup;
use crate::segment::{Segment, SegmentIndexes, SegmentSpan, scrub_segment};
use crate::throttle::Throttle;
use crate::types::TopicPartition;

/// Each directory's record of the scrubber's progress: per partition, the base offset of the
/// next sealed segment to read in the current pass.
pub const SCRUB_CHECKPOINT: &str = "ferrolog-scrub-checkpoint";

/// The checkpoint entry holding when the current pass started (the manager's clock, in
/// milliseconds): this topic name at partition -1.
pub const PASS_STARTED_TOPIC: &str = "pass-started";

/// The key of the pass's start in the checkpoint.
fn pass_started_key() -> TopicPartition {
    TopicPartition::new(PASS_STARTED_TOPIC, -1)
}

/// How often the scrubber's progress is written down at most (and whenever it finds damage).
const CHECKPOINT_EVERY_MS: i64 = 10_000;

/// The longest the thread waits between looks at a finished pass or a paused rate.
const IDLE_WAIT: Duration = Duration::from_secs(5);

/// The scrubber's state, owned by the LogManager's maintenance.
#[derive(Debug)]
pub struct Scrubber {
    throttle: Throttle,
    interval_ms: i64,
    wakeup: Arc<Wakeup>,
    progress: Mutex<Progress>,
}

/// How far the current pass got.
#[derive(Debug, Default)]
struct Progress {
    /// When the current pass started (the manager's clock).
    started_ms: i64,
    /// Per partition, the base offset of the next segment to read.
    next: HashMap<TopicPartition, i64>,
    /// Per partition, the base offset of the first segment this pass found damaged: the
    /// checkpoint stays there, so a restart reads it (and records its damage) again.
    damaged: HashMap<TopicPartition, i64>,
    /// Whether the current pass has read every sealed segment.
    complete: bool,
    /// Passes completed since the manager opened.
    passes: u64,
    /// When a checkpoint was last written (the manager's clock).
    checkpointed_ms: i64,
    /// Nothing is read before this time: the start's own work comes first
    /// (`log.initial.task.delay.ms`, as the other background jobs).
    not_before_ms: i64,
}

/// One sealed segment to read, with its log.
struct Target {
    topic_partition: TopicPartition,
    log: Arc<Log>,
    segment: Arc<Segment>,
    span: SegmentSpan,
}

impl Scrubber {
    pub(super) fn new(config: &ScrubConfig) -> Self {
        Self {
            throttle: Throttle::new(config.bytes_per_second),
            interval_ms: i64::try_from(config.interval.as_millis()).unwrap_or(i64::MAX),
            wakeup: Arc::new(Wakeup::default()),
            progress: Mutex::new(Progress::default()),
        }
    }

    /// Changes the rate (0 pauses); the thread takes it up at once.
    pub fn set_rate(&self, bytes_per_second: f64) {
        self.throttle.set_rate(bytes_per_second);
        self.wakeup.wake();
    }

    /// The rate in bytes per second (0: paused).
    pub fn rate(&self) -> f64 {
        self.throttle.rate()
    }

    /// The passes over every sealed segment completed since the manager opened.
    pub fn passes_completed(&self) -> u64 {
        self.progress.lock().passes
    }

    pub(super) fn wakeup(&self) -> &Arc<Wakeup> {
        &self.wakeup
    }

    /// Takes up the progress recorded in each directory's checkpoint; the pass in progress
    /// counts as started when the earliest directory says (now, when none says, or when one
    /// says later than now: a clock set back).
    pub(super) fn load(&self, manager: &LogManager, now_ms: i64) {
        let mut progress = self.progress.lock();
        let delay = manager.config.background.initial_delay.as_millis();
        progress.not_before_ms = now_ms.saturating_add(i64::try_from(delay).unwrap_or(i64::MAX));
        let mut started_ms = now_ms;
        for dir in &manager.dirs {
            if !dir.is_offline() {
                let mut entries = dir.read_checkpoint_or_empty(SCRUB_CHECKPOINT);
                if let Some(started) = entries.remove(&pass_started_key()) {
                    started_ms = started_ms.min(started);
                }
                progress.next.extend(entries);
            }
        }
        progress.started_ms = started_ms;
    }

    /// One step of the thread: reads the next sealed segment of the pass, or waits for the
    /// next pass; returns how long to sleep before the next step.
    pub(super) fn scrub_once(&self, manager: &LogManager) -> Duration {
        let not_before = self.progress.lock().not_before_ms;
        if self.throttle.rate() < 1.0 || manager.clock.now_ms() < not_before {
            return IDLE_WAIT;
        }
        let Some(target) = self.next_target(manager) else {
            return self.between_passes(manager);
        };
        let indexes = match (
            target.segment.offset_index_entries(),
            target.segment.time_index_entries(),
        ) {
            (Ok(offsets), Ok(times)) => SegmentIndexes { offsets, times },
            (Err(error), _) | (_, Err(error)) => {
                self.failed(manager, &target, &error);
                return IDLE_WAIT;
            }
        };
        let pace = |bytes: u64| {
            metrics::counter!("ferrolog_log_scrub_bytes_total").increment(bytes);
            let wait = self.throttle.charge(bytes);
            if !wait.is_zero() {
                self.wakeup.sleep(wait);
            }
            !self.wakeup.is_stopped() && self.throttle.rate() >= 1.0
        };
        let path = target.segment.log_path();
        match scrub_segment(&path, target.span, &indexes, pace) {
            Ok(Some(found)) => {
                metrics::counter!("ferrolog_log_scrub_segments_total").increment(1);
                if let Some((position, reason)) = found.damage {
                    self.damage_found(&target, position, reason);
                    self.progress
                        .lock()
                        .damaged
                        .entry(target.topic_partition.clone())
                        .or_insert(target.span.base_offset);
                }
                if let Some((position, reason)) = found.index_problem {
                    index_problem_found(&target, position, &reason);
                }
                if let Some(reason) = found.unchecked {
                    tracing::warn!(partition = %target.topic_partition, path = %path.display(), %reason, "the scrubber left the rest of a segment unchecked");
                }
                self.advance(manager, &target);
                Duration::ZERO
            }
            // Stopped, or paused: the segment is read again from its start.
            Ok(None) => Duration::ZERO,
            Err(error) if removed_meanwhile(&error) => {
                // Retention or the cleaner removed the segment meanwhile.
                self.advance(manager, &target);
                Duration::ZERO
            }
            Err(error) => {
                self.failed(manager, &target, &error);
                IDLE_WAIT
            }
        }
    }

    /// The first sealed segment of the pass not yet read, over the online logs in partition
    /// order.
    fn next_target(&self, manager: &LogManager) -> Option<Target> {
        let mut logs = manager.logs();
        logs.sort_by(|a, b| a.0.cmp(&b.0));
        let progress = self.progress.lock();
        for (topic_partition, log) in logs {
            if log.health().is_offline() {
                continue;
            }
            let from = progress
                .next
                .get(&topic_partition)
                .copied()
                .unwrap_or(i64::MIN);
            let view = log.view();
            let sealed = view.segments.len().saturating_sub(1);
            let found =
                (0..sealed).find(|index| view.segments[*index].base_offset().value() >= from);
            if let Some(index) = found {
                let segment = Arc::clone(&view.segments[index]);
                let span = SegmentSpan {
                    base_offset: segment.base_offset().value(),
                    end_offset: Some(view.segments[index + 1].base_offset().value()),
                };
                return Some(Target {
                    topic_partition,
                    log: Arc::clone(&log),
                    segment,
                    span,
                });
            }
        }
        None
    }

    /// Records that `target` was read, in memory and, at most every `CHECKPOINT_EVERY_MS`
    /// (a restart then reads again what was read since), in its directory's checkpoint.
    fn advance(&self, manager: &LogManager, target: &Target) {
        let end = target.span.end_offset.unwrap_or(i64::MAX);
        let now = manager.clock.now_ms();
        let due = {
            let mut progress = self.progress.lock();
            progress.next.insert(target.topic_partition.clone(), end);
            let due = now.saturating_sub(progress.checkpointed_ms) >= CHECKPOINT_EVERY_MS
                || progress.damaged.contains_key(&target.topic_partition);
            if due {
                progress.checkpointed_ms = now;
            }
            due
        };
        if due {
            self.write_checkpoint_of(manager, &target.topic_partition);
        }
    }

    /// Rewrites the scrub checkpoint of the directory holding `topic_partition`.
    fn write_checkpoint_of(&self, manager: &LogManager, topic_partition: &TopicPartition) {
        let dir_index = manager
            .logs
            .read()
            .get(topic_partition)
            .map(|entry| entry.dir_index);
        if let Some(dir_index) = dir_index {
            self.write_checkpoint(manager, dir_index);
        }
    }

    /// Rewrites directory `dir_index`'s scrub checkpoint from the progress of the logs it holds.
    fn write_checkpoint(&self, manager: &LogManager, dir_index: usize) {
        let entries: OffsetMap = {
            let progress = self.progress.lock();
            let mut entries: OffsetMap = manager
                .logs_in(dir_index)
                .into_iter()
                .filter_map(|(tp, _)| {
                    let next = *progress.next.get(&tp)?;
                    let damaged = progress.damaged.get(&tp).copied().unwrap_or(i64::MAX);
                    Some((tp, next.min(damaged)))
                })
                .collect();
            entries.insert(pass_started_key(), progress.started_ms);
            entries
        };
        if let Err(error) = manager.dirs[dir_index].write_checkpoint(SCRUB_CHECKPOINT, &entries) {
            tracing::warn!(%error, "the scrubber's progress was not recorded; a restart reads those segments again");
        }
    }

    /// When the pass has read everything: it is done, and the next starts once the interval
    /// since this one started has passed.
    fn between_passes(&self, manager: &LogManager) -> Duration {
        let now = manager.clock.now_ms();
        let mut progress = self.progress.lock();
        if !progress.complete {
            progress.complete = true;
            progress.passes += 1;
            progress.checkpointed_ms = now;
            drop(progress);
            metrics::counter!("ferrolog_log_scrub_passes_total").increment(1);
            tracing::info!("a scrub pass over every sealed segment is complete");
            self.write_checkpoints(manager);
            return Duration::ZERO;
        }
        let due = progress.started_ms.saturating_add(self.interval_ms);
        if now < due {
            return Duration::from_millis((due - now).unsigned_abs()).min(IDLE_WAIT);
        }
        *progress = Progress {
            started_ms: now,
            not_before_ms: progress.not_before_ms,
            passes: progress.passes,
            checkpointed_ms: now,
            ..Progress::default()
        };
        drop(progress);
        self.write_checkpoints(manager);
        Duration::ZERO
    }

    /// Rewrites every online directory's scrub checkpoint.
    fn write_checkpoints(&self, manager: &LogManager) {
        for dir_index in 0..manager.dirs.len() {
            if !manager.dirs[dir_index].is_offline() {
                self.write_checkpoint(manager, dir_index);
            }
        }
    }

    fn damage_found(&self, target: &Target, position: u64, reason: String) {
        let path = target.segment.log_path();
        tracing::error!(
            partition = %target.topic_partition,
            path = %path.display(),
            position,
            %reason,
            "the scrubber found damaged data in a sealed segment: reads reaching it are refused with CORRUPT_MESSAGE and the cleaner leaves the partition alone; `ferrolog recover --salvage` keeps every valid batch around it"
        );
        metrics::counter!(
            "ferrolog_log_scrub_damage_found_total",
            "topic" => target.topic_partition.topic.clone(),
            "partition" => target.topic_partition.partition.to_string()
        )
        .increment(1);
        target.segment.mark_damaged(position, reason);
    }

    /// A read that failed: an I/O error of the disk takes its directory offline, as a
    /// reader's would; anything else is reported. The pass goes on past the segment either
    /// way, so that it never stalls on one.
    fn failed(&self, manager: &LogManager, target: &Target, error: &StorageError) {
        tracing::warn!(partition = %target.topic_partition, %error, "the scrubber could not read a segment");
        if matches!(error, StorageError::Io { source, .. } if source.raw_os_error() == Some(libc::EIO))
        {
            target.log.health().observe(error);
        }
        self.advance(manager, target);
    }
}

/// Reports indexes that disagree with the entries of a segment whose data is whole: not marked
/// for readers (the data is good), mended by rebuilding the indexes.
fn index_problem_found(target: &Target, position: u64, reason: &str) {
    tracing::error!(
        partition = %target.topic_partition,
        path = %target.segment.log_path().display(),
        position,
        %reason,
        "the scrubber found a segment's indexes disagreeing with its data; `ferrolog recover --salvage` rebuilds them"
    );
    metrics::counter!(
        "ferrolog_log_scrub_index_problems_found_total",
        "topic" => target.topic_partition.topic.clone(),
        "partition" => target.topic_partition.partition.to_string()
    )
    .increment(1);
}

/// Whether `error` is a segment's file gone (retention or the cleaner removed it).
fn removed_meanwhile(error: &StorageError) -> bool {
    matches!(error, StorageError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}
