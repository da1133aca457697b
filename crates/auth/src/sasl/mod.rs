//! SASL authentication as Kafka's SASL listeners do it (KIP-152: SaslHandshake, then the
//! mechanism's tokens in SaslAuthenticate requests).
//!
//! [`plain`] checks PLAIN tokens against the users of the listener's JAAS configuration;
//! [`scram`] runs SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) against the salted
//! credentials of [`credentials`]; [`authenticator`] is one connection's exchange, a state
//! machine without I/O, which the network layer drives.

pub mod authenticator;
pub mod credentials;
pub mod plain;
pub mod scram;

use std::fmt;

pub use credentials::{ScramCredential, ScramStore};
pub use plain::PlainUsers;

/// A SASL mechanism ferrolog serves, by Kafka's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mechanism {
    Plain,
    ScramSha256,
    ScramSha512,
}

impl Mechanism {
    pub const ALL: [Mechanism; 3] = [
        Mechanism::Plain,
        Mechanism::ScramSha256,
        Mechanism::ScramSha512,
    ];

    /// Kafka's name: `PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512`.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism named `name`, exactly (SASL names are case-sensitive, as in Kafka).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|mechanism| mechanism.name() == name)
    }

    /// The SCRAM hash this mechanism uses, for the SCRAM ones.
    pub fn scram(self) -> Option<scram::ScramHash> {
        match self {
            Mechanism::Plain => None,
            Mechanism::ScramSha256 => Some(scram::ScramHash::Sha256),
            Mechanism::ScramSha512 => Some(scram::ScramHash::Sha512),
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a SASL listener accepts: its enabled mechanisms (`sasl.enabled.mechanisms`, in the
/// configured order, which SaslHandshake's answer lists) and, when PLAIN is among them, the
/// users of its JAAS configuration.
#[derive(Clone, Debug, Default)]
pub struct SaslSettings {
    pub mechanisms: Vec<Mechanism>,
    pub plain_users: PlainUsers,
}

impl SaslSettings {
    pub fn enables(&self, mechanism: Mechanism) -> bool {
        self.mechanisms.contains(&mechanism)
    }
}
