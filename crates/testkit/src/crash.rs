//! The SIGKILL harness of the crash tests: a test binary re-runs itself as a child process
//! (one `#[test]` that does the work only when an environment variable names its role), the
//! parent kills it with SIGKILL after a pseudo-random delay, then checks what it left on disk.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The value of `role_env` when this process is a child started by [`spawn_child`]; `None` in
/// an ordinary test run, where the child's `#[test]` returns at once.
pub fn child_role(role_env: &str) -> Option<String> {
    std::env::var(role_env).ok()
}

/// Starts this test binary again, running only the test `entry`, with `role_env` set to `role`.
/// The child's output is discarded.
pub fn spawn_child(entry: &str, role_env: &str, role: &str) -> Child {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", entry, "--nocapture", "--test-threads=1"])
        .env(role_env, role)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the child")
}

/// Kills `child` with SIGKILL and reaps it.
pub fn kill(mut child: Child) {
    child.kill().expect("SIGKILL");
    child.wait().expect("reap the child");
}

/// Pseudo-random delays (xorshift64), the same sequence for the same seed, so a failing run
/// can be repeated.
#[derive(Debug, Clone)]
pub struct KillDelays {
    state: u64,
    min_ms: u64,
    spread_ms: u64,
}

impl KillDelays {
    /// Delays of `min_ms` plus up to `spread_ms`, from `seed` (which must not be 0).
    pub fn new(seed: u64, min_ms: u64, spread_ms: u64) -> Self {
        Self {
            state: seed,
            min_ms,
            spread_ms,
        }
    }

    /// The next delay.
    pub fn next_delay(&mut self) -> Duration {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        Duration::from_millis(self.min_ms + self.state % self.spread_ms)
    }

    /// Starts a child with [`spawn_child`], lets it run for the next delay, and kills it.
    pub fn run_and_kill(&mut self, entry: &str, role_env: &str, role: &str) {
        let child = spawn_child(entry, role_env, role);
        std::thread::sleep(self.next_delay());
        kill(child);
    }
}
