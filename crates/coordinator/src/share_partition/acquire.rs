//! Handing records out (Kafka's `SharePartition#acquire`): available records in flight first,
//! then new ones, within the fetch's record budget and the partition's in-flight bound, each
//! acquired for the member with a lock that lapses after the group's lock duration.
//!
//! In `batch_optimized` mode whole log batches are handed out (a fetch may get more records
//! than it asked for) and new records are cut into ranges of at least `BatchSize` on batch
//! boundaries; in `record_limit` mode never more than asked, the rest of a batch left
//! available. A batch delivered often is handed out alone and in parts (half of it, then a
//! quarter, ..., one record at its last delivery), so one bad record cannot hold many back.

use std::sync::Arc;

use super::cache::{Batch, Held, Rec};
use super::{RecordState, SharePartition};

/// A batch the log read returned, as the acquisition needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogBatch {
    pub first: i64,
    pub last: i64,
    pub producer_id: i64,
    pub transactional: bool,
    /// A transaction's ABORT marker.
    pub abort_marker: bool,
}

/// Kafka's `ShareAcquireMode` (KIP-1206).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireMode {
    BatchOptimized,
    RecordLimit,
}

impl AcquireMode {
    pub fn from_id(id: i8) -> Option<Self> {
        match id {
            0 => Some(Self::BatchOptimized),
            1 => Some(Self::RecordLimit),
            _ => None,
        }
    }
}

/// A range of records acquired, with the delivery count this delivery makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acquired {
    pub first: i64,
    pub last: i64,
    pub count: i16,
}

/// One acquisition's request.
#[derive(Debug, Clone, Copy)]
pub struct AcquireRequest<'a> {
    pub member: &'a str,
    pub mode: AcquireMode,
    pub batch_size: i32,
    /// What is left of the fetch's MaxRecords.
    pub max_records: i32,
    /// The batches read, from [`SharePartition::next_fetch_offset`].
    pub batches: &'a [LogBatch],
    /// For `read_committed`: the aborted transactions over the read, (producer id, first offset).
    pub aborted: Option<&'a [(i64, i64)]>,
    pub now_ms: i64,
}

/// Kafka's redelivery throttle: from this delivery count on, a batch goes out alone, in parts.
fn throttle_from(limit: i16) -> i16 {
    ((limit + 1) / 2).max(2)
}

impl SharePartition {
    /// Acquires records of `request.batches` for `request.member`; returns the ranges acquired
    /// in offset order (empty when none is available).
    pub fn acquire(&mut self, request: &AcquireRequest<'_>) -> Vec<Acquired> {
        let (Some(first), Some(last)) = (request.batches.first(), request.batches.last()) else {
            return Vec::new();
        };
        if request.max_records <= 0 || last.last < self.start {
            return Vec::new();
        }
        let span = if self.cache.is_empty() {
            0
        } else {
            self.end - self.start
        };
        let room = self.limits.max_in_flight - span;
        let (last_to_acquire, mut budget) = if room > 0 {
            (last.last, i64::from(request.max_records).min(room))
        } else if self.next_fetch_offset() < self.end {
            (last.last.min(self.end - 1), i64::from(request.max_records))
        } else {
            return Vec::new();
        };
        let member: Arc<str> = Arc::from(request.member);
        let deadline_ms = request.now_ms + self.limits.lock_duration_ms;
        let acquired_rec = |count: i16| Rec {
            state: RecordState::Acquired,
            count,
            member: Some(Arc::clone(&member)),
            deadline_ms,
        };
        let mut out = Vec::new();
        let from = first.first.max(self.start);
        let keys: Vec<i64> = self
            .cache
            .range(..=last_to_acquire)
            .filter(|(_, batch)| batch.last >= from)
            .map(|(key, _)| *key)
            .collect();
        let limit = self.limits.delivery_count_limit;
        for key in keys {
            if budget <= 0 {
                break;
            }
            let Some(batch) = self.cache.get_mut(&key) else {
                continue;
            };
            let (lo, hi) = (from.max(batch.first), last_to_acquire.min(batch.last));
            let Some(highest) = batch.max_available_count(lo, hi) else {
                continue;
            };
            let throttled = limit > 2 && highest >= throttle_from(limit);
            if throttled && !out.is_empty() {
                return self.finish(request, out);
            }
            // A batch the start offset (or the log's start) passed into goes out by offset.
            let whole = matches!(batch.held, Held::Whole(_))
                && batch.first >= first.first.max(self.start)
                && batch.last <= last_to_acquire;
            let too_big = request.mode == AcquireMode::RecordLimit && batch.len() > budget;
            if whole && !too_big && !throttled {
                let count = highest.saturating_add(1);
                batch.held = Held::Whole(acquired_rec(count));
                out.push(Acquired {
                    first: batch.first,
                    last: batch.last,
                    count,
                });
                budget -= batch.len();
                continue;
            }
            let taken = acquire_offsets(
                batch,
                (lo, hi),
                budget,
                request.mode,
                limit,
                &acquired_rec,
                &mut out,
            );
            budget -= taken;
            if throttled && taken > 0 {
                return self.finish(request, out);
            }
        }
        if budget > 0 && last_to_acquire >= self.end {
            let new_first = self.end.max(first.first).max(self.start);
            if new_first <= last_to_acquire {
                self.acquire_new(
                    request,
                    (new_first, last_to_acquire),
                    budget,
                    &acquired_rec,
                    &mut out,
                );
            }
        }
        self.finish(request, out)
    }

    /// Records never in flight, `range` within the budget: new batches acquired at count 1.
    fn acquire_new(
        &mut self,
        request: &AcquireRequest<'_>,
        (first, mut last): (i64, i64),
        budget: i64,
        acquired_rec: &dyn Fn(i16) -> Rec,
        out: &mut Vec<Acquired>,
    ) {
        if budget < last - first + 1 {
            // Up to the end of the log batch holding the last record the budget reaches.
            let target = first + budget - 1;
            let holding = request
                .batches
                .iter()
                .rev()
                .find(|batch| batch.first <= target);
            last = match holding {
                Some(batch) if target <= batch.last => batch.last.min(last),
                _ => target,
            };
        }
        let was_empty = self.cache.is_empty();
        if request.mode == AcquireMode::RecordLimit && last - first + 1 > budget {
            let mut recs = vec![Rec::idle(RecordState::Available, 0); (last - first + 1) as usize];
            for rec in recs.iter_mut().take(budget as usize) {
                *rec = acquired_rec(1);
            }
            self.cache.insert(
                first,
                Batch {
                    first,
                    last,
                    held: Held::Offsets(recs),
                },
            );
            out.push(Acquired {
                first,
                last: first + budget - 1,
                count: 1,
            });
        } else {
            for (from, to) in cut_ranges(request, first, last) {
                self.cache
                    .insert(from, Batch::whole(from, to, acquired_rec(1)));
                out.push(Acquired {
                    first: from,
                    last: to,
                    count: 1,
                });
            }
        }
        if was_empty {
            self.start = first;
        }
        self.end = last + 1;
    }

    /// The end of an acquisition: `read_committed` leaves out aborted transactions' records
    /// (archived here, as Kafka archives them in memory only), and the invariants are checked.
    fn finish(&mut self, request: &AcquireRequest<'_>, mut out: Vec<Acquired>) -> Vec<Acquired> {
        if let Some(aborted) = request.aborted {
            for (from, to) in aborted_ranges(request.batches, aborted) {
                self.archive_acquired(from, to);
                out = cut_out(out, from, to);
            }
            self.advance_start();
        }
        self.check();
        out
    }

    /// Archives the acquired records in `from..=to`.
    fn archive_acquired(&mut self, from: i64, to: i64) {
        let keys: Vec<i64> = self
            .cache
            .range(..=to)
            .filter(|(_, b)| b.last >= from)
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            let Some(batch) = self.cache.get_mut(&key) else {
                continue;
            };
            let first = batch.first;
            let recs = batch.split();
            for (index, rec) in recs.iter_mut().enumerate() {
                let offset = first + index as i64;
                if (from..=to).contains(&offset) && rec.state == RecordState::Acquired {
                    *rec = Rec::idle(RecordState::Archived, rec.count);
                }
            }
        }
    }
}

/// Acquires the available records of `batch` in `lo..=hi`, one by one: a throttled batch only
/// a part (half, a quarter, ... of it), a record at its last delivery alone, and in
/// `record_limit` mode no more than `budget`. Returns how many were acquired.
fn acquire_offsets(
    batch: &mut Batch,
    (lo, hi): (i64, i64),
    budget: i64,
    mode: AcquireMode,
    limit: i16,
    acquired_rec: &dyn Fn(i16) -> Rec,
    out: &mut Vec<Acquired>,
) -> i64 {
    let first = batch.first;
    let size = batch.len();
    let from_here = out.len();
    let recs = batch.split();
    let mut taken = 0i64;
    let mut cap: Option<i64> = None;
    for offset in lo..=hi {
        let rec = &mut recs[(offset - first) as usize];
        if rec.state != RecordState::Available {
            continue;
        }
        let count = rec.count;
        if limit > 2 && count == limit - 1 && taken > 0 {
            break;
        }
        if limit > 2 && count >= throttle_from(limit) && cap.is_none() {
            let shift = u32::try_from(count - throttle_from(limit) + 1)
                .unwrap_or(63)
                .min(63);
            cap = Some((size >> shift).max(1));
        }
        *rec = acquired_rec(count.saturating_add(1));
        let mergeable = out.len() > from_here;
        match out.last_mut() {
            Some(tail) if mergeable && tail.last + 1 == offset && tail.count == count + 1 => {
                tail.last = offset;
            }
            _ => out.push(Acquired {
                first: offset,
                last: offset,
                count: count + 1,
            }),
        }
        taken += 1;
        if limit > 2 && count + 1 == limit {
            break;
        }
        if (mode == AcquireMode::RecordLimit && taken == budget) || cap == Some(taken) {
            break;
        }
    }
    taken
}

/// New records cut into ranges: in `batch_optimized` mode at a log batch's start once a range
/// holds `BatchSize` records; otherwise one range.
fn cut_ranges(request: &AcquireRequest<'_>, first: i64, last: i64) -> Vec<(i64, i64)> {
    let size = i64::from(request.batch_size.max(1));
    if request.mode != AcquireMode::BatchOptimized || last - first < size {
        return vec![(first, last)];
    }
    let mut ranges = Vec::new();
    let mut from = first;
    for batch in request
        .batches
        .iter()
        .filter(|b| b.first > first && b.first <= last)
    {
        if batch.first - from >= size {
            ranges.push((from, batch.first - 1));
            from = batch.first;
        }
    }
    ranges.push((from, last));
    ranges
}

/// The ranges of transactional batches the read holds whose transaction was aborted.
fn aborted_ranges(batches: &[LogBatch], aborted: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut pending: Vec<(i64, i64)> = aborted.to_vec();
    pending.sort_by_key(|&(_, first)| first);
    let mut next = 0;
    let mut open = std::collections::BTreeSet::new();
    let mut ranges = Vec::new();
    for batch in batches {
        while next < pending.len() && pending[next].1 <= batch.last {
            open.insert(pending[next].0);
            next += 1;
        }
        if batch.abort_marker {
            open.remove(&batch.producer_id);
        } else if batch.transactional && open.contains(&batch.producer_id) {
            ranges.push((batch.first, batch.last));
        }
    }
    ranges
}

/// `acquired` without the records in `from..=to`.
fn cut_out(acquired: Vec<Acquired>, from: i64, to: i64) -> Vec<Acquired> {
    let mut out = Vec::with_capacity(acquired.len());
    for range in acquired {
        if range.last < from || range.first > to {
            out.push(range);
            continue;
        }
        if range.first < from {
            out.push(Acquired {
                last: from - 1,
                ..range
            });
        }
        if range.last > to {
            out.push(Acquired {
                first: to + 1,
                ..range
            });
        }
    }
    out
}
