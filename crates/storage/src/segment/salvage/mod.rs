//! Salvage: which entries of a damaged `.log` survive. Recovery (Kafka's and ferrolog's by
//! default) cuts a segment at its first invalid entry, dropping every entry after it; salvage
//! instead looks past the damage for the next valid entry and keeps it and everything valid
//! after it, so only the damaged stretch is lost. The segment keeps its offsets: what is lost
//! is a gap, as compaction leaves.
//!
//! An entry is valid where recovery would take it: it parses, its checksum matches, its
//! offsets follow the previous kept entry's and fit the segment (below the next segment's
//! base). Past damage, every byte position is a candidate start, tried cheaply (a known magic,
//! a size that fits, an offset field in the gap) before its checksum is computed. A verified
//! entry of the offset index (one that points at a valid entry) overrules a candidate whose
//! offsets disagree with it.
//!
//! What is kept is exactly what a reader could prove: a v2 batch's checksum covers everything
//! after its magic but not its base offset, so a bit flip there passes the checksum and is
//! caught only by the offsets around it; a stretch of random bytes passes all the checks with a
//! chance of about 2^-32 per position. The one false start that cannot be ruled out is a record
//! whose value is itself a whole, valid entry with offsets exactly in the gap.

use std::ops::Range;

use ferrolog_records::batch::{LOG_OVERHEAD, MAGIC_V2};
use ferrolog_records::{FileEntry, HEADER_SIZE_UP_TO_MAGIC};

/// The smallest entry: a legacy v0 message with no key or value.
const SMALLEST_ENTRY: usize = LOG_OVERHEAD + 14;

/// A stretch of the file salvage drops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostStretch {
    /// Byte positions in the file.
    pub bytes: Range<u64>,
    /// The offsets that lay there: after the last entry kept before it, up to the first kept
    /// after it (or the segment's end offset). `None` at the end of the log's last segment,
    /// where nothing tells how many records a torn write held.
    pub offsets: Option<Range<i64>>,
    /// Why the entry at the stretch's start was refused.
    pub reason: String,
}

/// What salvage keeps of a segment and what it drops.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SalvagePlan {
    /// Byte ranges of the entries kept, in file order, adjacent entries merged.
    pub kept: Vec<Range<u64>>,
    /// The stretches dropped, in file order.
    pub lost: Vec<LostStretch>,
}

impl SalvagePlan {
    /// Whether nothing is lost (the segment needs no rewrite).
    pub fn is_intact(&self) -> bool {
        self.lost.is_empty()
    }

    /// The bytes of the entries kept.
    pub fn kept_bytes(&self) -> u64 {
        self.kept.iter().map(|range| range.end - range.start).sum()
    }

    fn keep(&mut self, range: Range<u64>) {
        match self.kept.last_mut() {
            Some(last) if last.end == range.start => last.end = range.end,
            _ => self.kept.push(range),
        }
    }
}

/// The offsets a segment may hold: from its base, below `end` (the next segment's base;
/// `None` for the log's last segment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentSpan {
    /// The segment's base offset.
    pub base_offset: i64,
    /// The next segment's base offset, `None` for the log's last segment.
    pub end_offset: Option<i64>,
}

impl SegmentSpan {
    fn holds(&self, offset: i64) -> bool {
        offset >= self.base_offset
            && offset - self.base_offset <= i64::from(i32::MAX)
            && self.end_offset.is_none_or(|end| offset < end)
    }
}

/// A valid entry: where it is and the offsets it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Valid {
    position: usize,
    size: usize,
    /// A v2 batch's base offset; a legacy entry's offset field (its last offset).
    first_offset: i64,
    last_offset: i64,
}

/// Plans the salvage of a segment's bytes `data`. `index` holds the segment's offset index
/// entries, (last offset of a batch, its position), as hints; they need not be right.
pub fn plan_salvage(data: &[u8], span: SegmentSpan, index: &[(i64, u64)]) -> SalvagePlan {
    let mut walk = Walk {
        kept: Vec::new(),
        lost: Vec::new(),
        span,
    };
    let mut position = 0;
    while position < data.len() {
        let previous_last = walk.previous_last(walk.kept.len());
        let refusal = match check_entry(data, position, previous_last, span) {
            Ok(entry) => {
                walk.kept.push(entry);
                position += entry.size;
                continue;
            }
            Err(Refusal::OutOfOrder(entry, reason)) if walk.shifted_last_kept(&entry) => {
                // The entry before it is the damaged one: its base offset, outside the
                // checksum, was moved up.
                walk.drop_last_kept(entry.first_offset, reason);
                continue;
            }
            Err(refusal) => refusal.reason(),
        };
        let next = find_next(data, position + 1, previous_last, span, index);
        let stop = next.map_or(data.len(), |entry| entry.position);
        let offsets_end = match next {
            Some(entry) => Some(entry.first_offset),
            None => span.end_offset,
        };
        walk.lost.push(LostStretch {
            bytes: position as u64..stop as u64,
            offsets: offsets_end.map(|end| previous_last + 1..end.max(previous_last + 1)),
            reason: refusal,
        });
        position = stop;
    }
    walk.into_plan()
}

/// The entries a salvage keeps and the stretches it drops, as the walk finds them.
struct Walk {
    kept: Vec<Valid>,
    lost: Vec<LostStretch>,
    span: SegmentSpan,
}

impl Walk {
    /// The last offset of the entry kept before the `count`th.
    fn previous_last(&self, count: usize) -> i64 {
        match count.checked_sub(1).and_then(|last| self.kept.get(last)) {
            Some(entry) => entry.last_offset,
            None => self.span.base_offset - 1,
        }
    }

    /// Whether `entry`, whose offsets overlap the last kept entry's, proves that entry's base
    /// offset is the damage (a v2 checksum does not cover it): the last kept entry left a gap
    /// after the one before it, and `entry` starts exactly where the last kept one would end
    /// had it followed on without one (its offset count is under the checksum). Without that
    /// proof `entry` is the one refused: a good entry may be lost, none kept at offsets it
    /// never had.
    fn shifted_last_kept(&self, entry: &Valid) -> bool {
        let Some(last) = self.kept.last() else {
            return false;
        };
        let before = self.previous_last(self.kept.len() - 1);
        let count = last.last_offset - last.first_offset + 1;
        last.first_offset > before + 1 && entry.first_offset == before + 1 + count
    }

    /// Moves the last kept entry to the lost stretches; `offsets_end` is where the entry after
    /// it starts.
    fn drop_last_kept(&mut self, offsets_end: i64, reason: String) {
        let before = self.previous_last(self.kept.len() - 1);
        if let Some(entry) = self.kept.pop() {
            self.lost.push(LostStretch {
                bytes: entry.position as u64..(entry.position + entry.size) as u64,
                offsets: Some(before + 1..offsets_end.max(before + 1)),
                reason: format!(
                    "its base offset {} is out of place: {reason}",
                    entry.first_offset
                ),
            });
        }
    }

    fn into_plan(self) -> SalvagePlan {
        let mut plan = SalvagePlan {
            kept: Vec::new(),
            lost: self.lost,
        };
        plan.lost.sort_by_key(|stretch| stretch.bytes.start);
        for entry in &self.kept {
            plan.keep(entry.position as u64..(entry.position + entry.size) as u64);
        }
        plan
    }
}

/// Why an entry is not kept where it stands.
enum Refusal {
    /// It does not parse, or its checksum does not match.
    Invalid(String),
    /// It is whole and its checksum matches, but its offsets do not follow the entry before.
    OutOfOrder(Valid, String),
}

impl Refusal {
    fn reason(self) -> String {
        match self {
            Self::Invalid(reason) | Self::OutOfOrder(_, reason) => reason,
        }
    }
}

/// An entry a check found valid: its size, its offsets and its largest timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CheckedEntry {
    pub size: usize,
    pub last_offset: i64,
    pub max_timestamp: i64,
}

/// Checks the entry at the start of `data` as salvage and the scrubber do: it parses, its
/// checksum matches, its offsets follow `previous_last` and fit `span`. The error says why not.
pub(crate) fn check_next(
    data: &[u8],
    previous_last: i64,
    span: SegmentSpan,
) -> Result<CheckedEntry, String> {
    let valid = check_entry(data, 0, previous_last, span).map_err(Refusal::reason)?;
    let max_timestamp = FileEntry::parse_prefix(data).map_or(-1, |entry| entry.max_timestamp());
    Ok(CheckedEntry {
        size: valid.size,
        last_offset: valid.last_offset,
        max_timestamp,
    })
}

/// The entry at `position` if it is valid after an entry ending at `previous_last`.
fn check_entry(
    data: &[u8],
    position: usize,
    previous_last: i64,
    span: SegmentSpan,
) -> Result<Valid, Refusal> {
    let invalid = |error: ferrolog_records::RecordsError| Refusal::Invalid(error.to_string());
    let entry = FileEntry::parse_prefix(&data[position..]).map_err(invalid)?;
    entry.validate().map_err(invalid)?;
    let last_offset = entry.last_offset();
    let first_offset = match entry {
        FileEntry::V2(batch) => batch.base_offset(),
        FileEntry::Legacy(_) => last_offset,
    };
    if last_offset < first_offset || !span.holds(first_offset) || !span.holds(last_offset) {
        return Err(Refusal::Invalid(format!(
            "offsets {first_offset}..={last_offset} do not fit the segment based at {}",
            span.base_offset
        )));
    }
    let valid = Valid {
        position,
        size: entry.size_in_bytes(),
        first_offset,
        last_offset,
    };
    if first_offset <= previous_last {
        return Err(Refusal::OutOfOrder(
            valid,
            format!(
                "offsets {first_offset}..={last_offset} do not follow the previous entry's {previous_last}"
            ),
        ));
    }
    Ok(valid)
}

/// The first valid entry at or after `from` that the verified index entries do not
/// contradict.
fn find_next(
    data: &[u8],
    from: usize,
    previous_last: i64,
    span: SegmentSpan,
    index: &[(i64, u64)],
) -> Option<Valid> {
    let verified: Vec<(i64, usize)> = index
        .iter()
        .filter_map(|(offset, position)| {
            let position = usize::try_from(*position).ok()?;
            let valid = (position >= from && position < data.len())
                .then(|| check_entry(data, position, previous_last, span).ok())
                .flatten()?;
            (valid.last_offset == *offset).then_some((*offset, position))
        })
        .collect();
    let last_start = data.len().checked_sub(SMALLEST_ENTRY)?;
    (from..=last_start)
        .filter(|position| could_start_entry(data, *position, previous_last, span))
        .filter_map(|position| check_entry(data, position, previous_last, span).ok())
        .find(|candidate| agrees_with(candidate, &verified))
}

/// The cheap checks before a checksum: a known magic, a size that fits in the data, and an
/// offset field after the previous entry's, within the segment.
fn could_start_entry(data: &[u8], position: usize, previous_last: i64, span: SegmentSpan) -> bool {
    let Some(header) = data.get(position..position + HEADER_SIZE_UP_TO_MAGIC) else {
        return false;
    };
    let magic = header[16];
    if magic > MAGIC_V2 {
        return false;
    }
    let mut size = [0u8; 4];
    size.copy_from_slice(&header[8..12]);
    let total = i64::from(i32::from_be_bytes(size)) + LOG_OVERHEAD as i64;
    let fits = total >= SMALLEST_ENTRY as i64 && total <= (data.len() - position) as i64;
    let mut offset = [0u8; 8];
    offset.copy_from_slice(&header[..8]);
    let offset = i64::from_be_bytes(offset);
    fits && offset > previous_last && span.holds(offset)
}

/// Whether `candidate` is consistent with every verified index entry: an entry that starts
/// before it ends below its offsets, one at its position is it, one after it lies above it.
fn agrees_with(candidate: &Valid, verified: &[(i64, usize)]) -> bool {
    verified.iter().all(|(offset, position)| {
        use std::cmp::Ordering;
        match position.cmp(&candidate.position) {
            Ordering::Less => *offset < candidate.first_offset,
            Ordering::Equal => *offset == candidate.last_offset,
            Ordering::Greater => *offset > candidate.last_offset,
        }
    })
}

#[cfg(test)]
mod tests;
