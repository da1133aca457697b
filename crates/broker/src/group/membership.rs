//! Group membership: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, and the session and
//! rebalance timers, moving a group through Kafka's states (see [`super::state`]).

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use ferrolog_storage::clock;
use tokio::sync::oneshot;

use super::state::{Group, GroupState, JoinResult, Member, SyncResult};
use super::{GroupCoordinator, JoinRequest, Reply};
use crate::errors;

impl GroupCoordinator {
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
        let session_timeout = clock::millis(i64::from(request.session_timeout_ms));
        if request.session_timeout_ms < 0
            || session_timeout < self.config.min_session_timeout
            || session_timeout > self.config.max_session_timeout
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
            now + clock::kafka_ms(self.config.initial_rebalance_delay).min(timeout)
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

    pub(super) fn expire_members(&self, group: &mut Group, now: i64) {
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
pub(super) fn check_member(
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
