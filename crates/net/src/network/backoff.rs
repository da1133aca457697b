//! What an accept loop does when `accept` fails (out of file descriptors, say, with the
//! pending connection still queued): the failure is logged, at most once a second with a count
//! of those held back, and counted, and accepting resumes after a pause that doubles from 10 ms
//! up to a second, so the loop neither spins nor gives up. The broker's listeners and the
//! metrics endpoint share it.

use std::time::{Duration, Instant};

/// The first pause after a failed `accept`, doubled after each further failure.
const FIRST_ACCEPT_BACKOFF: Duration = Duration::from_millis(10);
const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);
/// The most often a repeated refusal or failure is logged.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// Logs a repeated event at most once per [`LOG_EVERY`], counting what it held back.
#[derive(Debug)]
pub(crate) struct Throttled {
    last: Option<Instant>,
    held_back: u64,
}

impl Throttled {
    pub(crate) fn new() -> Self {
        Self {
            last: None,
            held_back: 0,
        }
    }

    /// Whether to log now, and how many were held back since the last line.
    pub(crate) fn due(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self.last.is_some_and(|last| now - last < LOG_EVERY) {
            self.held_back += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.held_back))
    }
}

/// One accept loop's pause after failures.
#[derive(Debug)]
pub(crate) struct AcceptBackoff {
    pause: Duration,
    failures: Throttled,
}

impl AcceptBackoff {
    pub(crate) fn new() -> Self {
        Self {
            pause: FIRST_ACCEPT_BACKOFF,
            failures: Throttled::new(),
        }
    }

    /// An `accept` succeeded: the next failure pauses briefly again.
    pub(crate) fn succeeded(&mut self) {
        self.pause = FIRST_ACCEPT_BACKOFF;
    }

    /// An `accept` of `what` failed with `error`: logs and counts it, and returns how long to
    /// pause before accepting again.
    pub(crate) fn failed(&mut self, error: &std::io::Error, what: &str) -> Duration {
        let pause = self.pause;
        if let Some(held_back) = self.failures.due() {
            tracing::error!(
                %error,
                listener = what,
                failed_since_last_line = held_back,
                pause_ms = pause.as_millis() as u64,
                "accepting a connection failed; accepting again after a pause"
            );
        }
        crate::metrics::record_accept_failure();
        self.pause = (pause * 2).min(MAX_ACCEPT_BACKOFF);
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_to_a_second_and_starts_over_after_a_success() {
        let mut backoff = AcceptBackoff::new();
        let error = std::io::Error::from_raw_os_error(libc::EMFILE);
        let pauses: Vec<u128> = (0..9)
            .map(|_| backoff.failed(&error, "test").as_millis())
            .collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        backoff.succeeded();
        assert_eq!(backoff.failed(&error, "test"), FIRST_ACCEPT_BACKOFF);
    }
}
