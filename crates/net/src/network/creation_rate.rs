//! How fast connections may be made, as Kafka's `ConnectionQuotas` limits it (KIP-612): every
//! connection a listener accepts is recorded in the broker's rate and in the listener's, each
//! measured as Kafka's quota sensors measure (`quota.window.num` samples of
//! `quota.window.size.seconds`); when either goes over its limit (`max.connection.creation.rate`,
//! the listener's own or else the broker's), the listener waits the throttle time the larger
//! excess earns, at most one window, before it serves that connection or accepts another. New
//! connections wait in the listen backlog meanwhile; nothing is closed, and the other listeners
//! go on accepting. A connection made during a wait still counts, as in Kafka, so a flood is
//! held to the rate.
//!
//! Pure: every call takes the time.

use std::collections::HashMap;

use ferrolog_auth::quotas::rate::{Rate, Sampling, throttle_ms};
use parking_lot::Mutex;

/// The rates connections are made at: the broker's and each listener's.
#[derive(Debug)]
pub struct CreationRates {
    sampling: Sampling,
    broker: Mutex<Rate>,
    listeners: Mutex<HashMap<String, Rate>>,
}

impl CreationRates {
    pub fn new(sampling: Sampling) -> Self {
        Self {
            sampling,
            broker: Mutex::new(Rate::new(sampling)),
            listeners: Mutex::new(HashMap::new()),
        }
    }

    /// Records a connection `listener` accepted at `now_ms`, under `broker_limit` and
    /// `listener_limit` connections a second (`None`: unlimited); the milliseconds the
    /// listener must wait before serving it: the larger of the two throttles, at most one
    /// window, 0 within both limits.
    pub fn record(
        &self,
        listener: &str,
        broker_limit: Option<u32>,
        listener_limit: Option<u32>,
        now_ms: i64,
    ) -> i64 {
        let broker = Self::record_in(&mut self.broker.lock(), broker_limit, now_ms);
        let mut listeners = self.listeners.lock();
        let rate = listeners
            .entry(listener.to_owned())
            .or_insert_with(|| Rate::new(self.sampling));
        let own = Self::record_in(rate, listener_limit, now_ms);
        broker.max(own).min(self.sampling.window_ms)
    }

    /// Takes back a connection recorded at `now_ms` and then not served after all (its
    /// address was over its own quota), as Kafka takes it back.
    pub fn unrecord(&self, listener: &str, now_ms: i64) {
        self.broker.lock().unrecord(1.0, now_ms);
        if let Some(rate) = self.listeners.lock().get_mut(listener) {
            rate.unrecord(1.0, now_ms);
        }
    }

    fn record_in(rate: &mut Rate, limit: Option<u32>, now_ms: i64) -> i64 {
        rate.record(1.0, now_ms);
        match limit {
            Some(limit) => throttle_ms(
                rate.per_second(now_ms),
                f64::from(limit),
                rate.window_ms(now_ms),
            ),
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_ten_windows_passes_then_connections_wait_up_to_a_window() {
        let rates = CreationRates::new(Sampling::default());
        // At 5 a second, the first 50 fit the ten seconds the first window is padded to.
        for _ in 0..50 {
            assert_eq!(rates.record("plaintext", Some(5), None, 0), 0);
        }
        // The 51st: 5.1 a second over 10 s, 2% over, 200 ms.
        assert_eq!(rates.record("plaintext", Some(5), None, 0), 200);
        // Far over: at most one window.
        for _ in 0..100 {
            rates.record("plaintext", Some(5), None, 100);
        }
        assert_eq!(rates.record("plaintext", Some(5), None, 100), 1_000);
    }

    #[test]
    fn the_listener_and_the_broker_each_count_and_the_larger_throttle_wins() {
        let rates = CreationRates::new(Sampling::default());
        // A listener at 2 a second under a broker at 100: the listener's limit throttles.
        for _ in 0..20 {
            assert_eq!(rates.record("client", Some(100), Some(2), 0), 0);
        }
        assert_eq!(rates.record("client", Some(100), Some(2), 0), 500);
        // Another listener has its own count, but shares the broker's.
        for _ in 0..20 {
            assert_eq!(rates.record("admin", Some(100), Some(2), 0), 0);
        }
        // Unlimited: never throttled, though still counted in the broker's rate.
        assert_eq!(rates.record("internal", None, None, 0), 0);
    }

    #[test]
    fn a_connection_taken_back_no_longer_counts() {
        let rates = CreationRates::new(Sampling::default());
        for _ in 0..20 {
            rates.record("plaintext", None, Some(2), 0);
        }
        rates.unrecord("plaintext", 0);
        assert_eq!(rates.record("plaintext", None, Some(2), 0), 0);
        assert_eq!(rates.record("plaintext", None, Some(2), 0), 500);
    }

    #[test]
    fn a_rate_of_zero_throttles_every_connection_a_whole_window() {
        let rates = CreationRates::new(Sampling::default());
        assert_eq!(rates.record("plaintext", Some(0), None, 0), 1_000);
    }
}
