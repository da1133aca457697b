//! The cleaner's settings changed at run time, as Kafka's `LogCleaner` takes them:
//! `log.cleaner.threads` (at most doubled or halved at a time), `log.cleaner.dedupe.buffer.size`,
//! `log.cleaner.io.buffer.load.factor` and `log.cleaner.backoff.ms` restart the cleaner's
//! threads with the new values; `log.cleaner.io.max.bytes.per.second` holds the running ones
//! to the new rate. Without a cleaner (`log.cleaner.enable=false`) the values are kept and
//! used by a later start with the cleaner enabled, as in Kafka.

use std::collections::BTreeMap;

use ferrolog_storage::manager::{LogManager, cleaner_config_from};

use super::Refused;

/// Bytes per second the cleaner threads together read and write at.
pub const CLEANER_RATE: &str = "log.cleaner.io.max.bytes.per.second";

/// Refuses settings `merged` (every value in force after a change) the cleaner would not take:
/// a rate Kafka refuses, a value that does not parse, threads changed too far at once.
pub(super) fn check(
    manager: &LogManager,
    merged: &BTreeMap<String, String>,
) -> Result<(), Refused> {
    if let Some(value) = merged.get(CLEANER_RATE) {
        parse_cleaner_rate(value).map_err(Refused::request)?;
    }
    let next = cleaner_config_from(&manager.config().cleaner, merged)
        .map_err(|error| Refused::request(super::kafka_message(error)))?;
    match manager.cleaner() {
        Some(cleaner) => cleaner.check(&next).map_err(Refused::request),
        None => Ok(()),
    }
}

/// Puts the cleaner's settings in `merged` in force on the running cleaner, if any. At start,
/// values kept from an earlier run are taken whatever the threads started with.
pub(super) fn publish(manager: &LogManager, merged: &BTreeMap<String, String>, at_start: bool) {
    let Some(cleaner) = manager.cleaner() else {
        return;
    };
    let outcome = cleaner_config_from(&manager.config().cleaner, merged)
        .map_err(|error| error.to_string())
        .and_then(|next| cleaner.reconfigure(next, at_start));
    if let Err(error) = outcome {
        tracing::warn!(error, "the cleaner settings set at run time are not used");
    }
}

/// The cleaner's rate: a number of bytes per second above 0, as Kafka's.
fn parse_cleaner_rate(value: &str) -> Result<f64, String> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|rate| *rate > 0.0)
        .ok_or_else(|| {
            format!("Invalid value {value} for configuration {CLEANER_RATE}: must be above 0")
        })
}
