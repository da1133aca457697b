//! One handler per API, each `fn handle(context, header, request) -> response`.

pub mod api_versions;
pub mod configs;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_cluster;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod fetch;
pub mod find_coordinator;
pub mod heartbeat;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_groups;
pub mod list_offsets;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod produce;
pub mod sync_group;

use ferrolog_storage::TopicPartition;

use crate::Context;

/// The partitions a topic has on this broker, in order.
pub fn partitions_of(context: &Context, topic: &str) -> Vec<i32> {
    let mut partitions: Vec<i32> = context
        .manager
        .logs()
        .into_iter()
        .filter(|(tp, _)| tp.topic == topic)
        .map(|(tp, _)| tp.partition)
        .collect();
    partitions.sort_unstable();
    partitions
}

/// The topic's partitions, creating the topic with `num.partitions` partitions when it does not
/// exist and auto-creation is allowed. Empty when it does not exist (or cannot be created).
pub fn partitions_or_create(context: &Context, topic: &str, allow_create: bool) -> Vec<i32> {
    let existing = partitions_of(context, topic);
    if !existing.is_empty()
        || !allow_create
        || !context.config.auto_create_topics
        || !crate::errors::is_valid_topic_name(topic)
    {
        return existing;
    }
    for partition in 0..context.config.num_partitions {
        if let Err(error) = context
            .manager
            .get_or_create(&TopicPartition::new(topic, partition))
        {
            tracing::error!(topic, partition, error = %error, "could not create a partition");
        }
    }
    tracing::info!(
        topic,
        partitions = context.config.num_partitions,
        "created topic on first use"
    );
    partitions_of(context, topic)
}
