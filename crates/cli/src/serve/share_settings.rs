//! The keys of share groups (`group.share.*`) and of the share coordinator
//! (`share.coordinator.*`), with Kafka 4.4's defaults and bounds.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::bail;
use ferrolog_broker::group::share::ShareGroupConfig;

use super::broker_settings::{bounded_ms, number};

pub(super) fn share_group_config(
    properties: &BTreeMap<String, String>,
) -> anyhow::Result<ShareGroupConfig> {
    let mut config = ShareGroupConfig::default();
    let b = &mut config.bounds;
    (config.session_timeout_ms, b.session) = bounded_ms(
        properties,
        "group.share.session.timeout.ms",
        ("group.share.min.session.timeout.ms", 45_000),
        ("group.share.max.session.timeout.ms", 60_000),
        45_000,
    )?;
    (config.heartbeat_interval_ms, b.heartbeat) = bounded_ms(
        properties,
        "group.share.heartbeat.interval.ms",
        ("group.share.min.heartbeat.interval.ms", 5_000),
        ("group.share.max.heartbeat.interval.ms", 15_000),
        5_000,
    )?;
    if config.heartbeat_interval_ms >= config.session_timeout_ms {
        bail!("group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms");
    }
    let interval;
    (interval, b.assignment) = bounded_ms(
        properties,
        "group.share.assignment.interval.ms",
        ("group.share.min.assignment.interval.ms", 0),
        ("group.share.max.assignment.interval.ms", 15_000),
        1_000,
    )?;
    config.assignment_interval_ms = i64::from(interval);
    (config.record_lock_duration_ms, b.lock_duration) = bounded_ms(
        properties,
        "group.share.record.lock.duration.ms",
        ("group.share.min.record.lock.duration.ms", 15_000),
        ("group.share.max.record.lock.duration.ms", 60_000),
        30_000,
    )?;
    let limit;
    (limit, b.delivery_count) = bounded_ms(
        properties,
        "group.share.delivery.count.limit",
        ("group.share.min.delivery.count.limit", 2),
        ("group.share.max.delivery.count.limit", 10),
        5,
    )?;
    config.delivery_count_limit = i16::try_from(limit)?;
    let locks;
    (locks, b.record_locks) = bounded_ms(
        properties,
        "group.share.partition.max.record.locks",
        ("group.share.min.partition.max.record.locks", 100),
        ("group.share.max.partition.max.record.locks", 4_000),
        2_000,
    )?;
    config.partition_max_record_locks = u32::try_from(locks)?;
    if let Some(n) = number::<u32>(properties, "group.share.max.size", 1)? {
        if n > 1_000 {
            bail!("invalid value {n} for group.share.max.size: must be at most 1000");
        }
        config.max_size = n;
    }
    if let Some(n) = number(properties, "group.share.max.share.sessions", 1)? {
        config.max_share_sessions = n;
    }
    config.set_in_properties = [
        "group.share.session.timeout.ms",
        "group.share.heartbeat.interval.ms",
        "group.share.assignment.interval.ms",
        "group.share.record.lock.duration.ms",
        "group.share.delivery.count.limit",
        "group.share.partition.max.record.locks",
    ]
    .into_iter()
    .filter(|key| properties.contains_key(*key))
    .map(str::to_owned)
    .collect();
    share_coordinator(properties, &mut config)?;
    Ok(config)
}

/// The share coordinator's keys.
fn share_coordinator(
    properties: &BTreeMap<String, String>,
    config: &mut ShareGroupConfig,
) -> anyhow::Result<()> {
    let state = &mut config.state;
    if let Some(n) = number(
        properties,
        "share.coordinator.state.topic.num.partitions",
        1,
    )? {
        state.partitions = n;
    }
    if let Some(n) = number(
        properties,
        "share.coordinator.state.topic.segment.bytes",
        14,
    )? {
        state.segment_bytes = n;
    }
    if let Some(n) = number::<u32>(
        properties,
        "share.coordinator.snapshot.update.records.per.snapshot",
        0,
    )? {
        if n > 500 {
            bail!(
                "invalid value {n} for share.coordinator.snapshot.update.records.per.snapshot: must be at most 500"
            );
        }
        state.updates_per_snapshot = n;
    }
    if let Some(n) = number(
        properties,
        "share.coordinator.state.topic.prune.interval.ms",
        1,
    )? {
        state.prune_interval = Duration::from_millis(n);
    }
    if let Some(n) = number(
        properties,
        "share.coordinator.cold.partition.snapshot.interval.ms",
        1,
    )? {
        state.cold_snapshot_interval = Duration::from_millis(n);
    }
    Ok(())
}
