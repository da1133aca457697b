//! Time as the storage engine sees it. Every time-driven decision (rolls, retention, flushes,
//! timestamps of LogAppendTime batches) reads a [`Clock`], so tests drive hours of time with a
//! [`ManualClock`] and never sleep.
//!
//! Points in time are Kafka timestamps: milliseconds since the Unix epoch in an `i64`, the unit
//! records carry on disk and on the wire, so a clock reading and a batch's timestamp compare
//! directly. Spans of time are [`Duration`]s. Kafka's config values in milliseconds (with their
//! `-1` and `Long.MAX_VALUE` sentinels) become `Duration`s or `Option<Duration>`s where they are
//! parsed, and turn back into milliseconds only where they are shown ([`kafka_ms`]).

use std::fmt::Debug;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A Kafka millisecond value as a span: negative values (never valid where this is called) are
/// zero.
pub fn millis(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// A span in Kafka's milliseconds, saturating at `i64::MAX` (Kafka's "never").
pub fn kafka_ms(span: Duration) -> i64 {
    i64::try_from(span.as_millis()).unwrap_or(i64::MAX)
}

/// The timestamp `span` after `at_ms`, saturating.
pub fn after(at_ms: i64, span: Duration) -> i64 {
    at_ms.saturating_add(kafka_ms(span))
}

/// The timestamp `span` before `at_ms`, saturating.
pub fn before(at_ms: i64, span: Duration) -> i64 {
    at_ms.saturating_sub(kafka_ms(span))
}

/// How long after `since_ms` `now_ms` is; zero when the clock reads earlier (it moved back).
pub fn elapsed(since_ms: i64, now_ms: i64) -> Duration {
    millis(now_ms.saturating_sub(since_ms))
}

/// Wall-clock milliseconds since the Unix epoch, as Kafka's `Time.milliseconds()`.
pub trait Clock: Send + Sync + Debug {
    /// The current time in milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis() as i64)
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: AtomicI64,
}

impl ManualClock {
    /// A clock that reads `start_ms` until moved.
    pub fn new(start_ms: i64) -> Self {
        Self {
            now_ms: AtomicI64::new(start_ms),
        }
    }
    /// Moves the clock `delta_ms` forward (back if negative).
    pub fn advance_ms(&self, delta_ms: i64) {
        self.now_ms.fetch_add(delta_ms, Ordering::SeqCst);
    }
    /// Moves the clock `span` forward.
    pub fn advance(&self, span: Duration) {
        self.advance_ms(kafka_ms(span));
    }
    /// Sets the clock to `now_ms`, forward or back.
    pub fn set_ms(&self, now_ms: i64) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_convert_to_kafka_milliseconds_saturating_at_never() {
        assert_eq!(kafka_ms(millis(1_500)), 1_500);
        assert_eq!(kafka_ms(millis(i64::MAX)), i64::MAX);
        assert_eq!(kafka_ms(Duration::MAX), i64::MAX);
        assert_eq!(millis(-1), Duration::ZERO);
        assert_eq!(after(i64::MAX - 1, millis(5)), i64::MAX);
        assert_eq!(before(i64::MIN + 1, millis(5)), i64::MIN);
        assert_eq!(elapsed(100, 40), Duration::ZERO, "a clock that moved back");
        assert_eq!(elapsed(40, 100), millis(60));
    }
}
