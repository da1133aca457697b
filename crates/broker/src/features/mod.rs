//! The cluster's finalized feature levels (KIP-584), which ApiVersions tells clients and
//! UpdateFeatures (`kafka-features upgrade|downgrade|disable`) changes. Kafka keeps them in its
//! metadata log; a single node keeps them in the document `ferrolog-features` of the storage
//! layer, written whole under a new generation at each change (atomically, fsynced, in every
//! data directory) before the change is in force. Until a first change, each feature is at its
//! default level, `transaction.version` at `ferrolog.transaction.version`; a feature changed
//! once keeps the level it was given, whatever its default later.
//!
//! What the levels turn on, as in Kafka: `group.version` 1 the KIP-848 consumer group APIs,
//! `share.version` 1 the share group APIs, `streams.version` 1 the streams group APIs (each,
//! below it, answers UNSUPPORTED_VERSION), and `transaction.version` what the transaction
//! coordinator's own aborts follow and clients are told they may use.
//!
//! The body: one line per feature changed, `name level` (0 for one disabled).

pub mod catalog;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI16, Ordering};

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
    state: RwLock<Levels>,
    /// The document's generation; held while a change is written, which serializes changes.
    generation: Mutex<u64>,
    /// `transaction.version`, read by the transaction coordinator.
    transaction_version: Arc<AtomicI16>,
}

/// The levels and their epoch, read together.
#[derive(Debug)]
struct Levels {
    /// Every level above 0, by name.
    finalized: BTreeMap<String, i16>,
    /// The levels UpdateFeatures set (0 included): the document's.
    changed: BTreeMap<String, i16>,
    /// Kafka's finalized features epoch: clients keep the features of the highest epoch seen,
    /// so it starts at this process's start time and rises with each change.
    epoch: i64,
}

impl Levels {
    fn of(defaults: &BTreeMap<String, i16>, changed: BTreeMap<String, i16>, epoch: i64) -> Self {
        let mut finalized = defaults.clone();
        finalized.extend(changed.iter().map(|(name, level)| (name.clone(), *level)));
        finalized.retain(|_, level| *level > 0);
        Self {
            finalized,
            changed,
            epoch,
        }
    }
}

impl Features {
    /// Loads the newest copy of the document (defaults where none holds it) and brings the
    /// directories holding older ones up to date; `transaction_version` holds the default
    /// level of `transaction.version` and is kept at its level. A body that does not parse
    /// stops startup, naming its file and line.
    pub fn open(manager: Arc<LogManager>, transaction_version: Arc<AtomicI16>) -> Result<Self> {
        let document = manager.documents().read(FEATURES_DOCUMENT)?;
        let mut defaults: BTreeMap<String, i16> = FEATURES
            .iter()
            .map(|feature| (feature.name.to_owned(), feature.default_level))
            .collect();
        defaults.insert(
            TRANSACTION_VERSION.to_owned(),
            transaction_version.load(Ordering::Acquire),
        );
        let changed = parse(&document.body).map_err(|(line, reason)| {
            let file = document.source.clone().unwrap_or_default();
            StorageError::Fatal(format!("{}, line {}: {reason}", file.display(), line + 3))
        })?;
        manager.documents().spread(FEATURES_DOCUMENT, &document)?;
        let now = manager.clock().now_ms();
        let features = Self {
            manager,
            state: RwLock::new(Levels::of(&defaults, changed, now)),
            generation: Mutex::new(document.generation),
            transaction_version,
        };
        features.publish_transaction_version();
        Ok(features)
    }

    /// The finalized level of `name` (0 when not finalized).
    pub fn level(&self, name: &str) -> i16 {
        self.state.read().finalized.get(name).copied().unwrap_or(0)
    }

    /// Whether the APIs `name` gates are served: its level is at least 1.
    pub fn serves(&self, name: &str) -> bool {
        self.level(name) >= 1
    }

    /// Every finalized level above 0, by name, with the epoch they are of.
    pub fn finalized(&self) -> (BTreeMap<String, i16>, i64) {
        let state = self.state.read();
        (state.finalized.clone(), state.epoch)
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
        let (current, mut changed) = {
            let state = self.state.read();
            (state.finalized.clone(), state.changed.clone())
        };
        let next = catalog::apply(&current, updates, node_id).map_err(|reason| Refused {
            code: crate::errors::INVALID_UPDATE_VERSION,
            message: format!(
                "The update failed for all features since the following feature had an error: {reason}"
            ),
        })?;
        if validate_only || next == current {
            return Ok(());
        }
        for update in updates {
            changed.insert(update.feature.clone(), update.level);
        }
        // The generation is spent even when the store fails: a copy may have been written.
        *generation += 1;
        let document = Document {
            generation: *generation,
            body: render(&changed),
            source: None,
        };
        self.manager
            .documents()
            .store(FEATURES_DOCUMENT, &document)
            .map_err(|error| Refused {
                code: crate::errors::UNKNOWN_SERVER_ERROR,
                message: format!("the feature levels could not be stored: {error}"),
            })?;
        let now = self.manager.clock().now_ms();
        {
            let mut state = self.state.write();
            let epoch = now.max(state.epoch.saturating_add(1));
            *state = Levels {
                finalized: next,
                changed,
                epoch,
            };
        }
        self.publish_transaction_version();
        Ok(())
    }

    fn publish_transaction_version(&self) {
        self.transaction_version
            .store(self.level(TRANSACTION_VERSION), Ordering::Release);
    }
}

/// The levels changed, 0 included (a feature disabled stays so across restarts).
fn render(changed: &BTreeMap<String, i16>) -> String {
    changed
        .iter()
        .map(|(name, level)| format!("{name} {level}\n"))
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
        let changed: BTreeMap<String, i16> = [
            (SHARE_VERSION.to_owned(), 0),
            (TRANSACTION_VERSION.to_owned(), 1),
        ]
        .into();
        let body = render(&changed);
        assert_eq!(body, "share.version 0\ntransaction.version 1\n");
        assert_eq!(parse(&body).unwrap(), changed);
        // Over the defaults, a disabled feature is not finalized.
        let defaults: BTreeMap<String, i16> =
            [(GROUP_VERSION.to_owned(), 1), (SHARE_VERSION.to_owned(), 1)].into();
        let levels = Levels::of(&defaults, changed, 0);
        let finalized: BTreeMap<String, i16> = [
            (GROUP_VERSION.to_owned(), 1),
            (TRANSACTION_VERSION.to_owned(), 1),
        ]
        .into();
        assert_eq!(levels.finalized, finalized);
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
