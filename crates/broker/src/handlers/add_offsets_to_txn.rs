//! AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the producer's ongoing
//! transaction, so the offsets it commits there (TxnOffsetCommit) get the transaction's marker.
//! Needs WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the
//! group (GROUP_AUTHORIZATION_FAILED), as Kafka checks them.

use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};

use ferrolog_storage::ProducerEpoch;

use crate::authz::Asked;
use crate::group::offsets_topic::OFFSETS_TOPIC;
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    let transactional_id = request.transactional_id.0.as_str();
    let group = request.group_id.0.as_str();
    let code = if transactional_id.is_empty() {
        errors::INVALID_REQUEST
    } else {
        let partition = (OFFSETS_TOPIC.to_owned(), context.groups.partition_of(group));
        let code = context.transactions.add_partitions(
            transactional_id,
            request.producer_id.0,
            ProducerEpoch::new(request.producer_epoch),
            &[partition],
            0,
        );
        super::downgrade_producer_fenced(code, asked.version(), 2)
    };
    AddOffsetsToTxnResponse::default().with_error_code(code)
}

crate::refuse::refused_at_top_level!(AddOffsetsToTxnRequest => AddOffsetsToTxnResponse);

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::{AddOffsetsToTxnRequest, GroupId, ProducerId, TransactionalId};

    use crate::probes::{Probed, text};

    impl Probed for AddOffsetsToTxnRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request = AddOffsetsToTxnRequest::default()
                .with_transactional_id(TransactionalId(text(group)))
                .with_producer_id(ProducerId(0))
                .with_group_id(GroupId(text(group)));
            (3, request)
        }
    }
}
