//! The request schemas of the APIs and versions the broker serves, transcribed from Kafka's
//! message definitions (`clients/src/main/resources/common/message/*Request.json`): for each
//! field, its kind and the versions it is present, nullable and tagged in, restricted to the
//! served versions. A test checks every served version against the codec: frames built from
//! these schemas decode completely and encode back to the same bytes.

use super::{Field, Kind, MAX, Message, v};

/// ProduceRequest v3–12.
pub(super) const PRODUCE: Message = Message {
    api_key: 0,
    fields: &[
        Field::new("TransactionalId", Kind::String, v(3, MAX)).nullable(v(3, MAX)),
        Field::new("Acks", Kind::Int16, v(0, MAX)),
        Field::new("TimeoutMs", Kind::Int32, v(0, MAX)),
        Field::new(
            "TopicData",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, MAX)),
                Field::new(
                    "PartitionData",
                    Kind::Array(&[
                        Field::new("Index", Kind::Int32, v(0, MAX)),
                        Field::new("Records", Kind::Records, v(0, MAX)).nullable(v(0, MAX)),
                    ]),
                    v(0, MAX),
                ),
            ]),
            v(0, MAX),
        ),
    ],
};

/// FetchRequest v4–12.
pub(super) const FETCH: Message = Message {
    api_key: 1,
    fields: &[
        Field::new("ClusterId", Kind::String, v(12, MAX))
            .nullable(v(12, MAX))
            .tagged(0, v(12, MAX)),
        Field::new("ReplicaId", Kind::Int32, v(0, 14)),
        Field::new("MaxWaitMs", Kind::Int32, v(0, MAX)),
        Field::new("MinBytes", Kind::Int32, v(0, MAX)),
        Field::new("MaxBytes", Kind::Int32, v(3, MAX)),
        Field::new("IsolationLevel", Kind::Int8, v(4, MAX)),
        Field::new("SessionId", Kind::Int32, v(7, MAX)),
        Field::new("SessionEpoch", Kind::Int32, v(7, MAX)),
        Field::new(
            "Topics",
            Kind::Array(&[
                Field::new("Topic", Kind::String, v(0, 12)),
                Field::new(
                    "Partitions",
                    Kind::Array(&[
                        Field::new("Partition", Kind::Int32, v(0, MAX)),
                        Field::new("CurrentLeaderEpoch", Kind::Int32, v(9, MAX)),
                        Field::new("FetchOffset", Kind::Int64, v(0, MAX)),
                        Field::new("LastFetchedEpoch", Kind::Int32, v(12, MAX)),
                        Field::new("LogStartOffset", Kind::Int64, v(5, MAX)),
                        Field::new("PartitionMaxBytes", Kind::Int32, v(0, MAX)),
                    ]),
                    v(0, MAX),
                ),
            ]),
            v(0, MAX),
        ),
        Field::new(
            "ForgottenTopicsData",
            Kind::Array(&[
                Field::new("Topic", Kind::String, v(7, 12)),
                Field::new("Partitions", Kind::PrimitiveArray(&Kind::Int32), v(7, MAX)),
            ]),
            v(7, MAX),
        ),
        Field::new("RackId", Kind::String, v(11, MAX)),
    ],
};

/// ListOffsetsRequest v1–7.
pub(super) const LIST_OFFSETS: Message = Message {
    api_key: 2,
    fields: &[
        Field::new("ReplicaId", Kind::Int32, v(0, MAX)),
        Field::new("IsolationLevel", Kind::Int8, v(2, MAX)),
        Field::new(
            "Topics",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, MAX)),
                Field::new(
                    "Partitions",
                    Kind::Array(&[
                        Field::new("PartitionIndex", Kind::Int32, v(0, MAX)),
                        Field::new("CurrentLeaderEpoch", Kind::Int32, v(4, MAX)),
                        Field::new("Timestamp", Kind::Int64, v(0, MAX)),
                    ]),
                    v(0, MAX),
                ),
            ]),
            v(0, MAX),
        ),
    ],
};

/// MetadataRequest v0–12.
pub(super) const METADATA: Message = Message {
    api_key: 3,
    fields: &[
        Field::new(
            "Topics",
            Kind::Array(&[
                Field::new("TopicId", Kind::Uuid, v(10, MAX)),
                Field::new("Name", Kind::String, v(0, MAX)).nullable(v(10, MAX)),
            ]),
            v(0, MAX),
        )
        .nullable(v(1, MAX)),
        Field::new("AllowAutoTopicCreation", Kind::Bool, v(4, MAX)),
        Field::new("IncludeClusterAuthorizedOperations", Kind::Bool, v(8, 10)),
        Field::new("IncludeTopicAuthorizedOperations", Kind::Bool, v(8, MAX)),
    ],
};

/// ApiVersionsRequest v0–4.
pub(super) const API_VERSIONS: Message = Message {
    api_key: 18,
    fields: &[
        Field::new("ClientSoftwareName", Kind::String, v(3, MAX)),
        Field::new("ClientSoftwareVersion", Kind::String, v(3, MAX)),
    ],
};

/// CreateTopicsRequest v2–5.
pub(super) const CREATE_TOPICS: Message = Message {
    api_key: 19,
    fields: &[
        Field::new(
            "Topics",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, MAX)),
                Field::new("NumPartitions", Kind::Int32, v(0, MAX)),
                Field::new("ReplicationFactor", Kind::Int16, v(0, MAX)),
                Field::new(
                    "Assignments",
                    Kind::Array(&[
                        Field::new("PartitionIndex", Kind::Int32, v(0, MAX)),
                        Field::new("BrokerIds", Kind::PrimitiveArray(&Kind::Int32), v(0, MAX)),
                    ]),
                    v(0, MAX),
                ),
                Field::new(
                    "Configs",
                    Kind::Array(&[
                        Field::new("Name", Kind::String, v(0, MAX)),
                        Field::new("Value", Kind::String, v(0, MAX)).nullable(v(0, MAX)),
                    ]),
                    v(0, MAX),
                ),
            ]),
            v(0, MAX),
        ),
        Field::new("timeoutMs", Kind::Int32, v(0, MAX)),
        Field::new("validateOnly", Kind::Bool, v(1, MAX)),
    ],
};

/// CreatePartitionsRequest v0–3.
pub(super) const CREATE_PARTITIONS: Message = Message {
    api_key: 37,
    fields: &[
        Field::new(
            "Topics",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, MAX)),
                Field::new("Count", Kind::Int32, v(0, MAX)),
                Field::new(
                    "Assignments",
                    Kind::Array(&[Field::new(
                        "BrokerIds",
                        Kind::PrimitiveArray(&Kind::Int32),
                        v(0, MAX),
                    )]),
                    v(0, MAX),
                )
                .nullable(v(0, MAX)),
            ]),
            v(0, MAX),
        ),
        Field::new("TimeoutMs", Kind::Int32, v(0, MAX)),
        Field::new("ValidateOnly", Kind::Bool, v(0, MAX)),
    ],
};

/// DescribeConfigsRequest v1–4.
pub(super) const DESCRIBE_CONFIGS: Message = Message {
    api_key: 32,
    fields: &[
        Field::new(
            "Resources",
            Kind::Array(&[
                Field::new("ResourceType", Kind::Int8, v(0, MAX)),
                Field::new("ResourceName", Kind::String, v(0, MAX)),
                Field::new(
                    "ConfigurationKeys",
                    Kind::PrimitiveArray(&Kind::String),
                    v(0, MAX),
                )
                .nullable(v(0, MAX)),
            ]),
            v(0, MAX),
        ),
        Field::new("IncludeSynonyms", Kind::Bool, v(1, MAX)),
        Field::new("IncludeDocumentation", Kind::Bool, v(3, MAX)),
    ],
};

/// AlterConfigsRequest v0–2.
pub(super) const ALTER_CONFIGS: Message = Message {
    api_key: 33,
    fields: &[
        Field::new(
            "Resources",
            Kind::Array(&[
                Field::new("ResourceType", Kind::Int8, v(0, MAX)),
                Field::new("ResourceName", Kind::String, v(0, MAX)),
                Field::new(
                    "Configs",
                    Kind::Array(&[
                        Field::new("Name", Kind::String, v(0, MAX)),
                        Field::new("Value", Kind::String, v(0, MAX)).nullable(v(0, MAX)),
                    ]),
                    v(0, MAX),
                ),
            ]),
            v(0, MAX),
        ),
        Field::new("ValidateOnly", Kind::Bool, v(0, MAX)),
    ],
};

/// IncrementalAlterConfigsRequest v0–1.
pub(super) const INCREMENTAL_ALTER_CONFIGS: Message = Message {
    api_key: 44,
    fields: &[
        Field::new(
            "Resources",
            Kind::Array(&[
                Field::new("ResourceType", Kind::Int8, v(0, MAX)),
                Field::new("ResourceName", Kind::String, v(0, MAX)),
                Field::new(
                    "Configs",
                    Kind::Array(&[
                        Field::new("Name", Kind::String, v(0, MAX)),
                        Field::new("ConfigOperation", Kind::Int8, v(0, MAX)),
                        Field::new("Value", Kind::String, v(0, MAX)).nullable(v(0, MAX)),
                    ]),
                    v(0, MAX),
                ),
            ]),
            v(0, MAX),
        ),
        Field::new("ValidateOnly", Kind::Bool, v(0, MAX)),
    ],
};

/// DescribeClusterRequest v0–1.
pub(super) const DESCRIBE_CLUSTER: Message = Message {
    api_key: 60,
    fields: &[
        Field::new("IncludeClusterAuthorizedOperations", Kind::Bool, v(0, MAX)),
        Field::new("EndpointType", Kind::Int8, v(1, MAX)),
    ],
};

/// AlterReplicaLogDirsRequest v1–2.
pub(super) const ALTER_REPLICA_LOG_DIRS: Message = Message {
    api_key: 34,
    fields: &[Field::new(
        "Dirs",
        Kind::Array(&[
            Field::new("Path", Kind::String, v(0, MAX)),
            Field::new(
                "Topics",
                Kind::Array(&[
                    Field::new("Name", Kind::String, v(0, MAX)),
                    Field::new("Partitions", Kind::PrimitiveArray(&Kind::Int32), v(0, MAX)),
                ]),
                v(0, MAX),
            ),
        ]),
        v(0, MAX),
    )],
};

/// AlterPartitionReassignmentsRequest v0–1.
pub(super) const ALTER_PARTITION_REASSIGNMENTS: Message = Message {
    api_key: 45,
    fields: &[
        Field::new("TimeoutMs", Kind::Int32, v(0, MAX)),
        Field::new("AllowReplicationFactorChange", Kind::Bool, v(1, MAX)),
        Field::new(
            "Topics",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, MAX)),
                Field::new(
                    "Partitions",
                    Kind::Array(&[
                        Field::new("PartitionIndex", Kind::Int32, v(0, MAX)),
                        Field::new("Replicas", Kind::PrimitiveArray(&Kind::Int32), v(0, MAX))
                            .nullable(v(0, MAX)),
                    ]),
                    v(0, MAX),
                ),
            ]),
            v(0, MAX),
        ),
    ],
};

/// ListPartitionReassignmentsRequest v0.
pub(super) const LIST_PARTITION_REASSIGNMENTS: Message = Message {
    api_key: 46,
    fields: &[
        Field::new("TimeoutMs", Kind::Int32, v(0, MAX)),
        Field::new(
            "Topics",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, MAX)),
                Field::new(
                    "PartitionIndexes",
                    Kind::PrimitiveArray(&Kind::Int32),
                    v(0, MAX),
                ),
            ]),
            v(0, MAX),
        )
        .nullable(v(0, MAX)),
    ],
};

/// DescribeLogDirsRequest v1–4.
pub(super) const DESCRIBE_LOG_DIRS: Message = Message {
    api_key: 35,
    fields: &[Field::new(
        "Topics",
        Kind::Array(&[
            Field::new("Topic", Kind::String, v(0, MAX)),
            Field::new("Partitions", Kind::PrimitiveArray(&Kind::Int32), v(0, MAX)),
        ]),
        v(0, MAX),
    )
    .nullable(v(0, MAX))],
};

/// DeleteTopicsRequest v1–5.
pub(super) const DELETE_TOPICS: Message = Message {
    api_key: 20,
    fields: &[
        Field::new("TopicNames", Kind::PrimitiveArray(&Kind::String), v(0, 5)),
        Field::new("TimeoutMs", Kind::Int32, v(0, MAX)),
    ],
};

/// DeleteRecordsRequest v0–2.
pub(super) const DELETE_RECORDS: Message = Message {
    api_key: 21,
    fields: &[
        Field::new(
            "Topics",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, MAX)),
                Field::new(
                    "Partitions",
                    Kind::Array(&[
                        Field::new("PartitionIndex", Kind::Int32, v(0, MAX)),
                        Field::new("Offset", Kind::Int64, v(0, MAX)),
                    ]),
                    v(0, MAX),
                ),
            ]),
            v(0, MAX),
        ),
        Field::new("TimeoutMs", Kind::Int32, v(0, MAX)),
    ],
};

/// InitProducerIdRequest v0–5.
pub(super) const INIT_PRODUCER_ID: Message = Message {
    api_key: 22,
    fields: &[
        Field::new("TransactionalId", Kind::String, v(0, MAX)).nullable(v(0, MAX)),
        Field::new("TransactionTimeoutMs", Kind::Int32, v(0, MAX)),
        Field::new("ProducerId", Kind::Int64, v(3, MAX)),
        Field::new("ProducerEpoch", Kind::Int16, v(3, MAX)),
    ],
};

/// FindCoordinatorRequest v0–4.
pub(super) const FIND_COORDINATOR: Message = Message {
    api_key: 10,
    fields: &[
        Field::new("Key", Kind::String, v(0, 3)),
        Field::new("KeyType", Kind::Int8, v(1, MAX)),
        Field::new(
            "CoordinatorKeys",
            Kind::PrimitiveArray(&Kind::String),
            v(4, MAX),
        ),
    ],
};

/// JoinGroupRequest v0–9.
pub(super) const JOIN_GROUP: Message = Message {
    api_key: 11,
    fields: &[
        Field::new("GroupId", Kind::String, v(0, MAX)),
        Field::new("SessionTimeoutMs", Kind::Int32, v(0, MAX)),
        Field::new("RebalanceTimeoutMs", Kind::Int32, v(1, MAX)),
        Field::new("MemberId", Kind::String, v(0, MAX)),
        Field::new("GroupInstanceId", Kind::String, v(5, MAX)).nullable(v(5, MAX)),
        Field::new("ProtocolType", Kind::String, v(0, MAX)),
        Field::new(
            "Protocols",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, MAX)),
                Field::new("Metadata", Kind::Bytes, v(0, MAX)),
            ]),
            v(0, MAX),
        ),
        Field::new("Reason", Kind::String, v(8, MAX)).nullable(v(8, MAX)),
    ],
};

/// SyncGroupRequest v0–5.
pub(super) const SYNC_GROUP: Message = Message {
    api_key: 14,
    fields: &[
        Field::new("GroupId", Kind::String, v(0, MAX)),
        Field::new("GenerationId", Kind::Int32, v(0, MAX)),
        Field::new("MemberId", Kind::String, v(0, MAX)),
        Field::new("GroupInstanceId", Kind::String, v(3, MAX)).nullable(v(3, MAX)),
        Field::new("ProtocolType", Kind::String, v(5, MAX)).nullable(v(5, MAX)),
        Field::new("ProtocolName", Kind::String, v(5, MAX)).nullable(v(5, MAX)),
        Field::new(
            "Assignments",
            Kind::Array(&[
                Field::new("MemberId", Kind::String, v(0, MAX)),
                Field::new("Assignment", Kind::Bytes, v(0, MAX)),
            ]),
            v(0, MAX),
        ),
    ],
};

/// HeartbeatRequest v0–4.
pub(super) const HEARTBEAT: Message = Message {
    api_key: 12,
    fields: &[
        Field::new("GroupId", Kind::String, v(0, MAX)),
        Field::new("GenerationId", Kind::Int32, v(0, MAX)),
        Field::new("MemberId", Kind::String, v(0, MAX)),
        Field::new("GroupInstanceId", Kind::String, v(3, MAX)).nullable(v(3, MAX)),
    ],
};

/// LeaveGroupRequest v0–5.
pub(super) const LEAVE_GROUP: Message = Message {
    api_key: 13,
    fields: &[
        Field::new("GroupId", Kind::String, v(0, MAX)),
        Field::new("MemberId", Kind::String, v(0, 2)),
        Field::new(
            "Members",
            Kind::Array(&[
                Field::new("MemberId", Kind::String, v(3, MAX)),
                Field::new("GroupInstanceId", Kind::String, v(3, MAX)).nullable(v(3, MAX)),
                Field::new("Reason", Kind::String, v(5, MAX)).nullable(v(5, MAX)),
            ]),
            v(3, MAX),
        ),
    ],
};

/// OffsetCommitRequest v2–8.
pub(super) const OFFSET_COMMIT: Message = Message {
    api_key: 8,
    fields: &[
        Field::new("GroupId", Kind::String, v(0, MAX)),
        Field::new("GenerationIdOrMemberEpoch", Kind::Int32, v(1, MAX)),
        Field::new("MemberId", Kind::String, v(1, MAX)),
        Field::new("GroupInstanceId", Kind::String, v(7, MAX)).nullable(v(7, MAX)),
        Field::new("RetentionTimeMs", Kind::Int64, v(2, 4)),
        Field::new(
            "Topics",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, MAX)),
                Field::new(
                    "Partitions",
                    Kind::Array(&[
                        Field::new("PartitionIndex", Kind::Int32, v(0, MAX)),
                        Field::new("CommittedOffset", Kind::Int64, v(0, MAX)),
                        Field::new("CommittedLeaderEpoch", Kind::Int32, v(6, MAX)),
                        Field::new("CommittedMetadata", Kind::String, v(0, MAX))
                            .nullable(v(0, MAX)),
                    ]),
                    v(0, MAX),
                ),
            ]),
            v(0, MAX),
        ),
    ],
};

/// OffsetFetchRequest v1–8.
pub(super) const OFFSET_FETCH: Message = Message {
    api_key: 9,
    fields: &[
        Field::new("GroupId", Kind::String, v(0, 7)),
        Field::new(
            "Topics",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, 7)),
                Field::new(
                    "PartitionIndexes",
                    Kind::PrimitiveArray(&Kind::Int32),
                    v(0, 7),
                ),
            ]),
            v(0, 7),
        )
        .nullable(v(2, 7)),
        Field::new(
            "Groups",
            Kind::Array(&[
                Field::new("GroupId", Kind::String, v(8, MAX)),
                Field::new(
                    "Topics",
                    Kind::Array(&[
                        Field::new("Name", Kind::String, v(8, MAX)),
                        Field::new(
                            "PartitionIndexes",
                            Kind::PrimitiveArray(&Kind::Int32),
                            v(8, MAX),
                        ),
                    ]),
                    v(8, MAX),
                )
                .nullable(v(8, MAX)),
            ]),
            v(8, MAX),
        ),
        Field::new("RequireStable", Kind::Bool, v(7, MAX)),
    ],
};

/// ListGroupsRequest v0–4.
pub(super) const LIST_GROUPS: Message = Message {
    api_key: 16,
    fields: &[Field::new(
        "StatesFilter",
        Kind::PrimitiveArray(&Kind::String),
        v(4, MAX),
    )],
};

/// DescribeGroupsRequest v0–5.
pub(super) const DESCRIBE_GROUPS: Message = Message {
    api_key: 15,
    fields: &[
        Field::new("Groups", Kind::PrimitiveArray(&Kind::String), v(0, MAX)),
        Field::new("IncludeAuthorizedOperations", Kind::Bool, v(3, MAX)),
    ],
};

/// DeleteGroupsRequest v0–2.
pub(super) const DELETE_GROUPS: Message = Message {
    api_key: 42,
    fields: &[Field::new(
        "GroupsNames",
        Kind::PrimitiveArray(&Kind::String),
        v(0, MAX),
    )],
};

/// OffsetDeleteRequest v0–0.
pub(super) const OFFSET_DELETE: Message = Message {
    api_key: 47,
    fields: &[
        Field::new("GroupId", Kind::String, v(0, MAX)),
        Field::new(
            "Topics",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, MAX)),
                Field::new(
                    "Partitions",
                    Kind::Array(&[Field::new("PartitionIndex", Kind::Int32, v(0, MAX))]),
                    v(0, MAX),
                ),
            ]),
            v(0, MAX),
        ),
    ],
};

/// Every message above.
/// DescribeTopicPartitionsRequest v0.
pub(super) const DESCRIBE_TOPIC_PARTITIONS: Message = Message {
    api_key: 75,
    fields: &[
        Field::new(
            "Topics",
            Kind::Array(&[Field::new("Name", Kind::String, v(0, MAX))]),
            v(0, MAX),
        ),
        Field::new("ResponsePartitionLimit", Kind::Int32, v(0, MAX)),
        Field::new(
            "Cursor",
            Kind::NullableStruct(&[
                Field::new("TopicName", Kind::String, v(0, MAX)),
                Field::new("PartitionIndex", Kind::Int32, v(0, MAX)),
            ]),
            v(0, MAX),
        )
        .nullable(v(0, MAX)),
    ],
};

/// DescribeProducersRequest v0.
pub(super) const DESCRIBE_PRODUCERS: Message = Message {
    api_key: 61,
    fields: &[Field::new(
        "Topics",
        Kind::Array(&[
            Field::new("Name", Kind::String, v(0, MAX)),
            Field::new(
                "PartitionIndexes",
                Kind::PrimitiveArray(&Kind::Int32),
                v(0, MAX),
            ),
        ]),
        v(0, MAX),
    )],
};

/// AddPartitionsToTxnRequest v0–3 (the client's form).
pub(super) const ADD_PARTITIONS_TO_TXN: Message = Message {
    api_key: 24,
    fields: &[
        Field::new("V3AndBelowTransactionalId", Kind::String, v(0, 3)),
        Field::new("V3AndBelowProducerId", Kind::Int64, v(0, 3)),
        Field::new("V3AndBelowProducerEpoch", Kind::Int16, v(0, 3)),
        Field::new(
            "V3AndBelowTopics",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, MAX)),
                Field::new("Partitions", Kind::PrimitiveArray(&Kind::Int32), v(0, MAX)),
            ]),
            v(0, 3),
        ),
    ],
};

/// AddOffsetsToTxnRequest v0–4.
pub(super) const ADD_OFFSETS_TO_TXN: Message = Message {
    api_key: 25,
    fields: &[
        Field::new("TransactionalId", Kind::String, v(0, MAX)),
        Field::new("ProducerId", Kind::Int64, v(0, MAX)),
        Field::new("ProducerEpoch", Kind::Int16, v(0, MAX)),
        Field::new("GroupId", Kind::String, v(0, MAX)),
    ],
};

/// EndTxnRequest v0–5.
pub(super) const END_TXN: Message = Message {
    api_key: 26,
    fields: &[
        Field::new("TransactionalId", Kind::String, v(0, MAX)),
        Field::new("ProducerId", Kind::Int64, v(0, MAX)),
        Field::new("ProducerEpoch", Kind::Int16, v(0, MAX)),
        Field::new("Committed", Kind::Bool, v(0, MAX)),
    ],
};

/// TxnOffsetCommitRequest v0–5.
pub(super) const TXN_OFFSET_COMMIT: Message = Message {
    api_key: 28,
    fields: &[
        Field::new("TransactionalId", Kind::String, v(0, MAX)),
        Field::new("GroupId", Kind::String, v(0, MAX)),
        Field::new("ProducerId", Kind::Int64, v(0, MAX)),
        Field::new("ProducerEpoch", Kind::Int16, v(0, MAX)),
        Field::new("GenerationId", Kind::Int32, v(3, MAX)),
        Field::new("MemberId", Kind::String, v(3, MAX)),
        Field::new("GroupInstanceId", Kind::String, v(3, MAX)).nullable(v(3, MAX)),
        Field::new(
            "Topics",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, MAX)),
                Field::new(
                    "Partitions",
                    Kind::Array(&[
                        Field::new("PartitionIndex", Kind::Int32, v(0, MAX)),
                        Field::new("CommittedOffset", Kind::Int64, v(0, MAX)),
                        Field::new("CommittedLeaderEpoch", Kind::Int32, v(2, MAX)),
                        Field::new("CommittedMetadata", Kind::String, v(0, MAX))
                            .nullable(v(0, MAX)),
                    ]),
                    v(0, MAX),
                ),
            ]),
            v(0, MAX),
        ),
    ],
};

/// DescribeTransactionsRequest v0.
pub(super) const DESCRIBE_TRANSACTIONS: Message = Message {
    api_key: 65,
    fields: &[Field::new(
        "TransactionalIds",
        Kind::PrimitiveArray(&Kind::String),
        v(0, MAX),
    )],
};

/// ListTransactionsRequest v0–2.
pub(super) const LIST_TRANSACTIONS: Message = Message {
    api_key: 66,
    fields: &[
        Field::new(
            "StateFilters",
            Kind::PrimitiveArray(&Kind::String),
            v(0, MAX),
        ),
        Field::new(
            "ProducerIdFilters",
            Kind::PrimitiveArray(&Kind::Int64),
            v(0, MAX),
        ),
        Field::new("DurationFilter", Kind::Int64, v(1, MAX)),
        Field::new("TransactionalIdPattern", Kind::String, v(2, MAX)).nullable(v(2, MAX)),
    ],
};

/// WriteTxnMarkersRequest v1.
pub(super) const WRITE_TXN_MARKERS: Message = Message {
    api_key: 27,
    fields: &[Field::new(
        "Markers",
        Kind::Array(&[
            Field::new("ProducerId", Kind::Int64, v(0, MAX)),
            Field::new("ProducerEpoch", Kind::Int16, v(0, MAX)),
            Field::new("TransactionResult", Kind::Bool, v(0, MAX)),
            Field::new(
                "Topics",
                Kind::Array(&[
                    Field::new("Name", Kind::String, v(0, MAX)),
                    Field::new(
                        "PartitionIndexes",
                        Kind::PrimitiveArray(&Kind::Int32),
                        v(0, MAX),
                    ),
                ]),
                v(0, MAX),
            ),
            Field::new("CoordinatorEpoch", Kind::Int32, v(0, MAX)),
        ]),
        v(0, MAX),
    )],
};

pub(super) const ALL: &[&Message] = &[
    &PRODUCE,
    &FETCH,
    &LIST_OFFSETS,
    &METADATA,
    &API_VERSIONS,
    &CREATE_TOPICS,
    &CREATE_PARTITIONS,
    &DESCRIBE_CONFIGS,
    &ALTER_CONFIGS,
    &INCREMENTAL_ALTER_CONFIGS,
    &DESCRIBE_CLUSTER,
    &DESCRIBE_LOG_DIRS,
    &ALTER_REPLICA_LOG_DIRS,
    &ALTER_PARTITION_REASSIGNMENTS,
    &LIST_PARTITION_REASSIGNMENTS,
    &DELETE_TOPICS,
    &DELETE_RECORDS,
    &INIT_PRODUCER_ID,
    &FIND_COORDINATOR,
    &JOIN_GROUP,
    &SYNC_GROUP,
    &HEARTBEAT,
    &LEAVE_GROUP,
    &OFFSET_COMMIT,
    &OFFSET_FETCH,
    &LIST_GROUPS,
    &DESCRIBE_GROUPS,
    &DELETE_GROUPS,
    &OFFSET_DELETE,
    &DESCRIBE_TOPIC_PARTITIONS,
    &super::acl_schemas::DESCRIBE_ACLS,
    &super::acl_schemas::CREATE_ACLS,
    &super::acl_schemas::DELETE_ACLS,
    &super::sasl_schemas::SASL_HANDSHAKE,
    &super::sasl_schemas::SASL_AUTHENTICATE,
    &super::sasl_schemas::DESCRIBE_USER_SCRAM_CREDENTIALS,
    &super::sasl_schemas::ALTER_USER_SCRAM_CREDENTIALS,
    &super::sasl_schemas::DESCRIBE_CLIENT_QUOTAS,
    &DESCRIBE_PRODUCERS,
    &ADD_PARTITIONS_TO_TXN,
    &ADD_OFFSETS_TO_TXN,
    &END_TXN,
    &TXN_OFFSET_COMMIT,
    &DESCRIBE_TRANSACTIONS,
    &LIST_TRANSACTIONS,
    &WRITE_TXN_MARKERS,
];
