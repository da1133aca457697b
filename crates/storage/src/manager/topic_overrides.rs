//! The LogManager's side of topic-level configuration: the overrides each topic has, the
//! configuration its logs run with, and keeping both across restarts through
//! `ferrolog-topic-configs` (see `topic_configs` for the file).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::LogManager;
use super::data_dir::DataDir;
use super::documents::{self, Document};
use super::topic_configs::{self, StoredTopicConfigs, TOPIC_CONFIGS_FILE, TopicOverrides};
use crate::config::LogConfig;
use crate::error::Result;

/// Topic-level configuration: each topic's overrides, the configuration its logs run with,
/// and changing them (Kafka's CreateTopics, AlterConfigs and IncrementalAlterConfigs), kept
/// across restarts. Returned by [`LogManager::topic_configs`].
#[derive(Debug, Clone, Copy)]
pub struct TopicConfigs<'a> {
    pub(super) manager: &'a LogManager,
}

impl TopicConfigs<'_> {
    /// The effective configuration of `topic`: the broker defaults with its overrides applied.
    pub fn config(&self, topic: &str) -> LogConfig {
        effective_config(
            &self.manager.log_defaults.read(),
            self.manager.topic_overrides.read().overrides.get(topic),
        )
    }

    /// The broker-level defaults of every topic in force.
    pub fn defaults(&self) -> LogConfig {
        self.manager.log_defaults.read().clone()
    }

    /// Replaces the broker-level defaults (Kafka's dynamic `log.*` broker configs): every live
    /// log sees its topic's overrides over the new defaults at once. Not stored here: the
    /// broker keeps its dynamic configs and sets them again at each start.
    pub fn set_defaults(&self, defaults: LogConfig) {
        // Held so no log is created, and no topic reconfigured, from the defaults replaced.
        let _creating = self.manager.create_lock.lock();
        *self.manager.log_defaults.write() = defaults.clone();
        let overrides = self.manager.topic_overrides.read().overrides.clone();
        for (topic_partition, log) in self.live_logs() {
            log.update_config(effective_config(
                &defaults,
                overrides.get(&topic_partition.topic),
            ));
        }
        tracing::info!("topic defaults changed");
    }

    /// Every log that takes configuration: the partitions' logs and the future logs of moves.
    fn live_logs(&self) -> Vec<(crate::types::TopicPartition, Arc<crate::log::Log>)> {
        let futures = self.manager.moves().future_logs().into_iter();
        let moving = futures.map(|future| (future.topic_partition, future.log));
        self.manager.logs().into_iter().chain(moving).collect()
    }

    /// The overrides set for `topic`.
    pub fn overrides(&self, topic: &str) -> BTreeMap<String, String> {
        self.manager
            .topic_overrides
            .read()
            .overrides
            .get(topic)
            .cloned()
            .unwrap_or_default()
    }

    /// The configuration `topic` would have with `overrides`, or why they are refused.
    pub fn validate(&self, topic: &str, overrides: &BTreeMap<String, String>) -> Result<LogConfig> {
        topic_configs::check_storable(topic, overrides)?;
        self.defaults().with(
            overrides
                .iter()
                .map(|(key, value)| (key.as_str(), value.as_str())),
        )
    }

    /// Replaces `topic`'s overrides (Kafka's topic-level keys); every live log of the topic sees
    /// the new configuration at once, and the overrides are kept across restarts. Invalid keys
    /// or values change nothing; if no directory could store them, nothing changes either.
    pub fn set(&self, topic: &str, overrides: BTreeMap<String, String>) -> Result<LogConfig> {
        self.validate(topic, &overrides)?;
        let unchanged = self
            .manager
            .topic_overrides
            .read()
            .overrides
            .get(topic)
            .map_or(overrides.is_empty(), |current| *current == overrides);
        if !unchanged {
            self.store(|all| {
                if overrides.is_empty() {
                    all.remove(topic);
                } else {
                    all.insert(topic.to_owned(), overrides);
                }
            })?;
        }
        // Taken once the overrides are stored (not across the write): the defaults in force
        // now and the overrides stored last are what every live log gets, whichever of this
        // change and a change of the defaults came first.
        let _creating = self.manager.create_lock.lock();
        let config = self.config(topic);
        for (topic_partition, log) in self.live_logs() {
            if topic_partition.topic == topic {
                log.update_config(config.clone());
            }
        }
        tracing::info!(topic, "topic configuration changed");
        Ok(config)
    }

    /// Forgets `topic`'s overrides, as when the topic is deleted: a topic created later under
    /// the same name starts from the broker defaults.
    pub fn forget(&self, topic: &str) -> Result<()> {
        if !self
            .manager
            .topic_overrides
            .read()
            .overrides
            .contains_key(topic)
        {
            return Ok(());
        }
        self.store(|all| {
            all.remove(topic);
        })
    }

    /// Applies `change` and writes the result, under a new generation, to every online
    /// directory. It takes effect when at least one directory stored it; a directory whose
    /// write fails goes offline.
    fn store(&self, change: impl FnOnce(&mut TopicOverrides)) -> Result<()> {
        let mut current = self.manager.topic_overrides.write();
        let mut next = StoredTopicConfigs {
            generation: current.generation + 1,
            overrides: current.overrides.clone(),
        };
        change(&mut next.overrides);
        let document = Document {
            generation: next.generation,
            body: topic_configs::format_body(&next.overrides),
            source: None,
        };
        documents::store(self.manager.dirs.all(), TOPIC_CONFIGS_FILE, &document)?;
        *current = next;
        Ok(())
    }
}

/// `defaults` with `overrides` applied; overrides were validated when they were set.
pub(super) fn effective_config(
    defaults: &LogConfig,
    overrides: Option<&BTreeMap<String, String>>,
) -> LogConfig {
    let mut config = defaults.clone();
    for (key, value) in overrides.into_iter().flatten() {
        if let Err(error) = config.set(key, value) {
            tracing::warn!(key, value, error = %error, "ignoring a stored topic config");
        }
    }
    config
}

/// The topic configs with the highest generation among the online directories. A malformed copy
/// stops startup with its file and line: starting without, say, a topic's `cleanup.policy`
/// could delete data that compaction was meant to keep.
pub(super) fn newest_topic_configs(dirs: &[Arc<DataDir>]) -> Result<StoredTopicConfigs> {
    let mut newest = StoredTopicConfigs::default();
    for copy in documents::read_copies(dirs, TOPIC_CONFIGS_FILE)? {
        let Some(path) = &copy.source else {
            continue;
        };
        // Every copy is parsed, the older ones too: damage anywhere is reported.
        let overrides = topic_configs::parse_body(&copy.body, path)?;
        if copy.generation > newest.generation {
            newest = StoredTopicConfigs {
                generation: copy.generation,
                overrides,
            };
        }
    }
    Ok(newest)
}
