//! The group coordinator of Kafka's classic consumer-group protocol: membership (join, sync,
//! heartbeat, leave, session and rebalance timeouts, static members), committed offsets, and
//! their records in `__consumer_offsets`. Assignment stays with the clients: the leader
//! computes it and hands it over in SyncGroup.
//!
//! Every method is synchronous and runs on the blocking pool (it may append to the offsets
//! topic); a JoinGroup or SyncGroup that must wait for other members returns [`Reply::Later`],
//! a channel the handler awaits. One mutex guards all groups: a single broker's group traffic is
//! small next to its produce and fetch traffic. [`GroupCoordinator::tick`] runs the timers.
//!
//! What is written to the offsets topic, as Kafka does: the group's metadata when a generation
//! gets its assignment (and when the group empties), each commit, and tombstones when offsets
//! expire or are deleted and when a group is deleted.

pub mod offsets_topic;
pub mod state;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ferrolog_records::consumer_offsets::{GroupValue, OffsetValue, OffsetsKey};
use ferrolog_storage::manager::LogManager;
use ferrolog_storage::{Clock, Result};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::errors;
use offsets_topic::{OffsetsRecord, OffsetsTopic};
use state::{Group, GroupState, JoinResult, Member, SyncResult};

/// The coordinator's settings, under Kafka's broker keys.
#[derive(Debug, Clone)]
pub struct GroupConfig {
    /// `offsets.topic.num.partitions`
    pub offsets_topic_partitions: i32,
    /// `offsets.topic.segment.bytes`
    pub offsets_topic_segment_bytes: u64,
    /// `group.min.session.timeout.ms`
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`
    pub max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms`: how long the first rebalance of an empty group waits
    /// for more members before it completes.
    pub initial_rebalance_delay_ms: i64,
    /// `offsets.retention.minutes`, in milliseconds.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms`
    pub offsets_retention_check_interval_ms: i64,
    /// `offset.metadata.max.bytes`
    pub offset_metadata_max_bytes: usize,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            offsets_topic_partitions: 50,
            offsets_topic_segment_bytes: 104_857_600,
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            offsets_retention_ms: 7 * 24 * 60 * 60 * 1000,
            offsets_retention_check_interval_ms: 600_000,
            offset_metadata_max_bytes: 4096,
        }
    }
}

/// An answer now, or one that arrives when the rebalance gets there.
#[derive(Debug)]
pub enum Reply<T> {
    Now(T),
    Later(oneshot::Receiver<T>),
}

/// A JoinGroup, whatever its version.
#[derive(Debug, Clone)]
pub struct JoinRequest {
    pub group: String,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Vec<u8>)>,
    /// Version 4 and later: a new dynamic member is first sent away with MEMBER_ID_REQUIRED.
    pub require_known_member_id: bool,
}

/// One partition's offset in an OffsetCommit.
#[derive(Debug, Clone)]
pub struct CommitEntry {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

/// A group as DescribeGroups shows it.
#[derive(Debug, Clone)]
pub struct GroupDescription {
    pub state: &'static str,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<DescribedMember>,
}

/// A member as DescribeGroups shows it.
#[derive(Debug, Clone)]
pub struct DescribedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Its metadata for the group's protocol.
    pub metadata: Vec<u8>,
    pub assignment: Vec<u8>,
}

#[derive(Debug)]
pub struct GroupCoordinator {
    topic: OffsetsTopic,
    config: GroupConfig,
    clock: Arc<dyn Clock>,
    groups: Mutex<HashMap<String, Group>>,
    member_counter: AtomicU64,
    next_expiry_check_ms: Mutex<i64>,
}

impl GroupCoordinator {
    /// Rebuilds every group from the offsets topic's partitions present in the data dirs.
    pub fn open(manager: Arc<LogManager>, config: GroupConfig) -> Result<Self> {
        let clock = Arc::clone(manager.clock());
        let topic = OffsetsTopic::new(
            manager,
            config.offsets_topic_partitions,
            config.offsets_topic_segment_bytes,
        );
        let now = clock.now_ms();
        let mut groups: HashMap<String, Group> = HashMap::new();
        let records = topic.load(|record| replay(&mut groups, record, now))?;
        if records > 0 {
            tracing::info!(
                records,
                groups = groups.len(),
                "consumer groups loaded from the offsets topic"
            );
        }
        Ok(Self {
            topic,
            next_expiry_check_ms: Mutex::new(now + config.offsets_retention_check_interval_ms),
            config,
            clock,
            groups: Mutex::new(groups),
            member_counter: AtomicU64::new(0),
        })
    }

    fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// FindCoordinator: this broker coordinates every group; the offsets topic is created the
    /// first time a client asks, as Kafka does.
    pub fn find_coordinator(&self) -> Result<()> {
        self.topic.ensure_created()
    }

    fn new_member_id(&self, request: &JoinRequest) -> String {
        let prefix = request
            .group_instance_id
            .as_deref()
            .unwrap_or(&request.client_id);
        let count = self.member_counter.fetch_add(1, Ordering::Relaxed);
        format!("{prefix}-{:016x}{count:08x}", self.now())
    }

    pub fn join(&self, request: JoinRequest) -> Reply<JoinResult> {
        let error = |code| Reply::Now(JoinResult::error(code, &request.member_id));
        if request.group.is_empty() {
            return error(errors::INVALID_GROUP_ID);
        }
        if request.session_timeout_ms < self.config.min_session_timeout_ms
            || request.session_timeout_ms > self.config.max_session_timeout_ms
        {
            return error(errors::INVALID_SESSION_TIMEOUT);
        }
        let now = self.now();
        let mut groups = self.groups.lock();
        if !request.member_id.is_empty() && !groups.contains_key(&request.group) {
            return error(errors::UNKNOWN_MEMBER_ID);
        }
        let group = groups
            .entry(request.group.clone())
            .or_insert_with(|| Group::new(&request.group, now));
        if request.protocol_type.is_empty()
            || !group.accepts(&request.protocol_type, &request.protocols)
        {
            return error(errors::INCONSISTENT_GROUP_PROTOCOL);
        }
        if group.members.is_empty() {
            group.protocol_type = Some(request.protocol_type.clone());
        }

        if request.member_id.is_empty() {
            if let Some(instance) = request.group_instance_id.clone() {
                if let Some(old) = group.member_by_instance(&instance) {
                    let old_id = old.member_id.clone();
                    return self.rejoin_static(group, &old_id, request, now);
                }
                let member_id = self.new_member_id(&request);
                return self.add_member(group, member_id, request, now);
            }
            let member_id = self.new_member_id(&request);
            if request.require_known_member_id {
                let lapse = now + i64::from(request.session_timeout_ms);
                group.pending_member_ids.insert(member_id.clone(), lapse);
                return Reply::Now(JoinResult::error(errors::MEMBER_ID_REQUIRED, &member_id));
            }
            return self.add_member(group, member_id, request, now);
        }
        if group
            .pending_member_ids
            .remove(&request.member_id)
            .is_some()
        {
            let member_id = request.member_id.clone();
            return self.add_member(group, member_id, request, now);
        }
        let Some(member) = group.member(&request.member_id) else {
            return error(errors::UNKNOWN_MEMBER_ID);
        };
        if member.group_instance_id.is_some()
            && member.group_instance_id != request.group_instance_id
        {
            return error(errors::FENCED_INSTANCE_ID);
        }
        self.rejoin(group, request, now)
    }

    /// A new member: it waits for the rebalance its arrival starts (or joins the one under way).
    fn add_member(
        &self,
        group: &mut Group,
        member_id: String,
        request: JoinRequest,
        now: i64,
    ) -> Reply<JoinResult> {
        let (sender, receiver) = oneshot::channel();
        group.members.push(Member {
            member_id,
            group_instance_id: request.group_instance_id,
            client_id: request.client_id,
            client_host: request.client_host,
            session_timeout_ms: request.session_timeout_ms,
            rebalance_timeout_ms: request.rebalance_timeout_ms,
            protocols: request.protocols,
            assignment: Vec::new(),
            session_deadline_ms: now + i64::from(request.session_timeout_ms),
            awaiting_join: Some(sender),
            awaiting_sync: None,
        });
        if group.state != GroupState::PreparingRebalance {
            self.prepare_rebalance(group, now);
        }
        self.maybe_complete_join(group, now);
        Reply::Later(receiver)
    }

    /// A known member joins again: answered at once when nothing changed, else a rebalance.
    fn rejoin(&self, group: &mut Group, request: JoinRequest, now: i64) -> Reply<JoinResult> {
        let is_leader = group.leader.as_deref() == Some(request.member_id.as_str());
        let state = group.state;
        let Some(member) = group.member_mut(&request.member_id) else {
            return Reply::Now(JoinResult::error(
                errors::UNKNOWN_MEMBER_ID,
                &request.member_id,
            ));
        };
        let unchanged = member.protocols == request.protocols;
        member.session_deadline_ms = now + i64::from(request.session_timeout_ms);
        member.session_timeout_ms = request.session_timeout_ms;
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        member.protocols = request.protocols;
        let answer_now = match state {
            GroupState::CompletingRebalance => unchanged,
            GroupState::Stable => unchanged && !is_leader,
            GroupState::PreparingRebalance | GroupState::Empty => false,
        };
        if answer_now {
            return Reply::Now(group.join_result(&request.member_id));
        }
        let (sender, receiver) = oneshot::channel();
        if let Some(member) = group.member_mut(&request.member_id) {
            member.awaiting_join = Some(sender);
        }
        if group.state != GroupState::PreparingRebalance {
            self.prepare_rebalance(group, now);
        }
        self.maybe_complete_join(group, now);
        Reply::Later(receiver)
    }

    /// A static member comes back under a new member id; the old id is fenced. In a Stable
    /// group with unchanged protocols it takes over its old assignment without a rebalance.
    fn rejoin_static(
        &self,
        group: &mut Group,
        old_id: &str,
        request: JoinRequest,
        now: i64,
    ) -> Reply<JoinResult> {
        let new_id = self.new_member_id(&request);
        if group.leader.as_deref() == Some(old_id) {
            group.leader = Some(new_id.clone());
        }
        let Some(member) = group.member_mut(old_id) else {
            return Reply::Now(JoinResult::error(errors::UNKNOWN_MEMBER_ID, ""));
        };
        if let Some(waiting) = member.awaiting_join.take() {
            let _ = waiting.send(JoinResult::error(errors::FENCED_INSTANCE_ID, old_id));
        }
        if let Some(waiting) = member.awaiting_sync.take() {
            let _ = waiting.send(SyncResult::error(errors::FENCED_INSTANCE_ID));
        }
        member.member_id = new_id.clone();
        let unchanged = member.protocols == request.protocols;
        if group.state == GroupState::Stable && unchanged {
            if let Some(member) = group.member_mut(&new_id) {
                member.session_deadline_ms = now + i64::from(request.session_timeout_ms);
                member.client_id = request.client_id;
                member.client_host = request.client_host;
            }
            self.persist_group(group, now);
            return Reply::Now(group.join_result(&new_id));
        }
        let request = JoinRequest {
            member_id: new_id,
            ..request
        };
        self.rejoin(group, request, now)
    }

    /// Starts (or restarts) the join phase.
    fn prepare_rebalance(&self, group: &mut Group, now: i64) {
        if group.state == GroupState::CompletingRebalance {
            for member in &mut group.members {
                if let Some(waiting) = member.awaiting_sync.take() {
                    let _ = waiting.send(SyncResult::error(errors::REBALANCE_IN_PROGRESS));
                }
            }
        }
        let was_empty = group.state == GroupState::Empty;
        group.transition(GroupState::PreparingRebalance, now);
        let timeout = group.rebalance_timeout_ms();
        group.rebalance_deadline_ms = now + timeout;
        group.initial_delay_until_ms = if was_empty {
            now + self.config.initial_rebalance_delay_ms.min(timeout)
        } else {
            now
        };
        tracing::debug!(group = %group.id, generation = group.generation, "rebalance started");
    }

    /// Ends the join phase when every member has rejoined (and the initial delay has passed),
    /// or when the rebalance timeout is up: stragglers are removed, a new generation starts and
    /// every waiting JoinGroup is answered.
    fn maybe_complete_join(&self, group: &mut Group, now: i64) {
        if group.state != GroupState::PreparingRebalance {
            return;
        }
        let all_joined = group.pending_member_ids.is_empty()
            && group.members.iter().all(|m| m.awaiting_join.is_some());
        let ready = all_joined && now >= group.initial_delay_until_ms;
        if !ready && now < group.rebalance_deadline_ms {
            return;
        }
        let stragglers: Vec<String> = group
            .members
            .iter()
            .filter(|m| m.awaiting_join.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for member_id in stragglers {
            group.remove_member(&member_id);
        }
        group.pending_member_ids.clear();
        group.generation += 1;
        if group.members.is_empty() {
            group.protocol = None;
            group.leader = None;
            group.transition(GroupState::Empty, now);
            self.persist_group(group, now);
            return;
        }
        group.protocol = group.select_protocol();
        if group
            .leader
            .as_ref()
            .is_none_or(|leader| group.member(leader).is_none())
        {
            group.leader = group.members.first().map(|m| m.member_id.clone());
        }
        group.transition(GroupState::CompletingRebalance, now);
        group.sync_deadline_ms = now + group.rebalance_timeout_ms();
        let answers: Vec<(String, JoinResult)> = group
            .members
            .iter()
            .map(|m| (m.member_id.clone(), group.join_result(&m.member_id)))
            .collect();
        for (member_id, answer) in answers {
            if let Some(member) = group.member_mut(&member_id) {
                member.session_deadline_ms = now + i64::from(member.session_timeout_ms);
                if let Some(waiting) = member.awaiting_join.take() {
                    let _ = waiting.send(answer);
                }
            }
        }
        tracing::info!(group = %group.id, generation = group.generation, members = group.members.len(), protocol = ?group.protocol, "group rebalanced");
    }

    pub fn sync(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation: i32,
        assignments: Vec<(String, Vec<u8>)>,
    ) -> Reply<SyncResult> {
        let now = self.now();
        let mut groups = self.groups.lock();
        let error = |code| Reply::Now(SyncResult::error(code));
        let Some(group) = groups.get_mut(group_id) else {
            return error(errors::UNKNOWN_MEMBER_ID);
        };
        if let Err(code) = check_member(group, member_id, group_instance_id, generation) {
            return error(code);
        }
        let is_leader = group.leader.as_deref() == Some(member_id);
        match group.state {
            GroupState::Empty | GroupState::PreparingRebalance => {
                error(errors::REBALANCE_IN_PROGRESS)
            }
            GroupState::Stable => {
                let assignment = group
                    .member(member_id)
                    .map(|m| m.assignment.clone())
                    .unwrap_or_default();
                Reply::Now(sync_result(group, assignment))
            }
            GroupState::CompletingRebalance => {
                let (sender, receiver) = oneshot::channel();
                if let Some(member) = group.member_mut(member_id) {
                    member.awaiting_sync = Some(sender);
                    member.session_deadline_ms = now + i64::from(member.session_timeout_ms);
                }
                if is_leader {
                    let mut assignments: HashMap<String, Vec<u8>> =
                        assignments.into_iter().collect();
                    for member in &mut group.members {
                        member.assignment =
                            assignments.remove(&member.member_id).unwrap_or_default();
                    }
                    let stored = self.persist_group(group, now);
                    if stored {
                        group.transition(GroupState::Stable, now);
                    } else {
                        for member in &mut group.members {
                            member.assignment.clear();
                        }
                    }
                    let answers: Vec<(String, SyncResult)> = group
                        .members
                        .iter()
                        .map(|m| {
                            let answer = if stored {
                                sync_result(group, m.assignment.clone())
                            } else {
                                SyncResult::error(errors::COORDINATOR_NOT_AVAILABLE)
                            };
                            (m.member_id.clone(), answer)
                        })
                        .collect();
                    for (id, answer) in answers {
                        if let Some(waiting) =
                            group.member_mut(&id).and_then(|m| m.awaiting_sync.take())
                        {
                            let _ = waiting.send(answer);
                        }
                    }
                    if !stored {
                        self.prepare_rebalance(group, now);
                    }
                }
                Reply::Later(receiver)
            }
        }
    }

    pub fn heartbeat(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation: i32,
    ) -> i16 {
        let now = self.now();
        let mut groups = self.groups.lock();
        let Some(group) = groups.get_mut(group_id) else {
            return errors::UNKNOWN_MEMBER_ID;
        };
        if let Err(code) = check_member(group, member_id, group_instance_id, generation) {
            return code;
        }
        if let Some(member) = group.member_mut(member_id) {
            member.session_deadline_ms = now + i64::from(member.session_timeout_ms);
        }
        match group.state {
            GroupState::PreparingRebalance => errors::REBALANCE_IN_PROGRESS,
            GroupState::CompletingRebalance | GroupState::Stable => errors::NONE,
            GroupState::Empty => errors::UNKNOWN_MEMBER_ID,
        }
    }

    /// LeaveGroup for each `(member id, instance id)`; returns the group's error and one error
    /// per member.
    pub fn leave(&self, group_id: &str, leaving: &[(String, Option<String>)]) -> (i16, Vec<i16>) {
        let now = self.now();
        let mut groups = self.groups.lock();
        let Some(group) = groups.get_mut(group_id) else {
            return (
                errors::UNKNOWN_MEMBER_ID,
                vec![errors::UNKNOWN_MEMBER_ID; leaving.len()],
            );
        };
        let mut removed_any = false;
        let results = leaving
            .iter()
            .map(|(member_id, instance_id)| {
                let target = match instance_id {
                    Some(instance) => match group.member_by_instance(instance) {
                        Some(m) if member_id.is_empty() || *member_id == m.member_id => {
                            Ok(m.member_id.clone())
                        }
                        Some(_) => Err(errors::FENCED_INSTANCE_ID),
                        None => Err(errors::UNKNOWN_MEMBER_ID),
                    },
                    None => {
                        if group.pending_member_ids.remove(member_id).is_some() {
                            return errors::NONE;
                        }
                        group
                            .member(member_id)
                            .map(|m| m.member_id.clone())
                            .ok_or(errors::UNKNOWN_MEMBER_ID)
                    }
                };
                match target {
                    Ok(id) => {
                        if let Some(member) = group.remove_member(&id) {
                            answer_removed(member);
                        }
                        removed_any = true;
                        errors::NONE
                    }
                    Err(code) => code,
                }
            })
            .collect();
        if removed_any {
            tracing::info!(group = %group.id, "members left the group");
            if group.state != GroupState::PreparingRebalance {
                self.prepare_rebalance(group, now);
            }
            self.maybe_complete_join(group, now);
        }
        (errors::NONE, results)
    }

    /// OffsetCommit: one error per entry (a group-level problem applies to all of them).
    pub fn commit(
        &self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        group_instance_id: Option<&str>,
        retention_ms: Option<i64>,
        entries: &[CommitEntry],
    ) -> Vec<i16> {
        let all = |code| vec![code; entries.len()];
        if group_id.is_empty() {
            return all(errors::INVALID_GROUP_ID);
        }
        let now = self.now();
        let mut groups = self.groups.lock();
        let group = match groups.get_mut(group_id) {
            Some(group) => group,
            None if generation < 0 => groups
                .entry(group_id.to_owned())
                .or_insert_with(|| Group::new(group_id, now)),
            None => return all(errors::ILLEGAL_GENERATION),
        };
        let standalone = generation < 0 && group.state == GroupState::Empty;
        if !standalone {
            if let Err(code) = check_member(group, member_id, group_instance_id, generation) {
                return all(code);
            }
            if group.state == GroupState::CompletingRebalance {
                return all(errors::REBALANCE_IN_PROGRESS);
            }
            if let Some(member) = group.member_mut(member_id) {
                member.session_deadline_ms = now + i64::from(member.session_timeout_ms);
            }
        }
        let mut results = Vec::with_capacity(entries.len());
        let mut records = Vec::new();
        let mut values = Vec::new();
        for entry in entries {
            if entry.metadata.len() > self.config.offset_metadata_max_bytes {
                results.push(errors::OFFSET_METADATA_TOO_LARGE);
                continue;
            }
            let value = OffsetValue {
                offset: entry.offset,
                leader_epoch: entry.leader_epoch,
                metadata: entry.metadata.clone(),
                commit_timestamp: now,
                expire_timestamp: retention_ms.map(|retention| now + retention),
            };
            records.push((
                OffsetsKey::Offset {
                    group: group_id.to_owned(),
                    topic: entry.topic.clone(),
                    partition: entry.partition,
                },
                Some(value.encode()),
            ));
            values.push(((entry.topic.clone(), entry.partition), value));
            results.push(errors::NONE);
        }
        if let Err(error) = self.topic.append(group_id, &records, now) {
            tracing::warn!(group = group_id, %error, "storing committed offsets failed");
            return results
                .into_iter()
                .map(|code| {
                    if code == errors::NONE {
                        errors::COORDINATOR_NOT_AVAILABLE
                    } else {
                        code
                    }
                })
                .collect();
        }
        group.offsets.extend(values);
        results
    }

    /// OffsetFetch for `topics` (all of the group's partitions when `None`): each partition's
    /// committed offset, or `None` when there is none.
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        topics: Option<&[(String, Vec<i32>)]>,
    ) -> Vec<(String, i32, Option<OffsetValue>)> {
        let groups = self.groups.lock();
        let group = groups.get(group_id);
        match topics {
            Some(topics) => topics
                .iter()
                .flat_map(|(topic, partitions)| {
                    partitions.iter().map(move |partition| {
                        let value = group
                            .and_then(|g| g.offsets.get(&(topic.clone(), *partition)).cloned());
                        (topic.clone(), *partition, value)
                    })
                })
                .collect(),
            None => group
                .map(|g| {
                    g.offsets
                        .iter()
                        .map(|((topic, partition), value)| {
                            (topic.clone(), *partition, Some(value.clone()))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// Every group: id, protocol type and state.
    pub fn list(&self) -> Vec<(String, String, &'static str)> {
        let groups = self.groups.lock();
        let mut list: Vec<_> = groups
            .values()
            .map(|g| {
                (
                    g.id.clone(),
                    g.protocol_type.clone().unwrap_or_default(),
                    g.state.name(),
                )
            })
            .collect();
        list.sort();
        list
    }

    pub fn describe(&self, group_id: &str) -> Option<GroupDescription> {
        let groups = self.groups.lock();
        let group = groups.get(group_id)?;
        let protocol = group.protocol.clone().unwrap_or_default();
        Some(GroupDescription {
            state: group.state.name(),
            protocol_type: group.protocol_type.clone().unwrap_or_default(),
            protocol: protocol.clone(),
            members: group
                .members
                .iter()
                .map(|m| DescribedMember {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    metadata: m.metadata_for(&protocol),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        })
    }

    /// DeleteGroups: only empty groups go; their offsets and metadata are tombstoned.
    pub fn delete_group(&self, group_id: &str) -> i16 {
        let now = self.now();
        let mut groups = self.groups.lock();
        let Some(group) = groups.get(group_id) else {
            return errors::GROUP_ID_NOT_FOUND;
        };
        if group.state != GroupState::Empty {
            return errors::NON_EMPTY_GROUP;
        }
        let mut records: Vec<OffsetsRecord> = group
            .offsets
            .keys()
            .map(|(topic, partition)| (offset_key(group_id, topic, *partition), None))
            .collect();
        records.push((
            OffsetsKey::Group {
                group: group_id.to_owned(),
            },
            None,
        ));
        if let Err(error) = self.topic.append(group_id, &records, now) {
            tracing::warn!(group = group_id, %error, "deleting a group failed");
            return errors::COORDINATOR_NOT_AVAILABLE;
        }
        groups.remove(group_id);
        tracing::info!(group = group_id, "group deleted");
        errors::NONE
    }

    /// OffsetDelete: returns the group's error and one error per `(topic, partition)`. Offsets
    /// of topics the group's members subscribe to stay (GROUP_SUBSCRIBED_TO_TOPIC).
    pub fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
        subscribed: impl Fn(&str, &[u8]) -> Vec<String>,
    ) -> (i16, Vec<i16>) {
        let now = self.now();
        let mut groups = self.groups.lock();
        let Some(group) = groups.get_mut(group_id) else {
            return (errors::GROUP_ID_NOT_FOUND, Vec::new());
        };
        let protocol_type = group.protocol_type.clone().unwrap_or_default();
        let protocol = group.protocol.clone().unwrap_or_default();
        let topics: Vec<String> = if group.state == GroupState::Empty {
            Vec::new()
        } else {
            group
                .members
                .iter()
                .flat_map(|m| subscribed(&protocol_type, &m.metadata_for(&protocol)))
                .collect()
        };
        let mut records = Vec::new();
        let results: Vec<i16> = partitions
            .iter()
            .map(|(topic, partition)| {
                if topics.contains(topic) {
                    return errors::GROUP_SUBSCRIBED_TO_TOPIC;
                }
                if group.offsets.contains_key(&(topic.clone(), *partition)) {
                    records.push((offset_key(group_id, topic, *partition), None));
                }
                errors::NONE
            })
            .collect();
        if let Err(error) = self.topic.append(group_id, &records, now) {
            tracing::warn!(group = group_id, %error, "deleting offsets failed");
            return (errors::COORDINATOR_NOT_AVAILABLE, Vec::new());
        }
        for (key, _) in &records {
            if let OffsetsKey::Offset {
                topic, partition, ..
            } = key
            {
                group.offsets.remove(&(topic.clone(), *partition));
            }
        }
        (errors::NONE, results)
    }

    /// The timers: members whose session lapsed, join and sync phases past their deadline, and
    /// (every `offsets.retention.check.interval.ms`) expired offsets. Called every 100 ms.
    pub fn tick(&self) {
        let now = self.now();
        let mut groups = self.groups.lock();
        for group in groups.values_mut() {
            self.expire_members(group, now);
        }
        let mut next_check = self.next_expiry_check_ms.lock();
        if now >= *next_check {
            *next_check = now + self.config.offsets_retention_check_interval_ms;
            self.expire_offsets(&mut groups, now);
        }
    }

    fn expire_members(&self, group: &mut Group, now: i64) {
        group.pending_member_ids.retain(|_, lapse| *lapse > now);
        let expired: Vec<String> = group
            .members
            .iter()
            .filter(|m| {
                m.awaiting_join.is_none()
                    && m.awaiting_sync.is_none()
                    && now > m.session_deadline_ms
            })
            .map(|m| m.member_id.clone())
            .collect();
        let sync_lapsed =
            group.state == GroupState::CompletingRebalance && now >= group.sync_deadline_ms;
        if !expired.is_empty() {
            tracing::info!(group = %group.id, members = ?expired, "members' sessions expired");
            for member_id in &expired {
                if let Some(member) = group.remove_member(member_id) {
                    answer_removed(member);
                }
            }
        }
        if sync_lapsed {
            let unsynced: Vec<String> = group
                .members
                .iter()
                .filter(|m| m.awaiting_sync.is_none())
                .map(|m| m.member_id.clone())
                .collect();
            for member_id in unsynced {
                group.remove_member(&member_id);
            }
        }
        if (!expired.is_empty() || sync_lapsed) && group.state != GroupState::PreparingRebalance {
            self.prepare_rebalance(group, now);
        }
        self.maybe_complete_join(group, now);
    }

    /// Offsets of empty groups older than `offsets.retention.minutes` (counted from when the
    /// group emptied, or from the commit for groups that never had members) are tombstoned; an
    /// empty group left with no offsets is removed.
    fn expire_offsets(&self, groups: &mut HashMap<String, Group>, now: i64) {
        let retention = self.config.offsets_retention_ms;
        let mut dead = Vec::new();
        for group in groups.values_mut() {
            if group.state != GroupState::Empty {
                continue;
            }
            let expired: Vec<(String, i32)> = group
                .offsets
                .iter()
                .filter(|(_, value)| match value.expire_timestamp {
                    Some(expire) => now >= expire,
                    None if group.protocol_type.is_some() => {
                        now - group.state_timestamp_ms >= retention
                    }
                    None => now - value.commit_timestamp >= retention,
                })
                .map(|(key, _)| key.clone())
                .collect();
            // An empty group left without offsets is dead: its metadata is tombstoned too.
            let dies = expired.len() == group.offsets.len();
            if expired.is_empty() && !dies {
                continue;
            }
            let mut records: Vec<OffsetsRecord> = expired
                .iter()
                .map(|(topic, partition)| (offset_key(&group.id, topic, *partition), None))
                .collect();
            if dies {
                records.push((
                    OffsetsKey::Group {
                        group: group.id.clone(),
                    },
                    None,
                ));
            }
            match self.topic.append(&group.id, &records, now) {
                Ok(()) => {
                    tracing::info!(group = %group.id, offsets = expired.len(), "expired committed offsets");
                    for key in &expired {
                        group.offsets.remove(key);
                    }
                    if dies {
                        dead.push(group.id.clone());
                    }
                }
                Err(error) => {
                    tracing::warn!(group = %group.id, %error, "expiring offsets failed");
                }
            }
        }
        for id in dead {
            groups.remove(&id);
        }
    }

    /// Writes the group's metadata record; returns whether it was stored.
    fn persist_group(&self, group: &Group, now: i64) -> bool {
        let record = (
            OffsetsKey::Group {
                group: group.id.clone(),
            },
            Some(group.to_value().encode()),
        );
        match self.topic.append(&group.id, &[record], now) {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(group = %group.id, %error, "storing group metadata failed");
                false
            }
        }
    }
}

fn offset_key(group: &str, topic: &str, partition: i32) -> OffsetsKey {
    OffsetsKey::Offset {
        group: group.to_owned(),
        topic: topic.to_owned(),
        partition,
    }
}

fn sync_result(group: &Group, assignment: Vec<u8>) -> SyncResult {
    SyncResult {
        error: errors::NONE,
        protocol_type: group.protocol_type.clone(),
        protocol: group.protocol.clone(),
        assignment,
    }
}

/// Answers the requests a removed member was waiting on.
fn answer_removed(mut member: Member) {
    if let Some(waiting) = member.awaiting_join.take() {
        let _ = waiting.send(JoinResult::error(
            errors::UNKNOWN_MEMBER_ID,
            &member.member_id,
        ));
    }
    if let Some(waiting) = member.awaiting_sync.take() {
        let _ = waiting.send(SyncResult::error(errors::UNKNOWN_MEMBER_ID));
    }
}

/// The member exists, is not a fenced static instance, and is in the group's generation.
fn check_member(
    group: &Group,
    member_id: &str,
    group_instance_id: Option<&str>,
    generation: i32,
) -> std::result::Result<(), i16> {
    let Some(member) = group.member(member_id) else {
        if let Some(instance) = group_instance_id
            && group.member_by_instance(instance).is_some()
        {
            return Err(errors::FENCED_INSTANCE_ID);
        }
        return Err(errors::UNKNOWN_MEMBER_ID);
    };
    if group_instance_id.is_some() && member.group_instance_id.as_deref() != group_instance_id {
        return Err(errors::FENCED_INSTANCE_ID);
    }
    if generation != group.generation {
        return Err(errors::ILLEGAL_GENERATION);
    }
    Ok(())
}

/// Applies one record of the offsets topic to the groups being rebuilt at startup.
fn replay(groups: &mut HashMap<String, Group>, (key, value): OffsetsRecord, now: i64) {
    match key {
        OffsetsKey::Offset {
            group,
            topic,
            partition,
        } => match value.map(|bytes| OffsetValue::decode(&bytes)) {
            Some(Ok(value)) => {
                groups
                    .entry(group.clone())
                    .or_insert_with(|| Group::new(&group, now))
                    .offsets
                    .insert((topic, partition), value);
            }
            Some(Err(error)) => {
                tracing::warn!(group, topic, partition, %error, "skipping an unreadable offset record");
            }
            None => {
                if let Some(existing) = groups.get_mut(&group) {
                    existing.offsets.remove(&(topic, partition));
                }
            }
        },
        OffsetsKey::Group { group } => match value.map(|bytes| GroupValue::decode(&bytes)) {
            Some(Ok(value)) => {
                let offsets = groups
                    .remove(&group)
                    .map(|old| old.offsets)
                    .unwrap_or_default();
                let mut rebuilt = Group::from_value(&group, value, now);
                rebuilt.offsets = offsets;
                groups.insert(group, rebuilt);
            }
            Some(Err(error)) => {
                tracing::warn!(group, %error, "skipping an unreadable group metadata record");
            }
            None => {
                // The group's metadata is gone; offsets recorded after this stay, in an empty
                // group, as Kafka keeps them.
                if let Some(existing) = groups.remove(&group) {
                    let mut empty = Group::new(&group, now);
                    empty.offsets = existing.offsets;
                    if !empty.offsets.is_empty() {
                        groups.insert(group, empty);
                    }
                }
            }
        },
    }
}
