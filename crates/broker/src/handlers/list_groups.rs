//! ListGroups: every group with its protocol type and (version 4+) state, optionally filtered
//! by state. Groups the session may not describe are left out (DESCRIBE on the cluster
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
                .any(|filter| filter.eq_ignore_ascii_case(state))
    };
    // DESCRIBE on the cluster shows every group; otherwise each group needs its own.
    let every_group = asked.may_on_cluster(AclOperation::Describe);
    let describable =
        |group: &str| every_group || asked.may(AclOperation::Describe, ResourceType::Group, group);
    let groups = context
        .groups
        .list()
        .into_iter()
        .filter(|(id, _, state)| wanted(state) && describable(id))
        .map(|(id, protocol_type, state)| {
            ListedGroup::default()
                .with_group_id(GroupId(StrBytes::from_string(id)))
                .with_protocol_type(StrBytes::from_string(protocol_type))
                .with_group_state(StrBytes::from_static_str(state))
        })
        .collect();
    ListGroupsResponse::default().with_groups(groups)
}
