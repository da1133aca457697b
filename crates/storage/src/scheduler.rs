//! Named periodic jobs on one thread, driven by a [`Clock`].
//!
//! Each job first runs `initial_delay` after start, then every `period`. A job that
//! overruns delays its next run rather than queueing catch-up runs; one job's failure is logged
//! and counted and does not stop the others. [`Scheduler::run_due`] runs whatever is due at a
//! given time, so tests drive hours of schedule with a manual clock and never sleep; the
//! [`SchedulerThread`] calls it in a loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::clock::Clock;
use crate::error::Result;

type Task = Box<dyn FnMut(i64) -> Result<()> + Send>;

struct Job {
    name: &'static str,
    period: Duration,
    next_run_ms: i64,
    task: Task,
    runs: Arc<AtomicU64>,
    failures: Arc<AtomicU64>,
    panics: Arc<AtomicU64>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("name", &self.name)
            .field("period", &self.period)
            .field("next_run_ms", &self.next_run_ms)
            .finish_non_exhaustive()
    }
}

/// Counters of one job, readable while the scheduler runs.
#[derive(Debug, Clone)]
pub struct JobStats {
    /// The job's name, as given to [`Scheduler::add`].
    pub name: &'static str,
    runs: Arc<AtomicU64>,
    failures: Arc<AtomicU64>,
    panics: Arc<AtomicU64>,
}

impl JobStats {
    /// Runs so far, failed ones included.
    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }
    /// Runs that failed, panics included.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }
    /// Runs that panicked.
    pub fn panics(&self) -> u64 {
        self.panics.load(Ordering::Relaxed)
    }
}

/// The message a panic carried, for the log.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|message| (*message).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// Named periodic jobs; [`Scheduler::start`] runs them on their own thread.
#[derive(Debug, Default)]
pub struct Scheduler {
    jobs: Vec<Job>,
}

impl Scheduler {
    /// A scheduler without jobs.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a job; a `period` of `None` (Kafka's `Long.MAX_VALUE`) means it never runs.
    pub fn add(
        &mut self,
        name: &'static str,
        start_ms: i64,
        initial_delay: Duration,
        period: Option<Duration>,
        task: impl FnMut(i64) -> Result<()> + Send + 'static,
    ) -> JobStats {
        let stats = JobStats {
            name,
            runs: Arc::new(AtomicU64::new(0)),
            failures: Arc::new(AtomicU64::new(0)),
            panics: Arc::new(AtomicU64::new(0)),
        };
        self.jobs.push(Job {
            name,
            period: period
                .unwrap_or(Duration::MAX)
                .max(Duration::from_millis(1)),
            next_run_ms: match period {
                None => i64::MAX,
                Some(_) => crate::clock::after(start_ms, initial_delay),
            },
            task: Box::new(task),
            runs: Arc::clone(&stats.runs),
            failures: Arc::clone(&stats.failures),
            panics: Arc::clone(&stats.panics),
        });
        stats
    }

    /// Runs every job due at `now_ms` (reading the clock again after each, so an overrun
    /// pushes the next run back). Returns the names of the jobs that ran.
    pub fn run_due(&mut self, clock: &dyn Clock) -> Vec<&'static str> {
        let mut ran = Vec::new();
        for job in &mut self.jobs {
            let now_ms = clock.now_ms();
            if job.next_run_ms > now_ms {
                continue;
            }
            // A panic in a job is a bug, but it must not stop the job (or the others) for good:
            // it is caught, logged and counted like a failure, and the job runs again next time.
            let task = &mut job.task;
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task(now_ms))) {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    job.failures.fetch_add(1, Ordering::Relaxed);
                    metrics::counter!("ferrolog_scheduler_job_failures_total", "job" => job.name)
                        .increment(1);
                    tracing::error!(job = job.name, error = %error, "scheduled job failed");
                }
                Err(panic) => {
                    job.failures.fetch_add(1, Ordering::Relaxed);
                    job.panics.fetch_add(1, Ordering::Relaxed);
                    metrics::counter!("ferrolog_scheduler_job_failures_total", "job" => job.name)
                        .increment(1);
                    metrics::counter!("ferrolog_scheduler_job_panics_total", "job" => job.name)
                        .increment(1);
                    tracing::error!(
                        job = job.name,
                        panic = panic_message(panic.as_ref()),
                        "scheduled job panicked; it runs again at its next time"
                    );
                }
            }
            job.runs.fetch_add(1, Ordering::Relaxed);
            let finished_ms = clock.now_ms();
            let scheduled_next = crate::clock::after(job.next_run_ms, job.period);
            job.next_run_ms = if scheduled_next > finished_ms {
                scheduled_next
            } else {
                // Overran (or the thread woke late): one period from now, no catch-up runs.
                crate::clock::after(finished_ms, job.period)
            };
            ran.push(job.name);
        }
        ran
    }

    /// When the next job is due.
    pub fn next_due_ms(&self) -> i64 {
        self.jobs
            .iter()
            .map(|job| job.next_run_ms)
            .min()
            .unwrap_or(i64::MAX)
    }
}

/// Wakes a sleeping background thread early: on shutdown, or when a manual clock moved.
#[derive(Debug, Default)]
pub struct Wakeup {
    stopped: AtomicBool,
    lock: Mutex<()>,
    condvar: Condvar,
}

impl Wakeup {
    /// Wakes every thread sleeping on it now; one not yet asleep is not affected.
    pub fn wake(&self) {
        let _guard = self.lock.lock();
        self.condvar.notify_all();
    }
    /// Marks it stopped and wakes the sleepers: their loops end, and later sleeps return at once.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        self.wake();
    }
    /// Whether [`Wakeup::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }
    /// Sleeps up to `wait` of real time, or until woken.
    pub fn sleep(&self, wait: Duration) {
        let mut guard = self.lock.lock();
        if !self.is_stopped() {
            self.condvar.wait_for(&mut guard, wait);
        }
    }
}

/// Real time the thread sleeps at most before looking at the clock again, so a manual clock
/// advanced by a test is noticed promptly.
const MAX_SLEEP: Duration = Duration::from_millis(100);

/// A named background thread that runs `step` until stopped, sleeping between steps for as long
/// as `step` asks (at most `MAX_SLEEP`) or until woken. It runs at normal priority: under a
/// saturated CPU, a lowered one let retention fall behind the appends (measured in the soak
/// test), which is worse than sharing the CPU.
#[derive(Debug)]
pub struct BackgroundThread {
    wakeup: Arc<Wakeup>,
    handle: Option<JoinHandle<()>>,
}

impl BackgroundThread {
    /// Starts the thread `name`, running `step` until `wakeup` is stopped.
    pub fn spawn(
        name: &str,
        wakeup: Arc<Wakeup>,
        mut step: impl FnMut() -> Duration + Send + 'static,
    ) -> std::io::Result<Self> {
        let thread_wakeup = Arc::clone(&wakeup);
        let thread_name = name.to_owned();
        let handle = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                while !thread_wakeup.is_stopped() {
                    // A panicking step is logged and counted, and the thread goes on: a
                    // background thread that dies quietly stops its work for good.
                    let wait =
                        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(&mut step)) {
                            Ok(wait) => wait,
                            Err(panic) => {
                                metrics::counter!(
                                    "ferrolog_background_thread_panics_total",
                                    "thread" => thread_name.clone()
                                )
                                .increment(1);
                                tracing::error!(
                                    thread = thread_name,
                                    panic = panic_message(panic.as_ref()),
                                    "a background step panicked; it runs again"
                                );
                                MAX_SLEEP
                            }
                        };
                    let wait = wait.min(MAX_SLEEP);
                    if !wait.is_zero() {
                        thread_wakeup.sleep(wait);
                    }
                }
            })?;
        Ok(Self {
            wakeup,
            handle: Some(handle),
        })
    }

    /// The thread's wakeup: [`Wakeup::wake`] runs its next step early.
    pub fn wakeup(&self) -> &Arc<Wakeup> {
        &self.wakeup
    }

    /// Stops the thread after its current step, and waits for it.
    pub fn stop(&mut self) {
        self.wakeup.stop();
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

impl Drop for BackgroundThread {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The scheduler's thread, named `scheduler`.
pub type SchedulerThread = BackgroundThread;

impl Scheduler {
    /// Runs the jobs on their own thread.
    pub fn start(mut self, clock: Arc<dyn Clock>) -> std::io::Result<SchedulerThread> {
        BackgroundThread::spawn("scheduler", Arc::new(Wakeup::default()), move || {
            self.run_due(clock.as_ref());
            let until_due = self.next_due_ms().saturating_sub(clock.now_ms()).max(0);
            Duration::from_millis(until_due.min(i64::from(u32::MAX)) as u64)
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::error::StorageError;

    #[test]
    fn jobs_run_after_their_initial_delay_then_every_period() {
        let clock = ManualClock::new(0);
        let mut scheduler = Scheduler::new();
        let stats = scheduler.add(
            "tick",
            0,
            Duration::from_millis(30_000),
            Some(Duration::from_millis(10_000)),
            |_| Ok(()),
        );
        assert!(scheduler.run_due(&clock).is_empty());
        clock.set_ms(29_999);
        assert!(scheduler.run_due(&clock).is_empty());
        clock.set_ms(30_000);
        assert_eq!(scheduler.run_due(&clock), vec!["tick"]);
        clock.set_ms(39_999);
        assert!(scheduler.run_due(&clock).is_empty());
        clock.set_ms(40_000);
        assert_eq!(scheduler.run_due(&clock), vec!["tick"]);
        assert_eq!(stats.runs(), 2);
    }

    #[test]
    fn a_late_scheduler_runs_a_job_once_not_once_per_missed_period() {
        let clock = ManualClock::new(0);
        let mut scheduler = Scheduler::new();
        let stats = scheduler.add(
            "tick",
            0,
            Duration::from_millis(0),
            Some(Duration::from_millis(1_000)),
            |_| Ok(()),
        );
        clock.set_ms(10_500);
        scheduler.run_due(&clock);
        scheduler.run_due(&clock);
        assert_eq!(stats.runs(), 1, "no catch-up runs");
        assert!(scheduler.next_due_ms() > 10_500);
    }

    #[test]
    fn an_overrunning_job_delays_its_next_run() {
        let clock = Arc::new(ManualClock::new(0));
        let mut scheduler = Scheduler::new();
        let job_clock = Arc::clone(&clock);
        scheduler.add(
            "slow",
            0,
            Duration::from_millis(0),
            Some(Duration::from_millis(1_000)),
            move |_| {
                job_clock.advance_ms(5_000);
                Ok(())
            },
        );
        scheduler.run_due(clock.as_ref());
        assert!(
            scheduler.next_due_ms() >= 5_000,
            "{}",
            scheduler.next_due_ms()
        );
    }

    #[test]
    fn a_failing_job_is_counted_and_the_others_still_run() {
        let clock = ManualClock::new(0);
        let mut scheduler = Scheduler::new();
        let failing = scheduler.add(
            "fails",
            0,
            Duration::from_millis(0),
            Some(Duration::from_millis(1_000)),
            |_| Err(StorageError::Fatal("boom".into())),
        );
        let working = scheduler.add(
            "works",
            0,
            Duration::from_millis(0),
            Some(Duration::from_millis(1_000)),
            |_| Ok(()),
        );
        scheduler.run_due(&clock);
        clock.set_ms(1_000);
        scheduler.run_due(&clock);
        assert_eq!((failing.failures(), failing.runs()), (2, 2));
        assert_eq!((working.failures(), working.runs()), (0, 2));
    }

    #[test]
    fn a_panicking_job_is_counted_and_runs_again() {
        let clock = ManualClock::new(0);
        let mut scheduler = Scheduler::new();
        let mut first = true;
        let panicking = scheduler.add(
            "panics once",
            0,
            Duration::from_millis(0),
            Some(Duration::from_millis(1_000)),
            move |_| {
                if std::mem::take(&mut first) {
                    panic!("a bug in the job");
                }
                Ok(())
            },
        );
        let other = scheduler.add(
            "other",
            0,
            Duration::from_millis(0),
            Some(Duration::from_millis(1_000)),
            |_| Ok(()),
        );
        scheduler.run_due(&clock);
        clock.set_ms(1_000);
        scheduler.run_due(&clock);
        assert_eq!(
            (panicking.runs(), panicking.failures(), panicking.panics()),
            (2, 1, 1)
        );
        assert_eq!(other.runs(), 2);
    }

    #[test]
    fn a_never_period_never_runs() {
        let clock = ManualClock::new(i64::MAX - 1);
        let mut scheduler = Scheduler::new();
        let stats = scheduler.add("never", 0, Duration::ZERO, None, |_| Ok(()));
        scheduler.run_due(&clock);
        assert_eq!(stats.runs(), 0);
    }

    #[test]
    fn the_thread_runs_jobs_and_stops() {
        let clock: Arc<dyn Clock> = Arc::new(crate::clock::SystemClock);
        let mut scheduler = Scheduler::new();
        let stats = scheduler.add(
            "tick",
            clock.now_ms(),
            Duration::from_millis(0),
            Some(Duration::from_millis(10)),
            |_| Ok(()),
        );
        let mut thread = scheduler.start(clock).unwrap();
        let started = std::time::Instant::now();
        while stats.runs() < 3 {
            assert!(started.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(5));
        }
        thread.stop();
    }
}
