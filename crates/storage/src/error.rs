//! The storage engine's one error type. Each variant tells the caller what to do: an input
//! error goes back to the producer or consumer (and maps to a Kafka error code), a storage
//! error means the data directory is failing, corruption names the file and byte position.

use std::io;
use std::path::PathBuf;

use ferrolog_records::RecordsError;

pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The file system failed; the data directory holding `path` should be taken offline.
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A file's bytes are not what its format requires.
    #[error("corrupt {} at byte {position}: {reason}", path.display())]
    Corrupt {
        path: PathBuf,
        position: u64,
        reason: String,
    },
    /// A fetch, truncation or log-start change names an offset outside the log.
    #[error("offset {offset} is out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
    /// A batch is larger than `max.message.bytes` (Kafka's MESSAGE_TOO_LARGE).
    #[error(
        "batch {batch_index} is {size} bytes, larger than max.message.bytes={max_message_bytes}"
    )]
    RecordTooLarge {
        batch_index: usize,
        size: usize,
        max_message_bytes: usize,
    },
    /// The whole append is larger than `segment.bytes` (Kafka's RECORD_LIST_TOO_LARGE).
    #[error("append of {size} bytes is larger than segment.bytes={segment_bytes}")]
    RecordBatchTooLarge { size: usize, segment_bytes: u64 },
    /// A batch fails its checksum or does not parse (Kafka's CORRUPT_MESSAGE).
    #[error("batch {batch_index} is corrupt: {source}")]
    CorruptRecord {
        batch_index: usize,
        #[source]
        source: RecordsError,
    },
    /// A batch or record breaks a rule of the log (Kafka's INVALID_RECORD).
    #[error("batch {batch_index}{}: {reason}", record_index.map(|i| format!(", record {i}")).unwrap_or_default())]
    InvalidRecord {
        batch_index: usize,
        record_index: Option<usize>,
        reason: String,
    },
    /// A record timestamp lies outside the allowed window (Kafka's INVALID_TIMESTAMP).
    #[error(
        "batch {batch_index}, record {record_index}: timestamp {timestamp} is outside [{lower}, {upper}]"
    )]
    InvalidTimestamp {
        batch_index: usize,
        record_index: usize,
        timestamp: i64,
        lower: i64,
        upper: i64,
    },
    /// Follower batches whose offsets do not increase.
    #[error("offsets out of order: {0}")]
    OffsetsOutOfOrder(String),
    /// A follower append that starts below the log end offset.
    #[error("append starts at offset {first_offset}, below the log end offset {log_end_offset}")]
    UnexpectedAppendOffset {
        first_offset: i64,
        log_end_offset: i64,
    },
    /// An index append that would break the index's ordering, or a full index.
    #[error("index {}: {reason}", path.display())]
    InvalidIndexAppend { path: PathBuf, reason: String },
    /// An offset that cannot be stored relative to its segment's base offset in 32 bits.
    #[error("offset {offset} does not fit a segment based at {base_offset}")]
    OffsetOverflow { offset: i64, base_offset: i64 },
    /// A configuration value is invalid; `key` is Kafka's name for it.
    #[error("invalid value {value:?} for config {key}: {reason}")]
    InvalidConfig {
        key: String,
        value: String,
        reason: String,
    },
    /// A directory name that is not `topic-partition` (or one of its suffixed forms).
    #[error("{} is not in the form topic-partition or topic-partition.uniqueId-delete: {reason}", path.display())]
    InvalidPartitionDir { path: PathBuf, reason: String },
    /// The log was closed, so it takes no more requests.
    #[error("log {0} is closed")]
    LogClosed(String),
    /// The data directory failed earlier and is offline (Kafka's KAFKA_STORAGE_ERROR).
    #[error("data directory {} is offline", dir.display())]
    LogDirOffline { dir: PathBuf },
    /// A text file (checkpoint, properties) does not parse.
    #[error("{}, line {line}: {reason}", path.display())]
    MalformedFile {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    /// An idempotent producer's batch does not follow its last one (Kafka's
    /// OUT_OF_ORDER_SEQUENCE_NUMBER).
    #[error("producer {producer_id}: sequence {received} where {expected} was expected")]
    OutOfOrderSequence {
        producer_id: i64,
        expected: i32,
        received: i32,
    },
    /// A batch from an older epoch of its producer: a newer instance has taken over (Kafka's
    /// INVALID_PRODUCER_EPOCH).
    #[error("producer {producer_id}: epoch {epoch} is older than the current epoch {current}")]
    InvalidProducerEpoch {
        producer_id: i64,
        epoch: i16,
        current: i16,
    },
    /// Startup or an operation cannot go on; the message says why and what to do.
    #[error("{0}")]
    Fatal(String),
}

impl StorageError {
    /// Wraps an I/O error with the operation and the file it concerned.
    pub fn io(op: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { op, path, source }
    }

    /// True when the error comes from the file system rather than from the caller's input.
    pub fn is_storage_failure(&self) -> bool {
        matches!(self, Self::Io { .. })
    }
}
