//! EndTxn: commits or aborts the producer's transaction, as transactions v1 (v0–4) or v2 (v5:
//! the epoch bumps with every end, and the answer carries the producer id and epoch to go on
//! with). Needs WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED). Answered
//! once the transaction's markers are written and its end recorded (or, when a marker must wait,
//! once its PrepareCommit or PrepareAbort is recorded: the coordinator finishes it).

use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ProducerId};

use ferrolog_storage::ProducerEpoch;

use crate::authz::Asked;
use crate::{Context, errors};

pub fn handle(context: &Context, asked: &Asked<'_>, request: EndTxnRequest) -> EndTxnResponse {
    let transactional_id = request.transactional_id.0.as_str();
    let version = asked.version();
    let refused = |code| refused(code);
    if transactional_id.is_empty() {
        return refused(errors::INVALID_REQUEST);
    }
    let outcome = context.transactions.end_txn(
        &context.groups,
        transactional_id,
        (
            request.producer_id.0,
            ProducerEpoch::new(request.producer_epoch),
        ),
        request.committed,
        version >= 5,
    );
    for partition in &outcome.marked {
        context.fetch_waiters.wake(partition);
    }
    let answer = outcome.answer;
    if answer.code != errors::NONE {
        return refused(super::downgrade_producer_fenced(answer.code, version, 2));
    }
    EndTxnResponse::default()
        .with_producer_id(ProducerId(answer.producer_id))
        .with_producer_epoch(answer.epoch.value())
}

fn refused(code: i16) -> EndTxnResponse {
    EndTxnResponse::default()
        .with_error_code(code)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1)
}

impl crate::refuse::Refuse for EndTxnRequest {
    fn refused(&self, _version: i16, code: i16) -> EndTxnResponse {
        refused(code)
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::{EndTxnRequest, ProducerId, TransactionalId};

    use crate::probes::{Probed, text};

    impl Probed for EndTxnRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request = EndTxnRequest::default()
                .with_transactional_id(TransactionalId(text(group)))
                .with_producer_id(ProducerId(0))
                .with_committed(true);
            (3, request)
        }
    }
}
