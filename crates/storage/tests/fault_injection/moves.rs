//! Faults while a partition moves between data directories: a swap's renames.

use super::*;

/// Two data directories `a` and `b` under `root`, and a manager's config over them.
fn two_data_dirs(root: &Path) -> (Vec<PathBuf>, ManagerConfig) {
    let dirs = vec![root.join("a"), root.join("b")];
    let config = ManagerConfig {
        log_dirs: dirs.clone(),
        ..ManagerConfig::default()
    };
    (dirs, config)
}

#[test]
fn a_swap_whose_second_rename_fails_is_undone_and_the_log_serves_on() {
    let scenario = FailScenario::setup();
    let temp = tempfile::tempdir().unwrap();
    let (dirs, config) = two_data_dirs(temp.path());
    let manager = LogManager::open(config.clone(), Arc::new(ManualClock::new(START))).unwrap();
    let log = manager.get_or_create(&tp(0)).unwrap();
    assert_eq!(manager.dir_of(&tp(0)).unwrap().path(), dirs[0]);
    let mut acknowledged = Acknowledged::default();
    acknowledged.produce_many(&log, 0, 100);
    manager.moves().alter_log_dir(&tp(0), &dirs[1]).unwrap();

    // The future log's leader-epoch checkpoint (written, by a rename, before its first copied
    // batch) and the swap's first rename (the log to `-delete`) go through; its second fails.
    fail::cfg("fs.rename", "2*off->1*return(EIO)").unwrap();
    for _ in 0..5 {
        manager.moves().move_once();
    }
    fail::remove("fs.rename");
    assert!(
        manager.data_dirs()[1].is_offline(),
        "the target directory failed"
    );
    assert!(
        !manager.moves().is_moving(&tp(0)),
        "the move is dropped with it"
    );
    assert_eq!(manager.dir_of(&tp(0)).unwrap().path(), dirs[0]);
    assert!(
        dirs[0].join("events-0").is_dir(),
        "the first rename was undone"
    );
    acknowledged.produce_many(&log, 100, 10);
    acknowledged.all_in(&log);
    manager.shutdown().unwrap();

    let manager = LogManager::open(config, Arc::new(ManualClock::new(START))).unwrap();
    acknowledged.all_in(&manager.get(&tp(0)).unwrap());
    manager.shutdown().unwrap();
    scenario.teardown();
}

#[test]
fn a_swap_finished_at_startup_keeps_the_retired_directory_until_the_copy_has_its_name() {
    let scenario = FailScenario::setup();
    let temp = tempfile::tempdir().unwrap();
    let (dirs, config) = two_data_dirs(temp.path());
    let manager = LogManager::open(config.clone(), Arc::new(ManualClock::new(START))).unwrap();
    let log = manager.get_or_create(&tp(0)).unwrap();
    let mut acknowledged = Acknowledged::default();
    acknowledged.produce_many(&log, 0, 100);
    drop(log);
    manager.shutdown().unwrap();
    // What a crash between a swap's two renames leaves: the log renamed `-delete` in its old
    // directory, its complete copy still `-future` in the new one, both of one unique id.
    let id = "00112233445566778899aabbccddeeff";
    let retired = dirs[0].join(format!("events-0.{id}-delete"));
    let copy = dirs[1].join(format!("events-0.{id}-future"));
    std::fs::rename(dirs[0].join("events-0"), &retired).unwrap();
    std::fs::create_dir(&copy).unwrap();
    for file in std::fs::read_dir(&retired).unwrap() {
        let file = file.unwrap();
        std::fs::copy(file.path(), copy.join(file.file_name())).unwrap();
    }

    // The start that would finish the swap fails at its rename of the copy.
    fail::cfg("fs.rename", "return(EIO)").unwrap();
    let failed = LogManager::open(config.clone(), Arc::new(ManualClock::new(START)));
    fail::remove("fs.rename");
    assert!(failed.is_err(), "the rename of the copy failed");
    assert!(
        retired.is_dir(),
        "the retired directory was removed before the copy took the partition's name"
    );

    let manager = LogManager::open(config, Arc::new(ManualClock::new(START))).unwrap();
    assert_eq!(manager.startup_report().moves_completed, vec![tp(0)]);
    assert_eq!(manager.dir_of(&tp(0)).unwrap().path(), dirs[1]);
    acknowledged.all_in(&manager.get(&tp(0)).unwrap());
    assert!(!retired.exists(), "removed once the copy is the log");
    manager.shutdown().unwrap();
    scenario.teardown();
}
