//! The request schemas of the consumer group APIs, transcribed from Kafka's message
//! definitions as in [`super::schemas`].

use super::{Field, Kind, MAX, Message, v};

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
