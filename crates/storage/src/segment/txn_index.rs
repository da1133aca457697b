//! A segment's transaction index, `<base offset>.txnindex`: one entry for each transaction
//! aborted by a marker in the segment, in Kafka's format, so `read_committed` fetches can tell
//! consumers which records to drop. The file exists only once a segment has an aborted
//! transaction (Kafka creates it on the first append, never ahead).
//!
//! | field              | type | note                                                    |
//! |--------------------|------|---------------------------------------------------------|
//! | version            | i16  | 0                                                       |
//! | producer id        | i64  |                                                         |
//! | first offset       | i64  | the transaction's first record (maybe in an older segment) |
//! | last offset        | i64  | the ABORT marker's offset                              |
//! | last stable offset | i64  | see below                                               |
//!
//! 34 bytes an entry, big-endian, in the order the markers were written, so their last offsets
//! increase. The last stable offset is the one the abort left as far as the producer state
//! knows it, the high watermark aside: the first offset of the earliest other open
//! transaction, or the marker's offset + 1 when none is open. A search uses it to know when no
//! later segment can hold a transaction starting below its bound. Entries are appended rarely (one per aborted transaction), so no descriptor is
//! kept between uses and the entries are read only when first needed: a partition's many
//! segments without aborted transactions cost nothing.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use ferrolog_records::be;

use crate::error::{Result, StorageError};
use crate::fs::remove_if_exists;
use crate::offset::Offset;

/// Bytes of one entry.
pub const ENTRY_BYTES: usize = 34;
/// The only entry version Kafka writes and reads.
const VERSION: i16 = 0;

/// One aborted transaction: which producer, which offsets it spans, and the last stable offset
/// when its marker was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    /// The producer whose transaction was aborted.
    pub producer_id: i64,
    /// The transaction's first offset in the partition.
    pub first_offset: Offset,
    /// The offset of the ABORT marker that ended it.
    pub last_offset: Offset,
    /// The first offset of the earliest other transaction open when the marker was written,
    /// or the marker's offset + 1.
    pub last_stable_offset: Offset,
}

impl AbortedTxn {
    /// The entry's 34 bytes.
    pub fn encode(&self) -> [u8; ENTRY_BYTES] {
        let mut bytes = [0u8; ENTRY_BYTES];
        bytes[..2].copy_from_slice(&VERSION.to_be_bytes());
        bytes[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        bytes[10..18].copy_from_slice(&self.first_offset.value().to_be_bytes());
        bytes[18..26].copy_from_slice(&self.last_offset.value().to_be_bytes());
        bytes[26..34].copy_from_slice(&self.last_stable_offset.value().to_be_bytes());
        bytes
    }

    /// The entry in `bytes` (exactly [`ENTRY_BYTES`]); `Err(reason)` for a version other than
    /// 0.
    fn decode(bytes: &[u8]) -> std::result::Result<Self, String> {
        let version = be::i16_at(bytes, 0);
        if version != VERSION {
            return Err(format!("entry version {version}, where only 0 exists"));
        }
        Ok(Self {
            producer_id: be::i64_at(bytes, 2),
            first_offset: Offset::new(be::i64_at(bytes, 10)),
            last_offset: Offset::new(be::i64_at(bytes, 18)),
            last_stable_offset: Offset::new(be::i64_at(bytes, 26)),
        })
    }
}

/// What one index says about a fetched range: the aborted transactions that overlap it, and
/// whether the search may stop here (an entry's last stable offset is at or past the range's
/// upper bound: every transaction starting below the bound had ended by then, so later segments
/// hold none of them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AbortedSearch {
    /// Overlapping transactions, in index order.
    pub aborted: Vec<AbortedTxn>,
    /// Whether later segments need not be searched.
    pub complete: bool,
}

/// A segment's `.txnindex`, read on first use.
#[derive(Debug)]
pub(crate) struct TxnIndex {
    path: PathBuf,
    /// The file's entries once read; `None` until then.
    entries: Option<Vec<AbortedTxn>>,
}

impl TxnIndex {
    /// The index at `path`, whether or not the file exists; nothing is read yet.
    pub(crate) fn new(path: PathBuf) -> Self {
        Self {
            path,
            entries: None,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Points the index at its file's new name after a rename.
    pub(crate) fn set_path(&mut self, path: PathBuf) {
        self.path = path;
    }

    /// The entries, read from the file the first time (none when it does not exist). A file
    /// whose length is not a whole number of entries, or with an entry of an unknown version,
    /// is corrupt: recovery rebuilds it from the log.
    pub(crate) fn entries(&mut self) -> Result<&[AbortedTxn]> {
        if self.entries.is_none() {
            self.entries = Some(read_entries(&self.path)?);
        }
        Ok(self.entries.as_deref().unwrap_or_default())
    }

    /// Appends `txn`, whose marker must come after every marker already indexed (Kafka refuses
    /// an entry whose last offset does not increase the same way).
    pub(crate) fn append(&mut self, txn: AbortedTxn) -> Result<()> {
        let last = self.entries()?.last().map(|entry| entry.last_offset);
        if let Some(last) = last
            && txn.last_offset <= last
        {
            return Err(StorageError::InvalidIndexAppend {
                path: self.path.clone(),
                reason: format!(
                    "an aborted transaction ending at offset {} after one ending at {last}: last offsets must increase",
                    txn.last_offset
                ),
            });
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(StorageError::io("open", &self.path))?;
        file.write_all(&txn.encode())
            .map_err(StorageError::io("write", &self.path))?;
        if let Some(entries) = &mut self.entries {
            entries.push(txn);
        }
        Ok(())
    }

    /// The aborted transactions that overlap `[fetch_offset, upper_bound)`: those ending at or
    /// after the fetch offset and starting below the upper bound, as Kafka's
    /// `collectAbortedTxns` selects them.
    pub(crate) fn collect(
        &mut self,
        fetch_offset: Offset,
        upper_bound: Offset,
    ) -> Result<AbortedSearch> {
        let mut search = AbortedSearch::default();
        for txn in self.entries()? {
            if txn.last_offset >= fetch_offset && txn.first_offset < upper_bound {
                search.aborted.push(*txn);
            }
            if txn.last_stable_offset >= upper_bound {
                search.complete = true;
                break;
            }
        }
        Ok(search)
    }

    /// Removes the entries of markers at or after `offset` (the log is truncated there).
    pub(crate) fn truncate_to(&mut self, offset: Offset) -> Result<()> {
        let keep = self
            .entries()?
            .iter()
            .take_while(|txn| txn.last_offset < offset)
            .count();
        if keep == self.entries()?.len() {
            return Ok(());
        }
        let bytes = (keep * ENTRY_BYTES) as u64;
        let file = OpenOptions::new()
            .write(true)
            .open(&self.path)
            .map_err(StorageError::io("open", &self.path))?;
        file.set_len(bytes)
            .map_err(StorageError::io("truncate", &self.path))?;
        if let Some(entries) = &mut self.entries {
            entries.truncate(keep);
        }
        Ok(())
    }

    /// Deletes the file and forgets its entries: recovery rebuilds them.
    pub(crate) fn reset(&mut self) -> Result<()> {
        remove_if_exists(&self.path)?;
        self.entries = Some(Vec::new());
        Ok(())
    }

    /// Checks what Kafka checks when it opens a segment without recovering it: every entry
    /// reads, and none ends before the segment starts at `base_offset`.
    pub(crate) fn sanity_check(&mut self, base_offset: Offset) -> Result<()> {
        let path = self.path.clone();
        for (position, txn) in self.entries()?.iter().enumerate() {
            if txn.last_offset < base_offset {
                return Err(StorageError::Corrupt {
                    path,
                    position: (position * ENTRY_BYTES) as u64,
                    reason: format!(
                        "the aborted transaction of producer {} ends at offset {}, before the segment's base offset {base_offset}",
                        txn.producer_id, txn.last_offset
                    ),
                });
            }
        }
        Ok(())
    }

    /// Writes the file's data to disk, if there is a file.
    pub(crate) fn fsync(&self) -> Result<()> {
        crate::fs::fsync_file_if_exists(&self.path)
    }
}

/// The entries of the file at `path`; none when it does not exist.
fn read_entries(path: &Path) -> Result<Vec<AbortedTxn>> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(StorageError::io("read", path)(error)),
    };
    if bytes.len() % ENTRY_BYTES != 0 {
        return Err(StorageError::Corrupt {
            path: path.to_path_buf(),
            position: (bytes.len() - bytes.len() % ENTRY_BYTES) as u64,
            reason: format!(
                "{} bytes, not a whole number of {ENTRY_BYTES}-byte entries",
                bytes.len()
            ),
        });
    }
    bytes
        .chunks_exact(ENTRY_BYTES)
        .enumerate()
        .map(|(index, chunk)| {
            AbortedTxn::decode(chunk).map_err(|reason| StorageError::Corrupt {
                path: path.to_path_buf(),
                position: (index * ENTRY_BYTES) as u64,
                reason,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(producer_id: i64, first_offset: i64, last_offset: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id,
            first_offset: Offset::new(first_offset),
            last_offset: Offset::new(last_offset),
            last_stable_offset: Offset::new(first_offset),
        }
    }

    fn index(dir: &Path) -> TxnIndex {
        TxnIndex::new(dir.join("00000000000000000000.txnindex"))
    }

    #[test]
    fn an_entry_is_kafkas_34_bytes() {
        let entry = AbortedTxn {
            producer_id: 0x0102_0304_0506_0708,
            first_offset: Offset::new(5),
            last_offset: Offset::new(9),
            last_stable_offset: Offset::new(7),
        };
        let bytes = entry.encode();
        let mut expected = vec![0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        for value in [5i64, 9, 7] {
            expected.extend_from_slice(&value.to_be_bytes());
        }
        assert_eq!(bytes.as_slice(), expected.as_slice());
        assert_eq!(AbortedTxn::decode(&bytes), Ok(entry));
    }

    #[test]
    fn no_file_until_the_first_abort_then_entries_survive_a_reopen() {
        let temp = tempfile::tempdir().unwrap();
        let mut fresh = index(temp.path());
        assert!(fresh.entries().unwrap().is_empty());
        assert!(!fresh.path().exists(), "nothing is written ahead");
        fresh.append(txn(1, 0, 4)).unwrap();
        fresh.append(txn(2, 3, 8)).unwrap();
        assert_eq!(std::fs::metadata(fresh.path()).unwrap().len(), 68);
        let mut reopened = index(temp.path());
        assert_eq!(reopened.entries().unwrap(), &[txn(1, 0, 4), txn(2, 3, 8)]);
    }

    #[test]
    fn last_offsets_must_increase() {
        let temp = tempfile::tempdir().unwrap();
        let mut index = index(temp.path());
        index.append(txn(1, 0, 4)).unwrap();
        for refused in [txn(2, 1, 4), txn(2, 1, 3)] {
            let error = index.append(refused).unwrap_err();
            assert!(
                matches!(error, StorageError::InvalidIndexAppend { .. }),
                "{error}"
            );
        }
        assert_eq!(index.entries().unwrap(), &[txn(1, 0, 4)]);
        assert_eq!(std::fs::metadata(index.path()).unwrap().len(), 34);
    }

    #[test]
    fn a_search_selects_overlapping_transactions_and_stops_at_a_stable_offset_past_the_bound() {
        // Kafka's own vectors (TransactionIndexTest.testCollectAbortedTransactions).
        let temp = tempfile::tempdir().unwrap();
        let mut index = index(temp.path());
        let entry = |producer_id, first_offset, last_offset, last_stable_offset| AbortedTxn {
            producer_id,
            first_offset: Offset::new(first_offset),
            last_offset: Offset::new(last_offset),
            last_stable_offset: Offset::new(last_stable_offset),
        };
        let (a, b, c, d) = (
            entry(0, 0, 10, 11),
            entry(1, 5, 15, 13),
            entry(2, 18, 35, 25),
            entry(3, 32, 50, 40),
        );
        for txn in [a, b, c, d] {
            index.append(txn).unwrap();
        }
        for ((fetch_offset, upper_bound), aborted, complete) in [
            ((0, 100), vec![a, b, c, d], false),
            ((0, 32), vec![a, b, c], true),
            ((0, 35), vec![a, b, c, d], true),
            ((10, 35), vec![a, b, c, d], true),
            ((11, 35), vec![b, c, d], true),
            // D ends past the bound, but a transaction open at 40 may end in a later segment.
            ((20, 41), vec![c, d], false),
        ] {
            let search = index
                .collect(Offset::new(fetch_offset), Offset::new(upper_bound))
                .unwrap();
            assert_eq!(
                (search.aborted, search.complete),
                (aborted, complete),
                "collect({fetch_offset}, {upper_bound})"
            );
        }
    }

    #[test]
    fn truncation_drops_the_markers_at_and_after_the_offset() {
        let temp = tempfile::tempdir().unwrap();
        let mut index = index(temp.path());
        for entry in [txn(1, 0, 4), txn(2, 3, 8), txn(3, 10, 12)] {
            index.append(entry).unwrap();
        }
        index.truncate_to(Offset::new(9)).unwrap();
        index.truncate_to(Offset::new(9)).unwrap();
        assert_eq!(index.entries().unwrap(), &[txn(1, 0, 4), txn(2, 3, 8)]);
        index.truncate_to(Offset::new(8)).unwrap();
        let mut reopened = TxnIndex::new(index.path().to_path_buf());
        assert_eq!(reopened.entries().unwrap(), &[txn(1, 0, 4)]);
        // Appends go on after the cut.
        reopened.append(txn(5, 6, 7)).unwrap();
        assert_eq!(
            TxnIndex::new(index.path().to_path_buf()).entries().unwrap(),
            &[txn(1, 0, 4), txn(5, 6, 7)]
        );
    }

    #[test]
    fn damage_is_reported_with_its_position() {
        let temp = tempfile::tempdir().unwrap();
        let mut index = index(temp.path());
        index.append(txn(1, 0, 4)).unwrap();
        let mut bytes = std::fs::read(index.path()).unwrap();
        bytes.extend_from_slice(&[0; 10]);
        std::fs::write(index.path(), &bytes).unwrap();
        let error = TxnIndex::new(index.path().to_path_buf())
            .entries()
            .map(<[AbortedTxn]>::to_vec)
            .unwrap_err();
        assert!(
            matches!(&error, StorageError::Corrupt { position: 34, .. }),
            "{error}"
        );
        bytes.truncate(34);
        bytes[1] = 1;
        std::fs::write(index.path(), &bytes).unwrap();
        let error = TxnIndex::new(index.path().to_path_buf())
            .entries()
            .map(<[AbortedTxn]>::to_vec)
            .unwrap_err();
        assert!(error.to_string().contains("entry version 1"), "{error}");
    }

    #[test]
    fn an_entry_ending_before_the_segment_fails_the_sanity_check() {
        let temp = tempfile::tempdir().unwrap();
        let mut index = TxnIndex::new(temp.path().join("00000000000000000100.txnindex"));
        index.append(txn(1, 90, 99)).unwrap();
        index.append(txn(1, 100, 104)).unwrap();
        let error = index.sanity_check(Offset::new(100)).unwrap_err();
        assert!(
            matches!(error, StorageError::Corrupt { position: 0, .. }),
            "{error}"
        );
        assert!(index.sanity_check(Offset::new(99)).is_ok());
    }
}
