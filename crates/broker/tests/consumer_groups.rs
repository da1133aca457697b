//! The group coordinator without a network: Kafka's own `__consumer_offsets` records load (the
//! LDI-POC fixture's group), the rebalance protocol moves through Kafka's states on a manual
//! clock, and heavy commit traffic leaves the compacted offsets topic bounded on disk.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use ferrolog_broker::group::state::{JoinResult, SyncResult};
use ferrolog_broker::group::{CommitEntry, GroupConfig, GroupCoordinator, JoinRequest, Reply};
use ferrolog_broker::session::Session;
use ferrolog_broker::{BrokerConfig, Context, dispatch, errors};
use ferrolog_records::consumer_offsets::{GroupValue, OffsetValue, OffsetsKey};
use ferrolog_storage::Offset;
use ferrolog_storage::cleaner::offset_map::OffsetMap;
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{ManualClock, SystemClock};
use ferrolog_testkit::{copy_to_temp, kafka_fixtures};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::{
    ApiKey, GroupId, OffsetFetchRequest, OffsetFetchResponse, RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

const PEER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 9);

fn open_manager(dir: &std::path::Path, clock: Arc<dyn ferrolog_storage::Clock>) -> Arc<LogManager> {
    let config = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        ..ManagerConfig::default()
    };
    Arc::new(LogManager::open(config, clock).unwrap())
}

/// Sends one OffsetFetch through the dispatcher and decodes the answer.
async fn offset_fetch(context: &Arc<Context>, version: i16, group: &str) -> OffsetFetchResponse {
    let mut request = OffsetFetchRequest::default();
    if version >= 8 {
        request.groups = vec![
            OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
                .with_topics(None),
        ];
    } else {
        request.group_id = GroupId(StrBytes::from_string(group.to_owned()));
        request.topics = None;
    }
    let mut frame = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(ApiKey::OffsetFetch as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .encode(
            &mut frame,
            ApiKey::OffsetFetch.request_header_version(version),
        )
        .unwrap();
    request.encode(&mut frame, version).unwrap();
    let checked = ferrolog_broker::frame_shape::scan(frame.freeze()).unwrap();
    let response = dispatch::dispatch(
        context,
        checked,
        &Arc::new(Session::anonymous(
            PEER,
            Arc::new(ferrolog_broker::listener::Listener::plaintext(
                "127.0.0.1",
                9092,
            )),
        )),
    )
    .await
    .unwrap()
    .into_response()
    .await
    .unwrap()
    .unwrap();
    let mut bytes = BytesMut::new();
    for chunk in response.chunks {
        match chunk {
            ferrolog_broker::response::Chunk::Encoded(encoded) => bytes.extend_from_slice(&encoded),
            ferrolog_broker::response::Chunk::File(_) => panic!("no file regions in OffsetFetch"),
        }
    }
    let mut body = Bytes::from(bytes).split_off(4);
    ResponseHeader::decode(
        &mut body,
        ApiKey::OffsetFetch.response_header_version(version),
    )
    .unwrap();
    OffsetFetchResponse::decode(&mut body, version).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kafka_data_dir_s_committed_offsets_load() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let copy = copy_to_temp(&fixtures.join("LDI-POC"));
    let manager = open_manager(copy.path(), Arc::new(SystemClock));
    let context = Arc::new(Context::new(Arc::clone(&manager), BrokerConfig::default()).unwrap());
    // What LDI-POC's SOURCE.txt lists for group DEVSmileCDR: the latest commit of each partition.
    let expected = BTreeMap::from([
        ("Retry.TestTopicPatient".to_owned(), 0),
        ("TestTopicPatient".to_owned(), 3),
        (
            "batch2.work.notification.SHR_PROD.persistence".to_owned(),
            0,
        ),
        ("subscription.matching.SHR_PROD.persistence".to_owned(), 0),
    ]);

    let classic = offset_fetch(&context, 5, "DEVSmileCDR").await;
    assert_eq!(classic.error_code, 0);
    let found: BTreeMap<String, i64> = classic
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.0.to_string(), p.committed_offset))
        })
        .collect();
    assert_eq!(found, expected);

    let batched = offset_fetch(&context, 8, "DEVSmileCDR").await;
    let found: BTreeMap<String, i64> = batched.groups[0]
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.0.to_string(), p.committed_offset))
        })
        .collect();
    assert_eq!(found, expected);

    // The group itself came back from its metadata record, with no members left.
    let description = context.groups.describe("DEVSmileCDR").unwrap();
    assert_eq!(description.protocol_type, "consumer");
    manager.shutdown().unwrap();
}

fn join_request(group: &str, member_id: &str, protocols: &[&str]) -> JoinRequest {
    JoinRequest {
        group: group.into(),
        member_id: member_id.into(),
        group_instance_id: None,
        client_id: "test".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: protocols.iter().map(|p| (p.to_string(), vec![1])).collect(),
        require_known_member_id: true,
        supports_skip_assignment: true,
    }
}

fn now_join(reply: Reply<JoinResult>) -> JoinResult {
    match reply {
        Reply::Now(result) => result,
        Reply::Later(_) => panic!("expected an immediate answer"),
    }
}

async fn later<T>(reply: Reply<T>) -> T {
    match reply {
        Reply::Now(_) => panic!("expected to wait for the rebalance"),
        Reply::Later(receiver) => receiver.await.unwrap(),
    }
}

fn sync_now(reply: Reply<SyncResult>) -> SyncResult {
    match reply {
        Reply::Now(result) => result,
        Reply::Later(_) => panic!("expected an immediate answer"),
    }
}

#[tokio::test]
async fn members_join_sync_heartbeat_and_expire_through_kafka_s_states() {
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let manager = open_manager(temp.path(), clock.clone());
    let config = GroupConfig {
        initial_rebalance_delay: Duration::from_secs(3),
        offsets_topic_partitions: 3,
        ..GroupConfig::default()
    };
    let coordinator = GroupCoordinator::open(Arc::clone(&manager), config.clone()).unwrap();
    coordinator.find_coordinator().unwrap();

    // A new dynamic member is sent away for an id first (JoinGroup v4+).
    let first = now_join(coordinator.join(join_request("g", "", &["range"])));
    assert_eq!(first.error, errors::MEMBER_ID_REQUIRED);
    let a = first.member_id;
    // With that id it waits: the first rebalance of an empty group holds for the initial delay.
    let a_join = coordinator.join(join_request("g", &a, &["range", "roundrobin"]));
    let Reply::Later(mut a_waiting) = a_join else {
        panic!("the join must wait for the initial delay")
    };
    coordinator.tick();
    assert!(
        a_waiting.try_recv().is_err(),
        "still inside the initial delay"
    );
    clock.advance_ms(3_000);
    coordinator.tick();
    let joined = a_waiting.await.unwrap();
    assert_eq!((joined.error, joined.generation), (0, 1));
    assert_eq!(joined.leader, a);
    assert_eq!(joined.protocol.as_deref(), Some("range"));
    assert_eq!(joined.members.len(), 1, "the leader gets the members");

    // The leader's SyncGroup completes the generation.
    let synced = later(coordinator.sync(
        "g",
        (&a, None),
        1,
        (None, None),
        vec![(a.clone(), b"all".to_vec())],
    ))
    .await;
    assert_eq!(
        (synced.error, synced.assignment.as_slice()),
        (0, &b"all"[..])
    );
    assert_eq!(coordinator.heartbeat("g", &a, None, 1), errors::NONE);
    assert_eq!(
        coordinator.heartbeat("g", &a, None, 0),
        errors::ILLEGAL_GENERATION
    );
    assert_eq!(
        coordinator.heartbeat("g", "nobody", None, 1),
        errors::UNKNOWN_MEMBER_ID
    );

    // A second member starts a rebalance; the first learns it from its heartbeat and rejoins.
    let b = now_join(coordinator.join(join_request("g", "", &["roundrobin", "range"]))).member_id;
    let b_join = coordinator.join(join_request("g", &b, &["roundrobin", "range"]));
    assert_eq!(
        coordinator.heartbeat("g", &a, None, 1),
        errors::REBALANCE_IN_PROGRESS
    );
    let a_join = coordinator.join(join_request("g", &a, &["range", "roundrobin"]));
    let (a_result, b_result) = (later(a_join).await, later(b_join).await);
    assert_eq!((a_result.generation, b_result.generation), (2, 2));
    assert_eq!(a_result.leader, a, "the leader stays the leader");
    assert_eq!(a_result.members.len(), 2);
    assert!(
        b_result.members.is_empty(),
        "followers do not get the member list"
    );
    // A follower's sync waits for the leader's.
    let b_sync = coordinator.sync("g", (&b, None), 2, (None, None), vec![]);
    let assignments = vec![(a.clone(), b"p0".to_vec()), (b.clone(), b"p1".to_vec())];
    let a_sync = coordinator.sync("g", (&a, None), 2, (None, None), assignments);
    assert_eq!(later(b_sync).await.assignment, b"p1");
    assert_eq!(later(a_sync).await.assignment, b"p0");
    assert_eq!(
        sync_now(coordinator.sync("g", (&b, None), 2, (None, None), vec![])).assignment,
        b"p1",
        "a Stable group answers a sync at once"
    );

    // Standalone commits are refused while the group has members; members commit.
    let entry = CommitEntry {
        topic: "t".into(),
        partition: 0,
        offset: 42,
        leader_epoch: -1,
        metadata: String::new(),
    };
    assert_eq!(
        coordinator.commit("g", 8, -1, "", None, None, std::slice::from_ref(&entry)),
        vec![errors::UNKNOWN_MEMBER_ID]
    );
    assert_eq!(
        coordinator.commit("g", 8, 2, &b, None, None, std::slice::from_ref(&entry)),
        vec![errors::NONE]
    );

    // b goes silent: after its session timeout it is removed and a rebalances alone.
    clock.advance_ms(5_000);
    assert_eq!(coordinator.heartbeat("g", &a, None, 2), errors::NONE);
    clock.advance_ms(5_001);
    coordinator.tick();
    assert_eq!(
        coordinator.describe("g").unwrap().state,
        "PreparingRebalance"
    );
    assert_eq!(
        coordinator.heartbeat("g", &a, None, 2),
        errors::REBALANCE_IN_PROGRESS
    );
    let alone = later(coordinator.join(join_request("g", &a, &["range"]))).await;
    assert_eq!(alone.generation, 3);
    assert_eq!(alone.members.len(), 1);

    // a leaves: the group empties (a new generation, no members) and can then be deleted.
    let (error, per_member) = coordinator.leave("g", &[(a.clone(), None)]);
    assert_eq!((error, per_member), (errors::NONE, vec![errors::NONE]));
    let description = coordinator.describe("g").unwrap();
    assert_eq!((description.state, description.members.len()), ("Empty", 0));

    // Everything written survives a reload from the offsets topic.
    drop(coordinator);
    let reloaded = GroupCoordinator::open(Arc::clone(&manager), config).unwrap();
    let offsets = reloaded.fetch_offsets("g", None);
    assert_eq!(offsets.len(), 1);
    assert_eq!(offsets[0].2.as_ref().map(|v| v.offset), Some(42));
    assert_eq!(reloaded.describe("g").unwrap().state, "Empty");
    assert_eq!(reloaded.delete_group("g"), errors::NONE);
    assert!(reloaded.fetch_offsets("g", None).is_empty());
    drop(reloaded);
    let after_delete =
        GroupCoordinator::open(Arc::clone(&manager), GroupConfig::default()).unwrap();
    assert!(
        after_delete.describe("g").is_none(),
        "the deletion was stored"
    );
    manager.shutdown().unwrap();
}

#[test]
fn the_offsets_topic_stays_bounded_under_commit_traffic() {
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let manager = open_manager(temp.path(), clock.clone());
    let segment_bytes = 64 * 1024;
    let config = GroupConfig {
        offsets_topic_partitions: 3,
        offsets_topic_segment_bytes: segment_bytes,
        ..GroupConfig::default()
    };
    let coordinator = GroupCoordinator::open(Arc::clone(&manager), config.clone()).unwrap();
    coordinator.find_coordinator().unwrap();
    let cleaner = manager.new_cleaner();
    let mut map = OffsetMap::new(1 << 20, 0.9);

    // Ten standalone groups commit five partitions each every 100 ms for 10 minutes of clock
    // time; the cleaner runs every 10 seconds of it.
    let groups: Vec<String> = (0..10).map(|i| format!("group-{i}")).collect();
    let mut written = 0u64;
    for round in 0..6_000i64 {
        for group in &groups {
            let entries: Vec<CommitEntry> = (0..5)
                .map(|partition| CommitEntry {
                    topic: "orders".into(),
                    partition,
                    offset: round * 10 + i64::from(partition),
                    leader_epoch: -1,
                    metadata: String::new(),
                })
                .collect();
            let results = coordinator.commit(group, 8, -1, "", None, None, &entries);
            assert!(
                results.iter().all(|code| *code == errors::NONE),
                "{results:?}"
            );
            written += 5;
        }
        clock.advance_ms(100);
        if round % 100 == 99 {
            while cleaner.clean_once(&mut map) {}
        }
    }
    let on_disk: u64 = manager
        .logs()
        .iter()
        .filter(|(tp, _)| tp.topic == "__consumer_offsets")
        .map(|(_, log)| log.size_in_bytes())
        .sum();
    // Each partition holds at most its active segment plus the compacted rest (50 live keys).
    let bound = config.offsets_topic_partitions as u64 * 2 * segment_bytes;
    assert!(
        on_disk <= bound,
        "{on_disk} bytes on disk after {written} commits; bound {bound}"
    );
    assert!(
        written * 60 > 20 * bound,
        "the traffic is far larger than what stays"
    );
    println!(
        "{written} offset commits (~{} KiB of records) left {on_disk} bytes on disk (bound {bound})",
        written * 60 / 1024
    );

    // Every group's latest offsets survive a reload.
    drop(coordinator);
    let reloaded = GroupCoordinator::open(Arc::clone(&manager), config).unwrap();
    for group in &groups {
        let offsets = reloaded.fetch_offsets(group, None);
        let latest: Vec<i64> = offsets
            .iter()
            .map(|(_, _, value)| value.as_ref().unwrap().offset)
            .collect();
        assert_eq!(
            latest,
            vec![59_990, 59_991, 59_992, 59_993, 59_994],
            "{group}"
        );
    }
    manager.shutdown().unwrap();
}

#[test]
fn kafka_s_offsets_topic_records_re_encode_to_the_same_bytes() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let copy = copy_to_temp(&fixtures.join("LDI-POC"));
    let manager = open_manager(copy.path(), Arc::new(SystemClock));
    let log = manager
        .get(&ferrolog_storage::TopicPartition::new(
            "__consumer_offsets",
            6,
        ))
        .unwrap();
    let bytes = log
        .read(ferrolog_storage::log::FetchParams {
            start_offset: Offset::ZERO,
            max_bytes: u64::MAX,
            bound: ferrolog_storage::log::FetchBound::LogEnd,
            first_batch: ferrolog_storage::log::FirstBatch::Whole,
        })
        .unwrap()
        .read_bytes()
        .unwrap();
    let (mut offsets, mut groups) = (0, 0);
    for entry in ferrolog_records::EntryIter::new(&bytes) {
        let (_, entry) = entry.unwrap();
        for record in entry.records(usize::MAX).unwrap().to_vec().unwrap() {
            let (key, value) = (record.key.unwrap(), record.value.unwrap());
            let decoded = OffsetsKey::decode(key).unwrap();
            assert_eq!(decoded.encode(), key, "key {decoded:?}");
            // Kafka 3.x writes offset and group values at version 3, as ferrolog does.
            assert_eq!(&value[..2], &[0, 3]);
            let encoded = match decoded {
                OffsetsKey::Offset { .. } => {
                    offsets += 1;
                    OffsetValue::decode(value).unwrap().encode()
                }
                OffsetsKey::Group { .. } => {
                    groups += 1;
                    GroupValue::decode(value).unwrap().encode()
                }
                OffsetsKey::Consumer { .. } => panic!("no consumer group here: {decoded:?}"),
            };
            assert_eq!(encoded, value, "value at offset {}", record.offset);
        }
    }
    assert_eq!((offsets, groups), (7, 6));
    manager.shutdown().unwrap();
}

#[test]
fn static_members_rejoin_without_a_rebalance_and_empty_groups_offsets_expire() {
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let manager = open_manager(temp.path(), clock.clone());
    let config = GroupConfig {
        initial_rebalance_delay: Duration::ZERO,
        offsets_topic_partitions: 1,
        offsets_retention: Duration::from_secs(60),
        offsets_retention_check_interval: Duration::from_secs(1),
        ..GroupConfig::default()
    };
    let coordinator = GroupCoordinator::open(Arc::clone(&manager), config).unwrap();
    let static_join = |member_id: &str| JoinRequest {
        group_instance_id: Some("pod-1".into()),
        ..join_request("s", member_id, &["range"])
    };
    // A static member needs no MEMBER_ID_REQUIRED round; alone, it completes the join at once.
    let Reply::Later(mut first) = coordinator.join(static_join("")) else {
        panic!("a new member waits for its rebalance")
    };
    let first = first.try_recv().unwrap();
    assert_eq!(first.generation, 1);
    let synced = coordinator.sync(
        "s",
        (&first.member_id, Some("pod-1")),
        1,
        (None, None),
        vec![(first.member_id.clone(), b"p0".to_vec())],
    );
    assert_eq!(sync_now_or_ready(synced).assignment, b"p0");

    // It restarts: same instance id, no member id. It gets a new id, the same generation and
    // its old assignment; the old id is fenced.
    let again = now_join(coordinator.join(static_join("")));
    assert_eq!((again.error, again.generation), (0, 1));
    assert_ne!(again.member_id, first.member_id);
    let synced = sync_now(coordinator.sync(
        "s",
        (&again.member_id, Some("pod-1")),
        1,
        (None, None),
        vec![],
    ));
    assert_eq!(synced.assignment, b"p0");
    assert_eq!(
        coordinator.heartbeat("s", &first.member_id, Some("pod-1"), 1),
        errors::FENCED_INSTANCE_ID
    );

    // Offsets of an empty group expire after offsets.retention.minutes from when it emptied.
    let entry = CommitEntry {
        topic: "t".into(),
        partition: 0,
        offset: 7,
        leader_epoch: -1,
        metadata: String::new(),
    };
    assert_eq!(
        coordinator.commit("s", 8, 1, &again.member_id, Some("pod-1"), None, &[entry]),
        vec![errors::NONE]
    );
    coordinator.leave("s", &[(String::new(), Some("pod-1".into()))]);
    assert_eq!(coordinator.describe("s").unwrap().state, "Empty");
    clock.advance_ms(59_000);
    coordinator.tick();
    assert_eq!(
        coordinator.fetch_offsets("s", None).len(),
        1,
        "not yet expired"
    );
    clock.advance_ms(2_000);
    coordinator.tick();
    assert!(coordinator.fetch_offsets("s", None).is_empty());
    assert!(
        coordinator.describe("s").is_none(),
        "an empty group without offsets is gone"
    );
    drop(coordinator);
    let reloaded = GroupCoordinator::open(Arc::clone(&manager), GroupConfig::default()).unwrap();
    assert!(
        reloaded.describe("s").is_none(),
        "the expiry was stored as tombstones"
    );
    manager.shutdown().unwrap();
}

fn sync_now_or_ready(reply: Reply<SyncResult>) -> SyncResult {
    match reply {
        Reply::Now(result) => result,
        Reply::Later(mut receiver) => receiver.try_recv().unwrap(),
    }
}

#[test]
fn a_deleted_topic_s_offsets_leave_every_group() {
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let manager = open_manager(temp.path(), clock);
    let config = GroupConfig {
        offsets_topic_partitions: 2,
        ..GroupConfig::default()
    };
    let coordinator = GroupCoordinator::open(Arc::clone(&manager), config.clone()).unwrap();
    let entry = |topic: &str, partition| CommitEntry {
        topic: topic.into(),
        partition,
        offset: 9,
        leader_epoch: -1,
        metadata: String::new(),
    };
    for group in ["g1", "g2"] {
        let entries = [entry("gone", 0), entry("gone", 1), entry("kept", 0)];
        let results = coordinator.commit(group, 8, -1, "", None, None, &entries);
        assert_eq!(results, vec![errors::NONE; 3]);
    }
    assert_eq!(coordinator.forget_topic("gone"), 4);
    let topics_of = |coordinator: &GroupCoordinator, group: &str| -> Vec<String> {
        coordinator
            .fetch_offsets(group, None)
            .into_iter()
            .map(|(topic, ..)| topic)
            .collect()
    };
    assert_eq!(topics_of(&coordinator, "g1"), vec!["kept"]);
    // Tombstones were written: a reload agrees.
    drop(coordinator);
    let reloaded = GroupCoordinator::open(Arc::clone(&manager), config).unwrap();
    assert_eq!(topics_of(&reloaded, "g2"), vec!["kept"]);
    manager.shutdown().unwrap();
}
