//! The request schemas of the SASL APIs (SaslHandshake v0–1, SaslAuthenticate v0–2), of the
//! SCRAM credential APIs (DescribeUserScramCredentials v0, AlterUserScramCredentials v0) and of
//! DescribeClientQuotas (v0–1),
//! transcribed from Kafka's message definitions as in [`super::schemas`].

use super::{Field, Kind, MAX, Message, v};

/// SaslHandshakeRequest v0–1.
pub(super) const SASL_HANDSHAKE: Message = Message {
    api_key: 17,
    fields: &[Field::new("Mechanism", Kind::String, v(0, MAX))],
};

/// SaslAuthenticateRequest v0–2.
pub(super) const SASL_AUTHENTICATE: Message = Message {
    api_key: 36,
    fields: &[Field::new("AuthBytes", Kind::Bytes, v(0, MAX))],
};

/// DescribeUserScramCredentialsRequest v0.
pub(super) const DESCRIBE_USER_SCRAM_CREDENTIALS: Message = Message {
    api_key: 50,
    fields: &[Field::new(
        "Users",
        Kind::Array(&[Field::new("Name", Kind::String, v(0, MAX))]),
        v(0, MAX),
    )
    .nullable(v(0, MAX))],
};

/// AlterUserScramCredentialsRequest v0.
pub(super) const ALTER_USER_SCRAM_CREDENTIALS: Message = Message {
    api_key: 51,
    fields: &[
        Field::new(
            "Deletions",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, MAX)),
                Field::new("Mechanism", Kind::Int8, v(0, MAX)),
            ]),
            v(0, MAX),
        ),
        Field::new(
            "Upsertions",
            Kind::Array(&[
                Field::new("Name", Kind::String, v(0, MAX)),
                Field::new("Mechanism", Kind::Int8, v(0, MAX)),
                Field::new("Iterations", Kind::Int32, v(0, MAX)),
                Field::new("Salt", Kind::Bytes, v(0, MAX)),
                Field::new("SaltedPassword", Kind::Bytes, v(0, MAX)),
            ]),
            v(0, MAX),
        ),
    ],
};

/// DescribeClientQuotasRequest v0–1 (asked by `kafka-configs --describe --entity-type users`).
pub(super) const DESCRIBE_CLIENT_QUOTAS: Message = Message {
    api_key: 48,
    fields: &[
        Field::new(
            "Components",
            Kind::Array(&[
                Field::new("EntityType", Kind::String, v(0, MAX)),
                Field::new("MatchType", Kind::Int8, v(0, MAX)),
                Field::new("Match", Kind::String, v(0, MAX)).nullable(v(0, MAX)),
            ]),
            v(0, MAX),
        ),
        Field::new("Strict", Kind::Bool, v(0, MAX)),
    ],
};
