//! Kafka error codes, and the code for each storage error.

use ferrolog_storage::StorageError;

pub const UNKNOWN_SERVER_ERROR: i16 = -1;
pub const NONE: i16 = 0;
pub const OFFSET_OUT_OF_RANGE: i16 = 1;
pub const CORRUPT_MESSAGE: i16 = 2;
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
pub const LEADER_NOT_AVAILABLE: i16 = 5;
pub const MESSAGE_TOO_LARGE: i16 = 10;
pub const OFFSET_METADATA_TOO_LARGE: i16 = 12;
pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
pub const INVALID_TOPIC_EXCEPTION: i16 = 17;
pub const RECORD_LIST_TOO_LARGE: i16 = 18;
pub const ILLEGAL_GENERATION: i16 = 22;
pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
pub const INVALID_GROUP_ID: i16 = 24;
pub const UNKNOWN_MEMBER_ID: i16 = 25;
pub const INVALID_SESSION_TIMEOUT: i16 = 26;
pub const REBALANCE_IN_PROGRESS: i16 = 27;
pub const INVALID_TIMESTAMP: i16 = 32;
pub const UNSUPPORTED_VERSION: i16 = 35;
pub const TOPIC_ALREADY_EXISTS: i16 = 36;
pub const INVALID_PARTITIONS: i16 = 37;
pub const INVALID_REPLICATION_FACTOR: i16 = 38;
pub const INVALID_CONFIG: i16 = 40;
pub const INVALID_REQUEST: i16 = 42;
pub const POLICY_VIOLATION: i16 = 44;
pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
pub const INVALID_PRODUCER_EPOCH: i16 = 47;
pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
pub const KAFKA_STORAGE_ERROR: i16 = 56;
pub const NON_EMPTY_GROUP: i16 = 68;
pub const GROUP_ID_NOT_FOUND: i16 = 69;
pub const TOPIC_DELETION_DISABLED: i16 = 73;
pub const MEMBER_ID_REQUIRED: i16 = 79;
pub const FENCED_INSTANCE_ID: i16 = 82;
pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
pub const INVALID_RECORD: i16 = 87;
pub const UNKNOWN_TOPIC_ID: i16 = 100;

/// Kafka's name of an error code, for metrics and logs.
pub fn name_of(code: i16) -> &'static str {
    match code {
        NONE => "NONE",
        OFFSET_OUT_OF_RANGE => "OFFSET_OUT_OF_RANGE",
        CORRUPT_MESSAGE => "CORRUPT_MESSAGE",
        UNKNOWN_TOPIC_OR_PARTITION => "UNKNOWN_TOPIC_OR_PARTITION",
        LEADER_NOT_AVAILABLE => "LEADER_NOT_AVAILABLE",
        MESSAGE_TOO_LARGE => "MESSAGE_TOO_LARGE",
        OFFSET_METADATA_TOO_LARGE => "OFFSET_METADATA_TOO_LARGE",
        COORDINATOR_NOT_AVAILABLE => "COORDINATOR_NOT_AVAILABLE",
        INVALID_TOPIC_EXCEPTION => "INVALID_TOPIC_EXCEPTION",
        RECORD_LIST_TOO_LARGE => "RECORD_LIST_TOO_LARGE",
        ILLEGAL_GENERATION => "ILLEGAL_GENERATION",
        INCONSISTENT_GROUP_PROTOCOL => "INCONSISTENT_GROUP_PROTOCOL",
        INVALID_GROUP_ID => "INVALID_GROUP_ID",
        UNKNOWN_MEMBER_ID => "UNKNOWN_MEMBER_ID",
        INVALID_SESSION_TIMEOUT => "INVALID_SESSION_TIMEOUT",
        REBALANCE_IN_PROGRESS => "REBALANCE_IN_PROGRESS",
        INVALID_TIMESTAMP => "INVALID_TIMESTAMP",
        UNSUPPORTED_VERSION => "UNSUPPORTED_VERSION",
        TOPIC_ALREADY_EXISTS => "TOPIC_ALREADY_EXISTS",
        INVALID_PARTITIONS => "INVALID_PARTITIONS",
        INVALID_REPLICATION_FACTOR => "INVALID_REPLICATION_FACTOR",
        INVALID_CONFIG => "INVALID_CONFIG",
        INVALID_REQUEST => "INVALID_REQUEST",
        OUT_OF_ORDER_SEQUENCE_NUMBER => "OUT_OF_ORDER_SEQUENCE_NUMBER",
        INVALID_PRODUCER_EPOCH => "INVALID_PRODUCER_EPOCH",
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED => "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
        KAFKA_STORAGE_ERROR => "KAFKA_STORAGE_ERROR",
        NON_EMPTY_GROUP => "NON_EMPTY_GROUP",
        GROUP_ID_NOT_FOUND => "GROUP_ID_NOT_FOUND",
        MEMBER_ID_REQUIRED => "MEMBER_ID_REQUIRED",
        FENCED_INSTANCE_ID => "FENCED_INSTANCE_ID",
        GROUP_SUBSCRIBED_TO_TOPIC => "GROUP_SUBSCRIBED_TO_TOPIC",
        POLICY_VIOLATION => "POLICY_VIOLATION",
        TOPIC_DELETION_DISABLED => "TOPIC_DELETION_DISABLED",
        INVALID_RECORD => "INVALID_RECORD",
        UNKNOWN_TOPIC_ID => "UNKNOWN_TOPIC_ID",
        _ => "UNKNOWN_SERVER_ERROR",
    }
}

/// The error code a client understands for a storage error.
pub fn code_of(error: &StorageError) -> i16 {
    match error {
        StorageError::OffsetOutOfRange { .. } => OFFSET_OUT_OF_RANGE,
        StorageError::CorruptRecord { .. } | StorageError::Corrupt { .. } => CORRUPT_MESSAGE,
        StorageError::RecordTooLarge { .. } | StorageError::DecompressedTooLarge { .. } => {
            MESSAGE_TOO_LARGE
        }
        StorageError::RecordBatchTooLarge { .. } => RECORD_LIST_TOO_LARGE,
        StorageError::InvalidTimestamp { .. } => INVALID_TIMESTAMP,
        StorageError::InvalidRecord { .. } => INVALID_RECORD,
        StorageError::Io { .. }
        | StorageError::LogDirOffline { .. }
        | StorageError::NoSpace { .. }
        | StorageError::OutOfResources { .. }
        | StorageError::DamagedEnd { .. } => KAFKA_STORAGE_ERROR,
        StorageError::OutOfOrderSequence { .. } => OUT_OF_ORDER_SEQUENCE_NUMBER,
        StorageError::InvalidProducerEpoch { .. } => INVALID_PRODUCER_EPOCH,
        StorageError::PartitionLimit { .. } => POLICY_VIOLATION,
        _ => UNKNOWN_SERVER_ERROR,
    }
}

/// The most partitions one CreateTopics or CreatePartitions request may create, as in Kafka
/// (`MAX_PARTITIONS_PER_BATCH`).
pub const MAX_PARTITIONS_PER_REQUEST: i64 = 10_000;

/// Kafka's message when a request asks for more.
pub const TOO_MANY_PARTITIONS_PER_REQUEST: &str =
    "Excessively large number of partitions per request.";

/// Kafka's rule for topic names: 1 to 249 of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn is_valid_topic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}
