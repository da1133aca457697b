//! `move-to-kafka create-topics`: each topic ferrolog holds is created in Kafka with its
//! partition count and overrides, and Kafka is made to create `__consumer_offsets` (by asking
//! for a group coordinator, as a consumer would) and, when ferrolog holds share groups,
//! `__share_group_state` (by asking for a share coordinator, as a broker would), whose
//! partition counts are then checked; then each group's own configs are set in Kafka, and
//! ferrolog's ACLs created there.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use ferrolog_broker::authz::store::MAX_PER_REQUEST;
use ferrolog_broker::authz::{AclBinding, ResourceType};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, CreateAclsRequest, CreateAclsResponse,
    CreateTopicsRequest, CreateTopicsResponse, FindCoordinatorRequest, FindCoordinatorResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, MetadataRequest,
    MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::kafka_connection::KafkaConnection;

const OFFSETS_TOPIC: &str = "__consumer_offsets";
const SHARE_STATE_TOPIC: &str = "__share_group_state";
const TOPIC_ALREADY_EXISTS: i16 = 36;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const SECURITY_DISABLED: i16 = 54;
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
/// The config resource type of a group.
const GROUP_RESOURCE: i8 = 32;
/// Kafka's BROKER config resource type.
const BROKER_RESOURCE: i8 = 4;
const CLIENT_METRICS_RESOURCE: i8 = 16;
/// How long Kafka may take to create a coordinator's topic and elect its leaders.
const OFFSETS_TOPIC_WAIT: Duration = Duration::from_secs(60);

pub fn run(
    log_dirs: &[PathBuf],
    bootstrap_server: &str,
    without_acls: bool,
) -> anyhow::Result<bool> {
    let holdings = super::read_holdings(log_dirs)?;
    let mut kafka = KafkaConnection::open(bootstrap_server, "ferrolog-move-to-kafka")?;
    set_broker_defaults(&mut kafka, &holdings.broker_defaults)?;
    for (topic, partitions, overrides) in &holdings.topics {
        if topic == OFFSETS_TOPIC || topic == SHARE_STATE_TOPIC {
            continue;
        }
        create_topic(&mut kafka, topic, *partitions, overrides)?;
    }
    if let Some((_, partitions, _)) = holdings.topics.iter().find(|t| t.0 == OFFSETS_TOPIC) {
        create_offsets_topic(&mut kafka, *partitions)?;
    }
    if let Some(states) = &holdings.share_states {
        create_share_state_topic(&mut kafka, states.partitions)?;
    }
    set_group_configs(&mut kafka, &holdings.group_configs)?;
    set_configs(
        &mut kafka,
        CLIENT_METRICS_RESOURCE,
        &holdings.subscriptions,
        "client-metrics subscription",
    )?;
    if !holdings.subscriptions.is_empty() {
        println!(
            "made {} client-metrics subscriptions in Kafka",
            holdings.subscriptions.len()
        );
    }
    super::quotas::set_in_kafka(&mut kafka, &holdings.quotas)?;
    // Last: an ACL made earlier could refuse the creation of the topics.
    create_acls(&mut kafka, &holdings.acls, without_acls)?;
    println!(
        "Kafka now holds every topic of {}; stop its brokers and run `ferrolog move-to-kafka copy`.",
        log_dirs
            .iter()
            .map(|dir| dir.display().to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    Ok(true)
}

fn create_topic(
    kafka: &mut KafkaConnection,
    topic: &str,
    partitions: i32,
    overrides: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let configs = overrides
        .iter()
        .map(|(key, value)| {
            CreatableTopicConfig::default()
                .with_name(StrBytes::from_string(key.clone()))
                .with_value(Some(StrBytes::from_string(value.clone())))
        })
        .collect();
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(60_000)
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                .with_num_partitions(partitions)
                // The cluster's default.replication.factor.
                .with_replication_factor(-1)
                .with_configs(configs),
        ]);
    let created: CreateTopicsResponse = kafka.send(ApiKey::CreateTopics, 5, &request)?;
    let Some(result) = created.topics.first() else {
        bail!("Kafka answered CreateTopics for {topic} with no result");
    };
    match result.error_code {
        0 => println!("created {topic} ({partitions} partitions) in Kafka"),
        TOPIC_ALREADY_EXISTS => {
            let existing = partition_count(kafka, topic)?;
            if existing != partitions {
                bail!(
                    "topic {topic} already exists in Kafka with {existing} partitions; ferrolog holds {partitions}"
                );
            }
            println!("{topic} already exists in Kafka with {partitions} partitions");
        }
        code => bail!(
            "Kafka refused to create {topic}: error {code}: {}",
            result.error_message.as_deref().unwrap_or("")
        ),
    }
    Ok(())
}

/// Gives each group its own configs in Kafka (IncrementalAlterConfigs SET on the GROUP), so a
/// consumer group keeps its session timeout and intervals there; setting them twice is
/// harmless.
fn set_group_configs(
    kafka: &mut KafkaConnection,
    groups: &BTreeMap<String, BTreeMap<String, String>>,
) -> anyhow::Result<()> {
    set_configs(kafka, GROUP_RESOURCE, groups, "group")?;
    if !groups.is_empty() {
        println!("set the configs of {} groups in Kafka", groups.len());
    }
    Ok(())
}

/// Sets the topic defaults changed on ferrolog at run time as Kafka's cluster-wide dynamic
/// defaults (BROKER resource, empty name), before any topic is made: a `log.cleanup.policy`
/// or `log.retention.ms` set with `kafka-configs` must not become Kafka's `delete` and 7 days.
/// ferrolog's own values for its node are folded in: they were in force for all its data.
fn set_broker_defaults(
    kafka: &mut KafkaConnection,
    defaults: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    if defaults.is_empty() {
        return Ok(());
    }
    let resources = BTreeMap::from([(String::new(), defaults.clone())]);
    set_configs(kafka, BROKER_RESOURCE, &resources, "broker default")?;
    let keys: Vec<&str> = defaults.keys().map(String::as_str).collect();
    println!(
        "set the topic defaults changed at run time as Kafka's cluster defaults: {}",
        keys.join(", ")
    );
    Ok(())
}

/// IncrementalAlterConfigs SET of each resource's values (of `resource_type`, by name).
fn set_configs(
    kafka: &mut KafkaConnection,
    resource_type: i8,
    resources: &BTreeMap<String, BTreeMap<String, String>>,
    what: &str,
) -> anyhow::Result<()> {
    if resources.is_empty() {
        return Ok(());
    }
    let resources = resources
        .iter()
        .map(|(group, values)| {
            AlterConfigsResource::default()
                .with_resource_type(resource_type)
                .with_resource_name(StrBytes::from_string(group.clone()))
                .with_configs(
                    values
                        .iter()
                        .map(|(key, value)| {
                            AlterableConfig::default()
                                .with_name(StrBytes::from_string(key.clone()))
                                .with_config_operation(0)
                                .with_value(Some(StrBytes::from_string(value.clone())))
                        })
                        .collect(),
                )
        })
        .collect();
    let request = IncrementalAlterConfigsRequest::default().with_resources(resources);
    let altered: IncrementalAlterConfigsResponse =
        kafka.send(ApiKey::IncrementalAlterConfigs, 1, &request)?;
    for response in &altered.responses {
        if response.error_code != 0 {
            bail!(
                "Kafka refused the configs of {what} {:?}: error {}: {}",
                response.resource_name.as_str(),
                response.error_code,
                response.error_message.as_deref().unwrap_or("")
            );
        }
    }
    Ok(())
}

/// Creates ferrolog's ACLs in Kafka, in requests of at most Kafka's 10,000; one Kafka already
/// holds is not made twice (Kafka answers it as created).
fn create_acls(
    kafka: &mut KafkaConnection,
    acls: &[AclBinding],
    without_acls: bool,
) -> anyhow::Result<()> {
    // The cluster's ACLs go last: one could take away the ALTER these requests need, and with
    // more than one request's worth, later requests would then be refused.
    let mut ordered: Vec<&AclBinding> = acls.iter().collect();
    ordered.sort_by_key(|binding| binding.pattern.resource_type == ResourceType::Cluster);
    for chunk in ordered.chunks(MAX_PER_REQUEST) {
        let creations = chunk
            .iter()
            .map(|binding| {
                AclCreation::default()
                    .with_resource_type(binding.pattern.resource_type.code())
                    .with_resource_name(StrBytes::from_string(binding.pattern.name.clone()))
                    .with_resource_pattern_type(binding.pattern.pattern_type.code())
                    .with_principal(StrBytes::from_string(binding.entry.principal.clone()))
                    .with_host(StrBytes::from_string(binding.entry.host.clone()))
                    .with_operation(binding.entry.operation.code())
                    .with_permission_type(binding.entry.permission.code())
            })
            .collect();
        let request = CreateAclsRequest::default().with_creations(creations);
        let created: CreateAclsResponse = kafka.send(ApiKey::CreateAcls, 3, &request)?;
        for (binding, result) in chunk.iter().zip(&created.results) {
            match result.error_code {
                0 => {}
                SECURITY_DISABLED if without_acls => {
                    println!(
                        "Kafka has no authorizer: {} ACLs left behind (--without-acls)",
                        acls.len()
                    );
                    return Ok(());
                }
                SECURITY_DISABLED => bail!(
                    "ferrolog holds {} ACLs and Kafka has no authorizer to take them: set authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer in Kafka (and restart it), or pass --without-acls to move without them",
                    acls.len()
                ),
                code => bail!(
                    "Kafka refused the ACL {binding}: error {code}: {}",
                    result.error_message.as_deref().unwrap_or("")
                ),
            }
        }
    }
    if !acls.is_empty() {
        println!("created {} ACLs in Kafka", acls.len());
    }
    Ok(())
}

fn create_offsets_topic(kafka: &mut KafkaConnection, partitions: i32) -> anyhow::Result<()> {
    let request = FindCoordinatorRequest::default()
        .with_key(StrBytes::from_static_str("ferrolog-move-to-kafka"))
        .with_key_type(0);
    await_coordinator_topic(OFFSETS_TOPIC, || {
        let found: FindCoordinatorResponse = kafka.send(ApiKey::FindCoordinator, 3, &request)?;
        Ok((found.error_code, found.error_message))
    })?;
    check_partition_count(
        kafka,
        OFFSETS_TOPIC,
        partitions,
        "offsets.topic.num.partitions",
    )
}

/// Kafka creates `__share_group_state` when asked for the share coordinator of a key, which
/// names a share partition (`group:topic id:partition`, the topic need not exist); that is
/// asked only of a broker with share groups enabled (the `share.version` feature).
fn create_share_state_topic(kafka: &mut KafkaConnection, partitions: i32) -> anyhow::Result<()> {
    let versions = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("ferrolog-move-to-kafka"))
        .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
    let features: ApiVersionsResponse = kafka.send(ApiKey::ApiVersions, 3, &versions)?;
    let share_version = features
        .finalized_features
        .iter()
        .find(|feature| &*feature.name == "share.version")
        .map_or(0, |feature| feature.max_version_level);
    if share_version < 1 {
        bail!(
            "ferrolog holds share groups, and Kafka has them disabled (feature share.version {share_version}): enable them with `kafka-features --bootstrap-server ... upgrade --feature share.version=1`"
        );
    }
    let request = FindCoordinatorRequest::default()
        .with_key_type(2)
        .with_coordinator_keys(vec![StrBytes::from_static_str(
            "ferrolog-move-to-kafka:AAAAAAAAAAAAAAAAAAAAAA:0",
        )]);
    await_coordinator_topic(SHARE_STATE_TOPIC, || {
        let found: FindCoordinatorResponse = kafka.send(ApiKey::FindCoordinator, 6, &request)?;
        let coordinator = found
            .coordinators
            .into_iter()
            .next()
            .context("Kafka's FindCoordinator answer holds no coordinator")?;
        Ok((coordinator.error_code, coordinator.error_message))
    })?;
    check_partition_count(
        kafka,
        SHARE_STATE_TOPIC,
        partitions,
        "share.coordinator.state.topic.num.partitions",
    )
}

/// Asks (`find`: the error code and message of a FindCoordinator) until Kafka has created a
/// coordinator's `topic` and elected its leaders.
fn await_coordinator_topic(
    topic: &str,
    mut find: impl FnMut() -> anyhow::Result<(i16, Option<StrBytes>)>,
) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        match find()? {
            (0, _) => return Ok(()),
            (COORDINATOR_NOT_AVAILABLE, _) if started.elapsed() < OFFSETS_TOPIC_WAIT => {
                std::thread::sleep(Duration::from_millis(200));
            }
            (CLUSTER_AUTHORIZATION_FAILED, _) => bail!(
                "Kafka did not create {topic}: creating it needs the CLUSTER_ACTION operation on the cluster, which the tool's principal lacks"
            ),
            (code, message) => bail!(
                "Kafka did not create {topic}: FindCoordinator error {code}: {} (a replication factor above the number of brokers keeps it unavailable)",
                message.as_deref().unwrap_or("")
            ),
        }
    }
}

/// A coordinator places its keys by its topic's partition count, so Kafka's must be
/// ferrolog's (`setting` is Kafka's key for the count of a topic it creates).
fn check_partition_count(
    kafka: &mut KafkaConnection,
    topic: &str,
    partitions: i32,
    setting: &str,
) -> anyhow::Result<()> {
    let existing = partition_count(kafka, topic)?;
    if existing != partitions {
        bail!(
            "Kafka's {topic} has {existing} partitions and ferrolog's {partitions}: a group's records live in the partition its key hashes to, so both need the same {setting} (set it in Kafka before {topic} is first created)"
        );
    }
    println!("{topic} exists in Kafka with {partitions} partitions");
    Ok(())
}

fn partition_count(kafka: &mut KafkaConnection, topic: &str) -> anyhow::Result<i32> {
    let request = MetadataRequest::default()
        .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(
            TopicName(StrBytes::from_string(topic.to_owned())),
        ))]))
        .with_allow_auto_topic_creation(false);
    let metadata: MetadataResponse = kafka.send(ApiKey::Metadata, 12, &request)?;
    let described = metadata
        .topics
        .first()
        .with_context(|| format!("Kafka's Metadata answer holds no {topic}"))?;
    if described.error_code != 0 {
        bail!(
            "Kafka's Metadata for {topic}: error {}",
            described.error_code
        );
    }
    Ok(described.partitions.len() as i32)
}
