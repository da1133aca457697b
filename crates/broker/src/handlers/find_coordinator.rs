//! FindCoordinator: this broker coordinates every group and every transactional id. The first
//! request of each kind creates its internal topic (`__consumer_offsets`,
//! `__transaction_state`), as Kafka does. Versions 0–3 ask for one key, 4 and later for a list.
//! A group key needs DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED for that key), a
//! transaction key DESCRIBE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use crate::authz::Asked;
use crate::authz::{AclOperation, ResourceType};
use crate::{Context, errors};

/// Key type 0 is a group, 1 a transactional id.
const GROUP_KEY_TYPE: i8 = 0;
const TRANSACTION_KEY_TYPE: i8 = 1;

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let node = BrokerId(context.manager.node_id());
    let host = StrBytes::from_string(asked.session().listener().advertised.host.clone());
    let port = i32::from(asked.session().listener().advertised.port);
    // Kafka decides each key on its own: DESCRIBE on the group it names.
    let decide = |key: &str| -> (i16, Option<StrBytes>) {
        let created = match request.key_type {
            GROUP_KEY_TYPE => {
                if !asked.allows(ResourceType::Group, key) {
                    return (errors::GROUP_AUTHORIZATION_FAILED, None);
                }
                context.groups.find_coordinator()
            }
            TRANSACTION_KEY_TYPE => {
                if !asked.may(AclOperation::Describe, ResourceType::TransactionalId, key) {
                    return (errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None);
                }
                context.transactions.find_coordinator()
            }
            _ => return (errors::INVALID_REQUEST, None),
        };
        match created {
            Ok(()) => (errors::NONE, None),
            Err(error) => {
                tracing::warn!(%error, "creating a coordinator's internal topic failed");
                (errors::COORDINATOR_NOT_AVAILABLE, None)
            }
        }
    };
    let located = |error: i16| {
        if error == errors::NONE {
            (node, port)
        } else {
            (BrokerId(-1), -1)
        }
    };
    if asked.version() >= 4 {
        let coordinators = request
            .coordinator_keys
            .iter()
            .map(|key| {
                let (error, message) = decide(key);
                let (node, port) = located(error);
                Coordinator::default()
                    .with_key(key.clone())
                    .with_node_id(node)
                    .with_host(host.clone())
                    .with_port(port)
                    .with_error_code(error)
                    .with_error_message(message)
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let (error, message) = decide(&request.key);
    let (node, port) = located(error);
    FindCoordinatorResponse::default()
        .with_error_code(error)
        .with_error_message(message)
        .with_node_id(node)
        .with_host(host)
        .with_port(port)
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::FindCoordinatorRequest;

    use crate::probes::{Probed, text};

    impl Probed for FindCoordinatorRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request =
                FindCoordinatorRequest::default().with_coordinator_keys(vec![text(group)]);
            (4, request)
        }
    }
}
