//! ConsumerGroupDescribe (KIP-848): consumer groups with their epochs, assignor and members'
//! current and target assignments. DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED on that
//! group); a group whose assignments name a topic the session may not describe is answered
//! TOPIC_AUTHORIZATION_FAILED without members, as Kafka answers it.

use ferrolog_coordinator::group::consumer::{DescribedConsumerGroup, DescribedConsumerMember};
use ferrolog_storage::manager::TopicId;
use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::authz::{AclOperation, Asked, ResourceType};
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let groups = request
        .group_ids
        .into_iter()
        .map(|group_id| {
            let described = DescribedGroup::default().with_group_id(group_id.clone());
            if !super::consumer_groups_served(context) {
                return described.with_error_code(errors::UNSUPPORTED_VERSION);
            }
            if !asked.allows(ResourceType::Group, &group_id.0) {
                return described.with_error_code(errors::GROUP_AUTHORIZATION_FAILED);
            }
            let group = context.groups.describe_consumer_group(&group_id.0);
            if group.error != errors::NONE {
                return described
                    .with_error_code(group.error)
                    .with_error_message(group.message.map(StrBytes::from_string));
            }
            let hidden = group.members.iter().any(|member| {
                member
                    .assignment
                    .iter()
                    .chain(&member.target_assignment)
                    .any(|(_, name, _)| !asked.may(AclOperation::Describe, ResourceType::Topic, name))
            });
            if hidden {
                return described
                    .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED)
                    .with_error_message(Some(StrBytes::from_static_str(
                        "The group has described topic(s) that the client is not authorized to describe.",
                    )));
            }
            let described = if request.include_authorized_operations {
                described.with_authorized_operations(
                    asked.authorized_operations(ResourceType::Group, &group_id.0),
                )
            } else {
                described
            };
            filled(described, group, asked.version())
        })
        .collect();
    ConsumerGroupDescribeResponse::default().with_groups(groups)
}

fn filled(
    described: DescribedGroup,
    group: DescribedConsumerGroup,
    version: i16,
) -> DescribedGroup {
    described
        .with_group_state(StrBytes::from_static_str(group.state))
        .with_group_epoch(group.group_epoch)
        .with_assignment_epoch(group.assignment_epoch)
        .with_assignor_name(StrBytes::from_string(group.assignor_name))
        .with_members(
            group
                .members
                .into_iter()
                .map(|member| described_member(member, version))
                .collect(),
        )
}

fn described_member(member: DescribedConsumerMember, version: i16) -> Member {
    let assignment = |partitions: Vec<(TopicId, String, Vec<i32>)>| {
        Assignment::default().with_topic_partitions(
            partitions
                .into_iter()
                .map(|(id, name, partitions)| {
                    TopicPartitions::default()
                        .with_topic_id(Uuid::from_bytes(id.0))
                        .with_topic_name(TopicName(StrBytes::from_string(name)))
                        .with_partitions(partitions)
                })
                .collect(),
        )
    };
    let classic = member.classic;
    let member_out = Member::default()
        .with_member_id(StrBytes::from_string(member.member_id))
        .with_instance_id(member.instance_id.map(StrBytes::from_string))
        .with_rack_id(member.rack_id.map(StrBytes::from_string))
        .with_member_epoch(member.member_epoch)
        .with_client_id(StrBytes::from_string(member.client_id))
        .with_client_host(StrBytes::from_string(member.client_host))
        .with_subscribed_topic_names(
            member
                .subscribed_topic_names
                .into_iter()
                .map(|name| TopicName(StrBytes::from_string(name)))
                .collect(),
        )
        .with_subscribed_topic_regex(Some(StrBytes::from_string(
            member.subscribed_topic_regex.unwrap_or_default(),
        )))
        .with_assignment(assignment(member.assignment))
        .with_target_assignment(assignment(member.target_assignment));
    // Version 1 says which protocol the member speaks: 0 classic, 1 consumer.
    if version >= 1 {
        member_out.with_member_type(if classic { 0 } else { 1 })
    } else {
        member_out
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::{ConsumerGroupDescribeRequest, GroupId};

    use crate::probes::{Probed, text};

    impl Probed for ConsumerGroupDescribeRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request =
                ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(text(group))]);
            (1, request)
        }
    }
}
