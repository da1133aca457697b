//! The listeners a broker serves, as Kafka's `listeners`, `advertised.listeners` and
//! `listener.security.protocol.map` describe them: each has a name, a security protocol, and
//! the address clients are told to connect to when they come through it (Metadata,
//! FindCoordinator and DescribeCluster answer with the endpoint of the listener the request
//! arrived on, as Kafka does).

use std::fmt;
use std::sync::Arc;

use crate::sasl::SaslSettings;
use crate::tls::TlsSettings;

/// How a listener's connections are secured, by Kafka's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    /// Kafka's name: `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT`, `SASL_SSL`.
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// The protocol Kafka names `name` (case-insensitive, as Kafka reads it).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|protocol| protocol.name().eq_ignore_ascii_case(name))
    }

    /// Whether clients authenticate with SASL before anything else.
    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }

    /// Whether the connection is encrypted with TLS.
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A host and port clients are told to connect to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

/// One listener, as the connections accepted through it see it.
#[derive(Clone, Debug)]
pub struct Listener {
    /// Its name, upper-cased as Kafka normalizes it (`PLAINTEXT`, `CLIENTS`, ...).
    pub name: String,
    pub protocol: SecurityProtocol,
    /// Where clients that came through it are told the broker is.
    pub advertised: Endpoint,
    /// The mechanisms and users of a SASL listener; `None` for the others.
    pub sasl: Option<Arc<SaslSettings>>,
    /// The TLS of an SSL or SASL_SSL listener; `None` for the others.
    pub tls: Option<Arc<TlsSettings>>,
    /// `listener.name.<name>.max.connections`: connections open at once through it. `None`:
    /// `max.connections`, less a reserve for each other listener (see
    /// the broker's `network::limits::ListenerLimits`).
    pub max_connections: Option<usize>,
}

impl Listener {
    /// A PLAINTEXT listener named `PLAINTEXT`, advertised at `host`:`port`: the default
    /// listener, and what tests serve.
    pub fn plaintext(host: impl Into<String>, port: u16) -> Self {
        Self {
            name: SecurityProtocol::Plaintext.name().to_owned(),
            protocol: SecurityProtocol::Plaintext,
            advertised: Endpoint {
                host: host.into(),
                port,
            },
            sasl: None,
            tls: None,
            max_connections: None,
        }
    }

    /// `NAME://host:port`, as logs and warnings name it.
    pub fn describe(&self, bound: std::net::SocketAddr) -> String {
        format!("{}://{bound}", self.name)
    }
}
