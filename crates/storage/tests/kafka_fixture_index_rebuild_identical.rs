//! The offset and time indexes ferrolog rebuilds for `LDI-POC/__consumer_offsets-6` are
//! byte-identical to the ones Kafka wrote.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;

use ferrolog_storage::Offset;
use ferrolog_storage::log::{LoadParams, Log};
use ferrolog_storage::{LogConfig, SystemClock};
use ferrolog_testkit::{copy_to_temp, kafka_fixtures};

#[test]
fn rebuilt_indexes_of_a_kafka_segment_are_byte_identical() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let original = fixtures.join("LDI-POC/__consumer_offsets-6");
    let copy = copy_to_temp(&original);
    let dir = copy.path().join("__consumer_offsets-6");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(copy.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::rename(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
    }
    for name in [
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
    ] {
        std::fs::remove_file(dir.join(name)).unwrap();
    }
    let (log, report) = Log::open(
        &dir,
        LogConfig::default(),
        LoadParams::default(),
        Arc::new(SystemClock),
    )
    .unwrap();
    assert_eq!(report.recovered.len(), 1);
    assert_eq!(log.log_end_offset(), Offset::new(13));
    log.close().unwrap();
    drop(log);
    for name in [
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
    ] {
        let kafka = std::fs::read(original.join(name)).unwrap();
        let ours = std::fs::read(dir.join(name)).unwrap();
        assert_eq!(ours, kafka, "{name}");
    }
}
