//! A consumer group of the KIP-848 protocol as plain data: the group epoch, the target
//! assignment and its epoch, and each member's subscription, epochs and current assignment.
//! Everything here but the timers is what the group's records say; [`super::replay`] is the
//! only writer of it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ferrolog_records::consumer_group_records::ClassicMemberMetadata;
use ferrolog_storage::manager::TopicId;

/// Partitions by topic id.
pub type Partitions = BTreeMap<TopicId, BTreeSet<i32>>;

/// A member's assigned partitions, each with the epoch it was assigned at (used to fence
/// commits from an older epoch).
pub type AssignedPartitions = BTreeMap<TopicId, BTreeMap<i32, i32>>;

/// Kafka's `MemberState` (the byte of the current-assignment record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemberState {
    /// The member has its target assignment, or as much of it as is free.
    #[default]
    Stable,
    /// The member must first give up partitions it still owns.
    UnrevokedPartitions,
    /// Some of the member's target partitions are still owned by others.
    UnreleasedPartitions,
    /// A state this version does not know: the member must rejoin.
    Unknown,
}

impl MemberState {
    pub fn id(self) -> i8 {
        match self {
            Self::Stable => 0,
            Self::UnrevokedPartitions => 1,
            Self::UnreleasedPartitions => 2,
            Self::Unknown => 127,
        }
    }

    pub fn from_id(id: i8) -> Self {
        match id {
            0 => Self::Stable,
            1 => Self::UnrevokedPartitions,
            2 => Self::UnreleasedPartitions,
            _ => Self::Unknown,
        }
    }
}

/// What a member subscribes to and who it is (the type-5 record).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subscription {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Sorted, without duplicates.
    pub topic_names: Vec<String>,
    pub topic_regex: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
    /// A member of the classic protocol: its session timeout and its JoinGroup's protocols.
    pub classic: Option<ClassicMemberMetadata>,
}

/// Where a member is in reconciling towards its target (the type-8 record).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CurrentAssignment {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: MemberState,
    pub assigned: AssignedPartitions,
    pub pending_revocation: Partitions,
}

impl CurrentAssignment {
    /// Whether the member owns `partition` of `topic`: assigned, or still revoking it.
    pub fn owns(&self, topic: TopicId, partition: i32) -> bool {
        self.assigned
            .get(&topic)
            .is_some_and(|p| p.contains_key(&partition))
            || self
                .pending_revocation
                .get(&topic)
                .is_some_and(|p| p.contains(&partition))
    }

    /// Forgets the epochs the partitions were assigned at (a static member stepping away, or
    /// its next incarnation): no commit of an older epoch is taken for them.
    pub fn zero_assignment_epochs(&mut self) {
        for partitions in self.assigned.values_mut() {
            partitions.values_mut().for_each(|epoch| *epoch = 0);
        }
    }

    /// The assigned partitions without their epochs, as a heartbeat answer carries them.
    pub fn assigned_partitions(&self) -> Partitions {
        self.assigned
            .iter()
            .map(|(topic, partitions)| (*topic, partitions.keys().copied().collect()))
            .collect()
    }
}

impl ConsumerMember {
    /// Arms the rebalance timer: unless it has revoked by then, the member is fenced, if it is
    /// still at its present epoch.
    pub fn arm_rebalance_deadline(&mut self, now: i64) {
        let timeout = i64::from(self.subscription.rebalance_timeout_ms.max(0));
        self.rebalance_deadline = Some((now + timeout, self.current.member_epoch));
    }
}

/// One member.
#[derive(Debug, Clone, Default)]
pub struct ConsumerMember {
    pub member_id: String,
    pub subscription: Subscription,
    pub current: CurrentAssignment,
    /// When the member is fenced unless it heartbeats again.
    pub session_deadline_ms: i64,
    /// While it revokes partitions: when it is fenced unless it has revoked them, and the
    /// member epoch it must still be at for that (a member that moved on is not fenced).
    pub rebalance_deadline: Option<(i64, i32)>,
    /// A classic member told to rejoin: when it is fenced unless it sent its JoinGroup.
    pub join_deadline: Option<i64>,
    /// A classic member that joined: when it is fenced unless it sent its SyncGroup.
    pub sync_deadline: Option<i64>,
}

/// A consumer group.
#[derive(Debug, Clone, Default)]
pub struct ConsumerGroup {
    pub id: String,
    pub group_epoch: i32,
    pub metadata_hash: i64,
    pub assignment_epoch: i32,
    /// When the target assignment was last computed (0: never, or when the group emptied).
    pub assignment_timestamp: i64,
    pub members: BTreeMap<String, ConsumerMember>,
    /// Each member's target assignment.
    pub target: BTreeMap<String, Partitions>,
    /// Static members: instance id → member id.
    pub static_members: HashMap<String, String>,
    /// The epoch of the member owning (or still revoking) each partition: Kafka's
    /// `currentPartitionEpoch`, derived from the members' current assignments.
    pub owner_epochs: HashMap<(TopicId, i32), i32>,
    /// Regular-expression subscriptions and the topics each resolved to.
    pub regexes: BTreeMap<String, ResolvedRegex>,
}

/// The topics a regular expression resolved to (the type-16 record).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResolvedRegex {
    pub topics: BTreeSet<String>,
    pub version: i64,
    pub timestamp: i64,
}

/// The group states ConsumerGroupDescribe and ListGroups report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerGroupState {
    Empty,
    Assigning,
    Reconciling,
    Stable,
}

impl ConsumerGroupState {
    pub fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::Assigning => "Assigning",
            Self::Reconciling => "Reconciling",
            Self::Stable => "Stable",
        }
    }
}

impl ConsumerGroup {
    /// Empty without members; Assigning while the target lags the group epoch; Reconciling
    /// while a member is not at the target's epoch; else Stable.
    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self.members.values().any(|member| {
            member.current.member_epoch != self.assignment_epoch
                || member.current.state != MemberState::Stable
        }) {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// The epoch of the member owning `partition` now, if any member does.
    pub fn owner_epoch(&self, topic: TopicId, partition: i32) -> Option<i32> {
        self.owner_epochs.get(&(topic, partition)).copied()
    }

    /// Every topic name some member subscribes to, by name or through a resolved regex.
    pub fn subscribed_topics(&self) -> BTreeSet<String> {
        let mut topics = BTreeSet::new();
        for member in self.members.values() {
            topics.extend(member.subscription.topic_names.iter().cloned());
            if let Some(regex) = &member.subscription.topic_regex
                && let Some(resolved) = self.regexes.get(regex)
            {
                topics.extend(resolved.topics.iter().cloned());
            }
        }
        topics
    }

    /// Sets `member`'s current assignment, keeping the partition owners in step, and checks
    /// that no partition has two owners.
    pub(super) fn set_current(&mut self, member_id: &str, current: CurrentAssignment) {
        let Some(member) = self.members.get_mut(member_id) else {
            return;
        };
        for (topic, partition) in owned(&member.current) {
            self.owner_epochs.remove(&(topic, partition));
        }
        member.current = current;
        let epoch = member.current.member_epoch;
        for (topic, partition) in owned(&member.current) {
            let previous = self.owner_epochs.insert((topic, partition), epoch);
            debug_assert!(
                previous.is_none(),
                "partition {partition} of a topic is owned by two members"
            );
        }
    }

    /// Removes a member and what it owns.
    pub(super) fn remove_member(&mut self, member_id: &str) -> Option<ConsumerMember> {
        let member = self.members.remove(member_id)?;
        for (topic, partition) in owned(&member.current) {
            self.owner_epochs.remove(&(topic, partition));
        }
        if let Some(instance) = &member.subscription.instance_id
            && self.static_members.get(instance).map(String::as_str) == Some(member_id)
        {
            self.static_members.remove(instance);
        }
        Some(member)
    }
}

/// The partitions a member owns: assigned, and still revoking.
fn owned(current: &CurrentAssignment) -> impl Iterator<Item = (TopicId, i32)> + '_ {
    let assigned = current
        .assigned
        .iter()
        .flat_map(|(topic, partitions)| partitions.keys().map(move |p| (*topic, *p)));
    let revoking = current
        .pending_revocation
        .iter()
        .flat_map(|(topic, partitions)| partitions.iter().map(move |p| (*topic, *p)));
    assigned.chain(revoking)
}
