//! `ferrolog move-to-kafka`: carries a stopped ferrolog's data into an Apache Kafka (KRaft)
//! cluster, with every record at the same offset and every group's committed offsets.
//!
//! A KRaft Kafka opens a partition directory only when its cluster metadata knows the topic
//! with the id in the directory's `partition.metadata`; Kafka's CreateTopics cannot be given
//! an id. So the move goes in two steps, around a restart of the Kafka brokers:
//!
//! 1. `create-topics`, with Kafka running: every topic is created in Kafka with the same
//!    partition count and topic-level settings, and Kafka is made to create
//!    `__consumer_offsets` and, when ferrolog holds share groups, `__share_group_state` (whose
//!    partition counts must equal ferrolog's, since a group's partition follows from them). Kafka then holds an empty directory for each partition, with
//!    Kafka's topic id. The topic defaults changed at run time (dynamic broker configs), the
//!    groups' configs and the client quotas are set in Kafka. Last,
//!    ferrolog's ACLs are created in Kafka (CreateAcls), which needs
//!    an authorizer there; without one the step stops and says so, unless told to leave the
//!    ACLs behind.
//! 2. `copy`, with the Kafka brokers stopped: into each such empty partition directory go
//!    ferrolog's segments, indexes and producer snapshots (Kafka's `partition.metadata` and
//!    leader-epoch checkpoint stay), and the log start offsets (and the cleaner's progress) go
//!    into Kafka's checkpoints. A partition whose Kafka directory already holds records is
//!    refused, never overwritten. Records naming topics by id are written again naming
//!    Kafka's ids: the groups' (`group_topic_ids`) and the share partitions' state
//!    (`share_state`).

mod assignments;
mod copy;
mod create;
mod group_hashes;
mod group_topic_ids;
mod quotas;
mod segment;
mod share_state;

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct MoveArgs {
    #[command(subcommand)]
    step: Step,
}

#[derive(Debug, Subcommand)]
enum Step {
    /// With Kafka running: create every topic of the ferrolog directories in Kafka (same
    /// partitions and settings), and Kafka's `__consumer_offsets`.
    CreateTopics {
        /// ferrolog's data directories (comma-separated, as `log.dirs`); ferrolog stopped.
        #[arg(long, required = true, value_delimiter = ',')]
        log_dirs: Vec<PathBuf>,
        /// A Kafka broker, host:port (PLAINTEXT).
        #[arg(long)]
        bootstrap_server: String,
        /// Move without ferrolog's ACLs, even though Kafka cannot take them (no authorizer).
        #[arg(long)]
        without_acls: bool,
    },
    /// With the Kafka brokers stopped: copy ferrolog's partitions into the empty partition
    /// directories `create-topics` made Kafka create.
    Copy {
        /// ferrolog's data directories (comma-separated, as `log.dirs`); ferrolog stopped.
        #[arg(long, required = true, value_delimiter = ',')]
        log_dirs: Vec<PathBuf>,
        /// The `log.dirs` of a stopped Kafka broker (comma-separated). Partitions that broker
        /// does not hold are listed; run `copy` again with the other brokers' directories.
        #[arg(long, required = true, value_delimiter = ',')]
        kafka_log_dirs: Vec<PathBuf>,
    },
}

pub fn run(args: &MoveArgs) -> anyhow::Result<bool> {
    match &args.step {
        Step::CreateTopics {
            log_dirs,
            bootstrap_server,
            without_acls,
        } => create::run(log_dirs, bootstrap_server, *without_acls),
        Step::Copy {
            log_dirs,
            kafka_log_dirs,
        } => copy::run(log_dirs, kafka_log_dirs),
    }
}

/// What ferrolog holds, read by opening its directories (recovering them if ferrolog did not
/// stop cleanly) and shutting them down cleanly again.
struct Holdings {
    /// Every topic with its partition count and topic-level overrides.
    topics: Vec<(String, i32, std::collections::BTreeMap<String, String>)>,
    /// The ACLs (`ferrolog-acls`), kept when ferrolog ran with an authorizer.
    acls: Vec<ferrolog_broker::authz::AclBinding>,
    /// Every partition: its directory, log start offset and log end offset.
    partitions: Vec<(ferrolog_storage::TopicPartition, PathBuf, i64, i64)>,
    /// The consumer groups' assignment records, which name topics by id.
    group_assignments: group_topic_ids::GroupAssignments,
    /// Each group's own configs (dynamic group configs), by group id.
    group_configs: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
    /// The share partitions' state, when ferrolog holds `__share_group_state`.
    share_states: Option<share_state::ShareStates>,
    /// The client quotas (`ferrolog-client-quotas`).
    quotas: ferrolog_broker::quotas::Quotas,
    /// The topic defaults changed at run time (`ferrolog-broker-configs`): the cluster
    /// default's, with this node's own over them.
    broker_defaults: std::collections::BTreeMap<String, String>,
    /// The client-metrics subscriptions (`ferrolog-client-metrics`), by name.
    subscriptions: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
}

fn read_holdings(log_dirs: &[PathBuf]) -> anyhow::Result<Holdings> {
    use anyhow::Context as _;
    use ferrolog_coordinator::group::group_configs::GroupConfigs;
    use ferrolog_storage::manager::{LogManager, ManagerConfig};
    use std::sync::Arc;
    let config = ManagerConfig {
        log_dirs: log_dirs.to_vec(),
        ..ManagerConfig::default()
    };
    let manager = Arc::new(
        LogManager::open(config, Arc::new(ferrolog_storage::SystemClock))
            .context("opening ferrolog's data directories (is ferrolog stopped?)")?,
    );
    let topics = manager
        .topics()
        .into_iter()
        .map(|(topic, partitions)| {
            let count = partitions.iter().max().map_or(0, |max| max + 1);
            let overrides = manager.topic_configs().overrides(&topic);
            (topic, count, overrides)
        })
        .collect();
    let mut partitions: Vec<_> = manager
        .logs()
        .into_iter()
        .map(|(topic_partition, log)| {
            let (start, end) = (log.log_start_offset().value(), log.log_end_offset().value());
            (topic_partition, log.dir().to_path_buf(), start, end)
        })
        .collect();
    partitions.sort_by(|a, b| a.0.cmp(&b.0));
    let acls = read_acls(&manager);
    let group_assignments = group_topic_ids::GroupAssignments::read(&manager);
    let group_configs = GroupConfigs::open(Arc::clone(&manager))
        .map(|configs| configs.all())
        .context("reading ferrolog's group configs");
    let share_states = share_state::ShareStates::read(&manager);
    let quotas = quotas::read(&manager);
    let broker_defaults = ferrolog_broker::dynamic_configs::topic_defaults_set(&manager)
        .context("reading ferrolog's dynamic broker configs");
    let subscriptions = read_subscriptions(&manager);
    manager
        .shutdown()
        .context("closing ferrolog's data directories")?;
    Ok(Holdings {
        topics,
        acls: acls?,
        partitions,
        group_assignments: group_assignments?,
        group_configs: group_configs?,
        share_states: share_states?,
        quotas: quotas?,
        broker_defaults: broker_defaults?,
        subscriptions: subscriptions?,
    })
}

/// The client-metrics subscriptions kept in the directories.
fn read_subscriptions(
    manager: &ferrolog_storage::manager::LogManager,
) -> anyhow::Result<ferrolog_storage::manager::Table> {
    use ferrolog_broker::telemetry::CLIENT_METRICS_DOCUMENT;
    let document = manager.documents().read(CLIENT_METRICS_DOCUMENT)?;
    ferrolog_storage::manager::parse_table(&document.body).map_err(|(line, reason)| {
        let path = document.source.unwrap_or_default();
        anyhow::anyhow!("{}, line {}: {reason}", path.display(), line + 3)
    })
}

/// The ACLs kept in the directories (none when ferrolog never ran with an authorizer).
fn read_acls(
    manager: &ferrolog_storage::manager::LogManager,
) -> anyhow::Result<Vec<ferrolog_broker::authz::AclBinding>> {
    use ferrolog_broker::authz::store;
    let document = manager.documents().read(store::ACLS_DOCUMENT)?;
    store::parse(&document.body).map_err(|(line, reason)| {
        let path = document.source.unwrap_or_default();
        anyhow::anyhow!("{}, line {}: {reason}", path.display(), line + 2)
    })
}
