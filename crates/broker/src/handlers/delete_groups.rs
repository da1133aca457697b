//! DeleteGroups: an empty group's offsets and metadata are tombstoned; a group with members is
//! refused with NON_EMPTY_GROUP.

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse, RequestHeader};

use crate::Context;

pub fn handle(
    context: &Context,
    _header: &RequestHeader,
    request: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let results = request
        .groups_names
        .into_iter()
        .map(|group_id| {
            let error = context.groups.delete_group(&group_id.0);
            DeletableGroupResult::default()
                .with_group_id(group_id)
                .with_error_code(error)
        })
        .collect();
    DeleteGroupsResponse::default().with_results(results)
}
