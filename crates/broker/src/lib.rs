//! A single-node Kafka-protocol broker over ferrolog's [`LogManager`]: unmodified Kafka clients
//! produce and fetch through it. Codecs come from the `kafka-protocol` crate; each API has its
//! own handler in [`handlers`], all with one shape: a decoded request in, a response out. The
//! table in [`dispatch`] declares each API once; the dispatcher and ApiVersions come from it.
//!
//! Threads: a tokio runtime accepts connections and reads frames ([`network`]); each connection
//! answers its requests in order. Storage calls are synchronous; they cross into the blocking
//! pool in one place, [`bridge::blocking`].

pub mod dispatch;
pub mod dynamic_configs;
pub mod features;
pub mod fetch_waiters;
pub mod handlers;
pub mod loggers;
#[cfg(feature = "probes")]
pub mod probes;
pub mod refuse;
mod service;
pub mod share_partitions;
pub mod share_sessions;
pub mod telemetry;

pub use ferrolog_auth::{authz, listener, quotas, sasl, session, stored, tls, tokens};
pub use ferrolog_coordinator::runtime as coordinator;
pub use ferrolog_coordinator::{group, txn};
pub use ferrolog_net::{bridge, metrics, network, transfer};
pub use ferrolog_protocol as protocol;
pub use ferrolog_protocol::{error_codes, errors, frame_shape, response};

use std::sync::Arc;
use std::time::Duration;

use ferrolog_storage::manager::LogManager;

use crate::group::{GroupConfig, GroupCoordinator};
use crate::network::limits::ConnectionLimits;
use crate::transfer::FetchTransfer;
use crate::txn::{TransactionCoordinator, TxnConfig};

pub use service::{serve, serve_listeners};

/// Arms the fault points named in the `FAILPOINTS` environment variable (the `fail` crate's
/// syntax: `txn.markers=sleep(60000)`), for the crash tests that kill a broker in a chosen
/// state. Only with the `failpoints` feature; otherwise it does nothing.
pub fn arm_failpoints_from_env() {
    #[cfg(feature = "failpoints")]
    if let Some(points) = std::env::var_os("FAILPOINTS") {
        // The scenario lives as long as the process.
        std::mem::forget(fail::FailScenario::setup());
        tracing::warn!(points = %points.to_string_lossy(), "fault points armed from FAILPOINTS");
    }
}

/// Broker settings by key. `Debug` shows the keys only: values may be passwords.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Settings(pub std::collections::BTreeMap<String, String>);

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

/// How the broker presents itself and what it allows.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// The settings the broker was started with (`server.properties` and the command line's),
    /// as DescribeConfigs lists them and as the dynamic broker configs stand over. Default none.
    pub properties: Settings,
    /// Partitions of an automatically created topic (`num.partitions`). Default 1.
    pub num_partitions: i32,
    /// `auto.create.topics.enable`. Default true.
    pub auto_create_topics: bool,
    /// `socket.request.max.bytes`: larger requests close the connection. Default 100 MiB.
    pub socket_request_max_bytes: usize,
    /// `queued.max.request.bytes`: memory for requests in flight, decoded and answered, across
    /// all connections (`None`: unlimited). Default 512 MiB; Kafka's is unlimited.
    pub queued_max_request_bytes: Option<u64>,
    /// `max.connections`, `max.connections.per.ip` and its overrides.
    pub limits: ConnectionLimits,
    /// `connections.max.idle.ms`: a connection that sends nothing, or reads nothing of its
    /// response, this long is closed (`None`: never). Default 10 minutes.
    pub connections_max_idle: Option<Duration>,
    /// `ferrolog.request.arrival.timeout.ms`: a request whose bytes have not all arrived this
    /// long after its size closes its connection (`None`: never). Default 30 seconds, the
    /// Java client's own `request.timeout.ms`.
    pub request_arrival_timeout: Option<Duration>,
    /// `ferrolog.connection.setup.timeout.ms`: a connection that has not finished its TLS
    /// handshake and SASL authentication, and sent its first request, this long after it was
    /// accepted is closed (`None`: never). Default 10 seconds.
    pub connection_setup_timeout: Option<Duration>,
    /// `fetch.max.bytes`: the most record bytes one fetch returns. Default 55 MiB.
    pub fetch_max_bytes: i32,
    /// How fetched record bytes reach the socket (`ferrolog.fetch.transfer`).
    pub fetch_transfer: FetchTransfer,
    /// The group coordinator's settings.
    pub groups: GroupConfig,
    /// The transaction coordinator's settings.
    pub transactions: TxnConfig,
    /// `super.users` and `allow.everyone.if.no.acl.found`, when `authorizer.class.name` names
    /// Kafka's `StandardAuthorizer`; `None` (the default): no authorization.
    pub authorizer: Option<authz::AuthorizerConfig>,
    /// `ferrolog.max.acls`: the most ACLs the broker keeps; CreateAcls beyond it is refused
    /// (POLICY_VIOLATION). Default 100,000 (Kafka: unlimited).
    pub max_acls: usize,
    /// `connection.failed.authentication.delay.ms`: how long a failed authentication waits
    /// before its answer and the close. Default 100 ms, as Kafka's.
    pub failed_authentication_delay: Duration,
    /// `sasl.server.max.receive.size`: the largest frame a client may send before it has
    /// authenticated; a larger one closes the connection. Default 512 KiB, as Kafka's.
    pub sasl_max_receive_size: usize,
    /// `ferrolog.accept.rolled.back.documents`: start on an ACL or credentials document found
    /// older than the generation recorded for it (deleted, or restored from an old copy)
    /// instead of refusing to. Default false.
    pub accept_rolled_back_documents: bool,
    /// `ferrolog.authentication.failures.per.second.per.ip`: SASL exchanges one address may
    /// fail per second (twice as many at once); beyond, its next ones wait their turn
    /// (`None`: no limit). Default 10.
    pub authentication_failures_per_second_per_ip: Option<u32>,
    /// `quota.window.num` and `quota.window.size.seconds`: how client quotas' rates are
    /// sampled. Default 11 samples of 1 second, as Kafka's.
    pub quota_sampling: quotas::Sampling,
    /// `controller.quota.window.num` and `controller.quota.window.size.seconds`: the burst
    /// of the controller mutation quota (samples × seconds × rate). Default 11 of 1 second.
    pub controller_quota_sampling: quotas::Sampling,
    /// Client telemetry's limits.
    pub telemetry: telemetry::TelemetryConfig,
    /// Delegation tokens' key, lifetimes and limit.
    pub tokens: tokens::TokenConfig,
}

impl BrokerConfig {
    /// The network edge's share of the settings.
    pub fn net(&self) -> ferrolog_net::NetConfig {
        ferrolog_net::NetConfig {
            socket_request_max_bytes: self.socket_request_max_bytes,
            queued_max_request_bytes: self.queued_max_request_bytes,
            limits: self.limits.clone(),
            connections_max_idle: self.connections_max_idle,
            request_arrival_timeout: self.request_arrival_timeout,
            connection_setup_timeout: self.connection_setup_timeout,
            fetch_transfer: self.fetch_transfer,
            failed_authentication_delay: self.failed_authentication_delay,
            sasl_max_receive_size: self.sasl_max_receive_size,
            authentication_failures_per_second_per_ip: self
                .authentication_failures_per_second_per_ip,
        }
    }

    /// What to do with a document found older than its recorded generation.
    pub fn rollback(&self) -> stored::Rollback {
        if self.accept_rolled_back_documents {
            stored::Rollback::Accept
        } else {
            stored::Rollback::Refuse
        }
    }
}

impl Default for BrokerConfig {
    fn default() -> Self {
        Self {
            properties: Settings::default(),
            num_partitions: 1,
            auto_create_topics: true,
            socket_request_max_bytes: 104_857_600,
            queued_max_request_bytes: Some(512 << 20),
            limits: ConnectionLimits::default(),
            connections_max_idle: Some(Duration::from_millis(600_000)),
            request_arrival_timeout: Some(Duration::from_secs(30)),
            connection_setup_timeout: Some(Duration::from_secs(10)),
            fetch_max_bytes: 57_671_680,
            fetch_transfer: FetchTransfer::default(),
            groups: GroupConfig::default(),
            transactions: TxnConfig::default(),
            authorizer: None,
            max_acls: 100_000,
            failed_authentication_delay: Duration::from_millis(100),
            sasl_max_receive_size: 524_288,
            accept_rolled_back_documents: false,
            authentication_failures_per_second_per_ip: Some(10),
            quota_sampling: quotas::Sampling::default(),
            controller_quota_sampling: quotas::Sampling::default(),
            telemetry: telemetry::TelemetryConfig::default(),
            tokens: tokens::TokenConfig::default(),
        }
    }
}

/// What every handler can use.
#[derive(Debug)]
pub struct Context {
    pub manager: Arc<LogManager>,
    pub config: BrokerConfig,
    /// Fetches waiting for data, woken by the produces to the partitions they read.
    pub fetch_waiters: fetch_waiters::FetchWaiters,
    pub groups: GroupCoordinator,
    pub transactions: TransactionCoordinator,
    /// Who may do what.
    pub access: authz::Access,
    /// Users' SCRAM credentials.
    pub credentials: sasl::ScramStore,
    /// Client quotas and the rates measured against them.
    pub quotas: quotas::ClientQuotas,
    /// The loggers' levels, changed at run time as Kafka's BROKER_LOGGER resource.
    pub loggers: loggers::BrokerLoggers,
    /// Broker configs changed at run time.
    pub dynamic_configs: dynamic_configs::DynamicBrokerConfigs,
    /// The finalized feature levels.
    pub features: features::Features,
    /// The share partitions served, loaded at their first share fetch.
    pub shares: share_partitions::SharePartitions,
    /// The share consumers' sessions.
    pub share_sessions: share_sessions::ShareSessions,
    /// Client-metrics subscriptions and what clients pushed.
    pub telemetry: telemetry::Telemetry,
    /// Delegation tokens.
    pub tokens: tokens::DelegationTokens,
    /// The network edge's share of `config`, taken once.
    net: ferrolog_net::NetConfig,
    /// The connection limits in force (`dynamic_configs` changes them).
    live_limits: Arc<ferrolog_net::network::live_limits::LiveLimits>,
}

impl Context {
    /// Loads the dynamic broker configs (see [`Context::with_dynamic_configs`] for the rest).
    pub fn new(
        manager: Arc<LogManager>,
        config: BrokerConfig,
    ) -> Result<Self, ferrolog_storage::StorageError> {
        let dynamic_configs = dynamic_configs::DynamicBrokerConfigs::open(
            Arc::clone(&manager),
            config.properties.0.clone(),
        )?;
        Self::with_dynamic_configs(manager, config, dynamic_configs)
    }

    /// Loads the consumer groups kept in the data dirs' offsets topic, the transactional ids'
    /// states kept in `__transaction_state`, the SCRAM credentials,
    /// and the ACLs when an authorizer is configured. `dynamic_configs` were opened before the
    /// manager's background work started, so no retention runs on the defaults they replace.
    pub fn with_dynamic_configs(
        manager: Arc<LogManager>,
        config: BrokerConfig,
        dynamic_configs: dynamic_configs::DynamicBrokerConfigs,
    ) -> Result<Self, ferrolog_storage::StorageError> {
        // The cleaner runs now: it takes its settings.
        dynamic_configs.publish_rates(true);
        let live_limits = dynamic_configs.live_limits(&config.limits, config.quota_sampling);
        // Before the transaction coordinator, whose aborts follow `transaction.version`.
        let features = features::Features::open(
            Arc::clone(&manager),
            Arc::clone(&config.transactions.transaction_version),
        )?;
        let groups = GroupCoordinator::open(Arc::clone(&manager), config.groups.clone())?;
        let transactions =
            TransactionCoordinator::open(Arc::clone(&manager), config.transactions.clone())?;
        let access = match &config.authorizer {
            Some(authorizer) => authz::Access::standard(
                Arc::clone(&manager),
                authorizer.clone(),
                config.max_acls,
                config.rollback(),
            )?,
            None => authz::Access::disabled(),
        };
        let credentials = sasl::ScramStore::open(Arc::clone(&manager), config.rollback())?;
        let quotas = quotas::ClientQuotas::open(
            Arc::clone(&manager),
            config.rollback(),
            (config.quota_sampling, config.controller_quota_sampling),
        )?;
        let telemetry =
            telemetry::Telemetry::open(Arc::clone(&manager), config.telemetry, config.rollback())?;
        let tokens = tokens::DelegationTokens::open(
            Arc::clone(&manager),
            config.tokens.clone(),
            config.rollback(),
        )?;
        Ok(Self {
            manager,
            net: config.net(),
            live_limits,
            config,
            fetch_waiters: fetch_waiters::FetchWaiters::default(),
            groups,
            transactions,
            access,
            credentials,
            quotas,
            loggers: loggers::BrokerLoggers::default(),
            dynamic_configs,
            features,
            shares: share_partitions::SharePartitions::default(),
            share_sessions: share_sessions::ShareSessions::default(),
            telemetry,
            tokens,
        })
    }
}
