//! InitProducerId: a new producer id, with epoch 0, for each idempotent producer that asks, as
//! Kafka answers a request without a transactional id (a producer asking with its current id
//! and epoch gets a fresh id too). Ids come from the LogManager's persisted allocator, so none
//! is handed out twice, across restarts included. An idempotent producer needs IDEMPOTENT_WRITE
//! on the cluster or WRITE on some topic (CLUSTER_AUTHORIZATION_FAILED).
//!
//! A transactional producer (WRITE on its transactional id, else
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED) gets its id's producer id and a new epoch from the
//! transaction coordinator, which fences (and aborts the transaction of) any earlier producer
//! with the same id. Its expected producer id and epoch (v3+) are both −1 or both set
//! (INVALID_REQUEST otherwise); PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v4.

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use ferrolog_storage::ProducerEpoch;

use crate::authz::Asked;
use crate::authz::{AclOperation, ResourceType};
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let refused = |code| {
        InitProducerIdResponse::default()
            .with_error_code(code)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    if let Some(id) = &request.transactional_id {
        if !asked.may(AclOperation::Write, ResourceType::TransactionalId, id) {
            return refused(errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
        }
        let (producer_id, epoch) = (request.producer_id.0, request.producer_epoch);
        let expected = match (producer_id, epoch) {
            (-1, -1) => None,
            (-1, _) | (_, -1) => return refused(errors::INVALID_REQUEST),
            (producer_id, epoch) => Some((producer_id, ProducerEpoch::new(epoch))),
        };
        if id.is_empty() {
            return refused(errors::INVALID_REQUEST);
        }
        let outcome = context.transactions.init_producer_id(
            &context.groups,
            id,
            request.transaction_timeout_ms,
            expected,
        );
        for partition in &outcome.marked {
            context.fetch_waiters.wake(partition);
        }
        return match outcome.answer {
            Ok((producer_id, epoch)) => InitProducerIdResponse::default()
                .with_producer_id(ProducerId(producer_id))
                .with_producer_epoch(epoch.value()),
            Err(code) => refused(super::downgrade_producer_fenced(code, asked.version(), 4)),
        };
    }
    // An idempotent producer needs IDEMPOTENT_WRITE on the cluster, or, as Kafka allows
    // instead, WRITE on at least one topic.
    let may_write = asked.may_on_cluster(AclOperation::IdempotentWrite)
        || asked.may_on_some(AclOperation::Write, ResourceType::Topic);
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

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::{InitProducerIdRequest, ProducerId};

    use crate::probes::Probed;

    impl Probed for InitProducerIdRequest {
        fn probe(_topic: &str, _group: &str) -> (i16, Self) {
            let request = InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1);
            (4, request)
        }
    }
}
