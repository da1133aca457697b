//! The records of `__consumer_offsets` that name topics by id: a KIP-848 member's target and
//! current assignment (types 7 and 8), a share group member's (13 and 14), and a share
//! group's partitions with share state (15). `copy` writes the latest of each again, naming
//! Kafka's ids (`group_topic_ids`).

use std::collections::BTreeMap;

use ferrolog_records::RecordsError;
use ferrolog_records::consumer_group_records::{
    CurrentMemberAssignment, TargetAssignmentMember, TopicIdBytes,
};
use ferrolog_records::consumer_offsets::ConsumerRecordType;
use ferrolog_records::share_group_records::{
    ShareCurrentAssignment, ShareStatePartitions, ShareTopicPartitions, StateTopic,
    decode_target_member, encode_target_member,
};

/// A record naming topic ids, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assignment {
    Target(TargetAssignmentMember),
    Current(CurrentMemberAssignment),
    ShareTarget(Vec<ShareTopicPartitions>),
    ShareCurrent(ShareCurrentAssignment),
    ShareState(ShareStatePartitions),
}

impl Assignment {
    /// Whether records of `kind` name topic ids.
    pub fn names_topic_ids(kind: ConsumerRecordType) -> bool {
        matches!(
            kind,
            ConsumerRecordType::TargetAssignmentMember
                | ConsumerRecordType::CurrentMemberAssignment
                | ConsumerRecordType::ShareTargetAssignmentMember
                | ConsumerRecordType::ShareCurrentMemberAssignment
                | ConsumerRecordType::ShareStatePartitionMetadata
        )
    }

    /// The value of a record of `kind`, one for which `names_topic_ids` holds.
    pub fn decode(kind: ConsumerRecordType, bytes: &[u8]) -> Result<Self, RecordsError> {
        Ok(match kind {
            ConsumerRecordType::TargetAssignmentMember => {
                Self::Target(TargetAssignmentMember::decode(bytes)?)
            }
            ConsumerRecordType::CurrentMemberAssignment => {
                Self::Current(CurrentMemberAssignment::decode(bytes)?)
            }
            ConsumerRecordType::ShareTargetAssignmentMember => {
                Self::ShareTarget(decode_target_member(bytes)?)
            }
            ConsumerRecordType::ShareCurrentMemberAssignment => {
                Self::ShareCurrent(ShareCurrentAssignment::decode(bytes)?)
            }
            _ => Self::ShareState(ShareStatePartitions::decode(bytes)?),
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        match self {
            Self::Target(target) => target.encode(),
            Self::Current(current) => current.encode(),
            Self::ShareTarget(topics) => encode_target_member(topics),
            Self::ShareCurrent(current) => current.encode(),
            Self::ShareState(state) => state.encode(),
        }
    }

    /// The record naming Kafka's ids (`kafka_ids`: by topic name, its id and partition
    /// count) where it names ferrolog's (`topic_names`: ferrolog's id → name); `None` when
    /// nothing changes. Topics Kafka does not hold keep their ids and are added to
    /// `unmapped`. A share group's state record drops the topics ferrolog no longer holds,
    /// as Kafka's group coordinator does when a topic is deleted: Kafka never learns of that
    /// deletion, and the group could not be deleted for them.
    pub fn under_kafka_ids(
        &self,
        topic_names: &BTreeMap<TopicIdBytes, String>,
        kafka_ids: &BTreeMap<String, (TopicIdBytes, i32)>,
        unmapped: &mut Vec<String>,
    ) -> Option<Self> {
        let mut moved = self.clone();
        let mut changed = false;
        if let Self::ShareState(state) = &mut moved {
            for topics in [
                &mut state.initializing,
                &mut state.initialized,
                &mut state.deleting,
            ] {
                let before = topics.len();
                topics.retain(|topic| topic_names.contains_key(&topic.topic_id));
                changed |= topics.len() != before;
            }
        }
        for topic_id in moved.topic_ids_mut() {
            let Some(name) = topic_names.get(topic_id) else {
                continue;
            };
            match kafka_ids.get(name).map(|(id, _)| id) {
                Some(kafka_id) if kafka_id != topic_id => {
                    *topic_id = *kafka_id;
                    changed = true;
                }
                Some(_) => {}
                None => unmapped.push(name.clone()),
            }
        }
        changed.then_some(moved)
    }

    fn topic_ids_mut(&mut self) -> Vec<&mut TopicIdBytes> {
        fn ids(topics: &mut [ShareTopicPartitions]) -> impl Iterator<Item = &mut TopicIdBytes> {
            topics.iter_mut().map(|topic| &mut topic.topic_id)
        }
        fn state_ids(topics: &mut [StateTopic]) -> impl Iterator<Item = &mut TopicIdBytes> {
            topics.iter_mut().map(|topic| &mut topic.topic_id)
        }
        match self {
            Self::Target(target) => target
                .partitions
                .iter_mut()
                .map(|topic| &mut topic.topic_id)
                .collect(),
            Self::Current(current) => current
                .assigned
                .iter_mut()
                .chain(current.pending_revocation.iter_mut())
                .map(|topic| &mut topic.topic_id)
                .collect(),
            Self::ShareTarget(topics) => ids(topics).collect(),
            Self::ShareCurrent(current) => ids(&mut current.assigned).collect(),
            Self::ShareState(state) => state_ids(&mut state.initializing)
                .chain(state_ids(&mut state.initialized))
                .chain(state_ids(&mut state.deleting))
                .collect(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn state_topic(id: u8, name: &str) -> StateTopic {
        StateTopic {
            topic_id: [id; 16],
            topic_name: name.into(),
            partitions: vec![0, 1],
        }
    }

    #[test]
    fn a_share_groups_state_record_names_kafkas_ids_and_forgets_deleted_topics() {
        let record = Assignment::ShareState(ShareStatePartitions {
            initializing: vec![state_topic(3, "gone")],
            initialized: vec![state_topic(1, "orders"), state_topic(2, "elsewhere")],
            deleting: Vec::new(),
        });
        let names = BTreeMap::from([([1; 16], "orders".into()), ([2; 16], "elsewhere".into())]);
        let kafka = BTreeMap::from([("orders".to_owned(), ([9; 16], 2))]);
        let mut unmapped = Vec::new();
        let moved = record
            .under_kafka_ids(&names, &kafka, &mut unmapped)
            .unwrap();
        assert_eq!(unmapped, vec!["elsewhere".to_owned()]);
        let Assignment::ShareState(state) = &moved else {
            panic!("the same kind of record");
        };
        assert!(state.initializing.is_empty());
        assert_eq!(
            state.initialized,
            vec![state_topic(9, "orders"), state_topic(2, "elsewhere")]
        );
        let decoded = Assignment::decode(
            ConsumerRecordType::ShareStatePartitionMetadata,
            &moved.encode(),
        )
        .unwrap();
        assert_eq!(decoded, moved);
        // Under the same ids, nothing is written again.
        let same = BTreeMap::from([("orders".to_owned(), ([1; 16], 2))]);
        let kept = Assignment::ShareCurrent(ShareCurrentAssignment {
            member_epoch: 2,
            previous_member_epoch: 1,
            state: 0,
            assigned: vec![ShareTopicPartitions {
                topic_id: [1; 16],
                partitions: vec![0],
            }],
        });
        assert_eq!(kept.under_kafka_ids(&names, &same, &mut unmapped), None);
    }
}
