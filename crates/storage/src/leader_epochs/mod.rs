//! A partition's leader-epoch cache (Kafka's `LeaderEpochFileCache`): for each leader epoch of
//! the partition, the first offset assigned in it. Clients ask it, through OffsetForLeaderEpoch,
//! where an epoch they read records of ended, to find out whether the log they read was cut
//! below their position.
//!
//! Pure data with Kafka's rules; the log keeps one in its view and writes it to the partition's
//! `leader-epoch-checkpoint` ([`mod@file`]) when it changes. Invariant ([`LeaderEpochs::check`]):
//! entries strictly increase in both epoch and start offset, and neither is negative.

pub mod file;
#[cfg(test)]
mod tests;

use crate::epoch::LeaderEpoch;
use crate::offset::Offset;

/// Kafka's `UNDEFINED_EPOCH` and `UNDEFINED_EPOCH_OFFSET`: no epoch, no offset.
pub const UNDEFINED: i32 = -1;

/// One epoch and the first offset assigned in it (Kafka's `EpochEntry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    /// The leader epoch.
    pub epoch: LeaderEpoch,
    /// The first offset of the epoch.
    pub start_offset: Offset,
}

impl EpochEntry {
    /// The entry of `epoch` from `start_offset`.
    pub const fn new(epoch: i32, start_offset: i64) -> Self {
        Self {
            epoch: LeaderEpoch::new(epoch),
            start_offset: Offset::new(start_offset),
        }
    }
}

/// Where an epoch ends, as OffsetForLeaderEpoch answers: the epoch found (the largest at or
/// below the one asked for) and the offset the next epoch starts at, or the log end for the
/// latest epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEnd {
    /// The epoch found; the one asked for when it lies below every entry.
    pub epoch: i32,
    /// The first offset past the epoch.
    pub end_offset: i64,
}

impl EpochEnd {
    /// No answer (Kafka's `(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)`): the epoch asked for is
    /// −1, above the latest, or the cache is empty.
    pub const UNDEFINED: Self = Self {
        epoch: UNDEFINED,
        end_offset: UNDEFINED as i64,
    };
}

/// What an assignment did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assigned {
    /// Nothing: the epoch is the latest, from at or below the offset given.
    Unchanged,
    /// The entry was added, after removing the newest entries it conflicts with (an epoch at or
    /// above it, or a start offset at or above its own): Kafka's order of a follower's log
    /// truncated to a new leader's.
    Added {
        /// The entries removed, oldest first.
        removed: Vec<EpochEntry>,
    },
}

/// The cache: entries in increasing epoch and start offset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderEpochs {
    entries: Vec<EpochEntry>,
}

impl LeaderEpochs {
    /// The entries, oldest first.
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }
    /// Whether no epoch is known.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// The newest entry.
    pub fn latest(&self) -> Option<EpochEntry> {
        self.entries.last().copied()
    }
    /// The oldest entry.
    pub fn earliest(&self) -> Option<EpochEntry> {
        self.entries.first().copied()
    }

    /// Records that `epoch` starts at `start_offset`, as Kafka's `assign`: nothing changes when
    /// `epoch` is the latest and starts at or below `start_offset`; otherwise the newest
    /// entries whose epoch or start offset is at or above the new one's are removed and the new
    /// entry added. Both must be non-negative (the callers pass over batches without an epoch).
    pub fn assign(&mut self, epoch: LeaderEpoch, start_offset: Offset) -> Assigned {
        debug_assert!(epoch.value() >= 0 && start_offset >= Offset::ZERO);
        let entry = EpochEntry {
            epoch,
            start_offset,
        };
        if !self.assign_changes(epoch, start_offset) {
            return Assigned::Unchanged;
        }
        let keep = self
            .entries
            .iter()
            .rposition(|kept| kept.epoch < epoch && kept.start_offset < start_offset)
            .map_or(0, |index| index + 1);
        let removed = self.entries.split_off(keep);
        self.entries.push(entry);
        Assigned::Added { removed }
    }

    /// Whether [`LeaderEpochs::assign`] would change anything: unless `epoch` is the latest,
    /// from at or below `start_offset`.
    pub fn assign_changes(&self, epoch: LeaderEpoch, start_offset: Offset) -> bool {
        self.latest()
            .is_none_or(|latest| latest.epoch != epoch || latest.start_offset > start_offset)
    }

    /// Removes every entry starting at or after `end` (the log cut there). Returns whether any
    /// was removed.
    pub fn truncate_from_end(&mut self, end: Offset) -> bool {
        let keep = self
            .entries
            .partition_point(|entry| entry.start_offset < end);
        let changed = keep < self.entries.len();
        self.entries.truncate(keep);
        changed
    }

    /// Forgets what lies below `start` (the log start moved up): entries starting at or below
    /// it are removed, except the last of them, which now starts at `start` (its epoch holds
    /// the records from there). Returns whether the entries changed.
    pub fn truncate_from_start(&mut self, start: Offset) -> bool {
        let below = self
            .entries
            .partition_point(|entry| entry.start_offset <= start);
        if below == 0 {
            return false;
        }
        let straddling = self.entries[below - 1];
        let changed = below > 1 || straddling.start_offset != start;
        self.entries.drain(..below - 1);
        self.entries[0].start_offset = start;
        changed
    }

    /// Forgets every entry. Returns whether there was any.
    pub fn clear(&mut self) -> bool {
        let changed = !self.entries.is_empty();
        self.entries.clear();
        changed
    }

    /// Where `requested` ends, for a log ending at `log_end` (Kafka's `endOffsetFor`): the
    /// latest epoch ends at the log end; an older one where the next entry starts, answered
    /// with the largest epoch at or below it; one below every entry with itself and the first
    /// entry's start. −1, an epoch above the latest, or an empty cache: no answer.
    pub fn end_offset_for(&self, requested: i32, log_end: Offset) -> EpochEnd {
        if requested == UNDEFINED {
            return EpochEnd::UNDEFINED;
        }
        if self
            .latest()
            .is_some_and(|latest| latest.epoch.value() == requested)
        {
            return EpochEnd {
                epoch: requested,
                end_offset: log_end.value(),
            };
        }
        let higher = self
            .entries
            .partition_point(|entry| entry.epoch.value() <= requested);
        let Some(next) = self.entries.get(higher) else {
            return EpochEnd::UNDEFINED;
        };
        let epoch = match higher.checked_sub(1) {
            Some(floor) => self.entries[floor].epoch.value(),
            None => requested,
        };
        EpochEnd {
            epoch,
            end_offset: next.start_offset.value(),
        }
    }

    /// The epoch `offset` was assigned in (Kafka's `epochForOffset`): that of the last entry
    /// starting at or below it; `None` when it lies below every entry or there are none.
    pub fn epoch_for_offset(&self, offset: Offset) -> Option<LeaderEpoch> {
        let upto = self
            .entries
            .partition_point(|entry| entry.start_offset <= offset);
        upto.checked_sub(1).map(|index| self.entries[index].epoch)
    }

    /// The invariant: entries strictly increasing in epoch and start offset, none negative.
    pub fn check(&self) -> Result<(), String> {
        if let Some(negative) = self
            .entries
            .iter()
            .find(|entry| entry.epoch.value() < 0 || entry.start_offset < Offset::ZERO)
        {
            return Err(format!(
                "a negative leader epoch entry: epoch {} from offset {}",
                negative.epoch, negative.start_offset
            ));
        }
        match self.entries.windows(2).find(|pair| {
            pair[0].epoch >= pair[1].epoch || pair[0].start_offset >= pair[1].start_offset
        }) {
            Some(pair) => Err(format!(
                "leader epoch {} from {} is not below epoch {} from {}",
                pair[0].epoch, pair[0].start_offset, pair[1].epoch, pair[1].start_offset
            )),
            None => Ok(()),
        }
    }
}
