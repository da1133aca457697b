//! The request schemas of the ACL APIs (DescribeAcls, CreateAcls, DeleteAcls, versions 1–3),
//! transcribed from Kafka's message definitions as in [`super::schemas`].

use super::{Field, Kind, MAX, Message, v};

/// The fields of an ACL filter, in DescribeAcls itself and in each DeleteAcls filter.
const FILTER: &[Field] = &[
    Field::new("ResourceTypeFilter", Kind::Int8, v(0, MAX)),
    Field::new("ResourceNameFilter", Kind::String, v(0, MAX)).nullable(v(0, MAX)),
    Field::new("PatternTypeFilter", Kind::Int8, v(1, MAX)),
    Field::new("PrincipalFilter", Kind::String, v(0, MAX)).nullable(v(0, MAX)),
    Field::new("HostFilter", Kind::String, v(0, MAX)).nullable(v(0, MAX)),
    Field::new("Operation", Kind::Int8, v(0, MAX)),
    Field::new("PermissionType", Kind::Int8, v(0, MAX)),
];

/// DescribeAclsRequest v1–3.
pub(super) const DESCRIBE_ACLS: Message = Message {
    api_key: 29,
    fields: FILTER,
};

/// CreateAclsRequest v1–3.
pub(super) const CREATE_ACLS: Message = Message {
    api_key: 30,
    fields: &[Field::new(
        "Creations",
        Kind::Array(&[
            Field::new("ResourceType", Kind::Int8, v(0, MAX)),
            Field::new("ResourceName", Kind::String, v(0, MAX)),
            Field::new("ResourcePatternType", Kind::Int8, v(1, MAX)),
            Field::new("Principal", Kind::String, v(0, MAX)),
            Field::new("Host", Kind::String, v(0, MAX)),
            Field::new("Operation", Kind::Int8, v(0, MAX)),
            Field::new("PermissionType", Kind::Int8, v(0, MAX)),
        ]),
        v(0, MAX),
    )],
};

/// DeleteAclsRequest v1–3.
pub(super) const DELETE_ACLS: Message = Message {
    api_key: 31,
    fields: &[Field::new("Filters", Kind::Array(FILTER), v(0, MAX))],
};
