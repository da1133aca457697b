use std::time::{Duration, Instant};

use ferrolog_storage::SystemClock;
use ferrolog_storage::manager::ManagerConfig;

use super::*;

fn open(dir: &std::path::Path, config: TelemetryConfig) -> Telemetry {
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
    Telemetry::open(manager, config, Rollback::Refuse).unwrap()
}

fn set(key: &str, value: &str) -> (String, i8, Option<String>) {
    (key.to_owned(), 0, Some(value.to_owned()))
}

fn java_client(_: Uuid) -> ClientAttributes {
    [
        String::new(),
        "app".to_owned(),
        "apache-kafka-java".to_owned(),
        "4.4.0".to_owned(),
        "127.0.0.1".to_owned(),
        "5000".to_owned(),
    ]
}

#[test]
fn subscriptions_are_kept_across_restarts_and_told_to_matching_clients() {
    let temp = tempfile::tempdir().unwrap();
    {
        let telemetry = open(temp.path(), TelemetryConfig::default());
        let changes = vec![
            set(
                "metrics",
                " org.apache.kafka.producer. , org.apache.kafka.consumer.",
            ),
            set("interval.ms", "1000"),
            set("match", "client_software_name=apache-kafka-java"),
        ];
        telemetry
            .alter("sub", Alteration::Incremental(changes), false)
            .unwrap();
        let appended = vec![(
            "metrics".to_owned(),
            2,
            Some("org.apache.kafka.admin.".to_owned()),
        )];
        telemetry
            .alter("sub", Alteration::Incremental(appended), false)
            .unwrap();
        // Validation alone changes nothing; a refusal neither.
        telemetry
            .alter(
                "other",
                Alteration::Incremental(vec![set("metrics", "x")]),
                true,
            )
            .unwrap();
        assert_eq!(
            telemetry
                .alter(
                    "sub",
                    Alteration::Incremental(vec![set("interval.ms", "5")]),
                    false
                )
                .unwrap_err()
                .0,
            errors::INVALID_REQUEST
        );
    }
    let telemetry = open(temp.path(), TelemetryConfig::default());
    assert_eq!(telemetry.names(), vec!["sub"]);
    assert_eq!(
        telemetry.values("sub")["metrics"],
        "org.apache.kafka.producer.,org.apache.kafka.consumer.,org.apache.kafka.admin."
    );
    let told = telemetry
        .get_subscriptions(Instant::now(), Uuid::nil(), java_client)
        .unwrap();
    assert_eq!(told.resolved.interval_ms, 1000);
    assert_eq!(told.resolved.metrics.len(), 3);
    // Deleting every key deletes the subscription.
    let deletes = ["metrics", "interval.ms", "match"]
        .map(|key| (key.to_owned(), 1, None))
        .to_vec();
    telemetry
        .alter("sub", Alteration::Incremental(deletes), false)
        .unwrap();
    assert!(telemetry.names().is_empty());
}

#[test]
fn subscriptions_are_bounded_in_number() {
    let temp = tempfile::tempdir().unwrap();
    let telemetry = open(
        temp.path(),
        TelemetryConfig {
            max_subscriptions: 1,
            ..TelemetryConfig::default()
        },
    );
    let one = || Alteration::Incremental(vec![set("metrics", "a.")]);
    telemetry.alter("first", one(), false).unwrap();
    let refused = telemetry.alter("second", one(), false).unwrap_err();
    assert_eq!(refused.0, errors::POLICY_VIOLATION);
    assert!(
        refused
            .1
            .contains("ferrolog.max.client.metrics.subscriptions")
    );
    // The one there may still change.
    telemetry
        .alter(
            "first",
            Alteration::Incremental(vec![set("metrics", "b.")]),
            false,
        )
        .unwrap();
}

#[test]
fn a_push_is_decompressed_read_and_shown() {
    let temp = tempfile::tempdir().unwrap();
    let telemetry = open(temp.path(), TelemetryConfig::default());
    telemetry
        .alter(
            "all",
            Alteration::Incremental(vec![set("metrics", "*")]),
            false,
        )
        .unwrap();
    let now = Instant::now();
    let told = telemetry
        .get_subscriptions(now, Uuid::nil(), java_client)
        .unwrap();
    let payload = otlp::payload::metrics_data(
        &[],
        &[(
            "org.apache.kafka.producer.record.send.total",
            true,
            &[],
            5.0,
        )],
    );
    let zstd = Compression::Zstd.compress(&payload).unwrap();
    let push = Push {
        instance: told.instance,
        subscription_id: told.subscription_id,
        terminating: false,
    };
    assert_eq!(
        telemetry.push(now, push, (4, &zstd), java_client),
        errors::NONE
    );
    let shown = telemetry.render(now + Duration::from_millis(1));
    assert!(
        shown.contains(
            "org_apache_kafka_producer_record_send_total{client_instance_id=\"\",client_id=\"app\",client_software_name=\"apache-kafka-java\",client_software_version=\"4.4.0\"} 5\n"
        ),
        "{shown}"
    );
    // Bytes that do not decompress, and a codec Kafka does not know.
    let later = now + Duration::from_secs(301);
    assert_eq!(
        telemetry.push(later, push, (1, b"not gzip"), java_client),
        errors::INVALID_RECORD
    );
    let later = later + Duration::from_secs(301);
    assert_eq!(
        telemetry.push(later, push, (9, &zstd), java_client),
        errors::UNSUPPORTED_COMPRESSION_TYPE
    );
}
