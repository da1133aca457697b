//! Broker configs changed at run time through IncrementalAlterConfigs on a BROKER resource, as
//! Kafka's dynamic broker configs: a value for this broker (resource name = its node id) wins
//! over the cluster-wide default (empty name), and both over `server.properties`.
//!
//! What may change (`catalog::DYNAMIC_KEYS`): the topics' defaults Kafka lets change (the first
//! of each topic key's broker synonyms: `log.retention.ms`, `log.segment.bytes`,
//! `message.max.bytes`, ...), which every live log takes at once under its topic's overrides;
//! the throttles (`replica.alter.log.dirs.io.max.bytes.per.second` limits moves between data
//! directories; the replication rates `kafka-reassign-partitions` sets are kept and limit
//! nothing on a single node); the cleaner's settings (`cleaner`); ferrolog's
//! `ferrolog.scrub.bytes.per.second` (0 pauses the scrubber); and a TLS listener's key and
//! trust stores, on this broker only (`listener_tls`).
//!
//! Kept as Kafka keeps them in its metadata log (`ConfigRecord`s): here the document
//! `ferrolog-broker-configs`, written whole under a new generation at each change (atomically,
//! fsynced, in every data directory) before the change is in force, and set again at each
//! start. The body: one line per value, `broker <key> <value>` or `default <key> <value>`, the
//! value `%`-escaped as the other documents' are.

pub mod catalog;
mod catalog_table;
mod cleaner;
mod connections;
pub mod describe;
mod document;
pub mod listener_tls;

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrolog_net::network::limits::ConnectionLimits;
use ferrolog_net::network::live_limits::LiveLimits;
use ferrolog_storage::manager::{Document, LogManager, topic_defaults_from};
use ferrolog_storage::{Result, StorageError};
use parking_lot::{Mutex, RwLock};

pub use catalog::{BrokerKey, Kind, is_dynamic};
pub use cleaner::CLEANER_RATE;
#[cfg(test)]
use document::parse;
pub use document::topic_defaults_set;
use document::{read_document, render};
pub use listener_tls::TlsListener;

/// Bytes per second copied into future logs, over every move.
pub const MOVE_RATE: &str = "replica.alter.log.dirs.io.max.bytes.per.second";
/// Bytes per second the scrubber re-reads sealed segments at (0 pauses it).
pub const SCRUB_RATE: &str = "ferrolog.scrub.bytes.per.second";
/// The document the dynamic values are kept in.
pub const BROKER_CONFIGS_DOCUMENT: &str = "ferrolog-broker-configs";
/// Whose value a change sets: this broker's, or every broker's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Resource name: this broker's node id.
    Broker,
    /// Resource name: empty.
    ClusterDefault,
}

/// One change of an IncrementalAlterConfigs resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// SET `key` to the value.
    Set(String, String),
    /// DELETE `key`.
    Delete(String),
    /// APPEND the comma-separated items to the list `key`.
    Append(String, String),
    /// SUBTRACT the comma-separated items from the list `key`.
    Subtract(String, String),
}

impl Change {
    fn key(&self) -> &str {
        match self {
            Self::Set(key, _)
            | Self::Delete(key)
            | Self::Append(key, _)
            | Self::Subtract(key, _) => key,
        }
    }
}

/// Why a change was refused: Kafka's error code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub code: i16,
    pub message: String,
}

impl Refused {
    fn request(message: String) -> Self {
        Self {
            code: crate::errors::INVALID_REQUEST,
            message,
        }
    }
}

/// The dynamic values of each scope.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Values {
    pub broker: BTreeMap<String, String>,
    pub default: BTreeMap<String, String>,
}

impl Values {
    fn of_scope(&mut self, scope: Scope) -> &mut BTreeMap<String, String> {
        match scope {
            Scope::Broker => &mut self.broker,
            Scope::ClusterDefault => &mut self.default,
        }
    }
}

/// The dynamic values, kept durably, and the static ones they stand over.
pub struct DynamicBrokerConfigs {
    manager: Arc<LogManager>,
    /// `server.properties` (with the command line's settings) as the broker started with it.
    static_configs: BTreeMap<String, String>,
    values: RwLock<Values>,
    /// The document's generation; held while a change is written, which serializes changes.
    generation: Mutex<u64>,
    /// The TLS listeners whose stores may change, once `serve` installed them.
    tls_listeners: RwLock<Vec<TlsListener>>,
    /// The connection limits of `server.properties` and those in force, once installed.
    connections: std::sync::OnceLock<(ConnectionLimits, Arc<LiveLimits>)>,
}

impl std::fmt::Debug for DynamicBrokerConfigs {
    /// The keys only: values may be passwords.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let values = self.values.read();
        f.debug_struct("DynamicBrokerConfigs")
            .field(
                "static_keys",
                &self.static_configs.keys().collect::<Vec<_>>(),
            )
            .field("broker_keys", &values.broker.keys().collect::<Vec<_>>())
            .field("default_keys", &values.default.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl DynamicBrokerConfigs {
    /// Loads the newest copy of the document, brings the directories holding older ones up to
    /// date, and puts the values in force: opened before the manager's background work starts,
    /// so that retention never runs on the defaults they replace. A body that does not parse stops startup, naming
    /// its file and line.
    pub fn open(
        manager: Arc<LogManager>,
        static_configs: BTreeMap<String, String>,
    ) -> Result<Self> {
        let (document, values) = read_document(&manager)?;
        manager
            .documents()
            .spread(BROKER_CONFIGS_DOCUMENT, &document)?;
        let configs = Self {
            manager,
            static_configs,
            values: RwLock::new(values),
            generation: Mutex::new(document.generation),
            tls_listeners: RwLock::new(Vec::new()),
            connections: std::sync::OnceLock::new(),
        };
        if configs.values.read().broker.len() + configs.values.read().default.len() > 0 {
            let merged = configs.merged(&configs.values.read());
            let defaults = topic_defaults_from(&configs.manager.config().log_defaults, &merged)
                .map_err(|error| {
                    StorageError::Fatal(format!("{BROKER_CONFIGS_DOCUMENT}: {error}"))
                })?;
            configs.manager.topic_configs().set_defaults(defaults);
            configs.publish_rates(true);
        }
        Ok(configs)
    }

    /// Checks every change as Kafka does, then (unless `validate_only`) stores them all and
    /// puts them in force; a refusal changes nothing.
    pub fn apply(
        &self,
        scope: Scope,
        changes: &[Change],
        validate_only: bool,
    ) -> std::result::Result<(), Refused> {
        let mut generation = self.generation.lock();
        self.apply_locked(&mut generation, scope, changes, validate_only)
    }

    /// The legacy AlterConfigs: the values of `scope` become exactly `replacement`, as Kafka
    /// replaces them, checked and applied as [`DynamicBrokerConfigs::apply`] does.
    pub fn replace(
        &self,
        scope: Scope,
        replacement: &BTreeMap<String, String>,
        validate_only: bool,
    ) -> std::result::Result<(), Refused> {
        let mut generation = self.generation.lock();
        let mut values = self.values();
        let current = values.of_scope(scope);
        let changes: Vec<Change> = current
            .keys()
            .filter(|key| !replacement.contains_key(*key))
            .map(|key| Change::Delete(key.clone()))
            .chain(
                replacement
                    .iter()
                    .map(|(key, value)| Change::Set(key.clone(), value.clone())),
            )
            .collect();
        self.apply_locked(&mut generation, scope, &changes, validate_only)
    }

    /// [`DynamicBrokerConfigs::apply`], the document's generation held.
    fn apply_locked(
        &self,
        generation: &mut u64,
        scope: Scope,
        changes: &[Change],
        validate_only: bool,
    ) -> std::result::Result<(), Refused> {
        let current = self.values.read().clone();
        let next = next_values(&current, scope, changes)?;
        let merged = self.merged(&next);
        let defaults = topic_defaults_from(&self.manager.config().log_defaults, &merged)
            .map_err(|error| Refused::request(kafka_message(error)))?;
        for values in [&next.broker, &next.default] {
            let rates = [MOVE_RATE, SCRUB_RATE]
                .into_iter()
                .chain(catalog::THROTTLE_KEYS.iter().copied());
            for key in rates {
                if let Some(value) = values.get(key) {
                    parse_rate(key, value).map_err(Refused::request)?;
                }
            }
        }
        cleaner::check(&self.manager, &merged)?;
        self.check_limits(&merged)?;
        let listeners = listener_tls::touched(changes.iter().map(Change::key));
        let stores = listener_tls::prepare(&self.tls_listeners.read(), &listeners, &merged)
            .map_err(Refused::request)?;
        if validate_only || (next == current && stores.is_empty()) {
            return Ok(());
        }
        if next != current {
            self.store(generation, &next)?;
        }
        let defaults_changed = defaults != self.manager.topic_configs().defaults();
        *self.values.write() = next;
        if defaults_changed {
            self.manager.topic_configs().set_defaults(defaults);
        }
        listener_tls::serve(stores);
        self.publish_rates(false);
        self.publish_limits();
        Ok(())
    }

    /// Writes `values` as the document's next generation.
    fn store(&self, generation: &mut u64, values: &Values) -> std::result::Result<(), Refused> {
        // The generation is spent even when the store fails: a copy may have been written.
        *generation += 1;
        let document = Document {
            generation: *generation,
            body: render(values),
            source: None,
        };
        self.manager
            .documents()
            .store(BROKER_CONFIGS_DOCUMENT, &document)
            .map_err(|error| Refused {
                code: crate::errors::UNKNOWN_SERVER_ERROR,
                message: format!("the broker configs could not be stored: {error}"),
            })
    }

    /// Takes the TLS listeners whose stores may change, and serves on each the stores this
    /// broker's values set (kept from an earlier run). A stored store that no longer loads is
    /// reported at ERROR, naming the listener, and the listener serves the store of
    /// `server.properties`, so that the broker starts and the value can be set right with
    /// `kafka-configs`.
    pub fn install_tls_listeners(&self, listeners: Vec<TlsListener>) {
        let values = self.values();
        let merged = self.merged(&values);
        let stored = listener_tls::touched(values.broker.keys().map(String::as_str));
        *self.tls_listeners.write() = listeners;
        let listeners = self.tls_listeners.read();
        for name in stored {
            let Some(listener) = listeners.iter().find(|listener| listener.name == name) else {
                tracing::warn!(
                    listener = name,
                    "stores set at run time for a listener no longer served"
                );
                continue;
            };
            match (listener.rebuild)(&merged) {
                Ok(next) => listener_tls::serve(vec![(Arc::clone(&listener.tls), next)]),
                Err(error) => tracing::error!(
                    listener = name,
                    error,
                    "the TLS stores set at run time do not load; serving those of server.properties until they are set again with kafka-configs"
                ),
            }
        }
    }

    /// The rate in force for `key`: this broker's value, else the cluster default, else none
    /// (the configured one applies).
    pub fn rate(&self, key: &str) -> Option<f64> {
        let values = self.values.read();
        values
            .broker
            .get(key)
            .or_else(|| values.default.get(key))
            .and_then(|value| parse_rate(key, value).ok())
    }

    /// The dynamic values of each scope.
    pub fn values(&self) -> Values {
        self.values.read().clone()
    }

    /// The broker's settings as it started with them.
    pub fn static_configs(&self) -> &BTreeMap<String, String> {
        &self.static_configs
    }

    /// Every setting in force: the static ones, under the cluster defaults, under this
    /// broker's own values.
    fn merged(&self, values: &Values) -> BTreeMap<String, String> {
        let mut merged = self.static_configs.clone();
        merged.extend(values.default.iter().map(|(k, v)| (k.clone(), v.clone())));
        merged.extend(values.broker.iter().map(|(k, v)| (k.clone(), v.clone())));
        merged
    }

    /// Hands the move throttle, the scrubber and the cleaner (once started) their rates, and
    /// the cleaner its other settings (`at_start`: whatever its threads started with).
    pub fn publish_rates(&self, at_start: bool) {
        cleaner::publish(&self.manager, &self.merged(&self.values()), at_start);
        self.manager.moves().set_rate(self.rate(MOVE_RATE));
        let configured = self.manager.config().scrub.bytes_per_second;
        let scrub_rate = self.rate(SCRUB_RATE).unwrap_or(configured);
        self.manager.scrubber().set_rate(scrub_rate);
    }
}

/// `current` with `changes` made at `scope`, refused as Kafka refuses: keys that cannot change
/// at run time, then values not of the key's type, then a listener's stores at the default.
fn next_values(
    current: &Values,
    scope: Scope,
    changes: &[Change],
) -> std::result::Result<Values, Refused> {
    check_keys(changes)?;
    let mut next = current.clone();
    let values = next.of_scope(scope);
    for change in changes {
        let key = change.key();
        let listed = |values: &BTreeMap<String, String>| -> String {
            values
                .get(key)
                .map(String::as_str)
                .or_else(|| catalog::key(key).and_then(|known| known.default))
                .unwrap_or("")
                .to_owned()
        };
        match change {
            Change::Set(_, value) => {
                values.insert(key.to_owned(), value.trim().to_owned());
            }
            Change::Delete(_) => {
                values.remove(key);
            }
            Change::Append(_, changed) | Change::Subtract(_, changed) => {
                let append = matches!(change, Change::Append(..));
                let list = changed_list(&listed(values), changed, append);
                values.insert(key.to_owned(), list);
            }
        }
    }
    for (key, value) in next.of_scope(scope).iter() {
        if let Some(known) = catalog::key(key) {
            // Kafka names a listener's own key by the key it stands for.
            catalog::check_type(known, known.name, value).map_err(Refused::request)?;
        }
    }
    let per_broker: Vec<&str> = changes
        .iter()
        .filter(|change| !matches!(change, Change::Delete(_)))
        .map(Change::key)
        .filter(|key| listener_tls::listener_of(key).is_some())
        .collect();
    if scope == Scope::ClusterDefault && !per_broker.is_empty() {
        return Err(Refused::request(format!(
            "Cannot update these configs at default cluster level, broker id must be specified: [{}]",
            per_broker.join(", ")
        )));
    }
    Ok(next)
}

/// Refuses, as Kafka does and in its order: APPEND or SUBTRACT on a key that is not a list,
/// keys that cannot change at run time, a listener's store keys without its prefix; then keys
/// ferrolog does not know (which Kafka would keep).
fn check_keys(changes: &[Change]) -> std::result::Result<(), Refused> {
    for change in changes {
        let verb = match change {
            Change::Append(..) => "append",
            Change::Subtract(..) => "subtract",
            Change::Set(..) | Change::Delete(_) => continue,
        };
        let key = change.key();
        if catalog::key(key).map(|known| known.kind) != Some(Kind::List) {
            return Err(Refused {
                code: crate::errors::INVALID_CONFIG,
                message: format!("Config value {verb} is not allowed for config key: {key}"),
            });
        }
    }
    let set: Vec<&str> = changes
        .iter()
        .filter(|change| !matches!(change, Change::Delete(_)))
        .map(Change::key)
        .collect();
    let known = |key: &&str| catalog::key(key).is_some() || catalog::THROTTLE_KEYS.contains(key);
    let store_key = |key: &&str| {
        listener_tls::STORE_KEYS.contains(key) || listener_tls::listener_of(key).is_some()
    };
    let refusals: [(Vec<&str>, &str); 3] = [
        (
            set.iter()
                .copied()
                .filter(|key| known(key) && !is_dynamic(key) && !store_key(key))
                .collect(),
            "Cannot update these configs dynamically",
        ),
        (
            set.iter()
                .copied()
                .filter(|key| listener_tls::STORE_KEYS.contains(key))
                .collect(),
            "These security configs can be dynamically updated only per-listener using the listener prefix",
        ),
        (
            set.iter().copied().filter(|key| !known(key)).collect(),
            "These are not broker configs ferrolog knows",
        ),
    ];
    for (keys, refusal) in refusals {
        if !keys.is_empty() {
            return Err(Refused::request(format!(
                "{refusal}: [{}]",
                keys.join(", ")
            )));
        }
    }
    Ok(())
}

/// A refused value in Kafka's words: `Invalid value <value> for configuration <key>: why`.
fn kafka_message(error: StorageError) -> String {
    match error {
        StorageError::InvalidConfig { key, value, reason } => {
            format!("Invalid value {value} for configuration {key}: {reason}")
        }
        other => other.to_string(),
    }
}

/// The list value `current` with the items of `changed` appended (those not in it yet) or
/// subtracted, as IncrementalAlterConfigs' APPEND and SUBTRACT change a list config (a
/// broker's or a topic's); items are comma-separated and trimmed, empty ones dropped.
pub fn changed_list(current: &str, changed: &str, append: bool) -> String {
    let items = |text: &str| -> Vec<String> {
        text.split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let mut list = items(current);
    let changed = items(changed);
    if append {
        for item in changed {
            if !list.contains(&item) {
                list.push(item);
            }
        }
    } else {
        list.retain(|item| !changed.contains(item));
    }
    list.join(",")
}

/// A rate in bytes per second: an integer of at least 0, as Kafka's (0 copies nothing).
fn parse_rate(key: &str, value: &str) -> std::result::Result<f64, String> {
    value
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|rate| *rate >= 0)
        .map(|rate| rate as f64)
        .ok_or_else(|| {
            format!("Invalid value {value} for configuration {key}: Value must be at least 0")
        })
}

#[cfg(test)]
mod tests;
