//! Members of the classic protocol in a consumer group, as Kafka 4.4 serves them: a classic
//! consumer (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) whose group is a consumer group with
//! members. It is a member like any other, subscribed to the topics its JoinGroup's first
//! protocol names, assigned by the group's server assignor and reconciled towards its target
//! (revocation first); its session timeout and protocols are kept in its subscription record
//! (`ClassicMemberMetadata`). It learns of change the classic way: its Heartbeat is answered
//! REBALANCE_IN_PROGRESS when it must give partitions up, or may take ones that became free;
//! it rejoins, and its SyncGroup carries the partitions it holds now. Its JoinGroup is its
//! heartbeat: the same records, computed by the same steps.
//!
//! Timers: its own session timeout; after a JoinGroup, the rebalance timeout to send its
//! SyncGroup; once told to rejoin, the rebalance timeout to do so. Missing one fences it, as a
//! session does.

use ferrolog_protocol::consumer_protocol;
use ferrolog_records::consumer_group_records::ClassicMemberMetadata;
use ferrolog_storage::manager::TopicId;

use super::MigrationPolicy;
use super::heartbeat::{ConsumerHeartbeat, replay_all};
use super::model::{ConsumerGroup, ConsumerMember, MemberState, Partitions};
use crate::errors;
use crate::group::offsets_topic::OffsetsRecord;
use crate::group::state::{Group, JoinResult, SyncResult};
use crate::group::{GroupCoordinator, GroupCtx, JoinRequest};

/// The embedded protocol type a classic member of a consumer group must speak.
const CONSUMER: &str = "consumer";

impl GroupCoordinator {
    /// A classic member's JoinGroup into the consumer group of `entry`, which has members.
    /// A static member taking the place of the group's last consumer-protocol member
    /// downgrades it, as Kafka does (`downgrade::downgrade_at_join`).
    pub(crate) fn classic_join_to_consumer(
        &self,
        entry: &mut Group,
        request: &JoinRequest,
        ctx: &GroupCtx<'_>,
    ) -> JoinResult {
        let Some(group) = entry.consumer.as_deref_mut() else {
            return JoinResult::error(errors::UNKNOWN_SERVER_ERROR, &request.member_id);
        };
        let downgrade = self.replaces_last_consumer_member(group, request);
        let (records, member_id) = match self.classic_join_records(group, request, downgrade, ctx) {
            Ok(done) => done,
            Err((code, member_id)) => return JoinResult::error(code, &member_id),
        };
        if downgrade {
            return self.downgrade_at_join(entry, records, &member_id, request, ctx);
        }
        if let Err(error) = ctx.append(&records) {
            tracing::warn!(group = %group.id, %error, "storing a classic member's join failed");
            return JoinResult::error(errors::COORDINATOR_NOT_AVAILABLE, &request.member_id);
        }
        replay_all(group, &records);
        let now = ctx.now_ms;
        let Some(member) = group.members.get_mut(&member_id) else {
            debug_assert!(false, "the classic member just written is missing");
            return JoinResult::error(errors::UNKNOWN_SERVER_ERROR, &request.member_id);
        };
        member.rebalance_deadline = None;
        member.join_deadline = None;
        member.session_deadline_ms = now + i64::from(request.session_timeout_ms);
        member.sync_deadline = Some(now + i64::from(request.rebalance_timeout_ms.max(0)));
        JoinResult {
            error: errors::NONE,
            generation: member.current.member_epoch,
            protocol_type: Some(CONSUMER.to_owned()),
            protocol: request.protocols.first().map(|(name, _)| name.clone()),
            leader: String::new(),
            member_id,
            members: Vec::new(),
            skip_assignment: false,
        }
    }

    /// Kafka's checks of the JoinGroup, then the records of the heartbeat it stands for, with
    /// the member's id; refused, the error and the member id to answer with.
    fn classic_join_records(
        &self,
        group: &ConsumerGroup,
        request: &JoinRequest,
        hold_target: bool,
        ctx: &GroupCtx<'_>,
    ) -> Result<(Vec<OffsetsRecord>, String), (i16, String)> {
        // Refusals carry no member id, as Kafka's (MEMBER_ID_REQUIRED alone hands one out).
        let refuse = |code| Err((code, String::new()));
        let config = &self.config.consumer;
        if config.migration == MigrationPolicy::Disabled {
            return refuse(errors::INCONSISTENT_GROUP_PROTOCOL);
        }
        let member_id = if request.member_id.is_empty() {
            random_member_id()
        } else {
            request.member_id.clone()
        };
        let instance = request.group_instance_id.as_deref();
        let holder = instance.and_then(|instance| group.static_members.get(instance));
        if holder.is_none()
            && !group.members.contains_key(&member_id)
            && group.members.len() >= config.max_size as usize
        {
            return refuse(errors::GROUP_MAX_SIZE_REACHED);
        }
        if request.protocol_type != CONSUMER || !supports_protocols(group, &request.protocols) {
            return refuse(errors::INCONSISTENT_GROUP_PROTOCOL);
        }
        if request.require_known_member_id && request.member_id.is_empty() && instance.is_none() {
            return Err((errors::MEMBER_ID_REQUIRED, member_id));
        }
        if !request.member_id.is_empty() && instance.is_some() {
            match holder {
                None => return refuse(errors::UNKNOWN_MEMBER_ID),
                Some(holder) if *holder != member_id => {
                    return refuse(errors::FENCED_INSTANCE_ID);
                }
                Some(_) => {}
            }
        }
        let Some((_, metadata)) = request.protocols.first() else {
            return refuse(errors::INCONSISTENT_GROUP_PROTOCOL);
        };
        let Ok(subscription) = consumer_protocol::decode_subscription(metadata) else {
            return refuse(errors::INCONSISTENT_GROUP_PROTOCOL);
        };
        // A static member coming back under a new id takes its instance's place (epoch 0);
        // a known member rejoins at its own epoch, which a classic member is never fenced on.
        let epoch = if request.member_id.is_empty() {
            0
        } else {
            group
                .members
                .get(&member_id)
                .map_or(0, |member| member.current.member_epoch)
        };
        let heartbeat = ConsumerHeartbeat {
            version: 1,
            group_id: group.id.clone(),
            member_id: member_id.clone(),
            member_epoch: epoch,
            instance_id: request.group_instance_id.clone(),
            rack_id: subscription.rack_id,
            rebalance_timeout_ms: request.rebalance_timeout_ms,
            topic_names: Some(subscription.topics),
            topic_regex: Some(String::new()),
            server_assignor: None,
            owned: Some(self.partitions_by_id(&subscription.owned)),
            client_id: request.client_id.clone(),
            client_host: request.client_host.clone(),
            classic: Some(ClassicMemberMetadata {
                session_timeout_ms: request.session_timeout_ms,
                protocols: request.protocols.clone(),
            }),
            hold_target,
        };
        let (records, member_id, _) = self
            .heartbeat_records(group, &heartbeat, &|_| true, ctx)
            .map_err(|refusal| (refusal.error, String::new()))?;
        Ok((records, member_id))
    }

    /// A classic member's SyncGroup: its partitions as its protocol encodes them, unless the
    /// group moved on and it must rejoin first.
    pub(crate) fn classic_sync_to_consumer(
        &self,
        group: &mut ConsumerGroup,
        (member_id, instance): (&str, Option<&str>),
        generation: i32,
        (protocol_type, protocol_name): crate::group::SyncProtocol<'_>,
        now: i64,
    ) -> SyncResult {
        let assignment_epoch = group.assignment_epoch;
        let member = match classic_member(group, member_id, instance, generation) {
            Ok(member) => member,
            Err(code) => return SyncResult::error(code),
        };
        // A type or name given must be the consumer protocol and the member's first protocol,
        // which its JoinGroup was answered with.
        let first = member
            .subscription
            .classic
            .as_ref()
            .and_then(|classic| classic.protocols.first())
            .map(|(name, _)| name.as_str());
        if protocol_type.is_some_and(|asked| asked != CONSUMER)
            || protocol_name.is_some_and(|asked| Some(asked) != first)
        {
            return SyncResult::error(errors::INCONSISTENT_GROUP_PROTOCOL);
        }
        if assignment_epoch > member.current.member_epoch
            && member.current.state != MemberState::UnrevokedPartitions
        {
            told_to_rejoin(member, now);
            return SyncResult::error(errors::REBALANCE_IN_PROGRESS);
        }
        let Some(classic) = member.subscription.classic.clone() else {
            return SyncResult::error(errors::UNKNOWN_MEMBER_ID);
        };
        member.sync_deadline = None;
        member.session_deadline_ms = now + i64::from(classic.session_timeout_ms);
        let (_, metadata) = classic.protocols.first().cloned().unwrap_or_default();
        let version = consumer_protocol::version(&metadata).unwrap_or(0);
        let partitions = self.named_partitions(&member.current.assigned_partitions());
        // The request's type and name are echoed, as Kafka does.
        SyncResult {
            error: errors::NONE,
            protocol_type: protocol_type.map(str::to_owned),
            protocol: protocol_name.map(str::to_owned),
            assignment: consumer_protocol::encode_assignment(version, &partitions),
        }
    }

    /// A classic member's Heartbeat: its session goes on; REBALANCE_IN_PROGRESS when the
    /// group's target moved past its epoch, when it must revoke, or when the partitions it
    /// waits for are all free.
    pub(crate) fn classic_heartbeat_to_consumer(
        &self,
        group: &mut ConsumerGroup,
        (member_id, instance): (&str, Option<&str>),
        generation: i32,
        now: i64,
    ) -> i16 {
        let assignment_epoch = group.assignment_epoch;
        let waiting = member_waits_for_owned(group, member_id);
        let member = match classic_member(group, member_id, instance, generation) {
            Ok(member) => member,
            Err(code) => return code,
        };
        let session = member
            .subscription
            .classic
            .as_ref()
            .map_or(0, |classic| classic.session_timeout_ms);
        member.session_deadline_ms = now + i64::from(session);
        let state = member.current.state;
        let rejoin = member.current.member_epoch < assignment_epoch
            || state == MemberState::UnrevokedPartitions
            || (state == MemberState::UnreleasedPartitions && !waiting);
        if rejoin {
            told_to_rejoin(member, now);
            errors::REBALANCE_IN_PROGRESS
        } else {
            errors::NONE
        }
    }

    /// LeaveGroup from a consumer group: each named member (by id, or by instance id) is
    /// removed as a leaving consumer-protocol member is (which may downgrade the group); one
    /// error per identity.
    pub(crate) fn classic_leave_from_consumer(
        &self,
        entry: &mut Group,
        leaving: &[(String, Option<String>)],
        ctx: &GroupCtx<'_>,
    ) -> Vec<i16> {
        let Some(group) = entry.consumer.as_deref() else {
            return vec![errors::UNKNOWN_MEMBER_ID; leaving.len()];
        };
        let mut removed: Vec<String> = Vec::new();
        let mut results: Vec<i16> = leaving
            .iter()
            .map(|(member_id, instance)| {
                let found = match instance {
                    None => group
                        .members
                        .contains_key(member_id)
                        .then(|| member_id.clone())
                        .ok_or(errors::UNKNOWN_MEMBER_ID),
                    Some(instance) => match group.static_members.get(instance) {
                        None => Err(errors::UNKNOWN_MEMBER_ID),
                        Some(holder) if !member_id.is_empty() && holder != member_id => {
                            Err(errors::FENCED_INSTANCE_ID)
                        }
                        Some(holder) => Ok(holder.clone()),
                    },
                };
                match found {
                    Ok(id) => {
                        if !removed.contains(&id) {
                            removed.push(id);
                        }
                        errors::NONE
                    }
                    Err(code) => code,
                }
            })
            .collect();
        if removed.is_empty() {
            return results;
        }
        if let Err(error) = self.remove_consumer_members(entry, &removed, ctx) {
            tracing::warn!(group = %entry.id, %error, "storing members' leaving failed");
            for result in &mut results {
                if *result == errors::NONE {
                    *result = errors::COORDINATOR_NOT_AVAILABLE;
                }
            }
        }
        results
    }

    /// Topic names with partitions, as the classic protocol names them, by topic id; topics
    /// that do not exist are left out, as Kafka leaves them.
    pub(super) fn partitions_by_id(&self, named: &[(String, Vec<i32>)]) -> Partitions {
        let manager = self.topic.manager();
        let mut partitions = Partitions::new();
        for (name, indexes) in named {
            if let Some(id) = manager.topic_id(name) {
                partitions
                    .entry(id)
                    .or_default()
                    .extend(indexes.iter().copied());
            }
        }
        partitions
    }

    /// Partitions by topic id as the classic protocol names them, by topic name; topics that
    /// no longer exist are left out.
    pub(super) fn named_partitions(&self, partitions: &Partitions) -> Vec<(String, Vec<i32>)> {
        let manager = self.topic.manager();
        partitions
            .iter()
            .filter_map(|(topic, indexes)| {
                Some((
                    manager.topic_with_id(*topic)?,
                    indexes.iter().copied().collect(),
                ))
            })
            .collect()
    }
}

impl GroupCoordinator {
    /// Whether `request`, a classic static member's JoinGroup without a member id, takes the
    /// place of the group's only consumer-protocol member, leaving classic members only, where
    /// the policy and `group.max.size` let the group go back to the classic protocol.
    fn replaces_last_consumer_member(&self, group: &ConsumerGroup, request: &JoinRequest) -> bool {
        let holder = request
            .group_instance_id
            .as_ref()
            .and_then(|instance| group.static_members.get(instance))
            .and_then(|holder| group.members.get(holder));
        let Some(holder) = holder else {
            return false;
        };
        request.member_id.is_empty()
            && holder.subscription.classic.is_none()
            && group.members.values().all(|member| {
                member.member_id == holder.member_id || member.subscription.classic.is_some()
            })
            && matches!(
                self.config.consumer.migration,
                MigrationPolicy::Bidirectional | MigrationPolicy::Downgrade
            )
            && group.members.len() <= self.config.max_size as usize
    }
}

/// Whether every classic member already in `group` speaks one of `protocols` (any protocol
/// passes when there is none).
fn supports_protocols(group: &ConsumerGroup, protocols: &[(String, Vec<u8>)]) -> bool {
    let classic: Vec<&ClassicMemberMetadata> = group
        .members
        .values()
        .filter_map(|member| member.subscription.classic.as_ref())
        .collect();
    classic.is_empty()
        || protocols.iter().any(|(name, _)| {
            classic
                .iter()
                .all(|member| member.protocols.iter().any(|(theirs, _)| theirs == name))
        })
}

/// The classic member a SyncGroup or Heartbeat names, checked as Kafka checks it: known (by
/// id, or as its instance's holder), of the classic protocol, at that generation.
fn classic_member<'a>(
    group: &'a mut ConsumerGroup,
    member_id: &str,
    instance: Option<&str>,
    generation: i32,
) -> Result<&'a mut ConsumerMember, i16> {
    if let Some(instance) = instance {
        match group.static_members.get(instance) {
            None => return Err(errors::UNKNOWN_MEMBER_ID),
            Some(holder) if holder != member_id => return Err(errors::FENCED_INSTANCE_ID),
            Some(_) => {}
        }
    }
    let member = group
        .members
        .get_mut(member_id)
        .ok_or(errors::UNKNOWN_MEMBER_ID)?;
    if member.subscription.classic.is_none() {
        return Err(errors::UNKNOWN_MEMBER_ID);
    }
    if member.current.member_epoch != generation {
        return Err(errors::ILLEGAL_GENERATION);
    }
    Ok(member)
}

/// Whether some partition of the member's target is still held by another member.
fn member_waits_for_owned(group: &ConsumerGroup, member_id: &str) -> bool {
    let (Some(member), Some(target)) = (group.members.get(member_id), group.target.get(member_id))
    else {
        return false;
    };
    target.iter().any(|(topic, partitions)| {
        partitions.iter().any(|partition| {
            let held = member
                .current
                .assigned
                .get(topic)
                .is_some_and(|assigned| assigned.contains_key(partition));
            !held && group.owner_epoch(*topic, *partition).is_some()
        })
    })
}

/// Arms the member's rejoin timer, unless it is already running.
fn told_to_rejoin(member: &mut ConsumerMember, now: i64) {
    let timeout = i64::from(member.subscription.rebalance_timeout_ms.max(0));
    member.join_deadline.get_or_insert(now + timeout);
}

/// A member id as Kafka's coordinator makes one for a classic member of a consumer group: a
/// random UUID in Kafka's text form (22 characters of URL-safe base64).
fn random_member_id() -> String {
    TopicId::random().to_string()
}
