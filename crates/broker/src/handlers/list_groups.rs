//! ListGroups: every group with its protocol type and (version 4+) state, optionally filtered
//! by state.

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse, RequestHeader};
use kafka_protocol::protocol::StrBytes;

use crate::Context;

pub fn handle(
    context: &Context,
    _header: &RequestHeader,
    request: ListGroupsRequest,
) -> ListGroupsResponse {
    let wanted = |state: &str| {
        request.states_filter.is_empty()
            || request
                .states_filter
                .iter()
                .any(|filter| filter.eq_ignore_ascii_case(state))
    };
    let groups = context
        .groups
        .list()
        .into_iter()
        .filter(|(_, _, state)| wanted(state))
        .map(|(id, protocol_type, state)| {
            ListedGroup::default()
                .with_group_id(GroupId(StrBytes::from_string(id)))
                .with_protocol_type(StrBytes::from_string(protocol_type))
                .with_group_state(StrBytes::from_static_str(state))
        })
        .collect();
    ListGroupsResponse::default().with_groups(groups)
}
