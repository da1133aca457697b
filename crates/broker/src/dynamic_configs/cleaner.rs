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

/// The dedupe buffer each thread must have more than, as Kafka requires of its settings.
const MIN_BUFFER_PER_THREAD: usize = 1 << 20;

/// Refuses settings `merged` (every value in force after a change) the cleaner would not take,
/// in Kafka's order and words: a value below its minimum, a buffer under 1 MiB a thread, then
/// what the running cleaner refuses (threads changed too far at once), wrapped as Kafka wraps
/// a reconfiguration's refusal. (A rate of 0 or less and a load factor outside (0, 1], which
/// Kafka takes, are refused too: neither can run.)
pub(super) fn check(
    manager: &LogManager,
    merged: &BTreeMap<String, String>,
) -> Result<(), Refused> {
    for key in ["log.cleaner.threads", "log.cleaner.backoff.ms"] {
        if let Some(value) = merged.get(key)
            && value.trim().parse::<i64>().is_ok_and(|number| number < 0)
        {
            return Err(Refused::request(format!(
                "Invalid value {value} for configuration {key}: Value must be at least 0"
            )));
        }
    }
    if let Some(value) = merged.get(CLEANER_RATE) {
        parse_cleaner_rate(value).map_err(Refused::request)?;
    }
    let next = cleaner_config_from(&manager.config().cleaner, merged)
        .map_err(|error| Refused::request(super::kafka_message(error)))?;
    // Checked when the change touches the buffer or the threads: a smaller buffer the broker
    // was started with (which Kafka would not start with) does not block other changes.
    let current = manager
        .cleaner()
        .map_or(manager.config().cleaner, |cleaner| cleaner.config());
    let resized =
        (next.threads, next.dedupe_buffer_bytes) != (current.threads, current.dedupe_buffer_bytes);
    if resized && next.dedupe_buffer_bytes / next.threads.max(1) <= MIN_BUFFER_PER_THREAD {
        return Err(Refused::request(
            "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."
                .to_owned(),
        ));
    }
    match manager.cleaner() {
        Some(cleaner) => cleaner.check(&next).map_err(|refusal| {
            Refused::request(format!(
                "Invalid value org.apache.kafka.common.config.ConfigException: {refusal} for configuration Invalid dynamic configuration"
            ))
        }),
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
