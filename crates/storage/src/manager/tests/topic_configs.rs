//! Topic overrides: applied to live logs, kept across restarts, the newest copy winning.

use super::*;

#[test]
fn topic_overrides_reach_the_live_log() {
    let (_temp, dirs) = temp_dirs(1);
    let manager = open(&dirs);
    let log = manager.get_or_create(&tp("configured", 0)).unwrap();
    let overrides = BTreeMap::from([("cleanup.policy".to_owned(), "compact".to_owned())]);
    manager
        .topic_configs()
        .set("configured", overrides)
        .unwrap();
    assert!(log.config().cleanup_policy.compact);
    assert!(
        manager
            .get_or_create(&tp("configured", 1))
            .unwrap()
            .config()
            .cleanup_policy
            .compact
    );
    let bad = BTreeMap::from([("segment.bytes".to_owned(), "tiny".to_owned())]);
    assert!(manager.topic_configs().set("configured", bad).is_err());
    assert!(
        log.config().cleanup_policy.compact,
        "a rejected change changes nothing"
    );
    manager.shutdown().unwrap();
}

fn compact() -> BTreeMap<String, String> {
    BTreeMap::from([("cleanup.policy".to_owned(), "compact".to_owned())])
}

#[test]
fn topic_overrides_survive_a_restart_and_apply_as_logs_load() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    manager.get_or_create(&tp("kept", 0)).unwrap();
    manager.topic_configs().set("kept", compact()).unwrap();
    for dir in &dirs {
        assert!(
            dir.join(TOPIC_CONFIGS_FILE).exists(),
            "every online dir holds a copy"
        );
    }
    manager.shutdown().unwrap();

    let reopened = open(&dirs);
    assert_eq!(reopened.topic_configs().overrides("kept"), compact());
    let log = reopened.get(&tp("kept", 0)).unwrap();
    assert!(
        log.config().cleanup_policy.compact,
        "the loaded log has the override"
    );
    reopened.shutdown().unwrap();
}

#[test]
fn the_newest_copy_of_the_topic_configs_wins() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    manager.topic_configs().set("changing", compact()).unwrap();
    let stale = std::fs::read(dirs[1].join(TOPIC_CONFIGS_FILE)).unwrap();
    let retention = BTreeMap::from([("retention.ms".to_owned(), "1000".to_owned())]);
    manager
        .topic_configs()
        .set("changing", retention.clone())
        .unwrap();
    manager.shutdown().unwrap();
    // As if dirs[1] had been offline during the second change.
    std::fs::write(dirs[1].join(TOPIC_CONFIGS_FILE), stale).unwrap();

    let reopened = open(&dirs);
    assert_eq!(reopened.topic_configs().overrides("changing"), retention);
    reopened.shutdown().unwrap();
}

#[test]
fn forgotten_overrides_stay_forgotten() {
    let (_temp, dirs) = temp_dirs(1);
    let manager = open(&dirs);
    manager.topic_configs().set("gone", compact()).unwrap();
    manager.topic_configs().forget("gone").unwrap();
    assert!(manager.topic_configs().overrides("gone").is_empty());
    manager.shutdown().unwrap();
    let reopened = open(&dirs);
    assert!(reopened.topic_configs().overrides("gone").is_empty());
    assert!(
        !reopened
            .topic_configs()
            .config("gone")
            .cleanup_policy
            .compact
    );
    reopened.shutdown().unwrap();
}

#[test]
fn a_malformed_topic_configs_file_stops_startup_naming_file_and_line() {
    let (_temp, dirs) = temp_dirs(1);
    open(&dirs).shutdown().unwrap();
    let path = dirs[0].join(TOPIC_CONFIGS_FILE);
    std::fs::write(&path, "0\n3\n1\nno-value-here\n").unwrap();
    let error = LogManager::open(config(&dirs), Arc::new(ManualClock::new(NOW)))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(&path.display().to_string()) && error.contains("line 4"),
        "{error}"
    );
}

#[test]
fn overrides_with_line_breaks_are_refused() {
    let (_temp, dirs) = temp_dirs(1);
    let manager = open(&dirs);
    let hostile = BTreeMap::from([("cleanup.policy".to_owned(), "compact\nx y z".to_owned())]);
    assert!(manager.topic_configs().set("t", hostile).is_err());
    assert!(manager.topic_configs().overrides("t").is_empty());
    manager.shutdown().unwrap();
}

#[test]
fn new_defaults_reach_every_live_log_under_its_topics_overrides() {
    let (_temp, dirs) = temp_dirs(1);
    let manager = open(&dirs);
    let plain = manager.get_or_create(&tp("plain", 0)).unwrap();
    let kept = manager.get_or_create(&tp("kept", 0)).unwrap();
    let kept_for = BTreeMap::from([("retention.ms".to_owned(), "5000".to_owned())]);
    manager.topic_configs().set("kept", kept_for).unwrap();

    let defaults = manager
        .topic_configs()
        .defaults()
        .with([("retention.ms", "1000"), ("segment.bytes", "2097152")])
        .unwrap();
    manager.topic_configs().set_defaults(defaults);

    assert_eq!(
        plain.config().retention_age,
        Some(std::time::Duration::from_millis(1000))
    );
    assert_eq!(plain.config().segment_bytes, 2_097_152);
    // The topic's own value wins over the new default; the rest follows the defaults.
    assert_eq!(
        kept.config().retention_age,
        Some(std::time::Duration::from_millis(5000))
    );
    assert_eq!(kept.config().segment_bytes, 2_097_152);
    let later = manager.get_or_create(&tp("later", 0)).unwrap();
    assert_eq!(later.config().segment_bytes, 2_097_152, "new logs too");
    // An override checked after the change is checked over the new defaults.
    assert_eq!(
        manager.topic_configs().config("kept").segment_bytes,
        2_097_152
    );
    manager.shutdown().unwrap();
}
