//! The request schemas of the transaction APIs (and DescribeProducers), transcribed from
//! Kafka's message definitions as in [`super::schemas`].

use super::{Field, Kind, MAX, Message, v};

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
