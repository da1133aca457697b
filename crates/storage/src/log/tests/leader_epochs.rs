//! The leader-epoch cache as the log keeps it (Kafka's `LeaderEpochFileCacheTest` behaviours
//! through `UnifiedLogTest` and `LogLoaderTest`): the checkpoint written as Kafka writes it,
//! epochs assigned by appends, cut by truncation and log-start moves, rebuilt by recovery.

use ferrolog_records::BatchBuilder;

use super::*;
use crate::leader_epochs::EpochEnd;
use crate::leader_epochs::file::LEADER_EPOCH_CHECKPOINT;

fn checkpoint(fixture: &Fixture) -> String {
    std::fs::read_to_string(fixture.dir().join(LEADER_EPOCH_CHECKPOINT)).unwrap()
}

fn entries(log: &Log) -> Vec<(i32, i64)> {
    log.leader_epoch_entries()
        .iter()
        .map(|entry| (entry.epoch.value(), entry.start_offset.value()))
        .collect()
}

/// A follower's batch of `count` records at `base`, written in leader epoch `epoch`.
fn epoch_batch(base: i64, epoch: i32, count: usize) -> Vec<u8> {
    let mut builder = BatchBuilder::new(base).partition_leader_epoch(epoch);
    for _ in 0..count {
        builder.append(NOW, Some(b"k"), Some(b"v"), &[]).unwrap();
    }
    builder.build().unwrap()
}

fn epochs_of_batches(log: &Log) -> Vec<i32> {
    EntryIter::new(&first_mib(log))
        .map(|entry| match entry.unwrap().1 {
            ferrolog_records::FileEntry::V2(batch) => batch.partition_leader_epoch(),
            ferrolog_records::FileEntry::Legacy(_) => -1,
        })
        .collect()
}

#[test]
fn a_new_log_leads_in_epoch_zero_from_offset_zero() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    assert!(
        !fixture.dir().join(LEADER_EPOCH_CHECKPOINT).exists(),
        "written with the first append"
    );
    append_value(&log, "a");
    assert_eq!(
        checkpoint(&fixture),
        "0\n1\n0 0\n",
        "as Kafka's leader writes it"
    );
    append_value(&log, "b");
    assert_eq!(log.leader_epoch().value(), 0);
    assert_eq!(entries(&log), [(0, 0)]);
    assert_eq!(epochs_of_batches(&log), [0, 0]);
    assert_eq!(
        log.end_offset_for_epoch(0),
        EpochEnd {
            epoch: 0,
            end_offset: 2
        }
    );
    assert_eq!(log.end_offset_for_epoch(1), EpochEnd::UNDEFINED);
}

#[test]
fn a_cleanly_reopened_log_goes_on_in_its_epoch() {
    let fixture = Fixture::new();
    {
        let log = fixture.create(LogConfig::default());
        log.append_as_follower(&epoch_batch(0, 2, 3)).unwrap();
        log.append_as_follower(&epoch_batch(3, 5, 2)).unwrap();
        log.close().unwrap();
    }
    let (log, _) = fixture.open_clean(LogConfig::default());
    assert_eq!(log.leader_epoch().value(), 5);
    append_value(&log, "c");
    assert_eq!(entries(&log), [(2, 0), (5, 3)]);
    assert_eq!(checkpoint(&fixture), "0\n2\n2 0\n5 3\n");
}

#[test]
fn a_log_reopened_after_an_unclean_stop_leads_in_a_new_epoch_from_its_end() {
    let fixture = Fixture::new();
    {
        let log = fixture.create(LogConfig::default());
        log.append_as_follower(&epoch_batch(0, 2, 3)).unwrap();
        log.append_as_follower(&epoch_batch(3, 5, 2)).unwrap();
        log.close().unwrap();
    }
    assert_eq!(checkpoint(&fixture), "0\n2\n2 0\n5 3\n");
    // Recovery may have cut it: a new epoch begins at its end.
    let (log, _) = fixture.open(LogConfig::default(), LoadParams::default());
    // Two above the latest, as a single Kafka node's restart moves it, written with the
    // first append of the new epoch, before its batch.
    assert_eq!(log.leader_epoch().value(), 7);
    assert_eq!(entries(&log), [(2, 0), (5, 3), (7, 5)]);
    assert_eq!(checkpoint(&fixture), "0\n2\n2 0\n5 3\n");
    append_value(&log, "c");
    assert_eq!(checkpoint(&fixture), "0\n3\n2 0\n5 3\n7 5\n");
    assert_eq!(epochs_of_batches(&log), [2, 5, 7]);
    assert_eq!(
        log.end_offset_for_epoch(2),
        EpochEnd {
            epoch: 2,
            end_offset: 3
        }
    );
    assert_eq!(
        log.end_offset_for_epoch(4),
        EpochEnd {
            epoch: 2,
            end_offset: 3
        }
    );
    assert_eq!(
        log.end_offset_for_epoch(5),
        EpochEnd {
            epoch: 5,
            end_offset: 5
        }
    );
    assert_eq!(
        log.end_offset_for_epoch(7),
        EpochEnd {
            epoch: 7,
            end_offset: 6
        }
    );
    assert_eq!(
        log.end_offset_for_epoch(1),
        EpochEnd {
            epoch: 1,
            end_offset: 0
        }
    );
    assert_eq!(
        log.epoch_for_offset(Offset::new(4)).map(|e| e.value()),
        Some(5)
    );
}

#[test]
fn a_start_that_wrote_nothing_leaves_the_next_start_the_same_epoch() {
    let fixture = Fixture::new();
    {
        let log = fixture.create(LogConfig::default());
        append_value(&log, "a");
        log.close().unwrap();
    }
    {
        let (log, _) = fixture.open(LogConfig::default(), LoadParams::default());
        assert_eq!(log.leader_epoch().value(), 2);
        // A crash before any append in epoch 2: its start was never written.
    }
    assert_eq!(checkpoint(&fixture), "0\n1\n0 0\n");
    let (log, _) = fixture.open(LogConfig::default(), LoadParams::default());
    assert_eq!(
        log.leader_epoch().value(),
        2,
        "no record was written in epoch 2"
    );
    append_value(&log, "b");
    assert_eq!(checkpoint(&fixture), "0\n2\n0 0\n2 1\n");
}

#[test]
fn a_log_cut_by_recovery_ends_the_epoch_read_where_it_now_ends() {
    let fixture = Fixture::new();
    {
        let log = fixture.create(LogConfig::default());
        for value in 0..10 {
            append_value(&log, &value.to_string());
        }
        // No close: a crash, which then loses the tail of the file.
    }
    let segment = fixture.dir().join("00000000000000000000.log");
    let length = std::fs::metadata(&segment).unwrap().len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap();
    file.set_len(length / 2).unwrap();
    let (log, _) = fixture.open(LogConfig::default(), LoadParams::default());
    let end = log.log_end_offset().value();
    assert!((1..10).contains(&end), "recovery cut the log at {end}");
    // A consumer that read offset 9 in epoch 0 learns the epoch ends at the cut.
    assert_eq!(
        log.end_offset_for_epoch(0),
        EpochEnd {
            epoch: 0,
            end_offset: end
        }
    );
    append_value(&log, "after");
    append_value(&log, "the cut");
    assert_eq!(
        log.end_offset_for_epoch(0),
        EpochEnd {
            epoch: 0,
            end_offset: end
        }
    );
    assert_eq!(log.end_offset_for_epoch(2).end_offset, end + 2);
}

#[test]
fn a_follower_append_adds_each_new_epoch_and_raises_the_leader_epoch() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    log.append_as_follower(&epoch_batch(0, 0, 2)).unwrap();
    log.append_as_follower(&epoch_batch(2, 3, 2)).unwrap();
    assert_eq!(entries(&log), [(0, 0), (3, 2)]);
    assert_eq!(log.leader_epoch().value(), 3);
    assert_eq!(
        checkpoint(&fixture),
        "0\n2\n0 0\n3 2\n",
        "written when the epoch was added"
    );
    append_value(&log, "leader");
    assert_eq!(epochs_of_batches(&log), [0, 3, 3]);
}

#[test]
fn truncation_cuts_the_epochs_at_and_after_it_and_writes_them() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    log.append_as_follower(&epoch_batch(0, 1, 2)).unwrap();
    log.append_as_follower(&epoch_batch(2, 2, 2)).unwrap();
    log.append_as_follower(&epoch_batch(4, 4, 2)).unwrap();
    assert!(log.truncate_to(Offset::new(2)).unwrap());
    assert_eq!(entries(&log), [(1, 0)]);
    assert_eq!(checkpoint(&fixture), "0\n1\n1 0\n");
    // The partition's epoch stays: the next append starts its entry again.
    assert_eq!(log.leader_epoch().value(), 4);
    append_value(&log, "after");
    assert_eq!(entries(&log), [(1, 0), (4, 2)]);
}

#[test]
fn a_raised_log_start_moves_the_first_epoch_up_and_close_writes_it() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    log.append_as_follower(&epoch_batch(0, 1, 2)).unwrap();
    log.append_as_follower(&epoch_batch(2, 2, 2)).unwrap();
    log.maybe_increment_high_watermark(log.log_end_offset());
    assert!(
        log.maybe_increment_log_start_offset(Offset::new(3))
            .unwrap()
    );
    assert_eq!(entries(&log), [(2, 3)]);
    // As in Kafka, the file catches up after the move, not with it.
    assert_eq!(checkpoint(&fixture), "0\n2\n1 0\n2 2\n");
    log.close().unwrap();
    assert_eq!(checkpoint(&fixture), "0\n1\n2 3\n");
}

#[test]
fn loading_cuts_a_stale_checkpoint_to_the_log() {
    let fixture = Fixture::new();
    {
        let log = fixture.create(LogConfig::default());
        log.append_as_follower(&epoch_batch(0, 1, 4)).unwrap();
        log.close().unwrap();
    }
    // A crash left entries at and past the log's end.
    std::fs::write(
        fixture.dir().join(LEADER_EPOCH_CHECKPOINT),
        "0\n3\n1 0\n3 4\n6 9\n",
    )
    .unwrap();
    let (log, _) = fixture.open_clean(LogConfig::default());
    // Cut to (1, 0); the log goes on in the highest epoch it was led in (6), from its end.
    assert_eq!(entries(&log), [(1, 0), (6, 4)]);
    assert_eq!(log.leader_epoch().value(), 6);
    log.close().unwrap();
    assert_eq!(checkpoint(&fixture), "0\n2\n1 0\n6 4\n");
}

#[test]
fn recovery_rebuilds_the_epochs_of_what_it_reads() {
    let fixture = Fixture::new();
    {
        let log = fixture.create(LogConfig::default());
        log.append_as_follower(&epoch_batch(0, 1, 2)).unwrap();
        log.append_as_follower(&epoch_batch(2, 3, 2)).unwrap();
        log.append_as_follower(&epoch_batch(4, 7, 2)).unwrap();
    }
    // The checkpoint lost its later entries; recovery from offset 0 reads them back.
    std::fs::write(fixture.dir().join(LEADER_EPOCH_CHECKPOINT), "0\n1\n1 0\n").unwrap();
    let (log, report) = fixture.open(LogConfig::default(), LoadParams::default());
    assert!(!report.recovered.is_empty());
    assert_eq!(entries(&log), [(1, 0), (3, 2), (7, 4), (9, 6)]);
    assert_eq!(log.leader_epoch().value(), 9);
    log.close().unwrap();
    assert_eq!(checkpoint(&fixture), "0\n4\n1 0\n3 2\n7 4\n9 6\n");
}

#[test]
fn a_log_without_a_checkpoint_takes_its_epochs_from_its_batches() {
    let fixture = Fixture::new();
    {
        let log = fixture.create(LogConfig::default());
        log.append_as_follower(&epoch_batch(0, 4, 3)).unwrap();
        log.close().unwrap();
    }
    std::fs::remove_file(fixture.dir().join(LEADER_EPOCH_CHECKPOINT)).unwrap();
    let (log, _) = fixture.open_clean(LogConfig::default());
    // Its first and last batches are of epoch 4: so is every batch between.
    assert_eq!(entries(&log), [(4, 0)]);
    assert_eq!(log.leader_epoch().value(), 4);
    assert_eq!(
        log.end_offset_for_epoch(4),
        EpochEnd {
            epoch: 4,
            end_offset: 3
        }
    );
}

#[test]
fn a_log_without_a_checkpoint_and_of_several_epochs_starts_at_its_end() {
    let fixture = Fixture::new();
    {
        let log = fixture.create(LogConfig::default());
        log.append_as_follower(&epoch_batch(0, 1, 2)).unwrap();
        log.append_as_follower(&epoch_batch(2, 4, 3)).unwrap();
        log.close().unwrap();
    }
    std::fs::remove_file(fixture.dir().join(LEADER_EPOCH_CHECKPOINT)).unwrap();
    let (log, _) = fixture.open_clean(LogConfig::default());
    // Where epoch 4 began is unknown: the new epoch starts at the end, and older epochs end
    // there, past any position read in them.
    assert_eq!(entries(&log), [(4, 5)]);
    assert_eq!(log.leader_epoch().value(), 4);
    assert_eq!(
        log.end_offset_for_epoch(4),
        EpochEnd {
            epoch: 4,
            end_offset: 5
        }
    );
    assert_eq!(
        log.end_offset_for_epoch(1),
        EpochEnd {
            epoch: 1,
            end_offset: 5
        }
    );
}

#[test]
fn a_malformed_checkpoint_is_replaced_and_the_log_opens() {
    let fixture = Fixture::new();
    {
        let log = fixture.create(LogConfig::default());
        log.append_as_follower(&epoch_batch(0, 2, 3)).unwrap();
        log.close().unwrap();
    }
    std::fs::write(
        fixture.dir().join(LEADER_EPOCH_CHECKPOINT),
        "0\n1\nnot an entry\n",
    )
    .unwrap();
    let (log, _) = fixture.open_clean(LogConfig::default());
    assert_eq!(entries(&log), [(2, 0)]);
    log.close().unwrap();
    assert_eq!(checkpoint(&fixture), "0\n1\n2 0\n");
}

#[test]
fn the_view_refuses_epochs_outside_the_log() {
    let fixture = Fixture::new();
    let log = fixture.create(LogConfig::default());
    append_value(&log, "a");
    let view = log.view();
    let mut past_the_end = (*view).clone();
    let mut epochs = crate::leader_epochs::LeaderEpochs::default();
    epochs.assign(crate::epoch::LeaderEpoch::new(0), Offset::new(5));
    past_the_end.leader_epochs = Arc::new(epochs);
    assert!(
        past_the_end
            .check()
            .unwrap_err()
            .contains("outside the log")
    );
    let mut above_the_leader = (*view).clone();
    let mut epochs = crate::leader_epochs::LeaderEpochs::default();
    epochs.assign(crate::epoch::LeaderEpoch::new(3), Offset::new(0));
    above_the_leader.leader_epochs = Arc::new(epochs);
    assert!(
        above_the_leader
            .check()
            .unwrap_err()
            .contains("below the cache's latest")
    );
}
