//! Client quota entities and keys, as Kafka names them (`ClientQuotaEntity`, `QuotaConfig`):
//! an entity is a user, a client id, both, or an IP address, each by name or the default
//! (`<default>`, a null name on the wire); a key is one of the five quotas Kafka knows.

use std::fmt;

/// The entity types of client quotas.
pub const USER: &str = "user";
pub const CLIENT_ID: &str = "client-id";
pub const IP: &str = "ip";

/// One part of an entity: a name, or the default for its type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntityName {
    /// The default of its type (`<default>`; null on the wire).
    Default,
    /// A user (without `User:`), client id or IP address.
    Named(String),
}

impl EntityName {
    /// The name as the wire carries it: `None` for the default.
    pub fn wire(&self) -> Option<&str> {
        match self {
            Self::Default => None,
            Self::Named(name) => Some(name),
        }
    }

    /// From the wire: a null name is the default.
    pub fn from_wire(name: Option<&str>) -> Self {
        name.map_or(Self::Default, |name| Self::Named(name.to_owned()))
    }
}

impl fmt::Display for EntityName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("<default>"),
            Self::Named(name) => f.write_str(name),
        }
    }
}

/// A quota entity: a user, a client id or both; or an IP address alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QuotaEntity {
    pub user: Option<EntityName>,
    pub client_id: Option<EntityName>,
    pub ip: Option<EntityName>,
}

impl QuotaEntity {
    /// The entity's parts as (type, name) pairs, in Kafka's order: user, client id, ip.
    pub fn parts(&self) -> Vec<(&'static str, &EntityName)> {
        [
            (USER, self.user.as_ref()),
            (CLIENT_ID, self.client_id.as_ref()),
            (IP, self.ip.as_ref()),
        ]
        .into_iter()
        .filter_map(|(kind, name)| Some((kind, name?)))
        .collect()
    }

    /// The part of type `kind`, if the entity has one.
    pub fn part(&self, kind: &str) -> Option<&EntityName> {
        match kind {
            USER => self.user.as_ref(),
            CLIENT_ID => self.client_id.as_ref(),
            IP => self.ip.as_ref(),
            _ => None,
        }
    }

    /// Whether the entity is an IP address's (connection quotas) rather than a client's.
    pub fn is_ip(&self) -> bool {
        self.ip.is_some()
    }
}

impl fmt::Display for QuotaEntity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .parts()
            .into_iter()
            .map(|(kind, name)| format!("{kind}={name}"))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// The quotas Kafka knows, by the key AlterClientQuotas names them with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QuotaKey {
    /// Bytes a second a client may produce (`producer_byte_rate`).
    ProducerByteRate,
    /// Bytes a second a client may fetch (`consumer_byte_rate`).
    ConsumerByteRate,
    /// Percent of one request-handling thread's time (`request_percentage`).
    RequestPercentage,
    /// Partitions a second a client may create or delete (`controller_mutation_rate`).
    ControllerMutationRate,
    /// New connections a second from one IP address (`connection_creation_rate`).
    ConnectionCreationRate,
}

impl QuotaKey {
    pub const ALL: [Self; 5] = [
        Self::ProducerByteRate,
        Self::ConsumerByteRate,
        Self::RequestPercentage,
        Self::ControllerMutationRate,
        Self::ConnectionCreationRate,
    ];

    /// The key's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::ProducerByteRate => "producer_byte_rate",
            Self::ConsumerByteRate => "consumer_byte_rate",
            Self::RequestPercentage => "request_percentage",
            Self::ControllerMutationRate => "controller_mutation_rate",
            Self::ConnectionCreationRate => "connection_creation_rate",
        }
    }

    /// The key named `name`.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|key| key.name() == name)
    }

    /// Whether the key applies to IP entities (the others apply to users and client ids).
    pub fn is_ip_key(self) -> bool {
        self == Self::ConnectionCreationRate
    }
}

impl fmt::Display for QuotaKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A user name as Kafka's metrics tag it (`Sanitizer#sanitize`): URL-encoded as Java's
/// `URLEncoder` does (letters, digits and `.-_` kept), with `*` written `%2A` and a space
/// `%20`.
pub fn sanitized_user(user: &str) -> String {
    let mut out = String::with_capacity(user.len());
    for byte in user.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'_' => out.push(byte as char),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn user_names_are_sanitized_as_kafka_does() {
        assert_eq!(super::sanitized_user("alice"), "alice");
        assert_eq!(super::sanitized_user("CN=a b*"), "CN%3Da%20b%2A");
        assert_eq!(super::sanitized_user("é"), "%C3%A9");
    }
}
