//! ConsumerGroupDescribe: a consumer group's epochs, assignor and members with their current
//! and target assignments, as Kafka 4.4 describes them.

use ferrolog_storage::manager::{LogManager, TopicId};

use super::heartbeat::preferred_assignor;
use super::model::{ConsumerGroup, Partitions};
use crate::errors;
use crate::group::GroupCoordinator;

/// A described consumer group, or the error describing it met.
#[derive(Debug, Clone, Default)]
pub struct DescribedConsumerGroup {
    pub error: i16,
    pub message: Option<String>,
    pub state: &'static str,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub assignor_name: String,
    pub members: Vec<DescribedConsumerMember>,
}

/// A member of a described group; assignments are (topic id, topic name, partitions).
#[derive(Debug, Clone, Default)]
pub struct DescribedConsumerMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub member_epoch: i32,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    pub assignment: Vec<(TopicId, String, Vec<i32>)>,
    pub target_assignment: Vec<(TopicId, String, Vec<i32>)>,
    /// Whether it speaks the classic protocol (ConsumerGroupDescribe's MemberType 0, else 1).
    pub classic: bool,
}

impl GroupCoordinator {
    pub fn describe_consumer_group(&self, group_id: &str) -> DescribedConsumerGroup {
        let refused = |error, message: String| DescribedConsumerGroup {
            error,
            message: Some(message),
            ..DescribedConsumerGroup::default()
        };
        if group_id.is_empty() {
            return refused(errors::INVALID_GROUP_ID, String::new());
        }
        let manager = self.topic.manager();
        let assignors = &self.config.consumer.assignors;
        self.runtime.read(self.partition_of(group_id), |shard| {
            match shard.groups.get(group_id) {
                None => refused(
                    errors::GROUP_ID_NOT_FOUND,
                    format!("Group {group_id} not found."),
                ),
                Some(group) => match group.consumer.as_deref() {
                    None => refused(
                        errors::GROUP_ID_NOT_FOUND,
                        format!("Group {group_id} is not a consumer group."),
                    ),
                    Some(group) => describe(group, manager, assignors),
                },
            }
        })
    }
}

fn describe(
    group: &ConsumerGroup,
    manager: &LogManager,
    assignors: &[String],
) -> DescribedConsumerGroup {
    let named = |partitions: &Partitions| -> Vec<(TopicId, String, Vec<i32>)> {
        partitions
            .iter()
            .filter_map(|(topic, partitions)| {
                let name = manager.topic_with_id(*topic)?;
                Some((*topic, name, partitions.iter().copied().collect()))
            })
            .collect()
    };
    let members = group
        .members
        .values()
        .map(|member| {
            // Assigned and still-revoking partitions together, as Kafka shows them.
            let mut owned = member.current.assigned_partitions();
            for (topic, partitions) in &member.current.pending_revocation {
                owned.entry(*topic).or_default().extend(partitions);
            }
            let subscription = &member.subscription;
            DescribedConsumerMember {
                member_id: member.member_id.clone(),
                instance_id: subscription.instance_id.clone(),
                rack_id: subscription.rack_id.clone(),
                member_epoch: member.current.member_epoch,
                client_id: subscription.client_id.clone(),
                client_host: subscription.client_host.clone(),
                subscribed_topic_names: subscription.topic_names.clone(),
                subscribed_topic_regex: subscription.topic_regex.clone(),
                classic: subscription.classic.is_some(),
                assignment: named(&owned),
                target_assignment: named(
                    group
                        .target
                        .get(&member.member_id)
                        .unwrap_or(&Partitions::new()),
                ),
            }
        })
        .collect();
    DescribedConsumerGroup {
        error: errors::NONE,
        message: None,
        state: group.state().name(),
        group_epoch: group.group_epoch,
        assignment_epoch: group.assignment_epoch,
        assignor_name: preferred_assignor(group, None, assignors),
        members,
    }
}
