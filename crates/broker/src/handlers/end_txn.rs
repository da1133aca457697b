//! EndTxn (v0–4, transactions v1): commits or aborts the producer's transaction. Needs WRITE on
//! the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED). Answered once the transaction's
//! markers are written and its end recorded (or, when a marker must wait, once its
//! PrepareCommit or PrepareAbort is recorded: the coordinator finishes it).

use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ProducerId, RequestHeader};

use crate::authz::{AclOperation, ResourceType};
use crate::session::Session;
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    session: &Session,
    header: &RequestHeader,
    request: EndTxnRequest,
) -> EndTxnResponse {
    let transactional_id = request.transactional_id.0.as_str();
    let code = if !context.access.allows(
        session,
        AclOperation::Write,
        ResourceType::TransactionalId,
        transactional_id,
    ) {
        errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    } else if transactional_id.is_empty() {
        errors::INVALID_REQUEST
    } else {
        let outcome = context.transactions.end_txn(
            &context.groups,
            transactional_id,
            request.producer_id.0,
            request.producer_epoch,
            request.committed,
        );
        for partition in &outcome.marked {
            context.fetch_waiters.wake(partition);
        }
        super::downgrade_producer_fenced(outcome.answer, header.request_api_version, 2)
    };
    EndTxnResponse::default()
        .with_error_code(code)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1)
}
