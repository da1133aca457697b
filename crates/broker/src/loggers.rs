//! The broker's loggers as Kafka's BROKER_LOGGER config resource shows them and changes them
//! at run time (`kafka-configs --entity-type broker-loggers`). ferrolog logs through `tracing`,
//! whose targets are Rust module paths; Kafka's tools take logger names of letters, digits,
//! `.`, `_` and `-` only, so a target is named with `.` for `::` (`ferrolog_storage.log`).
//! `root` is the level of everything no other logger names.
//!
//! The loggers listed are `root`, each ferrolog crate, the targets the startup filter names and
//! those changed since; a level may be set on any of them and on any module beneath a crate
//! (Kafka sets only loggers it lists; ferrolog cannot list every module). A level is one of
//! Kafka's (TRACE, DEBUG, INFO, WARN, ERROR, FATAL, taken as ERROR), checked before anything
//! changes; deleting a logger's level makes it follow its parent again, and the root's cannot
//! be deleted. Changes last until the broker stops, as in Kafka. The new filter is handed to
//! the process's logger ([`BrokerLoggers::install`]); without one (a broker embedded in tests)
//! it is kept and shown all the same.

use std::collections::BTreeMap;

use parking_lot::Mutex;

/// The crates whose targets (and modules beneath) may be given a level.
const CRATES: &[&str] = &[
    "ferrolog",
    "ferrolog_auth",
    "ferrolog_broker",
    "ferrolog_coordinator",
    "ferrolog_net",
    "ferrolog_protocol",
    "ferrolog_records",
    "ferrolog_storage",
];

/// Kafka's level names, in its message's order.
const LEVELS: &[&str] = &["DEBUG", "ERROR", "FATAL", "INFO", "TRACE", "WARN"];

/// What hands a new filter (`tracing`'s directives) to the process's logger.
pub type Applier = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// One change to a logger: a level to set, or `None` to delete its own.
pub type LoggerChange = (String, Option<String>);

/// The loggers' levels: the startup filter's and those changed since.
#[derive(Default)]
pub struct BrokerLoggers {
    state: Mutex<State>,
}

struct State {
    /// The root level (lower case, as `tracing` writes it).
    root: String,
    /// Each named logger's own level, by Kafka-style name.
    levels: BTreeMap<String, String>,
    applier: Option<Applier>,
}

impl std::fmt::Debug for BrokerLoggers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.lock();
        f.debug_struct("BrokerLoggers")
            .field("root", &state.root)
            .field("levels", &state.levels)
            .finish_non_exhaustive()
    }
}

impl BrokerLoggers {
    /// Takes up the startup filter (`info`, `warn,ferrolog_storage=debug`) and what applies a
    /// changed one.
    pub fn install(&self, filter: &str, applier: Option<Applier>) {
        let mut state = self.state.lock();
        state.root = "info".into();
        state.levels.clear();
        for directive in filter.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            match directive.split_once('=') {
                Some((target, level)) => {
                    state
                        .levels
                        .insert(target.replace("::", "."), level.to_ascii_lowercase());
                }
                None => state.root = directive.to_ascii_lowercase(),
            }
        }
        state.applier = applier;
    }

    /// Every logger listed, with its level in force (its own, else its nearest parent's, else
    /// the root's), by name.
    pub fn levels(&self) -> BTreeMap<String, String> {
        let state = self.state.lock();
        let mut names: Vec<String> = CRATES.iter().map(|name| (*name).to_owned()).collect();
        names.extend(state.levels.keys().cloned());
        let mut listed: BTreeMap<String, String> = names
            .into_iter()
            .map(|name| {
                let level = state.level_of(&name).to_ascii_uppercase();
                (name, level)
            })
            .collect();
        listed.insert("root".into(), state.root.to_ascii_uppercase());
        listed
    }

    /// Checks every change, then (unless `validate_only`) makes them all and applies the new
    /// filter; Kafka's code and message for the first refused.
    pub fn change(
        &self,
        changes: &[LoggerChange],
        validate_only: bool,
    ) -> Result<(), (i16, String)> {
        for (logger, level) in changes {
            check_change(logger, level.as_deref())?;
        }
        if validate_only {
            return Ok(());
        }
        let mut state = self.state.lock();
        let mut next = State {
            root: state.root.clone(),
            levels: state.levels.clone(),
            applier: None,
        };
        for (logger, level) in changes {
            let level = level.as_deref().map(tracing_level);
            match (logger.as_str(), level) {
                ("root", Some(level)) => next.root = level.into(),
                (_, Some(level)) => {
                    next.levels.insert(logger.clone(), level.into());
                }
                (_, None) => {
                    next.levels.remove(logger);
                }
            }
        }
        if let Some(applier) = &state.applier {
            applier(&next.filter()).map_err(|error| (crate::errors::INVALID_CONFIG, error))?;
        }
        state.root = next.root;
        state.levels = next.levels;
        Ok(())
    }

    /// The filter in force, as `tracing` reads it.
    pub fn filter(&self) -> String {
        self.state.lock().filter()
    }
}

impl Default for State {
    fn default() -> Self {
        Self {
            root: "info".into(),
            levels: BTreeMap::new(),
            applier: None,
        }
    }
}

impl State {
    fn level_of(&self, name: &str) -> &str {
        let mut at = name;
        loop {
            if let Some(level) = self.levels.get(at) {
                return level;
            }
            match at.rsplit_once('.') {
                Some((parent, _)) => at = parent,
                None => return &self.root,
            }
        }
    }

    fn filter(&self) -> String {
        let mut directives = vec![self.root.clone()];
        directives.extend(
            self.levels
                .iter()
                .map(|(name, level)| format!("{}={level}", name.replace('.', "::"))),
        );
        directives.join(",")
    }
}

/// Kafka's checks of one change, with its codes and messages.
fn check_change(logger: &str, level: Option<&str>) -> Result<(), (i16, String)> {
    let known = logger == "root"
        || CRATES
            .iter()
            .any(|name| logger == *name || logger.starts_with(&format!("{name}.")));
    if !known {
        return Err((
            crate::errors::INVALID_CONFIG,
            format!("Logger {logger} does not exist!"),
        ));
    }
    match level {
        None if logger == "root" => Err((
            crate::errors::INVALID_REQUEST,
            "Removing the log level of the root logger is not allowed".into(),
        )),
        None => Ok(()),
        Some(level) if LEVELS.contains(&level) => Ok(()),
        Some(level) => Err((
            crate::errors::INVALID_CONFIG,
            format!(
                "Cannot set the log level of {logger} to {level} as it is not a supported log level. Valid log levels are {}",
                LEVELS.join(", ")
            ),
        )),
    }
}

/// A Kafka level as `tracing` names it (no FATAL there: ERROR).
fn tracing_level(level: &str) -> &'static str {
    match level {
        "TRACE" => "trace",
        "DEBUG" => "debug",
        "INFO" => "info",
        "WARN" => "warn",
        _ => "error",
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn levels_are_inherited_changed_and_handed_on() {
        let loggers = BrokerLoggers::default();
        let applied = Arc::new(Mutex::new(String::new()));
        let seen = Arc::clone(&applied);
        loggers.install(
            "warn,ferrolog_storage=debug",
            Some(Box::new(move |filter| {
                *seen.lock() = filter.to_owned();
                Ok(())
            })),
        );
        let levels = loggers.levels();
        assert_eq!(levels["root"], "WARN");
        assert_eq!(levels["ferrolog_storage"], "DEBUG");
        assert_eq!(levels["ferrolog_net"], "WARN");
        let changes = vec![
            ("ferrolog_storage.log".to_owned(), Some("TRACE".to_owned())),
            ("root".to_owned(), Some("INFO".to_owned())),
            ("ferrolog_storage".to_owned(), None),
        ];
        loggers.change(&changes, false).unwrap();
        assert_eq!(*applied.lock(), "info,ferrolog_storage::log=trace");
        let levels = loggers.levels();
        assert_eq!(levels["ferrolog_storage.log"], "TRACE");
        assert_eq!(levels["ferrolog_storage"], "INFO");
    }

    #[test]
    fn refusals_are_kafkas_and_change_nothing() {
        let loggers = BrokerLoggers::default();
        loggers.install("info", None);
        let refused = |changes: Vec<LoggerChange>| loggers.change(&changes, false).unwrap_err();
        assert_eq!(
            refused(vec![("kafka.server".into(), Some("DEBUG".into()))]),
            (40, "Logger kafka.server does not exist!".into())
        );
        assert_eq!(
            refused(vec![("root".into(), None)]).1,
            "Removing the log level of the root logger is not allowed"
        );
        let bad_level = refused(vec![
            ("ferrolog_net".into(), Some("DEBUG".into())),
            ("ferrolog_net".into(), Some("debug".into())),
        ]);
        assert_eq!(bad_level.0, 40);
        assert!(
            bad_level
                .1
                .contains("Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN")
        );
        assert_eq!(loggers.levels()["ferrolog_net"], "INFO");
        loggers
            .change(&[("ferrolog_net".into(), Some("DEBUG".into()))], true)
            .unwrap();
        assert_eq!(loggers.filter(), "info");
    }
}
