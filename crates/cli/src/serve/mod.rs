//! `ferrolog serve`: the broker on its data directories, until Ctrl-C or SIGTERM (a second
//! Ctrl-C exits at once). A clean stop flushes and closes every log and writes the
//! clean-shutdown markers, so the next start needs no recovery.
//!
//! Configuration is Kafka's `server.properties` (`--config`), then the flags, then each
//! `--override key=value`, later ones winning. With none of them it listens on 127.0.0.1:9092,
//! keeps its data in `./ferrolog-data`, and creates topics on first use. An unknown key or a
//! bad value stops startup naming it; a Kafka key ferrolog does not use is reported once.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::Args;
use ferrolog_broker::Context;
use ferrolog_broker::listener::Listener;
use ferrolog_storage::SystemClock;
use ferrolog_storage::manager::{LogManager, ManagerConfig, known_keys, parse_properties};

mod broker_settings;
mod jaas;
mod listeners;
mod metrics_endpoint;
mod share_settings;
mod tls;

use broker_settings::broker_config;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A Kafka `server.properties` file.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Address to listen on (sets `listeners`).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Data directories, comma-separated (sets `log.dirs`).
    #[arg(long)]
    log_dirs: Option<String>,
    /// Partitions of a topic created on first use (sets `num.partitions`).
    #[arg(long)]
    num_partitions: Option<i32>,
    /// Sets any key, as Kafka's scripts accept: `--override log.retention.hours=1`.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

/// Keys the broker itself reads (the storage's are in `known_keys`).
const BROKER_KEYS: &[&str] = &[
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "controller.listener.names",
    "sasl.enabled.mechanisms",
    "connection.failed.authentication.delay.ms",
    "sasl.server.max.receive.size",
    // Not a Kafka key: failed SASL exchanges one address may make per second.
    "ferrolog.authentication.failures.per.second.per.ip",
    "num.partitions",
    "auto.create.topics.enable",
    "socket.request.max.bytes",
    "queued.max.request.bytes",
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "max.connection.creation.rate",
    "connections.max.idle.ms",
    // Not a Kafka key: how long a request's bytes may take to arrive after its size.
    "ferrolog.request.arrival.timeout.ms",
    // Not a Kafka key: how long a connection may take to authenticate and send its first request.
    "ferrolog.connection.setup.timeout.ms",
    "fetch.max.bytes",
    "quota.window.num",
    "quota.window.size.seconds",
    "controller.quota.window.num",
    "controller.quota.window.size.seconds",
    // Not a Kafka key: how fetched bytes reach the socket, `sendfile` (default) or `copy`.
    "ferrolog.fetch.transfer",
    // Not a Kafka key: where the Prometheus endpoint listens (off unless set).
    "metrics.listener",
    // Not a Kafka key: the log filter (`info`, `warn`, `info,ferrolog_storage=debug`, ...).
    "ferrolog.log.level",
    "offsets.topic.num.partitions",
    "offsets.topic.segment.bytes",
    "offsets.retention.minutes",
    "offsets.retention.check.interval.ms",
    "offset.metadata.max.bytes",
    "group.min.session.timeout.ms",
    "group.max.session.timeout.ms",
    "group.initial.rebalance.delay.ms",
    "group.max.size",
    "group.coordinator.rebalance.protocols",
    "group.consumer.session.timeout.ms",
    "group.consumer.min.session.timeout.ms",
    "group.consumer.max.session.timeout.ms",
    "group.consumer.heartbeat.interval.ms",
    "group.consumer.min.heartbeat.interval.ms",
    "group.consumer.max.heartbeat.interval.ms",
    "group.consumer.assignment.interval.ms",
    "group.consumer.min.assignment.interval.ms",
    "group.consumer.max.assignment.interval.ms",
    "group.consumer.max.size",
    "group.consumer.migration.policy",
    "group.consumer.assignors",
    "group.streams.session.timeout.ms",
    "group.streams.min.session.timeout.ms",
    "group.streams.max.session.timeout.ms",
    "group.streams.heartbeat.interval.ms",
    "group.streams.min.heartbeat.interval.ms",
    "group.streams.max.heartbeat.interval.ms",
    "group.streams.assignment.interval.ms",
    "group.streams.min.assignment.interval.ms",
    "group.streams.max.assignment.interval.ms",
    "group.streams.max.size",
    "group.streams.num.standby.replicas",
    "group.streams.max.standby.replicas",
    "group.streams.initial.rebalance.delay.ms",
    "group.streams.assignors",
    "group.share.session.timeout.ms",
    "group.share.min.session.timeout.ms",
    "group.share.max.session.timeout.ms",
    "group.share.heartbeat.interval.ms",
    "group.share.min.heartbeat.interval.ms",
    "group.share.max.heartbeat.interval.ms",
    "group.share.assignment.interval.ms",
    "group.share.min.assignment.interval.ms",
    "group.share.max.assignment.interval.ms",
    "group.share.record.lock.duration.ms",
    "group.share.min.record.lock.duration.ms",
    "group.share.max.record.lock.duration.ms",
    "group.share.delivery.count.limit",
    "group.share.min.delivery.count.limit",
    "group.share.max.delivery.count.limit",
    "group.share.partition.max.record.locks",
    "group.share.min.partition.max.record.locks",
    "group.share.max.partition.max.record.locks",
    "group.share.max.size",
    "group.share.max.share.sessions",
    "share.coordinator.state.topic.num.partitions",
    "share.coordinator.state.topic.segment.bytes",
    "share.coordinator.snapshot.update.records.per.snapshot",
    "share.coordinator.state.topic.prune.interval.ms",
    "share.coordinator.cold.partition.snapshot.interval.ms",
    "transaction.state.log.num.partitions",
    "transaction.state.log.segment.bytes",
    "transaction.max.timeout.ms",
    "transactional.id.expiration.ms",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms",
    "transaction.remove.expired.transaction.cleanup.interval.ms",
    // Not a Kafka key: start on an ACL or credentials document older than its recorded generation.
    "ferrolog.accept.rolled.back.documents",
    // Not a Kafka key: the most transactional ids kept.
    "ferrolog.max.transactional.ids",
    // Not a Kafka key: the transaction.version feature clients are told is finalized.
    "ferrolog.transaction.version",
    "authorizer.class.name",
    "super.users",
    "allow.everyone.if.no.acl.found",
    // Not a Kafka key: the most ACLs kept.
    "ferrolog.max.acls",
    "telemetry.max.bytes",
    "ferrolog.telemetry.max.retained.bytes",
    "ferrolog.max.client.metrics.subscriptions",
    "delegation.token.secret.key",
    "delegation.token.max.lifetime.ms",
    "delegation.token.expiry.time.ms",
    "delegation.token.expiry.check.interval.ms",
    "ferrolog.max.delegation.tokens",
    "ferrolog.max.group.configs",
    "ferrolog.max.groups",
];

/// Kafka broker keys that mean nothing for a single-node ferrolog; reported once, then ignored.
const IGNORED_KAFKA_KEYS: &[&str] = &[
    "broker.rack",
    "num.network.threads",
    "num.io.threads",
    "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes",
    "default.replication.factor",
    "min.insync.replicas",
    "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr",
    "share.coordinator.state.topic.replication.factor",
    "share.coordinator.state.topic.min.isr",
    // The share coordinator's threads, buffers and timings of Kafka's own design; its state
    // is written as an acknowledgement is answered, uncompressed.
    "share.coordinator.threads",
    "share.coordinator.load.buffer.size",
    "share.coordinator.append.linger.ms",
    "share.coordinator.write.timeout.ms",
    "share.coordinator.cached.buffer.max.bytes",
    "share.coordinator.state.topic.compression.codec",
    "share.fetch.purgatory.purge.interval.requests",
    // The cleaner reads each batch as it scans a segment, with no buffer of a set size.
    "log.cleaner.io.buffer.size",
    // The share state is initialized within the heartbeat: there is nothing to retry.
    "group.share.initialize.retry.interval.ms",
    "zookeeper.connect",
    "zookeeper.connection.timeout.ms",
    "process.roles",
    "controller.quorum.voters",
    "controller.quorum.bootstrap.servers",
    "inter.broker.listener.name",
    // A broker reads JAAS only from listener.name.<listener>.<mechanism>.sasl.jaas.config, as
    // Kafka's brokers do (Kafka warns and ignores this key too).
    "sasl.jaas.config",
    "sasl.mechanism.inter.broker.protocol",
    "sasl.mechanism.controller.protocol",
    "security.inter.broker.protocol",
    // Re-authentication is not offered: SaslAuthenticate answers a session lifetime of 0.
    "connections.max.reauth.ms",
    "num.replica.fetchers",
    "num.replica.alter.log.dirs.threads",
    "unclean.leader.election.enable",
    "delete.topic.enable",
];

/// The warning due when a listener without authentication (PLAINTEXT) accepts connections from
/// beyond this machine: any address but a loopback one, the unspecified address (every
/// interface) included.
fn unauthenticated_exposure(listener: &Listener, bound: SocketAddr) -> Option<String> {
    (!listener.protocol.uses_sasl() && !bound.ip().is_loopback()).then(|| {
        format!(
            "listener {} accepts clients from the network without authentication: anyone who can reach it can read and change every topic (bind it to 127.0.0.1, make it a SASL_PLAINTEXT listener, or restrict it with ACLs by host)",
            listener.describe(bound)
        )
    })
}

/// Merges the config file, the flags and the overrides, and checks every key.
fn merged_properties(args: &ServeArgs) -> anyhow::Result<BTreeMap<String, String>> {
    let mut properties = BTreeMap::new();
    if let Some(path) = &args.config {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        properties.extend(parse_properties(&text));
    }
    if let Some(listen) = args.listen {
        properties.insert("listeners".into(), format!("PLAINTEXT://{listen}"));
    }
    if let Some(dirs) = &args.log_dirs {
        properties.insert("log.dirs".into(), dirs.clone());
    }
    if let Some(partitions) = args.num_partitions {
        properties.insert("num.partitions".into(), partitions.to_string());
    }
    for pair in &args.overrides {
        let (key, value) = pair
            .split_once('=')
            .with_context(|| format!("--override {pair:?}: expected KEY=VALUE"))?;
        properties.insert(key.trim().to_owned(), value.trim().to_owned());
    }
    if !properties.contains_key("log.dirs") && !properties.contains_key("log.dir") {
        properties.insert("log.dirs".into(), "ferrolog-data".into());
    }
    let known: Vec<&str> = known_keys()
        .chain(BROKER_KEYS.iter().copied())
        .chain(tls::SSL_KEYS.iter().copied())
        .collect();
    for key in properties.keys() {
        if IGNORED_KAFKA_KEYS.contains(&key.as_str())
            || tls::IGNORED_SSL_KEYS.contains(&key.as_str())
        {
            tracing::warn!(key, "a Kafka setting ferrolog does not use; ignored");
        } else if !known.contains(&key.as_str()) && !listeners::is_listener_key(key) {
            bail!(
                "unknown setting {key}: not a broker key ferrolog knows (see docs for the supported keys)"
            );
        }
    }
    Ok(properties)
}

/// Hands the broker's loggers (Kafka's BROKER_LOGGER resource) the filter in force,
/// `FERROLOG_LOG`'s else `ferrolog.log.level`'s, and the hook that changes it.
fn install_loggers(context: &Context, properties: &BTreeMap<String, String>) {
    let filter = std::env::var("FERROLOG_LOG")
        .ok()
        .or_else(|| properties.get("ferrolog.log.level").cloned());
    context.loggers.install(
        filter.as_deref().unwrap_or("info"),
        Some(Box::new(crate::reload_log_filter)),
    );
}

pub fn run(args: &ServeArgs) -> anyhow::Result<()> {
    let properties = merged_properties(args)?;
    if let Some(level) = properties.get("ferrolog.log.level") {
        crate::set_log_level(level)?;
    }
    ferrolog_broker::arm_failpoints_from_env();
    let manager_config = ManagerConfig::from_properties(&properties)?;
    let broker_config = broker_config(&properties)?;
    let (planned, notes) = listeners::plan(&properties)?;
    for note in notes {
        tracing::warn!("{note}");
    }
    let file_limit = ferrolog_broker::network::raise_file_limit();
    tracing::info!(
        open_files = file_limit,
        max_connections = broker_config.limits.max_connections,
        "file descriptors this process may open"
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // The metrics endpoint is up before the logs load, so recovery progress can be watched.
    let (opened_manager, pushed_metrics) = metrics_endpoint::start(&runtime, &properties)?;
    let manager = Arc::new(
        LogManager::open(manager_config, Arc::new(SystemClock))
            .context("opening the data directories")?,
    );
    let _ = opened_manager.set(Arc::clone(&manager));
    // Before the background work, whose retention follows the topic defaults they set.
    let dynamic_configs =
        broker_settings::open_dynamic_configs(&manager, &broker_config, &planned)?;
    manager.start_background()?;
    let outcome = runtime.block_on(async {
        let mut bound = Vec::new();
        for plan in planned {
            let socket = tokio::net::TcpListener::bind(plan.bind)
                .await
                .with_context(|| format!("listening on {} for listener {}", plan.bind, plan.listener.name))?;
            let local = socket.local_addr()?;
            let mut listener = plan.listener;
            if !plan.advertised_given {
                listener.advertised.host = listeners::advertised_host(local);
                listener.advertised.port = local.port();
            }
            tracing::info!(%local, listener = %listener.name, protocol = %listener.protocol, "serving");
            eprintln!("ferrolog serving Kafka clients on {}", listener.describe(local));
            if let Some(warning) = unauthenticated_exposure(&listener, local) {
                tracing::warn!("{warning}");
            }
            bound.push((socket, Arc::new(listener)));
        }
        let context = Arc::new(
            Context::with_dynamic_configs(Arc::clone(&manager), broker_config, dynamic_configs)
                .context("loading consumer groups, credentials and ACLs from the data directories")?,
        );
        install_loggers(&context, &properties);
        // What clients push joins the metrics endpoint; held weakly, as the broker may stop.
        let serving = Arc::downgrade(&context);
        let _ = pushed_metrics.set(Box::new(move || {
            serving.upgrade().map(|context| context.telemetry.render(std::time::Instant::now())).unwrap_or_default()
        }));
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            served = ferrolog_broker::serve_listeners(bound, context) => served.map_err(anyhow::Error::from),
            _ = tokio::signal::ctrl_c() => Ok(()),
            _ = terminate.recv() => Ok(()),
        }
    });
    eprintln!("shutting down (Ctrl-C again to exit at once)");
    std::thread::spawn(|| {
        // A second Ctrl-C while the logs are being flushed exits without waiting.
        if let Ok(second) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            second.block_on(async {
                let _ = tokio::signal::ctrl_c().await;
                std::process::exit(130);
            });
        }
    });
    runtime.shutdown_background();
    manager.shutdown()?;
    outcome
}

#[cfg(test)]
mod key_catalog_tests;

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn args(overrides: &[&str]) -> ServeArgs {
        ServeArgs {
            config: None,
            listen: None,
            log_dirs: None,
            num_partitions: None,
            overrides: overrides.iter().map(|o| (*o).to_owned()).collect(),
        }
    }

    #[test]
    fn defaults_listen_on_9092_with_data_in_ferrolog_data() {
        let properties = merged_properties(&args(&[])).unwrap();
        let config = broker_config(&properties).unwrap();
        let (planned, _) = listeners::plan(&properties).unwrap();
        assert_eq!(planned[0].bind, "127.0.0.1:9092".parse().unwrap());
        assert!(config.auto_create_topics);
        let manager = ManagerConfig::from_properties(&properties).unwrap();
        assert_eq!(manager.log_dirs, vec![PathBuf::from("ferrolog-data")]);
    }

    #[test]
    fn a_listener_beyond_loopback_without_authentication_is_warned_about() {
        let plaintext = Listener::plaintext("127.0.0.1", 9092);
        for quiet in ["127.0.0.1:9092", "[::1]:9092"] {
            assert_eq!(
                unauthenticated_exposure(&plaintext, quiet.parse().unwrap()),
                None,
                "{quiet}"
            );
        }
        for exposed in ["0.0.0.0:9092", "10.0.0.7:9092", "[::]:9092"] {
            let warning = unauthenticated_exposure(&plaintext, exposed.parse().unwrap()).unwrap();
            assert!(
                warning.contains(&format!("PLAINTEXT://{exposed}"))
                    && warning.contains("without authentication"),
                "{warning}"
            );
        }
        let sasl = Listener {
            protocol: ferrolog_broker::listener::SecurityProtocol::SaslPlaintext,
            ..plaintext
        };
        assert_eq!(
            unauthenticated_exposure(&sasl, "0.0.0.0:9092".parse().unwrap()),
            None
        );
    }

    #[test]
    fn the_authorizer_is_kafkas_standard_one_or_none() {
        let config = |overrides: &[&str]| {
            broker_config(&merged_properties(&args(overrides)).unwrap())
                .map(|config| config.authorizer)
        };
        assert_eq!(config(&[]).unwrap(), None);
        assert_eq!(config(&["authorizer.class.name="]).unwrap(), None);
        let standard = config(&[
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users=User:admin;User:ops",
            "allow.everyone.if.no.acl.found=true",
        ])
        .unwrap()
        .unwrap();
        assert!(standard.allow_everyone_if_no_acl_found);
        assert_eq!(
            standard.super_users.iter().collect::<Vec<_>>(),
            ["User:admin", "User:ops"]
        );
        for (overrides, named) in [
            (
                &["authorizer.class.name=kafka.security.authorizer.AclAuthorizer"][..],
                "authorizer.class.name",
            ),
            (&["super.users=User:admin"][..], "super.users"),
            (
                &[
                    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                    "super.users=admin",
                ][..],
                "super.users",
            ),
        ] {
            let error = config(overrides).unwrap_err().to_string();
            assert!(error.contains(named), "{overrides:?}: {error}");
        }
    }

    #[test]
    fn overrides_set_kafka_keys_and_bad_ones_name_the_key() {
        let properties = merged_properties(&args(&[
            "log.retention.hours=1",
            "num.partitions=3",
            "listeners=PLAINTEXT://:9999",
        ]))
        .unwrap();
        let manager = ManagerConfig::from_properties(&properties).unwrap();
        assert_eq!(
            manager.log_defaults.retention_age,
            Some(std::time::Duration::from_secs(3_600))
        );
        let config = broker_config(&properties).unwrap();
        let (planned, _) = listeners::plan(&properties).unwrap();
        assert_eq!((planned[0].bind.port(), config.num_partitions), (9999, 3));

        let error = merged_properties(&args(&["no.such.key=1"]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("no.such.key"), "{error}");
        let bad = merged_properties(&args(&["num.partitions=zero"])).unwrap();
        let error = broker_config(&bad).unwrap_err().to_string();
        assert!(error.contains("num.partitions"), "{error}");
        let ssl = merged_properties(&args(&["listeners=SSL://127.0.0.1:9093"])).unwrap();
        assert!(
            listeners::plan(&ssl)
                .unwrap_err()
                .to_string()
                .contains("ssl.keystore.type is JKS")
        );
        let error = merged_properties(&args(&["listener.name.x.ssl.bogus=k"]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("listener.name.x.ssl.bogus"), "{error}");
        for (setting, key) in [
            ("connections.max.idle.ms=0", "connections.max.idle.ms=0"),
            (
                "ferrolog.request.arrival.timeout.ms=0",
                "ferrolog.request.arrival.timeout.ms=0",
            ),
            (
                "ferrolog.connection.setup.timeout.ms=0",
                "ferrolog.connection.setup.timeout.ms=0",
            ),
            (
                "queued.max.request.bytes=1000",
                "queued.max.request.bytes (1000)",
            ),
            ("max.connections=0", "max.connections"),
        ] {
            let bad = merged_properties(&args(&[setting])).unwrap();
            let error = broker_config(&bad).unwrap_err().to_string();
            assert!(error.contains(key), "{setting}: {error}");
        }
        let unlimited = merged_properties(&args(&["connections.max.idle.ms=-1"])).unwrap();
        assert_eq!(
            broker_config(&unlimited).unwrap().connections_max_idle,
            None
        );
        assert!(
            merged_properties(&args(&["zookeeper.connect=localhost:2181"])).is_ok(),
            "known Kafka keys are ignored"
        );
    }

    #[test]
    fn the_operator_guide_documents_every_key() {
        let guide = include_str!("../../../../docs/operations.md");
        let undocumented: Vec<&str> = known_keys()
            .chain(BROKER_KEYS.iter().copied())
            .chain(IGNORED_KAFKA_KEYS.iter().copied())
            .chain(tls::SSL_KEYS.iter().copied())
            .chain(tls::IGNORED_SSL_KEYS.iter().copied())
            .chain(ferrolog_storage::config::TOPIC_CONFIG_KEYS.iter().copied())
            .filter(|key| !guide.contains(&format!("`{key}`")))
            .collect();
        assert!(
            undocumented.is_empty(),
            "docs/operations.md lacks {undocumented:?}"
        );
    }

    #[test]
    fn every_key_the_storage_and_the_coordinator_read_is_accepted() {
        let properties = merged_properties(&args(&[
            "log.cleaner.threads=2",
            "log.initial.task.delay.ms=0",
            "log.retention.check.interval.ms=1000",
            "producer.id.expiration.ms=60000",
            "producer.id.expiration.check.interval.ms=1000",
            "offsets.topic.num.partitions=3",
            "group.initial.rebalance.delay.ms=0",
            "ferrolog.fetch.transfer=sendfile",
        ]))
        .unwrap();
        let manager = ManagerConfig::from_properties(&properties).unwrap();
        assert_eq!(manager.cleaner.threads, 2);
        assert_eq!(
            manager.background.producer_id_expiration,
            std::time::Duration::from_secs(60)
        );
        let config = broker_config(&properties).unwrap();
        assert_eq!(config.groups.offsets_topic_partitions, 3);
        assert_eq!(
            config.groups.initial_rebalance_delay,
            std::time::Duration::ZERO
        );
    }
}
