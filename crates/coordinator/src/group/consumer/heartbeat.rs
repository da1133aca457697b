//! ConsumerGroupHeartbeat, as Kafka 4.4's coordinator answers it: the request checked, the
//! member found (or joined, or its static instance taken over), its subscription updated, the
//! group epoch bumped when what the group needs changed, the target assignment recomputed
//! when it lags the group epoch (no more often than `group.consumer.assignment.interval.ms`),
//! and the member moved towards its target. Each step adds records; they are appended as one
//! batch and then replayed into the group.

use std::collections::BTreeMap;

use ferrolog_records::consumer_offsets::OffsetsKey;
use ferrolog_storage::manager::TopicId;

use super::members::{Found, find_member};
use super::model::{
    ConsumerGroup, ConsumerMember, CurrentAssignment, MemberState, Partitions, ResolvedRegex,
    Subscription,
};
use super::reconcile::{MustRejoin, Towards, reconcile};
use super::subscription::{TopicMetadata, group_topic_names, subscribed_ids};
use super::{ConsumerGroupConfig, assignors, records, regex};
use crate::errors;
use crate::group::offsets_topic::OffsetsRecord;
use crate::group::state::Group;
use crate::group::{GroupCoordinator, GroupCtx};

/// A ConsumerGroupHeartbeat (versions 0 and 1).
#[derive(Debug, Clone, Default)]
pub struct ConsumerHeartbeat {
    pub version: i16,
    pub group_id: String,
    pub member_id: String,
    /// 0 to join, -1 to leave, -2 for a static member leaving for a while.
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// -1: unchanged.
    pub rebalance_timeout_ms: i32,
    /// `None`: unchanged.
    pub topic_names: Option<Vec<String>>,
    pub topic_regex: Option<String>,
    pub server_assignor: Option<String>,
    /// The partitions the member owns; `None`: not said.
    pub owned: Option<Partitions>,
    pub client_id: String,
    pub client_host: String,
    /// Set when a classic member's JoinGroup stands for the heartbeat: its session timeout and
    /// protocols, kept in its subscription.
    pub classic: Option<ferrolog_records::consumer_group_records::ClassicMemberMetadata>,
    /// Reconcile towards the target as it stands, computing no new one (a classic static
    /// member whose JoinGroup downgrades the group).
    pub hold_target: bool,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeartbeatAnswer {
    pub error: i16,
    pub message: Option<String>,
    pub member_id: Option<String>,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    /// The member's assigned partitions, when it needs to hear them.
    pub assignment: Option<Partitions>,
}

impl HeartbeatAnswer {
    pub fn error(error: i16, message: impl Into<Option<String>>) -> Self {
        Self {
            error,
            message: message.into(),
            ..Self::default()
        }
    }
}

type Refusal = HeartbeatAnswer;

/// Kafka's checks of a heartbeat before it reaches the group, with its messages.
pub fn check_request(
    request: &ConsumerHeartbeat,
    config: &ConsumerGroupConfig,
) -> Result<(), Refusal> {
    let invalid = |message: &str| Err(Refusal::error(errors::INVALID_REQUEST, message.to_owned()));
    let blank = |value: &str| value.trim().is_empty();
    let epoch = request.member_epoch;
    if (request.version >= 1 || epoch > 0 || epoch == -1) && blank(&request.member_id) {
        return invalid("MemberId can't be empty.");
    }
    if blank(&request.group_id) {
        return invalid("GroupId can't be empty.");
    }
    if request.instance_id.as_deref().is_some_and(blank) {
        return invalid("InstanceId can't be empty.");
    }
    if request.rack_id.as_deref().is_some_and(blank) {
        return invalid("RackId can't be empty.");
    }
    if epoch == 0 {
        if request.rebalance_timeout_ms == -1 {
            return invalid("RebalanceTimeoutMs must be provided in first request.");
        }
        if request.owned.as_ref().is_none_or(|owned| !owned.is_empty()) {
            return invalid("TopicPartitions must be empty when (re-)joining.");
        }
        if request.topic_names.is_none() && request.topic_regex.is_none() {
            return invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            );
        }
    } else if epoch == -2 && request.instance_id.is_none() {
        return invalid("InstanceId can't be null.");
    } else if epoch < -2 {
        return invalid("MemberEpoch is invalid.");
    }
    if let Some(assignor) = &request.server_assignor
        && !config.assignors.contains(assignor)
    {
        return Err(Refusal::error(
            errors::UNSUPPORTED_ASSIGNOR,
            format!(
                "ServerAssignor {assignor} is not supported. Supported assignors: {}.",
                config.assignors.join(", ")
            ),
        ));
    }
    Ok(())
}

impl GroupCoordinator {
    /// A ConsumerGroupHeartbeat; `may_describe` says which topics the member may see, to
    /// resolve its regular expression to.
    pub fn consumer_heartbeat(
        &self,
        mut request: ConsumerHeartbeat,
        may_describe: &dyn Fn(&str) -> bool,
    ) -> HeartbeatAnswer {
        let config = &self.config.consumer;
        if !config.enabled {
            return HeartbeatAnswer::error(errors::UNSUPPORTED_VERSION, None);
        }
        if let Err(refusal) = check_request(&request, config) {
            return refusal;
        }
        if request.member_id.is_empty() {
            request.member_id = TopicId::random().to_string();
        }
        let partition = self.partition_of(&request.group_id);
        self.runtime.write(partition, |shard, ctx| {
            if request.member_epoch < 0 {
                return self.consumer_leave(&mut shard.groups, &request, ctx);
            }
            let fresh;
            let kind = match group_kind(&shard.groups, &request) {
                Ok(kind) => kind,
                Err(refusal) => return refusal,
            };
            let (group, mut records) = match kind {
                GroupKind::Consumer => match shard.groups.get(&request.group_id).and_then(|g| g.consumer.as_deref()) {
                    Some(group) => (group, Vec::new()),
                    None => return HeartbeatAnswer::error(errors::UNKNOWN_SERVER_ERROR, None),
                },
                GroupKind::New if shard.refuses_new(&request.group_id) => {
                    let message = crate::group::too_many_groups(shard.census.max());
                    return HeartbeatAnswer::error(errors::GROUP_MAX_SIZE_REACHED, Some(message));
                }
                GroupKind::New => {
                    fresh = new_group(&request.group_id);
                    // An empty classic group of that id becomes a consumer group: its classic
                    // metadata goes.
                    let classic = shard.groups.contains_key(&request.group_id).then(|| {
                        (OffsetsKey::Group { group: request.group_id.clone() }, None)
                    });
                    (&fresh, classic.into_iter().collect())
                }
                GroupKind::ClassicWithMembers => {
                    let Some(classic) = shard.groups.get_mut(&request.group_id) else {
                        return HeartbeatAnswer::error(errors::UNKNOWN_SERVER_ERROR, None);
                    };
                    match self.upgrade(classic) {
                        Ok((converted, conversion)) => {
                            fresh = converted;
                            (&fresh, conversion)
                        }
                        Err(refusal) => return refusal,
                    }
                }
            };
            let (more, member_id, before) = match self.heartbeat_records(group, &request, may_describe, ctx) {
                Ok(done) => done,
                Err(refusal) => return refusal,
            };
            records.extend(more);
            if let Err(error) = ctx.append(&records) {
                tracing::warn!(group = %request.group_id, %error, "storing a consumer group's change failed");
                return HeartbeatAnswer::error(errors::COORDINATOR_NOT_AVAILABLE, None);
            }
            let entry = shard
                .groups
                .entry(request.group_id.clone())
                .or_insert_with(|| Group::new(&request.group_id, ctx.now_ms));
            let upgraded = kind == GroupKind::ClassicWithMembers;
            if kind != GroupKind::Consumer {
                // What the classic group was (members, generation, protocol) goes with it.
                entry.drop_classic_membership(ctx.now_ms);
            }
            let group = entry
                .consumer
                .get_or_insert_with(|| Box::new(new_group(&request.group_id)));
            replay_all(group, &records);
            if upgraded {
                arm_classic_sessions(group, ctx.now_ms);
            }
            let answer = self.answer(group, &member_id, &request, &before, ctx.now_ms);
            entry.check_kind();
            answer
        })
    }

    /// The answer to a member whose heartbeat's records were written and replayed; arms its
    /// timers.
    fn answer(
        &self,
        group: &mut ConsumerGroup,
        member_id: &str,
        request: &ConsumerHeartbeat,
        before: &CurrentAssignment,
        now: i64,
    ) -> HeartbeatAnswer {
        let timing = self
            .group_configs
            .consumer_timing(&group.id, &self.config.consumer);
        let session_timeout = i64::from(timing.session_timeout_ms);
        let Some(member) = group.members.get_mut(member_id) else {
            debug_assert!(false, "the member of a heartbeat just written is missing");
            return HeartbeatAnswer::error(errors::UNKNOWN_SERVER_ERROR, None);
        };
        member.session_deadline_ms = now + session_timeout;
        arm_rebalance_timer(member, before, now);
        let changed = member.current.assigned != before.assigned;
        let full = request.rebalance_timeout_ms != -1
            && (request.topic_names.is_some() || request.topic_regex.is_some())
            && request.owned.is_some();
        HeartbeatAnswer {
            member_id: Some(member_id.to_owned()),
            member_epoch: member.current.member_epoch,
            heartbeat_interval_ms: timing.heartbeat_interval_ms,
            assignment: (request.member_epoch == 0 || full || changed)
                .then(|| member.current.assigned_partitions()),
            ..HeartbeatAnswer::default()
        }
    }

    /// The records of one heartbeat, the member's id, and its current assignment before.
    pub(super) fn heartbeat_records(
        &self,
        group: &ConsumerGroup,
        request: &ConsumerHeartbeat,
        may_describe: &dyn Fn(&str) -> bool,
        ctx: &GroupCtx<'_>,
    ) -> Result<(Vec<OffsetsRecord>, String, CurrentAssignment), Refusal> {
        let group_id = &request.group_id;
        check_room(group, request, self.config.consumer.max_size)?;
        let Found {
            mut member,
            before,
            mut records,
            inherited_target,
        } = find_member(group, request)?;
        let updated = updated_subscription(&member.subscription, request);
        let names_changed = updated.topic_names != member.subscription.topic_names;
        let regex_changed = updated.topic_regex != member.subscription.topic_regex;
        if updated != member.subscription || !group.members.contains_key(&member.member_id) {
            records.push(records::member_metadata(
                group_id,
                &member.member_id,
                &updated,
            ));
        }
        let assignor_changed = updated.server_assignor != member.subscription.server_assignor;
        let regexes = regex::resolve(
            group,
            &member.member_id,
            &member.subscription,
            &updated,
            (self.topic.manager(), may_describe),
            ctx.now_ms,
            &mut records,
        )?;
        member.subscription = updated;
        let names = group_topic_names(
            group,
            &regexes,
            Some((&member.member_id, &member.subscription)),
        );
        let metadata = TopicMetadata::read(self.topic.manager(), &names);
        let mut group_epoch = group.group_epoch;
        let hash = metadata.hash();
        if names_changed || regex_changed || assignor_changed || hash != group.metadata_hash {
            group_epoch += 1;
            records.push(records::group_epoch(group_id, group_epoch, hash));
        }
        let (target_epoch, target) = if request.hold_target {
            let last = inherited_target.or_else(|| group.target.get(&member.member_id).cloned());
            (group.assignment_epoch, last.unwrap_or_default())
        } else {
            self.target_for(
                group,
                (&member, &regexes),
                inherited_target,
                group_epoch,
                &metadata,
                ctx.now_ms,
                &mut records,
            )?
        };
        let subscribed = subscribed_ids(&member.subscription, &regexes, &metadata);
        let owner_of = |topic: TopicId, partition: i32| {
            group.owner_epoch(topic, partition).is_some() && !member.current.owns(topic, partition)
        };
        let towards = Towards {
            target_epoch,
            target: &target,
            owned: request.owned.as_ref(),
            owned_elsewhere: &owner_of,
            subscribed: &|topic| subscribed.contains(&topic),
            subscription_changed: names_changed || regex_changed,
        };
        let next = reconcile(&member.current, &towards).map_err(|MustRejoin| {
            Refusal::error(
                errors::FENCED_MEMBER_EPOCH,
                "The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin.".to_owned(),
            )
        })?;
        if next != member.current {
            records.push(records::current_assignment(
                group_id,
                &member.member_id,
                &next,
            ));
        }
        Ok((records, member.member_id, before))
    }

    /// The target epoch and the member's target: a new target assignment when it lags the
    /// group epoch and the assignment interval allows, else the last one.
    #[allow(
        clippy::too_many_arguments,
        reason = "one step of the heartbeat, named"
    )]
    fn target_for(
        &self,
        group: &ConsumerGroup,
        (member, regexes): (&ConsumerMember, &BTreeMap<String, ResolvedRegex>),
        inherited: Option<Partitions>,
        group_epoch: i32,
        metadata: &TopicMetadata,
        now: i64,
        records: &mut Vec<OffsetsRecord>,
    ) -> Result<(i32, Partitions), Refusal> {
        let config = &self.config.consumer;
        let interval = self
            .group_configs
            .consumer_timing(&group.id, config)
            .assignment_interval_ms;
        let due = group.assignment_timestamp == 0
            || interval == 0
            || now >= group.assignment_timestamp + interval;
        let last = || {
            inherited
                .clone()
                .or_else(|| group.target.get(&member.member_id).cloned())
                .unwrap_or_default()
        };
        if group.assignment_epoch >= group_epoch || !due {
            return Ok((group.assignment_epoch, last()));
        }
        let assignor = preferred_assignor(group, Some(member), &config.assignors);
        let specs = assignors::member_specs(group, regexes, member, inherited.as_ref(), metadata);
        let targets = assignors::assign(&assignor, &specs, &metadata.partition_counts()).map_err(
            |error| {
                tracing::warn!(group = %group.id, %error, "assignor failed");
                Refusal::error(errors::UNKNOWN_SERVER_ERROR, None)
            },
        )?;
        let group_id = &group.id;
        for (member_id, target) in &targets {
            let old = if member_id == &member.member_id {
                inherited.as_ref().or(group.target.get(member_id))
            } else {
                group.target.get(member_id)
            };
            if old != Some(target) {
                records.push(records::target_member(group_id, member_id, target));
            }
        }
        records.push(records::target_metadata(group_id, group_epoch, now));
        let target = targets.get(&member.member_id).cloned().unwrap_or_default();
        Ok((group_epoch, target))
    }
}

/// `group.consumer.max.size`: a member not in the group yet (nor a static instance it knows)
/// finds no room in a full group.
fn check_room(
    group: &ConsumerGroup,
    request: &ConsumerHeartbeat,
    max_size: u32,
) -> Result<(), Refusal> {
    let is_known_static = request
        .instance_id
        .as_ref()
        .is_some_and(|instance| group.static_members.contains_key(instance));
    if !is_known_static
        && group.members.len() >= max_size as usize
        && !group.members.contains_key(&request.member_id)
    {
        return Err(Refusal::error(
            errors::GROUP_MAX_SIZE_REACHED,
            format!("The consumer group has reached its maximum capacity of {max_size} members."),
        ));
    }
    Ok(())
}

/// A new consumer group: epochs start at 1, as Kafka's.
pub(crate) fn new_group(id: &str) -> ConsumerGroup {
    ConsumerGroup {
        id: id.to_owned(),
        group_epoch: 1,
        assignment_epoch: 1,
        ..ConsumerGroup::default()
    }
}

/// What a heartbeat's group is to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GroupKind {
    /// A consumer group.
    Consumer,
    /// None yet, or an empty classic group, which the joining member makes a consumer group.
    New,
    /// A classic group with members, which the joining member upgrades.
    ClassicWithMembers,
}

fn group_kind(
    groups: &std::collections::HashMap<String, Group>,
    request: &ConsumerHeartbeat,
) -> Result<GroupKind, Refusal> {
    let group_id = &request.group_id;
    let joining = request.member_epoch == 0;
    match groups.get(group_id) {
        Some(Group {
            consumer: Some(_), ..
        }) => Ok(GroupKind::Consumer),
        Some(Group {
            streams: Some(_), ..
        })
        | Some(Group { share: Some(_), .. }) => Err(Refusal::error(
            errors::GROUP_ID_NOT_FOUND,
            format!("Group {group_id} is not a consumer group."),
        )),
        None if joining => Ok(GroupKind::New),
        None => Err(Refusal::error(
            errors::GROUP_ID_NOT_FOUND,
            format!("Consumer group {group_id} not found."),
        )),
        Some(classic) if joining && classic.members.is_empty() => Ok(GroupKind::New),
        Some(_) if joining => Ok(GroupKind::ClassicWithMembers),
        Some(_) => Err(Refusal::error(
            errors::GROUP_ID_NOT_FOUND,
            format!("Group {group_id} is not a consumer group."),
        )),
    }
}

/// Arms the session of each classic member of a group just upgraded, with its own timeout.
fn arm_classic_sessions(group: &mut ConsumerGroup, now: i64) {
    for member in group.members.values_mut() {
        if let Some(classic) = &member.subscription.classic {
            member.session_deadline_ms = now + i64::from(classic.session_timeout_ms);
        }
    }
}

/// The subscription with the request's fields applied (a missing field is unchanged).
fn updated_subscription(old: &Subscription, request: &ConsumerHeartbeat) -> Subscription {
    let mut updated = old.clone();
    if request.instance_id.is_some() {
        updated.instance_id.clone_from(&request.instance_id);
    }
    if request.rack_id.is_some() {
        updated.rack_id.clone_from(&request.rack_id);
    }
    if request.rebalance_timeout_ms != -1 {
        updated.rebalance_timeout_ms = request.rebalance_timeout_ms;
    }
    if request.server_assignor.is_some() {
        updated.server_assignor.clone_from(&request.server_assignor);
    }
    if let Some(names) = &request.topic_names {
        let mut names = names.clone();
        names.sort();
        names.dedup();
        updated.topic_names = names;
    }
    if let Some(regex) = &request.topic_regex {
        updated.topic_regex = (!regex.is_empty()).then(|| regex.clone());
    }
    updated.client_id.clone_from(&request.client_id);
    updated.client_host.clone_from(&request.client_host);
    // A member speaks the protocol its last request did.
    updated.classic.clone_from(&request.classic);
    updated
}

/// The assignor most members prefer (with `member` standing in for its old self), else the
/// first configured.
pub(super) fn preferred_assignor(
    group: &ConsumerGroup,
    member: Option<&ConsumerMember>,
    configured: &[String],
) -> String {
    let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    let others = group
        .members
        .values()
        .filter(|other| member.is_none_or(|m| m.member_id != other.member_id));
    for other in others.chain(member) {
        if let Some(name) = &other.subscription.server_assignor {
            *counts.entry(name).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .max_by_key(|(_, count)| *count)
        .map(|(name, _)| name.to_owned())
        .or_else(|| configured.first().cloned())
        .unwrap_or_else(|| "uniform".to_owned())
}

/// Arms the rebalance timer of a member that has just started revoking, and disarms it once
/// the member is past revoking.
fn arm_rebalance_timer(member: &mut ConsumerMember, before: &CurrentAssignment, now: i64) {
    if member.current.state != MemberState::UnrevokedPartitions {
        member.rebalance_deadline = None;
    } else if member.current != *before {
        member.arm_rebalance_deadline(now);
    }
}

/// Replays a batch the group has just written.
pub(super) fn replay_all(group: &mut ConsumerGroup, records: &[OffsetsRecord]) {
    for (key, value) in records {
        if let OffsetsKey::Consumer { kind, sub_key, .. } = key
            && let Err(error) = records::replay(group, *kind, sub_key, value.as_deref())
        {
            // The records were encoded a moment ago: failing to read them back is a bug.
            debug_assert!(
                false,
                "a consumer group record just written does not replay: {error}"
            );
        }
    }
}
