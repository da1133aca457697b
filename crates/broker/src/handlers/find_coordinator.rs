//! FindCoordinator: this broker coordinates every group. The first request creates the offsets
//! topic, as Kafka does. Transactions are not served: a transaction coordinator lookup is
//! answered with TRANSACTIONAL_ID_AUTHORIZATION_FAILED and a message saying so, an error
//! clients treat as fatal (a retriable one would leave them retrying until they time out).
//! Versions 0–3 ask for one key, 4 and later for a list.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{
    BrokerId, FindCoordinatorRequest, FindCoordinatorResponse, RequestHeader,
};
use kafka_protocol::protocol::StrBytes;

use crate::{Context, errors};

/// Key type 0 is a group; 1 (transaction) is refused until transactions exist.
const GROUP_KEY_TYPE: i8 = 0;
const TRANSACTION_KEY_TYPE: i8 = 1;
const NO_TRANSACTIONS: &str = "ferrolog does not serve transactions";

pub fn handle(
    context: &Context,
    header: &RequestHeader,
    request: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let node = BrokerId(context.manager.node_id());
    let host = StrBytes::from_string(context.config.advertised_host.clone());
    let port = i32::from(context.config.advertised_port);
    let error = if request.key_type == TRANSACTION_KEY_TYPE {
        errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    } else if request.key_type != GROUP_KEY_TYPE {
        errors::INVALID_REQUEST
    } else {
        match context.groups.find_coordinator() {
            Ok(()) => errors::NONE,
            Err(error) => {
                tracing::warn!(%error, "creating the offsets topic failed");
                errors::COORDINATOR_NOT_AVAILABLE
            }
        }
    };
    let (node, port) = if error == errors::NONE {
        (node, port)
    } else {
        (BrokerId(-1), -1)
    };
    let message = (error == errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        .then(|| StrBytes::from_static_str(NO_TRANSACTIONS));
    if header.request_api_version >= 4 {
        let coordinators = request
            .coordinator_keys
            .into_iter()
            .map(|key| {
                Coordinator::default()
                    .with_key(key)
                    .with_node_id(node)
                    .with_host(host.clone())
                    .with_port(port)
                    .with_error_code(error)
                    .with_error_message(message.clone())
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    FindCoordinatorResponse::default()
        .with_error_code(error)
        .with_error_message(message)
        .with_node_id(node)
        .with_host(host)
        .with_port(port)
}
