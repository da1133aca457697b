//! The LogManager's map of logs, indexed both by partition and by topic, so that a topic's
//! partitions (Metadata, CreateTopics, DeleteTopics) are found without walking every log; each
//! topic's id, which lives exactly as long as the topic has a partition here; the future logs
//! of partitions moving to another data directory; and the directories operators asked for
//! partitions that do not exist yet.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::topic_ids::TopicId;
use crate::log::Log;
use crate::types::TopicPartition;

/// A log and the index of the data directory holding it.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub log: Arc<Log>,
    pub dir_index: usize,
}

/// A partition's copy growing in another data directory (Kafka's future log).
#[derive(Debug, Clone)]
pub(super) struct FutureEntry {
    pub log: Arc<Log>,
    pub dir_index: usize,
    /// The unique id of its `-future` name; the current log's directory takes it in its
    /// `-delete` name at the swap, which is how loading recognizes an interrupted swap.
    pub unique_id: String,
}

#[derive(Debug, Default)]
pub(super) struct LogMap {
    by_partition: HashMap<TopicPartition, Entry>,
    by_topic: BTreeMap<String, BTreeSet<i32>>,
    topic_ids: HashMap<String, TopicId>,
    /// Every future log has its current log in `by_partition`, in another directory.
    pub futures: HashMap<TopicPartition, FutureEntry>,
    /// Directories asked for partitions not created yet (Kafka's preferred log dirs).
    pub preferred_dirs: HashMap<TopicPartition, usize>,
}

impl LogMap {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            by_partition: HashMap::with_capacity(capacity),
            by_topic: BTreeMap::new(),
            topic_ids: HashMap::new(),
            futures: HashMap::new(),
            preferred_dirs: HashMap::new(),
        }
    }

    pub fn insert(&mut self, topic_partition: TopicPartition, entry: Entry) {
        self.by_topic
            .entry(topic_partition.topic.clone())
            .or_default()
            .insert(topic_partition.partition);
        self.by_partition.insert(topic_partition, entry);
    }

    pub fn remove(&mut self, topic_partition: &TopicPartition) -> Option<Entry> {
        let removed = self.by_partition.remove(topic_partition)?;
        if let Some(partitions) = self.by_topic.get_mut(&topic_partition.topic) {
            partitions.remove(&topic_partition.partition);
            if partitions.is_empty() {
                self.by_topic.remove(&topic_partition.topic);
                self.topic_ids.remove(&topic_partition.topic);
            }
        }
        Some(removed)
    }

    pub fn get(&self, topic_partition: &TopicPartition) -> Option<&Entry> {
        self.by_partition.get(topic_partition)
    }

    /// Records that `topic_partition`'s log now lives in directory `dir_index`.
    pub fn set_dir(&mut self, topic_partition: &TopicPartition, dir_index: usize) {
        if let Some(entry) = self.by_partition.get_mut(topic_partition) {
            entry.dir_index = dir_index;
        }
    }

    /// Partitions and future logs per directory, the counts placement goes by (Kafka counts
    /// both).
    pub fn logs_per_dir(&self, dirs: usize) -> Vec<usize> {
        let mut counts = vec![0usize; dirs];
        let indexes = self.by_partition.values().map(|entry| entry.dir_index);
        for index in indexes.chain(self.futures.values().map(|future| future.dir_index)) {
            if let Some(count) = counts.get_mut(index) {
                *count += 1;
            }
        }
        counts
    }

    /// Whether directory `dir_index` holds a log moving to another directory.
    pub fn is_draining(&self, dir_index: usize) -> bool {
        self.futures.keys().any(|topic_partition| {
            self.by_partition
                .get(topic_partition)
                .is_some_and(|entry| entry.dir_index == dir_index)
        })
    }

    pub fn len(&self) -> usize {
        self.by_partition.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&TopicPartition, &Entry)> {
        self.by_partition.iter()
    }

    pub fn values(&self) -> impl Iterator<Item = &Entry> {
        self.by_partition.values()
    }

    /// The partitions of `topic`, in order.
    pub fn partitions_of(&self, topic: &str) -> Vec<i32> {
        self.by_topic
            .get(topic)
            .map_or_else(Vec::new, |partitions| partitions.iter().copied().collect())
    }

    /// `topic`'s id, once it has one.
    pub fn topic_id(&self, topic: &str) -> Option<TopicId> {
        self.topic_ids.get(topic).copied()
    }

    /// The topic whose id is `id`.
    pub fn topic_with_id(&self, id: TopicId) -> Option<String> {
        self.topic_ids
            .iter()
            .find(|(_, topic_id)| **topic_id == id)
            .map(|(topic, _)| topic.clone())
    }

    /// Gives `topic`, which has a partition here, its id.
    pub fn set_topic_id(&mut self, topic: &str, id: TopicId) {
        if self.by_topic.contains_key(topic) {
            self.topic_ids.insert(topic.to_owned(), id);
        }
    }

    /// Every topic with its partitions, by name.
    pub fn topics(&self) -> Vec<(String, Vec<i32>)> {
        self.by_topic
            .iter()
            .map(|(topic, partitions)| (topic.clone(), partitions.iter().copied().collect()))
            .collect()
    }
}
