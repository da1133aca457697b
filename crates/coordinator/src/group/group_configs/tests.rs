#![allow(clippy::unwrap_used, reason = "tests")]

use super::rules::{DEFAULT_CONFIG, GROUP_CONFIG, STATIC_BROKER_CONFIG, describe, validate};
use super::*;
use ferrolog_storage::SystemClock;
use ferrolog_storage::manager::ManagerConfig;

/// The broker's consumer settings `consumer`, with the default share settings.
fn both(consumer: &ConsumerGroupConfig) -> BrokerGroupSettings<'_> {
    static SHARE: std::sync::LazyLock<ShareGroupConfig> =
        std::sync::LazyLock::new(ShareGroupConfig::default);
    BrokerGroupSettings {
        consumer,
        share: &SHARE,
    }
}

fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn kafkas_checks_and_messages_hold_for_the_whole_set() {
    let broker = ConsumerGroupConfig::default();
    let refused = |pairs: &[(&str, &str)]| validate(&values(pairs), &broker).unwrap_err();
    assert_eq!(
        refused(&[("streams.session.timeout.ms", "50000")]),
        "Unknown group config name: streams.session.timeout.ms"
    );
    assert_eq!(
        refused(&[("consumer.session.timeout.ms", "abc")]),
        "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"
    );
    assert_eq!(
        refused(&[("consumer.session.timeout.ms", "0")]),
        "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"
    );
    assert_eq!(
        refused(&[("consumer.session.timeout.ms", "30000")]),
        "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."
    );
    // The heartbeat's range is checked before the session's.
    assert_eq!(
        refused(&[
            ("consumer.session.timeout.ms", "1"),
            ("consumer.heartbeat.interval.ms", "20000")
        ]),
        "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."
    );
    assert_eq!(
        refused(&[("consumer.assignment.interval.ms", "-1")]),
        "Invalid value -1 for configuration consumer.assignment.interval.ms: Value must be at least 0"
    );
    let wide = ConsumerGroupConfig {
        bounds: rules_bounds((1, 60_000), (1, 60_000)),
        ..ConsumerGroupConfig::default()
    };
    assert_eq!(
        validate(
            &values(&[("consumer.heartbeat.interval.ms", "50000")]),
            &wide
        )
        .unwrap_err(),
        "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
    );
    validate(
        &values(&[
            ("consumer.session.timeout.ms", " 50000 "),
            ("consumer.assignment.interval.ms", "0"),
        ]),
        &broker,
    )
    .unwrap();
}

fn rules_bounds(
    session: (i32, i32),
    heartbeat: (i32, i32),
) -> crate::group::consumer::ConsumerBounds {
    crate::group::consumer::ConsumerBounds {
        session,
        heartbeat,
        assignment: (0, 15_000),
    }
}

#[test]
fn a_group_runs_with_its_values_clamped_to_the_brokers_current_bounds() {
    let broker = ConsumerGroupConfig::default();
    assert_eq!(
        consumer_timing(None, &broker),
        ConsumerTiming {
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
            assignment_interval_ms: 1_000
        }
    );
    // Stored under wider bounds, read under narrower ones.
    let own = values(&[
        ("consumer.session.timeout.ms", "90000"),
        ("consumer.heartbeat.interval.ms", "6000"),
    ]);
    let timing = consumer_timing(Some(&own), &broker);
    assert_eq!(timing.session_timeout_ms, 60_000);
    assert_eq!(timing.heartbeat_interval_ms, 6_000);
    assert_eq!(timing.assignment_interval_ms, 1_000);
}

#[test]
fn describe_names_where_each_value_comes_from() {
    let broker = ConsumerGroupConfig {
        session_timeout_ms: 50_000,
        set_in_properties: vec!["group.consumer.session.timeout.ms".into()],
        ..ConsumerGroupConfig::default()
    };
    let own = values(&[("consumer.heartbeat.interval.ms", "6000")]);
    let described = describe(Some(&own), &broker);
    let names: Vec<&str> = described.iter().map(|d| d.key.name).collect();
    assert_eq!(
        names,
        [
            "consumer.session.timeout.ms",
            "consumer.assignment.interval.ms",
            "consumer.heartbeat.interval.ms"
        ]
    );
    assert_eq!(
        (described[0].value.as_str(), described[0].source),
        ("50000", STATIC_BROKER_CONFIG)
    );
    assert_eq!(
        described[0].synonyms,
        vec![
            (
                "group.consumer.session.timeout.ms",
                "50000".to_owned(),
                STATIC_BROKER_CONFIG
            ),
            (
                "group.consumer.session.timeout.ms",
                "45000".to_owned(),
                DEFAULT_CONFIG
            ),
        ]
    );
    assert_eq!(
        (described[1].value.as_str(), described[1].source),
        ("1000", DEFAULT_CONFIG)
    );
    assert_eq!(
        (described[2].value.as_str(), described[2].source),
        ("6000", GROUP_CONFIG)
    );
    assert_eq!(described[2].synonyms.len(), 2);
}

fn open(dir: &std::path::Path) -> (Arc<LogManager>, GroupConfigs) {
    let manager = Arc::new(
        LogManager::open(
            ManagerConfig {
                log_dirs: vec![dir.to_path_buf()],
                ..ManagerConfig::default()
            },
            Arc::new(SystemClock),
        )
        .unwrap(),
    );
    let configs = GroupConfigs::open(Arc::clone(&manager)).unwrap();
    (manager, configs)
}

#[test]
fn changes_are_kept_across_restarts_for_any_group_id() {
    let temp = tempfile::tempdir().unwrap();
    let broker = ConsumerGroupConfig::default();
    let odd = "tab\there, line\nend \\ and more";
    {
        let (manager, configs) = open(temp.path());
        let set = |key: &str, value: &str| (key.to_owned(), Some(value.to_owned()));
        configs
            .alter(
                odd,
                Alteration::Incremental(vec![set("consumer.session.timeout.ms", "50000")]),
                (both(&broker), 100),
                false,
            )
            .unwrap();
        configs
            .alter(
                "plain",
                Alteration::Incremental(vec![set("consumer.heartbeat.interval.ms", "6000")]),
                (both(&broker), 100),
                false,
            )
            .unwrap();
        // validate_only stores nothing; a refused change changes nothing.
        configs
            .alter(
                "plain",
                Alteration::Incremental(vec![set("consumer.heartbeat.interval.ms", "7000")]),
                (both(&broker), 100),
                true,
            )
            .unwrap();
        let refused = configs.alter(
            "plain",
            Alteration::Incremental(vec![set("consumer.session.timeout.ms", "1")]),
            (both(&broker), 100),
            false,
        );
        assert!(matches!(refused, Err(Refusal::Invalid(_))));
        // AlterConfigs replaces the whole set: the session goes back to the broker's.
        configs
            .alter(
                odd,
                Alteration::Replace(values(&[("consumer.assignment.interval.ms", "0")])),
                (both(&broker), 100),
                false,
            )
            .unwrap();
        manager.shutdown().unwrap();
    }
    let (_manager, configs) = open(temp.path());
    assert_eq!(
        configs.values(odd).unwrap(),
        values(&[("consumer.assignment.interval.ms", "0")])
    );
    assert_eq!(
        configs.values("plain").unwrap(),
        values(&[("consumer.heartbeat.interval.ms", "6000")])
    );
    assert_eq!(
        configs
            .consumer_timing("plain", &broker)
            .heartbeat_interval_ms,
        6_000
    );
    // Deleting the last value forgets the group.
    configs
        .alter(
            "plain",
            Alteration::Incremental(vec![("consumer.heartbeat.interval.ms".into(), None)]),
            (both(&broker), 100),
            false,
        )
        .unwrap();
    assert_eq!(configs.values("plain"), None);
}

#[test]
fn a_damaged_document_stops_startup_naming_its_file_and_line() {
    let temp = tempfile::tempdir().unwrap();
    {
        let (manager, _configs) = open(temp.path());
        manager.shutdown().unwrap();
    }
    std::fs::write(
        temp.path().join(GROUP_CONFIGS_DOCUMENT),
        "0\n1\ng\tconsumer.session.timeout.ms\t50000\nno tabs here\n",
    )
    .unwrap();
    let manager = Arc::new(
        LogManager::open(
            ManagerConfig {
                log_dirs: vec![temp.path().to_path_buf()],
                ..ManagerConfig::default()
            },
            Arc::new(SystemClock),
        )
        .unwrap(),
    );
    let error = GroupConfigs::open(manager).unwrap_err().to_string();
    assert!(
        error.contains(GROUP_CONFIGS_DOCUMENT) && error.contains("line 4"),
        "{error}"
    );
}

#[test]
fn groups_with_configs_are_bounded() {
    let temp = tempfile::tempdir().unwrap();
    let broker = ConsumerGroupConfig::default();
    let (_manager, configs) = open(temp.path());
    let set = || {
        Alteration::Incremental(vec![(
            "consumer.heartbeat.interval.ms".to_owned(),
            Some("  6000 ".to_owned()),
        )])
    };
    configs
        .alter("a", set(), (both(&broker), 2), false)
        .unwrap();
    configs
        .alter("b", set(), (both(&broker), 2), false)
        .unwrap();
    assert_eq!(
        configs.values("a").unwrap()["consumer.heartbeat.interval.ms"],
        "6000"
    );
    let refused = configs
        .alter("c", set(), (both(&broker), 2), false)
        .unwrap_err();
    assert!(matches!(refused, Refusal::Limit(ref m) if m.contains("ferrolog.max.group.configs")));
    // A group that has configs may change them; one that gives them up makes room.
    configs
        .alter("a", set(), (both(&broker), 2), false)
        .unwrap();
    let delete = Alteration::Incremental(vec![("consumer.heartbeat.interval.ms".to_owned(), None)]);
    configs
        .alter("b", delete, (both(&broker), 2), false)
        .unwrap();
    configs
        .alter("c", set(), (both(&broker), 2), false)
        .unwrap();
    let long = "g".repeat(MAX_GROUP_ID_BYTES + 1);
    assert!(matches!(
        configs.alter(&long, set(), (both(&broker), 10), false),
        Err(Refusal::Limit(_))
    ));
}
