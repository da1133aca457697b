//! Metadata: this broker, and every requested (or every) topic with its partitions, all led by
//! this node. Requested topics that do not exist are created when auto-creation allows.
//!
//! Authorization as Kafka's: a topic named without DESCRIBE is TOPIC_AUTHORIZATION_FAILED
//! (existing or not); a request for every topic leaves out those the session may not describe;
//! creating on first use needs CREATE on the cluster or the topic.

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use ferrolog_storage::manager::TopicId;
use uuid::Uuid;

use super::internal_topics::is_internal;
use super::{partitions_of, partitions_or_create};
use crate::authz::Asked;
use crate::authz::{AclOperation, CLUSTER_NAME, ResourceType};
use crate::{Context, errors};

pub fn handle(context: &Context, asked: &Asked<'_>, request: MetadataRequest) -> MetadataResponse {
    let version = asked.version();
    let node = BrokerId(context.manager.node_id());
    // Before v4 there is no allow_auto_topic_creation field: Kafka creates.
    let allow_create = version < 4 || request.allow_auto_topic_creation;
    let describable = |name: &str| asked.allows(ResourceType::Topic, name);
    let mut unknown_ids = Vec::new();
    let mut denied = Vec::new();
    let named: Vec<(String, Vec<i32>)> = match &request.topics {
        // Each topic once, however often it is named (as Kafka answers): the answer to a
        // topic is all its partitions, and a request repeating a name must not multiply it.
        // From v10 a topic may be named by its id instead (never created that way).
        Some(topics) => named_topics(
            context,
            asked,
            topics,
            allow_create,
            &mut unknown_ids,
            &mut denied,
        ),
        // Every topic: those the session may not describe are left out.
        None => context
            .manager
            .topics()
            .into_iter()
            .filter(|(name, _)| describable(name))
            .collect(),
    };
    // Which partitions sit in an offline directory is looked up only when one is offline.
    let any_dir_offline = context.manager.offline_dir_count() > 0;
    let mut topics: Vec<MetadataResponseTopic> = named
        .into_iter()
        .map(|(name, partitions)| {
            describe_topic(
                context,
                asked,
                &request,
                version,
                any_dir_offline,
                name,
                partitions,
            )
        })
        .collect();
    topics.extend(denied.into_iter().map(|refused| {
        let topic =
            MetadataResponseTopic::default().with_error_code(errors::TOPIC_AUTHORIZATION_FAILED);
        match refused {
            Refused::Named(name) | Refused::Create(name) => {
                topic.with_name(Some(TopicName(StrBytes::from_string(name))))
            }
            Refused::ById(id) => topic.with_name(None).with_topic_id(id),
        }
    }));
    topics.extend(unknown_ids.into_iter().map(|id| {
        MetadataResponseTopic::default()
            .with_error_code(errors::UNKNOWN_TOPIC_ID)
            .with_name(None)
            .with_topic_id(id)
    }));
    let mut response = MetadataResponse::default()
        .with_brokers(vec![
            MetadataResponseBroker::default()
                .with_node_id(node)
                .with_host(StrBytes::from_string(
                    asked.session().listener().advertised.host.clone(),
                ))
                .with_port(i32::from(asked.session().listener().advertised.port)),
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
    if (8..=10).contains(&version) && request.include_cluster_authorized_operations {
        response = response.with_cluster_authorized_operations(cluster_operations(context, asked));
    }
    response
}

/// The topics a request names, each once, by name or (from v10) by id, created when asked
/// and allowed. Those named without DESCRIBE (or whose creation is not allowed) go to
/// `denied`, ids of no topic to `unknown_ids`.
fn named_topics(
    context: &Context,
    asked: &Asked<'_>,
    topics: &[kafka_protocol::messages::metadata_request::MetadataRequestTopic],
    allow_create: bool,
    unknown_ids: &mut Vec<Uuid>,
    denied: &mut Vec<Refused>,
) -> Vec<(String, Vec<i32>)> {
    let describable = |name: &str| asked.allows(ResourceType::Topic, name);
    let mut seen = std::collections::HashSet::new();
    let mut seen_ids = std::collections::HashSet::new();
    let mut named = Vec::new();
    for topic in topics {
        let (name, by_id) = match &topic.name {
            Some(name) => (name.0.to_string(), None),
            None if !topic.topic_id.is_nil() => {
                let id = TopicId(*topic.topic_id.as_bytes());
                let Some(name) = context.manager.topic_with_id(id) else {
                    if seen_ids.insert(id) {
                        unknown_ids.push(topic.topic_id);
                    }
                    continue;
                };
                (name, Some(topic.topic_id))
            }
            None => continue,
        };
        if !seen.insert(name.clone()) {
            continue;
        }
        // Named without DESCRIBE: refused, existing or not (by id, the id is told back
        // and the name is not).
        if !describable(&name) {
            denied.push(match by_id {
                None => Refused::Named(name),
                Some(id) => Refused::ById(id),
            });
            continue;
        }
        let create = allow_create && by_id.is_none();
        if create && !may_create(context, asked, &name) {
            let partitions = partitions_of(context, &name);
            if partitions.is_empty() && context.config.auto_create_topics {
                denied.push(Refused::Create(name));
            } else {
                named.push((name, partitions));
            }
            continue;
        }
        let partitions = partitions_or_create(context, &name, create);
        named.push((name, partitions));
    }
    named
}

/// The answer for one topic the session may describe: its partitions, id and operations.
fn describe_topic(
    context: &Context,
    asked: &Asked<'_>,
    request: &MetadataRequest,
    version: i16,
    any_dir_offline: bool,
    name: String,
    partitions: Vec<i32>,
) -> MetadataResponseTopic {
    let node = BrokerId(context.manager.node_id());
    let error_code = if !errors::is_valid_topic_name(&name) {
        errors::INVALID_TOPIC_EXCEPTION
    } else if partitions.is_empty() {
        errors::UNKNOWN_TOPIC_OR_PARTITION
    } else {
        errors::NONE
    };
    let mut topic = MetadataResponseTopic::default()
        .with_error_code(error_code)
        .with_name(Some(TopicName(StrBytes::from_string(name.clone()))))
        .with_is_internal(is_internal(&name));
    if version >= 10
        && let Some(id) = context.manager.topic_id(&name)
    {
        topic = topic.with_topic_id(Uuid::from_bytes(id.0));
    }
    if version >= 8 && request.include_topic_authorized_operations {
        topic = topic.with_topic_authorized_operations(
            asked.authorized_operations(ResourceType::Topic, &name),
        );
    }
    topic.with_partitions(
        partitions
            .into_iter()
            .map(|partition| {
                let offline = super::in_offline_dir(context, any_dir_offline, &name, partition);
                let epoch = super::leader_epoch_of(context, &name, partition);
                describe_partition(node, (partition, epoch), offline, version)
            })
            .collect(),
    )
}

/// A topic the answer names with TOPIC_AUTHORIZATION_FAILED.
enum Refused {
    /// Named without DESCRIBE on it.
    Named(String),
    /// Named by id without DESCRIBE on it.
    ById(Uuid),
    /// Missing, to be created on first use, without CREATE.
    Create(String),
}

/// Whether the session may create `topic`: CREATE on the cluster, or on the topic.
pub fn may_create(_context: &Context, asked: &Asked<'_>, topic: &str) -> bool {
    asked.may_on_cluster(AclOperation::Create)
        || asked.may(AclOperation::Create, ResourceType::Topic, topic)
}

/// The cluster's authorized operations as Metadata and DescribeCluster give them: 0 without
/// DESCRIBE on the cluster.
pub fn cluster_operations(_context: &Context, asked: &Asked<'_>) -> i32 {
    if asked.may_on_cluster(AclOperation::Describe) {
        asked.authorized_operations(ResourceType::Cluster, CLUSTER_NAME)
    } else {
        0
    }
}

/// One partition as Kafka describes it: led by this node, or, when its data directory is
/// offline, without a leader (LEADER_NOT_AVAILABLE, leader −1) and with this node among the
/// offline replicas, which is what clients act on: they stop sending it requests and refresh.
fn describe_partition(
    node: BrokerId,
    (partition, leader_epoch): (i32, i32),
    offline: bool,
    version: i16,
) -> MetadataResponsePartition {
    let mut described = MetadataResponsePartition::default()
        .with_partition_index(partition)
        .with_replica_nodes(vec![node])
        .with_isr_nodes(vec![node]);
    described = if offline {
        described
            .with_error_code(errors::LEADER_NOT_AVAILABLE)
            .with_leader_id(BrokerId(-1))
    } else {
        described.with_leader_id(node)
    };
    if version >= 5 && offline {
        described = described.with_offline_replicas(vec![node]);
    }
    if version >= 7 {
        described = described.with_leader_epoch(leader_epoch);
    }
    described
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::{MetadataRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for MetadataRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            let request = MetadataRequest::default()
                .with_topics(Some(vec![
                    MetadataRequestTopic::default().with_name(Some(TopicName(text(topic)))),
                ]))
                .with_allow_auto_topic_creation(false);
            (12, request)
        }
    }
}
