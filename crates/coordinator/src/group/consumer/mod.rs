//! Consumer groups of Kafka 4's broker-driven protocol (KIP-848): members heartbeat their
//! subscription, the coordinator computes the group's target assignment with a server-side
//! assignor, and moves each member towards its target, partitions revoked before any is
//! handed to another member.
//!
//! Epochs: the **group epoch** counts changes to what the group needs (a member joins, leaves,
//! changes its subscription, or a subscribed topic changes); the **assignment epoch** is the
//! group epoch the target assignment was computed for; a **member epoch** is the target epoch
//! the member has reached.
//!
//! Every change is written as the records Kafka 4.4 writes (types 3–8 and 16 of
//! `__consumer_offsets`, [`records`]) and then replayed into the group, so a group rebuilt at
//! startup is the group that was running. The group lives in the same [`super::state::Group`]
//! entry as its committed offsets.
//!
//! Files: [`model`] (the group as data), [`reconcile`] (a member towards its target, pure),
//! [`assignors`] (`uniform` and `range`, pure), [`records`] (records and replay),
//! `heartbeat` (ConsumerGroupHeartbeat), `fencing` (leaving, session and rebalance timeouts),
//! `describe` (ConsumerGroupDescribe), `subscription` (topic metadata and the metadata hash).

pub mod assignors;
mod classic_members;
mod describe;
mod downgrade;
mod fencing;
mod heartbeat;
mod members;
pub mod model;
pub mod offsets;
pub mod reconcile;
pub mod records;
mod regex;
pub(crate) mod subscription;
mod upgrade;

pub use describe::{DescribedConsumerGroup, DescribedConsumerMember};
pub(crate) use fencing::arm_loaded_timers;
pub(crate) use heartbeat::new_group;
pub use heartbeat::{ConsumerHeartbeat, HeartbeatAnswer};
pub use model::{ConsumerGroup, ConsumerGroupState, Partitions};

pub use subscription::topics_hash;

/// Kafka 4.4's hash of the topics among `names` that exist now, as a consumer group keeps it
/// in its `ConsumerGroupMetadata` record.
pub fn subscribed_topics_hash(
    manager: &ferrolog_storage::manager::LogManager,
    names: &[String],
) -> i64 {
    subscription::TopicMetadata::read(manager, names).hash()
}

/// The settings of consumer groups, under Kafka's broker keys.
#[derive(Debug, Clone)]
pub struct ConsumerGroupConfig {
    /// Whether `consumer` is in `group.coordinator.rebalance.protocols`: without it,
    /// ConsumerGroupHeartbeat is answered UNSUPPORTED_VERSION, as Kafka answers it.
    pub enabled: bool,
    /// `group.consumer.session.timeout.ms`
    pub session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms`
    pub heartbeat_interval_ms: i32,
    /// `group.consumer.max.size`
    pub max_size: u32,
    /// `group.consumer.assignors`: the first is the default.
    pub assignors: Vec<String>,
    /// `group.consumer.assignment.interval.ms`: the least time between two target assignments
    /// of a group.
    pub assignment_interval_ms: i64,
    /// The bounds of the values above and of a group's own (dynamic group configs).
    pub bounds: ConsumerBounds,
    /// The `group.consumer.*` keys `server.properties` set, which DescribeConfigs names as
    /// the source of a group's value.
    pub set_in_properties: Vec<String>,
    /// `group.consumer.migration.policy`: which conversions between the protocols a group
    /// with members may go through.
    pub migration: MigrationPolicy,
}

/// Kafka's `group.consumer.migration.policy`. Under every policy but `Disabled` a classic
/// member may join a consumer group with members; an empty group of either kind always
/// becomes the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MigrationPolicy {
    #[default]
    Bidirectional,
    Upgrade,
    Downgrade,
    Disabled,
}

impl MigrationPolicy {
    /// The policy Kafka's key names (any case).
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "bidirectional" => Self::Bidirectional,
            "upgrade" => Self::Upgrade,
            "downgrade" => Self::Downgrade,
            "disabled" => Self::Disabled,
            _ => return None,
        })
    }
}

/// The inclusive (min, max) of each consumer group timing, under Kafka's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumerBounds {
    /// `group.consumer.{min,max}.session.timeout.ms`
    pub session: (i32, i32),
    /// `group.consumer.{min,max}.heartbeat.interval.ms`
    pub heartbeat: (i32, i32),
    /// `group.consumer.{min,max}.assignment.interval.ms`
    pub assignment: (i32, i32),
}

impl Default for ConsumerBounds {
    fn default() -> Self {
        Self {
            session: (45_000, 60_000),
            heartbeat: (5_000, 15_000),
            assignment: (0, 15_000),
        }
    }
}

impl Default for ConsumerGroupConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
            max_size: i32::MAX as u32,
            assignors: vec!["uniform".to_owned(), "range".to_owned()],
            assignment_interval_ms: 1_000,
            bounds: ConsumerBounds::default(),
            set_in_properties: Vec::new(),
            migration: MigrationPolicy::default(),
        }
    }
}
