//! Dynamic group configs: the values a group sets for itself through IncrementalAlterConfigs or
//! AlterConfigs on a GROUP resource, over the broker's `group.consumer.*` settings, as Kafka 4's
//! group configs. Kafka keeps them in its metadata log; a single node keeps them in the document
//! `ferrolog-group-configs` of the storage layer, written whole under a new generation at each
//! change (atomically, fsynced, in every data directory) before the change is in force.
//!
//! As in Kafka, a group need not exist to be given configs, and its configs outlive it
//! (DeleteGroups leaves them): they apply to any later group of that id. A change takes effect
//! at each member's next heartbeat: the heartbeat interval in its answer, the session timeout
//! armed by it, and the assignment interval at the next target assignment it asks for. Nothing
//! is rescheduled at the change itself.
//!
//! The document's body is a table of values by group id
//! ([`ferrolog_storage::manager::render_table`]).

mod rules;
mod share_rules;

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrolog_storage::manager::{Document, LogManager, parse_table, render_table};
use ferrolog_storage::{Result, StorageError};
use parking_lot::{Mutex, RwLock};

pub use rules::{
    ConsumerTiming, DescribedGroupConfig, GROUP_CONFIG_KEYS, GroupConfigKey, consumer_timing,
};
pub use share_rules::{OffsetReset, SHARE_KEYS, ShareGroupSettings};

use super::consumer::ConsumerGroupConfig;
use super::share::ShareGroupConfig;

/// The broker's settings the groups' own values are checked against and fall back to.
#[derive(Debug, Clone, Copy)]
pub struct BrokerGroupSettings<'a> {
    pub consumer: &'a ConsumerGroupConfig,
    pub share: &'a ShareGroupConfig,
}

/// Checks a group's whole set of values after a change, as Kafka does; the error is Kafka's
/// message (INVALID_CONFIG).
pub fn validate(
    values: &BTreeMap<String, String>,
    broker: BrokerGroupSettings<'_>,
) -> std::result::Result<(), String> {
    rules::validate(values, broker.consumer)?;
    share_rules::validate(values, broker.share)
}

/// The document the group configs are kept in.
pub const GROUP_CONFIGS_DOCUMENT: &str = "ferrolog-group-configs";
/// The longest value Kafka stores.
const MAX_VALUE_BYTES: usize = 32_767;
/// The longest group id that may have configs of its own: Kafka's limit on a topic name. The
/// document holds every group's id, so an id of any length would let it grow without bound.
pub const MAX_GROUP_ID_BYTES: usize = 249;

/// A change to a group's configs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Alteration {
    /// IncrementalAlterConfigs: each key SET to its value, or DELETEd (`None`).
    Incremental(Vec<(String, Option<String>)>),
    /// AlterConfigs: the group's whole set becomes this.
    Replace(BTreeMap<String, String>),
}

/// Why a change was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A value Kafka refuses too (INVALID_CONFIG), with Kafka's message.
    Invalid(String),
    /// Beyond what this broker keeps (POLICY_VIOLATION): `ferrolog.max.group.configs` groups
    /// with configs already, or a group id longer than [`MAX_GROUP_ID_BYTES`].
    Limit(String),
    /// The document could not be stored; the change is not in force.
    NotStored(String),
}

/// Every group's own config values; the one owner of them.
#[derive(Debug)]
pub struct GroupConfigs {
    manager: Arc<LogManager>,
    values: RwLock<BTreeMap<String, BTreeMap<String, String>>>,
    /// The document's generation; held while a change is written, which serializes changes.
    generation: Mutex<u64>,
}

impl GroupConfigs {
    /// Loads the newest copy of the document and brings the directories holding older ones up
    /// to date. A body that does not parse stops startup, naming its file and line.
    pub fn open(manager: Arc<LogManager>) -> Result<Self> {
        let document = manager.documents().read(GROUP_CONFIGS_DOCUMENT)?;
        let values = parse_table(&document.body).map_err(|(line, reason)| {
            let file = document.source.clone().unwrap_or_default();
            StorageError::Fatal(format!("{}, line {}: {reason}", file.display(), line + 3))
        })?;
        manager
            .documents()
            .spread(GROUP_CONFIGS_DOCUMENT, &document)?;
        Ok(Self {
            manager,
            values: RwLock::new(values),
            generation: Mutex::new(document.generation),
        })
    }

    /// The values `group` set, as stored.
    pub fn values(&self, group: &str) -> Option<BTreeMap<String, String>> {
        self.values.read().get(group).cloned()
    }

    /// Every group's values, by group id.
    pub fn all(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.values.read().clone()
    }

    /// What a consumer group of this id runs with under `broker`'s settings.
    pub fn consumer_timing(&self, group: &str, broker: &ConsumerGroupConfig) -> ConsumerTiming {
        consumer_timing(self.values.read().get(group), broker)
    }

    /// What a share group of this id runs with under `broker`'s settings.
    pub fn share_settings(&self, group: &str, broker: &ShareGroupConfig) -> ShareGroupSettings {
        share_rules::settings(self.values.read().get(group), broker)
    }

    /// Every key of `group` as DescribeConfigs shows it.
    pub fn describe(
        &self,
        group: &str,
        broker: BrokerGroupSettings<'_>,
    ) -> Vec<DescribedGroupConfig> {
        let values = self.values.read();
        let mut all = rules::describe(values.get(group), broker.consumer);
        all.extend(share_rules::describe(values.get(group), broker.share));
        all
    }

    /// Checks `alteration` against the group's whole resulting set and, unless
    /// `validate_only`, stores it and puts it in force. At most `max_groups` groups have
    /// configs of their own (`ferrolog.max.group.configs`).
    pub fn alter(
        &self,
        group: &str,
        alteration: Alteration,
        (broker, max_groups): (BrokerGroupSettings<'_>, usize),
        validate_only: bool,
    ) -> std::result::Result<(), Refusal> {
        let mut generation = self.generation.lock();
        let current = self.values(group).unwrap_or_default();
        let next = match alteration {
            Alteration::Incremental(changes) => {
                let mut next = current.clone();
                for (key, value) in changes {
                    match value {
                        Some(value) => next.insert(key, value),
                        None => next.remove(&key),
                    };
                }
                next
            }
            Alteration::Replace(next) => next,
        };
        if next.values().any(|value| value.len() > MAX_VALUE_BYTES) {
            return Err(Refusal::Invalid(format!(
                "The configuration value cannot be added because it exceeds the maximum value size of {MAX_VALUE_BYTES} bytes."
            )));
        }
        validate(&next, broker).map_err(Refusal::Invalid)?;
        // Kept trimmed: no key's value is worth its padding.
        let next: BTreeMap<String, String> = next
            .into_iter()
            .map(|(key, value)| (key, value.trim().to_owned()))
            .collect();
        if validate_only || next == current {
            return Ok(());
        }
        if !next.is_empty() && current.is_empty() {
            if group.len() > MAX_GROUP_ID_BYTES {
                return Err(Refusal::Limit(format!(
                    "a group id of more than {MAX_GROUP_ID_BYTES} bytes cannot have configs of its own"
                )));
            }
            if self.values.read().len() >= max_groups {
                return Err(Refusal::Limit(format!(
                    "{max_groups} groups already have configs of their own (ferrolog.max.group.configs)"
                )));
            }
        }
        let mut all = self.values.read().clone();
        if next.is_empty() {
            all.remove(group);
        } else {
            all.insert(group.to_owned(), next);
        }
        // The generation is spent even when the store fails: a copy may have been written.
        *generation += 1;
        let document = Document {
            generation: *generation,
            body: render_table(&all),
            source: None,
        };
        self.manager
            .documents()
            .store(GROUP_CONFIGS_DOCUMENT, &document)
            .map_err(|error| Refusal::NotStored(error.to_string()))?;
        *self.values.write() = all;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
