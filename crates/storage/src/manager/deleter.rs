//! The deleter: removes the files of deleted segments (renamed `.deleted`) and whole deleted
//! partition directories (renamed `-delete`) once `file.delete.delay.ms` has passed, on its own
//! thread (`log-deleter`), so the scheduler and appenders never wait on file removal. Pending
//! deletions are not carried across a restart: startup removes leftovers of both kinds.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use crate::clock::Clock;
use crate::error::StorageError;
use crate::fs::remove_if_exists;
use crate::log::SegmentReaper;
use crate::scheduler::{BackgroundThread, Wakeup};

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Files(Vec<PathBuf>),
    Dir(PathBuf),
}

/// Removes deleted segments' files and deleted partition directories once their delay is over.
#[derive(Debug)]
pub struct Deleter {
    clock: Arc<dyn Clock>,
    /// (due time, sequence for FIFO among equals, what).
    queue: Mutex<BinaryHeap<Reverse<(i64, u64, Target)>>>,
    sequence: AtomicU64,
    failures: AtomicU64,
    wakeup: Arc<Wakeup>,
}

impl Deleter {
    /// A deleter with nothing pending, timed by `clock`; [`Deleter::start`] starts its thread.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            queue: Mutex::new(BinaryHeap::new()),
            sequence: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            wakeup: Arc::new(Wakeup::default()),
        }
    }

    fn push(&self, target: Target, delay: Duration) {
        let due = crate::clock::after(self.clock.now_ms(), delay);
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
        self.queue.lock().push(Reverse((due, sequence, target)));
        self.wakeup.wake();
    }

    /// Removes `dir` (a renamed `-delete` partition directory) after `delay`.
    pub fn schedule_dir(&self, dir: PathBuf, delay: Duration) {
        self.push(Target::Dir(dir), delay);
    }

    /// Deletions waiting for their time.
    pub fn pending(&self) -> usize {
        self.queue.lock().len()
    }

    /// Deletions that failed (the file system refused); each is logged.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Carries out every deletion due by the clock; returns how many.
    pub fn run_due(&self) -> usize {
        let now_ms = self.clock.now_ms();
        let mut done = 0;
        loop {
            let target = {
                let mut queue = self.queue.lock();
                match queue.peek() {
                    Some(Reverse((due, _, _))) if *due <= now_ms => {
                        queue.pop().map(|Reverse((_, _, target))| target)
                    }
                    _ => None,
                }
            };
            let Some(target) = target else { break };
            let result = match &target {
                Target::Files(files) => {
                    // Every file is tried: a failure on one spares none of the others.
                    let mut first_error = None;
                    for file in files {
                        if let Err(error) = remove_if_exists(file) {
                            first_error.get_or_insert(error);
                        }
                    }
                    first_error.map_or(Ok(()), Err)
                }
                Target::Dir(dir) => match std::fs::remove_dir_all(dir) {
                    Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                        Err(StorageError::io("delete", dir.clone())(error))
                    }
                    _ => Ok(()),
                },
            };
            if let Err(error) = result {
                self.failures.fetch_add(1, Ordering::Relaxed);
                tracing::error!(error = %error, "could not delete; the files stay until the next start");
            }
            done += 1;
        }
        done
    }

    fn next_due_ms(&self) -> Option<i64> {
        self.queue.lock().peek().map(|Reverse((due, _, _))| *due)
    }

    /// Starts the `log-deleter` thread.
    pub fn start(self: &Arc<Self>) -> std::io::Result<BackgroundThread> {
        let deleter = Arc::clone(self);
        BackgroundThread::spawn("log-deleter", Arc::clone(&self.wakeup), move || {
            deleter.run_due();
            let until_due = deleter.next_due_ms().map_or(i64::MAX, |due| {
                due.saturating_sub(deleter.clock.now_ms()).max(0)
            });
            Duration::from_millis(until_due.min(i64::from(u32::MAX)) as u64)
        })
    }
}

impl SegmentReaper for Deleter {
    fn schedule(&self, files: Vec<PathBuf>, delay: Duration) {
        self.push(Target::Files(files), delay);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn files_and_dirs_are_removed_only_after_their_delay() {
        let temp = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_000));
        let deleter = Deleter::new(clock.clone());
        let file = temp.path().join("00000000000000000000.log.deleted");
        std::fs::write(&file, b"x").unwrap();
        let dir = temp.path().join("t-0.abc-delete");
        std::fs::create_dir_all(dir.join("inner")).unwrap();
        deleter.schedule(vec![file.clone()], Duration::from_secs(60));
        deleter.schedule_dir(dir.clone(), Duration::from_secs(30));
        assert_eq!(deleter.run_due(), 0);
        clock.advance_ms(30_000);
        assert_eq!(deleter.run_due(), 1);
        assert!(!dir.exists() && file.exists());
        clock.advance_ms(29_999);
        assert_eq!(deleter.run_due(), 0);
        clock.advance_ms(1);
        assert_eq!(deleter.run_due(), 1);
        assert!(!file.exists());
        assert_eq!((deleter.pending(), deleter.failures()), (0, 0));
    }
}
