//! Faults during the background work: retention's and compaction's renames, and a cleaning pass that panics.

use super::*;

/// A compacted log of 400 acknowledged records over 50 keys (so a pass has superseded records
/// to remove), rolled so that all of it is cleanable.
fn compacted_log(dir: &Path) -> (Arc<LogManager>, Arc<Log>, Acknowledged) {
    let manager = open(dir, CleanupPolicy::COMPACT);
    let log = manager.get_or_create(&tp(0)).unwrap();
    let mut acknowledged = Acknowledged::default();
    acknowledged.produce_many(&log, 0, 400);
    log.roll().unwrap();
    (manager, log, acknowledged)
}

#[test]
fn a_failed_rename_during_retention_or_compaction_loses_nothing() {
    let scenario = FailScenario::setup();
    let (_temp, dir) = data_dir();
    let (manager, log, acknowledged) = compacted_log(&dir);

    // The cleaner's swap: `.cleaned` → `.swap` fails.
    fail::cfg("fs.rename", "return(EIO)").unwrap();
    let cleaner = manager.new_cleaner();
    cleaner.clean_once(&mut OffsetMap::new(1 << 20, 0.9));
    assert!(offline(&manager), "a rename that fails is a failing disk");
    fail::remove("fs.rename");
    drop(log);
    drop(cleaner);
    manager.shutdown().unwrap();
    let manager = reopen_after_crash(&dir, CleanupPolicy::COMPACT);
    let log = manager.get(&tp(0)).unwrap();
    acknowledged.all_in(&log);

    // Retention renaming the segments below a raised log start to `.deleted`.
    let new_start = acknowledged.0[200].0;
    log.maybe_increment_log_start_offset(Offset::new(new_start))
        .unwrap();
    fail::cfg("fs.rename", "return(EIO)").unwrap();
    assert!(matches!(
        log.delete_old_segments().unwrap_err(),
        StorageError::Io { .. }
    ));
    assert!(offline(&manager));
    fail::remove("fs.rename");
    drop(log);
    manager.shutdown().unwrap();
    let manager = reopen_after_crash(&dir, CleanupPolicy::COMPACT);
    let log = manager.get(&tp(0)).unwrap();
    let kept: Vec<_> = acknowledged
        .0
        .iter()
        .filter(|(offset, _)| *offset >= log.log_start_offset().value())
        .cloned()
        .collect();
    assert!(log.log_start_offset() <= Offset::new(new_start));
    assert_eq!(records(&log, 0), kept);
    scenario.teardown();
}

#[test]
fn a_cleaning_pass_that_panics_marks_its_partition_uncleanable_and_holds_up_nothing() {
    let scenario = FailScenario::setup();
    let (_temp, dir) = data_dir();
    let (manager, log, acknowledged) = compacted_log(&dir);

    // The pass panics while it writes the cleaned segment.
    fail::cfg("log.write", "panic(injected)").unwrap();
    let cleaner = manager.new_cleaner();
    assert!(
        cleaner.clean_once(&mut OffsetMap::new(1 << 20, 0.9)),
        "a pass ran"
    );
    fail::remove("log.write");
    assert_eq!(cleaner.uncleanable_partitions(), vec![tp(0)]);
    // Nothing waits for the dead pass: pausing (as a deletion or truncation does) returns.
    cleaner.abort_and_pause(&tp(0));
    cleaner.resume(&tp(0));
    assert!(
        !cleaner.clean_once(&mut OffsetMap::new(1 << 20, 0.9)),
        "the uncleanable partition is skipped"
    );
    assert!(!offline(&manager));
    // Groups of segments swapped before the panic were compacted (records of a key superseded
    // later are gone); nothing else changed: every record left is one acknowledged at its
    // offset, and every key's latest value (the last 50 records) is there.
    let stored = records(&log, 0);
    for record in &stored {
        assert!(
            acknowledged.0.contains(record),
            "{record:?} was not acknowledged"
        );
    }
    for latest in &acknowledged.0[350..] {
        assert!(stored.contains(latest), "{latest:?} is gone");
    }
    drop(log);
    manager.delete(&tp(0)).unwrap();
    scenario.teardown();
}
