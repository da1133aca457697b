//! A TLS listener's settings from Kafka's `ssl.*` keys, each read from
//! `listener.name.<listener>.<key>` first, then from `<key>` (on a SASL_SSL listener,
//! `ssl.client.auth` only from the listener's own key, as Kafka reads it).
//!
//! Key stores: `ssl.keystore.type` `PEM` (a file at `ssl.keystore.location` holding key and
//! chain, or the inline `ssl.keystore.key` and `ssl.keystore.certificate.chain`) or `PKCS12`
//! (`ssl.keystore.location` and `ssl.keystore.password`); trust stores alike. Kafka's default
//! type, `JKS`, is refused with what to do instead.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use ferrolog_broker::tls::{
    CertificateDer, ClientAuth, PrincipalRules, PrivateKeyDer, TlsConfig, TlsSettings, TlsVersion,
    stores,
};

/// The `ssl.*` keys a listener reads.
pub const SSL_KEYS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.cipher.suites",
    "ssl.principal.mapping.rules",
    "ssl.allow.dn.changes",
    "ssl.allow.san.changes",
];

/// `ssl.*` keys of Kafka's that concern the JVM's TLS or Kafka's own clients, not a rustls
/// server: accepted and ignored.
pub const IGNORED_SSL_KEYS: &[&str] = &[
    "ssl.protocol",
    "ssl.provider",
    "ssl.endpoint.identification.algorithm",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation",
];

/// The TLS listeners of `planned`, each with how its settings are made again from the
/// settings in force, for the stores changed at run time.
pub fn changeable_listeners(
    planned: &[super::listeners::PlannedListener],
) -> Vec<ferrolog_broker::dynamic_configs::TlsListener> {
    planned
        .iter()
        .filter_map(|plan| {
            let tls = Arc::clone(plan.listener.tls.as_ref()?);
            let name = plan.listener.name.clone();
            let sasl = plan.listener.protocol.uses_sasl();
            Some(ferrolog_broker::dynamic_configs::TlsListener {
                name: name.to_lowercase(),
                tls,
                rebuild: Box::new(move |properties| {
                    tls_settings(properties, &name, sasl).map_err(|error| format!("{error:#}"))
                }),
            })
        })
        .collect()
}

/// The settings of the TLS listener `name` (`sasl`: a SASL_SSL one).
pub fn tls_settings(
    properties: &BTreeMap<String, String>,
    name: &str,
    sasl: bool,
) -> anyhow::Result<TlsSettings> {
    let prefix = format!("listener.name.{}.", name.to_lowercase());
    // The value and the key it came from.
    let get = |key: &str| -> Option<(String, &String)> {
        let own = format!("{prefix}{key}");
        match properties.get(&own) {
            Some(value) => Some((own, value)),
            None => properties.get(key).map(|value| (key.to_owned(), value)),
        }
    };
    let (chain, key) = key_store(&get)?;
    let trusted = trust_store(&get)?;
    let client_auth = {
        let own = format!("{prefix}ssl.client.auth");
        let setting = if sasl {
            properties.get(&own).map(|value| (own, value))
        } else {
            get("ssl.client.auth")
        };
        match setting {
            None => ClientAuth::None,
            Some((key, value)) => ClientAuth::from_name(value.trim()).with_context(|| {
                format!("invalid value {value:?} for {key}: expected none, requested or required")
            })?,
        }
    };
    let versions = match get("ssl.enabled.protocols") {
        None => Vec::new(),
        Some((key, value)) => {
            let mut versions = Vec::new();
            for name in list(value) {
                match TlsVersion::from_name(name) {
                    Some(version) if !versions.contains(&version) => versions.push(version),
                    Some(_) => bail!("invalid value {value:?} for {key}: {name} is listed twice"),
                    None if ["TLSv1", "TLSv1.1", "SSLv3", "SSLv2Hello"].contains(&name) => {
                        // Kafka would offer it on an old JVM; rustls offers only TLS 1.2 and 1.3.
                        tracing::warn!(key, protocol = name, "an old TLS version, not offered");
                    }
                    None => bail!("invalid value {value:?} for {key}: {name} is not a TLS version"),
                }
            }
            if versions.is_empty() {
                bail!(
                    "invalid value {value:?} for {key}: ferrolog offers TLSv1.2 and TLSv1.3, and neither is listed"
                );
            }
            versions
        }
    };
    let cipher_suites = get("ssl.cipher.suites")
        .map(|(_, value)| list(value).map(str::to_owned).collect())
        .unwrap_or_default();
    let principal_rules = match get("ssl.principal.mapping.rules") {
        None => PrincipalRules::default(),
        Some((key, value)) => PrincipalRules::parse(value)
            .map_err(|reason| anyhow::anyhow!("invalid value for {key}: {reason}"))?,
    };
    TlsSettings::build(TlsConfig {
        chain,
        key,
        trusted,
        client_auth,
        versions,
        cipher_suites,
        principal_rules,
    })
    .map_err(|reason| anyhow::anyhow!("listener {name}: {reason}"))
}

fn list(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
}

fn read_text(key: &str, path: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("{key}: reading {path}"))
}

type Lookup<'a> = dyn Fn(&str) -> Option<(String, &'a String)> + 'a;

fn key_store(
    get: &Lookup<'_>,
) -> anyhow::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let store_type =
        // Java looks key store types up ignoring case.
        get("ssl.keystore.type").map_or("JKS".to_owned(), |(_, value)| value.trim().to_ascii_uppercase());
    let location = get("ssl.keystore.location");
    let password = get("ssl.keystore.password");
    let key_password = get("ssl.key.password").map(|(_, value)| value.clone());
    let inline_key = get("ssl.keystore.key");
    let inline_chain = get("ssl.keystore.certificate.chain");
    match store_type.as_str() {
        "PEM" => {
            if password.is_some() {
                bail!(
                    "SSL key store password cannot be specified with PEM format, only key password may be specified (ssl.keystore.password)"
                );
            }
            let (text, source) = match (location, inline_key, inline_chain) {
                (Some((key, path)), None, None) => (read_text(&key, path)?, key),
                (None, Some((key, key_text)), Some((_, chain_text))) => {
                    (format!("{key_text}\n{chain_text}"), key)
                }
                (Some(_), Some(_), _) => bail!(
                    "Both SSL key store location and separate private key are specified (ssl.keystore.location, ssl.keystore.key)"
                ),
                (None, Some(_), None) => bail!(
                    "SSL private key is specified, but certificate chain is not specified (ssl.keystore.certificate.chain)"
                ),
                (_, None, Some(_)) => bail!(
                    "SSL certificate chain is specified, but private key is not specified (ssl.keystore.key)"
                ),
                (None, None, None) => bail!(
                    "a TLS listener needs a key store: ssl.keystore.location, or ssl.keystore.key and ssl.keystore.certificate.chain"
                ),
            };
            stores::pem_key_and_chain(&text, key_password.as_deref())
                .map_err(|reason| anyhow::anyhow!("{source}: {reason}"))
        }
        "PKCS12" => {
            if inline_key.is_some() || inline_chain.is_some() {
                bail!(
                    "SSL private key can be specified only for PEM, but key store type is PKCS12 (ssl.keystore.key)"
                );
            }
            let Some((key, path)) = location else {
                bail!("a TLS listener needs a key store: ssl.keystore.location");
            };
            let Some((_, password)) = password else {
                bail!(
                    "SSL key store is specified, but key store password is not specified (ssl.keystore.password)"
                );
            };
            if key_password
                .as_ref()
                .is_some_and(|key_password| key_password != password)
            {
                bail!(
                    "ssl.key.password differs from ssl.keystore.password: a PKCS#12 store has one password for its keys and itself"
                );
            }
            let bytes = std::fs::read(path).with_context(|| format!("{key}: reading {path}"))?;
            stores::pkcs12_key_and_chain(&bytes, password)
                .map_err(|reason| anyhow::anyhow!("{key} {path}: {reason}"))
        }
        "JKS" => bail!(
            "ssl.keystore.type is JKS (Kafka's default), which ferrolog does not read: convert the store with `keytool -importkeystore -srckeystore <file> -destkeystore <file>.p12 -deststoretype PKCS12` and set ssl.keystore.type=PKCS12, or use PEM"
        ),
        other => bail!("invalid value {other:?} for ssl.keystore.type: expected PEM or PKCS12"),
    }
}

fn trust_store(get: &Lookup<'_>) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let location = get("ssl.truststore.location");
    let inline = get("ssl.truststore.certificates");
    let password = get("ssl.truststore.password");
    if location.is_none() && inline.is_none() {
        if password.is_some() {
            bail!(
                "SSL trust store is not specified, but trust store password is specified (ssl.truststore.password)"
            );
        }
        return Ok(Vec::new());
    }
    let store_type = get("ssl.truststore.type").map_or("JKS".to_owned(), |(_, value)| {
        value.trim().to_ascii_uppercase()
    });
    match store_type.as_str() {
        "PEM" => {
            if password.is_some() {
                bail!(
                    "SSL trust store password cannot be specified for PEM format (ssl.truststore.password)"
                );
            }
            let (text, source) = match (location, inline) {
                (Some((key, path)), None) => (read_text(&key, path)?, key),
                (None, Some((key, text))) => (text.clone(), key),
                _ => bail!(
                    "Both SSL trust store location and separate trust certificates are specified (ssl.truststore.location, ssl.truststore.certificates)"
                ),
            };
            stores::pem_certificates(&text).map_err(|reason| anyhow::anyhow!("{source}: {reason}"))
        }
        "PKCS12" => {
            let (Some((key, path)), None) = (location, inline) else {
                bail!(
                    "SSL trust store certs can be specified only for PEM, but trust store type is PKCS12 (ssl.truststore.certificates)"
                );
            };
            let Some((_, password)) = password else {
                bail!(
                    "a PKCS#12 trust store needs its password (ssl.truststore.password): ferrolog checks the store's integrity, where Java skips the check without one"
                );
            };
            let bytes = std::fs::read(path).with_context(|| format!("{key}: reading {path}"))?;
            stores::pkcs12_certificates(&bytes, password)
                .map_err(|reason| anyhow::anyhow!("{key} {path}: {reason}"))
        }
        "JKS" => bail!(
            "ssl.truststore.type is JKS (Kafka's default), which ferrolog does not read: convert the store to PKCS12 with keytool -importkeystore, or use PEM"
        ),
        other => bail!("invalid value {other:?} for ssl.truststore.type: expected PEM or PKCS12"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    /// A PEM file holding a key and its self-signed certificate, and the certificate alone.
    fn pem_files(dir: &std::path::Path) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let certificate = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let store = dir.join("broker.pem");
        std::fs::write(
            &store,
            format!("{}{}", key.serialize_pem(), certificate.pem()),
        )
        .unwrap();
        let trust = dir.join("ca.pem");
        std::fs::write(&trust, certificate.pem()).unwrap();
        (store.display().to_string(), trust.display().to_string())
    }

    fn settings(pairs: &[(&str, &str)], sasl: bool) -> anyhow::Result<TlsSettings> {
        let properties: BTreeMap<String, String> = pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        tls_settings(&properties, "SECURE", sasl)
    }

    #[test]
    fn pem_stores_and_the_listeners_own_keys_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let (store, trust) = pem_files(dir.path());
        let built = settings(
            &[
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", &store),
                ("listener.name.secure.ssl.truststore.type", "PEM"),
                ("listener.name.secure.ssl.truststore.location", &trust),
                ("ssl.client.auth", "required"),
                ("ssl.enabled.protocols", "TLSv1.2,TLSv1.3"),
                (
                    "ssl.cipher.suites",
                    "TLS_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                ),
            ],
            false,
        )
        .unwrap();
        assert_eq!(built.client_auth, ClientAuth::Required);
        // On SASL_SSL only the listener's own ssl.client.auth counts, as in Kafka.
        let sasl = settings(
            &[
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", &store),
                ("ssl.client.auth", "required"),
            ],
            true,
        )
        .unwrap();
        assert_eq!(sasl.client_auth, ClientAuth::None);
    }

    #[test]
    fn each_mistake_names_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let (store, trust) = pem_files(dir.path());
        let pem = ("ssl.keystore.type", "PEM");
        let location = ("ssl.keystore.location", store.as_str());
        for (pairs, expected) in [
            (vec![location], "JKS (Kafka's default)"),
            (
                vec![pem, location, ("ssl.keystore.password", "x")],
                "ssl.keystore.password",
            ),
            (
                vec![pem, location, ("ssl.key.password", "x")],
                "not encrypted",
            ),
            (
                vec![pem, location, ("ssl.client.auth", "always")],
                "ssl.client.auth",
            ),
            (
                vec![pem, location, ("ssl.client.auth", "required")],
                "no trusted certificate",
            ),
            (
                vec![pem, location, ("ssl.enabled.protocols", "TLSv1.1")],
                "neither is listed",
            ),
            (
                vec![pem, location, ("ssl.enabled.protocols", "TLSv1.4")],
                "not a TLS version",
            ),
            (
                vec![
                    pem,
                    location,
                    ("ssl.cipher.suites", "TLS_NULL_WITH_NULL_NULL"),
                ],
                "not served",
            ),
            (
                vec![pem, location, ("ssl.principal.mapping.rules", "RULE:x")],
                "ssl.principal.mapping.rules",
            ),
            (
                vec![pem, ("ssl.keystore.location", "/nonexistent/broker.pem")],
                "ssl.keystore.location",
            ),
            (
                vec![pem, ("ssl.keystore.location", trust.as_str())],
                "PRIVATE KEY",
            ),
            (
                vec![("ssl.keystore.type", "PKCS12"), location],
                "ssl.keystore.password",
            ),
            (vec![pem], "needs a key store"),
        ] {
            let error = format!("{:#}", settings(&pairs, false).unwrap_err());
            assert!(error.contains(expected), "{pairs:?}: {error}");
        }
    }
}
