//! The broker's settings (`BrokerConfig`) from the merged properties: the group coordinator's,
//! the authorizer's and the network limits, each checked as Kafka checks it and refused naming
//! the key. The listeners are [`super::listeners`]'s.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, bail};
use ferrolog_broker::BrokerConfig;
use ferrolog_broker::group::GroupConfig;
use ferrolog_broker::group::consumer::{ConsumerGroupConfig, MigrationPolicy};
use ferrolog_broker::group::streams::StreamsGroupConfig;
use ferrolog_broker::txn::TxnConfig;

/// A whole number at least `min` under `key`, or an error naming the key and the value.
pub(super) fn number<T>(
    properties: &BTreeMap<String, String>,
    key: &str,
    min: T,
) -> anyhow::Result<Option<T>>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    let Some(value) = properties.get(key) else {
        return Ok(None);
    };
    match value.trim().parse::<T>() {
        Ok(parsed) if parsed >= min => Ok(Some(parsed)),
        _ => bail!("invalid value {value:?} for {key}: must be an integer of at least {min}"),
    }
}

/// Client telemetry's limits.
fn telemetry_config(
    properties: &BTreeMap<String, String>,
    config: &mut ferrolog_broker::telemetry::TelemetryConfig,
) -> anyhow::Result<()> {
    if let Some(bytes) = number::<i32>(properties, "telemetry.max.bytes", 1)? {
        config.limits.max_push_bytes = bytes.unsigned_abs() as usize;
    }
    if let Some(bytes) = number(properties, "ferrolog.telemetry.max.retained.bytes", 0)? {
        config.limits.max_retained_bytes = bytes;
    }
    if let Some(count) = number(properties, "ferrolog.max.client.metrics.subscriptions", 0)? {
        config.max_subscriptions = count;
    }
    Ok(())
}

/// Delegation tokens' keys, with Kafka's lower bound of 1 on each time.
fn token_config(
    properties: &BTreeMap<String, String>,
    config: &mut ferrolog_broker::tokens::TokenConfig,
) -> anyhow::Result<()> {
    config.secret_key = properties
        .get("delegation.token.secret.key")
        .filter(|key| !key.is_empty())
        .cloned();
    if let Some(ms) = number::<i64>(properties, "delegation.token.max.lifetime.ms", 1)? {
        config.lifetimes.max_lifetime_ms = ms;
    }
    if let Some(ms) = number::<i64>(properties, "delegation.token.expiry.time.ms", 1)? {
        config.lifetimes.expiry_time_ms = ms;
    }
    if let Some(ms) = number::<i64>(properties, "delegation.token.expiry.check.interval.ms", 1)? {
        config.check_interval_ms = ms;
    }
    if let Some(count) = number(properties, "ferrolog.max.delegation.tokens", 0)? {
        config.max_tokens = count;
    }
    Ok(())
}

/// The group coordinator's keys.
fn group_config(properties: &BTreeMap<String, String>) -> anyhow::Result<GroupConfig> {
    let mut config = GroupConfig::default();
    if let Some(n) = number(properties, "offsets.topic.num.partitions", 1)? {
        config.offsets_topic_partitions = n;
    }
    if let Some(n) = number(properties, "offsets.topic.segment.bytes", 14)? {
        config.offsets_topic_segment_bytes = n;
    }
    if let Some(n) = number::<u64>(properties, "offsets.retention.minutes", 1)? {
        config.offsets_retention = Duration::from_secs(n.saturating_mul(60));
    }
    if let Some(n) = number(properties, "offsets.retention.check.interval.ms", 1)? {
        config.offsets_retention_check_interval = Duration::from_millis(n);
    }
    if let Some(n) = number(properties, "offset.metadata.max.bytes", 0)? {
        config.offset_metadata_max_bytes = n;
    }
    // Session timeouts travel in JoinGroup as 32-bit milliseconds: the bounds are kept to that.
    if let Some(n) = number::<i32>(properties, "group.min.session.timeout.ms", 0)? {
        config.min_session_timeout = Duration::from_millis(n.unsigned_abs().into());
    }
    if let Some(n) = number::<i32>(properties, "group.max.session.timeout.ms", 0)? {
        config.max_session_timeout = Duration::from_millis(n.unsigned_abs().into());
    }
    if let Some(n) = number(properties, "group.initial.rebalance.delay.ms", 0)? {
        config.initial_rebalance_delay = Duration::from_millis(n);
    }
    if let Some(n) = number::<i32>(properties, "group.max.size", 1)? {
        config.max_size = n.unsigned_abs();
    }
    if let Some(n) = number(properties, "ferrolog.max.group.configs", 0)? {
        config.max_group_configs = n;
    }
    if let Some(n) = number(properties, "ferrolog.max.groups", 1)? {
        config.max_groups = n;
    }
    config.consumer = consumer_group_config(properties)?;
    config.streams = streams_group_config(properties)?;
    config.share = super::share_settings::share_group_config(properties)?;
    if config.min_session_timeout > config.max_session_timeout {
        bail!(
            "group.min.session.timeout.ms ({}) is above group.max.session.timeout.ms ({})",
            config.min_session_timeout.as_millis(),
            config.max_session_timeout.as_millis()
        );
    }
    Ok(config)
}

/// A number of milliseconds under `key` within the bounds of the keys `min_key` and `max_key`
/// (themselves set, or Kafka's defaults).
pub(super) fn bounded_ms(
    properties: &BTreeMap<String, String>,
    key: &str,
    (min_key, min): (&str, i32),
    (max_key, max): (&str, i32),
    default: i32,
) -> anyhow::Result<(i32, (i32, i32))> {
    let min = number(properties, min_key, 0)?.unwrap_or(min);
    let max = number(properties, max_key, 0)?.unwrap_or(max);
    let value = number(properties, key, 0)?.unwrap_or(default);
    if value < min || value > max {
        bail!(
            "invalid value {value} for {key}: must be between {min_key} ({min}) and {max_key} ({max})"
        );
    }
    Ok((value, (min, max)))
}

/// The keys of consumer groups of the KIP-848 protocol, with Kafka 4.4's bounds.
fn consumer_group_config(
    properties: &BTreeMap<String, String>,
) -> anyhow::Result<ConsumerGroupConfig> {
    let mut config = ConsumerGroupConfig::default();
    if let Some(protocols) = properties.get("group.coordinator.rebalance.protocols") {
        let protocols: Vec<&str> = protocols.split(',').map(str::trim).collect();
        if !protocols.contains(&"classic") {
            bail!(
                "invalid value {protocols:?} for group.coordinator.rebalance.protocols: classic must be in the list"
            );
        }
        config.enabled = protocols.contains(&"consumer");
    }
    (config.session_timeout_ms, config.bounds.session) = bounded_ms(
        properties,
        "group.consumer.session.timeout.ms",
        ("group.consumer.min.session.timeout.ms", 45_000),
        ("group.consumer.max.session.timeout.ms", 60_000),
        45_000,
    )?;
    (config.heartbeat_interval_ms, config.bounds.heartbeat) = bounded_ms(
        properties,
        "group.consumer.heartbeat.interval.ms",
        ("group.consumer.min.heartbeat.interval.ms", 5_000),
        ("group.consumer.max.heartbeat.interval.ms", 15_000),
        5_000,
    )?;
    if config.heartbeat_interval_ms >= config.session_timeout_ms {
        bail!(
            "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"
        );
    }
    let interval;
    (interval, config.bounds.assignment) = bounded_ms(
        properties,
        "group.consumer.assignment.interval.ms",
        ("group.consumer.min.assignment.interval.ms", 0),
        ("group.consumer.max.assignment.interval.ms", 15_000),
        1_000,
    )?;
    config.assignment_interval_ms = i64::from(interval);
    config.set_in_properties = [
        "group.consumer.session.timeout.ms",
        "group.consumer.heartbeat.interval.ms",
        "group.consumer.assignment.interval.ms",
    ]
    .into_iter()
    .filter(|key| properties.contains_key(*key))
    .map(str::to_owned)
    .collect();
    if let Some(policy) = properties.get("group.consumer.migration.policy") {
        config.migration = MigrationPolicy::parse(policy.trim()).ok_or_else(|| {
            anyhow::anyhow!(
                "invalid value {policy:?} for group.consumer.migration.policy: must be one of bidirectional, upgrade, downgrade, disabled"
            )
        })?;
    }
    if let Some(n) = number(properties, "group.consumer.max.size", 1)? {
        config.max_size = n;
    }
    if let Some(assignors) = properties.get("group.consumer.assignors") {
        let names: Vec<String> = assignors.split(',').map(|a| a.trim().to_owned()).collect();
        let known = ["uniform", "range"];
        if let Some(unknown) = names.iter().find(|name| !known.contains(&name.as_str())) {
            bail!(
                "invalid value {assignors:?} for group.consumer.assignors: {unknown} is not one of uniform, range (assignor classes are not loaded)"
            );
        }
        config.assignors = names;
    }
    Ok(config)
}

/// The keys of streams groups (KIP-1071), with Kafka 4.4's bounds.
fn streams_group_config(
    properties: &BTreeMap<String, String>,
) -> anyhow::Result<StreamsGroupConfig> {
    let mut config = StreamsGroupConfig::default();
    if let Some(protocols) = properties.get("group.coordinator.rebalance.protocols") {
        config.enabled = protocols.split(',').any(|p| p.trim() == "streams");
    }
    (config.session_timeout_ms, _) = bounded_ms(
        properties,
        "group.streams.session.timeout.ms",
        ("group.streams.min.session.timeout.ms", 45_000),
        ("group.streams.max.session.timeout.ms", 60_000),
        45_000,
    )?;
    (config.heartbeat_interval_ms, _) = bounded_ms(
        properties,
        "group.streams.heartbeat.interval.ms",
        ("group.streams.min.heartbeat.interval.ms", 5_000),
        ("group.streams.max.heartbeat.interval.ms", 15_000),
        5_000,
    )?;
    if config.heartbeat_interval_ms >= config.session_timeout_ms {
        bail!(
            "group.streams.heartbeat.interval.ms must be less than group.streams.session.timeout.ms"
        );
    }
    let (interval, _) = bounded_ms(
        properties,
        "group.streams.assignment.interval.ms",
        ("group.streams.min.assignment.interval.ms", 0),
        ("group.streams.max.assignment.interval.ms", 15_000),
        1_000,
    )?;
    config.assignment_interval_ms = i64::from(interval);
    if let Some(n) = number(properties, "group.streams.max.size", 1)? {
        config.max_size = n;
    }
    let max_standbys: u32 =
        number(properties, "group.streams.max.standby.replicas", 0)?.unwrap_or(2);
    if let Some(n) = number::<u32>(properties, "group.streams.num.standby.replicas", 0)? {
        if n > max_standbys {
            bail!(
                "invalid value {n} for group.streams.num.standby.replicas: must be at most group.streams.max.standby.replicas ({max_standbys})"
            );
        }
        config.num_standby_replicas = n;
    }
    if let Some(n) = number::<i64>(properties, "group.streams.initial.rebalance.delay.ms", 0)? {
        config.initial_rebalance_delay_ms = n;
    }
    if let Some(assignors) = properties.get("group.streams.assignors")
        && assignors.split(',').any(|a| a.trim() != "sticky")
    {
        bail!(
            "invalid value {assignors:?} for group.streams.assignors: only sticky is served (assignor classes are not loaded)"
        );
    }
    Ok(config)
}

/// The transaction coordinator's keys.
fn transaction_config(properties: &BTreeMap<String, String>) -> anyhow::Result<TxnConfig> {
    let mut config = TxnConfig::default();
    if let Some(n) = number(properties, "transaction.state.log.num.partitions", 1)? {
        config.state_log_partitions = n;
    }
    if let Some(n) = number(properties, "transaction.state.log.segment.bytes", 14)? {
        config.state_log_segment_bytes = n;
    }
    // Transaction timeouts travel in InitProducerId as 32-bit milliseconds.
    if let Some(n) = number::<i32>(properties, "transaction.max.timeout.ms", 1)? {
        config.max_timeout = Duration::from_millis(n.unsigned_abs().into());
    }
    if let Some(n) = number(properties, "transactional.id.expiration.ms", 1)? {
        config.id_expiration = Duration::from_millis(n);
    }
    if let Some(n) = number(
        properties,
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        1,
    )? {
        config.abort_timed_out_interval = Duration::from_millis(n);
    }
    if let Some(n) = number(
        properties,
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        1,
    )? {
        config.remove_expired_interval = Duration::from_millis(n);
    }
    if let Some(n) = number(properties, "ferrolog.max.transactional.ids", 1)? {
        config.max_transactional_ids = n;
    }
    Ok(config)
}

/// The broker's settings, parsed from the merged properties (the listeners are
/// [`listeners::plan`]'s).
pub(super) fn broker_config(properties: &BTreeMap<String, String>) -> anyhow::Result<BrokerConfig> {
    let mut config = BrokerConfig {
        properties: ferrolog_broker::Settings(properties.clone()),
        ..BrokerConfig::default()
    };
    if let Some(value) = properties.get("num.partitions") {
        config.num_partitions = value.trim().parse().ok().filter(|n| *n >= 1).with_context(
            || {
                format!(
                    "invalid value {value:?} for num.partitions: must be an integer of at least 1"
                )
            },
        )?;
    }
    if let Some(value) = properties.get("auto.create.topics.enable") {
        config.auto_create_topics = value.trim().parse().with_context(|| {
            format!("invalid value {value:?} for auto.create.topics.enable: expected true or false")
        })?;
    }
    if let Some(value) = properties.get("socket.request.max.bytes") {
        config.socket_request_max_bytes = value
            .trim()
            .parse()
            .ok()
            .filter(|n| *n >= 1)
            .with_context(|| format!("invalid value {value:?} for socket.request.max.bytes: must be a positive integer"))?;
    }
    network_limits(properties, &mut config)?;
    // Read when a listener's certificate is replaced at run time; a typo must not mean false.
    for key in ["ssl.allow.dn.changes", "ssl.allow.san.changes"] {
        if let Some(value) = properties.get(key) {
            let value = value.trim();
            if !value.eq_ignore_ascii_case("true") && !value.eq_ignore_ascii_case("false") {
                bail!("invalid value {value:?} for {key}: expected true or false");
            }
        }
    }
    if let Some(value) = properties.get("ferrolog.fetch.transfer") {
        config.fetch_transfer = value.trim().parse().map_err(|error| {
            anyhow::anyhow!("invalid value {value:?} for ferrolog.fetch.transfer: {error}")
        })?;
    }
    config.groups = group_config(properties)?;
    config.transactions = transaction_config(properties)?;
    if let Some(level) = number::<i16>(properties, "ferrolog.transaction.version", 0)? {
        if level > ferrolog_broker::handlers::api_versions::MAX_TRANSACTION_VERSION {
            bail!("invalid value {level} for ferrolog.transaction.version: must be 0, 1 or 2");
        }
        config
            .transactions
            .transaction_version
            .store(level, std::sync::atomic::Ordering::Release);
    }
    config.authorizer = authorizer_config(properties)?;
    if let Some(max) = number::<usize>(properties, "ferrolog.max.acls", 1)? {
        config.max_acls = max;
    }
    telemetry_config(properties, &mut config.telemetry)?;
    token_config(properties, &mut config.tokens)?;
    if let Some(millis) = number::<u64>(properties, "connection.failed.authentication.delay.ms", 0)?
    {
        config.failed_authentication_delay = Duration::from_millis(millis);
    }
    if let Some(bytes) = number::<usize>(properties, "sasl.server.max.receive.size", 1)? {
        config.sasl_max_receive_size = bytes;
    }
    if let Some(rate) = number::<u32>(
        properties,
        "ferrolog.authentication.failures.per.second.per.ip",
        0,
    )? {
        config.authentication_failures_per_second_per_ip = (rate > 0).then_some(rate);
    }
    if let Some(samples) = number::<usize>(properties, "quota.window.num", 1)? {
        config.quota_sampling.samples = samples;
    }
    if let Some(seconds) = number::<i64>(properties, "quota.window.size.seconds", 1)? {
        config.quota_sampling.window_ms = seconds.saturating_mul(1_000);
    }
    if let Some(samples) = number::<usize>(properties, "controller.quota.window.num", 1)? {
        config.controller_quota_sampling.samples = samples;
    }
    if let Some(seconds) = number::<i64>(properties, "controller.quota.window.size.seconds", 1)? {
        config.controller_quota_sampling.window_ms = seconds.saturating_mul(1_000);
    }
    if let Some(value) = properties.get("ferrolog.accept.rolled.back.documents") {
        config.accept_rolled_back_documents = value.trim().parse().with_context(|| {
            format!(
                "invalid value {value:?} for ferrolog.accept.rolled.back.documents: expected true or false"
            )
        })?;
    }
    Ok(config)
}

/// `authorizer.class.name`: empty (Kafka's default, no authorization) or Kafka's
/// `StandardAuthorizer`, with `super.users` and `allow.everyone.if.no.acl.found`, which are
/// refused without it rather than silently doing nothing.
fn authorizer_config(
    properties: &BTreeMap<String, String>,
) -> anyhow::Result<Option<ferrolog_broker::authz::AuthorizerConfig>> {
    let class = properties
        .get("authorizer.class.name")
        .map_or("", |value| value.trim());
    let super_users = properties.get("super.users").map(String::as_str);
    let allow_everyone = properties
        .get("allow.everyone.if.no.acl.found")
        .map(String::as_str);
    match class {
        "" => {
            if let Some(key) = ["super.users", "allow.everyone.if.no.acl.found"]
                .into_iter()
                .find(|key| properties.contains_key(*key))
            {
                bail!(
                    "{key} is set but authorizer.class.name is not: set authorizer.class.name={} to authorize requests",
                    ferrolog_broker::authz::STANDARD_AUTHORIZER
                );
            }
            Ok(None)
        }
        ferrolog_broker::authz::STANDARD_AUTHORIZER => {
            ferrolog_broker::authz::AuthorizerConfig::parse(super_users, allow_everyone)
                .map(Some)
                .map_err(|reason| anyhow::anyhow!("invalid authorizer settings: {reason}"))
        }
        other => bail!(
            "invalid value {other:?} for authorizer.class.name: ferrolog implements {} (or leave it empty for no authorization)",
            ferrolog_broker::authz::STANDARD_AUTHORIZER
        ),
    }
}

/// The limits on what clients can make the broker hold: connections, request memory, fetch
/// size, idle time. Checked as Kafka checks them.
fn network_limits(
    properties: &BTreeMap<String, String>,
    config: &mut BrokerConfig,
) -> anyhow::Result<()> {
    config.limits = ferrolog_broker::network::limits::ConnectionLimits::from_properties(
        &config.limits,
        properties,
    )
    .map_err(anyhow::Error::msg)?;
    if let Some(value) = properties.get("connections.max.idle.ms") {
        config.connections_max_idle = optional_millis(value, "connections.max.idle.ms")?;
    }
    if let Some(value) = properties.get("ferrolog.request.arrival.timeout.ms") {
        config.request_arrival_timeout =
            optional_millis(value, "ferrolog.request.arrival.timeout.ms")?;
    }
    if let Some(value) = properties.get("ferrolog.connection.setup.timeout.ms") {
        config.connection_setup_timeout =
            optional_millis(value, "ferrolog.connection.setup.timeout.ms")?;
    }
    if let Some(value) = properties.get("queued.max.request.bytes") {
        let bytes: i64 = value.trim().parse().with_context(|| {
            format!("invalid value {value:?} for queued.max.request.bytes: expected bytes")
        })?;
        // Kafka: zero or less means unlimited.
        config.queued_max_request_bytes = (bytes > 0).then_some(bytes as u64);
    }
    if let Some(pool) = config.queued_max_request_bytes
        && pool < config.socket_request_max_bytes as u64
    {
        bail!(
            "queued.max.request.bytes ({pool}) must be at least socket.request.max.bytes ({})",
            config.socket_request_max_bytes
        );
    }
    if let Some(bytes) = number::<i32>(properties, "fetch.max.bytes", 1024)? {
        config.fetch_max_bytes = bytes;
    }
    Ok(())
}

/// A time limit in milliseconds under `key`: positive, or negative for none (Kafka's reading
/// of `connections.max.idle.ms`). Zero would close every connection at once.
fn optional_millis(value: &str, key: &str) -> anyhow::Result<Option<Duration>> {
    let millis: i64 = value
        .trim()
        .parse()
        .with_context(|| format!("invalid value {value:?} for {key}: expected milliseconds"))?;
    if millis == 0 {
        bail!(
            "{key}=0 would close every connection at once: give a positive number of milliseconds, or -1 for no limit"
        );
    }
    Ok((millis >= 0).then(|| Duration::from_millis(millis as u64)))
}

/// The broker configs changed at run time, in force, the TLS listeners' stores included.
pub(super) fn open_dynamic_configs(
    manager: &std::sync::Arc<ferrolog_storage::manager::LogManager>,
    broker_config: &ferrolog_broker::BrokerConfig,
    planned: &[super::listeners::PlannedListener],
) -> anyhow::Result<ferrolog_broker::dynamic_configs::DynamicBrokerConfigs> {
    let dynamic_configs = ferrolog_broker::dynamic_configs::DynamicBrokerConfigs::open(
        std::sync::Arc::clone(manager),
        broker_config.properties.0.clone(),
    )
    .context("loading the dynamic broker configs")?;
    dynamic_configs.install_tls_listeners(super::tls::changeable_listeners(planned));
    Ok(dynamic_configs)
}
