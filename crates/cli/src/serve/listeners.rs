//! The listeners, from Kafka's keys: `listeners` (`NAME://host:port`, comma-separated),
//! `listener.security.protocol.map` (`NAME:PROTOCOL`; by default each protocol's name maps to
//! itself), `advertised.listeners` (by listener name; a listener not named there is advertised
//! at its own address), `controller.listener.names` (listeners ferrolog does not serve, having
//! no controller quorum), and for each SASL listener its mechanisms
//! (`[listener.name.<name>.]sasl.enabled.mechanisms`) and JAAS configurations
//! (`listener.name.<name>.<mechanism>.sasl.jaas.config`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use anyhow::{Context as _, bail};
use ferrolog_broker::listener::{Endpoint, Listener, SecurityProtocol};
use ferrolog_broker::sasl::{Mechanism, PlainUsers, SaslSettings};

use super::jaas;

/// The listener when none is configured.
pub const DEFAULT_LISTENERS: &str = "PLAINTEXT://127.0.0.1:9092";

const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// One listener to bind: where, and what its connections see.
#[derive(Debug, Clone)]
pub struct PlannedListener {
    pub bind: SocketAddr,
    pub listener: Listener,
    /// Whether `advertised.listeners` names it; if not, it is advertised at the address it
    /// gets when bound (port 0 becomes the port chosen).
    pub advertised_given: bool,
}

/// Whether `key` is one of the per-listener keys (`listener.name.<name>.<key>`) this module
/// reads; which listener it names is checked by [`plan`].
pub fn is_listener_key(key: &str) -> bool {
    listener_key_parts(key).is_some()
}

/// `(listener name lower-cased, the key after it)` of a per-listener key ferrolog reads.
fn listener_key_parts(key: &str) -> Option<(&str, &str)> {
    let rest = key.strip_prefix("listener.name.")?;
    let (name, setting) = rest.split_once('.')?;
    let known = setting == "sasl.enabled.mechanisms"
        || setting == "max.connections"
        || super::tls::SSL_KEYS.contains(&setting)
        || super::tls::IGNORED_SSL_KEYS.contains(&setting)
        || Mechanism::ALL.iter().any(|mechanism| {
            setting == format!("{}.sasl.jaas.config", mechanism.name().to_lowercase())
        });
    known.then_some((name, setting))
}

/// The listeners the properties configure, in the order `listeners` gives them, and what to
/// warn about (listeners left to a controller, JAAS settings of mechanisms not enabled).
pub fn plan(
    properties: &BTreeMap<String, String>,
) -> anyhow::Result<(Vec<PlannedListener>, Vec<String>)> {
    let protocols = protocol_map(properties)?;
    let controllers: BTreeSet<String> = properties
        .get("controller.listener.names")
        .map(|names| list(names).map(str::to_uppercase).collect())
        .unwrap_or_default();
    let configured = properties
        .get("listeners")
        .map_or(DEFAULT_LISTENERS, String::as_str);
    let mut planned: Vec<PlannedListener> = Vec::new();
    let mut skipped = Vec::new();
    for entry in list(configured) {
        let (name, host, port) = endpoint("listeners", entry)?;
        if controllers.contains(&name) {
            skipped.push(name);
            continue;
        }
        let Some(protocol) = protocols.get(&name).copied() else {
            bail!(
                "listeners: no security protocol is defined for listener {name} (give it one in listener.security.protocol.map, as {name}:PLAINTEXT or {name}:SASL_PLAINTEXT)"
            );
        };
        if planned.iter().any(|other| other.listener.name == name) {
            bail!("listeners names {name} twice: each listener needs its own name");
        }
        let bind = resolve("listeners", &host, port)?;
        if port != 0 && planned.iter().any(|other| other.bind.port() == port) {
            bail!("listeners: two listeners use port {port}; each needs its own port");
        }
        let sasl = if protocol.uses_sasl() {
            Some(Arc::new(sasl_settings(properties, &name)?))
        } else {
            None
        };
        let tls = if protocol.uses_tls() {
            Some(Arc::new(super::tls::tls_settings(
                properties,
                &name,
                protocol.uses_sasl(),
            )?))
        } else {
            None
        };
        planned.push(PlannedListener {
            bind,
            listener: Listener {
                name,
                protocol,
                advertised: Endpoint {
                    host: advertised_host(bind),
                    port,
                },
                sasl,
                tls,
                max_connections: None,
            },
            advertised_given: false,
        });
    }
    if planned.is_empty() {
        bail!("listeners: no listener to serve (every one is a controller listener)");
    }
    if let Some(advertised) = properties.get("advertised.listeners") {
        for entry in list(advertised) {
            let (name, host, port) = endpoint("advertised.listeners", entry)?;
            if controllers.contains(&name) {
                // Kafka's own combined-node server.properties advertises its controller too.
                continue;
            }
            let Some(target) = planned.iter_mut().find(|p| p.listener.name == name) else {
                bail!(
                    "advertised.listeners names {name}, which is not among the listeners served ({})",
                    planned
                        .iter()
                        .map(|p| p.listener.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            };
            if port == 0 {
                bail!("advertised.listeners: {name} needs a port other than 0");
            }
            if target.advertised_given {
                bail!("advertised.listeners names {name} twice");
            }
            target.listener.advertised = Endpoint {
                host: if host.is_empty() {
                    advertised_host(target.bind)
                } else {
                    host
                },
                port,
            };
            target.advertised_given = true;
        }
    }
    let mut notes: Vec<String> = skipped
        .iter()
        .map(|name| format!("listener {name} is a controller listener (controller.listener.names); ferrolog has no controller quorum and does not serve it"))
        .collect();
    for key in properties.keys() {
        let Some((name, setting)) = listener_key_parts(key) else {
            continue;
        };
        if name != name.to_lowercase() {
            bail!(
                "{key}: the listener's name is written in lower case in per-listener keys, as Kafka reads them"
            );
        }
        if setting == "max.connections" {
            let Some(target) = planned
                .iter_mut()
                .find(|p| p.listener.name.eq_ignore_ascii_case(name))
            else {
                bail!("{key} names listener {name}, which is not served here");
            };
            let value = &properties[key];
            let max = value
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|max| *max >= 1)
                .with_context(|| {
                    format!("invalid value {value:?} for {key}: must be an integer of at least 1")
                })?;
            target.listener.max_connections = Some(max);
            continue;
        }
        let listener = planned
            .iter()
            .find(|p| p.listener.name.eq_ignore_ascii_case(name))
            .map(|p| &p.listener);
        if setting.starts_with("ssl.") {
            if listener.is_none_or(|listener| listener.tls.is_none()) {
                bail!("{key} names listener {name}, which is not a TLS listener served here");
            }
            continue;
        }
        let Some(sasl) = listener.and_then(|listener| listener.sasl.as_ref()) else {
            bail!("{key} names listener {name}, which is not a SASL listener served here");
        };
        if let Some(mechanism) = setting.strip_suffix(".sasl.jaas.config")
            && !sasl
                .mechanisms
                .iter()
                .any(|m| m.name().eq_ignore_ascii_case(mechanism))
        {
            notes.push(format!(
                "{key} is ignored: {} is not enabled on listener {name}",
                mechanism.to_uppercase()
            ));
        }
    }
    Ok((planned, notes))
}

/// `listener.security.protocol.map`, names upper-cased; each protocol's own name by default.
fn protocol_map(
    properties: &BTreeMap<String, String>,
) -> anyhow::Result<BTreeMap<String, SecurityProtocol>> {
    let Some(value) = properties.get("listener.security.protocol.map") else {
        return Ok(SecurityProtocol::ALL
            .into_iter()
            .map(|protocol| (protocol.name().to_owned(), protocol))
            .collect());
    };
    let mut map = BTreeMap::new();
    for pair in list(value) {
        let (name, protocol) = pair.split_once(':').with_context(|| {
            format!("invalid value {value:?} for listener.security.protocol.map: expected NAME:PROTOCOL pairs, found {pair:?}")
        })?;
        let protocol = SecurityProtocol::from_name(protocol.trim()).with_context(|| {
            format!("invalid value {value:?} for listener.security.protocol.map: {protocol:?} is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
        })?;
        map.insert(name.trim().to_uppercase(), protocol);
    }
    Ok(map)
}

/// Comma-separated entries, trimmed, empty ones dropped.
fn list(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
}

/// `NAME://host:port` (a bare `host:port` is the PLAINTEXT listener), with the name
/// upper-cased and IPv6 brackets removed.
fn endpoint(key: &str, entry: &str) -> anyhow::Result<(String, String, u16)> {
    let (name, address) = match entry.split_once("://") {
        Some((name, address)) => (name.trim().to_uppercase(), address),
        None => (SecurityProtocol::Plaintext.name().to_owned(), entry),
    };
    let bad = || format!("invalid value {entry:?} in {key}: expected NAME://host:port");
    if name.is_empty() {
        bail!(bad());
    }
    let (host, port) = address.rsplit_once(':').with_context(bad)?;
    let port: u16 = port.parse().ok().with_context(bad)?;
    let host = host
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(host);
    Ok((name, host.to_owned(), port))
}

/// The address to bind for `host` (empty: every interface).
fn resolve(key: &str, host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    if host.is_empty() {
        return Ok(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .with_context(|| format!("{key}: cannot resolve host {host:?}"))
}

/// Where clients are told to connect when nothing is advertised: the bound address, or
/// 127.0.0.1 for every interface.
pub fn advertised_host(bind: SocketAddr) -> String {
    if bind.ip().is_unspecified() {
        "127.0.0.1".to_owned()
    } else {
        bind.ip().to_string()
    }
}

/// The mechanisms and users of the SASL listener `name`.
fn sasl_settings(
    properties: &BTreeMap<String, String>,
    name: &str,
) -> anyhow::Result<SaslSettings> {
    let prefix = format!("listener.name.{}.", name.to_lowercase());
    let own_key = format!("{prefix}sasl.enabled.mechanisms");
    let (key, value) = match properties.get(&own_key) {
        Some(value) => (own_key.as_str(), value.as_str()),
        None => match properties.get("sasl.enabled.mechanisms") {
            Some(value) => ("sasl.enabled.mechanisms", value.as_str()),
            None => bail!(
                "listener {name} uses SASL, and sasl.enabled.mechanisms is Kafka's default, GSSAPI, which ferrolog does not serve: set sasl.enabled.mechanisms (or {own_key}) to some of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"
            ),
        },
    };
    let mut mechanisms = Vec::new();
    for mechanism in list(value) {
        let Some(known) = Mechanism::from_name(mechanism) else {
            bail!(
                "invalid value {value:?} for {key}: ferrolog serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, not {mechanism}"
            );
        };
        if mechanisms.contains(&known) {
            bail!("invalid value {value:?} for {key}: {mechanism} is listed twice");
        }
        mechanisms.push(known);
    }
    if mechanisms.is_empty() {
        bail!("{key} is empty: no SASL mechanisms are enabled for listener {name}");
    }
    let mut plain_users = PlainUsers::default();
    for mechanism in &mechanisms {
        let jaas_key = format!(
            "{prefix}{}.sasl.jaas.config",
            mechanism.name().to_lowercase()
        );
        let module = match properties.get(&jaas_key) {
            Some(text) => Some(
                jaas::parse(text)
                    .map_err(|reason| anyhow::anyhow!("invalid value for {jaas_key}: {reason}"))?,
            ),
            None => None,
        };
        match (mechanism, module) {
            (Mechanism::Plain, None) => bail!(
                "listener {name} enables PLAIN but {jaas_key} is not set: give it {PLAIN_LOGIN_MODULE} required user_<name>=\"<password>\" ...;"
            ),
            (Mechanism::Plain, Some(module)) => {
                if module.class != PLAIN_LOGIN_MODULE {
                    bail!(
                        "invalid value for {jaas_key}: PLAIN takes {PLAIN_LOGIN_MODULE}, not {}",
                        module.class
                    );
                }
                let users: BTreeMap<String, String> = module
                    .options
                    .into_iter()
                    .filter_map(|(option, password)| {
                        option
                            .strip_prefix("user_")
                            .map(|user| (user.to_owned(), password))
                    })
                    .collect();
                if users.is_empty() {
                    bail!(
                        "invalid value for {jaas_key}: it defines no users (user_<name>=\"<password>\")"
                    );
                }
                plain_users = PlainUsers::new(users);
            }
            // SCRAM users are kept by the broker; the module, Kafka's, needs no options here.
            (_, Some(module)) if module.class != SCRAM_LOGIN_MODULE => {
                bail!(
                    "invalid value for {jaas_key}: {mechanism} takes {SCRAM_LOGIN_MODULE}, not {}",
                    module.class
                );
            }
            (_, _) => {}
        }
    }
    Ok(SaslSettings {
        mechanisms,
        plain_users,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn properties(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    }

    const PLAIN_JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";"#;

    #[test]
    fn a_listener_takes_its_own_connection_limit() {
        let two = "PLAINTEXT://127.0.0.1:0,ADMIN://127.0.0.1:0";
        let map = "PLAINTEXT:PLAINTEXT,ADMIN:PLAINTEXT";
        let (planned, _) = plan(&properties(&[
            ("listeners", two),
            ("listener.security.protocol.map", map),
            ("listener.name.plaintext.max.connections", "300"),
        ]))
        .unwrap();
        let limits: Vec<Option<usize>> =
            planned.iter().map(|p| p.listener.max_connections).collect();
        assert_eq!(limits, [Some(300), None]);
        for (key, value, named) in [
            (
                "listener.name.plaintext.max.connections",
                "0",
                "listener.name.plaintext.max.connections",
            ),
            (
                "listener.name.plaintext.max.connections",
                "many",
                "\"many\"",
            ),
            ("listener.name.other.max.connections", "5", "listener other"),
        ] {
            let error = plan(&properties(&[
                ("listeners", two),
                ("listener.security.protocol.map", map),
                (key, value),
            ]))
            .unwrap_err()
            .to_string();
            assert!(error.contains(named), "{key}={value}: {error}");
        }
    }

    #[test]
    fn the_default_is_one_plaintext_listener_on_loopback() {
        let (planned, skipped) = plan(&properties(&[])).unwrap();
        assert!(skipped.is_empty());
        let [only] = &planned[..] else {
            panic!("{planned:?}")
        };
        assert_eq!(only.bind, "127.0.0.1:9092".parse().unwrap());
        assert_eq!(only.listener.name, "PLAINTEXT");
        assert_eq!(only.listener.protocol, SecurityProtocol::Plaintext);
        assert_eq!(only.listener.advertised.host, "127.0.0.1");
        assert!(only.listener.sasl.is_none());
    }

    #[test]
    fn named_listeners_take_their_protocols_and_advertised_addresses() {
        let (planned, notes) = plan(&properties(&[
            (
                "listeners",
                "CLIENTS://:9092, internal://127.0.0.1:9094,CONTROLLER://:9093",
            ),
            (
                "listener.security.protocol.map",
                "CLIENTS:SASL_PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            ),
            ("controller.listener.names", "CONTROLLER"),
            // Kafka's own combined-node file advertises the controller listener too.
            (
                "advertised.listeners",
                "CLIENTS://broker1.example.com:19092,CONTROLLER://localhost:9093",
            ),
            ("sasl.enabled.mechanisms", "SCRAM-SHA-512,PLAIN"),
            ("listener.name.clients.plain.sasl.jaas.config", PLAIN_JAAS),
            (
                "listener.name.clients.scram-sha-256.sasl.jaas.config",
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            ),
        ]))
        .unwrap();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].contains("listener CONTROLLER is a controller listener"),
            "{notes:?}"
        );
        assert!(
            notes[1].contains("SCRAM-SHA-256 is not enabled on listener clients"),
            "{notes:?}"
        );
        let names: Vec<_> = planned.iter().map(|p| p.listener.name.as_str()).collect();
        assert_eq!(names, ["CLIENTS", "INTERNAL"]);
        let clients = &planned[0];
        assert_eq!(clients.bind, "0.0.0.0:9092".parse().unwrap());
        assert_eq!(clients.listener.protocol, SecurityProtocol::SaslPlaintext);
        assert_eq!(
            clients.listener.advertised,
            Endpoint {
                host: "broker1.example.com".into(),
                port: 19092
            }
        );
        assert!(clients.advertised_given);
        let sasl = clients.listener.sasl.as_ref().unwrap();
        assert_eq!(sasl.mechanisms, [Mechanism::ScramSha512, Mechanism::Plain]);
        assert_eq!(
            sasl.plain_users.authenticate(b"\0alice\0alice-secret"),
            Ok("alice".into())
        );
        let internal = &planned[1];
        assert_eq!(
            internal.listener.advertised,
            Endpoint {
                host: "127.0.0.1".into(),
                port: 9094
            }
        );
        assert!(!internal.advertised_given);
    }

    #[test]
    fn a_listeners_own_mechanisms_win() {
        let (planned, _) = plan(&properties(&[
            ("listeners", "SASL_PLAINTEXT://127.0.0.1:9092"),
            ("sasl.enabled.mechanisms", "PLAIN"),
            (
                "listener.name.sasl_plaintext.sasl.enabled.mechanisms",
                "SCRAM-SHA-256",
            ),
        ]))
        .unwrap();
        let sasl = planned[0].listener.sasl.as_ref().unwrap();
        assert_eq!(sasl.mechanisms, [Mechanism::ScramSha256]);
        assert!(sasl.plain_users.is_empty());
    }

    #[test]
    fn each_mistake_names_its_key() {
        let sasl = ("listeners", "SASL_PLAINTEXT://127.0.0.1:9092");
        for (pairs, expected) in [
            (
                vec![("listeners", "CLIENTS://:9092")],
                "listener.security.protocol.map",
            ),
            (
                vec![("listeners", "SSL://:9093")],
                "ssl.keystore.type is JKS",
            ),
            (
                vec![("listeners", "PLAINTEXT://:9092,plaintext://:9093")],
                "twice",
            ),
            (
                vec![
                    ("listeners", "A://:9092,B://:9092"),
                    ("listener.security.protocol.map", "A:PLAINTEXT,B:PLAINTEXT"),
                ],
                "port 9092",
            ),
            (vec![("listeners", "PLAINTEXT://:x")], "in listeners"),
            (
                vec![("listener.security.protocol.map", "PLAINTEXT:TLS")],
                "listener.security.protocol.map",
            ),
            (
                vec![("advertised.listeners", "OTHER://h:1")],
                "advertised.listeners names OTHER",
            ),
            (vec![sasl], "GSSAPI"),
            (
                vec![sasl, ("sasl.enabled.mechanisms", "GSSAPI")],
                "not GSSAPI",
            ),
            (
                vec![sasl, ("sasl.enabled.mechanisms", "PLAIN,PLAIN")],
                "twice",
            ),
            (
                vec![sasl, ("sasl.enabled.mechanisms", "")],
                "no SASL mechanisms",
            ),
            (
                vec![sasl, ("sasl.enabled.mechanisms", "PLAIN")],
                "listener.name.sasl_plaintext.plain.sasl.jaas.config is not set",
            ),
            (
                vec![
                    sasl,
                    ("sasl.enabled.mechanisms", "PLAIN"),
                    (
                        "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                        "x.Y required;",
                    ),
                ],
                "takes org.apache.kafka.common.security.plain.PlainLoginModule",
            ),
            (
                vec![
                    sasl,
                    ("sasl.enabled.mechanisms", "PLAIN"),
                    (
                        "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                        "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"a\";",
                    ),
                ],
                "defines no users",
            ),
            (
                vec![
                    sasl,
                    ("sasl.enabled.mechanisms", "SCRAM-SHA-256"),
                    (
                        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config",
                        PLAIN_JAAS,
                    ),
                ],
                "takes org.apache.kafka.common.security.scram.ScramLoginModule",
            ),
            (
                vec![("listener.name.other.sasl.enabled.mechanisms", "PLAIN")],
                "listener.name.other.sasl.enabled.mechanisms names listener other",
            ),
            (
                vec![
                    sasl,
                    ("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
                    (
                        "listener.name.SASL_PLAINTEXT.sasl.enabled.mechanisms",
                        "SCRAM-SHA-256",
                    ),
                ],
                "written in lower case",
            ),
            (
                vec![("advertised.listeners", "PLAINTEXT://a:1,PLAINTEXT://b:2")],
                "names PLAINTEXT twice",
            ),
        ] {
            let error = plan(&properties(&pairs)).unwrap_err().to_string();
            assert!(error.contains(expected), "{pairs:?}: {error}");
        }
    }

    #[test]
    fn ipv6_addresses_are_written_in_brackets() {
        let (planned, _) = plan(&properties(&[("listeners", "PLAINTEXT://[::1]:9092")])).unwrap();
        assert_eq!(planned[0].bind, "[::1]:9092".parse().unwrap());
        assert_eq!(planned[0].listener.advertised.host, "::1");
    }

    #[test]
    fn only_the_per_listener_keys_read_here_are_listener_keys() {
        assert!(is_listener_key(
            "listener.name.clients.sasl.enabled.mechanisms"
        ));
        assert!(is_listener_key(
            "listener.name.clients.scram-sha-512.sasl.jaas.config"
        ));
        assert!(!is_listener_key(
            "listener.name.clients.gssapi.sasl.jaas.config"
        ));
        assert!(is_listener_key(
            "listener.name.clients.ssl.keystore.location"
        ));
        assert!(!is_listener_key("listener.name.clients.ssl.bogus"));
        assert!(!is_listener_key("sasl.enabled.mechanisms"));
    }
}
