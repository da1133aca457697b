//! Opening the data directories: locks, identity (`meta.properties`), duplicates and strays.

use super::*;

#[test]
fn two_log_managers_using_the_same_dir_fail() {
    let (_temp, dirs) = temp_dirs(1);
    let first = open(&dirs);
    let error = LogManager::open(config(&dirs), Arc::new(ManualClock::new(NOW)))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("another process") && error.contains(&dirs[0].display().to_string()),
        "{error}"
    );
    first.shutdown().unwrap();
    assert!(
        !dirs[0].join(LOCK_FILE).exists(),
        "the lock file is removed at shutdown"
    );
    open(&dirs).shutdown().unwrap();
}

#[test]
fn missing_dirs_are_created_and_meta_properties_written() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    for dir in &dirs {
        assert!(dir.is_dir());
        let meta = MetaProperties::read(dir).unwrap().unwrap();
        assert_eq!(meta.cluster_id.as_deref(), Some(manager.cluster_id()));
        assert_eq!((meta.version, meta.node_id), (1, 0));
        assert!(meta.directory_id.is_some());
    }
    manager.shutdown().unwrap();
}

#[test]
fn the_same_directory_listed_twice_is_refused() {
    let (_temp, dirs) = temp_dirs(1);
    let twice = vec![dirs[0].clone(), dirs[0].join(".")];
    let error = LogManager::open(config(&twice), Arc::new(ManualClock::new(NOW)))
        .unwrap_err()
        .to_string();
    assert!(error.contains("twice"), "{error}");
}

#[test]
fn a_dir_of_another_cluster_or_node_is_refused() {
    let (_temp, dirs) = temp_dirs(2);
    open(&dirs[..1]).shutdown().unwrap();
    open(&dirs[1..]).shutdown().unwrap();
    let error = LogManager::open(config(&dirs), Arc::new(ManualClock::new(NOW)))
        .unwrap_err()
        .to_string();
    assert!(error.contains("cluster"), "{error}");

    let mut other_node = config(&dirs[..1]);
    other_node.node_id = Some(7);
    let error = LogManager::open(other_node, Arc::new(ManualClock::new(NOW)))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("node 0") && error.contains("node.id=7"),
        "{error}"
    );
}

#[test]
fn an_unknown_sub_directory_stops_startup_with_its_name() {
    let (_temp, dirs) = temp_dirs(1);
    std::fs::create_dir_all(dirs[0].join("not_a_partition")).unwrap();
    let error = LogManager::open(config(&dirs), Arc::new(ManualClock::new(NOW)))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("not_a_partition") && error.contains("topic-partition"),
        "{error}"
    );
}

#[test]
fn a_dir_whose_meta_properties_cannot_be_read_goes_offline_and_the_others_serve() {
    let (_temp, dirs) = temp_dirs(2);
    open(&dirs).shutdown().unwrap();
    // Reading it fails with an I/O error (it is a directory), as a failing disk would.
    std::fs::remove_file(dirs[1].join(META_PROPERTIES)).unwrap();
    std::fs::create_dir(dirs[1].join(META_PROPERTIES)).unwrap();
    let manager = open(&dirs);
    assert_eq!(manager.offline_dir_count(), 1);
    assert_eq!(manager.startup_report().offline_dirs, vec![dirs[1].clone()]);
    manager.get_or_create(&tp("placed", 0)).unwrap();
    assert_eq!(manager.dir_of(&tp("placed", 0)).unwrap().path(), dirs[0]);
    manager.shutdown().unwrap();
}
