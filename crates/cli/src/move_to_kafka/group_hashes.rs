//! A KIP-848 group keeps a hash of its subscribed topics (`ConsumerGroupMetadata`, type 3),
//! as a share group does (`ShareGroupMetadata`, type 11), and the hash covers each topic's
//! id. Under Kafka's ids the hash differs, and the first
//! heartbeat of a moved group would see its topics as changed and bump its epoch; so `copy`
//! writes each group's epoch record once more with the hash Kafka computes, beside the
//! assignment records (`group_topic_ids`). The topics are what the group's members subscribe
//! to, by name (types 4 and 10) and through the regular expressions resolved for them.

use std::collections::{BTreeMap, BTreeSet};

use ferrolog_broker::group::consumer::topics_hash;
use ferrolog_records::RecordsError;
use ferrolog_records::consumer_group_records::{
    ConsumerGroupMetadata, ConsumerMemberMetadata, RegularExpressionValue, TopicIdBytes,
};
use ferrolog_records::consumer_offsets::{ConsumerRecordType, OffsetsKey};
use ferrolog_records::share_group_records::{ShareGroupMetadata, ShareMemberMetadata};
use ferrolog_storage::manager::TopicId;

use super::group_topic_ids::KeyValue;

/// A group's epoch record: the same fields, laid out by kind.
#[derive(Debug, Clone)]
enum GroupEpoch {
    Consumer(ConsumerGroupMetadata),
    Share(ShareGroupMetadata),
}

impl GroupEpoch {
    fn metadata_hash(&self) -> i64 {
        match self {
            Self::Consumer(metadata) => metadata.metadata_hash,
            Self::Share(metadata) => metadata.metadata_hash,
        }
    }

    /// The record with `metadata_hash` instead, encoded.
    fn encode_with(&self, metadata_hash: i64) -> Vec<u8> {
        match self {
            Self::Consumer(metadata) => ConsumerGroupMetadata {
                metadata_hash,
                ..metadata.clone()
            }
            .encode(),
            Self::Share(metadata) => ShareGroupMetadata {
                metadata_hash,
                ..metadata.clone()
            }
            .encode(),
        }
    }
}

/// One group's epoch record and the topics its members cover, as last written.
#[derive(Debug, Default)]
struct GroupTopics {
    /// The epoch record's key (type 3 or 11), and its value.
    metadata: Option<(Vec<u8>, GroupEpoch)>,
    /// Each member's subscribed topic names.
    members: BTreeMap<String, Vec<String>>,
    /// Each resolved regular expression's topics.
    regexes: BTreeMap<String, Vec<String>>,
}

/// The groups of each `__consumer_offsets` partition, as their records leave them.
#[derive(Debug, Default)]
pub struct GroupHashes {
    by_partition: BTreeMap<i32, BTreeMap<String, GroupTopics>>,
}

impl GroupHashes {
    /// Takes in one record of `partition`, in log order.
    pub fn observe(
        &mut self,
        partition: i32,
        key: &OffsetsKey,
        value: Option<&[u8]>,
    ) -> Result<(), RecordsError> {
        let OffsetsKey::Consumer {
            kind,
            group,
            sub_key,
        } = key
        else {
            return Ok(());
        };
        let groups = self.by_partition.entry(partition).or_default();
        let topics = groups.entry(group.clone()).or_default();
        match (kind, value) {
            (ConsumerRecordType::GroupMetadata, Some(bytes)) => {
                let epoch = GroupEpoch::Consumer(ConsumerGroupMetadata::decode(bytes)?);
                topics.metadata = Some((key.encode(), epoch));
            }
            (ConsumerRecordType::ShareGroupMetadata, Some(bytes)) => {
                let epoch = GroupEpoch::Share(ShareGroupMetadata::decode(bytes)?);
                topics.metadata = Some((key.encode(), epoch));
            }
            (ConsumerRecordType::GroupMetadata | ConsumerRecordType::ShareGroupMetadata, None) => {
                groups.remove(group);
            }
            (ConsumerRecordType::MemberMetadata, Some(bytes)) => {
                let member = ConsumerMemberMetadata::decode(bytes)?;
                topics
                    .members
                    .insert(sub_key.clone(), member.subscribed_topic_names);
            }
            (ConsumerRecordType::ShareMemberMetadata, Some(bytes)) => {
                let member = ShareMemberMetadata::decode(bytes)?;
                topics
                    .members
                    .insert(sub_key.clone(), member.subscribed_topic_names);
            }
            (
                ConsumerRecordType::MemberMetadata | ConsumerRecordType::ShareMemberMetadata,
                None,
            ) => {
                topics.members.remove(sub_key);
            }
            (ConsumerRecordType::RegularExpression, Some(bytes)) => {
                let resolved = RegularExpressionValue::decode(bytes)?;
                topics.regexes.insert(sub_key.clone(), resolved.topics);
            }
            (ConsumerRecordType::RegularExpression, None) => {
                topics.regexes.remove(sub_key);
            }
            _ => {}
        }
        Ok(())
    }

    /// The epoch records `partition` ends with in Kafka: each group's whose hash under Kafka's
    /// topics (`kafka`: name → id and partition count) differs from the one ferrolog wrote.
    pub fn rewritten(
        &self,
        partition: i32,
        kafka: &BTreeMap<String, (TopicIdBytes, i32)>,
    ) -> Vec<KeyValue> {
        let Some(groups) = self.by_partition.get(&partition) else {
            return Vec::new();
        };
        let mut records = Vec::new();
        for topics in groups.values() {
            let Some((key, metadata)) = &topics.metadata else {
                continue;
            };
            let names: BTreeSet<&String> = topics
                .members
                .values()
                .chain(topics.regexes.values())
                .flatten()
                .collect();
            let under_kafka: BTreeMap<String, (TopicId, i32)> = names
                .into_iter()
                .filter_map(|name| {
                    let (id, partitions) = kafka.get(name)?;
                    Some((name.clone(), (TopicId(*id), *partitions)))
                })
                .collect();
            let hash = topics_hash(&under_kafka);
            if hash != metadata.metadata_hash() {
                records.push((key.clone(), metadata.encode_with(hash)));
            }
        }
        records
    }
}
