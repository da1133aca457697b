//! DescribeQuorum, answered as a single-node KRaft Kafka answers it for its metadata quorum
//! (`__cluster_metadata`, partition 0): this node is the one voter and the leader, with no
//! observers. ferrolog keeps no metadata log, so its leader epoch is 1 (elected once, at its
//! start) and its high watermark and log end offset are unknown (-1), as Kafka says of a log
//! it has not measured; the voter has no directory id and no controller listener, as a Kafka
//! voter under a static `controller.quorum.voters`. A request for any other topic or
//! partition is answered for each of them `UNKNOWN_TOPIC_OR_PARTITION`, as Kafka answers it.
//! Needs DESCRIBE on the cluster.

use kafka_protocol::messages::describe_quorum_response::{PartitionData, ReplicaState, TopicData};
use kafka_protocol::messages::{
    BrokerId, DescribeQuorumRequest, DescribeQuorumResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::authz::Asked;
use crate::{Context, errors};

/// Kafka's metadata topic, the quorum's one partition.
const METADATA_TOPIC: &str = "__cluster_metadata";
/// Kafka's message for a topic or partition its raft client does not hold.
const NOT_HOSTED: &str = "This server does not host this topic-partition.";

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: DescribeQuorumRequest,
) -> DescribeQuorumResponse {
    let version = asked.version();
    let only_metadata = matches!(
        request.topics.as_slice(),
        [topic] if topic.topic_name.0.as_str() == METADATA_TOPIC
            && matches!(topic.partitions.as_slice(), [partition] if partition.partition_index == 0)
    );
    if !only_metadata {
        let topics = request
            .topics
            .iter()
            .map(|topic| {
                let partitions = topic
                    .partitions
                    .iter()
                    .map(|partition| {
                        let answer = PartitionData::default()
                            .with_partition_index(partition.partition_index)
                            .with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION);
                        if version >= 2 {
                            answer.with_error_message(Some(StrBytes::from_static_str(NOT_HOSTED)))
                        } else {
                            answer
                        }
                    })
                    .collect();
                TopicData::default()
                    .with_topic_name(topic.topic_name.clone())
                    .with_partitions(partitions)
            })
            .collect();
        return DescribeQuorumResponse::default().with_topics(topics);
    }
    let node = BrokerId(context.manager.node_id());
    let now = context.manager.clock().now_ms();
    let voter = ReplicaState::default()
        .with_replica_id(node)
        .with_log_end_offset(-1)
        .with_last_fetch_timestamp(now)
        .with_last_caught_up_timestamp(now);
    let partition = PartitionData::default()
        .with_partition_index(0)
        .with_leader_id(node)
        .with_leader_epoch(1)
        .with_high_watermark(-1)
        .with_current_voters(vec![voter]);
    DescribeQuorumResponse::default().with_topics(vec![
        TopicData::default()
            .with_topic_name(TopicName(StrBytes::from_static_str(METADATA_TOPIC)))
            .with_partitions(vec![partition]),
    ])
}

impl crate::refuse::Refuse for DescribeQuorumRequest {
    /// Refused as a whole, with Kafka's text from v2.
    fn refused(&self, version: i16, code: i16) -> DescribeQuorumResponse {
        let response = DescribeQuorumResponse::default().with_error_code(code);
        if version >= 2 && code == errors::CLUSTER_AUTHORIZATION_FAILED {
            response.with_error_message(Some(StrBytes::from_static_str(errors::CLUSTER_REFUSED)))
        } else {
            response
        }
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
    use kafka_protocol::messages::{DescribeQuorumRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for DescribeQuorumRequest {
        fn probe(_topic: &str, _group: &str) -> (i16, Self) {
            let request = DescribeQuorumRequest::default().with_topics(vec![
                TopicData::default()
                    .with_topic_name(TopicName(text(super::METADATA_TOPIC)))
                    .with_partitions(vec![PartitionData::default().with_partition_index(0)]),
            ]);
            (2, request)
        }
    }
}
