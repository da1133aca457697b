//! Produce: each partition's records are appended through the LogManager; the log moves its
//! high watermark to the new end in the same step (a single replica). acks=0, 1 and all are
//! answered alike once the append is done (the dispatcher sends nothing for acks=0) and, for a
//! partition whose `flush.messages` it reached, flushed. That flush runs after the handler
//! returns ([`Produced::flush`]), so the connection can append its next produces meanwhile and
//! one fsync acknowledge them all.
//!
//! Authorization as Kafka's: WRITE on the transactional id when the request carries
//! transactional batches (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition otherwise),
//! then WRITE on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions, before anything
//! about the topic is looked up). A transactional batch that starts its producer's transaction
//! in a partition is verified with the transaction coordinator (the partition must have been
//! added to the transaction: INVALID_TXN_STATE otherwise).
//!
//! Transactional batches of more than one producer id and epoch in one request are refused
//! whole (INVALID_PRODUCER_ID_MAPPING on every partition), as Kafka refuses them.
//!
//! A partition named again in the same request is refused with INVALID_REQUEST (Kafka keeps
//! the last and drops the others unanswered); so each partition is appended at most once per
//! request, which bounds what one request can make the broker decompress by the partitions
//! that exist. As in Kafka, a partition's records must be exactly one batch of magic 2
//! (INVALID_RECORD otherwise: a producer's idempotence rests on one batch per partition per
//! request), and `acks` must be -1, 0 or 1 (INVALID_REQUIRED_ACKS on every partition that got
//! that far, nothing appended).

use std::collections::HashSet;
use std::sync::Arc;

use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, RequestHeader};
use kafka_protocol::protocol::StrBytes;

use ferrolog_records::batch::{Attributes, field};
use ferrolog_records::be;
use ferrolog_storage::log::{AppendOrigin, Appended, FlushMode, Log};
use ferrolog_storage::producer::NoTxnCoordinator;
use ferrolog_storage::{StorageError, TopicPartition};

use super::internal_topics;
use crate::authz::Asked;
use crate::authz::{AclOperation, ResourceType};
use crate::txn::VerifyFor;
use crate::{Context, errors};

/// How long a transactions-v2 write waits for its id's previous transaction to finish before
/// it is answered CONCURRENT_TRANSACTIONS (Kafka retries for
/// `add.partitions.to.txn.retry.backoff.max.ms`, 100 ms).
const TV2_RETRY_WINDOW: std::time::Duration = std::time::Duration::from_millis(100);

/// A produce whose appends are done: its response, and the appends that must be flushed
/// before it may be sent (the partition's `flush.messages` reached).
#[derive(Debug)]
pub struct Produced {
    version: i16,
    response: ProduceResponse,
    unflushed: Vec<Unflushed>,
}

/// An append due for a flush, and where its partition's answer is in the response.
#[derive(Debug)]
struct Unflushed {
    topic: usize,
    partition: usize,
    log: Arc<Log>,
    appended: Appended,
}

impl Produced {
    /// Whether the response may be sent now: every append it answers that was due a flush has
    /// had one (by this request or a later one's). Never blocks.
    pub fn is_flushed(&self) -> bool {
        self.unflushed
            .iter()
            .all(|unflushed| unflushed.log.is_flushed(&unflushed.appended))
    }

    /// The response, once every append due for a flush is flushed (blocking: fsyncs). A
    /// partition whose flush failed is answered with the error instead of its offset, as if
    /// its append had failed.
    pub fn flush(mut self) -> ProduceResponse {
        for unflushed in self.unflushed {
            let Err(error) = unflushed.log.flush_appended(&unflushed.appended) else {
                continue;
            };
            tracing::debug!(partition = %unflushed.log.topic_partition(), error = %error, "produce refused: flush failed");
            let answer = &mut self.response.responses[unflushed.topic].partition_responses
                [unflushed.partition];
            *answer = refused(answer.index, self.version, &error);
        }
        self.response
    }

    /// The response as it is, for requests whose appends need no flush (any more).
    pub fn into_response(self) -> ProduceResponse {
        self.response
    }
}

/// The appends done and the flushes due, or `None` when the producer asked for no response
/// (acks=0: flushes are done before returning).
pub fn handle(context: &Context, asked: &Asked<'_>, request: ProduceRequest) -> Option<Produced> {
    let version = asked.version();
    let acks = request.acks;
    // Kafka checks WRITE on the transactional id first when the request carries transactional
    // batches (one without an id is refused alike), answering every partition.
    let denied_transaction = has_transactional_batches(&request)
        && !request
            .transactional_id
            .as_ref()
            .is_some_and(|id| asked.may(AclOperation::Write, ResourceType::TransactionalId, id));
    let several_producers = !denied_transaction && has_several_transactional_producers(&request);
    // A transactions-v2 write adds its partitions to the transaction: it waits (once per
    // request) for the id's previous transaction to finish ending.
    if version >= 12
        && !denied_transaction
        && has_transactional_batches(&request)
        && let Some(id) = request.transactional_id.as_deref()
    {
        context
            .transactions
            .wait_until_settled(id, TV2_RETRY_WINDOW);
    }
    let scope = ProduceScope {
        context,
        header: asked.header(),
        version,
        acks,
        transactional_id: request.transactional_id.as_deref().map(|id| &**id),
    };
    let mut seen = HashSet::new();
    let mut unflushed = Vec::new();
    let responses = request
        .topic_data
        .into_iter()
        .enumerate()
        .map(|(topic_position, topic)| {
            let name = topic.name.0.to_string();
            let denied = if denied_transaction {
                Some(errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            } else if several_producers {
                Some(errors::INVALID_PRODUCER_ID_MAPPING)
            } else if !asked.allows(ResourceType::Topic, &name) {
                // Whether the topic exists or not: the answer does not tell.
                Some(errors::TOPIC_AUTHORIZATION_FAILED)
            } else {
                None
            };
            let partitions = topic
                .partition_data
                .into_iter()
                .enumerate()
                .map(|(partition_position, partition)| {
                    let position = (topic_position, partition_position);
                    if let Some(code) = denied {
                        return unanswered(partition.index).with_error_code(code);
                    }
                    produce_partition(
                        &scope,
                        &name,
                        position,
                        partition,
                        &mut seen,
                        &mut unflushed,
                    )
                })
                .collect();
            TopicProduceResponse::default()
                .with_name(topic.name)
                .with_partition_responses(partitions)
        })
        .collect();
    let produced = Produced {
        version,
        response: ProduceResponse::default().with_responses(responses),
        unflushed,
    };
    if acks == 0 {
        // No response to hold back: the flushes are made before the next request is read.
        produced.flush();
        return None;
    }
    Some(produced)
}

/// A partition's answer before its append: an error's answer has no offset (-1), as Kafka's.
fn unanswered(index: i32) -> PartitionProduceResponse {
    PartitionProduceResponse::default()
        .with_index(index)
        .with_base_offset(-1)
}

/// What every partition of one Produce request shares.
struct ProduceScope<'a> {
    context: &'a Context,
    header: &'a RequestHeader,
    version: i16,
    acks: i16,
    transactional_id: Option<&'a str>,
}

/// Appends one partition's records (the topic already authorized), or says why not. An append
/// whose flush is due is added to `unflushed`, under its (topic, partition) `position` in the
/// request.
fn produce_partition(
    scope: &ProduceScope<'_>,
    name: &str,
    position: (usize, usize),
    partition: kafka_protocol::messages::produce_request::PartitionProduceData,
    seen: &mut HashSet<TopicPartition>,
    unflushed: &mut Vec<Unflushed>,
) -> PartitionProduceResponse {
    let version = scope.version;
    let mut response = unanswered(partition.index);
    let tp = TopicPartition::new(name.to_owned(), partition.index);
    if !seen.insert(tp.clone()) {
        response = response.with_error_code(errors::INVALID_REQUEST);
        if version >= 8 {
            response = response.with_error_message(Some(StrBytes::from_string(format!(
                "partition {tp} appears more than once in the request"
            ))));
        }
        return response;
    }
    let Some(log) = scope.context.manager.get(&tp) else {
        return response.with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION);
    };
    if let Some((code, _)) =
        internal_topics::produce_refusal(name, scope.header.client_id.as_deref())
    {
        // Kafka answers this one without an error message.
        return response.with_error_code(code);
    }
    let records = partition.records.unwrap_or_default();
    if !is_one_batch(&records) {
        // As Kafka, without an error message.
        return response.with_error_code(errors::INVALID_RECORD);
    }
    if !matches!(scope.acks, -1..=1) {
        return response.with_error_code(errors::INVALID_REQUIRED_ACKS);
    }
    let bytes = records.to_vec();
    let appended_bytes = bytes.len() as u64;
    let appended = match scope.transactional_id {
        // A transactional batch that starts the producer's transaction here
        // must belong to it (Kafka's partition verification); from v12 it adds
        // the partition to it, once the id's previous transaction has ended.
        Some(id) => log.append(
            bytes,
            AppendOrigin::Client,
            &scope.context.transactions.verifier(
                id,
                (name.to_owned(), partition.index),
                VerifyFor::Produce { version },
            ),
            FlushMode::Deferred,
        ),
        None => log.append(
            bytes,
            AppendOrigin::Client,
            &NoTxnCoordinator,
            FlushMode::Deferred,
        ),
    };
    match appended {
        Ok(appended) => {
            let info = &appended.info;
            // Fetches waiting on this partition answer now (a retry that wrote
            // nothing wakes them for nothing, and they wait again).
            scope.context.fetch_waiters.wake(&tp);
            crate::metrics::record_produced(name, appended_bytes, info.record_count as u64);
            response = response
                .with_base_offset(info.first_offset.value())
                .with_log_append_time_ms(info.log_append_time_ms);
            if version >= 5 {
                response = response.with_log_start_offset(log.log_start_offset().value());
            }
            if appended.flush_due {
                unflushed.push(Unflushed {
                    topic: position.0,
                    partition: position.1,
                    log,
                    appended,
                });
            }
            response
        }
        Err(error) => {
            tracing::debug!(partition = %tp, error = %error, "produce refused");
            refused(partition.index, version, &error)
        }
    }
}

/// Whether a partition's records are what a Produce request may carry (Kafka's
/// `ProduceRequest.validateRecords`): a whole batch of magic 2, and no second whole batch after
/// it (trailing bytes too short to be one are the log's to refuse, as Kafka leaves them).
fn is_one_batch(records: &[u8]) -> bool {
    let Some(first) = whole_batch_length(records) else {
        return false;
    };
    records.get(field::MAGIC) == Some(&ferrolog_records::batch::MAGIC_V2)
        && whole_batch_length(&records[first..]).is_none()
}

/// The length of the whole batch `bytes` start with (its length field and what it declares),
/// if they hold one.
fn whole_batch_length(bytes: &[u8]) -> Option<usize> {
    if bytes.len() < ferrolog_records::batch::LOG_OVERHEAD {
        return None;
    }
    let declared = usize::try_from(be::i32_at(bytes, field::BATCH_LENGTH)).ok()?;
    let whole = declared.checked_add(ferrolog_records::batch::LOG_OVERHEAD)?;
    (whole <= bytes.len()).then_some(whole)
}

/// A partition's answer when its append, or the flush it was due, failed.
fn refused(index: i32, version: i16, error: &StorageError) -> PartitionProduceResponse {
    let response = PartitionProduceResponse::default()
        .with_index(index)
        .with_base_offset(-1)
        .with_error_code(errors::code_of(error));
    if version >= 8 {
        response.with_error_message(Some(StrBytes::from_string(error.to_string())))
    } else {
        response
    }
}

/// The first batch header of each partition's records (records too short to hold one are
/// left out: the append refuses them later for what they are).
fn first_headers(request: &ProduceRequest) -> impl Iterator<Item = &[u8]> {
    request
        .topic_data
        .iter()
        .flat_map(|topic| &topic.partition_data)
        .filter_map(|partition| partition.records.as_ref())
        .filter_map(|records| records.get(..field::RECORDS))
}

fn is_transactional(header: &[u8]) -> bool {
    Attributes(be::i16_at(header, field::ATTRIBUTES) as u16).is_transactional()
}

/// Whether the first batch of some partition's records is transactional, as Kafka decides it
/// (`RequestUtils.hasTransactionalRecords`).
fn has_transactional_batches(request: &ProduceRequest) -> bool {
    first_headers(request).any(is_transactional)
}

/// Whether the transactional batches name more than one producer id and epoch, which Kafka
/// refuses for the whole request (INVALID_PRODUCER_ID_MAPPING).
fn has_several_transactional_producers(request: &ProduceRequest) -> bool {
    let mut producers = first_headers(request)
        .filter(|header| is_transactional(header))
        .map(|header| {
            (
                be::i64_at(header, field::PRODUCER_ID),
                be::i16_at(header, field::PRODUCER_EPOCH),
            )
        });
    let Some(first) = producers.next() else {
        return false;
    };
    producers.any(|other| other != first)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    /// A batch of one record, as the builder writes it.
    fn batch() -> Vec<u8> {
        let mut builder = ferrolog_records::BatchBuilder::new(0);
        builder.append(0, Some(b"k"), Some(b"v"), &[]).unwrap();
        builder.build().unwrap()
    }

    #[test]
    fn a_partition_carries_exactly_one_whole_batch_of_magic_2() {
        let one = batch();
        assert!(is_one_batch(&one));
        let mut two = one.clone();
        two.extend_from_slice(&one);
        assert!(!is_one_batch(&two), "a second whole batch");
        let mut trailing = one.clone();
        trailing.extend_from_slice(&one[..20]);
        assert!(
            is_one_batch(&trailing),
            "a partial second batch is left to the log"
        );
        assert!(!is_one_batch(&[]), "no batch");
        assert!(!is_one_batch(&one[..one.len() - 1]), "a batch cut short");
        let mut legacy = one.clone();
        legacy[field::MAGIC] = 1;
        assert!(!is_one_batch(&legacy), "magic 1");
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{ProduceRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for ProduceRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            let request = ProduceRequest::default()
                .with_acks(1)
                .with_timeout_ms(5000)
                .with_topic_data(vec![
                    TopicProduceData::default()
                        .with_name(TopicName(text(topic)))
                        .with_partition_data(vec![PartitionProduceData::default()]),
                ]);
            (9, request)
        }
    }
}
