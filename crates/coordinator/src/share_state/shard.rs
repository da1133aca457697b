//! The share partitions of one `__share_group_state` partition: a shard of the coordinator
//! runtime, rebuilt from its records as Kafka's share coordinator replays them.

use std::collections::HashMap;

use ferrolog_records::share_state_records::{ShareSnapshot, ShareUpdate, StateBatch};

use super::batches::combine;
use super::topic::{ShareKey, ShareRecord, ShareStateCodec, ShareValue};
use crate::runtime::{LoadEvent, Periodic, Shard};

/// The durable state of one share partition, as its records say.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionState {
    pub snapshot_epoch: i32,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    /// The share-partition start offset; −1 until the first reader decides it.
    pub start_offset: i64,
    /// −1: not known.
    pub delivery_complete_count: i32,
    pub create_timestamp: i64,
    pub write_timestamp: i64,
    /// Sorted, disjoint, at or above the start offset.
    pub batches: Vec<StateBatch>,
}

impl PartitionState {
    fn from_snapshot(value: &ShareSnapshot) -> Self {
        Self {
            snapshot_epoch: value.snapshot_epoch,
            state_epoch: value.state_epoch,
            leader_epoch: value.leader_epoch,
            start_offset: value.start_offset,
            delivery_complete_count: value.delivery_complete_count,
            create_timestamp: value.create_timestamp,
            write_timestamp: value.write_timestamp,
            batches: value.batches.clone(),
        }
    }

    pub fn to_snapshot(&self) -> ShareSnapshot {
        ShareSnapshot {
            snapshot_epoch: self.snapshot_epoch,
            state_epoch: self.state_epoch,
            leader_epoch: self.leader_epoch,
            start_offset: self.start_offset,
            delivery_complete_count: self.delivery_complete_count,
            create_timestamp: self.create_timestamp,
            write_timestamp: self.write_timestamp,
            batches: self.batches.clone(),
        }
    }

    /// An update applied over this state, as Kafka merges one at replay: −1 leaves the start
    /// offset and leader epoch as they were.
    fn merged(&self, update: &ShareUpdate) -> Self {
        let start_offset = if update.start_offset == -1 {
            self.start_offset
        } else {
            update.start_offset
        };
        Self {
            start_offset,
            leader_epoch: if update.leader_epoch == -1 {
                self.leader_epoch
            } else {
                update.leader_epoch
            },
            delivery_complete_count: update.delivery_complete_count,
            batches: combine(&self.batches, &update.batches, start_offset),
            ..self.clone()
        }
    }
}

/// One share partition's state, with what fences writers and decides snapshots and pruning.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub state: PartitionState,
    /// The highest leader and state epochs seen: a write below either is fenced.
    pub max_leader_epoch: i32,
    pub max_state_epoch: i32,
    /// Updates written since the last snapshot.
    pub updates: u32,
    /// Where the last snapshot is in the partition: nothing before it is needed for this key.
    pub snapshot_offset: Option<i64>,
}

#[derive(Debug)]
pub struct ShareStateShard {
    pub(super) entries: HashMap<ShareKey, Entry>,
    pub(super) cold_snapshots: Periodic,
    pub(super) prune: Periodic,
}

impl ShareStateShard {
    pub(super) fn new(cold_snapshots: Periodic, prune: Periodic) -> Self {
        Self {
            entries: HashMap::new(),
            cold_snapshots,
            prune,
        }
    }

    /// Applies a record, read back at startup or just written (at `offset`, when known).
    pub(super) fn apply(&mut self, record: &ShareRecord, offset: Option<i64>) {
        let key = &record.key;
        match &record.value {
            ShareValue::Tombstone => {
                self.entries.remove(key);
            }
            ShareValue::Snapshot(snapshot) => {
                let state = PartitionState::from_snapshot(snapshot);
                let entry = self.entries.entry(key.clone()).or_insert_with(|| Entry {
                    state: state.clone(),
                    max_leader_epoch: state.leader_epoch,
                    max_state_epoch: state.state_epoch,
                    updates: 0,
                    snapshot_offset: None,
                });
                entry.max_leader_epoch = entry.max_leader_epoch.max(state.leader_epoch);
                entry.max_state_epoch = entry.max_state_epoch.max(state.state_epoch);
                entry.state = state;
                entry.updates = 0;
                entry.snapshot_offset = offset.or(entry.snapshot_offset);
            }
            ShareValue::Update(update) => match self.entries.get_mut(key) {
                Some(entry) => {
                    entry.max_leader_epoch = entry.max_leader_epoch.max(update.leader_epoch);
                    entry.state = entry.state.merged(update);
                    entry.updates += 1;
                }
                None => {
                    // An update without a snapshot before it (the snapshot was pruned away, or
                    // lost): Kafka takes the update as the state, with state epoch 0.
                    let state = PartitionState {
                        snapshot_epoch: update.snapshot_epoch,
                        leader_epoch: update.leader_epoch,
                        start_offset: update.start_offset,
                        delivery_complete_count: update.delivery_complete_count,
                        batches: update.batches.clone(),
                        ..PartitionState::default()
                    };
                    self.entries.insert(
                        key.clone(),
                        Entry {
                            max_leader_epoch: state.leader_epoch,
                            max_state_epoch: 0,
                            state,
                            updates: 1,
                            snapshot_offset: None,
                        },
                    );
                }
            },
        }
    }

    /// How much of the front of this shard's partition no key needs any more.
    pub(super) fn prunable(&self) -> Prunable {
        let mut lowest: Option<i64> = None;
        for entry in self.entries.values() {
            let Some(offset) = entry.snapshot_offset else {
                return Prunable::Nothing;
            };
            lowest = Some(lowest.map_or(offset, |low| low.min(offset)));
        }
        lowest.map_or(Prunable::Everything, Prunable::Below)
    }
}

/// What of a share state partition may be removed from its front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Prunable {
    /// A key's state starts at an update whose snapshot's place is unknown: keep everything.
    Nothing,
    /// Records below this offset (the oldest latest snapshot of a live key).
    Below(i64),
    /// No key is live: every record.
    Everything,
}

impl Shard for ShareStateShard {
    type Codec = ShareStateCodec;

    fn replay(&mut self, event: LoadEvent<ShareRecord>, _now_ms: i64) {
        if let LoadEvent::Record { record, .. } = event {
            let offset = record.offset;
            self.apply(&record, offset);
        }
    }
}
