//! ShareGroupDescribe (KIP-932): share groups with their state, epochs and members. DESCRIBE
//! on each group (GROUP_AUTHORIZATION_FAILED on that group); a group with a member assigned a
//! topic the session may not describe is answered TOPIC_AUTHORIZATION_FAILED without members,
//! as Kafka answers it.

use ferrolog_coordinator::group::share::DescribedShareMember;
use kafka_protocol::messages::share_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    GroupId, ShareGroupDescribeRequest, ShareGroupDescribeResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::authz::{AclOperation, Asked, ResourceType};
use crate::{Context, errors};

/// The share groups' one assignor.
const ASSIGNOR: &str = "simple";

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: ShareGroupDescribeRequest,
) -> ShareGroupDescribeResponse {
    let groups = request
        .group_ids
        .into_iter()
        .map(|group_id| {
            describe(
                context,
                asked,
                group_id,
                request.include_authorized_operations,
            )
        })
        .collect();
    ShareGroupDescribeResponse::default().with_groups(groups)
}

fn describe(
    context: &Context,
    asked: &Asked<'_>,
    group_id: GroupId,
    operations: bool,
) -> DescribedGroup {
    let refused = |code, message: Option<&str>| {
        DescribedGroup::default()
            .with_group_id(group_id.clone())
            .with_error_code(code)
            .with_error_message(message.map(|m| StrBytes::from_string(m.to_owned())))
            .with_authorized_operations(i32::MIN)
    };
    if !context.features.serves(crate::features::SHARE_VERSION) {
        return refused(errors::UNSUPPORTED_VERSION, None);
    }
    if !asked.allows(ResourceType::Group, &group_id.0) {
        return refused(errors::GROUP_AUTHORIZATION_FAILED, None);
    }
    if group_id.0.is_empty() {
        return refused(errors::INVALID_GROUP_ID, None);
    }
    let group = match context.groups.describe_share_group(&group_id.0) {
        Ok(group) => group,
        Err((code, message)) => return refused(code, Some(&message)),
    };
    let members: Vec<Member> = group.members.iter().map(|m| member(context, m)).collect();
    let unauthorized = members
        .iter()
        .flat_map(|m| &m.assignment.topic_partitions)
        .any(|topic| {
            !asked.may(
                AclOperation::Describe,
                ResourceType::Topic,
                &topic.topic_name.0,
            )
        });
    if unauthorized {
        return refused(
            errors::TOPIC_AUTHORIZATION_FAILED,
            Some("The group has described topic(s) that the client is not authorized to describe."),
        );
    }
    let authorized = if operations {
        asked.authorized_operations(ResourceType::Group, &group_id.0)
    } else {
        i32::MIN
    };
    DescribedGroup::default()
        .with_group_id(group_id)
        .with_group_state(StrBytes::from_static_str(group.state))
        .with_group_epoch(group.epoch)
        .with_assignment_epoch(group.assignment_epoch)
        .with_assignor_name(StrBytes::from_static_str(ASSIGNOR))
        .with_members(members)
        .with_authorized_operations(authorized)
}

fn member(context: &Context, member: &DescribedShareMember) -> Member {
    let topics = member
        .assigned
        .iter()
        .filter_map(|(id, partitions)| {
            let name = context.manager.topic_with_id(*id)?;
            Some(
                TopicPartitions::default()
                    .with_topic_id(uuid::Uuid::from_bytes(id.0))
                    .with_topic_name(TopicName(StrBytes::from_string(name)))
                    .with_partitions(partitions.iter().copied().collect()),
            )
        })
        .collect();
    Member::default()
        .with_member_id(StrBytes::from_string(member.member_id.clone()))
        .with_rack_id(member.rack_id.clone().map(StrBytes::from_string))
        .with_member_epoch(member.member_epoch)
        .with_client_id(StrBytes::from_string(member.client_id.clone()))
        .with_client_host(StrBytes::from_string(member.client_host.clone()))
        .with_subscribed_topic_names(
            member
                .subscribed
                .iter()
                .map(|name| TopicName(StrBytes::from_string(name.clone())))
                .collect(),
        )
        .with_assignment(Assignment::default().with_topic_partitions(topics))
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::{GroupId, ShareGroupDescribeRequest};

    use crate::probes::{Probed, text};

    impl Probed for ShareGroupDescribeRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request =
                ShareGroupDescribeRequest::default().with_group_ids(vec![GroupId(text(group))]);
            (1, request)
        }
    }
}
