//! A shard's timers. Coordinators never sleep: the broker calls their `tick` every 100 ms, and
//! each shard's timers say what is due at the time the tick reads, so tests drive them with a
//! manual clock.

use std::time::Duration;

use ferrolog_storage::clock;

/// A check due every `every`, the first one `every` after it is made.
#[derive(Debug, Clone)]
pub struct Periodic {
    next_ms: i64,
    every: Duration,
}

impl Periodic {
    pub fn new(now_ms: i64, every: Duration) -> Self {
        Self {
            next_ms: clock::after(now_ms, every),
            every,
        }
    }

    /// Whether the check is due at `now_ms`; if so, the next one is `every` from now.
    pub fn due(&mut self, now_ms: i64) -> bool {
        if now_ms < self.next_ms {
            return false;
        }
        self.next_ms = clock::after(now_ms, self.every);
        true
    }
}
