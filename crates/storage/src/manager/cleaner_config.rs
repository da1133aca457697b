//! The cleaner's broker keys (`log.cleaner.*`), read into [`CleanerConfig`].

use std::collections::BTreeMap;
use std::time::Duration;

use super::config::invalid;
use crate::cleaner::CleanerConfig;
use crate::error::Result;

/// The cleaner's keys.
pub(super) const CLEANER_KEYS: &[&str] = &[
    "log.cleaner.enable",
    "log.cleaner.threads",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.backoff.ms",
];

/// `base` with the cleaner's keys `properties` sets, as the broker reads them at startup and
/// at a change of its dynamic configs; the error names the key and the value.
pub fn cleaner_config_from(
    base: &CleanerConfig,
    properties: &BTreeMap<String, String>,
) -> Result<CleanerConfig> {
    let mut config = *base;
    for key in CLEANER_KEYS {
        if let Some(value) = properties.get(*key) {
            parse_cleaner(&mut config, key, value)?;
        }
    }
    Ok(config)
}

fn parse_cleaner(config: &mut CleanerConfig, key: &str, value: &str) -> Result<()> {
    let text = value.trim();
    let bad = |reason: &str| invalid(key, value, reason);
    match key {
        "log.cleaner.enable" => {
            config.enable = text.parse().map_err(|_| bad("expected true or false"))?;
        }
        "log.cleaner.threads" => {
            config.threads = text
                .parse()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| bad("must be an integer of at least 1"))?;
        }
        "log.cleaner.dedupe.buffer.size" => {
            config.dedupe_buffer_bytes = text
                .parse()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| bad("must be a positive integer"))?;
        }
        "log.cleaner.io.buffer.load.factor" => {
            config.load_factor = text
                .parse()
                .ok()
                .filter(|factor: &f64| *factor > 0.0 && *factor <= 1.0)
                .ok_or_else(|| bad("must be a number in (0, 1]"))?;
        }
        "log.cleaner.io.max.bytes.per.second" => {
            config.max_io_bytes_per_second = text
                .parse()
                .ok()
                .filter(|rate: &f64| *rate > 0.0)
                .ok_or_else(|| bad("must be a positive number"))?;
        }
        _ => {
            config.backoff = text
                .parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|_| bad("must be a non-negative integer"))?;
        }
    }
    Ok(())
}
