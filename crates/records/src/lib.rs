//! Kafka's record formats as pure codecs: bytes in, values out, no file or network I/O.
//!
//! * [`RecordBatch`] — a zero-copy view of a RecordBatch v2 (magic 2) with every header field,
//!   CRC-32C validation and record iteration; [`BatchBuilder`] writes batches exactly as Kafka's
//!   producer does.
//! * [`Compression`] — none, gzip, snappy (xerial framing), lz4 (frame format) and zstd, both
//!   ways.
//! * [`LegacyEntry`] — magic 0 and 1 messages, read-only, so old data directories open.
//! * [`FileEntry`] / [`EntryIter`] — one entry of a `.log` file of any magic, and iteration
//!   over a buffer laid out like one.
//!
//! Every parser checks lengths before it reads, so no input can make it panic.

pub mod batch;
pub mod be;
pub mod builder;
pub mod compression;
pub mod consumer_group_records;
pub mod consumer_offsets;
pub mod control;
mod coordinator_codec;
pub mod entry;
pub mod error;
pub mod legacy;
pub mod record;
pub mod share_group_records;
pub mod share_state_records;
pub mod streams_group_records;
pub mod transaction_state;
pub mod varint;

pub use batch::{
    Attributes, BATCH_HEADER_LEN, LOG_OVERHEAD, MAGIC_V2, RecordBatch, Records, TimestampType,
};
pub use builder::{BatchBuilder, HeaderRef};
pub use compression::{Compression, DEFAULT_MAX_DECOMPRESSED_BYTES};
pub use entry::{EntryHeader, EntryIter, EntryRecords, FileEntry, HEADER_SIZE_UP_TO_MAGIC};
pub use error::RecordsError;
pub use legacy::LegacyEntry;
pub use record::{Header, Record, RecordIter};

#[cfg(test)]
mod tests;

/// Hexadecimal text to bytes, for tests that compare with bytes Kafka wrote.
#[cfg(test)]
mod tests_hex {
    #[allow(clippy::unwrap_used, reason = "tests")]
    pub fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }
}
