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

/// Every message the broker serves.
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
    &super::group_schemas::JOIN_GROUP,
    &super::group_schemas::SYNC_GROUP,
    &super::group_schemas::HEARTBEAT,
    &super::group_schemas::LEAVE_GROUP,
    &super::group_schemas::OFFSET_COMMIT,
    &super::group_schemas::OFFSET_FETCH,
    &super::group_schemas::LIST_GROUPS,
    &super::group_schemas::DESCRIBE_GROUPS,
    &super::group_schemas::DELETE_GROUPS,
    &super::group_schemas::OFFSET_DELETE,
    &DESCRIBE_TOPIC_PARTITIONS,
    &super::acl_schemas::DESCRIBE_ACLS,
    &super::acl_schemas::CREATE_ACLS,
    &super::acl_schemas::DELETE_ACLS,
    &super::sasl_schemas::SASL_HANDSHAKE,
    &super::sasl_schemas::SASL_AUTHENTICATE,
    &super::sasl_schemas::DESCRIBE_USER_SCRAM_CREDENTIALS,
    &super::sasl_schemas::ALTER_USER_SCRAM_CREDENTIALS,
    &super::sasl_schemas::DESCRIBE_CLIENT_QUOTAS,
    &super::txn_schemas::DESCRIBE_PRODUCERS,
    &super::txn_schemas::ADD_PARTITIONS_TO_TXN,
    &super::txn_schemas::ADD_OFFSETS_TO_TXN,
    &super::txn_schemas::END_TXN,
    &super::txn_schemas::TXN_OFFSET_COMMIT,
    &super::txn_schemas::DESCRIBE_TRANSACTIONS,
    &super::txn_schemas::LIST_TRANSACTIONS,
    &super::txn_schemas::WRITE_TXN_MARKERS,
];
