//! The cleaner's key → latest offset map, in a fixed memory budget.
//!
//! Each slot is 24 bytes: a 128-bit hash of the key and the latest offset seen for it (Kafka's
//! `SkimpyOffsetMap` stores an MD5 digest the same way). Keys themselves are never stored, so
//! the map's size does not depend on key sizes. The hash is XXH3-128 seeded at random per map:
//! two distinct keys share a slot only with probability about 2⁻¹²⁸ per pair, and no producer
//! can craft colliding keys without knowing the seed. Open addressing with linear probing; the
//! map counts as full at `load_factor` of its slots (Kafka's `log.cleaner.io.buffer.load.factor`).

use twox_hash::XxHash3_128;

use crate::offset::Offset;

/// Bytes of memory per slot.
pub const BYTES_PER_SLOT: usize = 24;
/// Offsets are never negative, so −1 marks an empty slot (slots hold Kafka's `i64`, so that
/// the sentinel costs no extra byte).
const EMPTY: i64 = -1;

/// The key → latest offset map: a fixed number of slots, each a key's hash and its offset.
#[derive(Debug)]
pub struct OffsetMap {
    hashes: Vec<u128>,
    offsets: Vec<i64>,
    seed: u64,
    entries: usize,
    max_entries: usize,
    /// The largest offset put since the last clear.
    latest_offset: Option<Offset>,
    lookups: u64,
    probes: u64,
}

impl OffsetMap {
    /// A map using about `memory_bytes`, full at `load_factor` of its slots.
    pub fn new(memory_bytes: usize, load_factor: f64) -> Self {
        let slots = (memory_bytes / BYTES_PER_SLOT).max(2);
        let max_entries = ((slots as f64 * load_factor) as usize).clamp(1, slots - 1);
        Self {
            hashes: vec![0; slots],
            offsets: vec![EMPTY; slots],
            seed: rand::random(),
            entries: 0,
            max_entries,
            latest_offset: None,
            lookups: 0,
            probes: 0,
        }
    }

    /// Slots allocated, [`BYTES_PER_SLOT`] bytes each.
    pub fn slots(&self) -> usize {
        self.hashes.len()
    }
    /// Keys recorded since the last clear.
    pub fn len(&self) -> usize {
        self.entries
    }
    /// Whether no key is recorded.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }
    /// Whether a new key would be refused: entries have reached `load_factor` of the slots.
    pub fn is_full(&self) -> bool {
        self.entries >= self.max_entries
    }
    /// Entries it takes before it is full.
    pub fn capacity(&self) -> usize {
        self.max_entries
    }
    /// Share of the usable entries taken, 0.0 to 1.0.
    pub fn utilization(&self) -> f64 {
        self.entries as f64 / self.max_entries as f64
    }
    /// The largest offset put since the last clear, if any.
    pub fn latest_offset(&self) -> Option<Offset> {
        self.latest_offset
    }
    /// Raises the latest offset without a key (a dirty range may end in offsets that hold none).
    pub fn set_latest_offset(&mut self, offset: Offset) {
        self.latest_offset = self.latest_offset.max(Some(offset));
    }

    /// Forgets every entry and draws a new seed.
    pub fn clear(&mut self) {
        self.offsets.fill(EMPTY);
        self.entries = 0;
        self.latest_offset = None;
        self.seed = rand::random();
    }

    fn hash(&self, key: &[u8]) -> u128 {
        XxHash3_128::oneshot_with_seed(self.seed, key)
    }

    /// The slot holding `hash`, or the empty slot where it would go.
    fn slot_of(&mut self, hash: u128) -> usize {
        let slots = self.hashes.len();
        let mut slot = (hash as u64 % slots as u64) as usize;
        self.lookups += 1;
        loop {
            self.probes += 1;
            if self.offsets[slot] == EMPTY || self.hashes[slot] == hash {
                return slot;
            }
            slot += 1;
            if slot == slots {
                slot = 0;
            }
        }
    }

    /// Records `offset` as the latest for `key`. Returns false (and records nothing) when the
    /// key is new and the map is full.
    pub fn put(&mut self, key: &[u8], offset: Offset) -> bool {
        let hash = self.hash(key);
        let slot = self.slot_of(hash);
        if self.offsets[slot] == EMPTY {
            if self.is_full() {
                return false;
            }
            self.entries += 1;
            self.hashes[slot] = hash;
        }
        self.offsets[slot] = offset.value();
        self.set_latest_offset(offset);
        true
    }

    /// The latest offset recorded for `key`.
    pub fn get(&mut self, key: &[u8]) -> Option<Offset> {
        let hash = self.hash(key);
        let slot = self.slot_of(hash);
        (self.offsets[slot] != EMPTY).then(|| Offset::new(self.offsets[slot]))
    }

    /// Average probes per lookup since creation (1.0 is perfect).
    pub fn average_probes(&self) -> f64 {
        if self.lookups == 0 {
            return 0.0;
        }
        self.probes as f64 / self.lookups as f64
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn holds_the_latest_offset_per_key_like_a_hash_map() {
        let mut map = OffsetMap::new(24 * 1000, 0.9);
        let mut model = HashMap::new();
        for offset in 0..5000i64 {
            let key = format!("key-{}", (offset * 7919) % 600);
            assert!(map.put(key.as_bytes(), Offset::new(offset)));
            model.insert(key, Offset::new(offset));
        }
        assert_eq!(map.len(), 600);
        for (key, offset) in &model {
            assert_eq!(map.get(key.as_bytes()), Some(*offset));
        }
        assert_eq!(map.get(b"never"), None);
        assert_eq!(map.latest_offset(), Some(Offset::new(4999)));
    }

    #[test]
    fn refuses_new_keys_when_full_but_updates_known_ones() {
        let mut map = OffsetMap::new(24 * 10, 0.5);
        assert_eq!(map.capacity(), 5);
        for i in 0..5 {
            assert!(map.put(&[i], Offset::new(i64::from(i))));
        }
        assert!(map.is_full());
        assert!(!map.put(b"new", Offset::new(9)));
        assert!(
            map.put(&[0], Offset::new(10)),
            "a known key is still updated"
        );
        assert_eq!(map.get(&[0]), Some(Offset::new(10)));
        map.clear();
        assert!(map.is_empty() && map.get(&[0]).is_none());
        assert_eq!(map.latest_offset(), None);
    }

    #[test]
    fn a_one_entry_map_works() {
        let mut map = OffsetMap::new(0, 0.9);
        assert_eq!(map.capacity(), 1);
        assert!(map.put(b"a", Offset::new(1)));
        assert!(!map.put(b"b", Offset::new(2)));
    }

    #[test]
    fn costs_twenty_four_bytes_per_slot() {
        let map = OffsetMap::new(24 * 1024 * 1024, 0.9);
        assert_eq!(map.slots(), 1024 * 1024);
        assert_eq!(
            std::mem::size_of::<u128>() + std::mem::size_of::<i64>(),
            BYTES_PER_SLOT
        );
    }
}
