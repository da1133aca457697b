//! The connection limits in force while the listeners accept, changed at run time as Kafka's
//! dynamic `max.connections`, `max.connections.per.ip` and `max.connections.per.ip.overrides`
//! change them: a raised limit lets waiting connections in at once; a lowered one closes
//! nothing, it holds new connections back until enough of the open ones have closed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;
use tokio::sync::Semaphore;

use super::limits::{AddressQuotas, ConnectionLimits, listener_limit};

/// Slots of a limit that may change: a semaphore whose permits follow the limit.
#[derive(Debug)]
pub struct SlotPool {
    semaphore: Arc<Semaphore>,
    /// The limit the permits stand for (open connections' permits included).
    capacity: Mutex<usize>,
    /// Permits still to be taken out, as connections give theirs back, after a lowering.
    debt: Arc<AtomicUsize>,
    /// Whether a task is taking them out.
    draining: Arc<AtomicBool>,
}

impl SlotPool {
    fn new(capacity: usize) -> Self {
        let capacity = capacity.min(Semaphore::MAX_PERMITS);
        Self {
            semaphore: Arc::new(Semaphore::new(capacity)),
            capacity: Mutex::new(capacity),
            debt: Arc::new(AtomicUsize::new(0)),
            draining: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The semaphore connections take a slot of.
    pub fn semaphore(&self) -> Arc<Semaphore> {
        Arc::clone(&self.semaphore)
    }

    /// Makes the pool `capacity` slots: more are free at once (less what a lowering still
    /// owes); fewer are taken out, the free ones now and the others as they come free.
    fn resize(&self, capacity: usize) {
        let capacity = capacity.min(Semaphore::MAX_PERMITS);
        let mut current = self.capacity.lock();
        if capacity > *current {
            let growth = capacity - *current;
            let forgiven = take_up_to(&self.debt, growth);
            self.semaphore.add_permits(growth - forgiven);
        } else if capacity < *current {
            let excess = *current - capacity;
            let owed = excess - self.semaphore.forget_permits(excess);
            if owed > 0 {
                self.debt.fetch_add(owed, Ordering::AcqRel);
                self.drain();
            }
        }
        *current = capacity;
    }

    /// Takes out the permits owed as they are given back, on a task of the async runtime
    /// (without one, what is owed waits for the next resize in one).
    fn drain(&self) {
        if self.draining.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.draining.store(false, Ordering::Release);
            return;
        };
        let (semaphore, debt, draining) = (
            Arc::clone(&self.semaphore),
            Arc::clone(&self.debt),
            Arc::clone(&self.draining),
        );
        runtime.spawn(async move {
            loop {
                if debt.load(Ordering::Acquire) == 0 {
                    draining.store(false, Ordering::Release);
                    // A lowering between the check and the store found a drainer running.
                    if debt.load(Ordering::Acquire) == 0 || draining.swap(true, Ordering::AcqRel) {
                        return;
                    }
                }
                let Ok(permit) = Arc::clone(&semaphore).acquire_owned().await else {
                    return;
                };
                if take_up_to(&debt, 1) == 1 {
                    permit.forget();
                }
            }
        });
    }
}

/// Takes up to `n` off `debt`; how much was taken.
fn take_up_to(debt: &AtomicUsize, n: usize) -> usize {
    let before = debt
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |owed| {
            Some(owed - owed.min(n))
        })
        .unwrap_or(0);
    before.min(n)
}

/// Every limit on connections, shared by the listeners' accept loops and by whoever changes
/// them.
#[derive(Debug)]
pub struct LiveLimits {
    limits: Mutex<ConnectionLimits>,
    /// `max.connections`, over every listener.
    broker: SlotPool,
    /// Each listener's own limit (`listener.name.<l>.max.connections`, else its share of
    /// `max.connections`), with its pool.
    listeners: Mutex<Vec<(Option<usize>, Arc<SlotPool>)>>,
    /// How many listeners share `max.connections`.
    listener_count: Mutex<usize>,
    addresses: Arc<AddressQuotas>,
}

impl LiveLimits {
    pub fn new(limits: ConnectionLimits) -> Arc<Self> {
        Arc::new(Self {
            broker: SlotPool::new(limits.max_connections),
            addresses: AddressQuotas::new(limits.clone()),
            limits: Mutex::new(limits),
            listeners: Mutex::new(Vec::new()),
            listener_count: Mutex::new(1),
        })
    }

    /// The limits in force.
    pub fn limits(&self) -> ConnectionLimits {
        self.limits.lock().clone()
    }

    /// The broker-wide slots.
    pub fn broker_slots(&self) -> Arc<Semaphore> {
        self.broker.semaphore()
    }

    /// The connections open per address.
    pub fn addresses(&self) -> Arc<AddressQuotas> {
        Arc::clone(&self.addresses)
    }

    /// Sets how many listeners share `max.connections`, before their pools are made.
    pub fn expect_listeners(&self, count: usize) {
        *self.listener_count.lock() = count.max(1);
    }

    /// The slots of a listener whose own limit is `own`.
    pub fn listener_slots(&self, own: Option<usize>) -> Arc<Semaphore> {
        let max = self.limits.lock().max_connections;
        let count = *self.listener_count.lock();
        let pool = Arc::new(SlotPool::new(listener_limit(own, max, count)));
        let semaphore = pool.semaphore();
        self.listeners.lock().push((own, pool));
        semaphore
    }

    /// Puts `limits` in force for the connections accepted from now on.
    pub fn set(&self, limits: ConnectionLimits) {
        let mut current = self.limits.lock();
        let count = *self.listener_count.lock();
        self.broker.resize(limits.max_connections);
        for (own, pool) in self.listeners.lock().iter() {
            pool.resize(listener_limit(*own, limits.max_connections, count));
        }
        self.addresses.set_limits(limits.clone());
        *current = limits;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_raised_limit_frees_slots_and_a_lowered_one_takes_them_back_as_they_free() {
        let live = LiveLimits::new(ConnectionLimits {
            max_connections: 2,
            ..ConnectionLimits::default()
        });
        let slots = live.broker_slots();
        let first = Arc::clone(&slots).acquire_owned().await.unwrap();
        let second = Arc::clone(&slots).acquire_owned().await.unwrap();
        assert_eq!(slots.available_permits(), 0);
        live.set(ConnectionLimits {
            max_connections: 3,
            ..ConnectionLimits::default()
        });
        assert_eq!(slots.available_permits(), 1);
        // Down to one: the free slot goes at once, one held slot as it is given back.
        live.set(ConnectionLimits {
            max_connections: 1,
            ..ConnectionLimits::default()
        });
        assert_eq!(slots.available_permits(), 0);
        drop(first);
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert_eq!(slots.available_permits(), 0, "taken back, not freed");
        drop(second);
        assert_eq!(slots.available_permits(), 1);
        // Lowered to 0 with one held, then raised to 2 before it is given back: what the
        // lowering still owed is forgiven, not taken from the raise.
        let held = Arc::clone(&slots).acquire_owned().await.unwrap();
        live.set(ConnectionLimits {
            max_connections: 0,
            ..ConnectionLimits::default()
        });
        live.set(ConnectionLimits {
            max_connections: 2,
            ..ConnectionLimits::default()
        });
        assert_eq!(slots.available_permits(), 1);
        drop(held);
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert_eq!(slots.available_permits(), 2);
    }

    #[test]
    fn per_address_limits_change_for_new_connections() {
        let live = LiveLimits::new(ConnectionLimits::default());
        let ip: std::net::IpAddr = "10.0.0.1".parse().unwrap();
        let addresses = live.addresses();
        let open = addresses.admit(ip).unwrap();
        live.set(ConnectionLimits {
            max_per_ip: 1,
            ..ConnectionLimits::default()
        });
        assert_eq!(addresses.admit(ip).unwrap_err(), 1);
        drop(open);
        assert!(addresses.admit(ip).is_ok());
    }
}
