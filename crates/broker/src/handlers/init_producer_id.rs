//! InitProducerId: a new producer id, with epoch 0, for each idempotent producer that asks, as
//! Kafka answers a request without a transactional id (a producer asking with its current id
//! and epoch gets a fresh id too). Ids come from the LogManager's persisted allocator, so none
//! is handed out twice, across restarts included. Transactional producers get
//! UNSUPPORTED_VERSION: there are no transactions.

use kafka_protocol::messages::{
    InitProducerIdRequest, InitProducerIdResponse, ProducerId, RequestHeader,
};

use crate::{Context, errors};

pub fn handle(
    context: &Context,
    _header: &RequestHeader,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let refused = |code| {
        InitProducerIdResponse::default()
            .with_error_code(code)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    if request.transactional_id.is_some() {
        return refused(errors::UNSUPPORTED_VERSION);
    }
    match context.manager.next_producer_id() {
        Ok(id) => InitProducerIdResponse::default()
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(0),
        Err(error) => {
            tracing::warn!(%error, "no producer id could be reserved");
            refused(errors::COORDINATOR_NOT_AVAILABLE)
        }
    }
}
