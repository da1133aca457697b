//! TLS for SSL and SASL_SSL listeners, with rustls, configured as Kafka's `ssl.*` keys configure
//! a listener: the broker's key and certificate chain ([`stores`]: PEM or PKCS#12), the
//! certificates it trusts for client certificates, `ssl.client.auth`, `ssl.enabled.protocols`
//! and `ssl.cipher.suites` (Kafka's names), and `ssl.principal.mapping.rules` for the principal
//! a client certificate gives ([`principal`]).

pub mod principal;
pub mod rotation;
pub mod stores;

use std::sync::Arc;

use parking_lot::RwLock;

use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedCipherSuite};

pub use principal::PrincipalRules;
pub use rotation::AllowedChanges;
pub use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// `ssl.client.auth`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// No client certificate is asked for.
    #[default]
    None,
    /// A client certificate is asked for; a client without one is `User:ANONYMOUS`.
    Requested,
    /// A client without a trusted certificate is refused in the handshake.
    Required,
}

impl ClientAuth {
    /// Kafka's values, case-insensitive as Kafka reads them.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "none" => Some(Self::None),
            "requested" => Some(Self::Requested),
            "required" => Some(Self::Required),
            _ => None,
        }
    }
}

/// A TLS version, by Kafka's (Java's) names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

impl TlsVersion {
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "TLSv1.2" => Some(Self::Tls12),
            "TLSv1.3" => Some(Self::Tls13),
            _ => None,
        }
    }
}

/// What a TLS listener is built from.
#[derive(Debug)]
pub struct TlsConfig {
    /// The broker's certificate chain (its own first) and key.
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    /// The certificates client certificates must chain to (`ssl.truststore.*`).
    pub trusted: Vec<CertificateDer<'static>>,
    pub client_auth: ClientAuth,
    /// `ssl.enabled.protocols`; empty for both.
    pub versions: Vec<TlsVersion>,
    /// `ssl.cipher.suites` by their IANA names; empty for rustls's defaults.
    pub cipher_suites: Vec<String>,
    pub principal_rules: PrincipalRules,
}

/// A TLS listener's settings, ready for connections. Its stores may be replaced while it
/// serves ([`TlsSettings::replace_stores`]); clones share them.
#[derive(Clone)]
pub struct TlsSettings {
    served: Arc<RwLock<Served>>,
    pub client_auth: ClientAuth,
    pub principal_rules: PrincipalRules,
}

/// What new connections are served with.
#[derive(Clone)]
struct Served {
    acceptor: tokio_rustls::TlsAcceptor,
    /// The broker's own certificate, which a replacement is checked against.
    leaf: CertificateDer<'static>,
}

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSettings")
            .field("client_auth", &self.client_auth)
            .finish_non_exhaustive()
    }
}

impl TlsSettings {
    /// The rustls server for `config`; the error says what is wrong with which part.
    pub fn build(config: TlsConfig) -> Result<Self, String> {
        let mut provider = rustls::crypto::aws_lc_rs::default_provider();
        if !config.cipher_suites.is_empty() {
            provider.cipher_suites = config
                .cipher_suites
                .iter()
                .map(|name| cipher_suite(&provider.cipher_suites, name))
                .collect::<Result<_, _>>()?;
        }
        let versions: Vec<&'static rustls::SupportedProtocolVersion> = if config.versions.is_empty()
        {
            rustls::ALL_VERSIONS.to_vec()
        } else {
            config
                .versions
                .iter()
                .map(|version| match version {
                    TlsVersion::Tls12 => &rustls::version::TLS12,
                    TlsVersion::Tls13 => &rustls::version::TLS13,
                })
                .collect()
        };
        let provider = Arc::new(provider);
        let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&versions)
            .map_err(|error| {
                format!("the enabled protocols and cipher suites have nothing in common: {error}")
            })?;
        let builder = match config.client_auth {
            ClientAuth::None => builder.with_no_client_auth(),
            ClientAuth::Requested | ClientAuth::Required => {
                if config.trusted.is_empty() {
                    return Err(
                        "ssl.client.auth asks for client certificates, but no trusted certificate is configured (ssl.truststore.*)".into(),
                    );
                }
                let mut roots = RootCertStore::empty();
                for certificate in &config.trusted {
                    roots.add(certificate.clone()).map_err(|error| {
                        format!("a trusted certificate cannot be used: {error}")
                    })?;
                }
                let verifier = WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    Arc::clone(&provider),
                );
                let verifier = match config.client_auth {
                    ClientAuth::Requested => verifier.allow_unauthenticated(),
                    _ => verifier,
                };
                let verifier = verifier.build().map_err(|error| {
                    format!("the trusted certificates cannot verify clients: {error}")
                })?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let leaf = config
            .chain
            .first()
            .cloned()
            .ok_or("the key store holds no certificate")?;
        let server = builder
            .with_single_cert(config.chain, config.key)
            .map_err(|error| {
                format!("the key does not fit the certificate chain, or cannot be used: {error}")
            })?;
        Ok(Self {
            served: Arc::new(RwLock::new(Served {
                acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(server)),
                leaf,
            })),
            client_auth: config.client_auth,
            principal_rules: config.principal_rules,
        })
    }

    /// What a new connection's handshake is served with.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        self.served.read().acceptor.clone()
    }

    /// Whether `next`'s certificate may replace this one's (see [`rotation`]).
    pub fn check_replacement(&self, next: &Self, allowed: AllowedChanges) -> Result<(), String> {
        let current = self.served.read().leaf.clone();
        let new = next.served.read().leaf.clone();
        rotation::check_compatible(&current, &new, allowed)
    }

    /// Serves new connections with `next`'s key and trust stores from now on (its client
    /// authentication and principal rules are this listener's own, which do not change).
    pub fn replace_stores(&self, next: &Self, allowed: AllowedChanges) -> Result<(), String> {
        self.check_replacement(next, allowed)?;
        let served = next.served.read().clone();
        *self.served.write() = served;
        Ok(())
    }
}

/// The suite Kafka names `name` (IANA's names, which Java uses: `TLS_AES_128_GCM_SHA256`,
/// `TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`).
fn cipher_suite(
    available: &[SupportedCipherSuite],
    name: &str,
) -> Result<SupportedCipherSuite, String> {
    available
        .iter()
        .find(|suite| {
            let rustls_name = suite.suite().as_str().unwrap_or("");
            // rustls writes the TLS 1.3 suites `TLS13_...`; IANA and Java `TLS_...`.
            rustls_name == name || rustls_name.replacen("TLS13_", "TLS_", 1) == name
        })
        .copied()
        .ok_or_else(|| {
            let known: Vec<String> = available
                .iter()
                .filter_map(|suite| suite.suite().as_str())
                .map(|name| name.replacen("TLS13_", "TLS_", 1))
                .collect();
            format!(
                "cipher suite {name} is not served (the suites served: {})",
                known.join(", ")
            )
        })
}

/// The principal of a client that presented `certificate` (DER): `User:` and its subject's
/// name as mapped by `rules`.
pub fn principal_of(certificate: &[u8], rules: &PrincipalRules) -> Result<String, String> {
    let name = stores::subject_name(certificate)?;
    rules
        .name_of(&name)
        .map(|name| format!("User:{name}"))
        .map_err(|error| error.to_string())
}
