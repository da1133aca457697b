//! JoinGroup and the join phase, as Kafka's classic group coordinator decides them: a new
//! member starts (or joins) a rebalance; a known member is answered at once when nothing
//! changed; a static member (`group.instance.id`) coming back under an empty member id takes
//! its old place under a new id, fencing the old one (KIP-345), without a rebalance in a Stable
//! group whose protocol it does not change, its leader told it may skip the assignment
//! (KIP-814). The join phase ends when every member has rejoined or the rebalance timeout is
//! up; dynamic members that have not rejoined by then are removed, static ones kept.

use std::sync::atomic::Ordering;

use ferrolog_storage::clock;
use tokio::sync::oneshot;

use super::consumer::offsets::group_tombstones;
use super::membership::{answer_removed, validate_member};
use super::state::{Group, GroupState, JoinResult, Member};
use super::{GroupCoordinator, GroupCtx, JoinRequest, Reply, streams};
use crate::errors;

/// A JoinGroup for an empty consumer group of the KIP-848 protocol: it becomes a classic group
/// (its records tombstoned, its offsets kept), as in Kafka. (One with members takes the
/// classic member in: `consumer::classic_members`.)
fn leave_consumer_protocol(group: &mut Group, ctx: &GroupCtx<'_>) -> Result<(), i16> {
    let Some(consumer) = group.consumer.as_deref() else {
        return Ok(());
    };
    debug_assert!(
        consumer.members.is_empty(),
        "a consumer group with members stays one"
    );
    if let Err(error) = ctx.append(&group_tombstones(consumer)) {
        tracing::warn!(group = %group.id, %error, "converting an empty consumer group failed");
        return Err(errors::COORDINATOR_NOT_AVAILABLE);
    }
    group.consumer = None;
    Ok(())
}

/// Kafka's `acceptJoiningMember` under `group.max.size`: any member of an empty group; during
/// the join phase, a member already waiting for its answer or one more while fewer than
/// `max_size` wait; afterwards, a member of the group or one more while it has fewer.
fn accepts_joining_member(group: &Group, member_id: &str, max_size: u32) -> bool {
    let max = max_size as usize;
    match group.state {
        GroupState::Empty => true,
        GroupState::PreparingRebalance => {
            let awaiting = group
                .members
                .iter()
                .filter(|m| m.awaiting_join.is_some())
                .count();
            group
                .member(member_id)
                .is_some_and(|m| m.awaiting_join.is_some())
                || awaiting < max
        }
        GroupState::CompletingRebalance | GroupState::Stable => {
            group.member(member_id).is_some() || group.members.len() < max
        }
    }
}

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
        self.runtime
            .write(self.partition_of(&request.group), |shard, ctx| {
                let error = |code| Reply::Now(JoinResult::error(code, &request.member_id));
                let now = ctx.now_ms;
                if !request.member_id.is_empty() && !shard.groups.contains_key(&request.group) {
                    return error(errors::UNKNOWN_MEMBER_ID);
                }
                if shard.refuses_new(&request.group) {
                    return error(errors::GROUP_MAX_SIZE_REACHED);
                }
                let groups = &mut shard.groups;
                let group = groups
                    .entry(request.group.clone())
                    .or_insert_with(|| Group::new(&request.group, now));
                // A share group takes no classic member, whatever its state (Kafka's answer).
                if group.share.is_some() {
                    return Reply::Now(JoinResult::error(errors::INCONSISTENT_GROUP_PROTOCOL, ""));
                }
                if group
                    .consumer
                    .as_deref()
                    .is_some_and(|consumer| !consumer.members.is_empty())
                {
                    return Reply::Now(self.classic_join_to_consumer(group, &request, ctx));
                }
                // A streams group with members takes no classic member (Kafka's
                // INCONSISTENT_GROUP_PROTOCOL); an empty one becomes a classic group.
                if let Some(streams) = group.streams.as_deref() {
                    if !streams.members.is_empty() {
                        return error(errors::INCONSISTENT_GROUP_PROTOCOL);
                    }
                    if let Err(error) = ctx.append(&streams::offsets::group_tombstones(streams)) {
                        tracing::warn!(group = %group.id, %error, "converting an empty streams group failed");
                        return Reply::Now(JoinResult::error(errors::COORDINATOR_NOT_AVAILABLE, &request.member_id));
                    }
                    group.streams = None;
                }
                if let Err(code) = leave_consumer_protocol(group, ctx) {
                    return error(code);
                }
                // Before the protocols are looked at, as Kafka checks it.
                if !accepts_joining_member(group, &request.member_id, self.config.max_size) {
                    // As Kafka: a member in the way is dropped, and the joiner refused.
                    if let Some(member) = group.remove_member(&request.member_id) {
                        answer_removed(member);
                    }
                    return Reply::Now(JoinResult::error(errors::GROUP_MAX_SIZE_REACHED, ""));
                }
                if request.protocol_type.is_empty()
                    || !group.accepts(&request.protocol_type, &request.protocols)
                {
                    return error(errors::INCONSISTENT_GROUP_PROTOCOL);
                }
                if group.members.is_empty() {
                    group.protocol_type = Some(request.protocol_type.clone());
                }
                if request.member_id.is_empty() {
                    return self.join_unknown(group, request, ctx);
                }
                if group.pending_member_ids.contains_key(&request.member_id) {
                    if request.group_instance_id.is_some() {
                        // An id handed out to a dynamic member, named with an instance id: Kafka's
                        // coordinator fails the request (an IllegalStateException) and changes nothing.
                        return Reply::Now(JoinResult::error(errors::UNKNOWN_SERVER_ERROR, ""));
                    }
                    group.pending_member_ids.remove(&request.member_id);
                    let member_id = request.member_id.clone();
                    return self.add_member(group, member_id, request, ctx);
                }
                if let Err(code) = validate_member(
                    group,
                    &request.member_id,
                    request.group_instance_id.as_deref(),
                ) {
                    return error(code);
                }
                self.rejoin(group, request, ctx)
            })
    }

    /// A JoinGroup without a member id: a new member, or a static one coming back.
    fn join_unknown(
        &self,
        group: &mut Group,
        request: JoinRequest,
        ctx: &GroupCtx<'_>,
    ) -> Reply<JoinResult> {
        let now = ctx.now_ms;
        if let Some(instance) = request.group_instance_id.as_deref() {
            if let Some(old) = group.member_by_instance(instance) {
                let old_id = old.member_id.clone();
                return self.replace_static_member(group, &old_id, request, ctx);
            }
            // A static member is never sent away for a member id (KIP-394 is for dynamic ones).
            let member_id = self.new_member_id(&request);
            return self.add_member(group, member_id, request, ctx);
        }
        let member_id = self.new_member_id(&request);
        if request.require_known_member_id {
            let lapse = now + i64::from(request.session_timeout_ms);
            group.pending_member_ids.insert(member_id.clone(), lapse);
            return Reply::Now(JoinResult::error(errors::MEMBER_ID_REQUIRED, &member_id));
        }
        self.add_member(group, member_id, request, ctx)
    }

    /// A new member: it waits for the rebalance its arrival starts (or joins the one under way).
    fn add_member(
        &self,
        group: &mut Group,
        member_id: String,
        request: JoinRequest,
        ctx: &GroupCtx<'_>,
    ) -> Reply<JoinResult> {
        let now = ctx.now_ms;
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
        self.rebalance_or_complete_join(group, ctx);
        Reply::Later(receiver)
    }

    /// A known member joins again. In CompletingRebalance with the same protocols, and in a
    /// Stable group for a follower with the same protocols, it is answered at once and nothing
    /// about it changes; otherwise it takes the request's protocols and timeouts and waits for
    /// the rebalance this starts (or the one under way).
    fn rejoin(
        &self,
        group: &mut Group,
        request: JoinRequest,
        ctx: &GroupCtx<'_>,
    ) -> Reply<JoinResult> {
        let now = ctx.now_ms;
        let is_leader = group.leader.as_deref() == Some(request.member_id.as_str());
        let Some(member) = group.member(&request.member_id) else {
            return Reply::Now(JoinResult::error(
                errors::UNKNOWN_MEMBER_ID,
                &request.member_id,
            ));
        };
        let unchanged = member.protocols == request.protocols;
        let answer_now = match group.state {
            GroupState::CompletingRebalance => unchanged,
            GroupState::Stable => unchanged && !is_leader,
            GroupState::PreparingRebalance | GroupState::Empty => false,
        };
        if answer_now {
            return Reply::Now(group.join_result(&request.member_id));
        }
        let member_id = request.member_id.clone();
        let Some(receiver) = update_member(group, &member_id, request, now) else {
            return Reply::Now(JoinResult::error(errors::UNKNOWN_MEMBER_ID, &member_id));
        };
        self.rebalance_or_complete_join(group, ctx);
        Reply::Later(receiver)
    }

    /// A static member comes back under a new member id (its client restarted, or lost the
    /// answer to its JoinGroup): the old id's waiting requests are fenced, and the member, with
    /// its assignment, client id and host, is kept under the new id with the request's
    /// protocols and timeouts. In a Stable group whose selected protocol this does not change,
    /// the change is stored and answered at once; in CompletingRebalance a new rebalance
    /// always starts, as the leader's assignment names the old id.
    fn replace_static_member(
        &self,
        group: &mut Group,
        old_id: &str,
        request: JoinRequest,
        ctx: &GroupCtx<'_>,
    ) -> Reply<JoinResult> {
        let now = ctx.now_ms;
        let new_id = self.new_member_id(&request);
        let leader_before = group.leader.clone();
        let Some(member) = group.member_mut(old_id) else {
            return Reply::Now(JoinResult::error(errors::UNKNOWN_MEMBER_ID, ""));
        };
        if let Some(waiting) = member.awaiting_join.take() {
            let _ = waiting.send(JoinResult::error(errors::FENCED_INSTANCE_ID, old_id));
        }
        if let Some(waiting) = member.awaiting_sync.take() {
            let _ = waiting.send(super::state::SyncResult::error(errors::FENCED_INSTANCE_ID));
        }
        let before = Replaced::from(&*member);
        member.member_id = new_id.clone();
        member.protocols = request.protocols.clone();
        member.session_timeout_ms = request.session_timeout_ms;
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        member.session_deadline_ms = now + i64::from(request.session_timeout_ms);
        if leader_before.as_deref() == Some(old_id) {
            group.leader = Some(new_id.clone());
        }
        if group.pending_sync.remove(old_id) {
            group.pending_sync.insert(new_id.clone());
        }
        match group.state {
            GroupState::Stable if group.select_protocol() == group.protocol => {
                if !self.persist_group(group, ctx) {
                    before.restore(group, &new_id, old_id, leader_before.clone());
                    let mut answer = JoinResult::error(errors::COORDINATOR_NOT_AVAILABLE, "");
                    answer.generation = group.generation;
                    answer.protocol_type = group.protocol_type.clone();
                    answer.protocol = group.protocol.clone();
                    answer.leader = leader_before.unwrap_or_default();
                    return Reply::Now(answer);
                }
                let is_leader = group.leader.as_deref() == Some(new_id.as_str());
                let mut answer = group.join_result(&new_id);
                if request.supports_skip_assignment {
                    // KIP-814: a returning leader gets the members but need not assign again.
                    answer.skip_assignment = is_leader;
                } else {
                    // Before it, the leader's old id is named and no one is asked to assign.
                    answer.leader = leader_before.unwrap_or_default();
                    answer.members.clear();
                }
                Reply::Now(answer)
            }
            GroupState::Stable
            | GroupState::CompletingRebalance
            | GroupState::PreparingRebalance => {
                let Some(receiver) = update_member(group, &new_id, request, now) else {
                    return Reply::Now(JoinResult::error(errors::UNKNOWN_MEMBER_ID, ""));
                };
                if group.state == GroupState::CompletingRebalance {
                    // The leader may already hold the member list with the old id, and would
                    // assign nothing to the new one.
                    self.prepare_rebalance(group, now);
                }
                self.rebalance_or_complete_join(group, ctx);
                Reply::Later(receiver)
            }
            GroupState::Empty => Reply::Now(JoinResult::error(errors::UNKNOWN_SERVER_ERROR, "")),
        }
    }

    /// Starts a rebalance unless one is under way, then ends the join phase if it can.
    fn rebalance_or_complete_join(&self, group: &mut Group, ctx: &GroupCtx<'_>) {
        let now = ctx.now_ms;
        if group.state != GroupState::PreparingRebalance {
            self.prepare_rebalance(group, now);
        }
        self.maybe_complete_join(group, ctx);
    }

    /// Starts (or restarts) the join phase. From CompletingRebalance, waiting SyncGroups are
    /// answered REBALANCE_IN_PROGRESS and the assignments the leader may have sent dropped;
    /// no one owes a SyncGroup any more.
    pub(super) fn prepare_rebalance(&self, group: &mut Group, now: i64) {
        if group.state == GroupState::CompletingRebalance {
            for member in &mut group.members {
                member.assignment.clear();
                if let Some(waiting) = member.awaiting_sync.take() {
                    let _ = waiting.send(super::state::SyncResult::error(
                        errors::REBALANCE_IN_PROGRESS,
                    ));
                }
            }
        }
        group.pending_sync.clear();
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
    /// or when the rebalance timeout is up.
    pub(super) fn maybe_complete_join(&self, group: &mut Group, ctx: &GroupCtx<'_>) {
        let now = ctx.now_ms;
        if group.state != GroupState::PreparingRebalance {
            return;
        }
        let all_joined = group.pending_member_ids.is_empty()
            && group.members.iter().all(|m| m.awaiting_join.is_some());
        let ready = all_joined && now >= group.initial_delay_until_ms;
        if ready || now >= group.rebalance_deadline_ms {
            self.complete_join(group, ctx);
        }
    }

    /// The end of the join phase: dynamic members that have not rejoined are removed (static
    /// ones stay, as KIP-345 keeps them, and owe a SyncGroup like the others); a new
    /// generation starts with a leader that has rejoined, and every waiting JoinGroup is
    /// answered. When no member has rejoined, the phase waits another rebalance timeout.
    fn complete_join(&self, group: &mut Group, ctx: &GroupCtx<'_>) {
        let now = ctx.now_ms;
        let stragglers: Vec<String> = group
            .members
            .iter()
            .filter(|m| m.awaiting_join.is_none() && m.group_instance_id.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for member_id in stragglers {
            if let Some(member) = group.remove_member(&member_id) {
                answer_removed(member);
            }
        }
        group.pending_member_ids.clear();
        if !group.members.is_empty() && !elect_joined_leader(group) {
            tracing::warn!(group = %group.id, "no member rejoined the group; waiting another rebalance timeout");
            group.rebalance_deadline_ms = now + group.rebalance_timeout_ms();
            return;
        }
        group.generation += 1;
        if group.members.is_empty() {
            group.protocol = None;
            group.leader = None;
            group.transition(GroupState::Empty, now);
            self.persist_group(group, ctx);
            return;
        }
        group.protocol = group.select_protocol();
        group.transition(GroupState::CompletingRebalance, now);
        group.sync_deadline_ms = now + group.rebalance_timeout_ms();
        group.pending_sync = group.members.iter().map(|m| m.member_id.clone()).collect();
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
}

/// Gives a known member the request's protocols and timeouts and makes it wait for the join
/// phase's end; the receiver of its answer, or `None` if it is not a member.
fn update_member(
    group: &mut Group,
    member_id: &str,
    request: JoinRequest,
    now: i64,
) -> Option<oneshot::Receiver<JoinResult>> {
    let member = group.member_mut(member_id)?;
    let (sender, receiver) = oneshot::channel();
    member.session_deadline_ms = now + i64::from(request.session_timeout_ms);
    member.session_timeout_ms = request.session_timeout_ms;
    member.rebalance_timeout_ms = request.rebalance_timeout_ms;
    member.protocols = request.protocols;
    member.awaiting_join = Some(sender);
    Some(receiver)
}

/// Keeps the leader if it has rejoined, else makes the first member that has the leader;
/// `false` when no member has rejoined.
fn elect_joined_leader(group: &mut Group) -> bool {
    let leader_joined = group
        .leader
        .as_deref()
        .and_then(|leader| group.member(leader))
        .is_some_and(|leader| leader.awaiting_join.is_some());
    if leader_joined {
        return true;
    }
    match group.members.iter().find(|m| m.awaiting_join.is_some()) {
        Some(joined) => {
            group.leader = Some(joined.member_id.clone());
            true
        }
        None => false,
    }
}

/// What a static member's replacement changed, to undo when its record cannot be stored.
struct Replaced {
    protocols: Vec<(String, Vec<u8>)>,
    session_timeout_ms: i32,
    rebalance_timeout_ms: i32,
    session_deadline_ms: i64,
}

impl Replaced {
    fn from(member: &Member) -> Self {
        Self {
            protocols: member.protocols.clone(),
            session_timeout_ms: member.session_timeout_ms,
            rebalance_timeout_ms: member.rebalance_timeout_ms,
            session_deadline_ms: member.session_deadline_ms,
        }
    }

    /// The member back under `old_id` as it was, and the leader as it was.
    fn restore(self, group: &mut Group, new_id: &str, old_id: &str, leader: Option<String>) {
        if let Some(member) = group.member_mut(new_id) {
            member.member_id = old_id.to_owned();
            member.protocols = self.protocols;
            member.session_timeout_ms = self.session_timeout_ms;
            member.rebalance_timeout_ms = self.rebalance_timeout_ms;
            member.session_deadline_ms = self.session_deadline_ms;
        }
        if group.pending_sync.remove(new_id) {
            group.pending_sync.insert(old_id.to_owned());
        }
        group.leader = leader;
    }
}
