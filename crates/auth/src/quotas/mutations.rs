//! The controller mutation quota (KIP-599, `controller_mutation_rate`): partitions a client may
//! create or delete a second, as Kafka's `ControllerMutationQuotaManager` counts them, with a
//! token bucket per sensor: it holds up to `samples × window × rate` tokens (a burst of that
//! many partitions), starts full, refills at the rate, and each partition created or deleted
//! takes one. A request may take the bucket below zero.
//!
//! Strict requests (CreateTopics from v6, CreatePartitions from v3, DeleteTopics from v5) are
//! checked before each topic: while the bucket is below zero the topic is refused,
//! `THROTTLING_QUOTA_EXCEEDED`, and the request throttled for the time the bucket takes to
//! refill to zero (`−tokens / rate`); a request that only takes the bucket below zero is not
//! throttled, as Kafka's strict quota throttles only once the quota is spent. Older versions
//! are admitted and throttled for whatever they leave owed. Bounded as the other sensors: a
//! full bucket is as good as none and is dropped (its own rate deciding), and at most
//! [`MAX_SENSORS`] are kept apart.

use std::collections::HashMap;

use parking_lot::Mutex;

use super::rate::Sampling;
use super::resolve::{Applied, SensorTags};
use super::sensors::MAX_SENSORS;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    last_ms: i64,
    /// The rate and burst it last refilled at (its quota's, which may change).
    rate: f64,
    burst: f64,
}

impl Bucket {
    fn refill(&mut self, now_ms: i64) {
        let elapsed = (now_ms - self.last_ms).max(0) as f64 / 1_000.0;
        self.tokens = (self.tokens + self.rate * elapsed).min(self.burst);
        self.last_ms = now_ms;
    }
}

/// Every client's bucket.
#[derive(Debug)]
pub struct MutationBuckets {
    sampling: Sampling,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    by_tags: HashMap<SensorTags, Bucket>,
    overflow: Option<Bucket>,
    /// When full buckets were last dropped.
    purged_ms: i64,
}

/// One request's mutations under a quota.
#[derive(Debug)]
pub struct Mutations<'a> {
    buckets: &'a MutationBuckets,
    applied: Option<Applied>,
    strict: bool,
    throttle_ms: i64,
}

impl MutationBuckets {
    pub fn new(sampling: Sampling) -> Self {
        Self {
            sampling,
            held: Mutex::new(Held::default()),
        }
    }

    /// A request's mutations under `applied` (none: no quota applies); `strict` refuses what
    /// comes once the bucket is below zero.
    pub fn request(&self, applied: Option<Applied>, strict: bool) -> Mutations<'_> {
        Mutations {
            buckets: self,
            applied,
            strict,
            throttle_ms: 0,
        }
    }

    fn burst(&self, rate: f64) -> f64 {
        self.sampling.samples as f64 * self.sampling.window_ms as f64 / 1_000.0 * rate
    }

    /// Runs `f` on the bucket of `applied`, refilled to `now_ms`.
    fn with_bucket<T>(
        &self,
        applied: &Applied,
        now_ms: i64,
        f: impl FnOnce(&mut Bucket) -> T,
    ) -> T {
        let (rate, burst) = (applied.limit, self.burst(applied.limit));
        let mut held = self.held.lock();
        let fresh = Bucket {
            tokens: burst,
            last_ms: now_ms,
            rate,
            burst,
        };
        let known = held.by_tags.contains_key(&applied.tags);
        // Dropping full buckets walks them all: at most once a window.
        if !known
            && held.by_tags.len() >= MAX_SENSORS
            && now_ms - held.purged_ms >= self.sampling.window_ms
        {
            held.purged_ms = now_ms;
            held.by_tags.retain(|_, bucket| {
                bucket.refill(now_ms);
                bucket.tokens < bucket.burst
            });
        }
        let bucket = if known || held.by_tags.len() < MAX_SENSORS {
            held.by_tags.entry(applied.tags.clone()).or_insert(fresh)
        } else {
            held.overflow.get_or_insert(fresh)
        };
        bucket.refill(now_ms);
        (bucket.rate, bucket.burst) = (rate, burst);
        bucket.tokens = bucket.tokens.min(burst);
        f(bucket)
    }
}

impl Mutations<'_> {
    /// Admits `partitions` created or deleted at `now_ms`: `false` when the request is strict
    /// and the client's bucket is already below zero (nothing is taken then).
    pub fn admit(&mut self, partitions: usize, now_ms: i64) -> bool {
        let Some(applied) = &self.applied else {
            return true;
        };
        let rate = applied.limit;
        let strict = self.strict;
        let (admitted, owed_tokens) = self.buckets.with_bucket(applied, now_ms, |bucket| {
            if strict {
                if bucket.tokens < 0.0 {
                    return (false, -bucket.tokens);
                }
                bucket.tokens -= partitions as f64;
                return (true, 0.0);
            }
            bucket.tokens -= partitions as f64;
            (true, (-bucket.tokens).max(0.0))
        });
        if owed_tokens > 0.0 {
            let owed = (owed_tokens / rate * 1_000.0).round() as i64;
            self.throttle_ms = self.throttle_ms.max(owed);
        }
        admitted
    }

    /// The throttle time the request's response carries.
    pub fn throttle_ms(&self) -> i64 {
        self.throttle_ms
    }

    /// The sensor the request was counted by, if a quota applies.
    pub fn tags(&self) -> Option<&SensorTags> {
        self.applied.as_ref().map(|applied| &applied.tags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(rate: f64) -> Option<Applied> {
        Some(Applied {
            limit: rate,
            tags: SensorTags {
                user: String::new(),
                client_id: "admin".into(),
            },
        })
    }

    #[test]
    fn a_burst_then_strict_refusal_until_the_bucket_refills() {
        let buckets = MutationBuckets::new(Sampling::default());
        // 2 partitions a second: a burst of 22.
        let mut first = buckets.request(applied(2.0), true);
        assert!(first.admit(20, 0));
        assert!(first.admit(10, 0), "taken below zero by one request");
        assert_eq!(
            first.throttle_ms(),
            0,
            "not throttled until the quota is spent"
        );
        assert!(!first.admit(1, 0), "spent now");
        assert_eq!(first.throttle_ms(), 4_000);
        let mut second = buckets.request(applied(2.0), true);
        assert!(!second.admit(1, 1_000), "still below zero");
        assert_eq!(second.throttle_ms(), 3_000);
        let mut later = buckets.request(applied(2.0), true);
        assert!(later.admit(1, 4_000));
        // Not strict: admitted and throttled.
        let mut old = buckets.request(applied(2.0), false);
        assert!(old.admit(30, 4_000));
        assert!(old.throttle_ms() > 0);
    }

    #[test]
    fn no_quota_admits_everything() {
        let buckets = MutationBuckets::new(Sampling::default());
        let mut request = buckets.request(None, true);
        assert!(request.admit(1_000_000, 0));
        assert_eq!(request.throttle_ms(), 0);
    }
}
