//! The cleaner's threads: started with the manager, stopped with it, and replaced whole when
//! the `log.cleaner.*` settings change at run time, as Kafka's `LogCleaner#reconfigure` does:
//! the running threads finish (a pass under way is aborted, and is done again later from the
//! same checkpoint), then as many as the new settings say start, each with its share of the
//! new dedupe buffer. What the cleaner knows of the partitions (paused, uncleanable, in
//! progress) is the cleaner's, not the threads', and outlives them.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use super::offset_map::OffsetMap;
use super::{CleanerConfig, LogCleaner};
use crate::scheduler::Wakeup;

/// The threads of one configuration.
#[derive(Default)]
pub(super) struct Threads {
    /// Stops this configuration's threads (a new one is made for the next).
    wakeup: Arc<Wakeup>,
    handles: Vec<JoinHandle<()>>,
    /// Set by [`LogCleaner::start`]: a change of the settings starts threads again, even
    /// after a start of them failed.
    started: bool,
    /// Set by [`LogCleaner::stop`]: no thread starts again.
    stopped: bool,
}

/// Refuses a change of the settings as Kafka refuses one (`LogCleaner#validateReconfiguration`):
/// the threads may at most double, or halve, at a time, and never drop below one.
pub fn check_reconfiguration(current: &CleanerConfig, next: &CleanerConfig) -> Result<(), String> {
    let (threads, now) = (next.threads, current.threads);
    if threads < 1 {
        return Err("Log cleaner threads should be at least 1".to_owned());
    }
    if threads < now / 2 {
        return Err(format!(
            "Log cleaner threads cannot be reduced to less than half the current value {now}"
        ));
    }
    if threads > now.saturating_mul(2) {
        return Err(format!(
            "Log cleaner threads cannot be increased to more than double the current value {now}"
        ));
    }
    if next.enable != current.enable {
        return Err("log.cleaner.enable cannot change at run time".to_owned());
    }
    Ok(())
}

impl LogCleaner {
    /// Starts the cleaner threads (none after [`LogCleaner::stop`]).
    pub fn start(self: &Arc<Self>) -> std::io::Result<()> {
        let mut threads = self.threads.lock();
        if threads.stopped || threads.started {
            return Ok(());
        }
        threads.started = true;
        self.spawn_threads(&mut threads)
    }

    /// Stops the threads after their current pass (aborting it) and waits for them; none
    /// starts again.
    pub fn stop(&self) {
        let mut threads = self.threads.lock();
        threads.stopped = true;
        self.stop_threads(&mut threads);
    }

    /// Whether [`LogCleaner::reconfigure`] would take `next`.
    pub fn check(&self, next: &CleanerConfig) -> Result<(), String> {
        check_reconfiguration(&self.config(), next)
    }

    /// Puts `next` in force, refused as [`LogCleaner::check`] refuses (unless `at_start`:
    /// the settings kept from an earlier run, checked when they were set, are those a
    /// starting broker runs with, as Kafka's does). The rate applies from the next throttled
    /// step; a change of the threads, the buffer, its load factor or the backoff replaces the
    /// running threads (a cleaner never started stays so).
    pub fn reconfigure(
        self: &Arc<Self>,
        next: CleanerConfig,
        at_start: bool,
    ) -> Result<(), String> {
        let mut threads = self.threads.lock();
        let current = self.config();
        if !at_start {
            check_reconfiguration(&current, &next)?;
        }
        self.throttle.set_rate(next.max_io_bytes_per_second);
        let same_threads = CleanerConfig {
            max_io_bytes_per_second: current.max_io_bytes_per_second,
            ..next
        } == current;
        *self.config.write() = next;
        if same_threads || threads.stopped || !threads.started {
            return Ok(());
        }
        tracing::info!(
            threads = next.threads,
            dedupe_buffer_bytes = next.dedupe_buffer_bytes,
            "restarting the cleaner threads with new settings"
        );
        self.stop_threads(&mut threads);
        self.spawn_threads(&mut threads)
            .map_err(|error| format!("cannot start the cleaner threads: {error}"))
    }

    /// Cleaner threads started and not stopped (one that died of a panic included).
    pub fn running_threads(&self) -> usize {
        self.threads.lock().handles.len()
    }

    /// The rate every cleaner thread together reads and writes at.
    pub fn io_rate(&self) -> f64 {
        self.throttle.rate()
    }

    fn stop_threads(&self, threads: &mut Threads) {
        threads.wakeup.stop();
        for abort in self.state.lock().in_progress.values() {
            abort.store(true, Ordering::Relaxed);
        }
        for handle in threads.handles.drain(..) {
            let _ = handle.join();
        }
    }

    fn spawn_threads(self: &Arc<Self>, threads: &mut Threads) -> std::io::Result<()> {
        let config = self.config();
        let wakeup = Arc::new(Wakeup::default());
        // Each thread's offset map: its share of the buffer, at most 2 GiB as in Kafka.
        let map_bytes = (config.dedupe_buffer_bytes / config.threads.max(1)).min(i32::MAX as usize);
        for index in 0..config.threads.max(1) {
            let cleaner = Arc::clone(self);
            let thread_wakeup = Arc::clone(&wakeup);
            let handle = std::thread::Builder::new()
                .name(format!("cleaner-{index}"))
                .spawn(move || {
                    let mut map = OffsetMap::new(map_bytes, config.load_factor);
                    let backoff = config.backoff.max(Duration::from_millis(1));
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        while !thread_wakeup.is_stopped() {
                            if !cleaner.clean_next(&mut map, Some(&thread_wakeup)) {
                                thread_wakeup.sleep(backoff);
                            }
                        }
                    }));
                    if outcome.is_err() {
                        cleaner.stats.dead_threads.fetch_add(1, Ordering::Relaxed);
                        tracing::error!("a cleaner thread died");
                    }
                });
            match handle {
                Ok(handle) => threads.handles.push(handle),
                Err(error) => {
                    // None half-started: those begun are stopped again.
                    wakeup.stop();
                    for handle in threads.handles.drain(..) {
                        let _ = handle.join();
                    }
                    return Err(error);
                }
            }
        }
        threads.wakeup = wakeup;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_threads(threads: usize) -> CleanerConfig {
        CleanerConfig {
            threads,
            ..CleanerConfig::default()
        }
    }

    #[test]
    fn threads_change_by_at_most_double_or_half() {
        let four = with_threads(4);
        for accepted in [2, 3, 4, 8] {
            assert_eq!(
                check_reconfiguration(&four, &with_threads(accepted)),
                Ok(())
            );
        }
        assert_eq!(
            check_reconfiguration(&four, &with_threads(9)).unwrap_err(),
            "Log cleaner threads cannot be increased to more than double the current value 4"
        );
        assert_eq!(
            check_reconfiguration(&four, &with_threads(1)).unwrap_err(),
            "Log cleaner threads cannot be reduced to less than half the current value 4"
        );
        assert_eq!(
            check_reconfiguration(&with_threads(1), &with_threads(0)).unwrap_err(),
            "Log cleaner threads should be at least 1"
        );
        // From one thread: one or two; three is more than double.
        assert!(check_reconfiguration(&with_threads(1), &with_threads(2)).is_ok());
        assert!(check_reconfiguration(&with_threads(1), &with_threads(3)).is_err());
    }
}
