//! Fetches waiting for data, by the partitions they read: Kafka's fetch purgatory, keyed by
//! partition as Kafka keys it. A produce wakes only the fetches that read a partition it
//! appended to; a fetch of other partitions sleeps on until its own data or its deadline.
//!
//! A waiting fetch holds a [`Waiting`]: its own [`Notify`], registered under each partition it
//! reads before it reads them, so an append between the read and the wait is not missed
//! (`notify_one` keeps a permit for a waiter not yet waiting). A wake takes the partition's list
//! whole; a fetch that waits again registers again. When the fetch ends (answered, or dropped
//! with its connection), its `Waiting` removes it everywhere, so the registry holds exactly the
//! fetches waiting now: at most one entry per partition each fetch names, which the request's
//! charge against `queued.max.request.bytes` already covers.

use std::collections::HashMap;
use std::sync::Arc;

use ferrolog_storage::TopicPartition;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

/// The waiting fetches of the broker, by partition.
#[derive(Debug, Default)]
pub struct FetchWaiters {
    by_partition: Mutex<HashMap<TopicPartition, Vec<Arc<Notify>>>>,
}

impl FetchWaiters {
    /// Wakes every fetch waiting on `partition`.
    pub fn wake(&self, partition: &TopicPartition) {
        let waiters = self.by_partition.lock().remove(partition);
        for waiter in waiters.into_iter().flatten() {
            waiter.notify_one();
        }
    }

    /// Fetches waiting on `partition`.
    pub fn registered(&self, partition: &TopicPartition) -> usize {
        self.by_partition.lock().get(partition).map_or(0, Vec::len)
    }

    /// Partitions some fetch waits on.
    pub fn partitions(&self) -> usize {
        self.by_partition.lock().len()
    }
}

/// One fetch's place among the waiters, for as long as the fetch lasts.
#[derive(Debug)]
pub struct Waiting<'w> {
    waiters: &'w FetchWaiters,
    waiter: Arc<Notify>,
    partitions: Vec<TopicPartition>,
}

impl<'w> Waiting<'w> {
    /// A fetch of `partitions`, not yet registered.
    pub fn new(waiters: &'w FetchWaiters, partitions: Vec<TopicPartition>) -> Self {
        Self {
            waiters,
            waiter: Arc::new(Notify::new()),
            partitions,
        }
    }

    /// Registers the fetch under each of its partitions it is not registered under yet (a wake
    /// took it off that partition's list): an append to any of them then wakes it.
    pub fn register(&self) {
        let mut by_partition = self.waiters.by_partition.lock();
        for partition in &self.partitions {
            let waiters = by_partition.entry(partition.clone()).or_default();
            if !waiters.iter().any(|other| Arc::ptr_eq(other, &self.waiter)) {
                waiters.push(Arc::clone(&self.waiter));
            }
        }
    }

    /// Completes once an append woke the fetch since it last waited.
    pub fn woken(&self) -> Notified<'_> {
        self.waiter.notified()
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut by_partition = self.waiters.by_partition.lock();
        for partition in &self.partitions {
            if let Some(waiters) = by_partition.get_mut(partition) {
                waiters.retain(|other| !Arc::ptr_eq(other, &self.waiter));
                if waiters.is_empty() {
                    by_partition.remove(partition);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Waker};

    use super::*;

    /// Whether `waiting` holds a wake-up: its next wait would end at once.
    fn was_woken(waiting: &Waiting<'_>) -> bool {
        let woken = pin!(waiting.woken());
        woken
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_ready()
    }

    #[test]
    fn an_append_wakes_the_fetches_of_its_partition_only() {
        let waiters = FetchWaiters::default();
        let (a, b) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
        let reads_a = Waiting::new(&waiters, vec![a.clone()]);
        let reads_both = Waiting::new(&waiters, vec![a.clone(), b.clone()]);
        reads_a.register();
        reads_both.register();
        waiters.wake(&b);
        assert!(
            !was_woken(&reads_a),
            "b's append does not concern a's reader"
        );
        assert!(was_woken(&reads_both));
        waiters.wake(&a);
        assert!(
            was_woken(&reads_a),
            "woken even though it was not yet waiting"
        );
        assert_eq!(waiters.registered(&a), 0, "a wake takes the list");
    }

    #[test]
    fn a_fetch_waiting_again_holds_one_entry_per_partition() {
        let waiters = FetchWaiters::default();
        let (busy, idle) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
        let waiting = Waiting::new(&waiters, vec![busy.clone(), idle.clone()]);
        for _ in 0..1_000 {
            waiting.register();
            waiters.wake(&busy);
        }
        assert_eq!(waiters.registered(&idle), 1);
        assert!(was_woken(&waiting));
    }

    #[test]
    fn a_fetch_that_ends_leaves_nothing_behind() {
        let waiters = FetchWaiters::default();
        let kept = Waiting::new(&waiters, vec![TopicPartition::new("t", 0)]);
        kept.register();
        for topic in 0..100 {
            // Fetches of partitions nobody ever writes to, each ending unwoken.
            let waiting = Waiting::new(&waiters, vec![TopicPartition::new(format!("x{topic}"), 0)]);
            waiting.register();
        }
        assert_eq!(waiters.partitions(), 1, "only the fetch still waiting");
        drop(kept);
        assert_eq!(waiters.partitions(), 0);
    }
}
