//! Wall-clock and CPU time of the timed part of a run.

use std::time::{Duration, Instant};

use rustix::time::{ClockId, clock_gettime};

/// What one run moved and what it cost.
pub struct Outcome {
    pub messages: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    /// CPU time of every thread of this process (the client library's included) while the clock
    /// ran: on a machine whose cores client and broker share, this is what bounds the rate.
    pub cpu: Duration,
}

/// Started when the transfer starts, so connecting and metadata do not count.
pub struct Stopwatch {
    wall: Instant,
    cpu: Duration,
}

impl Stopwatch {
    pub fn start() -> Self {
        Self {
            wall: Instant::now(),
            cpu: process_cpu(),
        }
    }

    pub fn finish(&self, messages: u64, bytes: u64) -> Outcome {
        Outcome {
            messages,
            bytes,
            elapsed: self.wall.elapsed(),
            cpu: process_cpu().saturating_sub(self.cpu),
        }
    }
}

fn process_cpu() -> Duration {
    let time = clock_gettime(ClockId::ProcessCPUTime);
    Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
}
