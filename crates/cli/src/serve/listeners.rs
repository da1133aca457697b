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
        || setting == "max.connection.creation.rate"
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
    apply_advertised(&mut planned, properties, &controllers)?;
    let mut notes: Vec<String> = skipped
        .iter()
        .map(|name| format!("listener {name} is a controller listener (controller.listener.names); ferrolog has no controller quorum and does not serve it"))
        .collect();
    apply_listener_keys(&mut planned, properties, &mut notes)?;
    Ok((planned, notes))
}

/// Applies `advertised.listeners` to the planned listeners (a controller's entry is passed
/// over, as Kafka's own combined-node server.properties advertises its controller too).
fn apply_advertised(
    planned: &mut [PlannedListener],
    properties: &BTreeMap<String, String>,
    controllers: &BTreeSet<String>,
) -> anyhow::Result<()> {
    let Some(advertised) = properties.get("advertised.listeners") else {
        return Ok(());
    };
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
    Ok(())
}

/// Applies the per-listener keys (`listener.name.<name>.<key>`) to the planned listeners,
/// refusing those naming a listener not served (or not of their kind), and noting the JAAS
/// configurations of mechanisms not enabled.
fn apply_listener_keys(
    planned: &mut [PlannedListener],
    properties: &BTreeMap<String, String>,
    notes: &mut Vec<String>,
) -> anyhow::Result<()> {
    for key in properties.keys() {
        let Some((name, setting)) = listener_key_parts(key) else {
            continue;
        };
        if name != name.to_lowercase() {
            bail!(
                "{key}: the listener's name is written in lower case in per-listener keys, as Kafka reads them"
            );
        }
        if setting == "max.connection.creation.rate" {
            // Read with the other connection limits; here only its listener is checked.
            if !planned
                .iter()
                .any(|p| p.listener.name.eq_ignore_ascii_case(name))
            {
                bail!("{key} names listener {name}, which is not served here");
            }
            continue;
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
    Ok(())
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
mod tests;
