//! How many groups the coordinator holds, against `ferrolog.max.groups`. Every group costs
//! memory for as long as it lives (its members, its committed offsets, its assignment), and
//! any client can name a new one, so a new group beyond the bound is refused, whatever its
//! kind: a classic group's first JoinGroup, a KIP-848, streams or share group's first
//! heartbeat, the first commit of a group with no members (simple or transactional), the
//! first offsets altered for a share group. Groups that exist are never refused.
//!
//! Each shard publishes how many groups it holds after each operation on it, so the count is
//! read without taking another shard's lock (no operation ever holds two). Shards creating
//! groups at the same instant can each see the others' counts from before, so the bound can be
//! passed by at most one group per shard.

use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug)]
pub struct GroupCensus {
    /// Each shard's groups, as of its last operation.
    held: Vec<AtomicUsize>,
    max: usize,
}

impl GroupCensus {
    pub fn new(shards: usize, max: usize) -> Self {
        Self {
            held: (0..shards).map(|_| AtomicUsize::new(0)).collect(),
            max,
        }
    }

    /// Publishes that shard `shard` holds `groups` groups.
    pub fn record(&self, shard: usize, groups: usize) {
        if let Some(held) = self.held.get(shard) {
            held.store(groups, Ordering::Relaxed);
        }
    }

    /// The groups the coordinator holds, as each shard last published.
    pub fn total(&self) -> usize {
        self.held
            .iter()
            .map(|held| held.load(Ordering::Relaxed))
            .sum()
    }

    /// Whether a new group must be refused.
    pub fn full(&self) -> bool {
        self.total() >= self.max
    }

    pub fn max(&self) -> usize {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_census_is_full_at_its_bound_over_all_shards() {
        let census = GroupCensus::new(3, 5);
        census.record(0, 2);
        census.record(2, 2);
        assert_eq!(census.total(), 4);
        assert!(!census.full());
        census.record(1, 1);
        assert!(census.full());
        // A shard's count replaces its earlier one: groups that go make room.
        census.record(2, 0);
        assert_eq!(census.total(), 3);
        assert!(!census.full());
        // A shard that does not exist changes nothing.
        census.record(7, 100);
        assert_eq!(census.total(), 3);
    }
}
