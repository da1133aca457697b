//! Moving partitions between data directories while they serve (Kafka's AlterReplicaLogDirs and
//! future logs), and what startup makes of a move it finds interrupted.

use super::*;
use crate::LogConfig;
use crate::checkpoint::CLEANER_OFFSET_CHECKPOINT;
use crate::types::{delete_dir_name, future_dir_name};

mod background;

/// Runs the mover until nothing moves any more.
fn finish_moves(manager: &LogManager) {
    for _ in 0..1000 {
        manager.moves().move_once();
        if manager.moves().future_logs().is_empty() {
            return;
        }
    }
    panic!("the moves did not finish");
}

fn subdirs(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_type().unwrap().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn all_records(log: &Log) -> Vec<u8> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let data = log
            .read(FetchParams {
                start_offset: offset,
                max_bytes: 1 << 20,
                bound: FetchBound::LogEnd,
                first_batch: FirstBatch::Whole,
            })
            .unwrap();
        let bytes = data.slice.unwrap().read_bytes().unwrap();
        let (records, _) = ferrolog_testkit::fetched_records(&bytes);
        offset = Offset::new(records.last().unwrap().offset + 1);
        out.extend_from_slice(&bytes);
    }
    out
}

#[test]
fn a_partition_moves_while_it_takes_appends_and_its_checkpoints_follow() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    let topic_partition = tp("moving", 0);
    let log = manager.get_or_create(&topic_partition).unwrap();
    assert_eq!(manager.dir_of(&topic_partition).unwrap().path(), dirs[0]);
    append(&log, 100);
    assert_eq!(
        manager
            .moves()
            .alter_log_dir(&topic_partition, &dirs[1])
            .unwrap(),
        LogDirChange::Moving
    );
    assert_eq!(
        manager
            .moves()
            .alter_log_dir(&topic_partition, &dirs[1])
            .unwrap(),
        LogDirChange::Moving,
        "asking again changes nothing"
    );
    let future_name = &subdirs(&dirs[1])[0];
    assert!(future_name.starts_with("moving-0.") && future_name.ends_with("-future"));
    manager.moves().move_once();
    append(&log, 50);
    finish_moves(&manager);

    assert_eq!(manager.dir_of(&topic_partition).unwrap().path(), dirs[1]);
    assert!(Arc::ptr_eq(&manager.get(&topic_partition).unwrap(), &log));
    assert_eq!(log.log_end_offset(), Offset::new(150));
    assert_eq!(subdirs(&dirs[1]), vec!["moving-0".to_owned()]);
    let left = subdirs(&dirs[0]);
    assert!(left.len() == 1 && left[0].ends_with("-delete"), "{left:?}");
    // Both directories' checkpoints were rewritten: the partition is only in the new one.
    log.flush().unwrap();
    manager.jobs().checkpoint_all().unwrap();
    let points =
        |dir: &PathBuf| read_offset_checkpoint(&dir.join(RECOVERY_POINT_CHECKPOINT)).unwrap();
    assert!(!points(&dirs[0]).contains_key(&topic_partition));
    assert_eq!(points(&dirs[1])[&topic_partition], 150);
    let expected = all_records(&log);
    manager.shutdown().unwrap();

    let reopened = open(&dirs);
    assert_eq!(reopened.dir_of(&topic_partition).unwrap().path(), dirs[1]);
    let log = reopened.get(&topic_partition).unwrap();
    assert_eq!(all_records(&log), expected);
    assert_eq!(
        subdirs(&dirs[0]),
        Vec::<String>::new(),
        "the old directory is gone"
    );
    reopened.shutdown().unwrap();
}

#[test]
fn asking_for_the_current_directory_cancels_a_move() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    let topic_partition = tp("t", 0);
    append(&manager.get_or_create(&topic_partition).unwrap(), 10);
    manager
        .moves()
        .alter_log_dir(&topic_partition, &dirs[1])
        .unwrap();
    assert!(manager.moves().is_moving(&topic_partition));
    assert_eq!(
        manager
            .moves()
            .alter_log_dir(&topic_partition, &dirs[0])
            .unwrap(),
        LogDirChange::AlreadyThere
    );
    assert!(!manager.moves().is_moving(&topic_partition));
    let left = subdirs(&dirs[1]);
    assert!(left.len() == 1 && left[0].ends_with("-delete"), "{left:?}");
    assert_eq!(manager.dir_of(&topic_partition).unwrap().path(), dirs[0]);
    manager.shutdown().unwrap();
}

#[test]
fn a_directory_not_in_log_dirs_or_offline_is_refused() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    let topic_partition = tp("t", 0);
    manager.get_or_create(&topic_partition).unwrap();
    for path in [
        PathBuf::from("/nowhere"),
        PathBuf::from("data-1"),
        PathBuf::from(format!("{}/", dirs[1].display())),
    ] {
        let refused = manager
            .moves()
            .alter_log_dir(&topic_partition, &path)
            .unwrap_err();
        assert!(
            matches!(refused, StorageError::UnknownLogDir { .. }),
            "{refused}"
        );
    }
    manager.data_dirs()[1]
        .health()
        .mark_offline(&StorageError::Fatal("simulated disk failure".into()));
    let refused = manager
        .moves()
        .alter_log_dir(&topic_partition, &dirs[1])
        .unwrap_err();
    assert!(
        matches!(refused, StorageError::LogDirOffline { .. }),
        "{refused}"
    );
    assert!(!manager.moves().is_moving(&topic_partition));
}

#[test]
fn a_directory_asked_for_before_the_partition_exists_is_where_it_is_created() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    let topic_partition = tp("later", 0);
    assert_eq!(
        manager
            .moves()
            .alter_log_dir(&topic_partition, &dirs[1])
            .unwrap(),
        LogDirChange::Preferred
    );
    manager.get_or_create(&topic_partition).unwrap();
    assert_eq!(manager.dir_of(&topic_partition).unwrap().path(), dirs[1]);
    // Used once: the next partition goes by the placement policy again.
    manager.get_or_create(&tp("later", 1)).unwrap();
    assert_eq!(manager.dir_of(&tp("later", 1)).unwrap().path(), dirs[0]);
    manager.shutdown().unwrap();
}

#[test]
fn new_partitions_stay_out_of_a_directory_being_drained() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    for partition in 0..3 {
        manager
            .moves()
            .alter_log_dir(&tp("t", partition), &dirs[1])
            .unwrap();
        manager.get_or_create(&tp("t", partition)).unwrap();
    }
    let moving = tp("small", 0);
    append(&manager.get_or_create(&moving).unwrap(), 10);
    assert_eq!(manager.dir_of(&moving).unwrap().path(), dirs[0]);
    // Directory 0 holds one partition, directory 1 three; one leaves directory 0 for 1.
    manager.moves().alter_log_dir(&moving, &dirs[1]).unwrap();
    manager.get_or_create(&tp("new", 0)).unwrap();
    assert_eq!(manager.dir_of(&tp("new", 0)).unwrap().path(), dirs[1]);
    finish_moves(&manager);
    manager.get_or_create(&tp("new", 1)).unwrap();
    assert_eq!(manager.dir_of(&tp("new", 1)).unwrap().path(), dirs[0]);
    manager.shutdown().unwrap();
}

#[test]
fn deleting_a_moving_partition_removes_both_logs() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    let topic_partition = tp("t", 0);
    append(&manager.get_or_create(&topic_partition).unwrap(), 10);
    manager
        .moves()
        .alter_log_dir(&topic_partition, &dirs[1])
        .unwrap();
    assert!(manager.delete(&topic_partition).unwrap());
    assert!(!manager.moves().is_moving(&topic_partition));
    for dir in &dirs {
        let left = subdirs(dir);
        assert!(left.len() == 1 && left[0].ends_with("-delete"), "{left:?}");
    }
    manager.shutdown().unwrap();
    let reopened = open(&dirs);
    assert!(reopened.get(&topic_partition).is_none());
    reopened.shutdown().unwrap();
}

#[test]
fn a_failed_target_directory_takes_only_the_future_log() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    let topic_partition = tp("t", 0);
    let log = manager.get_or_create(&topic_partition).unwrap();
    append(&log, 10);
    manager
        .moves()
        .alter_log_dir(&topic_partition, &dirs[1])
        .unwrap();
    manager.data_dirs()[1]
        .health()
        .mark_offline(&StorageError::Fatal("simulated disk failure".into()));
    manager.moves().move_once();
    assert!(!manager.moves().is_moving(&topic_partition));
    append(&log, 10);
    assert_eq!(log.log_end_offset(), Offset::new(20));
    assert_eq!(manager.dir_of(&topic_partition).unwrap().path(), dirs[0]);
}

#[test]
fn a_move_stopped_part_way_goes_on_after_a_restart() {
    for clean in [true, false] {
        let (_temp, dirs) = temp_dirs(2);
        let manager = open(&dirs);
        let topic_partition = tp("t", 0);
        let log = manager.get_or_create(&topic_partition).unwrap();
        for first in (0..3000).step_by(100) {
            log.append_as_leader(numbered_batch(first, 100, NOW))
                .unwrap();
        }
        log.maybe_increment_high_watermark(log.log_end_offset());
        manager
            .moves()
            .alter_log_dir(&topic_partition, &dirs[1])
            .unwrap();
        let future = &manager.moves().future_logs()[0];
        manager
            .get(&topic_partition)
            .unwrap()
            .copy_into(&future.log, 4096)
            .unwrap();
        let copied = future.log.log_end_offset();
        assert!(copied > Offset::ZERO && copied < Offset::new(3000));
        let expected = all_records(&log);
        if clean {
            manager.shutdown().unwrap();
        } else {
            log.flush().unwrap();
            future.log.flush().unwrap();
            manager.jobs().checkpoint_all().unwrap();
            drop(manager);
        }

        let reopened = open(&dirs);
        assert_eq!(
            reopened.startup_report().moves_resumed,
            vec![topic_partition.clone()]
        );
        assert!(reopened.moves().is_moving(&topic_partition));
        finish_moves(&reopened);
        assert_eq!(reopened.dir_of(&topic_partition).unwrap().path(), dirs[1]);
        assert_eq!(
            all_records(&reopened.get(&topic_partition).unwrap()),
            expected,
            "clean: {clean}"
        );
        reopened.shutdown().unwrap();
    }
}

#[test]
fn a_swap_stopped_between_its_renames_is_finished_at_startup() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    let topic_partition = tp("t", 0);
    let log = manager.get_or_create(&topic_partition).unwrap();
    append(&log, 10);
    let expected = all_records(&log);
    drop(log);
    manager.shutdown().unwrap();
    stop_between_swap_renames(&dirs, &topic_partition);

    let reopened = open(&dirs);
    assert_eq!(
        reopened.startup_report().moves_completed,
        vec![topic_partition.clone()]
    );
    assert_eq!(reopened.dir_of(&topic_partition).unwrap().path(), dirs[1]);
    assert_eq!(
        all_records(&reopened.get(&topic_partition).unwrap()),
        expected
    );
    assert_eq!(subdirs(&dirs[1]), vec!["t-0".to_owned()]);
    assert_eq!(subdirs(&dirs[0]), Vec::<String>::new());
    reopened.shutdown().unwrap();
}

#[test]
fn a_future_log_without_its_current_log_or_a_matching_swap_is_not_served() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    let topic_partition = tp("t", 0);
    append(&manager.get_or_create(&topic_partition).unwrap(), 10);
    manager.shutdown().unwrap();
    let future = future_dir_name(&topic_partition, "00112233445566778899aabbccddeeff");
    std::fs::rename(dirs[0].join("t-0"), dirs[1].join(&future)).unwrap();

    let reopened = open(&dirs);
    assert!(reopened.get(&topic_partition).is_none());
    assert!(!reopened.moves().is_moving(&topic_partition));
    assert_eq!(subdirs(&dirs[1]), vec![future], "left on disk as it was");
    reopened.shutdown().unwrap();
}

#[test]
fn two_future_logs_of_one_partition_stop_the_start() {
    let (_temp, dirs) = temp_dirs(3);
    let manager = open(&dirs);
    let topic_partition = tp("t", 0);
    manager.get_or_create(&topic_partition).unwrap();
    manager
        .moves()
        .alter_log_dir(&topic_partition, &dirs[1])
        .unwrap();
    manager.shutdown().unwrap();
    let future = subdirs(&dirs[1])[0].clone();
    copy_dir(
        &dirs[1].join(&future),
        &dirs[2].join(future_dir_name(&topic_partition, "ff")),
    );
    let refused = LogManager::open(config(&dirs), Arc::new(ManualClock::new(NOW))).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("a future log in two data directories"),
        "{refused}"
    );
}

/// Leaves the state a crash leaves between a swap's two renames of `topic_partition` from
/// `dirs[0]` to `dirs[1]` (the broker stopped): the log renamed `-delete` in its old directory,
/// its complete copy still `-future` in the new one, both of one unique id. Returns the
/// `-delete` directory.
fn stop_between_swap_renames(dirs: &[PathBuf], topic_partition: &TopicPartition) -> PathBuf {
    let id = "00112233445566778899aabbccddeeff";
    let retired = dirs[0].join(delete_dir_name(topic_partition, id));
    std::fs::rename(dirs[0].join(topic_partition.dir_name()), &retired).unwrap();
    copy_dir(
        &retired,
        &dirs[1].join(future_dir_name(topic_partition, id)),
    );
    retired
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn a_partition_in_two_directories_stops_the_start_and_names_both() {
    // What Kafka leaves when it stops between its swap's renames (the copy renamed to the
    // partition's name first): two logs of one partition. Neither is known to be the complete
    // one, so the start stops, as Kafka's does.
    let (_temp, dirs) = temp_dirs(2);
    let manager = open(&dirs);
    let topic_partition = tp("t", 0);
    append(&manager.get_or_create(&topic_partition).unwrap(), 10);
    manager.shutdown().unwrap();
    copy_dir(&dirs[0].join("t-0"), &dirs[1].join("t-0"));

    let error = LogManager::open(config(&dirs), Arc::new(ManualClock::new(NOW)))
        .expect_err("the start stops")
        .to_string();
    for dir in &dirs {
        assert!(error.contains(&dir.display().to_string()), "{error}");
    }
    assert!(
        dirs[0].join("t-0").is_dir() && dirs[1].join("t-0").is_dir(),
        "both left as they were"
    );
}

#[test]
fn a_swap_whose_copy_is_in_a_directory_that_fails_to_open_keeps_the_retired_log() {
    let (_temp, dirs) = temp_dirs(3);
    let manager = open(&dirs);
    let topic_partition = tp("t", 0);
    let log = manager.get_or_create(&topic_partition).unwrap();
    append(&log, 10);
    let expected = all_records(&log);
    drop(log);
    manager.shutdown().unwrap();
    let retired = stop_between_swap_renames(&dirs, &topic_partition);
    // The new directory cannot be opened at the next start.
    let away = dirs[1].with_extension("away");
    std::fs::rename(&dirs[1], &away).unwrap();
    std::fs::write(&dirs[1], b"not a directory").unwrap();

    let reopened = open(&dirs);
    assert_eq!(
        reopened.startup_report().offline_dirs,
        vec![dirs[1].clone()]
    );
    assert!(reopened.get(&topic_partition).is_none());
    assert!(
        retired.is_dir(),
        "the retired log was removed while the copy could not be read"
    );
    // Nor does any move start while it is offline, as in Kafka.
    let other = tp("other", 0);
    reopened.get_or_create(&other).unwrap();
    let elsewhere = if reopened.dir_of(&other).unwrap().path() == dirs[0] {
        &dirs[2]
    } else {
        &dirs[0]
    };
    let refused = reopened
        .moves()
        .alter_log_dir(&other, elsewhere)
        .unwrap_err();
    assert!(
        matches!(&refused, StorageError::LogDirOffline { dir } if *dir == dirs[1]),
        "{refused}"
    );
    reopened.shutdown().unwrap();

    std::fs::remove_file(&dirs[1]).unwrap();
    std::fs::rename(&away, &dirs[1]).unwrap();
    let reopened = open(&dirs);
    assert_eq!(
        reopened.startup_report().moves_completed,
        vec![topic_partition.clone()]
    );
    assert_eq!(
        all_records(&reopened.get(&topic_partition).unwrap()),
        expected
    );
    assert!(!retired.exists());
    reopened.shutdown().unwrap();
}
