//! Producer ids for InitProducerId, never handed out twice, also across restarts.
//!
//! Kafka's controller hands brokers blocks of 1000 ids and records each block in the cluster
//! metadata log. A single node has no metadata log, so ferrolog records the end of the newest
//! block in a small text file, `ferrolog-producer-ids`, in every online data directory, fsynced
//! before the first id of the block is used:
//!
//! ```text
//! 0          version
//! 45000      the first id not yet reserved
//! ```
//!
//! At startup the next block starts above the highest value in any directory and above every
//! producer id the loaded logs still hold, so a Kafka data dir's producers (whose ids Kafka's
//! controller reserved) are never handed out again either.

use std::path::Path;

use parking_lot::Mutex;

use super::LogManager;
use crate::error::{Result, StorageError};
use crate::fs::read_text_if_exists;

/// The file recording the first producer id not yet reserved, in every online data directory.
pub const PRODUCER_IDS_FILE: &str = "ferrolog-producer-ids";
const VERSION: u32 = 0;
/// Ids reserved per file write (Kafka's block size).
const BLOCK: i64 = 1000;

/// The ids reserved and the next one to hand out.
#[derive(Debug)]
pub(super) struct ProducerIdBlock {
    next: i64,
    reserved_up_to: i64,
}

impl ProducerIdBlock {
    /// Starts at `first`; nothing is reserved yet.
    pub(super) fn starting_at(first: i64) -> Mutex<Self> {
        Mutex::new(Self {
            next: first,
            reserved_up_to: first,
        })
    }
}

pub(super) fn format(reserved_up_to: i64) -> String {
    format!("{VERSION}\n{reserved_up_to}\n")
}

/// The first unreserved id recorded in `dir`, if the file is there.
pub(super) fn read(dir: &Path) -> Result<Option<i64>> {
    let path = dir.join(PRODUCER_IDS_FILE);
    let Some(text) = read_text_if_exists(&path)? else {
        return Ok(None);
    };
    let malformed = |line: usize, reason: &str| StorageError::MalformedFile {
        path: path.clone(),
        line,
        reason: reason.to_owned(),
    };
    let mut lines = text.lines();
    match lines.next().map(str::trim) {
        Some(version) if version.parse() == Ok(VERSION) => {}
        _ => return Err(malformed(1, "expected version 0")),
    }
    let next = lines
        .next()
        .and_then(|line| line.trim().parse::<i64>().ok())
        .filter(|next| *next >= 0)
        .ok_or_else(|| malformed(2, "expected the first unreserved producer id"))?;
    Ok(Some(next))
}

impl LogManager {
    /// A producer id no one has had. Reserving a new block writes every online directory's
    /// `ferrolog-producer-ids` first; if no directory can store it, no id is handed out.
    pub fn next_producer_id(&self) -> Result<i64> {
        let mut block = self.producer_ids.lock();
        if block.next >= block.reserved_up_to {
            let reserved_up_to = block.next + BLOCK;
            let mut stored = false;
            let mut first_error = None;
            for dir in self.dirs.iter().filter(|dir| !dir.is_offline()) {
                match dir.write_producer_ids(reserved_up_to) {
                    Ok(()) => stored = true,
                    Err(error) => {
                        first_error.get_or_insert(error);
                    }
                }
            }
            if !stored {
                return Err(first_error.unwrap_or_else(|| {
                    StorageError::Fatal("every data directory is offline".into())
                }));
            }
            block.reserved_up_to = reserved_up_to;
        }
        let id = block.next;
        block.next += 1;
        Ok(id)
    }
}
