//! Every partition directory of the Kafka-written fixture data dirs (copied to a temp dir)
//! opens, recovers from offset 0, and reads back what its SOURCE.txt describes.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::Path;
use std::sync::Arc;

use ferrolog_records::{DEFAULT_MAX_DECOMPRESSED_BYTES, EntryIter};
use ferrolog_storage::Offset;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, LoadParams, Log};
use ferrolog_storage::{LogConfig, SystemClock};
use ferrolog_testkit::{copy_to_temp, kafka_fixtures};

#[derive(Debug)]
struct ReadBack {
    offsets: Vec<i64>,
    timestamps: Vec<i64>,
    values: Vec<Option<Vec<u8>>>,
    producer_ids: Vec<i64>,
    batches: usize,
}

fn open_and_read(dir: &Path) -> ReadBack {
    let (log, report) = Log::open(
        dir,
        LogConfig::default(),
        LoadParams::default(),
        Arc::new(SystemClock),
    )
    .unwrap();
    assert_eq!(
        report.truncated_bytes(),
        0,
        "{}: nothing should be cut",
        dir.display()
    );
    let mut out = ReadBack {
        offsets: Vec::new(),
        timestamps: Vec::new(),
        values: Vec::new(),
        producer_ids: Vec::new(),
        batches: 0,
    };
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let data = log
            .read(FetchParams {
                start_offset: offset,
                max_bytes: 64 * 1024,
                bound: FetchBound::LogEnd,
                first_batch: FirstBatch::Whole,
            })
            .unwrap();
        let bytes = data.read_bytes().unwrap();
        for entry in EntryIter::new(&bytes) {
            let (_, entry) = entry.unwrap();
            entry.validate().unwrap();
            out.batches += 1;
            if let ferrolog_records::FileEntry::V2(batch) = &entry {
                out.producer_ids.push(batch.producer_id());
            }
            let records = entry.records(DEFAULT_MAX_DECOMPRESSED_BYTES).unwrap();
            for record in records.to_vec().unwrap() {
                out.offsets.push(record.offset);
                out.timestamps.push(record.timestamp);
                out.values.push(record.value.map(<[u8]>::to_vec));
            }
            offset = Offset::new(entry.next_offset());
        }
    }
    out
}

fn values(texts: &[&str]) -> Vec<Option<Vec<u8>>> {
    texts
        .iter()
        .map(|text| Some(text.as_bytes().to_vec()))
        .collect()
}

fn partition_dirs(data_dir: &Path) -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<_> = std::fs::read_dir(data_dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn kaipasubhash_unclean_zookeeper_dir_reads_back() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let copy = copy_to_temp(&fixtures.join("KAIPASUBHASH-kafka-logs"));
    let subhash = open_and_read(&copy.path().join("subhash-0"));
    assert_eq!(subhash.offsets, vec![0, 1, 2]);
    assert_eq!(subhash.values, values(&["subhash", "reddy", "kaipa"]));
    assert_eq!(subhash.timestamps.first(), Some(&1_639_563_032_052));
    assert_eq!(subhash.timestamps.last(), Some(&1_639_563_036_633));
    for (partition, expected) in [(2, 3), (26, 8), (46, 8)] {
        let read = open_and_read(&copy.path().join(format!("__consumer_offsets-{partition}")));
        assert_eq!(
            read.offsets,
            (0..expected).collect::<Vec<i64>>(),
            "__consumer_offsets-{partition}"
        );
    }
    for empty in ["TestTopic-0", "reddy-0"] {
        assert!(
            open_and_read(&copy.path().join(empty)).offsets.is_empty(),
            "{empty}"
        );
    }
    let mut total_dirs = 0;
    for dir in partition_dirs(copy.path()) {
        open_and_read(&dir);
        total_dirs += 1;
    }
    assert!(total_dirs >= 50);
}

#[test]
fn ldi_poc_kraft_dir_reads_back() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let copy = copy_to_temp(&fixtures.join("LDI-POC"));
    let patients = open_and_read(&copy.path().join("TestTopicPatient-0"));
    assert_eq!(patients.offsets, vec![0, 1, 2]);
    assert_eq!(patients.producer_ids, vec![1, 2, 3]);
    assert_eq!(patients.timestamps.first(), Some(&1_769_792_698_283));
    assert_eq!(patients.timestamps.last(), Some(&1_769_793_578_165));
    assert!(
        patients
            .values
            .iter()
            .all(|value| value.as_ref().is_some_and(|v| v.starts_with(b"{")))
    );

    let offsets = open_and_read(&copy.path().join("__consumer_offsets-6"));
    assert_eq!(offsets.offsets, (0..13).collect::<Vec<i64>>());
    assert_eq!(offsets.batches, 13);

    let metadata = open_and_read(&copy.path().join("__cluster_metadata-0"));
    assert_eq!(metadata.batches, 4814);
    assert_eq!(metadata.offsets.len(), 4929);
    assert_eq!(metadata.offsets, (0..4929).collect::<Vec<i64>>());

    for dir in partition_dirs(copy.path()) {
        open_and_read(&dir);
    }
}

#[test]
fn volodymyrzee_clean_zookeeper_dir_reads_back() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let copy = copy_to_temp(&fixtures.join("VolodymyrZee-kafka"));
    let first = open_and_read(&copy.path().join("first_topic-0"));
    assert_eq!(first.offsets, (0..11).collect::<Vec<i64>>());
    assert_eq!(first.batches, 10, "the batch at base 7 holds two records");
    assert_eq!(
        first.values,
        values(&[
            "just for fun",
            "hi hello",
            "hello new consumer ",
            "another message one",
            "yellow ",
            "zebra",
            "123",
            "hello",
            "bye",
            "from the other side",
            "because lets try",
        ])
    );
    assert_eq!(first.timestamps.first(), Some(&1_587_576_892_921));
    assert_eq!(first.timestamps.last(), Some(&1_587_581_573_101));
    assert_eq!(
        open_and_read(&copy.path().join("first_topic-1"))
            .offsets
            .len(),
        12
    );
    let third = open_and_read(&copy.path().join("first_topic-2"));
    assert_eq!((third.offsets.len(), third.batches), (18, 16));
    assert_eq!(
        open_and_read(&copy.path().join("new_topic-0")).values,
        values(&["this is test message that doesnt exist", "another message"])
    );
    let group_records: usize = [12, 17, 18, 32, 33]
        .iter()
        .map(|partition| {
            open_and_read(&copy.path().join(format!("__consumer_offsets-{partition}")))
                .offsets
                .len()
        })
        .sum();
    assert_eq!(group_records, 1025);
}

#[test]
fn kafka_gleam_metadata_log_reads_back() {
    let Some(fixtures) = kafka_fixtures() else {
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("__cluster_metadata-0");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        fixtures.join("kafka-gleam/00000000000000000000.log"),
        dir.join("00000000000000000000.log"),
    )
    .unwrap();
    let read = open_and_read(&dir);
    assert_eq!(read.batches, 2);
    assert_eq!(read.offsets, vec![0, 1, 2, 3]);
    assert_eq!(
        read.timestamps,
        vec![
            1_726_045_943_832,
            1_726_045_957_397,
            1_726_045_957_397,
            1_726_045_957_397
        ]
    );
}
