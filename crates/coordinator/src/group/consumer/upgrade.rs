//! The online upgrade of a classic group with members to a consumer group, as Kafka 4.4 does it
//! when a consumer-protocol member joins it (ConsumerGroupHeartbeat at epoch 0), under a
//! `group.consumer.migration.policy` that allows upgrades.
//!
//! Each classic member becomes a consumer-group member of the classic protocol at the group's
//! generation: subscribed to the topics of its metadata for the group's protocol, owning the
//! partitions of its assignment (each assigned at that generation), its target those same
//! partitions, its session timeout and protocols kept. The group's epoch and its target's are
//! the generation; the target's time is 0, so the joining member's heartbeat computes a new
//! target at once. JoinGroups and SyncGroups still waiting are answered REBALANCE_IN_PROGRESS,
//! and their members rejoin into the consumer group. The conversion is written as records
//! (the classic group's tombstone, then each member's subscription, the group epoch, each
//! target, the target's epoch, each current assignment) ahead of the joining member's own.

use ferrolog_protocol::consumer_protocol;
use ferrolog_records::consumer_group_records::ClassicMemberMetadata;
use ferrolog_records::consumer_offsets::OffsetsKey;

use super::MigrationPolicy;
use super::heartbeat::{HeartbeatAnswer, new_group};
use super::model::{
    AssignedPartitions, ConsumerGroup, CurrentAssignment, Partitions, Subscription,
};
use super::records;
use super::subscription::TopicMetadata;
use crate::errors;
use crate::group::GroupCoordinator;
use crate::group::offsets_topic::OffsetsRecord;
use crate::group::state::{Group, JoinResult, SyncResult};

impl GroupCoordinator {
    /// The classic group `classic` as a consumer group, and the records that make it one;
    /// refused as Kafka refuses (GROUP_ID_NOT_FOUND, with its message).
    pub(super) fn upgrade(
        &self,
        classic: &mut Group,
    ) -> Result<(ConsumerGroup, Vec<OffsetsRecord>), HeartbeatAnswer> {
        let config = &self.config.consumer;
        let group_id = classic.id.clone();
        let refuse = |reason: &str| {
            Err(HeartbeatAnswer::error(
                errors::GROUP_ID_NOT_FOUND,
                format!(
                    "Cannot upgrade classic group {group_id} to consumer group because {reason}"
                ),
            ))
        };
        if matches!(
            config.migration,
            MigrationPolicy::Downgrade | MigrationPolicy::Disabled
        ) {
            return refuse("online upgrade is disabled.");
        }
        if classic.protocol_type.as_deref() != Some("consumer") {
            return refuse("the group does not use the consumer embedded protocol.");
        }
        if classic.members.len() > config.max_size as usize {
            return refuse("the group size exceeds the consumer group maximum size.");
        }
        answer_waiting_members(classic);
        let Some(protocol) = classic.protocol.clone() else {
            // Members joined, none was assigned yet: Kafka fails here too.
            return Err(HeartbeatAnswer::error(errors::UNKNOWN_SERVER_ERROR, None));
        };
        let mut converted = Vec::new();
        for member in &classic.members {
            let subscription =
                consumer_protocol::decode_subscription(&member.metadata_for(&protocol));
            let assignment = consumer_protocol::decode_assignment(&member.assignment);
            let (Ok(subscription), Ok((assigned, user_data))) = (subscription, assignment) else {
                return refuse("the embedded consumer protocol is malformed.");
            };
            if user_data {
                return refuse(
                    "an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.",
                );
            }
            let mut topic_names = subscription.topics;
            topic_names.sort();
            topic_names.dedup();
            let subscription = Subscription {
                instance_id: member.group_instance_id.clone(),
                rack_id: subscription.rack_id,
                client_id: member.client_id.clone(),
                client_host: member.client_host.clone(),
                topic_names,
                topic_regex: None,
                rebalance_timeout_ms: member.rebalance_timeout_ms,
                server_assignor: None,
                classic: Some(ClassicMemberMetadata {
                    session_timeout_ms: member.session_timeout_ms,
                    protocols: member.protocols.clone(),
                }),
            };
            converted.push((
                member.member_id.clone(),
                subscription,
                self.partitions_by_id(&assigned),
            ));
        }
        // The assignments are the leader's, a client's: two members given one partition would
        // make it owned twice. Kafka fails the heartbeat then, and writes nothing.
        let mut owned = std::collections::BTreeSet::new();
        for (_, _, partitions) in &converted {
            for (topic, indexes) in partitions {
                for index in indexes {
                    if !owned.insert((*topic, *index)) {
                        return Err(HeartbeatAnswer::error(errors::UNKNOWN_SERVER_ERROR, None));
                    }
                }
            }
        }
        Ok(self.converted_group(&classic.id, classic.generation, converted))
    }

    /// The consumer group of the converted members, built by replaying the records written for
    /// it, as a load would.
    fn converted_group(
        &self,
        group_id: &str,
        generation: i32,
        members: Vec<(String, Subscription, Partitions)>,
    ) -> (ConsumerGroup, Vec<OffsetsRecord>) {
        let mut records = vec![(
            OffsetsKey::Group {
                group: group_id.to_owned(),
            },
            None,
        )];
        for (member_id, subscription, _) in &members {
            records.push(records::member_metadata(group_id, member_id, subscription));
        }
        let names: std::collections::BTreeSet<&String> = members
            .iter()
            .flat_map(|(_, subscription, _)| subscription.topic_names.iter())
            .collect();
        let hash = TopicMetadata::read(self.topic.manager(), names).hash();
        records.push(records::group_epoch(group_id, generation, hash));
        for (member_id, _, owned) in &members {
            records.push(records::target_member(group_id, member_id, owned));
        }
        records.push(records::target_metadata(group_id, generation, 0));
        for (member_id, _, owned) in &members {
            let assigned: AssignedPartitions = owned
                .iter()
                .map(|(topic, partitions)| {
                    (
                        *topic,
                        partitions.iter().map(|p| (*p, generation)).collect(),
                    )
                })
                .collect();
            let current = CurrentAssignment {
                member_epoch: generation,
                previous_member_epoch: generation,
                assigned,
                ..CurrentAssignment::default()
            };
            records.push(records::current_assignment(group_id, member_id, &current));
        }
        let mut group = new_group(group_id);
        super::heartbeat::replay_all(&mut group, &records);
        (group, records)
    }
}

/// Answers every JoinGroup and SyncGroup the classic group holds back with
/// REBALANCE_IN_PROGRESS: their members rejoin, into the consumer group.
fn answer_waiting_members(classic: &mut Group) {
    for member in &mut classic.members {
        if let Some(waiting) = member.awaiting_join.take() {
            let _ = waiting.send(JoinResult::error(
                errors::REBALANCE_IN_PROGRESS,
                &member.member_id,
            ));
        }
        if let Some(waiting) = member.awaiting_sync.take() {
            let _ = waiting.send(SyncResult::error(errors::REBALANCE_IN_PROGRESS));
        }
    }
}
