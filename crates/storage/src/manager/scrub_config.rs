//! The scrubber's broker keys (`ferrolog.scrub.*`), read into [`ScrubConfig`].

use std::collections::BTreeMap;
use std::time::Duration;

use super::config::{at_least, invalid};
use crate::error::Result;

/// The scrubber's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrubConfig {
    /// `ferrolog.scrub.bytes.per.second`: how fast sealed segments are re-read, over every
    /// directory; 0 pauses the scrubber. Default 4 MiB/s. Settable at run time.
    pub bytes_per_second: f64,
    /// `ferrolog.scrub.interval.ms`: a pass over every sealed segment starts at most this
    /// often. Default 7 days.
    pub interval: Duration,
}

impl Default for ScrubConfig {
    fn default() -> Self {
        Self {
            bytes_per_second: 4.0 * 1024.0 * 1024.0,
            interval: Duration::from_secs(7 * 24 * 60 * 60),
        }
    }
}

/// The keys read here.
pub(super) const SCRUB_KEYS: &[&str] = &[
    "ferrolog.scrub.bytes.per.second",
    "ferrolog.scrub.interval.ms",
];

pub(super) fn read_scrub(
    config: &mut ScrubConfig,
    properties: &BTreeMap<String, String>,
) -> Result<()> {
    if let Some(rate) = at_least(
        properties,
        "ferrolog.scrub.bytes.per.second",
        0u64,
        "a number of bytes",
    )? {
        config.bytes_per_second = rate as f64;
    }
    if let Some(value) = properties.get("ferrolog.scrub.interval.ms") {
        let ms = value
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|ms| *ms >= 1)
            .ok_or_else(|| {
                invalid(
                    "ferrolog.scrub.interval.ms",
                    value,
                    "must be an integer of at least 1",
                )
            })?;
        config.interval = Duration::from_millis(ms);
    }
    Ok(())
}
