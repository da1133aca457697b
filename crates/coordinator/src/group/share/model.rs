//! A share group as plain data: the group epoch and metadata hash, the target assignment and
//! its epoch, each member's subscription, epochs and assignment, and which partitions have
//! their share state initialized. Everything but the session deadlines is what the group's
//! records say; [`super::records::replay`] is the only writer of it.

use std::collections::{BTreeMap, BTreeSet};

use ferrolog_storage::manager::TopicId;

use crate::group::consumer::Partitions;

/// Kafka's share group states: a group with members is Stable, one without is Empty (Kafka 4.4
/// produces no other).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareGroupState {
    Empty,
    Stable,
}

impl ShareGroupState {
    pub fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::Stable => "Stable",
        }
    }
}

/// One member of a share group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareMember {
    pub member_id: String,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Sorted, without duplicates.
    pub subscribed: Vec<String>,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    /// The partitions the member consumes (several members may share one).
    pub assigned: Partitions,
    /// When the member is fenced unless it heartbeats again (not written).
    pub session_deadline_ms: i64,
}

/// A topic's partitions in the share-state record, with the topic's name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NamedPartitions {
    pub name: String,
    pub partitions: BTreeSet<i32>,
}

/// Which partitions of the group have share state (the type-15 record).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StatePartitions {
    /// Being initialized: not assignable yet.
    pub initializing: BTreeMap<TopicId, NamedPartitions>,
    /// Initialized: the only partitions the assignor sees.
    pub initialized: BTreeMap<TopicId, NamedPartitions>,
    /// Whose share state is being deleted, by name.
    pub deleting: BTreeMap<TopicId, String>,
}

impl StatePartitions {
    /// The initialized partitions, by topic id.
    pub fn assignable(&self) -> Partitions {
        self.initialized
            .iter()
            .map(|(id, named)| (*id, named.partitions.clone()))
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroup {
    pub id: String,
    /// Starts at 1, as Kafka's modern groups do.
    pub epoch: i32,
    pub metadata_hash: i64,
    pub assignment_epoch: i32,
    pub assignment_timestamp: i64,
    pub members: BTreeMap<String, ShareMember>,
    /// Each member's target assignment.
    pub targets: BTreeMap<String, Partitions>,
    /// `None` until the group's first type-15 record.
    pub state_partitions: Option<StatePartitions>,
}

impl ShareGroup {
    pub fn new(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            epoch: 1,
            metadata_hash: 0,
            assignment_epoch: 1,
            assignment_timestamp: 0,
            members: BTreeMap::new(),
            targets: BTreeMap::new(),
            state_partitions: None,
        }
    }

    pub fn state(&self) -> ShareGroupState {
        if self.members.is_empty() {
            ShareGroupState::Empty
        } else {
            ShareGroupState::Stable
        }
    }

    /// Every topic name some member subscribes to, with `updated` standing in for its member.
    pub fn subscribed_names(&self, updated: Option<&ShareMember>) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for member in self.members.values() {
            if updated.is_some_and(|u| u.member_id == member.member_id) {
                continue;
            }
            names.extend(member.subscribed.iter().cloned());
        }
        if let Some(updated) = updated {
            names.extend(updated.subscribed.iter().cloned());
        }
        names
    }

    /// The initialized partitions, by topic id (empty without share state).
    pub fn assignable(&self) -> Partitions {
        self.state_partitions
            .as_ref()
            .map(StatePartitions::assignable)
            .unwrap_or_default()
    }

    /// Kafka's `initializedAssignmentPending`: some initialized topic a member subscribes to is
    /// not wholly in the members' targets, so the group must be assigned again.
    pub fn initialized_assignment_pending(&self, names_by_id: &BTreeMap<TopicId, String>) -> bool {
        let Some(state) = &self.state_partitions else {
            return false;
        };
        if self.members.is_empty() || state.initialized.is_empty() {
            return false;
        }
        let subscribed = self.subscribed_names(None);
        state.initialized.iter().any(|(id, named)| {
            let by_name = names_by_id
                .get(id)
                .is_some_and(|name| subscribed.contains(name));
            if !by_name {
                return false;
            }
            let targeted: BTreeSet<i32> = self
                .targets
                .values()
                .filter_map(|target| target.get(id))
                .flatten()
                .copied()
                .collect();
            targeted != named.partitions
        })
    }

    /// Invariants of a group as its records leave it: each member under its own id, and
    /// targets only for members.
    pub fn check(&self) {
        for (member_id, member) in &self.members {
            debug_assert_eq!(
                &member.member_id, member_id,
                "group {}: a member under another id",
                self.id
            );
        }
        debug_assert!(
            self.targets.keys().all(|id| self.members.contains_key(id)),
            "group {}: a target for a member that is gone",
            self.id
        );
    }
}
