//! The connection limits in force while the listeners accept, changed at run time as Kafka's
//! dynamic `max.connections`, `max.connections.per.ip`, `max.connections.per.ip.overrides`,
//! `max.connection.creation.rate` and a listener's own `max.connections` and
//! `max.connection.creation.rate` change them: a raised limit lets waiting connections in at
//! once; a lowered one closes nothing, it holds new connections back until enough of the open
//! ones have closed. A new rate applies from the next connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;
use tokio::sync::Semaphore;

use ferrolog_auth::quotas::rate::Sampling;

use super::creation_rate::CreationRates;
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
    /// Each listener's pool: its own limit (`listener.name.<l>.max.connections`, set at run
    /// time or else in its configuration), else its share of `max.connections`.
    listeners: Mutex<Vec<ListenerPool>>,
    /// How many listeners share `max.connections`.
    listener_count: Mutex<usize>,
    addresses: Arc<AddressQuotas>,
    /// How fast connections are made, over the broker and each listener.
    rates: CreationRates,
}

/// One listener's slots.
#[derive(Debug)]
struct ListenerPool {
    /// Its name, in lower case as per-listener keys name it.
    name: String,
    /// The limit its own configuration gave it.
    configured: Option<usize>,
    pool: Arc<SlotPool>,
}

impl LiveLimits {
    /// The limits, with connection rates measured over `sampling` (Kafka's quota windows).
    pub fn new(limits: ConnectionLimits, sampling: Sampling) -> Arc<Self> {
        Arc::new(Self {
            broker: SlotPool::new(limits.max_connections),
            addresses: AddressQuotas::new(limits.clone()),
            limits: Mutex::new(limits),
            listeners: Mutex::new(Vec::new()),
            listener_count: Mutex::new(1),
            rates: CreationRates::new(sampling),
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

    /// The slots of listener `name`, whose configuration gives it `configured` connections.
    pub fn listener_slots(&self, name: &str, configured: Option<usize>) -> Arc<Semaphore> {
        let name = name.to_lowercase();
        let limits = self.limits.lock();
        let own = limits.listener_max_connections(&name).or(configured);
        let count = *self.listener_count.lock();
        let pool = Arc::new(SlotPool::new(listener_limit(
            own,
            limits.max_connections,
            count,
        )));
        let semaphore = pool.semaphore();
        self.listeners.lock().push(ListenerPool {
            name,
            configured,
            pool,
        });
        semaphore
    }

    /// The listeners accepting, by their names in lower case.
    pub fn listener_names(&self) -> Vec<String> {
        self.listeners
            .lock()
            .iter()
            .map(|listener| listener.name.clone())
            .collect()
    }

    /// Puts `limits` in force for the connections accepted from now on.
    pub fn set(&self, limits: ConnectionLimits) {
        let mut current = self.limits.lock();
        let count = *self.listener_count.lock();
        self.broker.resize(limits.max_connections);
        for listener in self.listeners.lock().iter() {
            let own = limits
                .listener_max_connections(&listener.name)
                .or(listener.configured);
            listener
                .pool
                .resize(listener_limit(own, limits.max_connections, count));
        }
        self.addresses.set_limits(limits.clone());
        *current = limits;
    }

    /// Records a connection `listener` accepted at `now_ms`: how many milliseconds it waits
    /// before it is served (and the listener before it accepts another), 0 within the rates.
    pub fn accept_throttle(&self, listener: &str, now_ms: i64) -> i64 {
        let (broker, own) = {
            let limits = self.limits.lock();
            (
                limits.creation_rate,
                limits.listener_creation_rate(listener),
            )
        };
        self.rates
            .record(&listener.to_lowercase(), broker, own, now_ms)
    }

    /// Takes back a connection [`LiveLimits::accept_throttle`] recorded and that was then not
    /// served (its address over its own quota).
    pub fn unrecord_accept(&self, listener: &str, now_ms: i64) {
        self.rates.unrecord(&listener.to_lowercase(), now_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_raised_limit_frees_slots_and_a_lowered_one_takes_them_back_as_they_free() {
        let live = LiveLimits::new(
            ConnectionLimits {
                max_connections: 2,
                ..ConnectionLimits::default()
            },
            Sampling::default(),
        );
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
        let live = LiveLimits::new(ConnectionLimits::default(), Sampling::default());
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
