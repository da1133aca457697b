//! Requests Kafka refuses, refused the same way: writes to and deletions of records of an
//! internal topic, DeleteRecords offsets outside the log and on compact-only topics; and what
//! ferrolog refuses beyond Kafka, whatever the ACLs: deleting, re-partitioning or un-compacting
//! `__consumer_offsets`, each of which loses every group's committed offsets; and names repeated
//! in one request.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use bytes::Bytes;
use common::{Broker, Client};
use ferrolog_storage::Offset;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
    CreateTopicsResponse, DeleteRecordsRequest, DeleteRecordsResponse, DeleteTopicsRequest,
    DeleteTopicsResponse, DescribeConfigsRequest, DescribeConfigsResponse, DescribeGroupsRequest,
    DescribeGroupsResponse, FindCoordinatorRequest, FindCoordinatorResponse, GroupId,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, MetadataRequest,
    MetadataResponse, OffsetFetchRequest, OffsetFetchResponse, ProduceRequest, ProduceResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;

const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_TOPIC_EXCEPTION: i16 = 17;
const INVALID_CONFIG: i16 = 40;
const INVALID_REQUEST: i16 = 42;
const POLICY_VIOLATION: i16 = 44;
const TOPIC_DELETION_DISABLED: i16 = 73;
const GROUP_ID_NOT_FOUND: i16 = 69;
const OFFSETS: &str = "__consumer_offsets";

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_owned()))
}

async fn create(client: &mut Client, topic: &str, configs: &[(&str, &str)]) {
    let created = client.create_topic(topic, 1, configs).await;
    assert_eq!(created.error_code, 0, "{created:?}");
}

async fn produce(client: &mut Client, topic: &str, count: usize) -> i16 {
    // Stamped now: older records would be deleted by time retention as soon as it runs.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let batch = Bytes::from(ferrolog_testkit::numbered_batch(0, count, now));
    client.produce(topic, 0, batch).await.error_code
}

/// (error, low watermark) of DeleteRecords up to `offset` on partition 0 of `topic`.
async fn delete_records(client: &mut Client, topic: &str, offset: i64) -> (i16, i64) {
    let response: DeleteRecordsResponse = client
        .send(
            ApiKey::DeleteRecords,
            2,
            &DeleteRecordsRequest::default()
                .with_timeout_ms(1000)
                .with_topics(vec![
                    DeleteRecordsTopic::default()
                        .with_name(name(topic))
                        .with_partitions(vec![
                            DeleteRecordsPartition::default()
                                .with_partition_index(0)
                                .with_offset(offset),
                        ]),
                ]),
        )
        .await;
    let partition = &response.topics[0].partitions[0];
    (partition.error_code, partition.low_watermark)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_records_outside_the_log_or_on_a_compacted_topic_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    create(&mut client, "events", &[]).await;
    assert_eq!(produce(&mut client, "events", 10).await, 0);
    assert_eq!(
        delete_records(&mut client, "events", -5).await,
        (OFFSET_OUT_OF_RANGE, -1)
    );
    assert_eq!(
        delete_records(&mut client, "events", 11).await,
        (OFFSET_OUT_OF_RANGE, -1)
    );
    assert_eq!(delete_records(&mut client, "events", 4).await, (0, 4));
    assert_eq!(delete_records(&mut client, "events", -1).await, (0, 10));

    create(&mut client, "compacted", &[("cleanup.policy", "compact")]).await;
    assert_eq!(produce(&mut client, "compacted", 3).await, 0);
    assert_eq!(
        delete_records(&mut client, "compacted", 1).await,
        (POLICY_VIOLATION, -1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_offsets_topic_keeps_its_records_partitions_and_policy() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    let coordinator: FindCoordinatorResponse = client
        .send(
            ApiKey::FindCoordinator,
            3,
            &FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("group")),
        )
        .await;
    assert_eq!(coordinator.error_code, 0);
    let partitions = broker.context.manager.partitions_of(OFFSETS).len();
    assert!(partitions > 0, "the offsets topic exists");

    assert_eq!(
        produce(&mut client, OFFSETS, 1).await,
        INVALID_TOPIC_EXCEPTION
    );
    assert_eq!(
        delete_records(&mut client, OFFSETS, -1).await,
        (INVALID_TOPIC_EXCEPTION, -1)
    );

    for (version, expected) in [(1, INVALID_REQUEST), (5, TOPIC_DELETION_DISABLED)] {
        let deleted: DeleteTopicsResponse = client
            .send(
                ApiKey::DeleteTopics,
                version,
                &DeleteTopicsRequest::default()
                    .with_topic_names(vec![name(OFFSETS)])
                    .with_timeout_ms(1000),
            )
            .await;
        assert_eq!(deleted.responses[0].error_code, expected, "v{version}");
    }

    let repartitioned: CreatePartitionsResponse = client
        .send(
            ApiKey::CreatePartitions,
            3,
            &CreatePartitionsRequest::default()
                .with_timeout_ms(1000)
                .with_topics(vec![
                    CreatePartitionsTopic::default()
                        .with_name(name(OFFSETS))
                        .with_count(partitions as i32 + 5),
                ]),
        )
        .await;
    assert_eq!(repartitioned.results[0].error_code, INVALID_REQUEST);

    // The broker makes its internal topics itself, with their settings.
    let made = client.create_topic("__transaction_state", 1, &[]).await;
    assert_eq!(made.error_code, INVALID_REQUEST, "{made:?}");
    assert!(
        broker
            .context
            .manager
            .partitions_of("__transaction_state")
            .is_empty()
    );

    let altered: IncrementalAlterConfigsResponse = client
        .send(
            ApiKey::IncrementalAlterConfigs,
            1,
            &IncrementalAlterConfigsRequest::default().with_resources(vec![
                AlterConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(StrBytes::from_static_str(OFFSETS))
                    .with_configs(vec![
                        AlterableConfig::default()
                            .with_name(StrBytes::from_static_str("cleanup.policy"))
                            .with_config_operation(0)
                            .with_value(Some(StrBytes::from_static_str("delete"))),
                    ]),
            ]),
        )
        .await;
    assert_eq!(altered.responses[0].error_code, INVALID_CONFIG);

    assert_eq!(
        broker.context.manager.partitions_of(OFFSETS).len(),
        partitions
    );
    assert!(
        broker
            .context
            .manager
            .topic_configs()
            .config(OFFSETS)
            .cleanup_policy
            .compact
    );
}

async fn create_many(client: &mut Client, topics: &[(&str, i32)]) -> CreateTopicsResponse {
    client
        .send(
            ApiKey::CreateTopics,
            5,
            &CreateTopicsRequest::default().with_topics(
                topics
                    .iter()
                    .map(|(topic, partitions)| {
                        CreatableTopic::default()
                            .with_name(name(topic))
                            .with_num_partitions(*partitions)
                            .with_replication_factor(1)
                    })
                    .collect(),
            ),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_are_bounded_per_request_and_in_all() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start_with(
        ferrolog_storage::manager::ManagerConfig {
            log_dirs: vec![temp.path().to_path_buf()],
            max_partitions: 100,
            ..Default::default()
        },
        ferrolog_broker::BrokerConfig {
            num_partitions: 30,
            ..Default::default()
        },
    )
    .await;
    let mut client = broker.client().await;
    let manager = &broker.context.manager;

    // Kafka's per-request limit: the whole request is refused, every topic alike.
    for topics in [vec![("huge", 1_000_000)], vec![("a", 6_000), ("b", 6_000)]] {
        let response = create_many(&mut client, &topics).await;
        for topic in &response.topics {
            assert_eq!(topic.error_code, POLICY_VIOLATION);
            assert_eq!(
                topic.error_message.as_deref(),
                Some("Excessively large number of partitions per request.")
            );
        }
    }
    assert_eq!(manager.partition_count(), 0, "nothing was created");

    // ferrolog.max.partitions: a topic that would pass it is refused before any of it exists.
    let response = create_many(&mut client, &[("first", 60), ("second", 60)]).await;
    assert_eq!(response.topics[0].error_code, 0);
    assert_eq!(response.topics[1].error_code, POLICY_VIOLATION);
    let message = response.topics[1].error_message.as_deref().unwrap();
    assert!(
        message.contains("ferrolog.max.partitions is 100"),
        "{message}"
    );
    assert_eq!(manager.partition_count(), 60);

    let grown: CreatePartitionsResponse = client
        .send(
            ApiKey::CreatePartitions,
            3,
            &CreatePartitionsRequest::default()
                .with_timeout_ms(1000)
                .with_topics(vec![
                    CreatePartitionsTopic::default()
                        .with_name(name("first"))
                        .with_count(101),
                ]),
        )
        .await;
    assert_eq!(grown.results[0].error_code, POLICY_VIOLATION);
    assert_eq!(manager.partition_count(), 60);

    // Creation on first use (num.partitions = 30): one topic fits, the next does not.
    let metadata: MetadataResponse = client
        .send(
            ApiKey::Metadata,
            9,
            &MetadataRequest::default()
                .with_allow_auto_topic_creation(true)
                .with_topics(Some(vec![
                    MetadataRequestTopic::default().with_name(Some(name("auto-1"))),
                    MetadataRequestTopic::default().with_name(Some(name("auto-2"))),
                ])),
        )
        .await;
    assert_eq!(metadata.topics[0].error_code, 0);
    assert_eq!(metadata.topics[0].partitions.len(), 30);
    assert_eq!(metadata.topics[1].error_code, UNKNOWN_TOPIC_OR_PARTITION);
    assert_eq!(manager.partition_count(), 90);
}

/// A partition, group or resource named twice in one request is answered once: the repeats
/// cannot make a small request append, or answer, many times over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_repeated_in_a_request_are_served_once() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    create(&mut client, "twice", &[]).await;

    let batch = || {
        PartitionProduceData::default()
            .with_index(0)
            .with_records(Some(Bytes::from(ferrolog_testkit::numbered_batch(
                0,
                3,
                1_700_000_000_000,
            ))))
    };
    let produced: ProduceResponse = client
        .send(
            ApiKey::Produce,
            9,
            &ProduceRequest::default()
                .with_acks(1)
                .with_timeout_ms(1000)
                .with_topic_data(vec![
                    TopicProduceData::default()
                        .with_name(name("twice"))
                        .with_partition_data(vec![batch(), batch()]),
                    TopicProduceData::default()
                        .with_name(name("twice"))
                        .with_partition_data(vec![batch()]),
                ]),
        )
        .await;
    let codes: Vec<i16> = produced
        .responses
        .iter()
        .flat_map(|topic| topic.partition_responses.iter().map(|p| p.error_code))
        .collect();
    assert_eq!(codes, [0, INVALID_REQUEST, INVALID_REQUEST]);
    let log = broker
        .context
        .manager
        .get(&ferrolog_storage::TopicPartition::new("twice", 0))
        .unwrap();
    assert_eq!(log.log_end_offset(), Offset::new(3), "appended once");

    let described: DescribeConfigsResponse = client
        .send(
            ApiKey::DescribeConfigs,
            4,
            &DescribeConfigsRequest::default().with_resources(vec![
                DescribeConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(StrBytes::from_static_str("twice"))
                    .with_configuration_keys(None);
                2
            ]),
        )
        .await;
    assert_eq!(described.results[0].error_code, 0);
    assert!(!described.results[0].configs.is_empty());
    assert_eq!(described.results[1].error_code, INVALID_REQUEST);
    assert!(described.results[1].configs.is_empty());

    let groups: DescribeGroupsResponse = client
        .send(
            ApiKey::DescribeGroups,
            5,
            &DescribeGroupsRequest::default().with_groups(vec![
                GroupId(StrBytes::from_static_str(
                    "g"
                ));
                3
            ]),
        )
        .await;
    let codes: Vec<i16> = groups.groups.iter().map(|group| group.error_code).collect();
    assert_eq!(codes, [0, INVALID_REQUEST, INVALID_REQUEST]);
    // From version 6 an unknown group is GROUP_ID_NOT_FOUND, with Kafka's message.
    let groups: DescribeGroupsResponse = client
        .send(
            ApiKey::DescribeGroups,
            6,
            &DescribeGroupsRequest::default()
                .with_groups(vec![GroupId(StrBytes::from_static_str("g"))]),
        )
        .await;
    let group = &groups.groups[0];
    assert_eq!(
        (
            group.error_code,
            group.error_message.as_deref(),
            group.group_state.as_str()
        ),
        (GROUP_ID_NOT_FOUND, Some("Group g not found."), "Dead")
    );

    let offsets: OffsetFetchResponse = client
        .send(
            ApiKey::OffsetFetch,
            8,
            &OffsetFetchRequest::default().with_groups(vec![
                OffsetFetchRequestGroup::default()
                    .with_group_id(GroupId(StrBytes::from_static_str("g")))
                    .with_topics(None);
                3
            ]),
        )
        .await;
    let codes: Vec<i16> = offsets
        .groups
        .iter()
        .map(|group| group.error_code)
        .collect();
    assert_eq!(codes, [0, INVALID_REQUEST, INVALID_REQUEST]);

    let metadata: MetadataResponse = client
        .send(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default().with_topics(Some(vec![
                MetadataRequestTopic::default()
                    .with_name(Some(name("twice")));
                4
            ])),
        )
        .await;
    assert_eq!(metadata.topics.len(), 1, "{metadata:?}");
}

/// IncrementalAlterConfigs of `topic`'s `key` to `value`: the resource's (error, message).
async fn alter(client: &mut Client, topic: &str, key: &str, value: &str) -> (i16, String) {
    let set = AlterableConfig::default()
        .with_name(StrBytes::from_string(key.to_owned()))
        .with_config_operation(0)
        .with_value(Some(StrBytes::from_string(value.to_owned())));
    alter_with(client, topic, vec![set]).await
}

/// IncrementalAlterConfigs of `topic` with `configs`: the resource's (error, message).
async fn alter_with(
    client: &mut Client,
    topic: &str,
    configs: Vec<AlterableConfig>,
) -> (i16, String) {
    let altered: IncrementalAlterConfigsResponse = client
        .send(
            ApiKey::IncrementalAlterConfigs,
            1,
            &IncrementalAlterConfigsRequest::default().with_resources(vec![
                AlterConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(StrBytes::from_string(topic.to_owned()))
                    .with_configs(configs),
            ]),
        )
        .await;
    let result = &altered.responses[0];
    (
        result.error_code,
        result.error_message.as_deref().unwrap_or("").to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segments_under_a_mebibyte_are_refused_as_kafka_4_4_refuses_them() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    let kafka_message =
        "Invalid value 100 for configuration segment.bytes: Value must be at least 1048576";
    let refused = client
        .create_topic("tiny", 1, &[("segment.bytes", "100")])
        .await;
    assert_eq!(refused.error_code, INVALID_CONFIG);
    assert_eq!(refused.error_message.as_deref(), Some(kafka_message));
    assert!(
        broker
            .context
            .manager
            .topic_configs()
            .overrides("tiny")
            .is_empty()
    );
    create(&mut client, "normal", &[]).await;
    assert_eq!(
        alter(&mut client, "normal", "segment.bytes", "100").await,
        (INVALID_CONFIG, kafka_message.to_owned())
    );
    assert_eq!(
        alter(&mut client, "normal", "segment.bytes", "1048576")
            .await
            .0,
        0
    );
    // Kafka's key for tests takes small segments, as Kafka 4.4 takes it.
    create(&mut client, "small", &[("internal.segment.bytes", "65536")]).await;
    let log = broker
        .context
        .manager
        .get(&ferrolog_storage::TopicPartition::new("small", 0))
        .unwrap();
    assert_eq!(log.config().segment_size(), 65536);
    // A setting kept from before does not stop other changes.
    assert_eq!(
        alter(&mut client, "small", "retention.ms", "60000").await.0,
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_change_naming_a_key_twice_or_without_a_value_is_refused_whole() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    create(&mut client, "twice", &[]).await;
    let change = |key: &'static str, operation: i8, value: Option<&'static str>| {
        AlterableConfig::default()
            .with_name(StrBytes::from_static_str(key))
            .with_config_operation(operation)
            .with_value(value.map(StrBytes::from_static_str))
    };
    let refusals = [
        (
            vec![
                change("cleanup.policy", 2, Some("compact")),
                change("cleanup.policy", 3, Some("delete")),
            ],
            "Error due to duplicate config keys",
        ),
        (
            vec![change("retention.ms", 0, None)],
            "Null value not supported for : retention.ms",
        ),
    ];
    for (configs, message) in refusals {
        let refused = alter_with(&mut client, "twice", configs).await;
        assert_eq!(refused, (INVALID_REQUEST, message.to_owned()));
    }
    assert!(
        broker
            .context
            .manager
            .topic_configs()
            .overrides("twice")
            .is_empty()
    );
}
