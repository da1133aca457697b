//! What the topics a group subscribes to look like now: ids and partition counts, read from the
//! log manager, and the hash of them a group keeps to notice when they change (a subscribed
//! topic created, deleted or given more partitions bumps the group epoch).
//!
//! Kafka 4.4 hashes with XXH3 over its own byte layout (KIP-1101); ferrolog hashes the same
//! facts (name, id, partition count) with FNV-1a. The hash only decides whether to bump the
//! epoch, so the one effect of the difference is a single extra group epoch, with an unchanged
//! sticky assignment, the first time a group moved between the two brokers heartbeats.

use std::collections::{BTreeMap, BTreeSet};

use ferrolog_storage::manager::{LogManager, TopicId};

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

    /// FNV-1a (64 bits) over each topic's name, id and partition count, in name order; 0 for
    /// no topics, as Kafka's hash.
    pub fn hash(&self) -> i64 {
        if self.by_name.is_empty() {
            return 0;
        }
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let mut feed = |bytes: &[u8]| {
            for byte in bytes {
                hash ^= u64::from(*byte);
                hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        for (name, (id, partitions)) in &self.by_name {
            feed(&(name.len() as u32).to_be_bytes());
            feed(name.as_bytes());
            feed(&id.0);
            feed(&partitions.to_be_bytes());
        }
        hash as i64
    }
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
