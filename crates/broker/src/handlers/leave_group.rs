//! LeaveGroup: members leave at once instead of waiting out their session. Versions 0–2 name
//! one member; 3 and later a list, possibly by static instance id. Needs READ on the group
//! (GROUP_AUTHORIZATION_FAILED for the whole request).

use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse, RequestHeader};

use crate::Context;
use crate::authz::{AclOperation, ResourceType};
use crate::session::Session;

pub fn handle(
    context: &Context,
    session: &Session,
    header: &RequestHeader,
    request: LeaveGroupRequest,
) -> LeaveGroupResponse {
    if !context.access.allows(
        session,
        AclOperation::Read,
        ResourceType::Group,
        &request.group_id.0,
    ) {
        return LeaveGroupResponse::default()
            .with_error_code(crate::errors::GROUP_AUTHORIZATION_FAILED);
    }
    if header.request_api_version < 3 {
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
