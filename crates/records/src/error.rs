//! The one error type of the records crate. Positions are byte offsets within the bytes the
//! caller handed in; the storage layer adds the file and the file position.

use crate::compression::Compression;

/// What is wrong with a batch, a record or a compressed stream.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    /// The bytes end before the structure they should hold does.
    #[error("{what} needs {needed} bytes but only {available} are present")]
    Truncated {
        what: &'static str,
        needed: usize,
        available: usize,
    },
    /// A length field holds a value no valid batch can have.
    #[error("invalid {what}: {value}")]
    InvalidLength { what: &'static str, value: i64 },
    /// The stored checksum does not match the bytes.
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch { stored: u32, computed: u32 },
    /// The magic byte names a format this crate cannot read.
    #[error("unsupported record format magic {0}")]
    UnsupportedMagic(u8),
    /// Attribute bits 0–2 name no known codec.
    #[error("unknown compression codec id {0}")]
    UnknownCompression(u8),
    /// A codec failed to compress or decompress.
    #[error("{codec} stream: {source}")]
    Compression {
        codec: Compression,
        #[source]
        source: std::io::Error,
    },
    /// A compressed stream holds more than the caller allows a batch to decompress to.
    #[error("{codec} stream decompresses to more than {limit} bytes")]
    DecompressedTooLarge { codec: Compression, limit: usize },
    /// One record inside a batch does not parse.
    #[error("record {index} of the batch: {reason}")]
    InvalidRecord { index: usize, reason: String },
    /// The batch header and its records disagree (count, offsets).
    #[error("inconsistent batch: {0}")]
    Inconsistent(String),
}
