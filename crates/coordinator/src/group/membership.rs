//! Group membership after the join: SyncGroup, Heartbeat, LeaveGroup, the session and sync
//! timers, and the check every member-naming request makes (Kafka's `validateMember`), moving
//! a group through Kafka's states (see [`super::state`]; JoinGroup is [`super::join`]).

use std::collections::HashMap;

use tokio::sync::oneshot;

use super::state::{Group, GroupState, JoinResult, Member, SyncResult};
use super::{GroupCoordinator, GroupCtx, Reply};
use crate::errors;

/// A SyncGroup's protocol type and name (version 5 and later; `None` before, or when not
/// given).
pub type SyncProtocol<'a> = (Option<&'a str>, Option<&'a str>);

impl GroupCoordinator {
    pub fn sync(
        &self,
        group_id: &str,
        (member_id, group_instance_id): (&str, Option<&str>),
        generation: i32,
        protocol: SyncProtocol<'_>,
        assignments: Vec<(String, Vec<u8>)>,
    ) -> Reply<SyncResult> {
        self.runtime
            .write(self.partition_of(group_id), |shard, ctx| {
                let now = ctx.now_ms;
                let groups = &mut shard.groups;
                let error = |code| Reply::Now(SyncResult::error(code));
                let Some(group) = groups.get_mut(group_id) else {
                    return error(errors::UNKNOWN_MEMBER_ID);
                };
                if let Some(consumer) = group.consumer.as_deref_mut() {
                    let member = (member_id, group_instance_id);
                    let answer =
                        self.classic_sync_to_consumer(consumer, member, generation, protocol, now);
                    return Reply::Now(answer);
                }
                if let Err(code) = check_member(group, member_id, group_instance_id, generation) {
                    return error(code);
                }
                if protocol_differs(group, protocol) {
                    return error(errors::INCONSISTENT_GROUP_PROTOCOL);
                }
                let is_leader = group.leader.as_deref() == Some(member_id);
                if matches!(
                    group.state,
                    GroupState::CompletingRebalance | GroupState::Stable
                ) {
                    group.pending_sync.remove(member_id);
                }
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
                            let stored = self.persist_group(group, ctx);
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
            })
    }

    pub fn heartbeat(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation: i32,
    ) -> i16 {
        self.runtime
            .write(self.partition_of(group_id), |shard, ctx| {
                let now = ctx.now_ms;
                let groups = &mut shard.groups;
                let Some(group) = groups.get_mut(group_id) else {
                    return errors::UNKNOWN_MEMBER_ID;
                };
                if let Some(consumer) = group.consumer.as_deref_mut() {
                    let member = (member_id, group_instance_id);
                    return self.classic_heartbeat_to_consumer(consumer, member, generation, now);
                }
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
            })
    }

    /// LeaveGroup for each `(member id, instance id)`, in Kafka's order: a member named only
    /// by its instance id; a member id handed out but not yet used; a member, checked as every
    /// request naming one is. Returns the group's error (none: a group that does not exist
    /// answers each member UNKNOWN_MEMBER_ID, as Kafka does) and one error per member.
    pub fn leave(&self, group_id: &str, leaving: &[(String, Option<String>)]) -> (i16, Vec<i16>) {
        self.runtime
            .write(self.partition_of(group_id), |shard, ctx| {
                let now = ctx.now_ms;
                let groups = &mut shard.groups;
                let Some(group) = groups.get_mut(group_id) else {
                    return (errors::NONE, vec![errors::UNKNOWN_MEMBER_ID; leaving.len()]);
                };
                if group.consumer.is_some() {
                    return (
                        errors::NONE,
                        self.classic_leave_from_consumer(group, leaving, ctx),
                    );
                }
                let mut removed_any = false;
                let results = leaving
                    .iter()
                    .map(|(member_id, instance_id)| {
                        let target = if member_id.is_empty() {
                            instance_id
                                .as_deref()
                                .and_then(|instance| group.member_by_instance(instance))
                                .map(|m| m.member_id.clone())
                                .ok_or(errors::UNKNOWN_MEMBER_ID)
                        } else if group.pending_member_ids.remove(member_id).is_some() {
                            return errors::NONE;
                        } else {
                            validate_member(group, member_id, instance_id.as_deref())
                                .map(|()| member_id.clone())
                        };
                        match target {
                            Ok(id) => {
                                if let Some(member) = group.remove_member(&id) {
                                    answer_removed(member);
                                }
                                group.pending_sync.remove(&id);
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
                }
                self.maybe_complete_join(group, ctx);
                (errors::NONE, results)
            })
    }

    /// The timers of one group: members whose session lapsed are removed (not those waiting
    /// for their JoinGroup or SyncGroup to be answered); once the sync phase's time is up, in
    /// CompletingRebalance or Stable, members that still owe their SyncGroup are removed too,
    /// static ones included; either starts a rebalance. Then the join phase ends if it can.
    pub(super) fn expire_members(&self, group: &mut Group, ctx: &GroupCtx<'_>) {
        let now = ctx.now_ms;
        group.pending_member_ids.retain(|_, lapse| *lapse > now);
        let mut expired: Vec<String> = group
            .members
            .iter()
            .filter(|m| {
                m.awaiting_join.is_none()
                    && m.awaiting_sync.is_none()
                    && now > m.session_deadline_ms
            })
            .map(|m| m.member_id.clone())
            .collect();
        if !expired.is_empty() {
            tracing::info!(group = %group.id, members = ?expired, "members' sessions expired");
        }
        let sync_lapsed = matches!(
            group.state,
            GroupState::CompletingRebalance | GroupState::Stable
        ) && !group.pending_sync.is_empty()
            && now >= group.sync_deadline_ms;
        if sync_lapsed {
            let unsynced: Vec<String> = std::mem::take(&mut group.pending_sync)
                .into_iter()
                .collect();
            tracing::info!(group = %group.id, members = ?unsynced, "members sent no SyncGroup in time");
            expired.extend(unsynced);
        }
        for member_id in &expired {
            if let Some(member) = group.remove_member(member_id) {
                answer_removed(member);
            }
            group.pending_sync.remove(member_id);
        }
        if !expired.is_empty() && group.state != GroupState::PreparingRebalance {
            self.prepare_rebalance(group, now);
        }
        self.maybe_complete_join(group, ctx);
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

/// Answers the requests a removed member was waiting on (its JoinGroup with no member id, as
/// Kafka answers it).
pub(super) fn answer_removed(mut member: Member) {
    if let Some(waiting) = member.awaiting_join.take() {
        let _ = waiting.send(JoinResult::error(errors::UNKNOWN_MEMBER_ID, ""));
    }
    if let Some(waiting) = member.awaiting_sync.take() {
        let _ = waiting.send(SyncResult::error(errors::UNKNOWN_MEMBER_ID));
    }
}

/// Kafka's `ClassicGroup.validateMember`, the check of every request naming a member: an
/// instance id must be the group's (UNKNOWN_MEMBER_ID) and held by that member id
/// (FENCED_INSTANCE_ID: another incarnation of the instance took its place); then the member
/// id must be the group's (UNKNOWN_MEMBER_ID). A request without an instance id is never
/// fenced.
pub(super) fn validate_member(
    group: &Group,
    member_id: &str,
    group_instance_id: Option<&str>,
) -> Result<(), i16> {
    if let Some(instance) = group_instance_id {
        match group.member_by_instance(instance) {
            None => return Err(errors::UNKNOWN_MEMBER_ID),
            Some(holder) if holder.member_id != member_id => {
                return Err(errors::FENCED_INSTANCE_ID);
            }
            Some(_) => {}
        }
    }
    match group.member(member_id) {
        Some(_) => Ok(()),
        None => Err(errors::UNKNOWN_MEMBER_ID),
    }
}

/// [`validate_member`], then the generation (ILLEGAL_GENERATION).
/// Kafka's check of a SyncGroup's protocol: a type or name given must be the group's.
fn protocol_differs(group: &Group, (protocol_type, protocol): SyncProtocol<'_>) -> bool {
    let differs = |asked: Option<&str>, group: Option<&String>| {
        asked
            .zip(group)
            .is_some_and(|(asked, group)| asked != group)
    };
    differs(protocol_type, group.protocol_type.as_ref())
        || differs(protocol, group.protocol.as_ref())
}

pub(super) fn check_member(
    group: &Group,
    member_id: &str,
    group_instance_id: Option<&str>,
    generation: i32,
) -> Result<(), i16> {
    validate_member(group, member_id, group_instance_id)?;
    if generation != group.generation {
        return Err(errors::ILLEGAL_GENERATION);
    }
    Ok(())
}
