//! InitProducerId: a new producer id, with epoch 0, for each idempotent producer that asks, as
//! Kafka answers a request without a transactional id (a producer asking with its current id
//! and epoch gets a fresh id too). Ids come from the LogManager's persisted allocator, so none
//! is handed out twice, across restarts included. Transactional producers get
//! UNSUPPORTED_VERSION: there are no transactions (after Kafka's check of WRITE on their
//! transactional id). An idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on
//! some topic (CLUSTER_AUTHORIZATION_FAILED).

use kafka_protocol::messages::{
    InitProducerIdRequest, InitProducerIdResponse, ProducerId, RequestHeader,
};

use crate::authz::{AclOperation, ResourceType};
use crate::session::Session;
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    session: &Session,
    _header: &RequestHeader,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let refused = |code| {
        InitProducerIdResponse::default()
            .with_error_code(code)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    if let Some(id) = &request.transactional_id {
        if !context.access.allows(
            session,
            AclOperation::Write,
            ResourceType::TransactionalId,
            id,
        ) {
            return refused(errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
        }
        return refused(errors::UNSUPPORTED_VERSION);
    }
    // An idempotent producer needs IDEMPOTENT_WRITE on the cluster, or, as Kafka allows
    // instead, WRITE on at least one topic.
    let may_write = context
        .access
        .allows_on_cluster(session, AclOperation::IdempotentWrite)
        || context
            .access
            .allows_on_some(session, AclOperation::Write, ResourceType::Topic);
    if !may_write {
        return refused(errors::CLUSTER_AUTHORIZATION_FAILED);
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
