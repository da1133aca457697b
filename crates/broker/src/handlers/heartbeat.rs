//! Heartbeat: keeps a member's session alive and tells it when a rebalance is under way.

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse, RequestHeader};

use crate::Context;

pub fn handle(
    context: &Context,
    _header: &RequestHeader,
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
