//! The rates clients under a quota are measured by, one [`Rate`] per sensor (see
//! [`SensorTags`]: every client under the same quota shares one), and the throttle time a
//! rate over its bound earns, as Kafka's client quota managers compute it
//! (`QuotaUtils#throttleTime`): the excess over the bound, as a share of the bound, times the
//! window the rate is measured over.
//!
//! Bounded: a sensor is kept only while its rate is not zero (nothing recorded for the
//! samples' reach leaves nothing to measure), and at most [`MAX_SENSORS`] of one kind at once,
//! their tags (user names and client ids, which a client chooses, up to 32 KiB each) taking
//! [`MAX_TAG_BYTES`] at most. Past that, a new client is measured with every other such client
//! in one shared sensor, so a flood of fresh client ids is throttled together rather than
//! growing the broker's memory.

use std::collections::HashMap;

use parking_lot::Mutex;

use super::rate::{Rate, Sampling, throttle_ms};
use super::resolve::{Applied, SensorTags};

/// The most sensors of one kind kept at once. Kafka has no such bound.
pub const MAX_SENSORS: usize = 10_000;

/// The most bytes of tags the sensors of one kind keep at once.
pub const MAX_TAG_BYTES: usize = 4 << 20;

fn tag_bytes(tags: &SensorTags) -> usize {
    tags.user.len() + tags.client_id.len()
}

/// One kind's sensors (produce bytes, fetch bytes, request time).
#[derive(Debug)]
pub struct Sensors {
    sampling: Sampling,
    /// The longest throttle this kind gives, if bounded (the request quota: one window).
    cap_ms: Option<i64>,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    by_tags: HashMap<SensorTags, Rate>,
    /// Clients beyond [`MAX_SENSORS`] or [`MAX_TAG_BYTES`], measured together.
    overflow: Option<Rate>,
    /// Bytes of the tags of `by_tags`.
    tag_bytes: usize,
    /// When idle sensors were last dropped.
    purged_ms: i64,
}

impl Sensors {
    pub fn new(sampling: Sampling, cap_ms: Option<i64>) -> Self {
        Self {
            sampling,
            cap_ms,
            held: Mutex::new(Held::default()),
        }
    }

    /// Records `value` for the client under `applied` at `now_ms`; returns the throttle time
    /// in milliseconds it earns (0 while its rate is within the bound).
    pub fn record(&self, applied: &Applied, value: f64, now_ms: i64) -> i64 {
        let mut held = self.held.lock();
        let rate = self.rate_of(&mut held, &applied.tags, now_ms);
        rate.record(value, now_ms);
        let measured = rate.per_second(now_ms);
        let throttle = throttle_ms(measured, applied.limit, rate.window_ms(now_ms));
        self.cap_ms.map_or(throttle, |cap| throttle.min(cap))
    }

    /// Takes `value` back from the client's sensor (a fetch answered empty after all).
    pub fn unrecord(&self, applied: &Applied, value: f64, now_ms: i64) {
        let mut held = self.held.lock();
        self.rate_of(&mut held, &applied.tags, now_ms)
            .unrecord(value, now_ms);
    }

    /// The most a client under `limit` may take in one go: the bound times the samples' span
    /// less one window, as Kafka's `maxValueInQuotaWindow` (a fetch asks for no more).
    pub fn max_value_in_window(&self, limit: f64) -> f64 {
        limit * (self.sampling.samples as f64 - 1.0) * self.sampling.window_ms as f64 / 1_000.0
    }

    /// Sensors held now (for tests and metrics).
    pub fn len(&self) -> usize {
        self.held.lock().by_tags.len()
    }

    /// Whether no sensor is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sensor of `tags`, made if there is room; else the shared one.
    fn rate_of<'h>(&self, held: &'h mut Held, tags: &SensorTags, now_ms: i64) -> &'h mut Rate {
        let full = |held: &Held| {
            held.by_tags.len() >= MAX_SENSORS || held.tag_bytes + tag_bytes(tags) > MAX_TAG_BYTES
        };
        if !held.by_tags.contains_key(tags) && full(held) {
            // Dropping idle sensors walks them all: at most once a window.
            if now_ms - held.purged_ms >= self.sampling.window_ms {
                held.purged_ms = now_ms;
                let mut freed = 0;
                held.by_tags.retain(|tags, rate| {
                    let idle = rate.is_idle(now_ms);
                    if idle {
                        freed += tag_bytes(tags);
                    }
                    !idle
                });
                held.tag_bytes -= freed;
            }
            if full(held) {
                return held
                    .overflow
                    .get_or_insert_with(|| Rate::new(self.sampling));
            }
        }
        if !held.by_tags.contains_key(tags) {
            held.tag_bytes += tag_bytes(tags);
        }
        let sampling = self.sampling;
        held.by_tags
            .entry(tags.clone())
            .or_insert_with(|| Rate::new(sampling))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(limit: f64, client: &str) -> Applied {
        Applied {
            limit,
            tags: SensorTags {
                user: String::new(),
                client_id: client.to_owned(),
            },
        }
    }

    #[test]
    fn a_rate_over_its_bound_is_throttled_by_the_excess() {
        let sensors = Sensors::new(Sampling::default(), None);
        let quota = applied(1_000.0, "app");
        // 10,000 bytes at once: exactly the bound over the padded ten seconds.
        assert_eq!(sensors.record(&quota, 10_000.0, 0), 0);
        // 10,000 more: 2,000/s over 10 s, twice the bound: throttled one window's worth.
        assert_eq!(sensors.record(&quota, 10_000.0, 0), 10_000);
        // Another client under its own sensor is not.
        assert_eq!(sensors.record(&applied(1_000.0, "other"), 500.0, 0), 0);
    }

    #[test]
    fn the_request_quota_throttles_one_window_at_most() {
        let sensors = Sensors::new(Sampling::default(), Some(1_000));
        assert_eq!(sensors.record(&applied(1.0, "app"), 1e9, 0), 1_000);
    }

    #[test]
    fn unrecorded_bytes_do_not_count() {
        let sensors = Sensors::new(Sampling::default(), None);
        let quota = applied(1_000.0, "app");
        assert!(sensors.record(&quota, 20_000.0, 0) > 0);
        sensors.unrecord(&quota, 20_000.0, 0);
        assert_eq!(sensors.record(&quota, 10_000.0, 1), 0);
        assert_eq!(sensors.max_value_in_window(1_000.0), 10_000.0);
    }

    #[test]
    fn fresh_clients_beyond_the_bound_share_one_sensor() {
        let sensors = Sensors::new(Sampling::default(), None);
        for client in 0..MAX_SENSORS {
            sensors.record(&applied(1e12, &client.to_string()), 1.0, 0);
        }
        assert_eq!(sensors.len(), MAX_SENSORS);
        // Two newcomers, each within the bound alone, exceed it together.
        assert_eq!(sensors.record(&applied(1_000.0, "new-1"), 10_000.0, 1), 0);
        assert!(sensors.record(&applied(1_000.0, "new-2"), 10_000.0, 1) > 0);
        assert_eq!(sensors.len(), MAX_SENSORS);
        // Once the others are idle, a newcomer gets its own sensor again.
        let later = 60_000;
        assert_eq!(sensors.record(&applied(1_000.0, "new-3"), 1.0, later), 0);
        assert_eq!(sensors.len(), 1);
    }
}
