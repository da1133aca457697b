//! A byte rate shared by threads (`log.cleaner.io.max.bytes.per.second` for the cleaner,
//! `replica.alter.log.dirs.io.max.bytes.per.second` for moves between data directories): each
//! counts the bytes it reads and writes into one throttle, which makes the thread that crosses
//! the rate sleep it off.
//! Accounts are settled per window of 300 ms as in Kafka's throttler, and also as soon as the
//! bytes counted are worth a whole window, so a fast burst is held to the rate too.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How often a wait of [`Throttle::account_unless`] looks at its abort flag.
const ABORT_CHECK: Duration = Duration::from_millis(50);

/// A byte rate shared by the threads that count into it.
#[derive(Debug)]
pub struct Throttle {
    /// The rate's `f64` bits, so that it can change while threads count into it.
    bytes_per_second: AtomicU64,
    window: Mutex<(Instant, u64)>,
}

const CHECK_WINDOW: Duration = Duration::from_millis(300);

impl Throttle {
    /// `f64::MAX` (Kafka's default) never throttles.
    pub fn new(bytes_per_second: f64) -> Self {
        Self {
            bytes_per_second: AtomicU64::new(bytes_per_second.to_bits()),
            window: Mutex::new((Instant::now(), 0)),
        }
    }

    /// The rate in bytes per second.
    pub fn rate(&self) -> f64 {
        f64::from_bits(self.bytes_per_second.load(Ordering::Relaxed))
    }

    /// Changes the rate (a dynamic broker config); later accounts are held to it.
    pub fn set_rate(&self, bytes_per_second: f64) {
        self.bytes_per_second
            .store(bytes_per_second.to_bits(), Ordering::Relaxed);
    }

    /// Whether the rate is so high (Kafka's default, `f64::MAX`) that nothing is counted.
    pub fn is_unlimited(&self) -> bool {
        self.rate() >= f64::MAX / 2.0
    }

    /// Counts `bytes`; sleeps when the current window is over the rate.
    pub fn account(&self, bytes: u64) {
        let sleep = self.charge(bytes);
        if !sleep.is_zero() {
            std::thread::sleep(sleep);
        }
    }

    /// [`Throttle::account`], giving the wait up as soon as `abort` is set (a cleaning pass
    /// being aborted: a low rate must not hold a stop or a restart of the cleaner).
    pub fn account_unless(&self, bytes: u64, abort: &AtomicBool) {
        let mut left = self.charge(bytes);
        while !left.is_zero() && !abort.load(Ordering::Relaxed) {
            let step = left.min(ABORT_CHECK);
            std::thread::sleep(step);
            left -= step;
        }
    }

    /// Counts `bytes` and returns how long the caller should wait to keep to the rate (zero
    /// when it is within it), for a caller that waits in its own interruptible way.
    pub fn charge(&self, bytes: u64) -> Duration {
        if self.is_unlimited() {
            return Duration::ZERO;
        }
        {
            let mut window = self.window.lock();
            window.1 += bytes;
            let elapsed = window.0.elapsed();
            // A rate of 0 (nothing may pass) is held to a byte per second here; callers skip the work.
            let allowed = Duration::from_secs_f64(window.1 as f64 / self.rate().max(1.0));
            // Settle up once a window has passed, or once the bytes alone are worth a window.
            if elapsed < CHECK_WINDOW && allowed < CHECK_WINDOW {
                return Duration::ZERO;
            }
            *window = (Instant::now(), 0);
            allowed.saturating_sub(elapsed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_a_thread_to_the_rate() {
        let throttle = Throttle::new(10_000_000.0);
        let started = Instant::now();
        for _ in 0..100 {
            throttle.account(100_000);
        }
        // 10 MB at 10 MB/s: about a second (less the last partial window).
        assert!(
            started.elapsed() >= Duration::from_millis(600),
            "{:?}",
            started.elapsed()
        );
        assert!(Throttle::new(f64::MAX).is_unlimited());
    }
}
