//! Reading a log back in tests, as a fetch reads it.

use ferrolog_storage::Offset;
use ferrolog_storage::log::{FetchBound, FetchParams, FirstBatch, Log};
use ferrolog_testkit::{FetchedRecord, fetched_records};

/// Every record of `log` from offset `from` up to `bound`, read a megabyte at a time.
pub fn records_from(log: &Log, from: i64, bound: FetchBound) -> Vec<FetchedRecord> {
    let mut out = Vec::new();
    let mut next = from.max(log.log_start_offset().value());
    let end = match bound {
        FetchBound::LogEnd => log.log_end_offset().value(),
        FetchBound::HighWatermark => log.high_watermark().value(),
        FetchBound::LastStable => log.view().last_stable_offset().value(),
    };
    while next < end {
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
            after.unwrap_or_else(|| panic!("a read at {next} below offset {end} found nothing"));
        out.extend(records.into_iter().filter(|record| record.offset >= next));
        next = next.max(after);
    }
    out
}
