//! The one crossing from the broker's async tasks into ferrolog's synchronous storage engine.
//! Storage calls block (file I/O, fsyncs, locks), so they run on tokio's blocking pool, never
//! on the threads that serve connections. Every such call in the broker goes through
//! [`blocking`], so there is one place to bound, count or trace them.
//!
//! It is also where a request's handling time is measured, as Kafka measures its request
//! handler threads' time for the request quota: the time each blocking call of the request
//! runs is added up ([`accounted`], [`spent`]), waits in between (a fetch waiting for data, a
//! group for its members) not counted.

use std::cell::Cell;
use std::time::{Duration, Instant};

tokio::task_local! {
    /// The handling time of the request the task is serving so far.
    static SPENT: Cell<Duration>;
}

/// The blocking work panicked (or the runtime is shutting down); only the request it served
/// fails.
#[derive(Debug)]
pub struct WorkFailed(pub String);

impl std::fmt::Display for WorkFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "blocking work failed: {}", self.0)
    }
}

/// Runs `work` on the blocking pool and waits for it without holding an async thread; the
/// time it ran counts towards the request being [`accounted`] for, if any.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, WorkFailed> {
    let (result, ran) = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let result = work();
        (result, started.elapsed())
    })
    .await
    .map_err(|error| WorkFailed(error.to_string()))?;
    add_spent(ran);
    Ok(result)
}

/// Runs `serving` with its handling time accounted for: see [`spent`].
pub async fn accounted<F: Future>(serving: F) -> F::Output {
    SPENT.scope(Cell::new(Duration::ZERO), serving).await
}

/// Adds `time` to the handling time of the request being accounted for (work done on the
/// connection's own task).
pub fn add_spent(time: Duration) {
    let _ = SPENT.try_with(|spent| spent.set(spent.get() + time));
}

/// The handling time of the request being accounted for so far (zero outside one).
pub fn spent() -> Duration {
    SPENT.try_with(Cell::get).unwrap_or_default()
}
