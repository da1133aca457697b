//! Dynamic broker configs through the broker itself: a change of a topic default reaches the
//! live logs under their topics' overrides and is kept across a restart; a validation-only
//! change, a refused one, and a legacy AlterConfigs replacement change what they should; the
//! cleaner's threads change within Kafka's bounds and keep their number at the next start.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::Broker;
use ferrolog_broker::dynamic_configs::{Change, DynamicBrokerConfigs, Scope};
use ferrolog_broker::{BrokerConfig, Context};
use ferrolog_storage::manager::LogManager;
use ferrolog_storage::{SystemClock, TopicPartition};

fn set(key: &str, value: &str) -> Change {
    Change::Set(key.to_owned(), value.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_defaults_changed_at_run_time_reach_live_logs_and_survive_a_restart() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let manager = &broker.context.manager;
    let plain = manager
        .get_or_create(&TopicPartition::new("plain", 0))
        .unwrap();
    let own = BTreeMap::from([("retention.ms".to_owned(), "5000".to_owned())]);
    manager.topic_configs().set("own", own).unwrap();
    let kept = manager
        .get_or_create(&TopicPartition::new("own", 0))
        .unwrap();
    let configs = &broker.context.dynamic_configs;

    // Checked only: nothing changes.
    configs
        .apply(
            Scope::ClusterDefault,
            &[set("log.retention.ms", "1000")],
            true,
        )
        .unwrap();
    assert_eq!(
        plain.config().retention_age,
        Some(Duration::from_secs(7 * 24 * 3600))
    );
    assert!(configs.values().default.is_empty());

    configs
        .apply(
            Scope::ClusterDefault,
            &[set("log.retention.ms", "1000")],
            false,
        )
        .unwrap();
    configs
        .apply(
            Scope::Broker,
            &[set("log.cleanup.policy", "compact")],
            false,
        )
        .unwrap();
    assert_eq!(
        plain.config().retention_age,
        Some(Duration::from_millis(1000))
    );
    assert!(plain.config().cleanup_policy.compact);
    assert_eq!(
        kept.config().retention_age,
        Some(Duration::from_millis(5000)),
        "the topic's own wins"
    );
    assert!(kept.config().cleanup_policy.compact);

    // Refused whole: the valid change beside the invalid one is not made.
    let refused = configs
        .apply(
            Scope::ClusterDefault,
            &[
                set("log.segment.bytes", "2097152"),
                set("log.segment.bytes", "1"),
            ],
            false,
        )
        .unwrap_err();
    assert!(
        refused.message.contains("log.segment.bytes"),
        "{}",
        refused.message
    );
    assert_eq!(plain.config().segment_bytes, 1 << 30);

    // The legacy AlterConfigs replaces the scope's values.
    configs
        .replace(
            Scope::ClusterDefault,
            &BTreeMap::from([("log.segment.bytes".to_owned(), "2097152".to_owned())]),
            false,
        )
        .unwrap();
    assert_eq!(plain.config().segment_bytes, 2_097_152);
    assert_eq!(
        plain.config().retention_age,
        Some(Duration::from_secs(7 * 24 * 3600)),
        "retention.ms went"
    );
    drop(broker);

    let broker = Broker::start(temp.path()).await;
    let plain = broker
        .context
        .manager
        .get(&TopicPartition::new("plain", 0))
        .unwrap();
    assert_eq!(
        plain.config().segment_bytes,
        2_097_152,
        "kept across a restart"
    );
    assert!(plain.config().cleanup_policy.compact);
    let values = broker.context.dynamic_configs.values();
    assert_eq!(
        values.broker.get("log.cleanup.policy").map(String::as_str),
        Some("compact")
    );
    assert_eq!(values.default.len(), 1);
}

/// Opens a broker's storage and configs in the order `ferrolog serve` does: the dynamic
/// configs, then the background work (the cleaner), then the rest.
fn open_as_served(dir: &std::path::Path) -> Arc<ferrolog_broker::Context> {
    let config = ferrolog_storage::manager::ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        ..ferrolog_storage::manager::ManagerConfig::default()
    };
    let manager = Arc::new(LogManager::open(config, Arc::new(SystemClock)).unwrap());
    let dynamic = DynamicBrokerConfigs::open(Arc::clone(&manager), BTreeMap::new()).unwrap();
    manager.start_background().unwrap();
    let context = Context::with_dynamic_configs(manager, BrokerConfig::default(), dynamic);
    Arc::new(context.unwrap())
}

#[test]
fn cleaner_threads_change_at_run_time_within_kafkas_bounds_and_hold_at_restart() {
    let temp = tempfile::tempdir().unwrap();
    let context = open_as_served(temp.path());
    let cleaner = context.manager.cleaner().unwrap();
    assert_eq!(cleaner.running_threads(), 1);
    let configs = &context.dynamic_configs;
    let refused = configs
        .apply(Scope::Broker, &[set("log.cleaner.threads", "3")], false)
        .unwrap_err();
    assert_eq!(
        refused.message,
        "Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads cannot be increased to more than double the current value 1 for configuration Invalid dynamic configuration"
    );
    let refusals = [
        (
            "log.cleaner.threads",
            "-1",
            "Invalid value -1 for configuration log.cleaner.threads: Value must be at least 0",
        ),
        (
            "log.cleaner.backoff.ms",
            "-1",
            "Invalid value -1 for configuration log.cleaner.backoff.ms: Value must be at least 0",
        ),
        (
            "log.cleaner.dedupe.buffer.size",
            "1048576",
            "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.",
        ),
    ];
    for (key, value, message) in refusals {
        let refused = configs
            .apply(Scope::Broker, &[set(key, value)], false)
            .unwrap_err();
        assert_eq!(refused.message, message);
    }
    assert_eq!(cleaner.running_threads(), 1, "nothing changed");
    configs
        .apply(
            Scope::ClusterDefault,
            &[
                set("log.cleaner.threads", "2"),
                set("log.cleaner.dedupe.buffer.size", "8388608"),
            ],
            false,
        )
        .unwrap();
    assert_eq!(cleaner.running_threads(), 2);
    assert_eq!(cleaner.config().dedupe_buffer_bytes, 8 << 20);
    // Checked against the threads now running: four is double two.
    configs
        .apply(Scope::Broker, &[set("log.cleaner.threads", "4")], true)
        .unwrap();
    assert_eq!(cleaner.running_threads(), 2, "validation only");
    context.manager.shutdown().unwrap();
    drop(context);

    let context = open_as_served(temp.path());
    let cleaner = context.manager.cleaner().unwrap();
    assert_eq!(
        cleaner.running_threads(),
        2,
        "the kept value, at the next start"
    );
    assert_eq!(cleaner.config().dedupe_buffer_bytes, 8 << 20);
    context.manager.shutdown().unwrap();
}
