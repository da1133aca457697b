//! StreamsGroupHeartbeat, as Kafka 4.4's coordinator answers it: the request checked, the
//! member found (or joined), its details and the topology adopted, the topology configured
//! against the topics, the group epoch bumped when what the group needs changed, the target
//! computed when it lags (after the initial delay, no more often than the assignment interval),
//! and the member's tasks moved towards it. The records are appended as one batch and then
//! replayed into the group; what Kafka keeps only in memory is set after.

use std::collections::BTreeMap;

use ferrolog_records::consumer_offsets::OffsetsKey;
use ferrolog_records::streams_group_records::{KeyValue, StreamsTopology};

use super::assignor::TaskId;
use super::members::{Found, find_member, updated_metadata};
use super::model::StreamsGroup;
use super::reconcile::{MustRejoin, TaskSets, Towards, reconcile};
use super::records;
use super::target::Planned;
use super::topology::InternalTopic;
use crate::errors;
use crate::group::offsets_topic::OffsetsRecord;
use crate::group::state::Group;
use crate::group::{GroupCoordinator, GroupCtx};

/// A StreamsGroupHeartbeat (versions 0 and 1).
#[derive(Debug, Clone, Default)]
pub struct StreamsHeartbeat {
    pub version: i16,
    pub group_id: String,
    pub member_id: String,
    /// 0 to join, -1 to leave, -2 for a static member leaving for a while.
    pub member_epoch: i32,
    pub endpoint_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// -1: unchanged.
    pub rebalance_timeout_ms: i32,
    pub topology: Option<StreamsTopology>,
    /// The tasks the member owns, when it sent all three lists.
    pub owned: Option<TaskSets>,
    /// How many of the three task lists it sent (all or none is valid).
    pub task_lists_sent: u8,
    pub process_id: Option<String>,
    pub user_endpoint: Option<(String, u16)>,
    pub client_tags: Option<Vec<KeyValue>>,
    pub task_offsets: Option<Vec<(TaskId, i64)>>,
    pub task_end_offsets: Option<Vec<(TaskId, i64)>>,
    pub shutdown_application: bool,
    pub client_id: String,
    pub client_host: String,
}

/// A status of the answer (Kafka's status codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamsStatus {
    StaleTopology = 0,
    MissingSourceTopics = 1,
    IncorrectlyPartitionedTopics = 2,
    MissingInternalTopics = 3,
    ShutdownApplication = 4,
    AssignmentDelayed = 5,
}

/// The partitions one member's tasks read, for its endpoint (interactive queries).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointPartitions {
    pub endpoint: (String, u16),
    pub active: BTreeMap<String, Vec<i32>>,
    pub standby: BTreeMap<String, Vec<i32>>,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamsAnswer {
    pub error: i16,
    pub message: Option<String>,
    pub member_id: String,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    pub task_offset_interval_ms: i32,
    pub acceptable_recovery_lag: i64,
    pub statuses: Vec<(StreamsStatus, String)>,
    /// The member's tasks, when it needs to hear them.
    pub tasks: Option<TaskSets>,
    pub endpoint_epoch: i32,
    pub partitions_by_endpoint: Option<Vec<EndpointPartitions>>,
    /// Internal topics the broker is to create for the group.
    pub to_create: BTreeMap<String, InternalTopic>,
}

impl StreamsAnswer {
    pub fn error(error: i16, message: impl Into<Option<String>>) -> Self {
        Self {
            error,
            message: message.into(),
            acceptable_recovery_lag: -1,
            ..Self::default()
        }
    }
}

/// A heartbeat refused: its error and message, the rest of the answer at its defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub error: i16,
    pub message: Option<String>,
}

impl Refusal {
    pub fn new(error: i16, message: impl Into<Option<String>>) -> Self {
        Self {
            error,
            message: message.into(),
        }
    }
}

impl From<Refusal> for StreamsAnswer {
    fn from(refusal: Refusal) -> Self {
        StreamsAnswer::error(refusal.error, refusal.message)
    }
}

/// Kafka's checks of a heartbeat before it reaches the group, with its messages.
pub fn check_request(request: &StreamsHeartbeat) -> Result<(), Refusal> {
    let invalid = |message: String| Err(Refusal::new(errors::INVALID_REQUEST, message));
    let blank = |value: &str| value.trim().is_empty();
    let regex = request
        .topology
        .iter()
        .flat_map(|t| &t.subtopologies)
        .any(|s| !s.source_topic_regex.is_empty());
    if regex {
        return invalid("Regular expressions for source topics are not supported yet.".to_owned());
    }
    if blank(&request.member_id) {
        return invalid("MemberId can't be empty.".to_owned());
    }
    if blank(&request.group_id) {
        return invalid("GroupId can't be empty.".to_owned());
    }
    if request.instance_id.as_deref().is_some_and(blank) {
        return invalid("InstanceId can't be empty.".to_owned());
    }
    if request.rack_id.as_deref().is_some_and(blank) {
        return invalid("RackId can't be empty.".to_owned());
    }
    let epoch = request.member_epoch;
    if epoch == 0 {
        check_joining(request)?;
    } else if epoch == -2 && request.instance_id.is_none() {
        return invalid("InstanceId can't be null.".to_owned());
    } else if epoch < -2 {
        return invalid(format!(
            "MemberEpoch is {epoch}, but must be greater than or equal to -2."
        ));
    }
    if request.task_lists_sent != 0 && request.task_lists_sent != 3 {
        return invalid("If one task-type is non-null, all must be non-null.".to_owned());
    }
    if epoch != 0 && request.topology.is_some() {
        return invalid("Topology can only be provided when (re-)joining.".to_owned());
    }
    Ok(())
}

fn check_joining(request: &StreamsHeartbeat) -> Result<(), Refusal> {
    let invalid = |message: &str| Err(Refusal::new(errors::INVALID_REQUEST, message.to_owned()));
    if request.rebalance_timeout_ms == -1 {
        return invalid("RebalanceTimeoutMs must be provided in first request.");
    }
    let owned = request.owned.as_ref();
    if owned.is_none_or(|o| !o.active.is_empty()) {
        return invalid("ActiveTasks must be empty when (re-)joining.");
    }
    if owned.is_none_or(|o| !o.standby.is_empty()) {
        return invalid("StandbyTasks must be empty when (re-)joining.");
    }
    if owned.is_none_or(|o| !o.warmup.is_empty()) {
        return invalid("WarmupTasks must be empty when (re-)joining.");
    }
    let Some(topology) = &request.topology else {
        return invalid("Topology must be non-null when (re-)joining.");
    };
    for topic in topology
        .subtopologies
        .iter()
        .flat_map(|s| &s.state_changelog_topics)
    {
        if topic.partitions != 0 {
            return Err(Refusal::new(
                errors::STREAMS_INVALID_TOPOLOGY,
                format!(
                    "Changelog topic {} must have an undefined partition count, but it is set to {}.",
                    topic.name, topic.partitions
                ),
            ));
        }
    }
    Ok(())
}

impl GroupCoordinator {
    /// A StreamsGroupHeartbeat.
    pub fn streams_heartbeat(&self, request: StreamsHeartbeat) -> StreamsAnswer {
        if !self.config.streams.enabled {
            return StreamsAnswer::error(errors::UNSUPPORTED_VERSION, None);
        }
        if let Err(refusal) = check_request(&request) {
            return refusal.into();
        }
        let partition = self.partition_of(&request.group_id);
        self.runtime.write(partition, |shard, ctx| {
            if request.member_epoch < 0 {
                return self.streams_leave(&mut shard.groups, &request, ctx);
            }
            let fresh;
            let (group, mut records) = match streams_group_of(&shard.groups, &request) {
                Ok(Some(group)) => (group, Vec::new()),
                Ok(None) if shard.refuses_new(&request.group_id) => {
                    let message = crate::group::too_many_groups(shard.census.max());
                    return StreamsAnswer::error(errors::GROUP_MAX_SIZE_REACHED, Some(message));
                }
                Ok(None) => {
                    fresh = StreamsGroup::new(&request.group_id);
                    // An empty classic group of that id becomes a streams group.
                    let classic = shard.groups.contains_key(&request.group_id).then(|| {
                        (OffsetsKey::Group { group: request.group_id.clone() }, None)
                    });
                    (&fresh, classic.into_iter().collect())
                }
                Err(refusal) => return refusal.into(),
            };
            let (planned, more) = match self.plan_heartbeat(group, &request, ctx) {
                Ok(done) => done,
                Err(refusal) => return refusal.into(),
            };
            records.extend(more);
            if let Err(error) = ctx.append(&records) {
                tracing::warn!(group = %request.group_id, %error, "storing a streams group's change failed");
                return StreamsAnswer::error(errors::COORDINATOR_NOT_AVAILABLE, None);
            }
            let entry = shard
                .groups
                .entry(request.group_id.clone())
                .or_insert_with(|| Group::new(&request.group_id, ctx.now_ms));
            entry.drop_classic_membership(ctx.now_ms);
            let group = entry
                .streams
                .get_or_insert_with(|| Box::new(StreamsGroup::new(&request.group_id)));
            replay_all(group, &records);
            self.settle(group, &request, &planned, ctx.now_ms)
        })
    }

    /// The records of one heartbeat, and what the answer needs of them.
    fn plan_heartbeat(
        &self,
        group: &StreamsGroup,
        request: &StreamsHeartbeat,
        ctx: &GroupCtx<'_>,
    ) -> Result<(Planned, Vec<OffsetsRecord>), Refusal> {
        let config = &self.config.streams;
        check_room(group, request, config.max_size)?;
        let Found {
            mut member,
            mut records,
            inherited_target,
            replaced,
        } = find_member(group, request)?;
        let before = member.current.clone();
        if let Some(list) = &request.task_offsets {
            member.task_offsets = super::target::task_offsets(list)?;
        }
        if let Some(list) = &request.task_end_offsets {
            member.task_end_offsets = super::target::task_offsets(list)?;
        }
        let (metadata, bumps) = updated_metadata(&member, request);
        // A static member's new incarnation is its old self under a new id, not a new member.
        let is_new = !group.members.contains_key(&member.member_id) && replaced.is_none();
        let endpoint_changed = metadata.user_endpoint != member.metadata.user_endpoint;
        if metadata != member.metadata || is_new {
            records.push(records::member_metadata(
                &group.id,
                &member.member_id,
                &metadata,
            ));
        }
        member.metadata = metadata;
        let mut planned = self.plan_topology(group, request, &member, &mut records)?;
        planned.member_changed = bumps || is_new;
        planned.endpoint_changed = endpoint_changed || replaced.is_some();
        planned.before = before;
        planned.replaced.clone_from(&replaced);
        let (target_epoch, target) = self.plan_target(
            group,
            &member,
            inherited_target,
            &mut planned,
            ctx,
            &mut records,
        )?;
        let process_id = member.metadata.process_id.clone();
        // The replaced incarnation holds nothing any more: its records go in this batch.
        let ignored: Vec<&str> = [member.member_id.as_str()]
            .into_iter()
            .chain(replaced.as_deref())
            .collect();
        let held = |role, task: &TaskId| group.held_elsewhere(&ignored, &process_id, role, task);
        let towards = Towards {
            target_epoch,
            target: &target,
            owned: request.owned.as_ref(),
            held: &held,
        };
        let next = reconcile(&member.current, &towards).map_err(|MustRejoin| {
            Refusal::new(
                errors::FENCED_MEMBER_EPOCH,
                "The streams group member is in a unknown state. The member must abandon all its tasks and rejoin.".to_owned(),
            )
        })?;
        if next != member.current || is_new {
            records.push(records::current_assignment(
                &group.id,
                &member.member_id,
                &next,
            ));
        }
        planned.member_id = member.member_id;
        Ok((planned, records))
    }
}

/// The streams group a heartbeat is for: `Some` an existing one, `None` one to create.
fn streams_group_of<'a>(
    groups: &'a std::collections::HashMap<String, Group>,
    request: &StreamsHeartbeat,
) -> Result<Option<&'a StreamsGroup>, Refusal> {
    let group_id = &request.group_id;
    let not_streams = || {
        Refusal::new(
            errors::GROUP_ID_NOT_FOUND,
            format!("Group {group_id} is not a streams group."),
        )
    };
    match groups.get(group_id) {
        Some(group) => match group.streams.as_deref() {
            Some(streams) => Ok(Some(streams)),
            None if request.member_epoch == 0
                && group.consumer.is_none()
                && group.share.is_none()
                && group.members.is_empty() =>
            {
                Ok(None)
            }
            None => Err(not_streams()),
        },
        None if request.member_epoch == 0 => Ok(None),
        None => Err(Refusal::new(
            errors::GROUP_ID_NOT_FOUND,
            format!("Streams group {group_id} not found."),
        )),
    }
}

/// `group.streams.max.size`: a member not in the group yet finds no room in a full group.
fn check_room(
    group: &StreamsGroup,
    request: &StreamsHeartbeat,
    max_size: u32,
) -> Result<(), Refusal> {
    let known_static = request
        .instance_id
        .as_ref()
        .is_some_and(|instance| group.static_members.contains_key(instance));
    if request.member_epoch == 0
        && !known_static
        && group.members.len() >= max_size as usize
        && !group.members.contains_key(&request.member_id)
    {
        return Err(Refusal::new(
            errors::GROUP_MAX_SIZE_REACHED,
            format!("The streams group has reached its maximum capacity of {max_size} members."),
        ));
    }
    Ok(())
}

/// Replays a batch the group has just written.
pub(super) fn replay_all(group: &mut StreamsGroup, records: &[OffsetsRecord]) {
    for (key, value) in records {
        if let OffsetsKey::Consumer { kind, sub_key, .. } = key
            && kind.is_streams()
            && let Err(error) = records::replay(group, *kind, sub_key, value.as_deref())
        {
            debug_assert!(
                false,
                "a streams group record just written does not replay: {error}"
            );
        }
    }
    group.check_invariants();
}
