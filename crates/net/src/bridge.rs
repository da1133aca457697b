//! The one crossing from the broker's async tasks into ferrolog's synchronous storage engine.
//! Storage calls block (file I/O, fsyncs, locks), so they run on tokio's blocking pool, never
//! on the threads that serve connections. Every such call in the broker goes through
//! [`blocking`], so there is one place to bound, count or trace them.

/// The blocking work panicked (or the runtime is shutting down); only the request it served
/// fails.
#[derive(Debug)]
pub struct WorkFailed(pub String);

impl std::fmt::Display for WorkFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "blocking work failed: {}", self.0)
    }
}

/// Runs `work` on the blocking pool and waits for it without holding an async thread.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, WorkFailed> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| WorkFailed(error.to_string()))
}
