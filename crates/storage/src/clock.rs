//! Time as the storage engine sees it. Every time-driven decision (rolls, retention, flushes,
//! timestamps of LogAppendTime batches) reads a [`Clock`], so tests drive hours of time with a
//! [`ManualClock`] and never sleep.

use std::fmt::Debug;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

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
