//! A classic consumer group's member over the wire, for tests that send the same group
//! requests to ferrolog and to Kafka: JoinGroup (9 or earlier), SyncGroup 5, Heartbeat 4,
//! LeaveGroup 5 and DescribeGroups 5, a waiting JoinGroup or SyncGroup told from one answered
//! at once.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiKey, DescribeGroupsRequest, DescribeGroupsResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, GroupId, HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ResponseHeader, SyncGroupRequest,
    SyncGroupResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use super::wire::{connect, frame, name, send};

/// The protocol type the members join with: not Kafka's `consumer`, whose metadata Kafka would
/// read.
pub const PROTOCOL_TYPE: &str = "fl-static";
/// Every member's rebalance timeout.
pub const REBALANCE_TIMEOUT_MS: i32 = 10_000;
/// An answer "at once" comes within this; a request not answered by then waits (for the join
/// phase's end at the latest, a rebalance timeout later).
const AT_ONCE: Duration = Duration::from_secs(3);

/// One member's connection; a JoinGroup or SyncGroup that waits keeps it busy until answered.
pub struct Member {
    stream: TcpStream,
    group: String,
    instance: Option<String>,
    /// The member id it last learned.
    pub id: String,
    pub generation: i32,
}

/// Whether a JoinGroup was answered at once, and with what.
pub enum Joined {
    Now(JoinGroupResponse),
    Waiting,
}

fn join_request(
    member: &Member,
    member_id: &str,
    metadata: &[u8],
    session_ms: i32,
) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(name(&member.group)))
        .with_session_timeout_ms(session_ms)
        .with_rebalance_timeout_ms(REBALANCE_TIMEOUT_MS)
        .with_member_id(name(member_id))
        .with_group_instance_id(member.instance.as_deref().map(name))
        .with_protocol_type(name(PROTOCOL_TYPE))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(name("p"))
                .with_metadata(Bytes::copy_from_slice(metadata)),
        ])
}

/// The response to a request already sent, if it comes within `wait`.
fn response_within(stream: &mut TcpStream, wait: Duration) -> Option<Bytes> {
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut size = [0u8; 4];
    match stream.read_exact(&mut size) {
        Ok(()) => {}
        Err(error)
            if matches!(
                error.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            return None;
        }
        Err(error) => panic!("the broker closed the connection: {error}"),
    }
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut body).unwrap();
    Some(Bytes::from(body))
}

fn decode<R: Decodable>(mut frame: Bytes, api: ApiKey, version: i16) -> R {
    ResponseHeader::decode(&mut frame, api.response_header_version(version)).unwrap();
    R::decode(&mut frame, version).unwrap()
}

impl Member {
    pub fn new(port: u16, group: &str, instance: Option<&str>) -> Self {
        Self::over(connect(port), group, instance)
    }

    pub fn over(stream: TcpStream, group: &str, instance: Option<&str>) -> Self {
        coordinator_ready(stream.peer_addr().unwrap().port(), group);
        Self {
            stream,
            group: group.to_owned(),
            instance: instance.map(str::to_owned),
            id: String::new(),
            generation: -1,
        }
    }

    /// JoinGroup at `version` as `member_id` with `metadata`.
    pub fn join_as(
        &mut self,
        version: i16,
        member_id: &str,
        metadata: &[u8],
        session_ms: i32,
    ) -> Joined {
        let request = join_request(self, member_id, metadata, session_ms);
        let started = Instant::now();
        loop {
            self.stream
                .write_all(&frame(ApiKey::JoinGroup, version, &request))
                .unwrap();
            let Some(frame) = response_within(&mut self.stream, AT_ONCE) else {
                return Joined::Waiting;
            };
            let answer: JoinGroupResponse = decode(frame, ApiKey::JoinGroup, version);
            // Kafka may still (or again) be loading the group's partition: a client retries,
            // and so does the transcript, so that it records the group's answer.
            if answer.error_code == COORDINATOR_LOAD_IN_PROGRESS
                && started.elapsed() < Duration::from_secs(60)
            {
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
            return Joined::Now(self.learn(answer));
        }
    }

    /// JoinGroup 9 with the member id it knows.
    pub fn join(&mut self, metadata: &[u8]) -> Joined {
        let id = self.id.clone();
        self.join_as(9, &id, metadata, 30_000)
    }

    /// The answer to a JoinGroup that waited.
    pub fn joined_later(&mut self, within: Duration) -> JoinGroupResponse {
        let frame = response_within(&mut self.stream, within).expect("the JoinGroup is answered");
        self.learn(decode(frame, ApiKey::JoinGroup, 9))
    }

    fn learn(&mut self, answer: JoinGroupResponse) -> JoinGroupResponse {
        if answer.error_code == 0 {
            self.id = answer.member_id.to_string();
            self.generation = answer.generation_id;
        }
        answer
    }

    pub fn sync(&mut self, plan: &[(&str, &[u8])]) -> Option<SyncGroupResponse> {
        let request = SyncGroupRequest::default()
            .with_group_id(GroupId(name(&self.group)))
            .with_generation_id(self.generation)
            .with_member_id(name(&self.id))
            .with_group_instance_id(self.instance.as_deref().map(name))
            .with_protocol_type(Some(name(PROTOCOL_TYPE)))
            .with_protocol_name(Some(name("p")))
            .with_assignments(
                plan.iter()
                    .map(|(id, assignment)| {
                        SyncGroupRequestAssignment::default()
                            .with_member_id(name(id))
                            .with_assignment(Bytes::copy_from_slice(assignment))
                    })
                    .collect(),
            );
        self.stream
            .write_all(&frame(ApiKey::SyncGroup, 5, &request))
            .unwrap();
        response_within(&mut self.stream, AT_ONCE).map(|f| decode(f, ApiKey::SyncGroup, 5))
    }

    pub fn heartbeat_as(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
    ) -> i16 {
        let request = HeartbeatRequest::default()
            .with_group_id(GroupId(name(&self.group)))
            .with_generation_id(generation)
            .with_member_id(name(member_id))
            .with_group_instance_id(instance.map(name));
        let answer: HeartbeatResponse =
            send(&mut self.stream, ApiKey::Heartbeat, 4, &request).unwrap();
        answer.error_code
    }

    pub fn heartbeat(&mut self) -> i16 {
        let (id, instance) = (self.id.clone(), self.instance.clone());
        self.heartbeat_as(&id, instance.as_deref(), self.generation)
    }
}

pub fn describe(port: u16, group: &str) -> DescribeGroupsResponse {
    let request = DescribeGroupsRequest::default().with_groups(vec![GroupId(name(group))]);
    send(&mut connect(port), ApiKey::DescribeGroups, 5, &request).unwrap()
}

pub fn leave(port: u16, group: &str, members: &[(&str, Option<&str>)]) -> LeaveGroupResponse {
    coordinator_ready(port, group);
    let request = LeaveGroupRequest::default()
        .with_group_id(GroupId(name(group)))
        .with_members(
            members
                .iter()
                .map(|(id, instance)| {
                    MemberIdentity::default()
                        .with_member_id(name(id))
                        .with_group_instance_id(instance.map(name))
                })
                .collect(),
        );
    // Kafka can still answer COORDINATOR_LOAD_IN_PROGRESS after the probe found it ready.
    while_coordinator_loads(
        || send(&mut connect(port), ApiKey::LeaveGroup, 5, &request).unwrap(),
        |answer: &LeaveGroupResponse| answer.error_code,
    )
}

/// Asks again, as a client does, while the answer is COORDINATOR_LOAD_IN_PROGRESS: Kafka can
/// still (or again) be loading a group's partition after `coordinator_ready` saw it ready.
pub fn while_coordinator_loads<T>(mut ask: impl FnMut() -> T, error_code: impl Fn(&T) -> i16) -> T {
    let started = Instant::now();
    loop {
        let answer = ask();
        if error_code(&answer) != COORDINATOR_LOAD_IN_PROGRESS
            || started.elapsed() > Duration::from_secs(30)
        {
            return answer;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Kafka's answer while a coordinator loads the partition a request names.
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;

/// Waits until the broker on `port` coordinates `group`: Kafka finds a coordinator once its
/// offsets topic exists, and answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS until the
/// group's partition is loaded.
pub fn coordinator_ready(port: u16, group: &str) {
    let find = FindCoordinatorRequest::default()
        .with_key(StrBytes::from_string(group.to_owned()))
        .with_key_type(0);
    let probe = HeartbeatRequest::default()
        .with_group_id(GroupId(name(group)))
        .with_member_id(name("probe"));
    let started = Instant::now();
    loop {
        let mut stream = connect(port);
        let found: FindCoordinatorResponse =
            send(&mut stream, ApiKey::FindCoordinator, 3, &find).unwrap();
        if found.error_code == 0 {
            let probed: HeartbeatResponse =
                send(&mut stream, ApiKey::Heartbeat, 4, &probe).unwrap();
            if ![14, 15, 16].contains(&probed.error_code) {
                return;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no group coordinator for {group}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
