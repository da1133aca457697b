//! What several storage test files share.

#![allow(dead_code, reason = "each test file uses part of this")]

use ferrolog_storage::Offset;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_testkit::{FetchedRecord, fetched_records};

/// Every record of `log` from `from` (at least its log start) up to `bound`, read a MiB at a
/// time, each batch's checksum verified; a read below the log end that finds nothing fails.
pub fn records_from(log: &Log, from: i64, bound: FetchBound) -> Vec<FetchedRecord> {
    let mut out = Vec::new();
    let mut next = from.max(log.log_start_offset().value());
    while next < log.log_end_offset().value() {
        let bytes = log
            .read(FetchParams {
                start_offset: Offset::new(next),
                max_bytes: 1 << 20,
                bound,
                first_batch: FirstBatch::Whole,
            })
            .unwrap()
            .read_bytes()
            .unwrap();
        let (records, after) = fetched_records(&bytes);
        let after =
            after.unwrap_or_else(|| panic!("a read at {next} below the log end found nothing"));
        out.extend(records.into_iter().filter(|record| record.offset >= next));
        next = next.max(after);
    }
    out
}
