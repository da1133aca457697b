//! SyncGroup: the leader hands over the assignment it computed; every member gets its own once
//! the leader's arrives. Needs READ on the group (GROUP_AUTHORIZATION_FAILED).

use std::sync::Arc;

use kafka_protocol::messages::{SyncGroupRequest, SyncGroupResponse};
use kafka_protocol::protocol::StrBytes;

use crate::authz::Asked;
use crate::group::Reply;
use crate::group::state::SyncResult;
use crate::{Context, errors};

pub async fn handle(
    context: &Arc<Context>,
    _asked: &Asked<'_>,
    request: SyncGroupRequest,
) -> SyncGroupResponse {
    let context = Arc::clone(context);
    let reply = crate::bridge::blocking(move || {
        let assignments = request
            .assignments
            .into_iter()
            .map(|a| (a.member_id.to_string(), a.assignment.to_vec()))
            .collect();
        context.groups.sync(
            &request.group_id.0,
            (&request.member_id, request.group_instance_id.as_deref()),
            request.generation_id,
            (
                request.protocol_type.as_deref(),
                request.protocol_name.as_deref(),
            ),
            assignments,
        )
    })
    .await;
    let result = match reply {
        Ok(Reply::Now(result)) => result,
        Ok(Reply::Later(receiver)) => receiver
            .await
            .unwrap_or_else(|_| SyncResult::error(errors::REBALANCE_IN_PROGRESS)),
        Err(_) => SyncResult::error(errors::UNKNOWN_SERVER_ERROR),
    };
    SyncGroupResponse::default()
        .with_error_code(result.error)
        .with_protocol_type(result.protocol_type.map(StrBytes::from_string))
        .with_protocol_name(result.protocol.map(StrBytes::from_string))
        .with_assignment(result.assignment.into())
}

crate::refuse::refused_at_top_level!(SyncGroupRequest => SyncGroupResponse);

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::{GroupId, SyncGroupRequest};

    use crate::probes::{Probed, text};

    impl Probed for SyncGroupRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request = SyncGroupRequest::default()
                .with_group_id(GroupId(text(group)))
                .with_member_id(text("nobody"))
                .with_protocol_type(Some(text("consumer")))
                .with_protocol_name(Some(text("range")));
            (5, request)
        }
    }
}
