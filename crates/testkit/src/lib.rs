//! Helpers shared by ferrolog's tests and benches. Not part of the product.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::path::{Path, PathBuf};

use ferrolog_records::{BatchBuilder, Compression};

/// One record to put in a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRecord {
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
}

impl TestRecord {
    pub fn new(timestamp: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Self {
        Self {
            timestamp,
            key: key.map(<[u8]>::to_vec),
            value: value.map(<[u8]>::to_vec),
        }
    }
}

/// A producer-style batch (base offset 0) of `records`.
pub fn batch(records: &[TestRecord]) -> Vec<u8> {
    batch_at(0, Compression::None, records)
}

/// A batch at `base_offset` with `compression`.
pub fn batch_at(base_offset: i64, compression: Compression, records: &[TestRecord]) -> Vec<u8> {
    let mut builder = BatchBuilder::new(base_offset).compression(compression);
    for record in records {
        builder
            .append(
                record.timestamp,
                record.key.as_deref(),
                record.value.as_deref(),
                &[],
            )
            .unwrap();
    }
    builder.build().unwrap()
}

/// A batch of `count` records with values `value-<i>` and keys `key-<i>`, all at `timestamp`.
pub fn numbered_batch(first: usize, count: usize, timestamp: i64) -> Vec<u8> {
    let records: Vec<TestRecord> = (first..first + count)
        .map(|i| {
            TestRecord::new(
                timestamp,
                Some(format!("key-{i}").as_bytes()),
                Some(format!("value-{i}").as_bytes()),
            )
        })
        .collect();
    batch(&records)
}

/// A batch holding one record of `value_len` bytes.
pub fn sized_batch(value_len: usize, timestamp: i64) -> Vec<u8> {
    let value = vec![b'x'; value_len];
    batch(&[TestRecord::new(timestamp, Some(b"k"), Some(&value))])
}

/// Where the Kafka fixture data directories are: `$FERROLOG_FIXTURES`, else
/// `../shared/fixtures/kafka` beside the repository. `None` (after printing that the test is
/// skipped) when they are not there, as in a fresh clone without the shared folder; under CI
/// (`CI` set), where they are always there, their absence fails the test instead.
pub fn kafka_fixtures() -> Option<PathBuf> {
    let dir = std::env::var_os("FERROLOG_FIXTURES").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/kafka"),
        PathBuf::from,
    );
    if dir.is_dir() {
        Some(dir)
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs beside ../shared: the Kafka fixtures must be at {}",
            dir.display()
        );
        eprintln!(
            "skipped: Kafka fixtures not found at {} (set FERROLOG_FIXTURES)",
            dir.display()
        );
        None
    }
}

/// Copies `src` recursively into a new temp dir and returns it (fixtures are read-only and
/// must never be modified in place).
pub fn copy_to_temp(src: &Path) -> tempfile::TempDir {
    let temp = tempfile::tempdir().unwrap();
    copy_dir(src, temp.path());
    temp
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let target = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            let mut permissions = std::fs::metadata(&target).unwrap().permissions();
            #[allow(
                clippy::permissions_set_readonly_false,
                reason = "copies of read-only fixtures must be writable"
            )]
            permissions.set_readonly(false);
            std::fs::set_permissions(&target, permissions).unwrap();
        }
    }
}
