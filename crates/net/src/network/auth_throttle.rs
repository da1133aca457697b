//! Authentications per client address, beyond Kafka: each SASL exchange takes a token from
//! its address's bucket (`ferrolog.authentication.failures.per.second.per.ip` a second,
//! holding twice as many) before its first credentials are read, waiting for one when there is
//! none (a connection that never gets past the handshake takes none), and a successful exchange gives its token back. So an address's failed exchanges,
//! password guesses among them, are checked no faster than that rate however many connections
//! it opens (one that gives up while waiting has spent its token all the same), while clients
//! that authenticate cost their address nothing.
//!
//! The addresses followed are bounded ([`MAX_ADDRESSES`]): those whose bucket is full again are
//! forgotten first. An attacker with many addresses gets a budget at each (per-address limits
//! cannot tell them apart); `max.connections.per.ip`, the per-listener limits and
//! `ferrolog.connection.setup.timeout.ms` bound how many of its connections wait, and how long.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// The most addresses whose failures are remembered.
pub const MAX_ADDRESSES: usize = 10_000;

/// One address's tokens.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The buckets of every address that failed recently.
#[derive(Debug)]
pub struct AuthThrottle {
    /// Failures per second an address may sustain; `None`: no throttle.
    rate: Option<f64>,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

impl AuthThrottle {
    /// A throttle of `rate` failures per second per address (`None` or 0: none).
    pub fn new(rate: Option<u32>) -> Self {
        Self {
            rate: rate.filter(|rate| *rate > 0).map(f64::from),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn capacity(rate: f64) -> f64 {
        2.0 * rate
    }

    /// The tokens of `bucket` at `now`.
    fn refilled(bucket: Bucket, rate: f64, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        (bucket.tokens + elapsed * rate).min(Self::capacity(rate))
    }

    /// Takes a token for an exchange from `ip` starting at `now`: how long it must wait before
    /// it may go on (zero unless the address has used its tokens up).
    pub fn begin_at(&self, ip: IpAddr, now: Instant) -> Duration {
        let Some(rate) = self.rate else {
            return Duration::ZERO;
        };
        let capacity = Self::capacity(rate);
        let mut buckets = self.buckets.lock();
        if buckets.len() >= MAX_ADDRESSES && !buckets.contains_key(&ip) {
            buckets.retain(|_, bucket| Self::refilled(*bucket, rate, now) < capacity);
            if buckets.len() >= MAX_ADDRESSES
                && let Some(oldest) = buckets.iter().min_by_key(|(_, b)| b.at).map(|(ip, _)| *ip)
            {
                buckets.remove(&oldest);
            }
        }
        let bucket = buckets.entry(ip).or_insert(Bucket {
            tokens: capacity,
            at: now,
        });
        let tokens = Self::refilled(*bucket, rate, now) - 1.0;
        *bucket = Bucket { tokens, at: now };
        if tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-tokens / rate)
        }
    }

    /// The exchange from `ip` authenticated: its token comes back.
    pub fn succeeded_at(&self, ip: IpAddr, now: Instant) {
        let Some(rate) = self.rate else {
            return;
        };
        if let Some(bucket) = self.buckets.lock().get_mut(&ip) {
            let tokens = (Self::refilled(*bucket, rate, now) + 1.0).min(Self::capacity(rate));
            *bucket = Bucket { tokens, at: now };
        }
    }

    /// Takes a token for an exchange from `ip`, waiting for one if need be.
    pub async fn begin(&self, ip: IpAddr) {
        let wait = self.begin_at(ip, Instant::now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    /// The exchange from `ip` authenticated now.
    pub fn succeeded(&self, ip: IpAddr) {
        self.succeeded_at(ip, Instant::now());
    }

    /// Addresses followed now.
    pub fn addresses(&self) -> usize {
        self.buckets.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn failing_exchanges_go_at_the_rate_after_a_burst_one_after_another() {
        let throttle = AuthThrottle::new(Some(5));
        let start = Instant::now();
        // A burst of twice the rate goes at once.
        for _ in 0..10 {
            assert_eq!(throttle.begin_at(ip(1), start), Duration::ZERO);
        }
        // Then each waits its turn: a fifth of a second more than the one before.
        assert_eq!(throttle.begin_at(ip(1), start), Duration::from_millis(200));
        assert_eq!(throttle.begin_at(ip(1), start), Duration::from_millis(400));
        assert_eq!(
            throttle.begin_at(ip(2), start),
            Duration::ZERO,
            "another address"
        );
        // Refilled after quiet.
        let quiet = start + Duration::from_secs(3);
        assert_eq!(throttle.begin_at(ip(1), quiet), Duration::ZERO);
    }

    #[test]
    fn exchanges_that_authenticate_cost_their_address_nothing() {
        let throttle = AuthThrottle::new(Some(1));
        let start = Instant::now();
        for _ in 0..1000 {
            assert_eq!(throttle.begin_at(ip(1), start), Duration::ZERO);
            throttle.succeeded_at(ip(1), start);
        }
    }

    #[test]
    fn the_addresses_followed_are_bounded_and_none_without_a_rate() {
        let throttle = AuthThrottle::new(Some(1));
        let start = Instant::now();
        for index in 0..(MAX_ADDRESSES + 10) {
            let address = IpAddr::from(std::net::Ipv6Addr::from(index as u128));
            throttle.begin_at(address, start);
        }
        assert!(throttle.addresses() <= MAX_ADDRESSES);
        let off = AuthThrottle::new(None);
        for _ in 0..100 {
            assert_eq!(off.begin_at(ip(1), start), Duration::ZERO);
        }
    }
}
