//! LeaveGroup: members leave at once instead of waiting out their session. Versions 0–2 name
//! one member; 3 and later a list, possibly by static instance id. Needs READ on the group
//! (GROUP_AUTHORIZATION_FAILED for the whole request).

use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};

use crate::Context;
use crate::authz::Asked;

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: LeaveGroupRequest,
) -> LeaveGroupResponse {
    if asked.version() < 3 {
        let leaving = [(request.member_id.to_string(), None)];
        let (_, errors) = context.groups.leave(&request.group_id.0, &leaving);
        return LeaveGroupResponse::default().with_error_code(errors[0]);
    }
    let leaving: Vec<(String, Option<String>)> = request
        .members
        .iter()
        .map(|m| {
            (
                m.member_id.to_string(),
                m.group_instance_id.as_ref().map(|id| id.to_string()),
            )
        })
        .collect();
    let (error, results) = context.groups.leave(&request.group_id.0, &leaving);
    LeaveGroupResponse::default()
        .with_error_code(error)
        .with_members(
            request
                .members
                .into_iter()
                .zip(results)
                .map(|(member, error)| {
                    MemberResponse::default()
                        .with_member_id(member.member_id)
                        .with_group_instance_id(member.group_instance_id)
                        .with_error_code(error)
                })
                .collect(),
        )
}

crate::refuse::refused_at_top_level!(LeaveGroupRequest => LeaveGroupResponse);

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::leave_group_request::MemberIdentity;
    use kafka_protocol::messages::{GroupId, LeaveGroupRequest};

    use crate::probes::{Probed, text};

    impl Probed for LeaveGroupRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request = LeaveGroupRequest::default()
                .with_group_id(GroupId(text(group)))
                .with_members(vec![
                    MemberIdentity::default().with_member_id(text("nobody")),
                ]);
            (5, request)
        }
    }
}
