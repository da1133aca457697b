//! Groups name their topics by topic id in some records of `__consumer_offsets`
//! ([`Assignment`]). Kafka gives every moved topic an id of its own (its CreateTopics cannot
//! be given one), so `copy` ends each `__consumer_offsets` partition with the latest of those
//! records once more, naming Kafka's ids: replayed after the originals, they are what Kafka
//! loads, and the groups stay live. ferrolog's own directories are left as they were.

use std::collections::BTreeMap;

use anyhow::Context;
use ferrolog_coordinator::group::offsets_topic::{OFFSETS_TOPIC, OffsetsCodec};
use ferrolog_coordinator::runtime::LoadEvent;
use ferrolog_coordinator::runtime::loader;
use ferrolog_records::RecordsError;
use ferrolog_records::consumer_group_records::TopicIdBytes;
use ferrolog_records::consumer_offsets::OffsetsKey;
use ferrolog_storage::manager::LogManager;

use super::assignments::Assignment;
use super::group_hashes::GroupHashes;
pub use super::segment::KeyValue;

/// The latest assignment records of each `__consumer_offsets` partition ferrolog holds, by
/// record key, and the topic ids they may name.
#[derive(Debug, Default)]
pub struct GroupAssignments {
    by_partition: BTreeMap<i32, BTreeMap<Vec<u8>, Assignment>>,
    /// The groups' epoch records and topics, for their hashes under Kafka's ids.
    hashes: GroupHashes,
    topic_names: BTreeMap<TopicIdBytes, String>,
    /// The partition leader epoch ferrolog's batches carry, which the new batches carry too.
    leader_epoch: i32,
}

impl GroupAssignments {
    /// Reads every `__consumer_offsets` partition of `manager` as the coordinator loads it.
    pub fn read(manager: &LogManager) -> anyhow::Result<Self> {
        let mut found = GroupAssignments::default();
        let mut partitions = 0;
        for (topic, held) in manager.topics() {
            if topic == OFFSETS_TOPIC {
                partitions = held.iter().max().map_or(0, |max| max + 1);
            } else if let Some(id) = manager.topic_id(&topic) {
                found.topic_names.insert(id.0, topic);
            }
        }
        let mut unreadable: Option<RecordsError> = None;
        let summary = loader::load::<OffsetsCodec>(manager, partitions, |partition, event| {
            let LoadEvent::Record {
                record: (key, value),
                ..
            } = event
            else {
                return;
            };
            if let Err(error) = found.hashes.observe(partition, &key, value.as_deref()) {
                unreadable.get_or_insert(error);
            }
            let OffsetsKey::Consumer { kind, .. } = &key else {
                return;
            };
            if !Assignment::names_topic_ids(*kind) {
                return;
            }
            let records = found.by_partition.entry(partition).or_default();
            let Some(bytes) = value else {
                records.remove(&key.encode());
                return;
            };
            match Assignment::decode(*kind, &bytes) {
                Ok(assignment) => {
                    records.insert(key.encode(), assignment);
                }
                Err(error) => {
                    unreadable.get_or_insert(error);
                }
            }
        })
        .context("reading ferrolog's __consumer_offsets")?;
        if let Some(error) = unreadable {
            anyhow::bail!("a group's record naming topic ids in __consumer_offsets: {error}");
        }
        found.leader_epoch = summary.highest_leader_epoch.value();
        Ok(found)
    }

    /// The records `partition` of `__consumer_offsets` ends with in Kafka: each latest
    /// assignment record naming a ferrolog topic id, with Kafka's id for that topic instead
    /// (`kafka_ids`: by topic name, its id and partition count), then each group's epoch record
    /// whose hash differs under Kafka's ids (`group_hashes`), as (key, value). Ids of topics
    /// Kafka does not hold here are kept, and their topics returned as the second part.
    pub fn rewritten(
        &self,
        partition: i32,
        kafka_ids: &BTreeMap<String, (TopicIdBytes, i32)>,
    ) -> (Vec<KeyValue>, Vec<String>) {
        let (mut records, mut unmapped) = (Vec::new(), Vec::new());
        let Some(assignments) = self.by_partition.get(&partition) else {
            return (records, unmapped);
        };
        for (key, assignment) in assignments {
            if let Some(moved) =
                assignment.under_kafka_ids(&self.topic_names, kafka_ids, &mut unmapped)
            {
                records.push((key.clone(), moved.encode()));
            }
        }
        unmapped.sort();
        unmapped.dedup();
        records.extend(self.hashes.rewritten(partition, kafka_ids));
        (records, unmapped)
    }

    /// The topics the assignments may name.
    pub fn topic_names(&self) -> impl Iterator<Item = &String> {
        self.topic_names.values()
    }

    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::move_to_kafka::segment::ensure_segment;
    use ferrolog_broker::group::consumer::{subscribed_topics_hash, topics_hash};
    use ferrolog_records::BatchBuilder;
    use ferrolog_records::consumer_group_records::{ConsumerGroupMetadata, ConsumerMemberMetadata};
    use ferrolog_records::consumer_group_records::{
        CurrentMemberAssignment, TargetAssignmentMember, TopicPartitions,
    };
    use ferrolog_records::consumer_offsets::ConsumerRecordType;
    use ferrolog_records::{DEFAULT_MAX_DECOMPRESSED_BYTES, EntryIter};
    use ferrolog_storage::TopicPartition;
    use ferrolog_storage::manager::ManagerConfig;
    use ferrolog_storage::manager::TopicId;

    fn key(kind: ConsumerRecordType, member: &str) -> Vec<u8> {
        OffsetsKey::Consumer {
            kind,
            group: "g".into(),
            sub_key: member.into(),
        }
        .encode()
    }

    fn owned(topic_id: TopicIdBytes, partitions: Vec<i32>) -> Vec<TopicPartitions> {
        vec![TopicPartitions {
            topic_id,
            partitions,
            assignment_epochs: Vec::new(),
        }]
    }

    #[test]
    fn the_latest_assignments_come_back_naming_kafkas_ids_after_the_copied_log() {
        let temp = tempfile::tempdir().unwrap();
        let manager = LogManager::open(
            ManagerConfig {
                log_dirs: vec![temp.path().join("ferrolog")],
                ..ManagerConfig::default()
            },
            std::sync::Arc::new(ferrolog_storage::SystemClock),
        )
        .unwrap();
        manager
            .get_or_create(&TopicPartition::new("orders", 0))
            .unwrap();
        let ours = manager.topic_id("orders").unwrap().0;
        let offsets = manager
            .get_or_create(&TopicPartition::new(OFFSETS_TOPIC, 0))
            .unwrap();
        let target = TargetAssignmentMember {
            partitions: owned(ours, vec![0]),
        };
        let current = CurrentMemberAssignment {
            member_epoch: 3,
            previous_member_epoch: 2,
            state: 0,
            assigned: owned(ours, vec![0]),
            pending_revocation: Vec::new(),
        };
        let target_key = key(ConsumerRecordType::TargetAssignmentMember, "m1");
        let current_key = key(ConsumerRecordType::CurrentMemberAssignment, "m1");
        let gone_key = key(ConsumerRecordType::TargetAssignmentMember, "m2");
        let epoch_key = key(ConsumerRecordType::GroupMetadata, "");
        let member_key = key(ConsumerRecordType::MemberMetadata, "m1");
        let epoch = ConsumerGroupMetadata {
            epoch: 3,
            metadata_hash: subscribed_topics_hash(&manager, &["orders".to_owned()]),
        };
        let member = ConsumerMemberMetadata {
            subscribed_topic_names: vec!["orders".to_owned()],
            ..ConsumerMemberMetadata::default()
        };
        let mut batch = BatchBuilder::new(0);
        for (key, value) in [
            (&member_key, Some(member.encode())),
            (&epoch_key, Some(epoch.encode())),
            (&gone_key, Some(target.encode())),
            (
                &target_key,
                Some(TargetAssignmentMember::default().encode()),
            ),
            (&target_key, Some(target.encode())),
            (&current_key, Some(current.encode())),
            (&gone_key, None),
        ] {
            batch.append(1, Some(key), value.as_deref(), &[]).unwrap();
        }
        offsets.append_as_leader(batch.build().unwrap()).unwrap();
        let assignments = GroupAssignments::read(&manager).unwrap();
        manager.shutdown().unwrap();

        let theirs = [7u8; 16];
        let kafka_ids = BTreeMap::from([("orders".to_owned(), (theirs, 1))]);
        let (records, unmapped) = assignments.rewritten(0, &kafka_ids);
        assert!(unmapped.is_empty());
        let kafka_dir = temp.path().join("kafka");
        std::fs::create_dir_all(&kafka_dir).unwrap();
        // The copied log's idle active segment at the end gives way.
        std::fs::write(kafka_dir.join("00000000000000000005.log"), b"").unwrap();
        std::fs::write(kafka_dir.join("00000000000000000005.index"), b"").unwrap();
        assert_eq!(ensure_segment(&kafka_dir, 5, 0, 1, &records).unwrap(), 8);
        let written = std::fs::read(kafka_dir.join("00000000000000000005.log")).unwrap();
        // Run again, the segment is found whole and kept.
        assert_eq!(ensure_segment(&kafka_dir, 5, 0, 1, &records).unwrap(), 8);
        assert_eq!(
            std::fs::read(kafka_dir.join("00000000000000000005.log")).unwrap(),
            written
        );

        let bytes = std::fs::read(kafka_dir.join("00000000000000000005.log")).unwrap();
        let mut read = Vec::new();
        for entry in EntryIter::new(&bytes) {
            let (_, entry) = entry.unwrap();
            entry.validate().unwrap();
            let records = entry.records(DEFAULT_MAX_DECOMPRESSED_BYTES).unwrap();
            for record in records.to_vec().unwrap() {
                read.push((
                    record.offset,
                    record.key.unwrap().to_vec(),
                    record.value.unwrap().to_vec(),
                ));
            }
        }
        let moved_target = TargetAssignmentMember {
            partitions: owned(theirs, vec![0]),
        };
        let moved_current = CurrentMemberAssignment {
            assigned: owned(theirs, vec![0]),
            ..current
        };
        // The group's epoch record too: its hash as Kafka computes it under Kafka's id.
        let moved_epoch = ConsumerGroupMetadata {
            metadata_hash: topics_hash(&BTreeMap::from([(
                "orders".to_owned(),
                (TopicId(theirs), 1),
            )])),
            ..epoch
        };
        assert_ne!(moved_epoch.metadata_hash, epoch.metadata_hash);
        assert_eq!(
            read,
            vec![
                (5, target_key, moved_target.encode()),
                (6, current_key, moved_current.encode()),
                (7, epoch_key, moved_epoch.encode()),
            ]
        );
        assert!(kafka_dir.join("00000000000000000005.index").exists());
    }
}
