//! Salvage of a running log's sealed segments, on an operator's request: each damaged one is
//! rewritten with every valid entry it holds (the planner of `recover --salvage`), written as
//! a `.cleaned` segment with indexes built as appends build them, and swapped in as the
//! cleaner swaps its output (`Log::replace_segments`): readers holding the old view go on
//! reading the old files, later readers get the new segment. What is lost is listed in the
//! segment's `.salvaged` file first. A segment with no valid entry left is replaced by an empty
//! one, as compaction may leave: readers pass over it to the next segment.
//!
//! The idempotent producers' state in memory already saw the dropped batches and stays as it
//! is. The transaction index keeps the old segment's entries whose ABORT marker is kept: an
//! entry without its marker would outlive the next recovery's rebuild of the index.

use std::ops::Range;
use std::sync::Arc;

use ferrolog_records::EntryIter;

use super::Log;
use super::salvage::{SalvagedSegment, write_lost_list};
use crate::error::{Result, StorageError};
use crate::fs::remove_if_exists;
use crate::offset::Offset;
use crate::segment::{
    BatchMeta, CLEANED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SalvagePlan, Segment, SegmentSpan,
    TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, plan_salvage, segment_path, with_added_suffix,
};

impl Log {
    /// Salvages every damaged sealed segment of the log (the active one is left to recovery);
    /// returns what each salvage did. The caller keeps the cleaner off the log meanwhile.
    pub fn salvage_sealed(&self) -> Result<Vec<SalvagedSegment>> {
        let view = self.view();
        let mut salvaged = Vec::new();
        for index in 0..view.segments.len().saturating_sub(1) {
            let segment = &view.segments[index];
            let span = SegmentSpan {
                base_offset: segment.base_offset().value(),
                end_offset: Some(view.segments[index + 1].base_offset().value()),
            };
            if let Some(done) = self.salvage_segment(segment, span)? {
                salvaged.push(done);
            }
        }
        Ok(salvaged)
    }

    fn salvage_segment(
        &self,
        segment: &Arc<Segment>,
        span: SegmentSpan,
    ) -> Result<Option<SalvagedSegment>> {
        let path = segment.log_path();
        let data = std::fs::read(&path).map_err(StorageError::io("read", &path))?;
        let hints: Vec<(i64, u64)> = segment
            .offset_index_entries()?
            .iter()
            .map(|entry| (entry.offset.value(), entry.position.bytes()))
            .collect();
        let plan = plan_salvage(&data, span, &hints);
        if plan.is_intact() {
            return Ok(None);
        }
        let dir = self.dir();
        let now_ms = self.clock.now_ms();
        write_lost_list(&dir, span.base_offset, &path, &plan, now_ms)?;
        let output = self.salvaged_segment(segment, &data, &plan)?;
        self.replace_segments(&[Arc::clone(segment)], output)?;
        tracing::warn!(partition = %self.topic_partition, path = %path.display(), lost = ?plan.lost, "salvaged a damaged sealed segment");
        Ok(Some(SalvagedSegment {
            log_file: path,
            kept_bytes: plan.kept_bytes(),
            lost: plan.lost,
            removed: false,
            indexes_rebuilt: false,
        }))
    }

    /// The kept entries of `segment` as a new `.cleaned` segment, flushed.
    fn salvaged_segment(
        &self,
        segment: &Segment,
        data: &[u8],
        plan: &SalvagePlan,
    ) -> Result<Segment> {
        let dir = self.dir();
        let base = segment.base_offset();
        for suffix in [
            LOG_SUFFIX,
            INDEX_SUFFIX,
            TIME_INDEX_SUFFIX,
            TXN_INDEX_SUFFIX,
        ] {
            remove_if_exists(&with_added_suffix(
                &segment_path(&dir, base.value(), suffix),
                CLEANED_SUFFIX,
            ))?;
        }
        let config = self.config();
        let output = Segment::open(&dir, base, &config, self.clock.now_ms(), CLEANED_SUFFIX)?;
        let written = fill(segment, &output, data, plan);
        if let Err(error) = written {
            if let Err(cleanup) = output.delete_files() {
                tracing::warn!(%cleanup, "could not remove the files of a dropped salvage");
            }
            return Err(error);
        }
        Ok(output)
    }
}

/// Appends the kept entries to `output`, with the transaction index entries whose marker is
/// kept, and seals it.
fn fill(segment: &Segment, output: &Segment, data: &[u8], plan: &SalvagePlan) -> Result<()> {
    for range in &plan.kept {
        for entry in EntryIter::new(&data[range.start as usize..range.end as usize]) {
            let (_, entry) = entry.map_err(|(at, error)| StorageError::Corrupt {
                path: segment.log_path(),
                position: range.start + at as u64,
                reason: error.to_string(),
            })?;
            let meta = BatchMeta {
                last_offset: Offset::new(entry.last_offset()),
                max_timestamp: entry.max_timestamp(),
                size: entry.size_in_bytes() as u32,
            };
            output.append(entry.as_bytes(), &[meta])?;
        }
    }
    let lost: Vec<Range<i64>> = plan.lost.iter().filter_map(|l| l.offsets.clone()).collect();
    for txn in segment.aborted_txns()? {
        if !lost
            .iter()
            .any(|range| range.contains(&txn.last_offset.value()))
        {
            output.append_aborted_txn(txn)?;
        }
    }
    output.on_becoming_inactive()?;
    output.flush()
}
