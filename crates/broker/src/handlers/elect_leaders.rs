//! ElectLeaders, answered as a single-node KRaft Kafka's controller answers it: every
//! partition's only replica is its leader, so a preferred or an unclean election is never
//! needed. Each partition asked for is answered `ELECTION_NOT_NEEDED` with Kafka's message, an
//! unknown topic or partition `UNKNOWN_TOPIC_OR_PARTITION` naming it, in request order; asked
//! for every partition (a null list), each topic is listed with no partitions, as Kafka leaves
//! out those that needed no election. Needs ALTER on the cluster.

use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::partitions_of;
use crate::authz::Asked;
use crate::{Context, errors};

/// Kafka's message of `ELECTION_NOT_NEEDED`, which its controller sends.
const NOT_NEEDED: &str = "Leader election not needed for topic partition.";

pub fn handle(
    context: &Context,
    _asked: &Asked<'_>,
    request: ElectLeadersRequest,
) -> ElectLeadersResponse {
    if !(0..=1).contains(&request.election_type) {
        let message = format!("Unknown election type {}", request.election_type);
        return every_partition(&request, errors::INVALID_REQUEST, &message);
    }
    let Some(asked) = &request.topic_partitions else {
        let mut topics = context.manager.topics();
        topics.sort_by(|a, b| a.0.cmp(&b.0));
        let results = topics
            .into_iter()
            .map(|(topic, _)| {
                ReplicaElectionResult::default().with_topic(TopicName(StrBytes::from_string(topic)))
            })
            .collect();
        return ElectLeadersResponse::default().with_replica_election_results(results);
    };
    let results = asked
        .iter()
        .map(|topic| {
            let name = topic.topic.0.as_str();
            let existing = partitions_of(context, name);
            let partitions = topic
                .partitions
                .iter()
                .map(|&partition| {
                    let (code, message) = if existing.is_empty() {
                        (
                            errors::UNKNOWN_TOPIC_OR_PARTITION,
                            format!("No such topic as {name}"),
                        )
                    } else if !existing.contains(&partition) {
                        (
                            errors::UNKNOWN_TOPIC_OR_PARTITION,
                            format!("No such partition as {name}-{partition}"),
                        )
                    } else {
                        (errors::ELECTION_NOT_NEEDED, NOT_NEEDED.to_owned())
                    };
                    PartitionResult::default()
                        .with_partition_id(partition)
                        .with_error_code(code)
                        .with_error_message(Some(StrBytes::from_string(message)))
                })
                .collect();
            ReplicaElectionResult::default()
                .with_topic(topic.topic.clone())
                .with_partition_result(partitions)
        })
        .collect();
    ElectLeadersResponse::default().with_replica_election_results(results)
}

/// The request answered `code` as a whole, and on every partition it names with `message`.
fn every_partition(
    request: &ElectLeadersRequest,
    code: i16,
    message: &str,
) -> ElectLeadersResponse {
    let results = request
        .topic_partitions
        .iter()
        .flatten()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|&partition| {
                    PartitionResult::default()
                        .with_partition_id(partition)
                        .with_error_code(code)
                        .with_error_message(Some(StrBytes::from_string(message.to_owned())))
                })
                .collect();
            ReplicaElectionResult::default()
                .with_topic(topic.topic.clone())
                .with_partition_result(partitions)
        })
        .collect();
    ElectLeadersResponse::default()
        .with_error_code(code)
        .with_replica_election_results(results)
}

impl crate::refuse::Refuse for ElectLeadersRequest {
    /// Refused as a whole (from v1) and on every partition asked for.
    fn refused(&self, _version: i16, code: i16) -> ElectLeadersResponse {
        every_partition(self, code, errors::CLUSTER_REFUSED)
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
    use kafka_protocol::messages::{ElectLeadersRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for ElectLeadersRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            let request = ElectLeadersRequest::default()
                .with_election_type(0)
                .with_topic_partitions(Some(vec![
                    TopicPartitions::default()
                        .with_topic(TopicName(text(topic)))
                        .with_partitions(vec![0]),
                ]));
            (2, request)
        }
    }
}
