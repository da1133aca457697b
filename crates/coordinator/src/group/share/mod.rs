//! Share groups (KIP-932), the group coordinator's side: members heartbeat their subscription,
//! the coordinator initializes the share state of the partitions they subscribe to (through
//! [`crate::share_state`]) and assigns every initialized partition to members with the
//! `simple` assignor — several members to a partition, nothing revoked first. Which records a
//! member gets and acknowledges is the broker's share partitions' business, not the group's.
//!
//! Epochs are as in consumer groups: the group epoch counts changes to what the group needs
//! (starting at 1), the assignment epoch is the group epoch the target was computed for, a
//! member epoch the target epoch the member has.
//!
//! Files: [`model`] (the group as data), [`records`] (records and replay), [`assignor`] (the
//! simple assignor, pure), `heartbeat` (ShareGroupHeartbeat), `target` (epoch, share-state
//! initialization, target, the member's assignment), `leave` (leaving and fencing),
//! `describe` (ShareGroupDescribe), `delete` (DeleteGroups), [`offsets`] (the offsets admin
//! APIs).

pub mod assignor;
mod delete;
mod describe;
mod heartbeat;
mod leave;
pub mod model;
pub mod offsets;
pub mod records;
mod target;

pub use describe::{DescribedShareGroup, DescribedShareMember};
pub use heartbeat::{ShareAnswer, ShareHeartbeat};
pub use model::{ShareGroup, ShareGroupState};

use crate::share_state::ShareStateConfig;

/// The settings of share groups and of the share coordinator, under Kafka's broker keys.
#[derive(Debug, Clone)]
pub struct ShareGroupConfig {
    /// `group.share.session.timeout.ms`
    pub session_timeout_ms: i32,
    /// `group.share.heartbeat.interval.ms`
    pub heartbeat_interval_ms: i32,
    /// `group.share.max.size`: members of one share group.
    pub max_size: u32,
    /// `group.share.assignment.interval.ms`
    pub assignment_interval_ms: i64,
    /// `group.share.record.lock.duration.ms`: how long a consumer holds records it acquired.
    pub record_lock_duration_ms: i32,
    /// `group.share.delivery.count.limit`: deliveries of a record before it is archived.
    pub delivery_count_limit: i16,
    /// `group.share.partition.max.record.locks`: records in flight per share partition.
    pub partition_max_record_locks: u32,
    /// `group.share.max.share.sessions`
    pub max_share_sessions: u32,
    /// The `share.coordinator.*` settings.
    pub state: ShareStateConfig,
    /// The bounds of the values above and of a group's own.
    pub bounds: ShareBounds,
    /// The `group.share.*` keys `server.properties` set (DescribeConfigs' synonyms).
    pub set_in_properties: Vec<String>,
}

/// The inclusive (min, max) of the share group settings a group may set for itself, under
/// Kafka's `group.share.{min,max}.*` keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareBounds {
    pub session: (i32, i32),
    pub heartbeat: (i32, i32),
    pub assignment: (i32, i32),
    pub lock_duration: (i32, i32),
    pub delivery_count: (i32, i32),
    pub record_locks: (i32, i32),
}

impl Default for ShareBounds {
    fn default() -> Self {
        Self {
            session: (45_000, 60_000),
            heartbeat: (5_000, 15_000),
            assignment: (0, 15_000),
            lock_duration: (15_000, 60_000),
            delivery_count: (2, 10),
            record_locks: (100, 4_000),
        }
    }
}

impl Default for ShareGroupConfig {
    fn default() -> Self {
        Self {
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
            max_size: 200,
            assignment_interval_ms: 1_000,
            record_lock_duration_ms: 30_000,
            delivery_count_limit: 5,
            partition_max_record_locks: 2_000,
            max_share_sessions: 2_000,
            state: ShareStateConfig::default(),
            bounds: ShareBounds::default(),
            set_in_properties: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;
