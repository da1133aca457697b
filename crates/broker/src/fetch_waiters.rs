//! Fetches waiting for data, by the partitions they read: Kafka's fetch purgatory, keyed by
//! partition as Kafka keys it. A produce wakes only the fetches that read a partition it
//! appended to; a fetch of other partitions sleeps on until its own data or its deadline.
//!
//! Each waiting fetch owns a [`Notify`] and registers it under each partition it reads before
//! it reads them, so an append between the read and the wait is not missed: `notify_one` keeps a
//! permit for a waiter not yet waiting. A wake takes the partition's list whole; a fetch that
//! goes on waiting registers again. Entries of fetches that ended are pruned whenever their
//! partition is registered under or woken, so a list holds little more than its live waiters.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use ferrolog_storage::TopicPartition;
use parking_lot::Mutex;
use tokio::sync::Notify;

/// The waiting fetches of the broker, by partition.
#[derive(Debug, Default)]
pub struct FetchWaiters {
    by_partition: Mutex<HashMap<TopicPartition, Vec<Weak<Notify>>>>,
}

impl FetchWaiters {
    /// Registers `waiter` under each of `partitions`: an append to any of them notifies it. A
    /// waiter still registered under a partition (no append woke it there) is not added twice,
    /// so a fetch that wakes and waits again many times holds one entry per partition.
    pub fn register<'p>(
        &self,
        waiter: &Arc<Notify>,
        partitions: impl IntoIterator<Item = &'p TopicPartition>,
    ) {
        let mut by_partition = self.by_partition.lock();
        for partition in partitions {
            let waiters = by_partition.entry(partition.clone()).or_default();
            waiters.retain(|registered| registered.strong_count() > 0);
            if !waiters
                .iter()
                .any(|registered| std::ptr::eq(registered.as_ptr(), Arc::as_ptr(waiter)))
            {
                waiters.push(Arc::downgrade(waiter));
            }
        }
    }

    /// Wakes every fetch waiting on `partition`.
    pub fn wake(&self, partition: &TopicPartition) {
        let waiters = self.by_partition.lock().remove(partition);
        for waiter in waiters.into_iter().flatten() {
            if let Some(waiter) = waiter.upgrade() {
                waiter.notify_one();
            }
        }
    }

    /// Entries held under `partition`, live or not yet pruned.
    pub fn registered(&self, partition: &TopicPartition) -> usize {
        self.by_partition.lock().get(partition).map_or(0, Vec::len)
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Waker};

    use super::*;

    /// Whether `waiter` holds a wake-up: its next wait would end at once.
    fn was_woken(waiter: &Notify) -> bool {
        let notified = pin!(waiter.notified());
        notified
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_ready()
    }

    #[test]
    fn an_append_wakes_the_fetches_of_its_partition_only() {
        let waiters = FetchWaiters::default();
        let (a, b) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
        let reads_a = Arc::new(Notify::new());
        let reads_both = Arc::new(Notify::new());
        waiters.register(&reads_a, [&a]);
        waiters.register(&reads_both, [&a, &b]);
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
        let waiter = Arc::new(Notify::new());
        for _ in 0..1_000 {
            waiters.register(&waiter, [&busy, &idle]);
            waiters.wake(&busy);
        }
        assert_eq!(waiters.registered(&idle), 1);
        assert!(was_woken(&waiter));
    }

    #[test]
    fn ended_fetches_are_pruned_when_their_partition_is_next_registered_under() {
        let waiters = FetchWaiters::default();
        let quiet = TopicPartition::new("quiet", 0);
        for _ in 0..100 {
            let waiter = Arc::new(Notify::new());
            waiters.register(&waiter, [&quiet]);
        }
        assert_eq!(waiters.registered(&quiet), 1, "only the last, itself ended");
        waiters.wake(&quiet);
        assert_eq!(waiters.registered(&quiet), 0);
    }
}
