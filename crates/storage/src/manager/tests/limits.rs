//! What clients can make the LogManager hold beyond its logs: directories wished for
//! partitions that do not exist are remembered for at most `ferrolog.max.partitions` of them.

use super::*;

#[test]
fn wishes_for_partitions_that_do_not_exist_are_kept_for_at_most_max_partitions() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = LogManager::open(
        ManagerConfig {
            max_partitions: 4,
            ..config(&dirs)
        },
        Arc::new(crate::SystemClock),
    )
    .unwrap();
    for partition in 0..10 {
        assert_eq!(
            manager
                .moves()
                .alter_log_dir(&tp("later", partition), &dirs[1])
                .unwrap(),
            LogDirChange::Preferred
        );
    }
    // Asked again, a kept wish stays kept.
    manager
        .moves()
        .alter_log_dir(&tp("later", 0), &dirs[1])
        .unwrap();
    for partition in 0..3 {
        manager.get_or_create(&tp("later", partition)).unwrap();
        let dir = manager.dir_of(&tp("later", partition)).unwrap();
        assert_eq!(dir.path(), dirs[1], "the first wishes were kept");
    }
    // Partition 9's wish came past the limit and was not kept: the placement policy puts it
    // in the directory with fewer partitions.
    manager.get_or_create(&tp("later", 9)).unwrap();
    assert_eq!(manager.dir_of(&tp("later", 9)).unwrap().path(), dirs[0]);
    manager.shutdown().unwrap();
}
