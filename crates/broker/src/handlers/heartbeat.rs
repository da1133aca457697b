//! Heartbeat: keeps a member's session alive and tells it when a rebalance is under way. Needs
//! READ on the group (GROUP_AUTHORIZATION_FAILED).

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse, RequestHeader};

use crate::Context;
use crate::authz::{AclOperation, ResourceType};
use crate::session::Session;

pub fn handle(
    context: &Context,
    session: &Session,
    _header: &RequestHeader,
    request: HeartbeatRequest,
) -> HeartbeatResponse {
    if !context.access.allows(
        session,
        AclOperation::Read,
        ResourceType::Group,
        &request.group_id.0,
    ) {
        return HeartbeatResponse::default()
            .with_error_code(crate::errors::GROUP_AUTHORIZATION_FAILED);
    }
    let error = context.groups.heartbeat(
        &request.group_id.0,
        &request.member_id,
        request.group_instance_id.as_deref(),
        request.generation_id,
    );
    HeartbeatResponse::default().with_error_code(error)
}

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
