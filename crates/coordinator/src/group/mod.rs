//! The group coordinator of Kafka's classic consumer-group protocol: membership (join, sync,
//! heartbeat, leave, session and rebalance timeouts, static members), committed offsets, and
//! their records in `__consumer_offsets`. Assignment stays with the clients: the leader
//! computes it and hands it over in SyncGroup.
//!
//! Every method is synchronous and runs on the blocking pool (it may append to the offsets
//! topic); a JoinGroup or SyncGroup that must wait for other members returns [`Reply::Later`],
//! a channel the handler awaits. The groups live in the shards of the coordinator runtime
//! ([`crate::runtime`]), one per `__consumer_offsets` partition, each group in its
//! partition's shard; an operation on a group runs under its shard's lock.
//! [`GroupCoordinator::tick`] runs each shard's timers.
//!
//! What is written to the offsets topic, as Kafka does: the group's metadata when a generation
//! gets its assignment (and when the group empties), each commit, and tombstones when offsets
//! expire or are deleted and when a group is deleted.
//!
//! Files: [`state`] (a group as data), `join` (JoinGroup and the join phase), `membership`
//! (sync, heartbeat, leave, session and sync expiry, member checks), `offsets` (commits, fetches, deletions, expiry), [`offsets_topic`] (the records'
//! partition, appends and the startup load); this file holds the shared types, the startup
//! replay and the timers.

mod census;
pub mod consumer;
pub mod group_configs;
mod join;
mod membership;
mod offsets;
pub mod offsets_topic;
mod replay;
pub mod share;
pub mod state;
pub mod streams;
mod txn_offsets;

pub use membership::SyncProtocol;
pub use offsets::Fetched;
pub use txn_offsets::TxnCommitter;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use ferrolog_records::consumer_offsets::OffsetsKey;
use ferrolog_storage::Result;
use ferrolog_storage::manager::LogManager;
use tokio::sync::oneshot;

use crate::runtime::{Ctx, LoadEvent, Periodic, Runtime, Shard};
use offsets_topic::{OffsetsCodec, OffsetsEvent, OffsetsRecord, OffsetsTopic};
use replay::{replay, replay_transactional};
use state::Group;

/// What an operation on a group's shard appends through, and its time.
pub(super) type GroupCtx<'a> = Ctx<'a, OffsetsCodec>;

/// The coordinator's settings, under Kafka's broker keys.
#[derive(Debug, Clone)]
pub struct GroupConfig {
    /// `offsets.topic.num.partitions`
    pub offsets_topic_partitions: i32,
    /// `offsets.topic.segment.bytes`
    pub offsets_topic_segment_bytes: u64,
    /// `group.min.session.timeout.ms`: the shortest session timeout a member may ask for.
    pub min_session_timeout: Duration,
    /// `group.max.session.timeout.ms`: the longest session timeout a member may ask for.
    pub max_session_timeout: Duration,
    /// `group.initial.rebalance.delay.ms`: how long the first rebalance of an empty group waits
    /// for more members before it completes.
    pub initial_rebalance_delay: Duration,
    /// `offsets.retention.minutes`: how long an empty group's committed offsets are kept.
    pub offsets_retention: Duration,
    /// `offsets.retention.check.interval.ms`: how often expired offsets are looked for.
    pub offsets_retention_check_interval: Duration,
    /// `offset.metadata.max.bytes`
    pub offset_metadata_max_bytes: usize,
    /// `group.max.size`: the members of one classic group; one more is refused
    /// GROUP_MAX_SIZE_REACHED.
    pub max_size: u32,
    /// `ferrolog.max.group.configs`: the groups that may have configs of their own.
    pub max_group_configs: usize,
    /// `ferrolog.max.groups`: the groups of every kind the coordinator holds; a new one
    /// beyond is refused GROUP_MAX_SIZE_REACHED.
    pub max_groups: usize,
    /// The `group.consumer.*` settings of KIP-848 consumer groups.
    pub consumer: consumer::ConsumerGroupConfig,
    /// The `group.streams.*` settings of KIP-1071 streams groups.
    pub streams: streams::StreamsGroupConfig,
    /// The `group.share.*` and `share.coordinator.*` settings of KIP-932 share groups.
    pub share: share::ShareGroupConfig,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            offsets_topic_partitions: 50,
            offsets_topic_segment_bytes: 104_857_600,
            min_session_timeout: Duration::from_secs(6),
            max_session_timeout: Duration::from_secs(30 * 60),
            initial_rebalance_delay: Duration::from_secs(3),
            offsets_retention: Duration::from_secs(7 * 24 * 60 * 60),
            offsets_retention_check_interval: Duration::from_secs(600),
            offset_metadata_max_bytes: 4096,
            max_size: i32::MAX as u32,
            max_group_configs: 10_000,
            max_groups: 100_000,
            consumer: consumer::ConsumerGroupConfig::default(),
            streams: streams::StreamsGroupConfig::default(),
            share: share::ShareGroupConfig::default(),
        }
    }
}

/// An answer now, or one that arrives when the rebalance gets there.
#[derive(Debug)]
pub enum Reply<T> {
    Now(T),
    Later(oneshot::Receiver<T>),
}

/// A JoinGroup, whatever its version.
#[derive(Debug, Clone)]
pub struct JoinRequest {
    pub group: String,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Vec<u8>)>,
    /// Version 4 and later: a new dynamic member is first sent away with MEMBER_ID_REQUIRED.
    pub require_known_member_id: bool,
    /// Version 9 and later: the answer can tell a returning static leader to skip the
    /// assignment (KIP-814).
    pub supports_skip_assignment: bool,
}

/// One partition's offset in an OffsetCommit.
#[derive(Debug, Clone)]
pub struct CommitEntry {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

/// A group as ListGroups shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGroup {
    pub id: String,
    pub protocol_type: String,
    pub state: &'static str,
    /// "classic" or "consumer".
    pub group_type: &'static str,
}

/// A group as DescribeGroups shows it.
#[derive(Debug, Clone)]
pub struct GroupDescription {
    pub state: &'static str,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<DescribedMember>,
}

/// A member as DescribeGroups shows it.
#[derive(Debug, Clone)]
pub struct DescribedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Its metadata for the group's protocol.
    pub metadata: Vec<u8>,
    pub assignment: Vec<u8>,
}

/// The groups of one `__consumer_offsets` partition, and its timer of offset expiry.
#[derive(Debug)]
pub struct GroupShard {
    groups: HashMap<String, Group>,
    offsets_expiry: Periodic,
    /// Where the shard publishes how many groups it holds, as the shard `index`.
    census: Arc<census::GroupCensus>,
    index: usize,
}

impl GroupShard {
    /// Whether `group_id` names no group here and a new one must be refused:
    /// `ferrolog.max.groups` groups exist.
    fn refuses_new(&self, group_id: &str) -> bool {
        !self.groups.contains_key(group_id) && self.census.full()
    }
}

/// The message of a new group refused (where the API carries one).
fn too_many_groups(max: usize) -> String {
    format!("The broker holds {max} groups, its most (ferrolog.max.groups); no group is made")
}

impl Shard for GroupShard {
    type Codec = OffsetsCodec;

    fn replay(&mut self, event: LoadEvent<OffsetsRecord>, now_ms: i64) {
        match event {
            LoadEvent::Record {
                record,
                producer_id: None,
            } => replay(&mut self.groups, record, now_ms),
            LoadEvent::Record {
                record,
                producer_id: Some(producer_id),
            } => replay_transactional(&mut self.groups, record, producer_id, now_ms),
            // Every group of the shard is in the marker's partition.
            LoadEvent::Marker {
                producer_id,
                commit,
            } => {
                for group in self.groups.values_mut() {
                    group.end_txn(producer_id, commit);
                }
            }
        }
    }

    fn after_write(&mut self) {
        self.census.record(self.index, self.groups.len());
    }
}

#[derive(Debug)]
pub struct GroupCoordinator {
    topic: OffsetsTopic,
    config: GroupConfig,
    runtime: Runtime<GroupShard>,
    member_counter: AtomicU64,
    /// Each group's own config values (dynamic group configs).
    group_configs: group_configs::GroupConfigs,
    /// The share groups' partition state (Kafka's share coordinator).
    share_state: Arc<crate::share_state::ShareStateCoordinator>,
}

impl GroupCoordinator {
    /// Rebuilds every group from the offsets topic's partitions present in the data dirs, each
    /// in its partition's shard.
    pub fn open(manager: Arc<LogManager>, config: GroupConfig) -> Result<Self> {
        let clock = Arc::clone(manager.clock());
        let group_configs = group_configs::GroupConfigs::open(Arc::clone(&manager))?;
        let share_state = Arc::new(crate::share_state::ShareStateCoordinator::open(
            Arc::clone(&manager),
            config.share.state.clone(),
        )?);
        let topic = OffsetsTopic::new(
            manager,
            config.offsets_topic_partitions,
            config.offsets_topic_segment_bytes,
        );
        let now = clock.now_ms();
        let census = Arc::new(census::GroupCensus::new(
            usize::try_from(topic.partitions()).unwrap_or(0),
            config.max_groups,
        ));
        let mut shards: Vec<GroupShard> = (0..topic.partitions())
            .map(|index| GroupShard {
                groups: HashMap::new(),
                offsets_expiry: Periodic::new(now, config.offsets_retention_check_interval),
                census: Arc::clone(&census),
                index: usize::try_from(index).unwrap_or(0),
            })
            .collect();
        let records = topic.load(|event| {
            let (partition, event) = match event {
                // A group's records go to its own partition's shard, wherever an older
                // ferrolog wrote them.
                OffsetsEvent::Record {
                    record,
                    producer_id,
                } => (
                    topic.partition_of(record.0.group()),
                    LoadEvent::Record {
                        record,
                        producer_id,
                    },
                ),
                OffsetsEvent::Marker {
                    partition,
                    producer_id,
                    commit,
                } => (
                    partition,
                    LoadEvent::Marker {
                        producer_id,
                        commit,
                    },
                ),
            };
            shards[partition as usize].replay(event, now);
        })?;
        for group in shards
            .iter_mut()
            .flat_map(|shard| shard.groups.values_mut())
        {
            if let Some(consumer) = group.consumer.as_deref_mut() {
                let timing = group_configs.consumer_timing(&consumer.id, &config.consumer);
                consumer::arm_loaded_timers(consumer, now, timing.session_timeout_ms);
            }
            if let Some(streams) = group.streams.as_deref_mut() {
                streams.arm_loaded_timers(now, config.streams.session_timeout_ms);
            }
            if let Some(share) = group.share.as_deref_mut() {
                let settings = group_configs.share_settings(&share.id, &config.share);
                Self::arm_loaded_share_sessions(share, now, settings.session_timeout_ms);
            }
        }
        for shard in &mut shards {
            shard.after_write();
        }
        if records > 0 {
            tracing::info!(
                records,
                groups = shards.iter().map(|shard| shard.groups.len()).sum::<usize>(),
                "consumer groups loaded from the offsets topic"
            );
        }
        let runtime = Runtime::new(shards, BTreeSet::new(), topic.journal(), clock);
        let coordinator = Self {
            topic,
            config,
            runtime,
            member_counter: AtomicU64::new(0),
            group_configs,
            share_state,
        };
        coordinator.rebalance_groups_over_capacity(now);
        Ok(coordinator)
    }

    /// As Kafka after a load: a classic group with more members than `group.max.size` allows
    /// rebalances, so those beyond it can commit their offsets before they are dropped.
    fn rebalance_groups_over_capacity(&self, now: i64) {
        let max = self.config.max_size as usize;
        self.runtime.write_each(now, |shard, _| {
            for group in shard.groups.values_mut() {
                if group.consumer.is_none() && group.members.len() > max {
                    tracing::info!(group = %group.id, members = group.members.len(), max, "a loaded group is over group.max.size: rebalancing");
                    self.prepare_rebalance(group, now);
                }
            }
        });
    }

    /// The groups' own config values, which DescribeConfigs shows and the AlterConfigs APIs
    /// change.
    pub fn group_configs(&self) -> &group_configs::GroupConfigs {
        &self.group_configs
    }

    /// The broker's consumer group settings, under which the groups' own values are checked.
    pub fn consumer_config(&self) -> &consumer::ConsumerGroupConfig {
        &self.config.consumer
    }

    /// The broker's group settings the groups' own values are checked against.
    pub fn broker_group_settings(&self) -> group_configs::BrokerGroupSettings<'_> {
        group_configs::BrokerGroupSettings {
            consumer: &self.config.consumer,
            share: &self.config.share,
        }
    }

    /// What share group `group` runs with: its own `share.*` values, else the broker's.
    pub fn share_settings(&self, group: &str) -> group_configs::ShareGroupSettings {
        self.group_configs.share_settings(group, &self.config.share)
    }

    /// Changes the configs of `group` (see [`group_configs::GroupConfigs::alter`]), under the
    /// broker's settings and its limit on groups with configs.
    pub fn alter_group_configs(
        &self,
        group: &str,
        alteration: group_configs::Alteration,
        validate_only: bool,
    ) -> std::result::Result<(), group_configs::Refusal> {
        let broker = group_configs::BrokerGroupSettings {
            consumer: &self.config.consumer,
            share: &self.config.share,
        };
        let limits = (broker, self.config.max_group_configs);
        self.group_configs
            .alter(group, alteration, limits, validate_only)
    }

    fn now(&self) -> i64 {
        self.runtime.now()
    }

    /// The share groups' partition state, which the broker's share partitions read and write.
    pub fn share_state(&self) -> &Arc<crate::share_state::ShareStateCoordinator> {
        &self.share_state
    }

    /// The `__consumer_offsets` partition that holds `group`.
    pub fn partition_of(&self, group: &str) -> i32 {
        self.topic.partition_of(group)
    }

    /// FindCoordinator: this broker coordinates every group; the offsets topic is created the
    /// first time a client asks, as Kafka does.
    pub fn find_coordinator(&self) -> Result<()> {
        self.topic.ensure_created()
    }

    /// Every group, by id.
    pub fn list(&self) -> Vec<ListedGroup> {
        let mut list: Vec<ListedGroup> = self
            .runtime
            .read_each(|shard| {
                shard
                    .groups
                    .values()
                    .map(|g| match (g.consumer.as_deref(), g.streams.as_deref()) {
                        _ if g.share.is_some() => {
                            let state = g.share.as_deref().map_or("Empty", |s| s.state().name());
                            ListedGroup {
                                id: g.id.clone(),
                                protocol_type: "share".to_owned(),
                                state,
                                group_type: "share",
                            }
                        }
                        (Some(consumer), _) => ListedGroup {
                            id: g.id.clone(),
                            protocol_type: "consumer".to_owned(),
                            state: consumer.state().name(),
                            group_type: "consumer",
                        },
                        (None, Some(streams)) => ListedGroup {
                            id: g.id.clone(),
                            protocol_type: "streams".to_owned(),
                            state: streams.state().name(),
                            group_type: "streams",
                        },
                        (None, None) => ListedGroup {
                            id: g.id.clone(),
                            protocol_type: g.protocol_type.clone().unwrap_or_default(),
                            state: g.state.name(),
                            group_type: "classic",
                        },
                    })
                    .collect::<Vec<_>>()
            })
            .into_iter()
            .flatten()
            .collect();
        list.sort_by(|a, b| a.id.cmp(&b.id));
        list
    }

    pub fn describe(&self, group_id: &str) -> Option<GroupDescription> {
        let partition = self.partition_of(group_id);
        self.runtime
            .read(partition, |shard| describe(shard.groups.get(group_id)?))
    }

    /// Whether `group_id` is a consumer group of the KIP-848 protocol (which DescribeGroups,
    /// the classic protocol's, does not describe).
    pub fn is_consumer_group(&self, group_id: &str) -> bool {
        let partition = self.partition_of(group_id);
        self.runtime.read(partition, |shard| {
            shard
                .groups
                .get(group_id)
                .is_some_and(|group| group.consumer.is_some())
        })
    }

    /// Whether `group_id` is a streams group (KIP-1071).
    pub fn is_streams_group(&self, group_id: &str) -> bool {
        let partition = self.partition_of(group_id);
        self.runtime.read(partition, |shard| {
            shard
                .groups
                .get(group_id)
                .is_some_and(|group| group.streams.is_some())
        })
    }

    /// The timers of every shard in turn, at one instant: members whose session lapsed, join
    /// and sync phases past their deadline, and (every `offsets.retention.check.interval.ms`)
    /// expired offsets. Called every 100 ms.
    pub fn tick(&self) {
        let now = self.now();
        self.runtime.write_each(now, |shard, ctx| {
            debug_assert!(
                shard
                    .groups
                    .keys()
                    .all(|group| self.partition_of(group) == ctx.partition),
                "every group of shard {} is in its partition",
                ctx.partition
            );
            for group in shard.groups.values_mut() {
                if group.consumer.is_some() {
                    self.expire_consumer_members(group, ctx);
                } else if group.share.is_some() {
                    self.expire_share_members(group, ctx);
                } else if group.streams.is_some() {
                    self.expire_streams_members(group, ctx);
                } else {
                    self.expire_members(group, ctx);
                }
            }
            if shard.offsets_expiry.due(ctx.now_ms) {
                self.expire_offsets(&mut shard.groups, ctx);
            }
        });
        self.share_state.tick();
    }

    /// Writes the group's metadata record; returns whether it was stored.
    fn persist_group(&self, group: &Group, ctx: &GroupCtx<'_>) -> bool {
        let record = (
            OffsetsKey::Group {
                group: group.id.clone(),
            },
            Some(group.to_value().encode()),
        );
        match ctx.append(&[record]) {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(group = %group.id, %error, "storing group metadata failed");
                false
            }
        }
    }
}

/// A group as DescribeGroups shows it.
fn describe(group: &Group) -> Option<GroupDescription> {
    // DescribeGroups is the classic protocol's: a consumer group is not one (Kafka answers
    // "Dead" and, from version 6, GROUP_ID_NOT_FOUND).
    if group.consumer.is_some() || group.streams.is_some() || group.share.is_some() {
        return None;
    }
    // As Kafka: the protocol and the members' metadata only of a Stable group (during a
    // rebalance they are about to change).
    let protocol = match group.state {
        state::GroupState::Stable => group.protocol.clone().unwrap_or_default(),
        _ => String::new(),
    };
    Some(GroupDescription {
        state: group.state.name(),
        protocol_type: group.protocol_type.clone().unwrap_or_default(),
        protocol: protocol.clone(),
        members: group
            .members
            .iter()
            .map(|m| DescribedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                metadata: if protocol.is_empty() {
                    Vec::new()
                } else {
                    m.metadata_for(&protocol)
                },
                assignment: m.assignment.clone(),
            })
            .collect(),
    })
}
