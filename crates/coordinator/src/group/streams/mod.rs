//! Streams groups of Kafka 4's protocol for Kafka Streams (KIP-1071): each member declares the
//! application's topology, the coordinator configures it against the topics that exist (and
//! names the internal topics to create), and assigns tasks — a subtopology's partition — to
//! the members with a sticky assignor, active and standby.
//!
//! Epochs are as in consumer groups: the group epoch counts changes to what the group needs
//! (a member joins, leaves or changes, the topics change, the topology becomes ready), the
//! assignment epoch is the group epoch the target was computed for, a member epoch the target
//! epoch the member has reached.
//!
//! Files: [`topology`] (the topology configured against the topics, pure), [`assignor`] (the
//! sticky task assignor, pure), [`reconcile`] (a member's tasks towards its target, pure),
//! [`model`] (the group as data), [`records`] (records and replay), `heartbeat`
//! (StreamsGroupHeartbeat), `members` (which member a heartbeat speaks for), `target` (the
//! topology adopted and configured, the target assignment), `leave` (leaving and fencing),
//! `describe` (StreamsGroupDescribe).

mod answer;
pub mod assignor;
mod describe;
mod heartbeat;
mod leave;
mod members;
pub mod model;
pub mod offsets;
pub mod reconcile;
pub mod records;
mod target;
pub mod topology;

pub use describe::{DescribedStreamsGroup, DescribedStreamsMember};
pub use heartbeat::{EndpointPartitions, StreamsAnswer, StreamsHeartbeat, StreamsStatus};
pub use model::{StreamsGroup, StreamsGroupState};

/// The settings of streams groups, under Kafka's broker keys.
#[derive(Debug, Clone)]
pub struct StreamsGroupConfig {
    /// Whether `streams` is in `group.coordinator.rebalance.protocols`: without it,
    /// StreamsGroupHeartbeat is answered UNSUPPORTED_VERSION, as Kafka answers it.
    pub enabled: bool,
    /// `group.streams.session.timeout.ms`
    pub session_timeout_ms: i32,
    /// `group.streams.heartbeat.interval.ms`
    pub heartbeat_interval_ms: i32,
    /// `group.streams.max.size`
    pub max_size: u32,
    /// `group.streams.num.standby.replicas`
    pub num_standby_replicas: u32,
    /// `group.streams.initial.rebalance.delay.ms`: no target is computed for a group that was
    /// empty before this long has passed, so the first members arrive together.
    pub initial_rebalance_delay_ms: i64,
    /// `group.streams.assignment.interval.ms`: the least time between two target assignments.
    pub assignment_interval_ms: i64,
    /// `group.streams.task.offset.interval.ms`, told to members.
    pub task_offset_interval_ms: i32,
    /// `group.streams.acceptable.recovery.lag`, told to members.
    pub acceptable_recovery_lag: i64,
}

impl Default for StreamsGroupConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
            max_size: i32::MAX as u32,
            num_standby_replicas: 0,
            initial_rebalance_delay_ms: 3_000,
            assignment_interval_ms: 1_000,
            task_offset_interval_ms: 60_000,
            acceptable_recovery_lag: 10_000,
        }
    }
}
