//! JoinGroup: a member joins (or rejoins) a group and, once the rebalance completes, learns its
//! generation, the chosen protocol and (the leader only) every member's metadata. Needs READ on
//! the group (GROUP_AUTHORIZATION_FAILED).

use std::sync::Arc;

use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse};
use kafka_protocol::protocol::StrBytes;

use crate::authz::Asked;
use crate::group::state::JoinResult;
use crate::group::{JoinRequest, Reply};
use crate::{Context, errors};

pub async fn handle(
    context: &Arc<Context>,
    asked: &Asked<'_>,
    request: JoinGroupRequest,
) -> JoinGroupResponse {
    let version = asked.version();
    let join = JoinRequest {
        group: request.group_id.0.to_string(),
        member_id: request.member_id.to_string(),
        group_instance_id: request.group_instance_id.map(|id| id.to_string()),
        client_id: asked
            .header()
            .client_id
            .as_deref()
            .unwrap_or_default()
            .to_owned(),
        client_host: format!("/{}", asked.session().host()),
        session_timeout_ms: request.session_timeout_ms,
        // Version 0 has no rebalance timeout: the session timeout stands in, as in Kafka.
        rebalance_timeout_ms: if version >= 1 {
            request.rebalance_timeout_ms
        } else {
            request.session_timeout_ms
        },
        protocol_type: request.protocol_type.to_string(),
        protocols: request
            .protocols
            .into_iter()
            .map(|p| (p.name.to_string(), p.metadata.to_vec()))
            .collect(),
        require_known_member_id: version >= 4,
        supports_skip_assignment: version >= 9,
    };
    let member_id = join.member_id.clone();
    let context = Arc::clone(context);
    let reply = crate::bridge::blocking(move || context.groups.join(join)).await;
    let result = match reply {
        Ok(Reply::Now(result)) => result,
        Ok(Reply::Later(receiver)) => receiver
            .await
            .unwrap_or_else(|_| JoinResult::error(errors::COORDINATOR_NOT_AVAILABLE, &member_id)),
        Err(_) => JoinResult::error(errors::UNKNOWN_SERVER_ERROR, &member_id),
    };
    JoinGroupResponse::default()
        .with_error_code(result.error)
        .with_generation_id(result.generation)
        .with_protocol_type(result.protocol_type.map(StrBytes::from_string))
        .with_protocol_name(result.protocol.map(StrBytes::from_string))
        .with_leader(StrBytes::from_string(result.leader))
        .with_member_id(StrBytes::from_string(result.member_id))
        .with_skip_assignment(result.skip_assignment)
        .with_members(
            result
                .members
                .into_iter()
                .map(|(member_id, instance_id, metadata)| {
                    JoinGroupResponseMember::default()
                        .with_member_id(StrBytes::from_string(member_id))
                        .with_group_instance_id(instance_id.map(StrBytes::from_string))
                        .with_metadata(metadata.into())
                })
                .collect(),
        )
}

impl crate::refuse::Refuse for JoinGroupRequest {
    /// Kafka's error response: no generation, no member id.
    fn refused(&self, _version: i16, code: i16) -> JoinGroupResponse {
        JoinGroupResponse::default()
            .with_error_code(code)
            .with_generation_id(-1)
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::messages::{GroupId, JoinGroupRequest};

    use crate::probes::{Probed, text};

    impl Probed for JoinGroupRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request = JoinGroupRequest::default()
                .with_group_id(GroupId(text(group)))
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(10_000)
                .with_protocol_type(text("consumer"))
                .with_protocols(vec![
                    JoinGroupRequestProtocol::default().with_name(text("range")),
                ]);
            (9, request)
        }
    }
}
