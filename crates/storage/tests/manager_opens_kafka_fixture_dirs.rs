//! A copy of every Kafka-written fixture data dir opens as a whole through the LogManager,
//! lists its partitions with their log start and end offsets, and recovers the uncleanly
//! stopped one (KAIPASUBHASH) without losing a record.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::Arc;

use ferrolog_storage::manager::{CLEAN_SHUTDOWN_FILE, LogManager, ManagerConfig};
use ferrolog_storage::{SystemClock, TopicPartition};
use ferrolog_testkit::{copy_to_temp, kafka_fixtures};

fn open(dir: &std::path::Path) -> LogManager {
    let config = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        recovery_threads_per_data_dir: 2,
        ..ManagerConfig::default()
    };
    LogManager::open(config, Arc::new(SystemClock)).unwrap()
}

fn offsets(manager: &LogManager, topic: &str, partition: i32) -> (i64, i64) {
    let log = manager.get(&TopicPartition::new(topic, partition)).unwrap();
    (log.log_start_offset().value(), log.log_end_offset().value())
}

#[test]
fn kaipasubhash_unclean_dir_recovers_every_record() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let copy = copy_to_temp(&fixtures.join("KAIPASUBHASH-kafka-logs"));
    assert!(!copy.path().join(CLEAN_SHUTDOWN_FILE).exists());
    let manager = open(copy.path());
    let report = manager.startup_report();
    assert!(report.logs_loaded >= 50, "{report:?}");
    assert!(
        report.segments_recovered >= 50,
        "an unclean stop recovers every log: {report:?}"
    );
    assert_eq!(offsets(&manager, "subhash", 0), (0, 3));
    assert_eq!(offsets(&manager, "__consumer_offsets", 2), (0, 3));
    assert_eq!(offsets(&manager, "__consumer_offsets", 26), (0, 8));
    assert_eq!(offsets(&manager, "__consumer_offsets", 46), (0, 8));
    assert_eq!(offsets(&manager, "TestTopic", 0), (0, 0));
    manager.shutdown().unwrap();
    assert!(copy.path().join(CLEAN_SHUTDOWN_FILE).exists());
}

#[test]
fn volodymyrzee_clean_dir_opens_and_reopens_without_recovery() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let copy = copy_to_temp(&fixtures.join("VolodymyrZee-kafka"));
    let manager = open(copy.path());
    // Kafka stopped it cleanly, but the fixture lacks the active segments' index files, and a
    // segment without its index is rebuilt whatever the marker says (as Kafka does).
    assert_eq!(
        manager.startup_report().segments_recovered,
        manager.startup_report().logs_loaded
    );
    assert_eq!(offsets(&manager, "first_topic", 0), (0, 11));
    assert_eq!(offsets(&manager, "first_topic", 1), (0, 12));
    assert_eq!(offsets(&manager, "first_topic", 2), (0, 18));
    assert_eq!(offsets(&manager, "new_topic", 0), (0, 2));
    assert_eq!(offsets(&manager, "__consumer_offsets", 18), (0, 499));
    assert_eq!(manager.node_id(), 0);
    assert_eq!(manager.cluster_id(), "lRaQCIBoRh2xRKLuP9CAQg");
    manager.shutdown().unwrap();
    drop(manager);
    let manager = open(copy.path());
    assert_eq!(
        manager.startup_report().segments_recovered,
        0,
        "after a clean shutdown with indexes"
    );
    assert_eq!(offsets(&manager, "first_topic", 2), (0, 18));
    manager.shutdown().unwrap();
}

#[test]
fn ldi_poc_kraft_dir_opens_and_skips_the_metadata_log() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let copy = copy_to_temp(&fixtures.join("LDI-POC"));
    let manager = open(copy.path());
    assert_eq!(manager.node_id(), 1);
    assert_eq!(manager.cluster_id(), "q1w2e3r4t5y6u7i8o9p0");
    assert_eq!(offsets(&manager, "TestTopicPatient", 0), (0, 3));
    assert_eq!(offsets(&manager, "__consumer_offsets", 6), (0, 13));
    assert!(
        manager
            .get(&TopicPartition::new("__cluster_metadata", 0))
            .is_none()
    );
    let listed: Vec<String> = manager
        .logs()
        .iter()
        .map(|(tp, _)| tp.to_string())
        .collect();
    assert!(
        listed.contains(&"batch2.work.notification.SHR_PROD.persistence-0".to_owned()),
        "{listed:?}"
    );
    manager.shutdown().unwrap();
}
