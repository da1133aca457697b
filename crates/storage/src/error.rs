//! The storage engine's one error type. Each variant tells the caller what to do: an input
//! error goes back to the producer or consumer (and maps to a Kafka error code), a storage
//! error means the data directory is failing, corruption names the file and byte position.

use std::io;
use std::path::PathBuf;

use ferrolog_records::RecordsError;

use crate::epoch::{CoordinatorEpoch, ProducerEpoch};

/// The storage engine's `Result`: the error is a [`StorageError`] unless another is given.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The file system failed; the data directory holding `path` should be taken offline.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What was being done, such as `open directory` or `fsync`.
        op: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The disk (or the quota) is full. The write failed before anything it carried was
    /// acknowledged; the directory stays online, reads go on, and writes succeed again once
    /// space is freed (Kafka's KAFKA_STORAGE_ERROR to the producer).
    #[error("{op} {}: no space left: {source}", path.display())]
    NoSpace {
        /// What was being done, such as `open directory` or `fsync`.
        op: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The process ran out of something that is not the disk's: file descriptors
    /// (EMFILE, ENFILE) or memory and memory maps (ENOMEM). Nothing is wrong with the
    /// directory; the operation may succeed once the process holds less.
    #[error("{op} {}: out of resources: {source}", path.display())]
    OutOfResources {
        /// What was being done, such as `open directory` or `fsync`.
        op: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A file's bytes are not what its format requires.
    #[error("corrupt {} at byte {position}: {reason}", path.display())]
    Corrupt {
        /// The file the damage is in.
        path: PathBuf,
        /// The byte position in the file where the damage starts.
        position: u64,
        /// What is wrong with the bytes there.
        reason: String,
    },
    /// The active segment is damaged before the end of its data, and no recovery cut it (the
    /// last stop was clean): where the log ends is not known, so it takes no appends (Kafka's
    /// KAFKA_STORAGE_ERROR to the producer) until `ferrolog recover --force` cuts the damage.
    #[error(
        "{} is damaged at byte {position} ({reason}), before the end of its data: the log's end is not known past it, so appends are refused until `ferrolog recover --force` cuts the damage; reads below it are served", path.display()
    )]
    DamagedEnd {
        /// The active segment's `.log` file.
        path: PathBuf,
        /// The byte position in the file where the damage starts.
        position: u64,
        /// What is wrong with the bytes there.
        reason: String,
    },
    /// A fetch, truncation or log-start change names an offset outside the log.
    #[error("offset {offset} is out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        /// The offset asked for.
        offset: i64,
        /// The log start offset at the time.
        log_start_offset: i64,
        /// The log end offset at the time.
        log_end_offset: i64,
    },
    /// A batch is larger than `max.message.bytes` (Kafka's MESSAGE_TOO_LARGE).
    #[error(
        "batch {batch_index} is {size} bytes, larger than max.message.bytes={max_message_bytes}"
    )]
    RecordTooLarge {
        /// The batch's position in the append, counting from 0.
        batch_index: usize,
        /// The batch's size in bytes, as sent or as recompressed to the topic's codec.
        size: usize,
        /// The topic's `max.message.bytes`.
        max_message_bytes: usize,
    },
    /// The compressed batches of an append decompress to more than the broker takes: the
    /// topic's `max.message.bytes`, or 1 MiB if that is smaller (Kafka's MESSAGE_TOO_LARGE, on
    /// which the Java producer splits the batch and sends it again).
    #[error(
        "batch {batch_index} takes the append's records past {limit} bytes decompressed (max.message.bytes, at least 1 MiB)"
    )]
    DecompressedTooLarge {
        /// The position in the append, counting from 0, of the batch that passed the limit.
        batch_index: usize,
        /// The most the append's records may decompress to, in bytes.
        limit: usize,
    },
    /// The whole append is larger than `segment.bytes` (Kafka's RECORD_LIST_TOO_LARGE).
    #[error("append of {size} bytes is larger than segment.bytes={segment_bytes}")]
    RecordBatchTooLarge {
        /// The append's size in bytes.
        size: usize,
        /// The topic's `segment.bytes`.
        segment_bytes: u64,
    },
    /// A batch fails its checksum or does not parse (Kafka's CORRUPT_MESSAGE).
    #[error("batch {batch_index} is corrupt: {source}")]
    CorruptRecord {
        /// The batch's position in the append, counting from 0.
        batch_index: usize,
        /// Why the batch does not check or parse.
        #[source]
        source: RecordsError,
    },
    /// A batch or record breaks a rule of the log (Kafka's INVALID_RECORD).
    #[error("batch {batch_index}{}: {reason}", record_index.map(|i| format!(", record {i}")).unwrap_or_default())]
    InvalidRecord {
        /// The batch's position in the append, counting from 0.
        batch_index: usize,
        /// The record's position in the batch, counting from 0; `None` when the rule concerns the
        /// whole batch.
        record_index: Option<usize>,
        /// The rule broken.
        reason: String,
    },
    /// A record timestamp lies outside the allowed window (Kafka's INVALID_TIMESTAMP).
    #[error(
        "batch {batch_index}, record {record_index}: timestamp {timestamp} is outside [{lower}, {upper}]"
    )]
    InvalidTimestamp {
        /// The batch's position in the append, counting from 0.
        batch_index: usize,
        /// The record's position in the batch, counting from 0.
        record_index: usize,
        /// The record's timestamp, in milliseconds since the Unix epoch.
        timestamp: i64,
        /// The earliest timestamp allowed: now less `message.timestamp.before.max.ms`.
        lower: i64,
        /// The latest timestamp allowed: now plus `message.timestamp.after.max.ms`.
        upper: i64,
    },
    /// Follower batches whose offsets do not increase.
    #[error("offsets out of order: {0}")]
    OffsetsOutOfOrder(String),
    /// A follower append that starts below the log end offset.
    #[error("append starts at offset {first_offset}, below the log end offset {log_end_offset}")]
    UnexpectedAppendOffset {
        /// The base offset of the append's first batch.
        first_offset: i64,
        /// The log end offset at the time.
        log_end_offset: i64,
    },
    /// An index append that would break the index's ordering, or a full index.
    #[error("index {}: {reason}", path.display())]
    InvalidIndexAppend {
        /// The index file.
        path: PathBuf,
        /// Why the entry was refused.
        reason: String,
    },
    /// A roll to a base offset where a segment holding data already starts (Kafka refuses it
    /// the same way: the log would hold two segments with one base).
    #[error("cannot roll to offset {base_offset}: {} already holds data from there", path.display())]
    SegmentExists {
        /// The `.log` of the segment already there.
        path: PathBuf,
        /// The base offset the roll asked for.
        base_offset: i64,
    },
    /// An offset that cannot be stored relative to its segment's base offset in 32 bits.
    #[error("offset {offset} does not fit a segment based at {base_offset}")]
    OffsetOverflow {
        /// The offset that does not fit.
        offset: i64,
        /// The segment's base offset.
        base_offset: i64,
    },
    /// A configuration value is invalid; `key` is Kafka's name for it.
    #[error("invalid value {value:?} for config {key}: {reason}")]
    InvalidConfig {
        /// Kafka's name for the setting, such as `segment.bytes`.
        key: String,
        /// The value given, as text.
        value: String,
        /// Why the value is refused.
        reason: String,
    },
    /// A directory name that is not `topic-partition` (or one of its suffixed forms).
    #[error("{} is not in the form topic-partition or topic-partition.uniqueId-delete: {reason}", path.display())]
    InvalidPartitionDir {
        /// The directory.
        path: PathBuf,
        /// What is wrong with its name.
        reason: String,
    },
    /// The log was closed, so it takes no more requests.
    #[error("log {0} is closed")]
    LogClosed(String),
    /// Work given up on purpose, having changed nothing: a cleaning pass aborted, or overtaken
    /// by a change of the log it was cleaning.
    #[error("{0}")]
    Dropped(String),
    /// The data directory failed earlier and is offline (Kafka's KAFKA_STORAGE_ERROR).
    #[error("data directory {} is offline", dir.display())]
    LogDirOffline {
        /// The offline data directory.
        dir: PathBuf,
    },
    /// A text file (checkpoint, properties) does not parse.
    #[error("{}, line {line}: {reason}", path.display())]
    MalformedFile {
        /// The file.
        path: PathBuf,
        /// The line the problem is on, counting from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// An idempotent producer's batch does not follow its last one (Kafka's
    /// OUT_OF_ORDER_SEQUENCE_NUMBER).
    #[error("producer {producer_id}: sequence {received} where {expected} was expected")]
    OutOfOrderSequence {
        /// The producer's id.
        producer_id: i64,
        /// The base sequence that follows the producer's last batch (0 in a new epoch).
        expected: i32,
        /// The batch's base sequence.
        received: i32,
    },
    /// A batch from an older epoch of its producer: a newer instance has taken over (Kafka's
    /// INVALID_PRODUCER_EPOCH).
    #[error("producer {producer_id}: epoch {epoch} is older than the current epoch {current}")]
    InvalidProducerEpoch {
        /// The producer's id.
        producer_id: i64,
        /// The batch's producer epoch.
        epoch: ProducerEpoch,
        /// The producer's newest epoch seen so far.
        current: ProducerEpoch,
    },
    /// A batch at odds with the producer's transaction in this partition: a plain batch while
    /// its transaction is open (Kafka's INVALID_TXN_STATE).
    #[error("producer {producer_id}: {reason}")]
    InvalidTxnState {
        /// The producer's id.
        producer_id: i64,
        /// What does not fit.
        reason: String,
    },
    /// A transaction marker from a coordinator older than one the producer already heard from
    /// (Kafka's TRANSACTION_COORDINATOR_FENCED).
    #[error(
        "producer {producer_id}: a marker of coordinator epoch {marker} after one of epoch {current}"
    )]
    CoordinatorFenced {
        /// The producer's id.
        producer_id: i64,
        /// The marker's coordinator epoch.
        marker: CoordinatorEpoch,
        /// The newest coordinator epoch the producer's markers carried.
        current: CoordinatorEpoch,
    },
    /// The transaction coordinator did not confirm that a transactional batch belongs to an
    /// ongoing transaction of its producer that includes this partition; the verifier's own
    /// answer, in its Kafka error code, is passed back to the producer as it is.
    #[error("producer {producer_id} at epoch {epoch}: {reason}")]
    TxnNotVerified {
        /// The producer's id.
        producer_id: i64,
        /// The batch's producer epoch.
        epoch: ProducerEpoch,
        /// The Kafka error code the verifier answered.
        error_code: i16,
        /// What the verifier found.
        reason: String,
    },
    /// The partition does not exist on this node (or its directory is offline and it was never
    /// loaded).
    #[error("partition {topic_partition} does not exist here")]
    UnknownTopicOrPartition {
        /// The partition asked for.
        topic_partition: crate::types::TopicPartition,
    },
    /// Creating these partitions would take the node past `ferrolog.max.partitions`.
    #[error(
        "this node holds {held} partitions and ferrolog.max.partitions is {limit}: {requested} more cannot be created"
    )]
    PartitionLimit {
        /// Partition logs the node holds now.
        held: usize,
        /// Partitions the request would create.
        requested: usize,
        /// `ferrolog.max.partitions`.
        limit: usize,
    },
    /// A data directory asked for by path that is not one of `log.dirs` (Kafka's
    /// LOG_DIR_NOT_FOUND).
    #[error("{} is not one of this node's log.dirs", path.display())]
    UnknownLogDir {
        /// The path asked for.
        path: PathBuf,
    },
    /// Startup or an operation cannot go on; the message says why and what to do.
    #[error("{0}")]
    Fatal(String),
}

impl StorageError {
    /// Wraps an I/O error with the operation and the file it concerned, telling a full disk
    /// and an exhausted process apart from a failing file system.
    pub fn io(op: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| match source.raw_os_error() {
            Some(libc::ENOSPC | libc::EDQUOT) => Self::NoSpace { op, path, source },
            Some(libc::EMFILE | libc::ENFILE | libc::ENOMEM) => {
                Self::OutOfResources { op, path, source }
            }
            _ => Self::Io { op, path, source },
        }
    }

    /// Wraps a failed fsync, fdatasync or msync. Whatever its cause (ENOSPC and EIO included),
    /// the kernel may have dropped the dirty pages it could not write, so the data is not known
    /// to be anywhere: the directory goes offline, and the sync is never retried.
    pub fn sync(op: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { op, path, source }
    }

    /// True when the error comes from the file system rather than from the caller's input.
    pub fn is_storage_failure(&self) -> bool {
        matches!(self, Self::Io { .. })
    }
}
