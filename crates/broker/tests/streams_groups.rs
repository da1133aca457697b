//! Streams groups (KIP-1071) without a network, on a manual clock: a word-count topology
//! joined by two members, its internal topics named for creation, the first target held for
//! the initial delay, every task given to exactly one member once the topics exist, tasks
//! moved through revocation when a member joins or leaves, a member fenced when its session
//! lapses, and a coordinator reopened over the same offsets topic describing the same group.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use ferrolog_broker::errors;
use ferrolog_broker::group::streams::assignor::TaskId;
use ferrolog_broker::group::streams::reconcile::TaskSets;
use ferrolog_broker::group::streams::{StreamsAnswer, StreamsHeartbeat, StreamsStatus};
use ferrolog_broker::group::{GroupConfig, GroupCoordinator};
use ferrolog_records::streams_group_records::{StreamsTopology, Subtopology, TopicInfo};
use ferrolog_storage::manager::LogManager;
use ferrolog_storage::{ManualClock, TopicPartition};

const REPARTITION: &str = "app-counts-repartition";
const CHANGELOG: &str = "app-counts-changelog";

struct Fixture {
    _temp: tempfile::TempDir,
    clock: Arc<ManualClock>,
    manager: Arc<LogManager>,
    coordinator: GroupCoordinator,
}

fn config() -> GroupConfig {
    GroupConfig {
        offsets_topic_partitions: 3,
        ..GroupConfig::default()
    }
}

fn fixture() -> Fixture {
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let manager = common::manager_with_topic(temp.path(), clock.clone(), Some(("input", 3)));
    let coordinator = GroupCoordinator::open(Arc::clone(&manager), config()).unwrap();
    coordinator.find_coordinator().unwrap();
    Fixture {
        _temp: temp,
        clock,
        manager,
        coordinator,
    }
}

fn info(name: &str) -> TopicInfo {
    TopicInfo {
        name: name.to_owned(),
        ..TopicInfo::default()
    }
}

/// Subtopology 0 splits `input` into the repartition topic; subtopology 1 counts from it.
fn word_count() -> StreamsTopology {
    StreamsTopology {
        epoch: 0,
        subtopologies: vec![
            Subtopology {
                id: "0".into(),
                source_topics: vec!["input".into()],
                repartition_sink_topics: vec![REPARTITION.into()],
                ..Subtopology::default()
            },
            Subtopology {
                id: "1".into(),
                repartition_source_topics: vec![info(REPARTITION)],
                state_changelog_topics: vec![info(CHANGELOG)],
                ..Subtopology::default()
            },
        ],
    }
}

fn join(member: &str, process: &str) -> StreamsHeartbeat {
    StreamsHeartbeat {
        version: 1,
        group_id: "app".into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        topology: Some(word_count()),
        owned: Some(TaskSets::default()),
        task_lists_sent: 3,
        process_id: Some(process.into()),
        client_tags: Some(Vec::new()),
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        ..StreamsHeartbeat::default()
    }
}

fn beat(member: &str, epoch: i32, owned: &TaskSets) -> StreamsHeartbeat {
    StreamsHeartbeat {
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        topology: None,
        owned: Some(owned.clone()),
        process_id: None,
        client_tags: None,
        ..join(member, "")
    }
}

fn ok(answer: StreamsAnswer) -> StreamsAnswer {
    assert_eq!(answer.error, errors::NONE, "{answer:?}");
    answer
}

fn has_status(answer: &StreamsAnswer, status: StreamsStatus) -> bool {
    answer.statuses.iter().any(|(s, _)| *s == status)
}

fn create(manager: &LogManager, topic: &str, partitions: i32) {
    let all: Vec<TopicPartition> = (0..partitions)
        .map(|p| TopicPartition::new(topic, p))
        .collect();
    manager.create_all(&all).unwrap();
}

/// A member heartbeating as a client does: reporting what it owns, until its tasks and epoch
/// stop changing; its last answer and tasks.
fn settle(f: &Fixture, member: &str, mut epoch: i32, mut owned: TaskSets) -> (i32, TaskSets) {
    for _ in 0..10 {
        let answer = ok(f.coordinator.streams_heartbeat(beat(member, epoch, &owned)));
        let unchanged = answer.member_epoch == epoch && answer.tasks.is_none();
        epoch = answer.member_epoch;
        if let Some(tasks) = answer.tasks {
            owned = tasks;
        }
        if unchanged {
            return (epoch, owned);
        }
    }
    panic!("{member} still moving after 10 heartbeats: epoch {epoch}, {owned:?}");
}

fn all_tasks() -> BTreeSet<TaskId> {
    (0..3)
        .flat_map(|p| [TaskId::new("0", p), TaskId::new("1", p)])
        .collect()
}

#[test]
fn members_get_every_task_once_after_the_internal_topics_and_the_delay() {
    let f = fixture();
    let first = ok(f.coordinator.streams_heartbeat(join("a", "pa")));
    assert!(
        has_status(&first, StreamsStatus::AssignmentDelayed),
        "{first:?}"
    );
    let missing = first
        .statuses
        .iter()
        .find(|(s, _)| *s == StreamsStatus::MissingInternalTopics)
        .expect("the internal topics are missing");
    assert_eq!(
        missing.1,
        format!("Internal topics are missing: {CHANGELOG}, {REPARTITION}")
    );
    let to_create: Vec<(&str, i32)> = first
        .to_create
        .values()
        .map(|t| (t.name.as_str(), t.partitions))
        .collect();
    assert_eq!(to_create, [(CHANGELOG, 3), (REPARTITION, 3)]);
    assert_eq!(first.tasks, Some(TaskSets::default()));
    ok(f.coordinator.streams_heartbeat(join("b", "pb")));
    create(&f.manager, REPARTITION, 3);
    create(&f.manager, CHANGELOG, 3);
    f.clock.advance(std::time::Duration::from_millis(3_000));
    let (epoch_a, tasks_a) = settle(&f, "a", first.member_epoch, TaskSets::default());
    let (epoch_b, tasks_b) = settle(&f, "b", 1, TaskSets::default());
    let (epoch_a, tasks_a) = settle(&f, "a", epoch_a, tasks_a);
    assert_eq!(epoch_a, epoch_b);
    assert!(tasks_a.active.is_disjoint(&tasks_b.active));
    let union: BTreeSet<TaskId> = tasks_a.active.union(&tasks_b.active).cloned().collect();
    assert_eq!(union, all_tasks());
    assert_eq!((tasks_a.active.len(), tasks_b.active.len()), (3, 3));
    let described = f.coordinator.describe_streams_group("app");
    assert_eq!(described.state, "Stable");
    assert_eq!(described.group_epoch, epoch_a);
    let reopened = GroupCoordinator::open(Arc::clone(&f.manager), config()).unwrap();
    let again = reopened.describe_streams_group("app");
    assert_eq!(
        (again.state, again.group_epoch, again.assignment_epoch),
        (
            described.state,
            described.group_epoch,
            described.assignment_epoch
        )
    );
    let members = |d: &ferrolog_broker::group::streams::DescribedStreamsGroup| {
        d.members
            .iter()
            .map(|m| {
                (
                    m.member_id.clone(),
                    m.member_epoch,
                    m.assignment.clone(),
                    m.target.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(members(&again), members(&described));
    // Loaded members' sessions run from the load: they are not fenced at once.
    reopened.tick();
    assert_eq!(reopened.describe_streams_group("app").members.len(), 2);
    f.clock.advance(std::time::Duration::from_millis(45_001));
    reopened.tick();
    assert!(reopened.describe_streams_group("app").members.is_empty());
}

#[test]
fn a_leaving_member_hands_its_tasks_over() {
    let mut config = config();
    config.streams.initial_rebalance_delay_ms = 0;
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let manager = common::manager_with_topic(temp.path(), clock.clone(), Some(("input", 3)));
    create(&manager, REPARTITION, 3);
    create(&manager, CHANGELOG, 3);
    let coordinator = GroupCoordinator::open(Arc::clone(&manager), config).unwrap();
    let f = Fixture {
        _temp: temp,
        clock,
        manager,
        coordinator,
    };
    let a = ok(f.coordinator.streams_heartbeat(join("a", "pa")));
    assert_eq!(
        a.tasks.as_ref().map(|t| t.active.clone()),
        Some(all_tasks())
    );
    f.clock.advance(std::time::Duration::from_millis(1_000));
    let b = ok(f.coordinator.streams_heartbeat(join("b", "pb")));
    assert_eq!(
        b.tasks,
        Some(TaskSets::default()),
        "b waits for a to revoke"
    );
    let (epoch_a, tasks_a) = settle(&f, "a", a.member_epoch, a.tasks.unwrap());
    let (epoch_b, tasks_b) = settle(&f, "b", b.member_epoch, TaskSets::default());
    let (_, tasks_a) = settle(&f, "a", epoch_a, tasks_a);
    assert_eq!(tasks_a.active.len() + tasks_b.active.len(), 6);
    assert!(tasks_a.active.is_disjoint(&tasks_b.active));
    let left = f.coordinator.streams_heartbeat(beat("a", -1, &tasks_a));
    assert_eq!((left.error, left.member_epoch), (errors::NONE, -1));
    f.clock.advance(std::time::Duration::from_millis(1_000));
    let (_, tasks_b) = settle(&f, "b", epoch_b, tasks_b);
    assert_eq!(tasks_b.active, all_tasks());
}

/// A coordinator over topics that all exist, without the initial delay.
fn ready_fixture() -> Fixture {
    let mut config = config();
    config.streams.initial_rebalance_delay_ms = 0;
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let manager = common::manager_with_topic(temp.path(), clock.clone(), Some(("input", 3)));
    create(&manager, REPARTITION, 3);
    create(&manager, CHANGELOG, 3);
    let coordinator = GroupCoordinator::open(Arc::clone(&manager), config).unwrap();
    Fixture {
        _temp: temp,
        clock,
        manager,
        coordinator,
    }
}

#[test]
fn a_deleted_group_stays_deleted_after_a_reload() {
    let f = ready_fixture();
    let joined = ok(f.coordinator.streams_heartbeat(join("a", "pa")));
    let left = f
        .coordinator
        .streams_heartbeat(beat("a", -1, &joined.tasks.unwrap()));
    assert_eq!(left.error, errors::NONE);
    assert_eq!(f.coordinator.delete_group("app"), errors::NONE);
    let reopened = GroupCoordinator::open(Arc::clone(&f.manager), config()).unwrap();
    assert_eq!(
        reopened.describe_streams_group("app").error,
        errors::GROUP_ID_NOT_FOUND
    );
    assert!(reopened.list().iter().all(|group| group.id != "app"));
}

#[test]
fn a_static_member_back_under_a_new_id_takes_its_tasks_and_no_one_else_keeps_them() {
    let f = ready_fixture();
    let static_join = |member: &str| StreamsHeartbeat {
        instance_id: Some("instance-1".into()),
        ..join(member, "pa")
    };
    let first = ok(f.coordinator.streams_heartbeat(static_join("a")));
    let (epoch, tasks) = settle(&f, "a", first.member_epoch, first.tasks.unwrap());
    assert_eq!(tasks.active, all_tasks());
    let away = StreamsHeartbeat {
        instance_id: Some("instance-1".into()),
        ..beat("a", -2, &tasks)
    };
    assert_eq!(f.coordinator.streams_heartbeat(away).error, errors::NONE);
    let back = ok(f.coordinator.streams_heartbeat(static_join("a2")));
    assert_eq!(
        back.tasks.as_ref().map(|t| t.active.clone()),
        Some(all_tasks())
    );
    let back_beat = |epoch, owned: &TaskSets| StreamsHeartbeat {
        instance_id: Some("instance-1".into()),
        ..beat("a2", epoch, owned)
    };
    let again = ok(f
        .coordinator
        .streams_heartbeat(back_beat(back.member_epoch, &tasks)));
    assert_eq!(again.member_epoch, epoch, "the group epoch did not move");
    let described = f.coordinator.describe_streams_group("app");
    assert_eq!(described.state, "Stable");
    let members: Vec<(&str, usize)> = described
        .members
        .iter()
        .map(|m| (m.member_id.as_str(), m.target.active.len()))
        .collect();
    assert_eq!(members, [("a2", 6)]);
}

#[test]
fn standby_replicas_go_to_the_other_process_of_each_stateful_task() {
    let mut config = config();
    config.streams.initial_rebalance_delay_ms = 0;
    config.streams.num_standby_replicas = 1;
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let manager = common::manager_with_topic(temp.path(), clock.clone(), Some(("input", 3)));
    create(&manager, REPARTITION, 3);
    create(&manager, CHANGELOG, 3);
    let coordinator = GroupCoordinator::open(Arc::clone(&manager), config).unwrap();
    let f = Fixture {
        _temp: temp,
        clock,
        manager,
        coordinator,
    };
    let a = ok(f.coordinator.streams_heartbeat(join("a", "pa")));
    f.clock.advance(std::time::Duration::from_millis(1_000));
    let b = ok(f.coordinator.streams_heartbeat(join("b", "pb")));
    let (epoch_a, tasks_a) = settle(&f, "a", a.member_epoch, a.tasks.unwrap());
    let (_, tasks_b) = settle(&f, "b", b.member_epoch, TaskSets::default());
    let (_, tasks_a) = settle(&f, "a", epoch_a, tasks_a);
    // Subtopology 1 keeps state: each of its tasks has a standby on the process without it.
    let stateful: BTreeSet<TaskId> = (0..3).map(|p| TaskId::new("1", p)).collect();
    for (mine, other) in [(&tasks_a, &tasks_b), (&tasks_b, &tasks_a)] {
        let wanted: BTreeSet<TaskId> = other.active.intersection(&stateful).cloned().collect();
        assert_eq!(mine.standby, wanted, "a {tasks_a:?} b {tasks_b:?}");
        assert!(mine.active.is_disjoint(&mine.standby));
    }
}

#[test]
fn a_member_whose_session_lapses_is_fenced() {
    let f = fixture();
    ok(f.coordinator.streams_heartbeat(join("a", "pa")));
    f.clock.advance(std::time::Duration::from_millis(45_001));
    f.coordinator.tick();
    let described = f.coordinator.describe_streams_group("app");
    assert!(described.members.is_empty(), "{described:?}");
    assert_eq!(described.state, "Empty");
    let answer = f
        .coordinator
        .streams_heartbeat(beat("a", 1, &TaskSets::default()));
    assert_eq!(answer.error, errors::UNKNOWN_MEMBER_ID);
}

#[test]
fn requests_are_checked_as_kafka_checks_them() {
    let f = fixture();
    let mut no_topology = join("a", "pa");
    no_topology.topology = None;
    let answer = f.coordinator.streams_heartbeat(no_topology);
    assert_eq!(
        (answer.error, answer.message.as_deref()),
        (
            errors::INVALID_REQUEST,
            Some("Topology must be non-null when (re-)joining.")
        )
    );
    let mut sized_changelog = join("a", "pa");
    sized_changelog.topology.as_mut().unwrap().subtopologies[1].state_changelog_topics[0]
        .partitions = 4;
    let answer = f.coordinator.streams_heartbeat(sized_changelog);
    assert_eq!(answer.error, errors::STREAMS_INVALID_TOPOLOGY);
    assert_eq!(
        answer.message.as_deref(),
        Some(format!("Changelog topic {CHANGELOG} must have an undefined partition count, but it is set to 4.").as_str())
    );
    let joined = ok(f.coordinator.streams_heartbeat(join("a", "pa")));
    let ahead =
        f.coordinator
            .streams_heartbeat(beat("a", joined.member_epoch + 1, &TaskSets::default()));
    assert_eq!(ahead.error, errors::FENCED_MEMBER_EPOCH);
    let mut changed = join("b", "pb");
    changed.topology.as_mut().unwrap().subtopologies[0]
        .source_topics
        .push("other".into());
    let answer = f.coordinator.streams_heartbeat(changed);
    assert_eq!(
        (answer.error, answer.message.as_deref()),
        (
            errors::INVALID_REQUEST,
            Some("Topology updates are not supported yet.")
        )
    );
}

#[test]
fn missing_source_topics_are_a_status_and_leave_the_group_not_ready() {
    let f = fixture();
    let mut join_missing = join("a", "pa");
    join_missing.topology.as_mut().unwrap().subtopologies[0].source_topics = vec!["absent".into()];
    let answer = ok(f.coordinator.streams_heartbeat(join_missing));
    let status = answer
        .statuses
        .iter()
        .find(|(s, _)| *s == StreamsStatus::MissingSourceTopics)
        .expect("a missing-source status");
    assert_eq!(status.1, "Source topics absent are missing.");
    assert!(answer.to_create.is_empty());
    assert_eq!(
        f.coordinator.describe_streams_group("app").state,
        "NotReady"
    );
}
