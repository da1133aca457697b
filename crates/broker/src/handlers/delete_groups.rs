//! DeleteGroups: an empty group's offsets and metadata are tombstoned; a group with members is
//! refused with NON_EMPTY_GROUP. Each group needs DELETE (GROUP_AUTHORIZATION_FAILED).

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};

use crate::Context;
use crate::authz::Asked;
use crate::authz::ResourceType;

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let results = request
        .groups_names
        .into_iter()
        .map(|group_id| {
            let error = if asked.allows(ResourceType::Group, &group_id.0) {
                context.groups.delete_group(&group_id.0)
            } else {
                crate::errors::GROUP_AUTHORIZATION_FAILED
            };
            DeletableGroupResult::default()
                .with_group_id(group_id)
                .with_error_code(error)
        })
        .collect();
    DeleteGroupsResponse::default().with_results(results)
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::{DeleteGroupsRequest, GroupId};

    use crate::probes::{Probed, text};

    impl Probed for DeleteGroupsRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request =
                DeleteGroupsRequest::default().with_groups_names(vec![GroupId(text(group))]);
            (2, request)
        }
    }
}
