//! Heartbeat: keeps a member's session alive and tells it when a rebalance is under way. Needs
//! READ on the group (GROUP_AUTHORIZATION_FAILED).

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use crate::Context;
use crate::authz::Asked;

pub fn handle(
    context: &Context,
    _asked: &Asked<'_>,
    request: HeartbeatRequest,
) -> HeartbeatResponse {
    let error = context.groups.heartbeat(
        &request.group_id.0,
        &request.member_id,
        request.group_instance_id.as_deref(),
        request.generation_id,
    );
    HeartbeatResponse::default().with_error_code(error)
}

crate::refuse::refused_at_top_level!(HeartbeatRequest => HeartbeatResponse);

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::{GroupId, HeartbeatRequest};

    use crate::probes::{Probed, text};

    impl Probed for HeartbeatRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request = HeartbeatRequest::default()
                .with_group_id(GroupId(text(group)))
                .with_member_id(text("nobody"));
            (4, request)
        }
    }
}
