//! Metadata: this broker, and every requested (or every) topic with its partitions, all led by
//! this node. Requested topics that do not exist are created when auto-creation allows.

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, MetadataRequest, MetadataResponse, RequestHeader, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::{partitions_of, partitions_or_create};
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    header: &RequestHeader,
    request: MetadataRequest,
) -> MetadataResponse {
    let version = header.request_api_version;
    let node = BrokerId(context.manager.node_id());
    let names: Vec<String> = match &request.topics {
        Some(topics) => topics
            .iter()
            .filter_map(|topic| topic.name.as_ref().map(|name| name.0.to_string()))
            .collect(),
        None => {
            let mut all: Vec<String> = context
                .manager
                .logs()
                .into_iter()
                .map(|(tp, _)| tp.topic)
                .collect();
            all.dedup();
            all
        }
    };
    // Before v4 there is no allow_auto_topic_creation field: Kafka creates.
    let allow_create = version < 4 || request.allow_auto_topic_creation;
    let topics = names
        .into_iter()
        .map(|name| {
            let partitions = if request.topics.is_some() {
                partitions_or_create(context, &name, allow_create)
            } else {
                partitions_of(context, &name)
            };
            let error_code = if !errors::is_valid_topic_name(&name) {
                errors::INVALID_TOPIC_EXCEPTION
            } else if partitions.is_empty() {
                errors::UNKNOWN_TOPIC_OR_PARTITION
            } else {
                errors::NONE
            };
            MetadataResponseTopic::default()
                .with_error_code(error_code)
                .with_name(Some(TopicName(StrBytes::from_string(name.clone()))))
                .with_is_internal(name.starts_with("__"))
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|partition| {
                            let mut partition = MetadataResponsePartition::default()
                                .with_partition_index(partition)
                                .with_leader_id(node)
                                .with_replica_nodes(vec![node])
                                .with_isr_nodes(vec![node]);
                            if version >= 7 {
                                partition = partition.with_leader_epoch(0);
                            }
                            partition
                        })
                        .collect(),
                )
        })
        .collect();
    let mut response = MetadataResponse::default()
        .with_brokers(vec![
            MetadataResponseBroker::default()
                .with_node_id(node)
                .with_host(StrBytes::from_string(
                    context.config.advertised_host.clone(),
                ))
                .with_port(i32::from(context.config.advertised_port)),
        ])
        .with_topics(topics);
    if version >= 1 {
        response = response.with_controller_id(node);
    }
    if version >= 2 {
        response = response.with_cluster_id(Some(StrBytes::from_string(
            context.manager.cluster_id().to_owned(),
        )));
    }
    response
}
