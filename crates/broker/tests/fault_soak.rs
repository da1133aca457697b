//! A soak under faults: producers, fetchers and offset commits against a broker whose every
//! background job (retention, flushes, checkpoints, idle rolls, delayed deletion) runs on a
//! short schedule and whose cleaner compacts, while a schedule injects faults into the storage
//! file layer: full-disk writes, index allocations and checkpoint writes without space, and
//! files that cannot be opened for want of descriptors. Afterwards the broker is stopped and
//! its data opened again: every acknowledged record is at its offset, every compacted key's
//! latest acknowledged value (or a later attempt) survived, and every acknowledged commit is
//! what the group reads back. Bounded in time: about ten seconds of load.
//!
//! Needs the `failpoints` feature (`cargo test -p ferrolog-broker --features failpoints`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{Broker, Client};
use ferrolog_broker::BrokerConfig;
use ferrolog_records::{BatchBuilder, EntryIter};
use ferrolog_storage::Offset;
use ferrolog_storage::cleaner::CleanerConfig;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch};
use ferrolog_storage::manager::{BackgroundConfig, LogManager, ManagerConfig};
use ferrolog_storage::{LogConfig, SystemClock, TopicPartition};
use ferrolog_testkit::fetched_records;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, CreateTopicsResponse, FetchRequest, FetchResponse, GroupId,
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

const LOAD_FOR: Duration = Duration::from_secs(10);
const EVENTS: &str = "events";
const KEYED: &str = "keyed";
const EVENT_PARTITIONS: i32 = 4;
const KEYS: usize = 40;
const GROUP: &str = "soak";
const CORRUPT_MESSAGE: i16 = 2;

/// The faults the schedule injects, each for a short while: (point, errno).
const FAULTS: &[(&str, &str)] = &[
    ("log.write", "ENOSPC"),
    ("log.reserve", "ENOSPC"),
    ("index.allocate", "ENOSPC"),
    ("index.mmap", "ENOMEM"),
    ("fs.write", "ENOSPC"),
    ("log.open", "EMFILE"),
    ("log.write", "EDQUOT"),
];

fn manager_config(dirs: &[&Path]) -> ManagerConfig {
    ManagerConfig {
        log_dirs: dirs.iter().map(|dir| dir.to_path_buf()).collect(),
        log_defaults: LogConfig {
            segment_bytes: 32 * 1024,
            segment_age: Duration::from_millis(300),
            index_interval_bytes: 512,
            flush_interval: Some(Duration::from_millis(50)),
            file_delete_delay: Duration::from_millis(20),
            ..LogConfig::default()
        },
        background: BackgroundConfig {
            initial_delay: Duration::ZERO,
            retention_check_interval: Duration::from_millis(40),
            flush_check_interval: Some(Duration::from_millis(20)),
            recovery_point_checkpoint_interval: Duration::from_millis(30),
            log_start_offset_checkpoint_interval: Duration::from_millis(30),
            producer_id_expiration: Duration::from_secs(86_400),
            producer_id_expiration_check_interval: Duration::from_millis(50),
        },
        cleaner: CleanerConfig {
            backoff: Duration::from_millis(30),
            ..CleanerConfig::default()
        },
        ..ManagerConfig::default()
    }
}

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_owned()))
}

fn batch(records: &[(Option<String>, String)]) -> Bytes {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut builder = BatchBuilder::new(0);
    for (key, value) in records {
        builder
            .append(
                now,
                key.as_deref().map(str::as_bytes),
                Some(value.as_bytes()),
                &[],
            )
            .unwrap();
    }
    Bytes::from(builder.build().unwrap())
}

/// Produces one batch to `topic`-`partition`; the base offset when acknowledged.
async fn produce(client: &mut Client, topic: &str, partition: i32, records: Bytes) -> Option<i64> {
    let answer = client.produce(topic, partition, records).await;
    (answer.error_code == 0).then_some(answer.base_offset)
}

/// What the clients were told was done.
#[derive(Debug, Default)]
struct Acknowledged {
    /// (partition, offset) → value of `events`.
    events: BTreeMap<(i32, i64), String>,
    /// key → the values produced for it, in order, with whether each was acknowledged.
    keyed: HashMap<String, Vec<(String, bool)>>,
    /// partition → the last offset committed for it and acknowledged.
    commits: HashMap<i32, i64>,
}

async fn create_topics(client: &mut Client) {
    let response: CreateTopicsResponse = client
        .send(
            ApiKey::CreateTopics,
            5,
            &CreateTopicsRequest::default().with_topics(vec![
                CreatableTopic::default()
                    .with_name(name(EVENTS))
                    .with_num_partitions(EVENT_PARTITIONS)
                    .with_replication_factor(1),
                CreatableTopic::default()
                    .with_name(name(KEYED))
                    .with_num_partitions(1)
                    .with_replication_factor(1)
                    .with_configs(vec![
                        CreatableTopicConfig::default()
                            .with_name(StrBytes::from_static_str("cleanup.policy"))
                            .with_value(Some(StrBytes::from_static_str("compact"))),
                        CreatableTopicConfig::default()
                            .with_name(StrBytes::from_static_str("min.cleanable.dirty.ratio"))
                            .with_value(Some(StrBytes::from_static_str("0.01"))),
                    ]),
            ]),
        )
        .await;
    for topic in &response.topics {
        assert_eq!(topic.error_code, 0, "{topic:?}");
    }
}

/// The records acknowledged, and how many produce requests were refused.
async fn events_producer(
    port: u16,
    id: usize,
    stop: Arc<AtomicBool>,
) -> (Vec<((i32, i64), String)>, usize) {
    let mut client = Client::connect(port).await;
    let mut acknowledged = Vec::new();
    let mut refused = 0;
    let mut round = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let partition = (round % EVENT_PARTITIONS as usize) as i32;
        let values: Vec<String> = (0..5).map(|i| format!("p{id}-r{round}-{i}")).collect();
        let records: Vec<(Option<String>, String)> =
            values.iter().map(|value| (None, value.clone())).collect();
        match produce(&mut client, EVENTS, partition, batch(&records)).await {
            Some(base) => {
                for (index, value) in values.into_iter().enumerate() {
                    acknowledged.push(((partition, base + index as i64), value));
                }
            }
            None => refused += 1,
        }
        round += 1;
    }
    (acknowledged, refused)
}

async fn keyed_producer(port: u16, stop: Arc<AtomicBool>) -> HashMap<String, Vec<(String, bool)>> {
    let mut client = Client::connect(port).await;
    let mut produced: HashMap<String, Vec<(String, bool)>> = HashMap::new();
    let mut round = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let key = format!("key-{}", round % KEYS);
        let value = format!("{key}-v{round}-{}", "x".repeat(100));
        let acknowledged = produce(
            &mut client,
            KEYED,
            0,
            batch(&[(Some(key.clone()), value.clone())]),
        )
        .await
        .is_some();
        produced.entry(key).or_default().push((value, acknowledged));
        round += 1;
    }
    produced
}

async fn committer(port: u16, stop: Arc<AtomicBool>) -> HashMap<i32, i64> {
    let mut client = Client::connect(port).await;
    let mut committed = HashMap::new();
    let mut offset = 0i64;
    while !stop.load(Ordering::Relaxed) {
        let partition = (offset % i64::from(EVENT_PARTITIONS)) as i32;
        let response: OffsetCommitResponse = client
            .send(
                ApiKey::OffsetCommit,
                8,
                &OffsetCommitRequest::default()
                    .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
                    .with_generation_id_or_member_epoch(-1)
                    .with_topics(vec![
                        OffsetCommitRequestTopic::default()
                            .with_name(name(EVENTS))
                            .with_partitions(vec![
                                OffsetCommitRequestPartition::default()
                                    .with_partition_index(partition)
                                    .with_committed_offset(offset),
                            ]),
                    ]),
            )
            .await;
        if response.topics[0].partitions[0].error_code == 0 {
            committed.insert(partition, offset);
        }
        offset += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    committed
}

/// Reads `events` from the start over and over; never sees damage.
async fn fetcher(port: u16, stop: Arc<AtomicBool>) -> usize {
    let mut client = Client::connect(port).await;
    let mut positions = [0i64; EVENT_PARTITIONS as usize];
    let mut fetched = 0;
    while !stop.load(Ordering::Relaxed) {
        let response: FetchResponse = client
            .send(
                ApiKey::Fetch,
                12,
                &FetchRequest::default()
                    .with_max_wait_ms(50)
                    .with_max_bytes(1 << 20)
                    .with_topics(vec![
                        FetchTopic::default()
                            .with_topic(name(EVENTS))
                            .with_partitions(
                                (0..EVENT_PARTITIONS)
                                    .map(|partition| {
                                        FetchPartition::default()
                                            .with_partition(partition)
                                            .with_fetch_offset(positions[partition as usize])
                                            .with_partition_max_bytes(256 * 1024)
                                    })
                                    .collect(),
                            ),
                    ]),
            )
            .await;
        for partition in &response.responses[0].partitions {
            assert_ne!(partition.error_code, CORRUPT_MESSAGE, "a fetch met damage");
            let Some(records) = &partition.records else {
                continue;
            };
            for entry in EntryIter::new(records) {
                let (_, entry) = entry.unwrap();
                entry
                    .validate()
                    .expect("no batch a fetch returns is damaged");
                positions[partition.partition_index as usize] = entry.next_offset();
                fetched += 1;
            }
        }
    }
    fetched
}

/// Injects one fault after another, each for 150 ms, until stopped.
async fn fault_schedule(stop: Arc<AtomicBool>) -> usize {
    let mut injected = 0;
    while !stop.load(Ordering::Relaxed) {
        let (point, errno) = FAULTS[injected % FAULTS.len()];
        fail::cfg(point, &format!("return({errno})")).unwrap();
        tokio::time::sleep(Duration::from_millis(150)).await;
        fail::remove(point);
        tokio::time::sleep(Duration::from_millis(100)).await;
        injected += 1;
    }
    injected
}

/// Every (offset, key, value) of a partition, read straight from the reopened log.
fn stored(manager: &LogManager, topic: &str, partition: i32) -> Vec<(i64, Option<String>, String)> {
    let log = manager.get(&TopicPartition::new(topic, partition)).unwrap();
    let mut out = Vec::new();
    let mut next = log.log_start_offset();
    while next < log.log_end_offset() {
        let bytes = log
            .read(FetchParams {
                start_offset: next,
                max_bytes: 1 << 20,
                bound: FetchBound::LogEnd,
                first_batch: FirstBatch::Whole,
            })
            .unwrap()
            .read_bytes()
            .unwrap();
        let (records, after) = fetched_records(&bytes);
        out.extend(
            records
                .into_iter()
                .filter(|record| record.offset >= next.value())
                .map(|record| {
                    (
                        record.offset,
                        record.key_text(),
                        record.value_text().unwrap(),
                    )
                }),
        );
        next = next.max(Offset::new(
            after.expect("a read below the log end found something"),
        ));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_acknowledged_record_or_commit_is_lost_under_faults_and_background_work() {
    let scenario = fail::FailScenario::setup();
    let temp = tempfile::tempdir().unwrap();
    let (a, b) = (temp.path().join("a"), temp.path().join("b"));
    let broker = Broker::start_with(manager_config(&[&a, &b]), BrokerConfig::default()).await;
    broker.context.manager.start_background().unwrap();
    let mut admin = broker.client().await;
    create_topics(&mut admin).await;

    let stop = Arc::new(AtomicBool::new(false));
    let port = broker.port;
    let producers: Vec<_> = (0..2)
        .map(|id| tokio::spawn(events_producer(port, id, Arc::clone(&stop))))
        .collect();
    let keyed = tokio::spawn(keyed_producer(port, Arc::clone(&stop)));
    let commits = tokio::spawn(committer(port, Arc::clone(&stop)));
    let fetchers: Vec<_> = (0..2)
        .map(|_| tokio::spawn(fetcher(port, Arc::clone(&stop))))
        .collect();
    let faults = tokio::spawn(fault_schedule(Arc::clone(&stop)));
    let started = Instant::now();
    while started.elapsed() < LOAD_FOR {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::Relaxed);

    let mut acknowledged = Acknowledged::default();
    let mut refused = 0;
    for producer in producers {
        let (events, refusals) = producer.await.unwrap();
        acknowledged.events.extend(events);
        refused += refusals;
    }
    acknowledged.keyed = keyed.await.unwrap();
    acknowledged.commits = commits.await.unwrap();
    let fetched: usize = futures_sum(fetchers).await;
    let injected = faults.await.unwrap();
    eprintln!(
        "{} events acknowledged, {refused} produce requests refused, {fetched} batches fetched, {injected} faults injected",
        acknowledged.events.len()
    );
    assert!(injected >= 30, "{injected} faults injected");
    assert!(refused > 0, "the faults refused some produce requests");
    assert!(
        acknowledged.events.len() > 1000,
        "{} events",
        acknowledged.events.len()
    );
    assert!(fetched > 100, "{fetched} batches fetched");
    for dir in broker.context.manager.data_dirs() {
        assert!(
            !dir.is_offline(),
            "none of these faults takes a directory offline"
        );
    }
    drop(admin);
    drop(broker);
    scenario.teardown();

    // Open what is on disk again, as a restarted broker would.
    let manager =
        Arc::new(LogManager::open(manager_config(&[&a, &b]), Arc::new(SystemClock)).unwrap());
    for partition in 0..EVENT_PARTITIONS {
        let stored: HashMap<i64, String> = stored(&manager, EVENTS, partition)
            .into_iter()
            .map(|(offset, _, value)| (offset, value))
            .collect();
        for ((_, offset), value) in acknowledged
            .events
            .range((partition, 0)..(partition + 1, 0))
        {
            assert_eq!(
                stored.get(offset),
                Some(value),
                "events-{partition} lost acknowledged offset {offset}"
            );
        }
    }
    let mut latest: HashMap<String, String> = HashMap::new();
    for (_, key, value) in stored(&manager, KEYED, 0) {
        latest.insert(key.unwrap(), value);
    }
    for (key, attempts) in &acknowledged.keyed {
        let Some(last_acknowledged) = attempts.iter().rposition(|(_, acknowledged)| *acknowledged)
        else {
            continue;
        };
        let value = latest
            .get(key)
            .expect("an acknowledged key survives compaction");
        assert!(
            attempts[last_acknowledged..]
                .iter()
                .any(|(attempt, _)| attempt == value),
            "{key}: kept {value}, but {} was acknowledged last",
            attempts[last_acknowledged].0
        );
    }

    let context = Arc::new(
        ferrolog_broker::Context::new(Arc::clone(&manager), BrokerConfig::default()).unwrap(),
    );
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(name(EVENTS))
                .with_partition_indexes((0..EVENT_PARTITIONS).collect()),
        ]));
    let fetched: OffsetFetchResponse = offset_fetch(&context, &request).await;
    for partition in &fetched.topics[0].partitions {
        if let Some(committed) = acknowledged.commits.get(&partition.partition_index) {
            assert_eq!(
                partition.committed_offset, *committed,
                "the commit acknowledged last for partition {}",
                partition.partition_index
            );
        }
    }
    manager.shutdown().unwrap();
}

async fn futures_sum(handles: Vec<tokio::task::JoinHandle<usize>>) -> usize {
    let mut sum = 0;
    for handle in handles {
        sum += handle.await.unwrap();
    }
    sum
}

/// OffsetFetch through a broker serving the reopened data.
async fn offset_fetch(
    context: &Arc<ferrolog_broker::Context>,
    request: &OffsetFetchRequest,
) -> OffsetFetchResponse {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(ferrolog_broker::serve(listener, Arc::clone(context)));
    let mut client = Client::connect(port).await;
    let response = client.send(ApiKey::OffsetFetch, 6, request).await;
    server.abort();
    response
}
