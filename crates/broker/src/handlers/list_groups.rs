//! ListGroups: every group with its protocol type and (version 4+) state, optionally filtered
//! by state and (version 5+) type: "classic", "consumer", "streams" or "share". Groups the session may not describe are left out (DESCRIBE on the cluster
//! shows them all), without an error, as Kafka does.

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::Context;
use crate::authz::Asked;
use crate::authz::{AclOperation, ResourceType};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: ListGroupsRequest,
) -> ListGroupsResponse {
    let wanted = |state: &str| {
        request.states_filter.is_empty()
            || request
                .states_filter
                .iter()
                .any(|filter| filter.eq_ignore_ascii_case(filter_name(state)))
    };
    // Version 5: group types, named in any case; a type Kafka does not know matches nothing.
    let of_type = |group_type: &str| {
        request.types_filter.is_empty()
            || request
                .types_filter
                .iter()
                .any(|filter| filter.trim().eq_ignore_ascii_case(group_type))
    };
    // DESCRIBE on the cluster shows every group; otherwise each group needs its own.
    let every_group = asked.may_on_cluster(AclOperation::Describe);
    let describable =
        |group: &str| every_group || asked.may(AclOperation::Describe, ResourceType::Group, group);
    let groups = context
        .groups
        .list()
        .into_iter()
        .filter(|group| wanted(group.state) && of_type(group.group_type) && describable(&group.id))
        .map(|group| {
            ListedGroup::default()
                .with_group_id(GroupId(StrBytes::from_string(group.id)))
                .with_protocol_type(StrBytes::from_string(group.protocol_type))
                .with_group_state(StrBytes::from_static_str(group.state))
                .with_group_type(StrBytes::from_static_str(group.group_type))
        })
        .collect();
    ListGroupsResponse::default().with_groups(groups)
}

/// The name a state filter gives a state: its own, but Kafka's streams groups filter their
/// NotReady state as `not_ready`.
fn filter_name(state: &str) -> &str {
    if state == "NotReady" {
        "not_ready"
    } else {
        state
    }
}
