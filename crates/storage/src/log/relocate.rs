//! Moving a log to another data directory while it serves (Kafka's future logs): a second log,
//! the *future* log, grows in the target directory from this one's batches, offsets kept,
//! while this log goes on taking appends and serving reads. Once the future log has caught up,
//! it takes this log's place under this log's writer lock: nothing can be appended between the
//! last batch copied and the swap, and every holder of this [`Log`] goes on with the same
//! object, now over the moved files.
//!
//! Lock order: this log's writer lock, then the future log's (the future log is written only
//! by whoever moves it, and never locks this one).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferrolog_records::batch::{BATCH_HEADER_LEN, LOG_OVERHEAD};

use super::{FetchBound, FetchParams, FirstBatch, Log, LogHome};
use crate::error::{Result, StorageError};
use crate::fs::fsync_dir;
use crate::offset::Offset;
use crate::producer::ProducerState;

/// The paths a swap renames: this log's directory goes to `retired` (a `-delete` name in its
/// own data directory), the future log's to `final_dir` (the partition's plain name in the
/// target data directory).
#[derive(Debug, Clone)]
pub struct SwapPaths {
    /// Where this log's directory goes, to be removed after `file.delete.delay.ms`.
    pub retired: PathBuf,
    /// Where the future log's directory goes.
    pub final_dir: PathBuf,
}

/// What one step of a copy did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyStep {
    /// Bytes of batches appended to the future log.
    pub copied_bytes: u64,
    /// Offsets this log holds past the future log's end after the step.
    pub offset_lag: i64,
}

impl Log {
    /// Copies into `future` the next batches it lacks, at most `max_bytes` (one batch larger
    /// than that comes whole), and brings its log start offset and high watermark up to this
    /// log's. A log whose end is damaged is not copied: the damage would be left behind
    /// silently.
    pub(crate) fn copy_into(&self, future: &Log, max_bytes: u64) -> Result<CopyStep> {
        let source = self.view();
        if let Some(damaged) = &source.damaged_end {
            return Err(damaged.refusal());
        }
        // This log was cut below what was copied (recovery, a tool): the copy follows.
        if future.log_end_offset() > source.log_end.offset {
            future.truncate_to(source.log_end.offset)?;
        }
        // Retention or DeleteRecords removed what the copy had not reached: it starts over at
        // the new log start.
        if source.log_start_offset > future.log_end_offset() {
            future.truncate_fully_and_start_at(source.log_start_offset)?;
        }
        let from = future.log_end_offset();
        let mut copied_bytes = 0;
        if from < source.log_end.offset {
            let data = self.read(FetchParams {
                start_offset: from,
                max_bytes,
                bound: FetchBound::LogEnd,
                first_batch: FirstBatch::Whole,
            })?;
            if let Some(slice) = data.slice {
                let bytes = slice.read_bytes()?;
                let whole = whole_batches(&bytes);
                let first_base = batch_base_offset(whole);
                if let Some(base) = first_base.filter(|base| *base < from.value()) {
                    // The batch holding the new log start begins below it: an empty copy
                    // starts at that batch, as a follower does.
                    if future.size_in_bytes() != 0 {
                        return Err(StorageError::Fatal(format!(
                            "{}: the batch at offset {base} overlaps the future log's end {from}",
                            self.topic_partition
                        )));
                    }
                    future.truncate_fully_and_start_at(Offset::new(base))?;
                }
                if !whole.is_empty() {
                    future.append_as_follower(whole)?;
                    copied_bytes = whole.len() as u64;
                }
            }
        }
        let source = self.view();
        let future_end = future.log_end_offset();
        future.update_high_watermark(source.high_watermark.min(future_end));
        if source.log_start_offset > future.log_start_offset() {
            future.maybe_increment_log_start_offset(source.log_start_offset.min(future_end))?;
        }
        Ok(CopyStep {
            copied_bytes,
            offset_lag: source.log_end.offset - future_end,
        })
    }

    /// Swaps `future` in for this log's files. Under the writer lock (appends wait) the tail
    /// the future log still lacks is copied, at most `max_tail_bytes` of it (a future log further
    /// behind is left to catch up first: false, nothing changed); the future log is fsynced as
    /// far as this log was; this log's directory is renamed to `paths.retired` and the future
    /// log's to `paths.final_dir`; then this log goes on over the future log's segments,
    /// producer state and directory.
    ///
    /// The renames go in that order so that a crash between them leaves one complete copy, the
    /// future log, beside a `-delete` directory of the same unique id: loading finishes the
    /// swap. A failed first rename changes nothing; a failed second one is undone, and this log
    /// serves on from its own directory (the target directory goes offline).
    pub(crate) fn take_over(
        &self,
        future: &Log,
        paths: &SwapPaths,
        max_tail_bytes: u64,
    ) -> Result<bool> {
        let mut writer = self.writer.lock();
        self.ensure_open(&writer)?;
        let mut copied = 0u64;
        loop {
            let step = self.copy_into(future, max_tail_bytes.max(1))?;
            copied += step.copied_bytes;
            if step.offset_lag <= 0 {
                break;
            }
            if copied > max_tail_bytes {
                return Ok(false);
            }
            if step.copied_bytes == 0 {
                return Err(StorageError::Fatal(format!(
                    "{}: the copy to {} made no progress at offset {}",
                    self.topic_partition,
                    future.dir().display(),
                    future.log_end_offset()
                )));
            }
        }
        let view = self.view();
        // What was durable here stays durable there.
        future.flush_up_to(view.recovery_point.min(future.log_end_offset()))?;
        let source_home = Arc::clone(&view.home);
        let target_home = Arc::clone(&future.view().home);
        if let Err(error) = rename_durably(&source_home.dir, &paths.retired) {
            source_home.health.observe(&error);
            return Err(error);
        }
        // Readers still on the old view find its files (their transaction indexes, read when
        // first needed, included) where they now are.
        for segment in view.segments.iter() {
            segment.moved_to(&paths.retired);
        }
        crate::fault::pause("log.move.between-renames");
        if let Err(error) = rename_durably(&target_home.dir, &paths.final_dir) {
            target_home.health.observe(&error);
            match rename_durably(&paths.retired, &source_home.dir) {
                Ok(()) => {
                    for segment in view.segments.iter() {
                        segment.moved_to(&source_home.dir);
                    }
                }
                Err(undo) => {
                    // Loading finishes the swap at the next start, or keeps this copy if the
                    // target directory is gone; until then the log serves nothing.
                    source_home.health.observe(&undo);
                    writer.closed = true;
                }
            }
            return Err(error);
        }
        let (future_view, producers) = future.hand_over();
        for segment in future_view.segments.iter() {
            segment.moved_to(&paths.final_dir);
        }
        let mut next = (*future_view).clone();
        next.home = Arc::new(LogHome {
            dir: paths.final_dir.clone(),
            health: Arc::clone(&target_home.health),
        });
        next.high_watermark = view
            .high_watermark
            .clamp(next.log_start_offset, next.log_end.offset);
        // The copy's epochs came with its batches; the partition's epoch stays.
        next.leader_epoch = next.leader_epoch.max(view.leader_epoch);
        *self.producers.lock() = producers;
        self.verifications.lock().clear_all();
        self.reported_damage.lock().clear();
        self.publish(next);
        // The copy's checkpoint may lag its cache (its log start moved); close writes it.
        self.set_epochs_unwritten(true);
        drop(writer);
        Ok(true)
    }

    /// Renames this log's directory to `to` (loading finishing an interrupted swap, which
    /// promotes a future log to the partition's plain name).
    pub(crate) fn rename_dir(&self, to: &Path) -> Result<()> {
        let writer = self.writer.lock();
        self.ensure_open(&writer)?;
        let view = self.view();
        if let Err(error) = rename_durably(&view.home.dir, to) {
            view.home.health.observe(&error);
            return Err(error);
        }
        for segment in view.segments.iter() {
            segment.moved_to(to);
        }
        let mut next = (*view).clone();
        next.home = Arc::new(LogHome {
            dir: to.to_path_buf(),
            health: Arc::clone(&view.home.health),
        });
        self.publish(next);
        Ok(())
    }

    /// Closes a future log for its swap, giving its last view and its producer state to the
    /// log taking its place.
    fn hand_over(&self) -> (Arc<super::LogView>, ProducerState) {
        let mut writer = self.writer.lock();
        writer.closed = true;
        let producers = std::mem::take(&mut *self.producers.lock());
        (self.view(), producers)
    }
}

/// Renames a partition directory and fsyncs the parent directories involved.
fn rename_durably(from: &Path, to: &Path) -> Result<()> {
    crate::fs::rename(from, to).map_err(StorageError::io("rename", from))?;
    if let Some(parent) = to.parent() {
        fsync_dir(parent)?;
    }
    match (from.parent(), to.parent()) {
        (Some(from_parent), Some(to_parent)) if from_parent != to_parent => fsync_dir(from_parent),
        _ => Ok(()),
    }
}

/// The leading whole batches of `bytes` (a read may end inside a batch).
fn whole_batches(bytes: &[u8]) -> &[u8] {
    let mut end = 0usize;
    while let Some(header) = bytes.get(end..end + LOG_OVERHEAD) {
        let length = i32::from_be_bytes([header[8], header[9], header[10], header[11]]);
        let Ok(length) = usize::try_from(length) else {
            break;
        };
        let next = end + LOG_OVERHEAD + length;
        if length + LOG_OVERHEAD < BATCH_HEADER_LEN || next > bytes.len() {
            break;
        }
        end = next;
    }
    &bytes[..end]
}

/// The base offset of the first batch of `bytes`.
fn batch_base_offset(bytes: &[u8]) -> Option<i64> {
    let header: [u8; 8] = bytes.get(..8)?.try_into().ok()?;
    Some(i64::from_be_bytes(header))
}

#[cfg(test)]
mod tests;
