//! Kafka error codes, and the code for each storage error. The codes come from the protocol
//! crate's [`ResponseError`] (Kafka's `Errors`), named here as Kafka names them.

use ferrolog_storage::StorageError;
use kafka_protocol::error::ResponseError;

pub const NONE: i16 = 0;
pub const UNKNOWN_SERVER_ERROR: i16 = ResponseError::UnknownServerError.code();
pub const OFFSET_OUT_OF_RANGE: i16 = ResponseError::OffsetOutOfRange.code();
pub const CORRUPT_MESSAGE: i16 = ResponseError::CorruptMessage.code();
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = ResponseError::UnknownTopicOrPartition.code();
pub const LEADER_NOT_AVAILABLE: i16 = ResponseError::LeaderNotAvailable.code();
pub const MESSAGE_TOO_LARGE: i16 = ResponseError::MessageTooLarge.code();
pub const OFFSET_METADATA_TOO_LARGE: i16 = ResponseError::OffsetMetadataTooLarge.code();
pub const COORDINATOR_NOT_AVAILABLE: i16 = ResponseError::CoordinatorNotAvailable.code();
pub const INVALID_TOPIC_EXCEPTION: i16 = ResponseError::InvalidTopicException.code();
pub const RECORD_LIST_TOO_LARGE: i16 = ResponseError::RecordListTooLarge.code();
pub const ILLEGAL_GENERATION: i16 = ResponseError::IllegalGeneration.code();
pub const INCONSISTENT_GROUP_PROTOCOL: i16 = ResponseError::InconsistentGroupProtocol.code();
pub const INVALID_GROUP_ID: i16 = ResponseError::InvalidGroupId.code();
pub const UNKNOWN_MEMBER_ID: i16 = ResponseError::UnknownMemberId.code();
pub const INVALID_SESSION_TIMEOUT: i16 = ResponseError::InvalidSessionTimeout.code();
pub const REBALANCE_IN_PROGRESS: i16 = ResponseError::RebalanceInProgress.code();
pub const INVALID_TIMESTAMP: i16 = ResponseError::InvalidTimestamp.code();
pub const UNSUPPORTED_VERSION: i16 = ResponseError::UnsupportedVersion.code();
pub const TOPIC_ALREADY_EXISTS: i16 = ResponseError::TopicAlreadyExists.code();
pub const INVALID_PARTITIONS: i16 = ResponseError::InvalidPartitions.code();
pub const INVALID_REPLICATION_FACTOR: i16 = ResponseError::InvalidReplicationFactor.code();
pub const INVALID_CONFIG: i16 = ResponseError::InvalidConfig.code();
pub const INVALID_REQUEST: i16 = ResponseError::InvalidRequest.code();
pub const POLICY_VIOLATION: i16 = ResponseError::PolicyViolation.code();
pub const THROTTLING_QUOTA_EXCEEDED: i16 = ResponseError::ThrottlingQuotaExceeded.code();
pub const ELECTION_NOT_NEEDED: i16 = ResponseError::ElectionNotNeeded.code();
pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = ResponseError::OutOfOrderSequenceNumber.code();
pub const INVALID_PRODUCER_EPOCH: i16 = ResponseError::InvalidProducerEpoch.code();
pub const INVALID_TXN_STATE: i16 = ResponseError::InvalidTxnState.code();
pub const PRODUCER_FENCED: i16 = ResponseError::ProducerFenced.code();
pub const CONCURRENT_TRANSACTIONS: i16 = ResponseError::ConcurrentTransactions.code();
pub const INVALID_PRODUCER_ID_MAPPING: i16 = ResponseError::InvalidProducerIdMapping.code();
pub const INVALID_TRANSACTION_TIMEOUT: i16 = ResponseError::InvalidTransactionTimeout.code();
pub const TRANSACTION_ABORTABLE: i16 = ResponseError::TransactionAbortable.code();
pub const TRANSACTIONAL_ID_NOT_FOUND: i16 = ResponseError::TransactionalIdNotFound.code();
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = ResponseError::CoordinatorLoadInProgress.code();
pub const NOT_COORDINATOR: i16 = ResponseError::NotCoordinator.code();
pub const NOT_ENOUGH_REPLICAS: i16 = ResponseError::NotEnoughReplicas.code();
pub const OPERATION_NOT_ATTEMPTED: i16 = ResponseError::OperationNotAttempted.code();
pub const UNSTABLE_OFFSET_COMMIT: i16 = ResponseError::UnstableOffsetCommit.code();
pub const TRANSACTION_COORDINATOR_FENCED: i16 = ResponseError::TransactionCoordinatorFenced.code();
pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 =
    ResponseError::TransactionalIdAuthorizationFailed.code();
pub const KAFKA_STORAGE_ERROR: i16 = ResponseError::KafkaStorageError.code();
pub const NON_EMPTY_GROUP: i16 = ResponseError::NonEmptyGroup.code();
pub const GROUP_ID_NOT_FOUND: i16 = ResponseError::GroupIdNotFound.code();
pub const TOPIC_DELETION_DISABLED: i16 = ResponseError::TopicDeletionDisabled.code();
pub const MEMBER_ID_REQUIRED: i16 = ResponseError::MemberIdRequired.code();
pub const FENCED_INSTANCE_ID: i16 = ResponseError::FencedInstanceId.code();
pub const GROUP_MAX_SIZE_REACHED: i16 = ResponseError::GroupMaxSizeReached.code();
pub const FENCED_MEMBER_EPOCH: i16 = ResponseError::FencedMemberEpoch.code();
pub const UNRELEASED_INSTANCE_ID: i16 = ResponseError::UnreleasedInstanceId.code();
pub const UNSUPPORTED_ASSIGNOR: i16 = ResponseError::UnsupportedAssignor.code();
pub const STALE_MEMBER_EPOCH: i16 = ResponseError::StaleMemberEpoch.code();
pub const INVALID_REGULAR_EXPRESSION: i16 = ResponseError::InvalidRegularExpression.code();
pub const STREAMS_INVALID_TOPOLOGY: i16 = ResponseError::StreamsInvalidTopology.code();
pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = ResponseError::GroupSubscribedToTopic.code();
pub const INVALID_RECORD: i16 = ResponseError::InvalidRecord.code();
pub const UNSUPPORTED_COMPRESSION_TYPE: i16 = ResponseError::UnsupportedCompressionType.code();
pub const UNKNOWN_SUBSCRIPTION_ID: i16 = ResponseError::UnknownSubscriptionId.code();
pub const TELEMETRY_TOO_LARGE: i16 = ResponseError::TelemetryTooLarge.code();
pub const INVALID_REQUIRED_ACKS: i16 = ResponseError::InvalidRequiredAcks.code();
pub const UNKNOWN_TOPIC_ID: i16 = ResponseError::UnknownTopicId.code();
pub const TOPIC_AUTHORIZATION_FAILED: i16 = ResponseError::TopicAuthorizationFailed.code();
pub const GROUP_AUTHORIZATION_FAILED: i16 = ResponseError::GroupAuthorizationFailed.code();
pub const CLUSTER_AUTHORIZATION_FAILED: i16 = ResponseError::ClusterAuthorizationFailed.code();
/// Kafka's text for CLUSTER_AUTHORIZATION_FAILED, which some answers carry as their message.
pub const CLUSTER_REFUSED: &str = "Cluster authorization failed.";
pub const SECURITY_DISABLED: i16 = ResponseError::SecurityDisabled.code();
pub const ILLEGAL_SASL_STATE: i16 = ResponseError::IllegalSaslState.code();
pub const UNSUPPORTED_SASL_MECHANISM: i16 = ResponseError::UnsupportedSaslMechanism.code();
pub const RESOURCE_NOT_FOUND: i16 = ResponseError::ResourceNotFound.code();
pub const DUPLICATE_RESOURCE: i16 = ResponseError::DuplicateResource.code();
pub const UNACCEPTABLE_CREDENTIAL: i16 = ResponseError::UnacceptableCredential.code();
pub const INVALID_REPLICA_ASSIGNMENT: i16 = ResponseError::InvalidReplicaAssignment.code();
pub const LOG_DIR_NOT_FOUND: i16 = ResponseError::LogDirNotFound.code();
pub const NO_REASSIGNMENT_IN_PROGRESS: i16 = ResponseError::NoReassignmentInProgress.code();
pub const FENCED_LEADER_EPOCH: i16 = ResponseError::FencedLeaderEpoch.code();
pub const UNKNOWN_LEADER_EPOCH: i16 = ResponseError::UnknownLeaderEpoch.code();
pub const INVALID_UPDATE_VERSION: i16 = ResponseError::InvalidUpdateVersion.code();
pub const NOT_LEADER_OR_FOLLOWER: i16 = ResponseError::NotLeaderOrFollower.code();
pub const OFFSET_NOT_AVAILABLE: i16 = ResponseError::OffsetNotAvailable.code();
pub const INVALID_RECORD_STATE: i16 = ResponseError::InvalidRecordState.code();
pub const SHARE_SESSION_NOT_FOUND: i16 = ResponseError::ShareSessionNotFound.code();
pub const INVALID_SHARE_SESSION_EPOCH: i16 = ResponseError::InvalidShareSessionEpoch.code();
pub const FENCED_STATE_EPOCH: i16 = ResponseError::FencedStateEpoch.code();
pub const SHARE_SESSION_LIMIT_REACHED: i16 = ResponseError::ShareSessionLimitReached.code();

/// Kafka's name of an error code (`UNKNOWN_TOPIC_OR_PARTITION`), for metrics and logs.
pub fn name_of(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        None => "NONE".to_owned(),
        Some(ResponseError::Unknown(_)) => "UNKNOWN_SERVER_ERROR".to_owned(),
        Some(error) => screaming_snake_case(&format!("{error:?}")),
    }
}

/// `UnknownTopicOrPartition` → `UNKNOWN_TOPIC_OR_PARTITION`.
fn screaming_snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    for (index, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && index > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
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
        StorageError::InvalidTxnState { .. } => INVALID_TXN_STATE,
        StorageError::CoordinatorFenced { .. } => TRANSACTION_COORDINATOR_FENCED,
        StorageError::TxnNotVerified { error_code, .. } => *error_code,
        StorageError::UnknownTopicOrPartition { .. } => UNKNOWN_TOPIC_OR_PARTITION,
        StorageError::PartitionLimit { .. } => POLICY_VIOLATION,
        StorageError::UnknownLogDir { .. } => LOG_DIR_NOT_FOUND,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_kafkas_and_named_as_kafka_names_them() {
        assert_eq!(UNKNOWN_TOPIC_OR_PARTITION, 3);
        assert_eq!(KAFKA_STORAGE_ERROR, 56);
        assert_eq!(UNKNOWN_SERVER_ERROR, -1);
        for (code, name) in [
            (NONE, "NONE"),
            (UNKNOWN_SERVER_ERROR, "UNKNOWN_SERVER_ERROR"),
            (UNKNOWN_TOPIC_OR_PARTITION, "UNKNOWN_TOPIC_OR_PARTITION"),
            (INVALID_TOPIC_EXCEPTION, "INVALID_TOPIC_EXCEPTION"),
            (KAFKA_STORAGE_ERROR, "KAFKA_STORAGE_ERROR"),
            (OUT_OF_ORDER_SEQUENCE_NUMBER, "OUT_OF_ORDER_SEQUENCE_NUMBER"),
            (30_000, "UNKNOWN_SERVER_ERROR"),
        ] {
            assert_eq!(name_of(code), name, "code {code}");
        }
    }
}
