//! The cluster's finalized feature levels (KIP-584), which ApiVersions tells clients and
//! UpdateFeatures (`kafka-features upgrade|downgrade|disable`) changes. Kafka keeps them in its
//! metadata log; a single node keeps them in the document `ferrolog-features` of the storage
//! layer, written whole under a new generation at each change (atomically, fsynced, in every
//! data directory) before the change is in force. Until a first change, each feature is at its
//! default level, `transaction.version` at `ferrolog.transaction.version`.
//!
//! What the levels turn on, as in Kafka: `group.version` 1 the KIP-848 consumer group APIs,
//! `share.version` 1 the share group APIs, `streams.version` 1 the streams group APIs (each,
//! below it, answers UNSUPPORTED_VERSION), and `transaction.version` what the transaction
//! coordinator's own aborts follow and clients are told they may use.
//!
//! The body: one line per feature, `name level`.

pub mod catalog;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI16, AtomicI64, Ordering};

use ferrolog_storage::manager::{Document, LogManager};
use ferrolog_storage::{Result, StorageError};
use parking_lot::{Mutex, RwLock};

pub use catalog::{
    FEATURES, GROUP_VERSION, SHARE_VERSION, STREAMS_VERSION, TRANSACTION_VERSION, Update,
    UpgradeType,
};

/// The message Kafka gives with UNSUPPORTED_VERSION where its answer has one (the share group
/// offset APIs) when the feature is off.
pub const UNSUPPORTED_MESSAGE: &str = "The version of API is not supported.";

/// The document the finalized levels are kept in.
pub const FEATURES_DOCUMENT: &str = "ferrolog-features";

/// Why UpdateFeatures changed nothing: the error code and Kafka's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub code: i16,
    pub message: String,
}

/// The finalized levels, shared by the handlers and the transaction coordinator.
#[derive(Debug)]
pub struct Features {
    manager: Arc<LogManager>,
    levels: RwLock<BTreeMap<String, i16>>,
    /// The document's generation; held while a change is written, which serializes changes.
    generation: Mutex<u64>,
    /// Kafka's finalized features epoch: clients keep the features of the highest epoch seen,
    /// so it starts at this process's start time and rises with each change.
    epoch: AtomicI64,
    /// `transaction.version`, read by the transaction coordinator.
    transaction_version: Arc<AtomicI16>,
}

impl Features {
    /// Loads the newest copy of the document (defaults where none holds it) and brings the
    /// directories holding older ones up to date; `transaction_version` holds the default
    /// level of `transaction.version` and is kept at its level. A body that does not parse
    /// stops startup, naming its file and line.
    pub fn open(manager: Arc<LogManager>, transaction_version: Arc<AtomicI16>) -> Result<Self> {
        let document = manager.documents().read(FEATURES_DOCUMENT)?;
        let mut levels: BTreeMap<String, i16> = FEATURES
            .iter()
            .map(|feature| (feature.name.to_owned(), feature.default_level))
            .collect();
        levels.insert(
            TRANSACTION_VERSION.to_owned(),
            transaction_version.load(Ordering::Acquire),
        );
        let stored = parse(&document.body).map_err(|(line, reason)| {
            let file = document.source.clone().unwrap_or_default();
            StorageError::Fatal(format!("{}, line {}: {reason}", file.display(), line + 3))
        })?;
        levels.extend(stored);
        levels.retain(|_, level| *level > 0);
        manager.documents().spread(FEATURES_DOCUMENT, &document)?;
        let now = manager.clock().now_ms();
        let features = Self {
            manager,
            levels: RwLock::new(levels),
            generation: Mutex::new(document.generation),
            epoch: AtomicI64::new(now),
            transaction_version,
        };
        features.publish_transaction_version();
        Ok(features)
    }

    /// The finalized level of `name` (0 when not finalized).
    pub fn level(&self, name: &str) -> i16 {
        self.levels.read().get(name).copied().unwrap_or(0)
    }

    /// Whether the APIs `name` gates are served: its level is at least 1.
    pub fn serves(&self, name: &str) -> bool {
        self.level(name) >= 1
    }

    /// Every finalized level above 0, by name, with the epoch they are of.
    pub fn finalized(&self) -> (BTreeMap<String, i16>, i64) {
        let levels = self.levels.read();
        (levels.clone(), self.epoch.load(Ordering::Acquire))
    }

    /// Applies UpdateFeatures' `updates`, all or nothing, unless `validate_only`; `node_id`
    /// names this node in Kafka's messages.
    pub fn update(
        &self,
        updates: &[Update],
        validate_only: bool,
        node_id: i32,
    ) -> std::result::Result<(), Refused> {
        let mut generation = self.generation.lock();
        let current = self.levels.read().clone();
        let next = catalog::apply(&current, updates, node_id).map_err(|reason| Refused {
            code: crate::errors::INVALID_UPDATE_VERSION,
            message: format!(
                "The update failed for all features since the following feature had an error: {reason}"
            ),
        })?;
        if validate_only || next == current {
            return Ok(());
        }
        // The generation is spent even when the store fails: a copy may have been written.
        *generation += 1;
        let document = Document {
            generation: *generation,
            body: render(&next),
            source: None,
        };
        self.manager
            .documents()
            .store(FEATURES_DOCUMENT, &document)
            .map_err(|error| Refused {
                code: crate::errors::UNKNOWN_SERVER_ERROR,
                message: format!("the feature levels could not be stored: {error}"),
            })?;
        *self.levels.write() = next;
        let now = self.manager.clock().now_ms();
        self.epoch
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |epoch| {
                Some(now.max(epoch.saturating_add(1)))
            })
            .ok();
        self.publish_transaction_version();
        Ok(())
    }

    fn publish_transaction_version(&self) {
        self.transaction_version
            .store(self.level(TRANSACTION_VERSION), Ordering::Release);
    }
}

/// Every served feature's level, 0 included (a feature disabled stays so across restarts).
fn render(levels: &BTreeMap<String, i16>) -> String {
    FEATURES
        .iter()
        .map(|feature| {
            let level = levels.get(feature.name).copied().unwrap_or(0);
            format!("{} {level}\n", feature.name)
        })
        .collect()
}

/// The body's levels; an error names the body's line (from 0) and what is wrong.
fn parse(body: &str) -> std::result::Result<BTreeMap<String, i16>, (usize, String)> {
    let mut levels = BTreeMap::new();
    for (index, line) in body.lines().enumerate() {
        let Some((name, level)) = line.split_once(' ') else {
            return Err((index, format!("{line:?} is not a feature and its level")));
        };
        let Some(feature) = catalog::feature(name) else {
            return Err((index, format!("unknown feature {name:?}")));
        };
        let level: i16 = level
            .parse()
            .ok()
            .filter(|level| (feature.min..=feature.max).contains(level))
            .ok_or_else(|| {
                (
                    index,
                    format!("level {level:?} of {name} is not one this broker serves"),
                )
            })?;
        levels.insert(name.to_owned(), level);
    }
    Ok(levels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_reads_back_what_was_written() {
        let levels: BTreeMap<String, i16> = [
            (GROUP_VERSION.to_owned(), 1),
            (TRANSACTION_VERSION.to_owned(), 2),
        ]
        .into();
        let body = render(&levels);
        assert_eq!(
            body,
            "group.version 1\nshare.version 0\nstreams.version 0\ntransaction.version 2\n"
        );
        let mut parsed = parse(&body).unwrap();
        parsed.retain(|_, level| *level > 0);
        assert_eq!(parsed, levels);
    }

    #[test]
    fn a_damaged_body_names_its_line() {
        assert_eq!(parse("group.version 1\nbogus\n").unwrap_err().0, 1);
        assert!(parse("nope 1\n").unwrap_err().1.contains("unknown feature"));
        assert!(
            parse("group.version 9\n")
                .unwrap_err()
                .1
                .contains("level \"9\"")
        );
    }
}
