//! Producer snapshot files, `<offset>.snapshot`: the producer state as of `offset` (exclusive),
//! in Kafka's format so snapshots move between Kafka and ferrolog.
//!
//! | field   | type  | note                                        |
//! |---------|-------|---------------------------------------------|
//! | version | i16   | 1                                           |
//! | crc     | u32   | CRC-32C of every byte after this field      |
//! | count   | i32   | entries                                     |
//! | entries | 46 B  | see below, `count` times                    |
//!
//! Entry: `producerId i64, epoch i16, lastSequence i32, lastOffset i64, offsetDelta i32,
//! timestamp i64, coordinatorEpoch i32, currentTxnFirstOffset i64` (−1: no open transaction).
//! Only each producer's last batch is kept, as Kafka keeps it; a producer without batches (its
//! last word a marker that moved it to a new epoch) is kept too, with sequence and offset −1 and
//! delta 0, so its epochs survive.

use std::path::{Path, PathBuf};

use ferrolog_records::batch::crc32c;
use ferrolog_records::be;

use super::{BatchMetadata, ProducerEntry};
use crate::epoch::{CoordinatorEpoch, ProducerEpoch};
use crate::error::{Result, StorageError};
use crate::fs;
use crate::offset::Offset;
use crate::segment::{SNAPSHOT_SUFFIX, parse_base_offset, segment_path};

const VERSION: i16 = 1;
const HEADER_BYTES: usize = 2 + 4 + 4;
const ENTRY_BYTES: usize = 46;

/// The path of the snapshot as of `offset`: `<dir>/<20-digit offset>.snapshot`.
pub fn snapshot_path(dir: &Path, offset: Offset) -> PathBuf {
    segment_path(dir, offset.value(), SNAPSHOT_SUFFIX)
}

/// The snapshot files in `dir` by offset, oldest first.
pub fn list(dir: &Path) -> Result<Vec<(Offset, PathBuf)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(StorageError::io("list", dir))? {
        let entry = entry.map_err(StorageError::io("list", dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.ends_with(SNAPSHOT_SUFFIX)
            && let Some(offset) = parse_base_offset(name)
        {
            found.push((Offset::new(offset), entry.path()));
        }
    }
    found.sort();
    Ok(found)
}

/// Encodes a snapshot of `entries`, in the order given: each producer's epochs, last batch,
/// last timestamp and open transaction.
pub fn encode<'a>(entries: impl Iterator<Item = &'a ProducerEntry>) -> Vec<u8> {
    let mut body = Vec::new();
    let mut count = 0i32;
    for entry in entries {
        let last = entry.batches.back();
        body.extend_from_slice(&entry.producer_id.to_be_bytes());
        let current_txn_first_offset = entry.current_txn_first_offset.map_or(-1, Offset::value);
        body.extend_from_slice(&entry.epoch.value().to_be_bytes());
        body.extend_from_slice(&last.map_or(-1, |b| b.last_seq).to_be_bytes());
        body.extend_from_slice(&last.map_or(-1, |b| b.last_offset.value()).to_be_bytes());
        body.extend_from_slice(&last.map_or(0, BatchMetadata::offset_delta).to_be_bytes());
        body.extend_from_slice(&entry.last_timestamp.to_be_bytes());
        body.extend_from_slice(&entry.coordinator_epoch.value().to_be_bytes());
        body.extend_from_slice(&current_txn_first_offset.to_be_bytes());
        count += 1;
    }
    let mut covered = Vec::with_capacity(4 + body.len());
    covered.extend_from_slice(&count.to_be_bytes());
    covered.extend_from_slice(&body);
    let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&crc32c(&covered).to_be_bytes());
    out.extend_from_slice(&covered);
    out
}

/// Decodes a snapshot; any damage (version, CRC, length) is an error naming the file.
pub fn decode(path: &Path, bytes: &[u8]) -> Result<Vec<ProducerEntry>> {
    let corrupt = |position: usize, reason: String| StorageError::Corrupt {
        path: path.to_path_buf(),
        position: position as u64,
        reason,
    };
    if bytes.len() < HEADER_BYTES {
        return Err(corrupt(
            0,
            format!("{} bytes, shorter than a snapshot header", bytes.len()),
        ));
    }
    let version = be::i16_at(bytes, 0);
    if version != VERSION {
        return Err(corrupt(
            0,
            format!("snapshot version {version}, expected {VERSION}"),
        ));
    }
    let stored = be::u32_at(bytes, 2);
    let computed = crc32c(&bytes[6..]);
    if stored != computed {
        return Err(corrupt(
            2,
            format!("CRC {stored:#010x}, computed {computed:#010x}"),
        ));
    }
    let count = be::i32_at(bytes, 6);
    let expected = usize::try_from(count)
        .ok()
        .and_then(|count| count.checked_mul(ENTRY_BYTES))
        .map(|body| body + HEADER_BYTES);
    if expected != Some(bytes.len()) {
        return Err(corrupt(
            6,
            format!("{count} entries do not fill {} bytes", bytes.len()),
        ));
    }
    let mut entries = Vec::with_capacity(count as usize);
    for chunk in bytes[HEADER_BYTES..].chunks_exact(ENTRY_BYTES) {
        // `chunks_exact` gives whole entries, so every field is within the chunk.
        let producer_id = be::i64_at(chunk, 0);
        let epoch = be::i16_at(chunk, 8);
        let last_seq = be::i32_at(chunk, 10);
        let last_offset = be::i64_at(chunk, 14);
        let offset_delta = be::i32_at(chunk, 22);
        let timestamp = be::i64_at(chunk, 26);
        let coordinator_epoch = be::i32_at(chunk, 34);
        let current_txn_first_offset = be::i64_at(chunk, 38);
        let mut entry = ProducerEntry::new(producer_id, ProducerEpoch::new(epoch));
        entry.coordinator_epoch = CoordinatorEpoch::new(coordinator_epoch);
        entry.last_timestamp = timestamp;
        entry.current_txn_first_offset =
            (current_txn_first_offset >= 0).then(|| Offset::new(current_txn_first_offset));
        if last_offset >= 0 {
            let last_offset = Offset::new(last_offset);
            entry.batches.push_back(BatchMetadata {
                // Sequences wrap at i32::MAX, as Kafka's `decrementSequence` wraps them back.
                first_seq: last_seq.wrapping_sub(offset_delta) & i32::MAX,
                last_seq,
                last_offset,
                first_offset: last_offset - i64::from(offset_delta),
                timestamp,
            });
        }
        entries.push(entry);
    }
    Ok(entries)
}

/// Writes a snapshot atomically (temp file, fsync, rename, directory fsync).
pub fn write(dir: &Path, offset: Offset, bytes: &[u8]) -> Result<()> {
    fs::atomic_write(&snapshot_path(dir, offset), bytes)
}

/// Writes a snapshot through a temp file and a rename, without fsync ([`sync`] later): its CRC
/// tells a torn one apart after a crash.
pub fn write_unsynced(dir: &Path, offset: Offset, bytes: &[u8]) -> Result<()> {
    fs::replace_unsynced(&snapshot_path(dir, offset), bytes)
}

/// fsyncs the snapshot at `offset` (if it is still there) and its directory.
pub fn sync(dir: &Path, offset: Offset) -> Result<()> {
    fs::fsync_file_if_exists(&snapshot_path(dir, offset))?;
    fs::fsync_dir(dir)
}
