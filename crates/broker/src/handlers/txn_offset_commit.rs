//! TxnOffsetCommit (v0–5): offsets a transactional producer commits for a group, pending until
//! its transaction ends (from v5, a transactions-v2 client's, the commit adds the group's
//! partition to the transaction itself). Kafka's checks, in its order: WRITE on the transactional id
//! (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition), READ on the group
//! (GROUP_AUTHORIZATION_FAILED), READ on each topic (TOPIC_AUTHORIZATION_FAILED), each partition
//! known (UNKNOWN_TOPIC_OR_PARTITION); then the group's partition must be in the producer's
//! transaction (AddOffsetsToTxn put it there) and the member, if named, current.

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};

use ferrolog_storage::{ProducerEpoch, TopicPartition};

use crate::authz::Asked;
use crate::authz::ResourceType;
use crate::group::offsets_topic::OFFSETS_TOPIC;
use crate::group::{CommitEntry, TxnCommitter};
use crate::txn::VerifyFor;
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let transactional_id = request.transactional_id.0.as_str();
    let group = request.group_id.0.as_str();
    let refusals = refusals(context, asked, &request);
    let entries = accepted_entries(&request, &refusals);
    let mut results = if entries.is_empty() {
        Vec::new()
    } else {
        let offsets_partition = (OFFSETS_TOPIC.to_owned(), context.groups.partition_of(group));
        let verifier = context.transactions.verifier(
            transactional_id,
            offsets_partition,
            VerifyFor::TxnOffsetCommit {
                version: asked.version(),
            },
        );
        context.groups.commit_transactional(
            group,
            (
                request.producer_id.0,
                ProducerEpoch::new(request.producer_epoch),
            ),
            TxnCommitter {
                generation: request.generation_id,
                member_id: &request.member_id,
                group_instance_id: request.group_instance_id.as_deref(),
            },
            &entries,
            &verifier,
        )
    }
    .into_iter();
    let topics = request
        .topics
        .into_iter()
        .zip(refusals)
        .map(|(topic, refusals)| {
            let partitions = topic
                .partitions
                .iter()
                .zip(refusals)
                .map(|(partition, refusal)| {
                    let error = match refusal {
                        Some(code) => code,
                        None => results.next().unwrap_or_default(),
                    };
                    TxnOffsetCommitResponsePartition::default()
                        .with_partition_index(partition.partition_index)
                        .with_error_code(error)
                })
                .collect();
            TxnOffsetCommitResponseTopic::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    TxnOffsetCommitResponse::default().with_topics(topics)
}

/// Each partition's refusal, in the request's order, or `None` for those to commit: Kafka's
/// checks in its order (the transactional id and the group, checked before the handler runs,
/// then the topic, the partition).
fn refusals(
    context: &Context,
    asked: &Asked<'_>,
    request: &TxnOffsetCommitRequest,
) -> Vec<Vec<Option<i16>>> {
    request
        .topics
        .iter()
        .map(|topic| {
            let name = topic.name.0.as_str();
            let topic_refusal = asked.refusal(ResourceType::Topic, name);
            topic
                .partitions
                .iter()
                .map(|partition| {
                    topic_refusal.or_else(|| {
                        let known = context
                            .manager
                            .get(&TopicPartition::new(name, partition.partition_index))
                            .is_some();
                        (!known).then_some(errors::UNKNOWN_TOPIC_OR_PARTITION)
                    })
                })
                .collect()
        })
        .collect()
}

/// The commits of the partitions not refused.
fn accepted_entries(
    request: &TxnOffsetCommitRequest,
    refusals: &[Vec<Option<i16>>],
) -> Vec<CommitEntry> {
    request
        .topics
        .iter()
        .zip(refusals)
        .flat_map(|(topic, refusals)| {
            topic
                .partitions
                .iter()
                .zip(refusals)
                .filter(|(_, refusal)| refusal.is_none())
                .map(|(partition, _)| CommitEntry {
                    topic: topic.name.0.to_string(),
                    partition: partition.partition_index,
                    offset: partition.committed_offset,
                    leader_epoch: partition.committed_leader_epoch,
                    metadata: partition
                        .committed_metadata
                        .as_deref()
                        .unwrap_or_default()
                        .to_owned(),
                })
        })
        .collect()
}

impl crate::refuse::Refuse for TxnOffsetCommitRequest {
    /// Every partition is answered with the refusal.
    fn refused(&self, _version: i16, code: i16) -> TxnOffsetCommitResponse {
        let topics = self
            .topics
            .iter()
            .map(|topic| {
                let partitions = topic
                    .partitions
                    .iter()
                    .map(|partition| {
                        TxnOffsetCommitResponsePartition::default()
                            .with_partition_index(partition.partition_index)
                            .with_error_code(code)
                    })
                    .collect();
                TxnOffsetCommitResponseTopic::default()
                    .with_name(topic.name.clone())
                    .with_partitions(partitions)
            })
            .collect();
        TxnOffsetCommitResponse::default().with_topics(topics)
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::txn_offset_commit_request::{
        TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{
        GroupId, ProducerId, TopicName, TransactionalId, TxnOffsetCommitRequest,
    };

    use crate::probes::{Probed, text};

    impl Probed for TxnOffsetCommitRequest {
        fn probe(topic: &str, group: &str) -> (i16, Self) {
            let request = TxnOffsetCommitRequest::default()
                .with_transactional_id(TransactionalId(text(group)))
                .with_group_id(GroupId(text(group)))
                .with_producer_id(ProducerId(0))
                .with_generation_id(-1)
                .with_topics(vec![
                    TxnOffsetCommitRequestTopic::default()
                        .with_name(TopicName(text(topic)))
                        .with_partitions(vec![TxnOffsetCommitRequestPartition::default()]),
                ]);
            (3, request)
        }
    }
}
