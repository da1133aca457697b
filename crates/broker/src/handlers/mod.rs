//! One handler per API, each `fn handle(context, asked, request) -> response` (async ones may
//! wait for other requests). How each runs, and what it needs allowed, is declared in the API
//! table ([`crate::protocol::apis`]): the router checks what the whole request needs before the
//! handler runs, and [`crate::authz::Asked`] (who asks, the request's header) lets the handler
//! check only what its row declares, on each resource the request names.

pub mod acls;
pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod alter_replica_log_dirs;
pub mod alter_share_group_offsets;
pub mod api_versions;
pub mod broker_configs;
pub mod broker_loggers;
pub mod client_metrics_configs;
pub mod client_quotas;
pub mod configs;
pub mod consumer_group_describe;
pub mod consumer_group_heartbeat;
pub mod create_partitions;
pub mod create_topics;
pub mod delegation_tokens;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_share_group_offsets;
pub mod delete_topics;
pub mod describe_cluster;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod describe_producers;
pub mod describe_quorum;
pub mod describe_share_group_offsets;
pub mod describe_topic_partitions;
pub mod describe_transactions;
pub mod elect_leaders;
pub mod end_txn;
pub mod fetch;
pub mod find_coordinator;
mod group_configs;
pub mod heartbeat;
pub mod init_producer_id;
pub mod internal_topics;
pub mod join_group;
pub mod leave_group;
pub mod list_config_resources;
pub mod list_groups;
pub mod list_offsets;
pub mod list_transactions;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod partition_reassignments;
pub mod produce;
mod replica_assignment;
pub mod salvage_request;
pub mod sasl;
pub mod scram_credentials;
pub mod share_acknowledge;
mod share_common;
pub mod share_fetch;
pub mod share_group_describe;
pub mod share_group_heartbeat;
pub mod streams_group_describe;
pub mod streams_group_heartbeat;
pub mod streams_group_topology_description_update;
pub mod sync_group;
pub mod telemetry;
pub mod throttling;
pub mod topic_configs;
pub mod txn_offset_commit;
pub mod update_features;
pub mod write_txn_markers;

use std::sync::Arc;

use ferrolog_storage::TopicPartition;
use ferrolog_storage::log::Log;

use crate::Context;

/// Whether `topic`-`partition` lies in an offline data directory; `any_dir_offline` (looked up
/// once per request) spares the lookup in the usual case that none is.
pub fn in_offline_dir(
    context: &Context,
    any_dir_offline: bool,
    topic: &str,
    partition: i32,
) -> bool {
    any_dir_offline
        && context
            .manager
            .dir_of(&TopicPartition::new(topic, partition))
            .is_some_and(|dir| dir.is_offline())
}

/// Whether KIP-848 consumer groups are served, as Kafka decides it before anything else:
/// `consumer` among `group.coordinator.rebalance.protocols` and `group.version` at least 1.
pub fn consumer_groups_served(context: &Context) -> bool {
    context.groups.consumer_config().enabled
        && context.features.serves(crate::features::GROUP_VERSION)
}

/// Whether streams groups are served: the protocol among `group.coordinator.rebalance.protocols`
/// and `streams.version` at least 1.
pub fn streams_served(context: &Context) -> bool {
    context.groups.streams_enabled() && context.features.serves(crate::features::STREAMS_VERSION)
}

/// The partition's leader epoch, as Metadata and DescribeTopicPartitions describe it: its
/// log's; 0 for a partition without one here.
pub fn leader_epoch_of(context: &Context, topic: &str, partition: i32) -> i32 {
    context
        .manager
        .get(&TopicPartition::new(topic, partition))
        .map_or(0, |log| log.leader_epoch().value())
}

/// Each partition a request names for `topic`, in the request's order, with its log, or `None`
/// where this broker has no such partition (answered UNKNOWN_TOPIC_OR_PARTITION): the lookup
/// every per-partition handler starts with. `index` reads the partition number of a request
/// entry.
pub fn with_logs<'a, P: 'a>(
    context: &'a Context,
    topic: &'a str,
    partitions: impl IntoIterator<Item = P> + 'a,
    index: impl Fn(&P) -> i32 + 'a,
) -> impl Iterator<Item = (P, Option<Arc<Log>>)> + 'a {
    partitions.into_iter().map(move |partition| {
        let log = context
            .manager
            .get(&TopicPartition::new(topic, index(&partition)));
        (partition, log)
    })
}

/// The partitions a topic has on this broker, in order.
pub fn partitions_of(context: &Context, topic: &str) -> Vec<i32> {
    context.manager.partitions_of(topic)
}

/// The topic's partitions, creating the topic with `num.partitions` partitions when it does not
/// exist and auto-creation is allowed. Empty when it does not exist (or cannot be created).
pub fn partitions_or_create(context: &Context, topic: &str, allow_create: bool) -> Vec<i32> {
    let existing = partitions_of(context, topic);
    if !existing.is_empty()
        || !allow_create
        || !context.config.auto_create_topics
        || !crate::errors::is_valid_topic_name(topic)
        // Internal topics are made by the broker, with their own settings.
        || internal_topics::is_internal(topic)
    {
        return existing;
    }
    let all: Vec<TopicPartition> = (0..context.config.num_partitions)
        .map(|partition| TopicPartition::new(topic, partition))
        .collect();
    if let Err(error) = context.manager.create_all(&all) {
        tracing::warn!(topic, %error, "could not create a topic on first use");
        return partitions_of(context, topic);
    }
    tracing::info!(
        topic,
        partitions = context.config.num_partitions,
        "created topic on first use"
    );
    partitions_of(context, topic)
}

/// PRODUCER_FENCED as requests older than `since` know it: INVALID_PRODUCER_EPOCH, as Kafka
/// answers InitProducerId before v4 and AddPartitionsToTxn, AddOffsetsToTxn and EndTxn before v2.
pub fn downgrade_producer_fenced(code: i16, version: i16, since: i16) -> i16 {
    if code == crate::errors::PRODUCER_FENCED && version < since {
        crate::errors::INVALID_PRODUCER_EPOCH
    } else {
        code
    }
}

/// A topic config a client sets, held to Kafka 4.4's minimums beyond what the storage takes
/// (`segment.bytes` at least 1 MiB), refused as Kafka's controller refuses it: INVALID_CONFIG
/// with Kafka's message.
fn kafka_minimum(key: &str, value: &str) -> Result<(), (i16, String)> {
    ferrolog_storage::LogConfig::check_kafka_minimums(key, value).map_err(|error| match error {
        ferrolog_storage::StorageError::InvalidConfig { reason, .. } => (
            crate::errors::INVALID_CONFIG,
            format!("Invalid value {value} for configuration {key}: {reason}"),
        ),
        other => (crate::errors::INVALID_CONFIG, other.to_string()),
    })
}
