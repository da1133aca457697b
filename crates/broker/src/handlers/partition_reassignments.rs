//! AlterPartitionReassignments and ListPartitionReassignments on a single node: a partition's
//! only replica is this node, so no reassignment is ever under way. A reassignment to the
//! replicas a partition has is accepted and changes nothing, as Kafka's controller accepts it
//! (`kafka-reassign-partitions` sends one with every move between data directories); any other
//! replica set is INVALID_REPLICA_ASSIGNMENT with Kafka's reason, and a cancellation
//! NO_REASSIGNMENT_IN_PROGRESS. Both need the cluster (ALTER, DESCRIBE), else the whole
//! request is CLUSTER_AUTHORIZATION_FAILED.

use std::collections::HashSet;

use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::partitions_of;
use crate::authz::Asked;
use crate::{Context, errors};

pub fn alter(
    context: &Context,
    asked: &Asked<'_>,
    request: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let response = AlterPartitionReassignmentsResponse::default()
        .with_allow_replication_factor_change(
            asked.version() >= 1 && request.allow_replication_factor_change,
        );
    let node = context.manager.node_id();
    let responses = request
        .topics
        .into_iter()
        .map(|topic| {
            let existing = partitions_of(context, topic.name.0.as_str());
            let partitions = topic
                .partitions
                .into_iter()
                .map(|partition| {
                    let (code, message) = if !existing.contains(&partition.partition_index) {
                        (errors::UNKNOWN_TOPIC_OR_PARTITION, None)
                    } else {
                        judge(node, partition.replicas.as_deref())
                    };
                    ReassignablePartitionResponse::default()
                        .with_partition_index(partition.partition_index)
                        .with_error_code(code)
                        .with_error_message(message.map(StrBytes::from_string))
                })
                .collect();
            ReassignableTopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    response.with_responses(responses)
}

/// Kafka's controller's answer to a reassignment of a partition whose one replica is `node`.
fn judge(node: i32, replicas: Option<&[BrokerId]>) -> (i16, Option<String>) {
    let Some(replicas) = replicas else {
        return (errors::NO_REASSIGNMENT_IN_PROGRESS, None);
    };
    if replicas.is_empty() {
        return (
            errors::INVALID_REPLICA_ASSIGNMENT,
            Some("The manual partition assignment includes an empty replica list.".into()),
        );
    }
    let mut seen = HashSet::new();
    for replica in replicas {
        if !seen.insert(replica.0) {
            return (
                errors::INVALID_REPLICA_ASSIGNMENT,
                Some(format!(
                    "The manual partition assignment includes the broker {} more than once.",
                    replica.0
                )),
            );
        }
        if replica.0 != node {
            return (
                errors::INVALID_REPLICA_ASSIGNMENT,
                Some(format!(
                    "The manual partition assignment includes broker {}, but no such broker is registered.",
                    replica.0
                )),
            );
        }
    }
    (errors::NONE, None)
}

pub fn list(
    _context: &Context,
    _asked: &Asked<'_>,
    _request: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    // Nothing is ever being reassigned on a single node.
    ListPartitionReassignmentsResponse::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_replica_set_a_partition_has_is_accepted() {
        assert_eq!(judge(1, Some(&[BrokerId(1)])), (errors::NONE, None));
        assert_eq!(judge(1, None).0, errors::NO_REASSIGNMENT_IN_PROGRESS);
        for replicas in [
            vec![],
            vec![BrokerId(2)],
            vec![BrokerId(1), BrokerId(1)],
            vec![BrokerId(1), BrokerId(2)],
        ] {
            let (code, message) = judge(1, Some(&replicas));
            assert_eq!(code, errors::INVALID_REPLICA_ASSIGNMENT, "{replicas:?}");
            assert!(message.is_some());
        }
    }
}

crate::refuse::refused_at_top_level!(
    ListPartitionReassignmentsRequest => ListPartitionReassignmentsResponse
);

impl crate::refuse::Refuse for AlterPartitionReassignmentsRequest {
    /// Refused, every partition is answered so too, as Kafka's error response does.
    fn refused(&self, version: i16, code: i16) -> AlterPartitionReassignmentsResponse {
        let responses = self
            .topics
            .iter()
            .map(|topic| {
                let partitions = topic
                    .partitions
                    .iter()
                    .map(|partition| {
                        ReassignablePartitionResponse::default()
                            .with_partition_index(partition.partition_index)
                            .with_error_code(code)
                            .with_error_message(None)
                    })
                    .collect();
                ReassignableTopicResponse::default()
                    .with_name(topic.name.clone())
                    .with_partitions(partitions)
            })
            .collect();
        AlterPartitionReassignmentsResponse::default()
            .with_allow_replication_factor_change(
                version >= 1 && self.allow_replication_factor_change,
            )
            .with_responses(responses)
            .with_error_code(code)
    }
}

/// The requests the authorization tests probe these APIs with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::alter_partition_reassignments_request::{
        ReassignablePartition, ReassignableTopic,
    };
    use kafka_protocol::messages::{
        AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest, TopicName,
    };

    use crate::probes::{Probed, text};

    impl Probed for AlterPartitionReassignmentsRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            // Allowed, it cancels a reassignment neither broker has: NO_REASSIGNMENT_IN_PROGRESS.
            let request = AlterPartitionReassignmentsRequest::default().with_topics(vec![
                ReassignableTopic::default()
                    .with_name(TopicName(text(topic)))
                    .with_partitions(vec![
                        ReassignablePartition::default()
                            .with_partition_index(0)
                            .with_replicas(None),
                    ]),
            ]);
            (0, request)
        }
    }

    impl Probed for ListPartitionReassignmentsRequest {
        fn probe(_topic: &str, _group: &str) -> (i16, Self) {
            (
                0,
                ListPartitionReassignmentsRequest::default().with_topics(None),
            )
        }
    }
}
