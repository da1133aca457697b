//! Helpers shared by ferrolog's tests and benches. Not part of the product.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

pub mod crash;
pub mod damage;
pub mod scram_client;

use std::path::{Path, PathBuf};

use ferrolog_records::{BatchBuilder, Compression, DEFAULT_MAX_DECOMPRESSED_BYTES, EntryIter};

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

/// One record of fetched bytes, copied out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedRecord {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
}

impl FetchedRecord {
    /// The key as text (it must be UTF-8).
    pub fn key_text(&self) -> Option<String> {
        self.key.clone().map(|key| String::from_utf8(key).unwrap())
    }
    /// The value as text (it must be UTF-8).
    pub fn value_text(&self) -> Option<String> {
        self.value
            .clone()
            .map(|value| String::from_utf8(value).unwrap())
    }
}

/// The records of `bytes`, whole batches as a fetch returns them, each batch's checksum
/// verified; and the offset after the last batch (past records compaction removed from it),
/// where the next read starts.
pub fn fetched_records(bytes: &[u8]) -> (Vec<FetchedRecord>, Option<i64>) {
    let mut records = Vec::new();
    let mut next_offset = None;
    for entry in EntryIter::new(bytes) {
        let (_, entry) = entry.unwrap();
        entry.validate().unwrap();
        for record in entry
            .records(DEFAULT_MAX_DECOMPRESSED_BYTES)
            .unwrap()
            .to_vec()
            .unwrap()
        {
            records.push(FetchedRecord {
                offset: record.offset,
                timestamp: record.timestamp,
                key: record.key.map(<[u8]>::to_vec),
                value: record.value.map(<[u8]>::to_vec),
            });
        }
        next_offset = Some(entry.next_offset());
    }
    (records, next_offset)
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

/// Copies the directory tree `src` to `dst` (made if missing), every copy writable.
pub fn copy_dir(src: &Path, dst: &Path) {
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

/// A small file system mounted for a test (to fill it), unmounted when dropped.
#[derive(Debug)]
pub struct SmallFileSystem {
    _temp: tempfile::TempDir,
    mount_point: PathBuf,
}

/// The kinds of [`SmallFileSystem`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileSystemKind {
    /// ext4 in an image file on a loop device: delayed allocation, `fallocate`, as a real disk.
    Ext4,
    /// tmpfs: memory-backed, no delayed allocation.
    Tmpfs,
}

impl SmallFileSystem {
    /// Mounts a fresh file system of `kind` and `megabytes`, or returns `None` (after printing
    /// that the test is skipped) where this machine will not mount one for this user.
    pub fn mount(kind: FileSystemKind, megabytes: u32) -> Option<Self> {
        use std::process::{Command, Stdio};
        let run = |command: &mut Command| {
            command
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        };
        let temp = tempfile::tempdir().unwrap();
        let mount_point = temp.path().join("mnt");
        std::fs::create_dir(&mount_point).unwrap();
        let mounted = match kind {
            FileSystemKind::Ext4 => {
                let image = temp.path().join("fs.img");
                run(Command::new("truncate")
                    .arg("-s")
                    .arg(format!("{megabytes}M"))
                    .arg(&image))
                    && run(Command::new("mkfs.ext4").arg("-q").arg("-F").arg(&image))
                    && run(Command::new("mount")
                        .arg("-o")
                        .arg("loop")
                        .arg(&image)
                        .arg(&mount_point))
            }
            FileSystemKind::Tmpfs => run(Command::new("mount")
                .args(["-t", "tmpfs", "-o"])
                .arg(format!("size={megabytes}m"))
                .arg("tmpfs")
                .arg(&mount_point)),
        };
        if !mounted {
            println!("skipped: cannot mount a small {kind:?} file system here (needs root)");
            return None;
        }
        Some(Self {
            _temp: temp,
            mount_point,
        })
    }

    pub fn path(&self) -> &Path {
        &self.mount_point
    }
}

impl Drop for SmallFileSystem {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(&self.mount_point)
            .status();
    }
}

/// Writes a file at `path` until the file system refuses more, as another program filling the
/// disk would. Returns the bytes written.
pub fn fill_disk(path: &Path) -> usize {
    use std::io::Write;
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = vec![7u8; 64 * 1024];
    let mut written = 0;
    loop {
        match file.write(&chunk) {
            Ok(0) => break,
            Ok(count) => written += count,
            Err(error) if error.raw_os_error() == Some(28) => break, // ENOSPC
            Err(error) => panic!("filling {}: {error}", path.display()),
        }
    }
    let _ = file.sync_all();
    written
}
