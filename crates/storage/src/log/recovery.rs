//! Recovery while a log loads: segments whose indexes are missing or damaged, and after an
//! unclean shutdown every segment from the one holding the recovery point on, are scanned,
//! validated, re-indexed and cut at their first bad batch; nothing after a cut is kept.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::load::{LoadReport, RecoveredSegment};
use crate::error::Result;
use crate::offset::Offset;
use crate::segment::{DELETED_SUFFIX, Segment};

/// Recovers the segments of `bases` (whose indexes are missing or damaged).
pub(super) fn recover_listed(
    segments: &BTreeMap<Offset, Arc<Segment>>,
    bases: &[Offset],
    report: &mut LoadReport,
) -> Result<()> {
    for base in bases {
        if let Some(segment) = segments.get(base) {
            report.recovered.push(recover_one(segment)?);
        }
    }
    Ok(())
}

fn recover_one(segment: &Segment) -> Result<RecoveredSegment> {
    let outcome = segment.recover()?;
    if let Some((position, reason)) = &outcome.corruption {
        tracing::warn!(
            path = %segment.log_path().display(),
            position,
            truncated_bytes = outcome.truncated_bytes,
            reason,
            "found an invalid batch during recovery; the segment was cut there"
        );
    }
    Ok(RecoveredSegment {
        log_file: segment.log_path(),
        valid_bytes: outcome.valid_bytes,
        truncated_bytes: outcome.truncated_bytes,
        corruption: outcome.corruption,
        epoch_starts: outcome.epoch_starts,
    })
}

/// Recovers every segment from the one holding `recovery_point` to the end. When a segment had
/// to be cut, every later segment is dropped: nothing after a hole can be trusted.
pub(super) fn recover_from(
    segments: &mut BTreeMap<Offset, Arc<Segment>>,
    recovery_point: Offset,
    report: &mut LoadReport,
    segments_to_recover: Option<&AtomicUsize>,
) -> Result<()> {
    let first = segments
        .range(..=recovery_point)
        .next_back()
        .map_or(Offset::new(i64::MIN), |(base, _)| *base);
    let bases: Vec<Offset> = segments.range(first..).map(|(base, _)| *base).collect();
    let count = |change: isize| {
        if let Some(counter) = segments_to_recover {
            if change >= 0 {
                counter.fetch_add(change as usize, Ordering::Relaxed);
            } else {
                counter.fetch_sub(change.unsigned_abs(), Ordering::Relaxed);
            }
        }
    };
    count(bases.len() as isize);
    let mut done = 0usize;
    let result = (|| {
        for (index, base) in bases.iter().enumerate() {
            let Some(segment) = segments.get(base) else {
                continue;
            };
            let already = report
                .recovered
                .iter()
                .any(|recovered| recovered.log_file == segment.log_path());
            if !already {
                let recovered = recover_one(segment)?;
                let truncated = recovered.truncated_bytes > 0;
                report.recovered.push(recovered);
                if truncated {
                    for later in &bases[index + 1..] {
                        if let Some(dropped) = segments.remove(later) {
                            report.removed_segments.push(dropped.log_path());
                            dropped.change_file_suffixes("", DELETED_SUFFIX)?;
                            dropped.delete_files()?;
                        }
                    }
                    break;
                }
            }
            done += 1;
            count(-1);
        }
        Ok(())
    })();
    count(-((bases.len() - done) as isize));
    result
}
