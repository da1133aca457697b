//! Moves beside the background work: the cleaner paused until the swap, retention going on
//! during the copy, and the throttle.

use super::*;

/// A manager over `dirs` whose logs all use `log_defaults`.
fn open_with_defaults(dirs: &[PathBuf], log_defaults: LogConfig) -> Arc<LogManager> {
    let config = ManagerConfig {
        log_defaults,
        ..config(dirs)
    };
    Arc::new(LogManager::open(config, Arc::new(ManualClock::new(NOW))).unwrap())
}

/// One batch of `count` records, keyed `key-<n % 50>`, from record `first` on.
fn keyed_batch(first: usize, count: usize) -> Vec<u8> {
    let mut builder = ferrolog_records::BatchBuilder::new(0);
    for n in first..first + count {
        let (key, value) = (format!("key-{}", n % 50), format!("value-{n:05}"));
        builder
            .append(NOW, Some(key.as_bytes()), Some(value.as_bytes()), &[])
            .unwrap();
    }
    builder.build().unwrap()
}

/// One idempotent batch of producer 7, epoch 0, ten records of 1 KiB from `sequence` on.
fn idempotent_batch(sequence: i32) -> Vec<u8> {
    let mut builder = ferrolog_records::BatchBuilder::new(0).producer(7, 0, sequence);
    for index in 0..10 {
        let value = format!("{sequence}-{index}-{}", "x".repeat(1000));
        builder
            .append(NOW, None, Some(value.as_bytes()), &[])
            .unwrap();
    }
    builder.build().unwrap()
}

fn checkpoint_in(dir: &std::path::Path, file: &str) -> BTreeMap<TopicPartition, i64> {
    read_offset_checkpoint(&dir.join(file))
        .unwrap()
        .into_iter()
        .collect()
}

#[test]
fn a_move_pauses_the_cleaner_until_its_swap_and_takes_the_cleaner_checkpoint_along() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = open_with_defaults(
        &dirs,
        LogConfig {
            cleanup_policy: crate::CleanupPolicy::COMPACT,
            segment_bytes: 16 * 1024,
            min_cleanable_dirty_ratio: 0.01,
            ..LogConfig::default()
        },
    );
    let topic_partition = tp("compacted", 0);
    let log = manager.get_or_create(&topic_partition).unwrap();
    let fill = |from: usize| {
        for first in (from..from + 400).step_by(4) {
            log.append_as_leader(keyed_batch(first, 4)).unwrap();
        }
        log.maybe_increment_high_watermark(log.log_end_offset());
        log.roll().unwrap();
    };
    fill(0);
    let cleaner = manager.new_cleaner();
    *manager.maintenance.cleaner.lock() = Some(Arc::clone(&cleaner));
    let mut map = crate::cleaner::offset_map::OffsetMap::new(1 << 20, 0.9);
    assert!(
        cleaner.clean_once(&mut map),
        "the log is cleaned before it moves"
    );
    let cleaned_before = manager.cleaner_checkpoint(&topic_partition).unwrap();

    fill(400);
    manager
        .moves()
        .alter_log_dir(&topic_partition, &dirs[1])
        .unwrap();
    assert!(
        !cleaner.clean_once(&mut map),
        "a moving partition was cleaned"
    );
    finish_moves(&manager);
    assert_eq!(manager.dir_of(&topic_partition).unwrap().path(), dirs[1]);
    assert_eq!(
        manager.cleaner_checkpoint(&topic_partition),
        Some(cleaned_before),
        "the cleaner's offset moved with the partition"
    );
    // The copy wrote what it copied in one turn into one segment, the active one now.
    log.roll().unwrap();
    assert!(
        cleaner.clean_once(&mut map),
        "cleaning resumes after the swap"
    );
    let cleaned_after = manager.cleaner_checkpoint(&topic_partition).unwrap();
    assert!(cleaned_after > cleaned_before);

    manager.jobs().checkpoint_all().unwrap();
    assert_eq!(
        checkpoint_in(&dirs[1], CLEANER_OFFSET_CHECKPOINT).get(&topic_partition),
        Some(&cleaned_after)
    );
    assert!(!checkpoint_in(&dirs[0], CLEANER_OFFSET_CHECKPOINT).contains_key(&topic_partition));
    drop(log);
    manager.shutdown().unwrap();
}

#[test]
fn retention_goes_on_during_a_move_and_the_log_start_and_producer_state_follow_it_across_a_restart()
{
    let (_temp, dirs) = temp_dirs(2);
    let defaults = LogConfig {
        segment_bytes: 256 * 1024,
        retention_bytes: Some(1024 * 1024),
        file_delete_delay: std::time::Duration::ZERO,
        ..LogConfig::default()
    };
    let manager = open_with_defaults(&dirs, defaults.clone());
    let topic_partition = tp("retained", 0);
    let log = manager.get_or_create(&topic_partition).unwrap();
    // About 3 MiB: the mover copies at most a segment (256 KiB) a turn, so the move is
    // part-way after one.
    for sequence in (0..3_000).step_by(10) {
        log.append_as_leader(idempotent_batch(sequence)).unwrap();
    }
    log.maybe_increment_high_watermark(log.log_end_offset());
    manager
        .moves()
        .alter_log_dir(&topic_partition, &dirs[1])
        .unwrap();
    manager.moves().move_once();
    assert!(
        manager.moves().is_moving(&topic_partition),
        "the copy is part-way"
    );

    manager.jobs().run_retention().unwrap();
    assert!(
        log.log_start_offset() > Offset::new(1_000),
        "retention deleted past what was copied: {:?}",
        log.log_start_offset()
    );
    // And DeleteRecords within the first segment left: the start is then above its base, which
    // only the log-start-offset checkpoint records.
    let log_start = Offset::new(log.log_start_offset().value() + 5);
    log.maybe_increment_log_start_offset(log_start).unwrap();
    let expected = all_records(&log);
    finish_moves(&manager);
    assert_eq!(manager.dir_of(&topic_partition).unwrap().path(), dirs[1]);
    assert_eq!(log.log_start_offset(), log_start);
    assert_eq!(all_records(&log), expected);
    manager.jobs().checkpoint_all().unwrap();
    assert_eq!(
        checkpoint_in(&dirs[1], LOG_START_OFFSET_CHECKPOINT).get(&topic_partition),
        Some(&log_start.value())
    );
    assert!(!checkpoint_in(&dirs[0], LOG_START_OFFSET_CHECKPOINT).contains_key(&topic_partition));
    drop(log);
    manager.shutdown().unwrap();

    let reopened = open_with_defaults(&dirs, defaults);
    let log = reopened.get(&topic_partition).unwrap();
    assert_eq!(log.log_start_offset(), log_start);
    assert_eq!(all_records(&log), expected);
    // The producer's last batch again is a duplicate (its state came with the move and was
    // kept across the restart); its next sequence is taken.
    let end = log.log_end_offset();
    let duplicate = log.append_as_leader(idempotent_batch(2_990)).unwrap();
    assert_eq!(duplicate.first_offset, Offset::new(end.value() - 10));
    assert_eq!(log.log_end_offset(), end);
    assert!(
        log.append_as_leader(idempotent_batch(3_010)).is_err(),
        "a gap"
    );
    assert_eq!(
        log.append_as_leader(idempotent_batch(3_000))
            .unwrap()
            .first_offset,
        end
    );
    drop(log);
    reopened.shutdown().unwrap();
}

#[test]
fn a_throttled_move_copies_a_seconds_worth_a_turn_and_waits_until_its_rate_is_raised() {
    let (_temp, dirs) = temp_dirs(2);
    let manager = LogManager::open(
        ManagerConfig {
            move_max_bytes_per_second: 1024.0,
            ..config(&dirs)
        },
        Arc::new(ManualClock::new(NOW)),
    )
    .unwrap();
    let topic_partition = tp("throttled", 0);
    let log = manager.get_or_create(&topic_partition).unwrap();
    // Batches of about 10 KiB: larger than a second's worth, so each turn copies one whole.
    for sequence in (0..50).step_by(10) {
        log.append_as_leader(idempotent_batch(sequence)).unwrap();
    }
    log.maybe_increment_high_watermark(log.log_end_offset());
    manager
        .moves()
        .alter_log_dir(&topic_partition, &dirs[1])
        .unwrap();
    let copied = || manager.moves().future_logs()[0].log.log_end_offset();

    let wait = manager.moves().move_once();
    assert_eq!(copied(), Offset::new(10), "one batch a turn");
    // Ten seconds' worth at 1 KiB/s was copied: the next turn copies nothing and says how
    // long to wait.
    let next_wait = manager.moves().move_once();
    assert_eq!(copied(), Offset::new(10), "copied past the rate");
    assert!(
        wait.max(next_wait) > std::time::Duration::from_secs(5),
        "{wait:?} {next_wait:?}"
    );

    // Raising the rate ends the wait reckoned at the old one: the move goes on at once.
    manager.moves().set_rate(Some(f64::MAX));
    finish_moves(&manager);
    assert_eq!(manager.dir_of(&topic_partition).unwrap().path(), dirs[1]);

    drop(log);
    manager.shutdown().unwrap();
}
