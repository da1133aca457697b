//! Faults during a salvage's rewrite of a damaged segment: whichever rename fails, the
//! directory goes offline and nothing is lost; the next start finds the old segment whole
//! (the rewrite had not replaced it) or completes the rewrite (it had).

use super::*;

use ferrolog_storage::log::Salvage;

/// A log of 200 acknowledged records, one to a batch, in several segments, stopped cleanly;
/// then the 30th batch's records are damaged. Returns what is expected back after a salvage.
fn damaged_log(dir: &Path) -> Vec<(i64, String)> {
    let manager = open(dir, CleanupPolicy::DELETE);
    let log = manager.get_or_create(&tp(0)).unwrap();
    let mut acknowledged = Acknowledged::default();
    acknowledged.produce_many(&log, 0, 200);
    assert!(log.segment_count() >= 3);
    drop(log);
    manager.shutdown().unwrap();
    let segment = dir.join("events-0").join("00000000000000000000.log");
    let mut bytes = std::fs::read(&segment).unwrap();
    let mut position = 0;
    for _ in 0..30 {
        let size = i32::from_be_bytes(bytes[position + 8..position + 12].try_into().unwrap());
        position += 12 + size as usize;
    }
    // A byte of the 31st batch's value (offset 30), inside its checksum.
    bytes[position + 80] ^= 0x08;
    std::fs::write(&segment, bytes).unwrap();
    acknowledged
        .0
        .into_iter()
        .filter(|(offset, _)| *offset != 30)
        .collect()
}

fn open_salvaging(dir: &Path) -> ferrolog_storage::Result<LogManager> {
    let config = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        log_defaults: LogConfig {
            segment_bytes: 16 * 1024,
            ..LogConfig::default()
        },
        salvage: Salvage::Everything,
        ..ManagerConfig::default()
    };
    LogManager::open(config, Arc::new(ManualClock::new(START)))
}

#[test]
fn a_failed_rename_during_a_salvage_loses_nothing() {
    let scenario = FailScenario::setup();
    // The rewrite's first rename (`.cleaned` → `.swap`), then its second (`.swap` → `.log`);
    // the rename before them makes the list of what is lost durable.
    for failing in ["1*off->return(EIO)", "2*off->return(EIO)"] {
        let (_temp, dir) = data_dir();
        let expected = damaged_log(&dir);
        let damaged = std::fs::read(dir.join("events-0/00000000000000000000.log")).unwrap();
        fail::cfg("fs.rename", failing).unwrap();
        // A rename that fails is a failing disk: the only directory goes offline.
        let error = open_salvaging(&dir).unwrap_err();
        assert!(error.to_string().contains("offline"), "{failing}: {error}");
        fail::remove("fs.rename");
        let swap = dir.join("events-0/00000000000000000000.log.swap");
        assert_eq!(swap.exists(), failing.starts_with('2'), "{failing}");
        let manager = open(&dir, CleanupPolicy::DELETE);
        let log = manager.get(&tp(0)).unwrap();
        if failing.starts_with('1') {
            // Not replaced: the old segment is whole, damage and all, and a salvage now
            // completes.
            let now = std::fs::read(dir.join("events-0/00000000000000000000.log")).unwrap();
            assert_eq!(now, damaged);
            drop(log);
            manager.shutdown().unwrap();
            let manager = open_salvaging(&dir).unwrap();
            assert_eq!(records(&manager.get(&tp(0)).unwrap(), 0), expected);
            manager.shutdown().unwrap();
        } else {
            // Replaced: the next start completed the swap.
            assert_eq!(records(&log, 0), expected);
            drop(log);
            manager.shutdown().unwrap();
        }
    }
    scenario.teardown();
}
