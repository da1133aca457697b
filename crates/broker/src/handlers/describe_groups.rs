//! DescribeGroups: each group's state, protocol and members. An unknown group, and a consumer
//! group of the KIP-848 protocol (not a classic group), are reported as `Dead`, as Kafka does:
//! with no error before version 6, from version 6 with GROUP_ID_NOT_FOUND and Kafka's message.
//! A group named twice is described once, and the repeat answered INVALID_REQUEST. Each group
//! needs DESCRIBE (GROUP_AUTHORIZATION_FAILED); its authorized operations are given when asked
//! for.

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::authz::Asked;
use crate::authz::ResourceType;
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let mut seen = std::collections::HashSet::new();
    let groups = request
        .groups
        .into_iter()
        .map(|group_id| {
            let described = DescribedGroup::default().with_authorized_operations(i32::MIN);
            // A group named again is not described again: its members, answered once per
            // name, would let a small request build a response of any size.
            if !seen.insert(group_id.0.clone()) {
                return described
                    .with_group_id(group_id)
                    .with_error_code(errors::INVALID_REQUEST);
            }
            if !asked.allows(ResourceType::Group, &group_id.0) {
                return described
                    .with_group_id(group_id)
                    .with_error_code(errors::GROUP_AUTHORIZATION_FAILED);
            }
            let described = if request.include_authorized_operations {
                described.with_authorized_operations(
                    asked.authorized_operations(ResourceType::Group, &group_id.0),
                )
            } else {
                described
            };
            let Some(description) = context.groups.describe(&group_id.0) else {
                let dead = described.with_group_state(StrBytes::from_static_str("Dead"));
                if asked.version() < 6 {
                    return dead.with_group_id(group_id);
                }
                let message = if context.groups.is_consumer_group(&group_id.0)
                    || context.groups.is_streams_group(&group_id.0)
                    || context.groups.is_share_group(&group_id.0)
                {
                    format!("Group {} is not a classic group.", group_id.0)
                } else {
                    format!("Group {} not found.", group_id.0)
                };
                return dead
                    .with_group_id(group_id)
                    .with_error_code(errors::GROUP_ID_NOT_FOUND)
                    .with_error_message(Some(StrBytes::from_string(message)));
            };
            described
                .with_group_id(group_id)
                .with_group_state(StrBytes::from_static_str(description.state))
                .with_protocol_type(StrBytes::from_string(description.protocol_type))
                .with_protocol_data(StrBytes::from_string(description.protocol))
                .with_members(
                    description
                        .members
                        .into_iter()
                        .map(|member| {
                            DescribedGroupMember::default()
                                .with_member_id(StrBytes::from_string(member.member_id))
                                .with_group_instance_id(
                                    member.group_instance_id.map(StrBytes::from_string),
                                )
                                .with_client_id(StrBytes::from_string(member.client_id))
                                .with_client_host(StrBytes::from_string(member.client_host))
                                .with_member_metadata(member.metadata.into())
                                .with_member_assignment(member.assignment.into())
                        })
                        .collect(),
                )
        })
        .collect();
    DescribeGroupsResponse::default().with_groups(groups)
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::{DescribeGroupsRequest, GroupId};

    use crate::probes::{Probed, text};

    impl Probed for DescribeGroupsRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request = DescribeGroupsRequest::default().with_groups(vec![GroupId(text(group))]);
            (5, request)
        }
    }
}
