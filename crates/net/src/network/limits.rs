//! Connection limits, as Kafka's `ConnectionQuotas` applies them: a broker-wide maximum
//! (`max.connections`) and one per listener (`listener.name.<l>.max.connections`), at which
//! the listener stops accepting until a connection closes (new ones wait in the listen
//! backlog), and a maximum per client address (`max.connections.per.ip`, with exceptions in
//! `max.connections.per.ip.overrides`), beyond which a new connection is closed at once.
//!
//! Connections are also limited in how fast they may be made (KIP-612): at most
//! `max.connection.creation.rate` a second over the broker, and over each listener its own
//! `listener.name.<l>.max.connection.creation.rate`, else the broker's value (see
//! [`super::creation_rate`]).
//!
//! A listener without its own limit may hold `max.connections` less a reserve for each other
//! listener ([`listener_limit`]), so that the clients of one listener cannot take every slot
//! from the others': an administrator's SASL listener stays reachable while its PLAINTEXT
//! neighbour is flooded. (Kafka's listener limit falls back to `max.connections` itself, and
//! only its inter-broker listener is protected.)

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

/// The limits, from the broker's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// `max.connections`: connections open at once. ferrolog's default is 4096 (Kafka's is
    /// unlimited); every connection holds a file descriptor and buffers.
    pub max_connections: usize,
    /// `max.connections.per.ip`: connections open at once from one address. Default
    /// unlimited, as in Kafka.
    pub max_per_ip: usize,
    /// `max.connections.per.ip.overrides`: per-address exceptions.
    pub per_ip_overrides: HashMap<IpAddr, usize>,
    /// `max.connection.creation.rate`: connections made a second over the broker, and over
    /// each listener without its own rate. Unlimited by default (Kafka's 2147483647).
    pub creation_rate: Option<u32>,
    /// Each listener's own limits (`listener.name.<l>.*`), by its name in lower case.
    pub listeners: BTreeMap<String, ListenerLimits>,
}

/// A listener's own limits, where set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenerLimits {
    /// `listener.name.<l>.max.connections`.
    pub max_connections: Option<usize>,
    /// `listener.name.<l>.max.connection.creation.rate`.
    pub creation_rate: Option<u32>,
}

/// The per-listener keys of the limits: `listener.name.<l>.<key>`.
pub const LISTENER_LIMIT_KEYS: [&str; 2] = ["max.connections", "max.connection.creation.rate"];

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 4096,
            max_per_ip: usize::MAX,
            per_ip_overrides: HashMap::new(),
            creation_rate: None,
            listeners: BTreeMap::new(),
        }
    }
}

impl ConnectionLimits {
    /// `base` with the limits `properties` set (`max.connections`, `max.connections.per.ip`,
    /// `max.connections.per.ip.overrides`); the error names the key and the value.
    pub fn from_properties(
        base: &Self,
        properties: &BTreeMap<String, String>,
    ) -> Result<Self, String> {
        let mut limits = base.clone();
        let count = |key: &str, min: usize| -> Result<Option<usize>, String> {
            let Some(value) = properties.get(key) else {
                return Ok(None);
            };
            match value.trim().parse::<usize>() {
                Ok(parsed) if parsed >= min => Ok(Some(parsed)),
                _ => Err(format!(
                    "invalid value {value:?} for {key}: must be an integer of at least {min}"
                )),
            }
        };
        if let Some(max) = count("max.connections", 1)? {
            limits.max_connections = max;
        }
        if let Some(max) = count("max.connections.per.ip", 0)? {
            // Kafka's default, Int.MAX_VALUE, is its way of saying unlimited.
            limits.max_per_ip = if max == i32::MAX as usize {
                usize::MAX
            } else {
                max
            };
        }
        let overrides_key = "max.connections.per.ip.overrides";
        if let Some(value) = properties.get(overrides_key) {
            limits.per_ip_overrides = Self::parse_overrides(value).map_err(|reason| {
                format!("invalid value {value:?} for {overrides_key}: {reason}")
            })?;
        }
        if let Some(rate) = count("max.connection.creation.rate", 0)? {
            limits.creation_rate = rate_limit(rate);
        }
        limits.read_listener_limits(properties)?;
        if limits.max_per_ip == 0 && limits.per_ip_overrides.is_empty() {
            return Err("max.connections.per.ip=0 refuses every connection; it is allowed only with max.connections.per.ip.overrides".into());
        }
        Ok(limits)
    }

    /// Reads `listener.name.<l>.max.connections` (at least 1) and
    /// `listener.name.<l>.max.connection.creation.rate` (at least 0) for every listener named.
    fn read_listener_limits(
        &mut self,
        properties: &BTreeMap<String, String>,
    ) -> Result<(), String> {
        for (key, value) in properties {
            let Some((listener, setting)) = listener_limit_key(key) else {
                continue;
            };
            let min = usize::from(setting == "max.connections");
            let parsed = value
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|parsed| *parsed >= min)
                .ok_or_else(|| {
                    format!(
                        "invalid value {value:?} for {key}: must be an integer of at least {min}"
                    )
                })?;
            let own = self.listeners.entry(listener.to_owned()).or_default();
            if setting == "max.connections" {
                own.max_connections = Some(parsed);
            } else {
                own.creation_rate = rate_limit(parsed);
            }
        }
        Ok(())
    }

    /// The connections a second `listener` may take: its own rate, else the broker's.
    pub fn listener_creation_rate(&self, listener: &str) -> Option<u32> {
        match self.listeners.get(&listener.to_lowercase()) {
            Some(ListenerLimits {
                creation_rate: Some(rate),
                ..
            }) => Some(*rate),
            _ => self.creation_rate,
        }
    }

    /// `listener`'s own `max.connections`, if set.
    pub fn listener_max_connections(&self, listener: &str) -> Option<usize> {
        self.listeners
            .get(&listener.to_lowercase())
            .and_then(|own| own.max_connections)
    }

    /// The most connections `ip` may hold.
    pub fn max_for(&self, ip: IpAddr) -> usize {
        self.per_ip_overrides
            .get(&ip)
            .copied()
            .unwrap_or(self.max_per_ip)
    }

    /// Parses `max.connections.per.ip.overrides`: `host:count` pairs separated by commas, each
    /// split at its last `:` (so IPv6 addresses work), as Kafka reads it. A host name is
    /// resolved once, now, to its first address, as Kafka does.
    pub fn parse_overrides(value: &str) -> Result<HashMap<IpAddr, usize>, String> {
        let mut overrides = HashMap::new();
        for pair in value
            .split(',')
            .map(str::trim)
            .filter(|pair| !pair.is_empty())
        {
            let (host, count) = pair
                .rsplit_once(':')
                .ok_or_else(|| format!("{pair:?} is not host:count"))?;
            let (host, count) = (host.trim(), count.trim());
            let count: usize = count
                .parse()
                .map_err(|_| format!("{pair:?}: {count:?} is not a count of connections"))?;
            let ip = match host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
            {
                Ok(ip) => ip,
                Err(_) => (host, 0)
                    .to_socket_addrs()
                    .ok()
                    .and_then(|mut addresses| addresses.next())
                    .map(|address| address.ip())
                    .ok_or_else(|| format!("{pair:?}: {host:?} does not resolve to an address"))?,
            };
            overrides.insert(ip, count);
        }
        Ok(overrides)
    }
}

/// `(listener, setting)` of a per-listener limit key, `listener.name.<l>.<setting>`.
pub fn listener_limit_key(key: &str) -> Option<(&str, &str)> {
    let rest = key.strip_prefix("listener.name.")?;
    let (listener, setting) = rest.split_once('.')?;
    (!listener.is_empty() && LISTENER_LIMIT_KEYS.contains(&setting)).then_some((listener, setting))
}

/// A connection creation rate as read: Kafka's 2147483647 is its way of saying unlimited.
fn rate_limit(rate: usize) -> Option<u32> {
    u32::try_from(rate)
        .ok()
        .filter(|rate| i64::from(*rate) < i64::from(i32::MAX))
}

/// Slots each listener without a limit of its own leaves for every other listener, at most.
pub const LISTENER_RESERVE: usize = 64;

/// The connections a listener may hold at once: its own limit if set, else `max_connections`
/// less a reserve for each of the other `listeners - 1` ([`LISTENER_RESERVE`], or a quarter of
/// an even share when `max_connections` is small), and at least one.
pub fn listener_limit(own: Option<usize>, max_connections: usize, listeners: usize) -> usize {
    if let Some(own) = own {
        return own;
    }
    let others = listeners.saturating_sub(1);
    let reserve = LISTENER_RESERVE.min(max_connections / (4 * listeners.max(1)));
    max_connections.saturating_sub(reserve * others).max(1)
}

/// The connections open per client address. A connection holds an [`AddressSlot`] for its
/// life; dropping it frees the slot.
#[derive(Debug)]
pub struct AddressQuotas {
    limits: RwLock<ConnectionLimits>,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection's place in its address's count.
#[derive(Debug)]
pub struct AddressSlot {
    quotas: Arc<AddressQuotas>,
    ip: IpAddr,
}

impl AddressQuotas {
    pub fn new(limits: ConnectionLimits) -> Arc<Self> {
        Arc::new(Self {
            limits: RwLock::new(limits),
            open: Mutex::new(HashMap::new()),
        })
    }

    /// Holds new connections to `limits` from now on; connections open beyond them stay.
    pub fn set_limits(&self, limits: ConnectionLimits) {
        *self.limits.write() = limits;
    }

    /// A slot for a new connection from `ip`, or the limit it would exceed.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<AddressSlot, usize> {
        let max = self.limits.read().max_for(ip);
        let mut open = self.open.lock();
        let count = open.entry(ip).or_insert(0);
        if *count >= max {
            if *count == 0 {
                open.remove(&ip);
            }
            return Err(max);
        }
        *count += 1;
        Ok(AddressSlot {
            quotas: Arc::clone(self),
            ip,
        })
    }

    /// Connections open from `ip`.
    pub fn open_from(&self, ip: IpAddr) -> usize {
        self.open.lock().get(&ip).copied().unwrap_or(0)
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.quotas.open.lock();
        if let Some(count) = open.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn overrides_parse_as_kafka_reads_them() {
        let overrides =
            ConnectionLimits::parse_overrides(" 127.0.0.2:5 , ::1:7,[fe80::1]:9, localhost:3 ")
                .unwrap();
        assert_eq!(overrides.get(&ip("127.0.0.2")), Some(&5));
        assert_eq!(overrides.get(&ip("::1")), Some(&7));
        assert_eq!(overrides.get(&ip("fe80::1")), Some(&9));
        assert_eq!(overrides.len(), 4, "localhost resolved: {overrides:?}");
        assert!(ConnectionLimits::parse_overrides("").unwrap().is_empty());
        for bad in [
            "127.0.0.1",
            "127.0.0.1:x",
            "127.0.0.1:-1",
            "no.such.host.invalid:3",
        ] {
            assert!(ConnectionLimits::parse_overrides(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_address_gets_exactly_its_limit_and_slots_come_back() {
        let limits = ConnectionLimits {
            max_per_ip: 2,
            per_ip_overrides: HashMap::from([(ip("10.0.0.9"), 1)]),
            ..ConnectionLimits::default()
        };
        let quotas = AddressQuotas::new(limits);
        let first = quotas.admit(ip("10.0.0.1")).unwrap();
        let _second = quotas.admit(ip("10.0.0.1")).unwrap();
        assert_eq!(quotas.admit(ip("10.0.0.1")).unwrap_err(), 2);
        let _other = quotas.admit(ip("10.0.0.2")).unwrap();
        let _special = quotas.admit(ip("10.0.0.9")).unwrap();
        assert_eq!(quotas.admit(ip("10.0.0.9")).unwrap_err(), 1);
        drop(first);
        assert_eq!(quotas.open_from(ip("10.0.0.1")), 1);
        let _again = quotas.admit(ip("10.0.0.1")).unwrap();
    }

    #[test]
    fn a_listener_without_a_limit_leaves_a_reserve_to_each_other_listener() {
        assert_eq!(listener_limit(None, 4096, 1), 4096);
        assert_eq!(listener_limit(None, 4096, 2), 4096 - 64);
        assert_eq!(listener_limit(None, 4096, 3), 4096 - 128);
        assert_eq!(listener_limit(Some(10), 4096, 3), 10);
        // Few slots: a quarter of an even share each.
        assert_eq!(listener_limit(None, 100, 2), 100 - 12);
        assert_eq!(listener_limit(None, 3, 3), 3);
        assert_eq!(listener_limit(None, 1, 2), 1);
    }

    #[test]
    fn a_zero_override_refuses_every_connection_from_that_address() {
        let limits = ConnectionLimits {
            per_ip_overrides: HashMap::from([(ip("10.0.0.9"), 0)]),
            ..ConnectionLimits::default()
        };
        let quotas = AddressQuotas::new(limits);
        assert_eq!(quotas.admit(ip("10.0.0.9")).unwrap_err(), 0);
        assert_eq!(quotas.open_from(ip("10.0.0.9")), 0);
    }
}
