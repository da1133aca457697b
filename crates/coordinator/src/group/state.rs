//! One consumer group of the classic protocol, as plain data: its state, generation, members
//! and committed offsets. The coordinator ([`super::GroupCoordinator`]) drives the transitions;
//! the helpers here decide what no I/O is needed for.
//!
//! ```text
//!   Empty ──join──▶ PreparingRebalance ──all joined / timeout──▶ CompletingRebalance
//!     ▲                   ▲      │ nobody left                        │ leader's SyncGroup
//!     └───────────────────┼──────┘                                    ▼
//!                         └──── join (new member or changed) / leave / expiry ── Stable
//! ```

use std::collections::{BTreeMap, BTreeSet};

use ferrolog_records::consumer_offsets::{GroupValue, MemberValue, OffsetValue};
use tokio::sync::oneshot;

use super::consumer::ConsumerGroup;

/// Kafka's group states (classic protocol). `Dead` groups are removed from the map at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
}

impl GroupState {
    /// The name Kafka's DescribeGroups and ListGroups report.
    pub fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::PreparingRebalance => "PreparingRebalance",
            Self::CompletingRebalance => "CompletingRebalance",
            Self::Stable => "Stable",
        }
    }
}

/// What a JoinGroup is answered with.
#[derive(Debug, Clone, Default)]
pub struct JoinResult {
    pub error: i16,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// The members and their metadata for the chosen protocol: only the leader gets them.
    pub members: Vec<(String, Option<String>, Vec<u8>)>,
    /// KIP-814 (JoinGroup 9 and later): a static leader that came back to a Stable group gets
    /// the members but need not compute the assignment again.
    pub skip_assignment: bool,
}

impl JoinResult {
    pub fn error(error: i16, member_id: &str) -> Self {
        Self {
            error,
            generation: -1,
            member_id: member_id.to_owned(),
            ..Self::default()
        }
    }
}

/// What a SyncGroup is answered with.
#[derive(Debug, Clone, Default)]
pub struct SyncResult {
    pub error: i16,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub assignment: Vec<u8>,
}

impl SyncResult {
    pub fn error(error: i16) -> Self {
        Self {
            error,
            ..Self::default()
        }
    }
}

/// One member of a group.
#[derive(Debug)]
pub struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    /// Supported protocols in the client's order of preference, with their metadata.
    pub protocols: Vec<(String, Vec<u8>)>,
    pub assignment: Vec<u8>,
    /// When the member is removed unless it heartbeats (or joins, or syncs) again.
    pub session_deadline_ms: i64,
    pub awaiting_join: Option<oneshot::Sender<JoinResult>>,
    pub awaiting_sync: Option<oneshot::Sender<SyncResult>>,
}

impl Member {
    /// The metadata this member sent for `protocol`.
    pub fn metadata_for(&self, protocol: &str) -> Vec<u8> {
        self.protocols
            .iter()
            .find(|(name, _)| name == protocol)
            .map(|(_, metadata)| metadata.clone())
            .unwrap_or_default()
    }

    pub fn to_value(&self, protocol: Option<&str>) -> MemberValue {
        MemberValue {
            member_id: self.member_id.clone(),
            group_instance_id: self.group_instance_id.clone(),
            client_id: self.client_id.clone(),
            client_host: self.client_host.clone(),
            rebalance_timeout_ms: self.rebalance_timeout_ms,
            session_timeout_ms: self.session_timeout_ms,
            subscription: protocol.map(|p| self.metadata_for(p)).unwrap_or_default(),
            assignment: self.assignment.clone(),
        }
    }
}

/// A group and its committed offsets.
#[derive(Debug)]
pub struct Group {
    pub id: String,
    pub state: GroupState,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    /// Members in the order they joined (the first is the default leader).
    pub members: Vec<Member>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, with the time they lapse unless used.
    pub pending_member_ids: BTreeMap<String, i64>,
    /// End of the join phase: members that have not rejoined by then are removed.
    pub rebalance_deadline_ms: i64,
    /// The join phase does not end before this (`group.initial.rebalance.delay.ms`).
    pub initial_delay_until_ms: i64,
    /// End of the sync phase: members still in [`Self::pending_sync`] by then are removed and
    /// the group rebalances again.
    pub sync_deadline_ms: i64,
    /// Members of the current generation that have not sent their SyncGroup yet.
    pub pending_sync: BTreeSet<String>,
    /// When the group entered its current state (Kafka's `currentStateTimestamp`).
    pub state_timestamp_ms: i64,
    pub offsets: BTreeMap<(String, i32), OffsetValue>,
    /// Offsets committed in transactions not yet ended, by producer id: invisible until the
    /// COMMIT marker, dropped at the ABORT.
    pub pending_txn_offsets: BTreeMap<i64, BTreeMap<(String, i32), OffsetValue>>,
    /// Set when the group is a consumer group of the KIP-848 protocol: its membership, in place
    /// of the classic fields above, which then stay Empty (see [`Group::check_kind`]).
    pub consumer: Option<Box<ConsumerGroup>>,
    /// Set when the group is a streams group (KIP-1071), likewise without classic members.
    pub streams: Option<Box<crate::group::streams::StreamsGroup>>,
    /// Set when the group is a share group (KIP-932), likewise without classic members.
    pub share: Option<Box<crate::group::share::ShareGroup>>,
}

impl Group {
    /// A group is of one protocol: a consumer group has no classic members.
    pub fn check_kind(&self) {
        let modern = [
            self.consumer.is_some(),
            self.streams.is_some(),
            self.share.is_some(),
        ];
        debug_assert!(
            modern.iter().filter(|kind| **kind).count() <= 1,
            "group {} is of two protocols",
            self.id
        );
        debug_assert!(
            !modern.contains(&true) || (self.members.is_empty() && self.state == GroupState::Empty),
            "group {} is a modern group with classic members",
            self.id
        );
    }

    pub fn new(id: &str, now_ms: i64) -> Self {
        Self {
            id: id.to_owned(),
            state: GroupState::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: Vec::new(),
            pending_member_ids: BTreeMap::new(),
            rebalance_deadline_ms: 0,
            initial_delay_until_ms: 0,
            sync_deadline_ms: 0,
            pending_sync: BTreeSet::new(),
            state_timestamp_ms: now_ms,
            offsets: BTreeMap::new(),
            pending_txn_offsets: BTreeMap::new(),
            consumer: None,
            streams: None,
            share: None,
        }
    }

    /// Forgets the classic membership (members, generation, protocol), as when the group
    /// becomes a consumer group with members of its own; its offsets stay.
    pub fn drop_classic_membership(&mut self, now_ms: i64) {
        let offsets = std::mem::take(&mut self.offsets);
        let pending = std::mem::take(&mut self.pending_txn_offsets);
        let consumer = self.consumer.take();
        let streams = self.streams.take();
        let share = self.share.take();
        *self = Self {
            offsets,
            pending_txn_offsets: pending,
            consumer,
            streams,
            share,
            ..Self::new(&self.id, now_ms)
        };
    }

    /// Whether a transaction's offsets for `(topic, partition)` await its end.
    pub fn has_pending_offset(&self, topic: &str, partition: i32) -> bool {
        self.pending_txn_offsets
            .values()
            .any(|offsets| offsets.contains_key(&(topic.to_owned(), partition)))
    }

    /// Forgets every transaction's pending offset for `(topic, partition)` (its record was
    /// tombstoned).
    pub fn remove_pending(&mut self, topic: &str, partition: i32) {
        let key = (topic.to_owned(), partition);
        for offsets in self.pending_txn_offsets.values_mut() {
            offsets.remove(&key);
        }
        self.pending_txn_offsets
            .retain(|_, offsets| !offsets.is_empty());
    }

    /// Every `(topic, partition)` with an offset, committed or pending in a transaction.
    pub fn offset_keys(&self) -> std::collections::BTreeSet<(String, i32)> {
        self.offsets
            .keys()
            .chain(
                self.pending_txn_offsets
                    .values()
                    .flat_map(|offsets| offsets.keys()),
            )
            .cloned()
            .collect()
    }

    /// Ends `producer_id`'s transaction in this group: its offsets become the committed ones,
    /// or are dropped.
    pub fn end_txn(&mut self, producer_id: i64, commit: bool) {
        if let Some(offsets) = self.pending_txn_offsets.remove(&producer_id)
            && commit
        {
            self.offsets.extend(offsets);
        }
    }

    pub fn transition(&mut self, state: GroupState, now_ms: i64) {
        self.state = state;
        self.state_timestamp_ms = now_ms;
    }

    pub fn member(&self, member_id: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.member_id == member_id)
    }

    pub fn member_mut(&mut self, member_id: &str) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.member_id == member_id)
    }

    pub fn member_by_instance(&self, instance_id: &str) -> Option<&Member> {
        self.members
            .iter()
            .find(|m| m.group_instance_id.as_deref() == Some(instance_id))
    }

    pub fn remove_member(&mut self, member_id: &str) -> Option<Member> {
        let index = self.members.iter().position(|m| m.member_id == member_id)?;
        let member = self.members.remove(index);
        self.pending_sync.remove(member_id);
        if self.leader.as_deref() == Some(member_id) {
            self.leader = self.members.first().map(|m| m.member_id.clone());
        }
        Some(member)
    }

    /// Whether every member supports one of `protocols` and speaks `protocol_type`: otherwise
    /// the joining member is refused with INCONSISTENT_GROUP_PROTOCOL.
    pub fn accepts(&self, protocol_type: &str, protocols: &[(String, Vec<u8>)]) -> bool {
        if self.members.is_empty() {
            return !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols.iter().any(|(name, _)| {
                self.members
                    .iter()
                    .all(|m| m.protocols.iter().any(|(p, _)| p == name))
            })
    }

    /// The protocol every member supports that most members prefer (each votes for its first
    /// choice among the common ones), as Kafka selects it.
    pub fn select_protocol(&self) -> Option<String> {
        let first = self.members.first()?;
        let common: Vec<&String> = first
            .protocols
            .iter()
            .map(|(name, _)| name)
            .filter(|name| {
                self.members
                    .iter()
                    .all(|m| m.protocols.iter().any(|(p, _)| p == *name))
            })
            .collect();
        let mut votes: Vec<(&String, usize)> = common.iter().map(|name| (*name, 0)).collect();
        for member in &self.members {
            if let Some((name, _)) = member.protocols.iter().find(|(p, _)| common.contains(&p))
                && let Some(vote) = votes.iter_mut().find(|(candidate, _)| *candidate == name)
            {
                vote.1 += 1;
            }
        }
        // Ties go to the earlier candidate: `max_by_key` keeps the last maximum, so reverse.
        votes
            .into_iter()
            .rev()
            .max_by_key(|(_, count)| *count)
            .map(|(name, _)| name.clone())
    }

    /// The largest rebalance timeout among the members: how long the join phase may last.
    pub fn rebalance_timeout_ms(&self) -> i64 {
        self.members
            .iter()
            .map(|m| i64::from(m.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
    }

    /// The join answer for `member_id` in the current generation.
    pub fn join_result(&self, member_id: &str) -> JoinResult {
        let leader = self.leader.clone().unwrap_or_default();
        let protocol = self.protocol.clone();
        let members = if leader == member_id {
            self.members
                .iter()
                .map(|m| {
                    (
                        m.member_id.clone(),
                        m.group_instance_id.clone(),
                        protocol
                            .as_deref()
                            .map(|p| m.metadata_for(p))
                            .unwrap_or_default(),
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        JoinResult {
            error: 0,
            generation: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol,
            leader,
            member_id: member_id.to_owned(),
            members,
            skip_assignment: false,
        }
    }

    /// The group's metadata record value.
    pub fn to_value(&self) -> GroupValue {
        GroupValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation,
            protocol: self.protocol.clone(),
            leader: self.leader.clone(),
            current_state_timestamp: self.state_timestamp_ms,
            members: self
                .members
                .iter()
                .map(|m| m.to_value(self.protocol.as_deref()))
                .collect(),
        }
    }

    /// Rebuilds a group from its metadata record, as Kafka does when it loads the offsets
    /// topic: members come back (they must heartbeat within their session timeout) and the group
    /// is Stable, or Empty without members.
    pub fn from_value(id: &str, value: GroupValue, now_ms: i64) -> Self {
        let mut group = Self::new(id, now_ms);
        group.generation = value.generation;
        group.protocol_type = (!value.protocol_type.is_empty()).then_some(value.protocol_type);
        group.protocol = value.protocol;
        group.leader = value.leader;
        if value.current_state_timestamp >= 0 {
            group.state_timestamp_ms = value.current_state_timestamp;
        }
        let protocol = group.protocol.clone().unwrap_or_default();
        group.members = value
            .members
            .into_iter()
            .map(|m| Member {
                member_id: m.member_id,
                group_instance_id: m.group_instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
                session_timeout_ms: m.session_timeout_ms,
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                protocols: vec![(protocol.clone(), m.subscription)],
                assignment: m.assignment,
                session_deadline_ms: now_ms + i64::from(m.session_timeout_ms),
                awaiting_join: None,
                awaiting_sync: None,
            })
            .collect();
        group.state = if group.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        };
        group
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, protocols: &[&str]) -> Member {
        Member {
            member_id: id.into(),
            group_instance_id: None,
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 30_000,
            protocols: protocols.iter().map(|p| (p.to_string(), vec![])).collect(),
            assignment: vec![],
            session_deadline_ms: 0,
            awaiting_join: None,
            awaiting_sync: None,
        }
    }

    #[test]
    fn the_protocol_is_the_common_one_most_members_prefer() {
        let mut group = Group::new("g", 0);
        group.protocol_type = Some("consumer".into());
        group.members.push(member("a", &["range", "roundrobin"]));
        group.members.push(member("b", &["roundrobin", "range"]));
        group.members.push(member("c", &["roundrobin", "sticky"]));
        assert_eq!(group.select_protocol().as_deref(), Some("roundrobin"));
        assert!(group.accepts("consumer", &[("roundrobin".into(), vec![])]));
        assert!(!group.accepts("consumer", &[("range".into(), vec![])]));
        assert!(!group.accepts("connect", &[("roundrobin".into(), vec![])]));
    }

    #[test]
    fn removing_the_leader_hands_leadership_to_the_next_member() {
        let mut group = Group::new("g", 0);
        group.members.push(member("a", &["range"]));
        group.members.push(member("b", &["range"]));
        group.leader = Some("a".into());
        group.remove_member("a");
        assert_eq!(group.leader.as_deref(), Some("b"));
    }
}
