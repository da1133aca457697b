//! Records `copy` writes into Kafka's directories itself (the groups' records naming Kafka's
//! topic ids, the share partitions' state): a segment of their own after the copied ones,
//! with empty indexes. One batch per segment start never gets an index entry in Kafka either
//! (Kafka indexes a batch only after `index.interval.bytes` of earlier ones), and the indexes
//! are sparse.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use ferrolog_records::BatchBuilder;

/// Records of one batch at most.
const RECORDS_PER_BATCH: usize = 100;
/// Key and value bytes of one batch at most, keeping each batch below Kafka's default
/// `message.max.bytes` (1 MiB, the bound Kafka's own coordinators write under) whatever the
/// groups hold: a share partition's snapshot alone can hold thousands of ranges.
const BYTES_PER_BATCH: usize = 900 * 1024;

/// A record to write: its key and value, encoded.
pub type KeyValue = (Vec<u8>, Vec<u8>);

/// Makes `partition_dir` end with `records` from `base_offset`, each stamped `timestamp`, in
/// a segment of their own with empty indexes, each file fsynced and then the directory;
/// returns the new log end offset. An empty segment at `base_offset` (the copied log's idle
/// active one) gives way to it, and a segment already holding exactly these records (an
/// earlier `copy`) is kept, so a copy interrupted before or while writing it is completed by
/// running `copy` again.
pub fn ensure_segment(
    partition_dir: &Path,
    base_offset: i64,
    leader_epoch: i32,
    timestamp: i64,
    records: &[KeyValue],
) -> anyhow::Result<i64> {
    if records.is_empty() {
        return Ok(base_offset);
    }
    let (bytes, next) = segment_bytes(base_offset, leader_epoch, timestamp, records)?;
    let name = format!("{base_offset:020}");
    let log = partition_dir.join(format!("{name}.log"));
    let present = std::fs::metadata(&log).map(|m| m.len()).ok();
    if present == Some(bytes.len() as u64) {
        return Ok(next);
    }
    for extension in ["log", "index", "timeindex"] {
        let path = partition_dir.join(format!("{name}.{extension}"));
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                return Err(error).with_context(|| format!("removing {}", path.display()));
            }
        }
    }
    for (extension, contents) in [("log", &bytes[..]), ("index", &[]), ("timeindex", &[])] {
        let path = partition_dir.join(format!("{name}.{extension}"));
        let mut file =
            File::create_new(&path).with_context(|| format!("creating {}", path.display()))?;
        file.write_all(contents)
            .and_then(|()| file.sync_all())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    File::open(partition_dir)
        .and_then(|dir| dir.sync_all())
        .with_context(|| format!("fsync {}", partition_dir.display()))?;
    Ok(next)
}

/// The length `ensure_segment` gives the segment of `records` (whatever its timestamp).
pub fn segment_len(
    base_offset: i64,
    leader_epoch: i32,
    timestamp: i64,
    records: &[KeyValue],
) -> anyhow::Result<u64> {
    if records.is_empty() {
        return Ok(0);
    }
    let (bytes, _) = segment_bytes(base_offset, leader_epoch, timestamp, records)?;
    Ok(bytes.len() as u64)
}

/// The time now, in Kafka's milliseconds, for records with no time of their own.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as i64)
}

/// The batches of `records` from `base_offset`, cut by count and by bytes (their length does
/// not depend on the time they are stamped with), and the offset after them.
fn segment_bytes(
    base_offset: i64,
    leader_epoch: i32,
    timestamp: i64,
    records: &[KeyValue],
) -> anyhow::Result<(Vec<u8>, i64)> {
    let mut bytes = Vec::new();
    let mut next = base_offset;
    for chunk in batches(records) {
        let mut batch = BatchBuilder::new(next).partition_leader_epoch(leader_epoch);
        for (key, value) in chunk {
            batch.append(timestamp, Some(key), Some(value), &[])?;
        }
        bytes.extend_from_slice(&batch.build()?);
        next += chunk.len() as i64;
    }
    Ok((bytes, next))
}

/// `records` cut into batches of at most `RECORDS_PER_BATCH` records and `BYTES_PER_BATCH`
/// bytes (a single larger record is a batch of its own).
fn batches(records: &[KeyValue]) -> Vec<&[KeyValue]> {
    let mut cut = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (index, (key, value)) in records.iter().enumerate() {
        let size = key.len() + value.len();
        let full = index - start == RECORDS_PER_BATCH || bytes + size > BYTES_PER_BATCH;
        if index > start && full {
            cut.push(&records[start..index]);
            (start, bytes) = (index, 0);
        }
        bytes += size;
    }
    if start < records.len() {
        cut.push(&records[start..]);
    }
    cut
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn records(sizes: &[usize]) -> Vec<KeyValue> {
        sizes
            .iter()
            .map(|size| (vec![1], vec![0; size - 1]))
            .collect()
    }

    fn lengths(records: &[KeyValue]) -> Vec<usize> {
        batches(records).iter().map(|batch| batch.len()).collect()
    }

    #[test]
    fn batches_are_cut_by_count_and_by_bytes() {
        assert_eq!(lengths(&records(&[10; 250])), vec![100, 100, 50]);
        let half = BYTES_PER_BATCH / 2;
        assert_eq!(lengths(&records(&[half, half, 1, half])), vec![2, 2]);
        // A record larger than the bound still goes, alone.
        assert_eq!(
            lengths(&records(&[10, BYTES_PER_BATCH + 1, 10])),
            vec![1, 1, 1]
        );
        assert!(batches(&[]).is_empty());
    }

    #[test]
    fn the_batches_carry_the_given_time_and_epoch() {
        let (bytes, next) = segment_bytes(7, 3, 1234, &records(&[5, 5])).unwrap();
        assert_eq!(next, 9);
        let (_, entry) = ferrolog_records::EntryIter::new(&bytes)
            .next()
            .unwrap()
            .unwrap();
        entry.validate().unwrap();
        let ferrolog_records::FileEntry::V2(batch) = entry else {
            panic!("a v2 batch");
        };
        assert_eq!(batch.partition_leader_epoch(), 3);
        assert_eq!(entry.max_timestamp(), 1234);
    }
}
