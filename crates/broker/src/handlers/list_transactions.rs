//! ListTransactions: every transactional id the coordinator holds, with its producer id and
//! state, filtered by state names, producer ids, (v1) how long the transaction has been open and
//! (v2) a pattern the whole id must match; ids the session may not describe are left out, as
//! Kafka does. Unknown state names come back in `unknown_state_filters`. The pattern is a
//! regular expression in the `regex` crate's syntax, which agrees with Java's for the common
//! forms (no look-around or back-references); one that does not compile, or compiles to more
//! than 1 MiB, is INVALID_REGULAR_EXPRESSION.

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{
    ListTransactionsRequest, ListTransactionsResponse, ProducerId, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;

use ferrolog_records::transaction_state::TxnStatus;

use crate::Context;
use crate::authz::Asked;
use crate::authz::{AclOperation, ResourceType};

/// Kafka's INVALID_REGULAR_EXPRESSION.
const INVALID_REGULAR_EXPRESSION: i16 = 128;

/// The most memory a compiled pattern may take.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: ListTransactionsRequest,
) -> ListTransactionsResponse {
    let pattern = match request
        .transactional_id_pattern
        .as_deref()
        .filter(|pattern| asked.version() >= 2 && !pattern.is_empty())
    {
        None => None,
        Some(pattern) => match regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
            .size_limit(PATTERN_SIZE_LIMIT)
            .build()
        {
            Ok(regex) => Some(regex),
            Err(_) => {
                return ListTransactionsResponse::default()
                    .with_error_code(INVALID_REGULAR_EXPRESSION);
            }
        },
    };
    let (known, unknown): (Vec<&StrBytes>, Vec<&StrBytes>) =
        request.state_filters.iter().partition(|name| {
            TxnStatus::ALL
                .iter()
                .any(|state| state.name() == name.as_str())
        });
    let now = context.manager.clock().now_ms();
    let duration =
        (asked.version() >= 1 && request.duration_filter >= 0).then_some(request.duration_filter);
    let states = context
        .transactions
        .list()
        .into_iter()
        .filter(|txn| txn.state != TxnStatus::Dead)
        .filter(|txn| {
            request.producer_id_filters.is_empty()
                || request
                    .producer_id_filters
                    .iter()
                    .any(|id| id.0 == txn.producer_id)
        })
        .filter(|txn| {
            request.state_filters.is_empty()
                || known.iter().any(|name| name.as_str() == txn.state.name())
        })
        .filter(|txn| duration.is_none_or(|duration| now - txn.start_ms > duration))
        .filter(|txn| {
            pattern
                .as_ref()
                .is_none_or(|pattern| pattern.is_match(&txn.transactional_id))
        })
        .filter(|txn| {
            asked.may(
                AclOperation::Describe,
                ResourceType::TransactionalId,
                &txn.transactional_id,
            )
        })
        .map(|txn| {
            TransactionState::default()
                .with_transactional_id(TransactionalId(StrBytes::from_string(txn.transactional_id)))
                .with_producer_id(ProducerId(txn.producer_id))
                .with_transaction_state(StrBytes::from_static_str(txn.state.name()))
        })
        .collect();
    ListTransactionsResponse::default()
        .with_unknown_state_filters(unknown.into_iter().cloned().collect())
        .with_transaction_states(states)
}

#[cfg(test)]
mod tests {
    #[test]
    fn invalid_regular_expression_is_kafka_s_code() {
        assert_eq!(
            super::INVALID_REGULAR_EXPRESSION,
            kafka_protocol::error::ResponseError::InvalidRegularExpression.code()
        );
    }
}
