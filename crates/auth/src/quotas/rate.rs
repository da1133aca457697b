//! A rate measured as Kafka's quota sensors measure it (`SampledStat` and `Rate` of Kafka's
//! metrics): the values recorded go into samples, a new one begun by the first record at least
//! `window_ms` after the current one began (so samples start at records, not on window
//! boundaries), `samples + 1` of them kept in a ring; a sample whose last record is `samples`
//! windows old is emptied. The rate is the sum of the samples over the time since the oldest
//! began, that time padded to `samples − 1` whole windows while fewer have passed (so a new
//! client's first burst is spread over ten seconds, not measured over a millisecond). Pure:
//! every call takes the time.

/// Kafka's `quota.window.num`: samples kept.
pub const DEFAULT_SAMPLES: usize = 11;
/// Kafka's `quota.window.size.seconds`, in milliseconds: one sample's span.
pub const DEFAULT_WINDOW_MS: i64 = 1_000;

/// How a rate is sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    pub samples: usize,
    pub window_ms: i64,
}

impl Default for Sampling {
    fn default() -> Self {
        Self {
            samples: DEFAULT_SAMPLES,
            window_ms: DEFAULT_WINDOW_MS,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    /// When the sample's window began.
    start_ms: i64,
    /// When a value was last recorded into it.
    last_ms: i64,
    value: f64,
}

impl Sample {
    fn at(now_ms: i64) -> Self {
        Self {
            start_ms: now_ms,
            last_ms: now_ms,
            value: 0.0,
        }
    }
}

/// A rate over the last `samples` windows.
#[derive(Debug, Clone)]
pub struct Rate {
    sampling: Sampling,
    samples: Vec<Sample>,
    /// The sample being written.
    current: usize,
}

impl Rate {
    pub fn new(sampling: Sampling) -> Self {
        assert!(
            sampling.samples >= 1 && sampling.window_ms > 0,
            "{sampling:?}"
        );
        Self {
            sampling,
            samples: Vec::with_capacity(sampling.samples + 1),
            current: 0,
        }
    }

    /// Adds `value` at `now_ms`, to the current sample or to a new one once the current
    /// sample's window has passed.
    pub fn record(&mut self, value: f64, now_ms: i64) {
        if self.samples.is_empty() {
            self.samples.push(Sample::at(now_ms));
        }
        if now_ms - self.samples[self.current].start_ms >= self.sampling.window_ms {
            self.advance(now_ms);
        }
        let sample = &mut self.samples[self.current];
        sample.value += value;
        sample.last_ms = now_ms;
    }

    /// The rate per second at `now_ms`.
    pub fn per_second(&mut self, now_ms: i64) -> f64 {
        let window = self.window_ms(now_ms);
        let total: f64 = self.samples.iter().map(|sample| sample.value).sum();
        total * 1_000.0 / window as f64
    }

    /// The time the rate is measured over at `now_ms`: from the oldest sample's start, at
    /// least `samples − 1` windows, at least 1 ms. Samples out of reach are emptied first.
    pub fn window_ms(&mut self, now_ms: i64) -> i64 {
        self.purge(now_ms);
        let oldest = self
            .samples
            .iter()
            .map(|sample| sample.start_ms)
            .min()
            .unwrap_or(now_ms);
        let mut elapsed = now_ms - oldest;
        let full_windows = elapsed / self.sampling.window_ms;
        let min_full_windows = self.sampling.samples as i64 - 1;
        if full_windows < min_full_windows {
            elapsed += (min_full_windows - full_windows) * self.sampling.window_ms;
        }
        elapsed.max(1)
    }

    /// Whether nothing was recorded for all of the samples' reach: the rate is zero, and a
    /// holder may forget it.
    pub fn is_idle(&self, now_ms: i64) -> bool {
        let reach = self.sampling.samples as i64 * self.sampling.window_ms;
        self.samples
            .iter()
            .all(|sample| sample.value == 0.0 || now_ms - sample.last_ms >= reach)
    }

    /// Takes `value` back out of the current sample (a fetch answered empty after all).
    pub fn unrecord(&mut self, value: f64, now_ms: i64) {
        self.record(-value, now_ms);
    }

    /// Begins a new sample at `now_ms`, in the ring's next slot (one more than `samples`:
    /// Kafka keeps an overlapping one).
    fn advance(&mut self, now_ms: i64) {
        self.current = (self.current + 1) % (self.sampling.samples + 1);
        if self.current >= self.samples.len() {
            self.samples.push(Sample::at(now_ms));
        } else {
            self.samples[self.current] = Sample::at(now_ms);
        }
    }

    /// Empties the samples last recorded into `samples` windows or more ago, restarting them
    /// at `now_ms`, as Kafka's `purgeObsoleteSamples` does.
    fn purge(&mut self, now_ms: i64) {
        let reach = self.sampling.samples as i64 * self.sampling.window_ms;
        for sample in &mut self.samples {
            if now_ms - sample.last_ms >= reach {
                *sample = Sample::at(now_ms);
            }
        }
    }
}

/// The throttle a rate `measured` over its `limit` earns, in milliseconds, as Kafka's
/// `QuotaUtils#throttleTime` computes it: the excess as a share of the limit, times the
/// `window_ms` the rate is measured over (0 within the limit; a limit of 0 earns the most).
pub fn throttle_ms(measured: f64, limit: f64, window_ms: i64) -> i64 {
    if measured <= limit {
        return 0;
    }
    let throttle = ((measured - limit) / limit * window_ms as f64).round();
    if throttle.is_nan() || throttle >= i64::MAX as f64 {
        i64::MAX
    } else {
        throttle as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_burst_is_spread_over_ten_windows() {
        let mut rate = Rate::new(Sampling::default());
        rate.record(10_000.0, 0);
        // 10,000 bytes over the 10 s the window is padded to.
        assert_eq!(rate.window_ms(0), 10_000);
        assert!((rate.per_second(0) - 1_000.0).abs() < 1e-9);
        // 500 ms later: 10.5 s.
        assert_eq!(rate.window_ms(500), 10_500);
    }

    #[test]
    fn a_steady_rate_is_measured_over_the_samples_in_reach() {
        let mut rate = Rate::new(Sampling::default());
        // 1,000 bytes every 100 ms: 10,000 bytes a second, for 30 s.
        let mut now = 0;
        while now < 30_000 {
            rate.record(1_000.0, now);
            now += 100;
        }
        let measured = rate.per_second(now);
        assert!((measured - 10_000.0).abs() / 10_000.0 < 0.1, "{measured}");
        // Idle for the samples' whole reach: nothing left.
        assert!(rate.is_idle(now + 11_000));
        assert_eq!(rate.per_second(now + 11_000), 0.0);
    }

    #[test]
    fn unrecording_takes_a_value_back() {
        let mut rate = Rate::new(Sampling::default());
        rate.record(5_000.0, 0);
        rate.unrecord(5_000.0, 10);
        assert_eq!(rate.per_second(10), 0.0);
    }
}
