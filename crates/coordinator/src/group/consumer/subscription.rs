//! What the topics a group subscribes to look like now: ids and partition counts, read from the
//! log manager, and the hash of them a group keeps to notice when they change (a subscribed
//! topic created, deleted or given more partitions bumps the group epoch).
//!
//! The hash is Kafka 4.4's (KIP-1101, `Utils.computeGroupHash` over `Utils.computeTopicHash`),
//! so a group moved between ferrolog and Kafka keeps its epoch at its first heartbeat there.

use std::collections::{BTreeMap, BTreeSet};

use ferrolog_storage::manager::{LogManager, TopicId};
use xxhash_rust::xxh3::xxh3_64;

use super::model::{ConsumerGroup, ResolvedRegex, Subscription};

/// The subscribed topics that exist, by name: id and partition count.
#[derive(Debug, Default)]
pub struct TopicMetadata {
    by_name: BTreeMap<String, (TopicId, i32)>,
}

impl TopicMetadata {
    /// The topics among `names` that exist now.
    pub fn read<'a>(manager: &LogManager, names: impl IntoIterator<Item = &'a String>) -> Self {
        let mut by_name = BTreeMap::new();
        for name in names {
            let partitions = manager.partitions_of(name).len();
            if partitions == 0 {
                continue;
            }
            if let Some(id) = manager.topic_id(name) {
                by_name.insert(name.clone(), (id, partitions as i32));
            }
        }
        Self { by_name }
    }

    pub fn id(&self, name: &str) -> Option<TopicId> {
        self.by_name.get(name).map(|(id, _)| *id)
    }

    /// Partition counts by topic id.
    pub fn partition_counts(&self) -> BTreeMap<TopicId, i32> {
        self.by_name.values().copied().collect()
    }

    /// Kafka's hash of the topics: XXH3-64 over each topic's own hash, in name order; 0 for no
    /// topics.
    pub fn hash(&self) -> i64 {
        topics_hash(&self.by_name)
    }
}

/// Kafka's hash of `topics` (name → id and partition count): XXH3-64 over each topic's own
/// hash, in name order; 0 for none.
pub fn topics_hash(topics: &BTreeMap<String, (TopicId, i32)>) -> i64 {
    if topics.is_empty() {
        return 0;
    }
    let mut hashes = Vec::with_capacity(8 * topics.len());
    for (name, (id, partitions)) in topics {
        hashes.extend_from_slice(&topic_hash(name, *id, *partitions).to_le_bytes());
    }
    xxh3_64(&hashes) as i64
}

/// Kafka's hash of one topic: XXH3-64 over a zero byte, the id's two halves, the name (its
/// UTF-16 units, then their count), the partition count, then each partition's index and its
/// replicas' racks. Everything is little-endian, as Kafka's hash stream writes it. ferrolog
/// knows no racks (`broker.rack` is ignored), like a Kafka broker without one.
fn topic_hash(name: &str, id: TopicId, partitions: i32) -> u64 {
    let mut bytes = vec![0u8];
    let (high, low) = id.0.split_at(8);
    for half in [high, low] {
        let mut word = [0u8; 8];
        word.copy_from_slice(half);
        bytes.extend_from_slice(&u64::from_be_bytes(word).to_le_bytes());
    }
    let units: Vec<u16> = name.encode_utf16().collect();
    for unit in &units {
        bytes.extend_from_slice(&unit.to_le_bytes());
    }
    bytes.extend_from_slice(&(units.len() as i32).to_le_bytes());
    bytes.extend_from_slice(&partitions.to_le_bytes());
    for partition in 0..partitions {
        bytes.extend_from_slice(&partition.to_le_bytes());
    }
    xxh3_64(&bytes)
}

/// The topic names `subscription` covers: named ones and those its regex resolved to.
pub fn topic_names<'a>(
    subscription: &'a Subscription,
    regexes: &'a BTreeMap<String, ResolvedRegex>,
) -> impl Iterator<Item = &'a String> {
    let resolved = subscription
        .topic_regex
        .as_ref()
        .and_then(|regex| regexes.get(regex))
        .into_iter()
        .flat_map(|resolved| resolved.topics.iter());
    subscription.topic_names.iter().chain(resolved)
}

/// Every topic name the group's members cover (their regexes resolved as `regexes` say), with
/// `updated` standing in for its member.
pub fn group_topic_names(
    group: &ConsumerGroup,
    regexes: &BTreeMap<String, ResolvedRegex>,
    updated: Option<(&str, &Subscription)>,
) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (member_id, member) in &group.members {
        if updated.is_some_and(|(id, _)| id == member_id) {
            continue;
        }
        names.extend(topic_names(&member.subscription, regexes).cloned());
    }
    if let Some((_, subscription)) = updated {
        names.extend(topic_names(subscription, regexes).cloned());
    }
    names
}

/// The topic ids `subscription` covers that exist in `metadata`.
pub fn subscribed_ids(
    subscription: &Subscription,
    regexes: &BTreeMap<String, ResolvedRegex>,
    metadata: &TopicMetadata,
) -> BTreeSet<TopicId> {
    topic_names(subscription, regexes)
        .filter_map(|name| metadata.id(name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(first: u8) -> TopicId {
        let mut bytes = [0u8; 16];
        for (index, byte) in bytes.iter_mut().enumerate() {
            *byte = first + index as u8 + if index >= 8 { 8 } else { 0 };
        }
        TopicId(bytes)
    }

    /// The values Kafka 4.4's `Utils` computes (with its hash4j 0.22) for the same topics.
    #[test]
    fn the_hash_is_kafkas() {
        // Ids 01..08 11..18 and 21..28 31..38.
        let orders = (id(0x01), 3);
        let audit = (id(0x21), 1);
        assert_eq!(
            topic_hash("orders", orders.0, orders.1) as i64,
            -3_967_608_492_204_731_963
        );
        let one = TopicMetadata {
            by_name: BTreeMap::from([("orders".to_owned(), orders)]),
        };
        assert_eq!(one.hash(), 8_632_239_608_810_869_865);
        let two = TopicMetadata {
            by_name: BTreeMap::from([("orders".to_owned(), orders), ("audit".to_owned(), audit)]),
        };
        assert_eq!(two.hash(), -1_311_176_859_131_528_837);
        assert_eq!(TopicMetadata::default().hash(), 0);
    }
}
