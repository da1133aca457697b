//! Static membership side by side with Kafka 4.4: the same JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup and DescribeGroups sequences go to `ferrolog serve` and to a Kafka 4.4 broker,
//! each scenario in a group of its own, and what each broker answers is written down in the
//! same words (member ids as relations: new or old, leader or not) and compared line by line.
//! The scenarios: a static member that lost its JoinGroup answer (alone, and while the leader
//! assigns), a static leader returning to a Stable group (JoinGroup 9 and 8), a stale
//! incarnation, instance and member ids that disagree, new metadata under the same protocol,
//! a static member that does not rejoin nor sync, a group no one rejoins, a restart from
//! another host with a shorter session, and LeaveGroup's corner cases.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::time::{Duration, Instant};

use common::Server;
use common::group_member::{Joined, Member, REBALANCE_TIMEOUT_MS, describe, leave};
use common::kafka::{KafkaPeer, kafka_available};
use common::wire::connect_from;
use kafka_protocol::messages::{JoinGroupResponse, LeaveGroupResponse, SyncGroupResponse};

/// What one broker answered, line by line, in words both brokers' answers share.
#[derive(Default)]
struct Transcript(Vec<String>);

impl Transcript {
    fn note(&mut self, line: impl Into<String>) {
        self.0.push(line.into());
    }
}

/// A short form of a JoinGroup answer: error, generation, whether it leads, how many members
/// it was sent, whether it may skip the assignment.
fn join_line(answer: &JoinGroupResponse) -> String {
    format!(
        "error {} generation {} leads {} members {} skip {}",
        answer.error_code,
        answer.generation_id,
        answer.leader == answer.member_id,
        answer.members.len(),
        answer.skip_assignment
    )
}

fn joined_line(joined: &Joined) -> String {
    match joined {
        Joined::Now(answer) => format!("answered: {}", join_line(answer)),
        Joined::Waiting => "waits".to_owned(),
    }
}

fn sync_line(answer: Option<SyncGroupResponse>) -> String {
    match answer {
        Some(answer) => format!(
            "sync error {} assignment {:?}",
            answer.error_code,
            String::from_utf8_lossy(&answer.assignment)
        ),
        None => "sync waits".to_owned(),
    }
}

fn leave_line(answer: &LeaveGroupResponse) -> String {
    let members: Vec<i16> = answer.members.iter().map(|m| m.error_code).collect();
    format!("leave error {} members {members:?}", answer.error_code)
}

/// Static member "a" alone, Stable, assigned "x".
fn one_stable(port: u16, group: &str) -> Member {
    let mut a = Member::new(port, group, Some("a"));
    let Joined::Now(first) = a.join(&[1]) else {
        panic!("a lone static member's join completes at once")
    };
    assert_eq!(first.error_code, 0, "{first:?}");
    let id = a.id.clone();
    assert_eq!(
        sync_line(a.sync(&[(&id, b"x")])),
        "sync error 0 assignment \"x\""
    );
    a
}

/// Static members "a" (leader) and "b": both JoinGroup answers of generation 2 are out.
fn two_completing(port: u16, group: &str) -> (Member, Member) {
    let mut a = one_stable(port, group);
    let mut b = Member::new(port, group, Some("b"));
    assert!(matches!(b.join(&[2]), Joined::Waiting));
    assert_eq!(a.heartbeat(), 27);
    let Joined::Now(rejoined) = a.join(&[1]) else {
        panic!("the last member to rejoin completes the join")
    };
    assert_eq!((rejoined.generation_id, rejoined.members.len()), (2, 2));
    b.joined_later(Duration::from_secs(5));
    (a, b)
}

fn two_stable(port: u16, group: &str) -> (Member, Member) {
    let (mut a, mut b) = two_completing(port, group);
    let (a_id, b_id) = (a.id.clone(), b.id.clone());
    let b_sync = std::thread::scope(|scope| {
        let b_sync = scope.spawn(|| {
            b.sync(&[]);
        });
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(
            sync_line(a.sync(&[(&a_id, b"x"), (&b_id, b"y")])),
            "sync error 0 assignment \"x\""
        );
        b_sync.join()
    });
    b_sync.unwrap();
    (a, b)
}

/// D1, alone: a static member joins again without an id before syncing.
fn lost_answer_alone(port: u16, t: &mut Transcript) {
    let mut a = Member::new(port, "lost-alone", Some("a"));
    t.note(joined_line(&a.join(&[1])));
    let old = a.id.clone();
    t.note(joined_line(&a.join_as(9, "", &[1], 30_000)));
    t.note(format!("new id differs {}", a.id != old));
    t.note(format!(
        "old id heartbeat {}",
        a.heartbeat_as(&old, Some("a"), 1)
    ));
}

/// D1: a static member joins again without an id while the leader holds the member list.
fn lost_answer_while_assigning(port: u16, t: &mut Transcript) {
    let (mut a, mut b) = two_completing(port, "lost-assigning");
    let b_old = b.id.clone();
    t.note(format!(
        "b rejoins without its id: {}",
        joined_line(&b.join_as(9, "", &[2], 30_000))
    ));
    let a_id = a.id.clone();
    t.note(format!(
        "leader's plan: {}",
        sync_line(a.sync(&[(&a_id, b"x"), (&b_old, b"y")]))
    ));
    t.note(format!("leader heartbeat {}", a.heartbeat()));
    t.note(format!(
        "b's old id heartbeat {}",
        a.heartbeat_as(&b_old, Some("b"), 2)
    ));
    t.note(format!("leader rejoins: {}", joined_line(&a.join(&[1]))));
    let b_answer = b.joined_later(Duration::from_secs(5));
    t.note(format!("b is answered: {}", join_line(&b_answer)));
    t.note(format!("b's new id differs {}", b.id != b_old));
}

/// D2, D4a: the static leader comes back to a Stable group (JoinGroup 9, then 8), and its
/// first incarnation tries again.
fn returning_leader(port: u16, t: &mut Transcript) {
    let (mut a, mut b) = two_stable(port, "returning-leader");
    let first = a.id.clone();
    let returned = a.join_as(9, "", &[1], 30_000);
    t.note(format!("leader returns (v9): {}", joined_line(&returned)));
    t.note(format!("follower heartbeat {}", b.heartbeat()));
    t.note(format!("returned leader syncs: {}", sync_line(a.sync(&[]))));
    let second = a.id.clone();
    let Joined::Now(v8) = a.join_as(8, "", &[1], 30_000) else {
        panic!("answered at once")
    };
    t.note(format!(
        "leader returns (v8): error {} generation {} names its previous id as leader {} members {}",
        v8.error_code,
        v8.generation_id,
        v8.leader.to_string() == second,
        v8.members.len()
    ));
    let mut zombie = Member::new(port, "returning-leader", Some("a"));
    let Joined::Now(fenced) = zombie.join_as(9, &first, &[1], 30_000) else {
        panic!("answered at once")
    };
    t.note(format!(
        "first incarnation rejoins: error {} echoes its id {}",
        fenced.error_code,
        fenced.member_id.to_string() == first
    ));
    t.note(format!(
        "follower returns: {}",
        joined_line(&b.join_as(9, "", &[2], 30_000))
    ));
}

/// D4: instance and member ids that disagree.
fn mismatched_ids(port: u16, t: &mut Transcript) {
    let (mut a, b) = two_stable(port, "mismatched");
    let (a_id, b_id) = (a.id.clone(), b.id.clone());
    t.note(format!(
        "unknown instance heartbeat {}",
        a.heartbeat_as(&a_id, Some("zzz"), 2)
    ));
    t.note(format!(
        "another instance heartbeat {}",
        a.heartbeat_as(&a_id, Some("b"), 2)
    ));
    t.note(format!(
        "no instance heartbeat {}",
        a.heartbeat_as(&b_id, None, 2)
    ));
    let mut stranger = Member::new(port, "mismatched", Some("zzz"));
    stranger.id = a_id.clone();
    stranger.generation = 2;
    t.note(format!(
        "unknown instance sync: {}",
        sync_line(stranger.sync(&[]))
    ));
    t.note(format!(
        "unknown instance join: {}",
        joined_line(&stranger.join(&[1]))
    ));
}

/// D3: new metadata under the same protocol, from a returning follower.
fn new_metadata(port: u16, t: &mut Transcript) {
    let (mut a, mut b) = two_stable(port, "new-metadata");
    t.note(format!(
        "b returns with new metadata: {}",
        joined_line(&b.join_as(9, "", &[9], 30_000))
    ));
    t.note(format!("leader heartbeat {}", a.heartbeat()));
    let described = describe(port, "new-metadata");
    let group = &described.groups[0];
    let mut metadata: Vec<Vec<u8>> = group
        .members
        .iter()
        .map(|m| m.member_metadata.to_vec())
        .collect();
    metadata.sort();
    t.note(format!("described {} {metadata:?}", group.group_state));
}

/// D7, D10: a static member that neither rejoins nor syncs.
fn silent_static_member(port: u16, t: &mut Transcript) {
    let (mut a, mut b) = two_stable(port, "silent");
    t.note(format!(
        "b rejoins with new metadata: {}",
        joined_line(&b.join(&[7]))
    ));
    let deadline = Instant::now() + Duration::from_millis(REBALANCE_TIMEOUT_MS as u64 + 1500);
    while Instant::now() < deadline {
        // a keeps its session but does not rejoin.
        a.heartbeat();
        std::thread::sleep(Duration::from_millis(500));
    }
    let b_answer = b.joined_later(Duration::from_secs(5));
    t.note(format!("b is answered: {}", join_line(&b_answer)));
    t.note(format!(
        "a heartbeat at its old generation {}",
        a.heartbeat()
    ));
    let described = describe(port, "silent");
    t.note(format!(
        "described {} members {}",
        described.groups[0].group_state,
        described.groups[0].members.len()
    ));
    let (a_id, b_id) = (a.id.clone(), b.id.clone());
    t.note(format!(
        "b assigns: {}",
        sync_line(b.sync(&[(&a_id, b"x"), (&b_id, b"y")]))
    ));
    std::thread::sleep(Duration::from_millis(REBALANCE_TIMEOUT_MS as u64 + 1500));
    t.note(format!(
        "once a owed its sync too long, b's heartbeat {}",
        b.heartbeat()
    ));
}

/// D8, D14: a dynamic member joins and leaves; the static one never rejoins.
fn no_one_rejoins(port: u16, t: &mut Transcript) {
    let mut a = one_stable(port, "no-one");
    let mut d = Member::new(port, "no-one", None);
    let Joined::Now(required) = d.join_as(9, "", &[3], 30_000) else {
        panic!("answered at once")
    };
    t.note(format!("dynamic member: {}", join_line(&required)));
    let pending = required.member_id.to_string();
    t.note(format!(
        "with its id: {}",
        joined_line(&d.join_as(9, &pending, &[3], 30_000))
    ));
    t.note(leave_line(&leave(port, "no-one", &[(&pending, None)])));
    let removed = d.joined_later(Duration::from_secs(5));
    t.note(format!(
        "its join: error {} member id empty {}",
        removed.error_code,
        removed.member_id.is_empty()
    ));
    std::thread::sleep(Duration::from_millis(REBALANCE_TIMEOUT_MS as u64 + 1500));
    let described = describe(port, "no-one");
    t.note(format!(
        "described {} members {}",
        described.groups[0].group_state,
        described.groups[0].members.len()
    ));
    t.note(format!("a heartbeat {}", a.heartbeat()));
}

/// D5, D6: a static member comes back from another host with a shorter session.
fn restart_elsewhere(port: u16, t: &mut Transcript) {
    let a = one_stable(port, "elsewhere");
    drop(a);
    let mut back = Member::over(
        connect_from("127.0.0.2", port).unwrap(),
        "elsewhere",
        Some("a"),
    );
    t.note(format!(
        "returns: {}",
        joined_line(&back.join_as(9, "", &[1], 6_000))
    ));
    let described = describe(port, "elsewhere");
    let hosts: Vec<String> = described.groups[0]
        .members
        .iter()
        .map(|m| m.client_host.to_string())
        .collect();
    t.note(format!("client hosts {hosts:?}"));
    t.note(format!("heartbeat {}", back.heartbeat()));
    std::thread::sleep(Duration::from_secs(8));
    let described = describe(port, "elsewhere");
    t.note(format!(
        "after 8 s: {} members {}",
        described.groups[0].group_state,
        described.groups[0].members.len()
    ));
}

/// D12, D13: LeaveGroup of a group that does not exist, and of a pending id named with an
/// instance id.
fn leave_corners(port: u16, t: &mut Transcript) {
    t.note(leave_line(&leave(
        port,
        "nope",
        &[("", Some("a")), ("m1", None)],
    )));
    let mut d = Member::new(port, "leave-pending", None);
    let Joined::Now(required) = d.join_as(9, "", &[3], 30_000) else {
        panic!("answered at once")
    };
    let pending = required.member_id.to_string();
    t.note(leave_line(&leave(
        port,
        "leave-pending",
        &[(&pending, Some("x"))],
    )));
}

/// A scenario: what it tries, and the requests it sends to the broker on a port.
type Scenario = (&'static str, fn(u16, &mut Transcript));

const SCENARIOS: &[Scenario] = &[
    (
        "a static member that lost its answer, alone",
        lost_answer_alone,
    ),
    (
        "a static member that lost its answer while the leader assigns",
        lost_answer_while_assigning,
    ),
    (
        "a static leader returning to a Stable group",
        returning_leader,
    ),
    ("instance and member ids that disagree", mismatched_ids),
    ("new metadata under the same protocol", new_metadata),
    (
        "a static member that neither rejoins nor syncs",
        silent_static_member,
    ),
    ("a group no one rejoins", no_one_rejoins),
    (
        "a restart from another host with a shorter session",
        restart_elsewhere,
    ),
    ("LeaveGroup's corners", leave_corners),
];

/// Every scenario against the broker on `port`, each on a thread of its own (they use groups
/// of their own): the transcripts in scenario order.
fn run_all(port: u16) -> Vec<Transcript> {
    std::thread::scope(|scope| {
        let runs: Vec<_> = SCENARIOS
            .iter()
            .map(|(_, scenario)| {
                scope.spawn(move || {
                    let mut transcript = Transcript::default();
                    scenario(port, &mut transcript);
                    transcript
                })
            })
            .collect();
        runs.into_iter().map(|run| run.join().unwrap()).collect()
    })
}

#[test]
fn every_static_membership_transition_is_answered_as_kafka_answers_it() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), &[]);
    let ferrolog = Server::start_with(
        &temp.path().join("ferrolog"),
        &["group.initial.rebalance.delay.ms=0"],
    );
    let (from_kafka, from_ferrolog) = std::thread::scope(|scope| {
        let kafka_port = kafka.port;
        let kafka_run = scope.spawn(move || run_all(kafka_port));
        let ferrolog_run = run_all(ferrolog.port);
        (kafka_run.join().unwrap(), ferrolog_run)
    });
    let mut differences = Vec::new();
    for (((scenario, _), kafka), ours) in SCENARIOS.iter().zip(&from_kafka).zip(&from_ferrolog) {
        println!("{scenario}:");
        for (index, line) in kafka.0.iter().enumerate() {
            let mine = ours.0.get(index).map_or("(nothing)", String::as_str);
            let mark = if mine == line { "  " } else { "!!" };
            println!("  {mark} kafka: {line}\n     ours:  {mine}");
            if mine != line {
                differences.push(format!("{scenario}: Kafka {line:?}, ferrolog {mine:?}"));
            }
        }
        if ours.0.len() != kafka.0.len() {
            differences.push(format!(
                "{scenario}: {} lines against Kafka's {}",
                ours.0.len(),
                kafka.0.len()
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{differences:#?}\n{}",
        kafka
            .log()
            .lines()
            .rev()
            .take(50)
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The two transitions the issue found, as Kafka makes them.
    assert_eq!(
        from_kafka[0].0[1],
        "answered: error 0 generation 2 leads true members 1 skip false"
    );
    assert_eq!(
        from_kafka[2].0[0],
        "leader returns (v9): answered: error 0 generation 2 leads true members 2 skip true"
    );
}
