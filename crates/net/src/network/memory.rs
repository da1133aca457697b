//! Memory for requests in flight (`queued.max.request.bytes`), in two pools of that size, and
//! two caps on what requests still arriving may reserve of the first.
//!
//! A request is charged its frame's size from the *frame* pool. Once read and checked
//! ([`crate::frame_shape`]), it is charged what decoding and answering it will take from the
//! *work* pool, and it holds both charges until its response is written. When a pool is spent,
//! connections wait (they read no more requests) until charges come back, as Kafka mutes its
//! sockets, so the memory clients can make the broker hold stays bounded however many send at
//! once. A request needing more than a whole pool is refused.
//!
//! When the frame is charged depends on its size, so that requests whose bytes have not
//! arrived cannot keep the ones that have from being served. A request of at most
//! [`OWN_BUFFER`] bytes arrives into its connection's own buffer, charged to no pool, and is
//! charged once it is whole. A larger one is charged once it has filled that buffer and more
//! of it arrives: its whole size from the frame pool and, until its last byte has arrived, from
//! the *arriving* cap, half the frame pool (on a connection not yet authenticated, also from
//! the *unauthenticated* cap, a sixteenth). Requests still arriving therefore hold at most half
//! the frame pool whatever their clients do (a size prefix alone holds nothing), the other half
//! is always there for requests that have arrived, and those are served and give it back. A
//! request is charged its whole size at once, never a part and then more: requests each
//! holding part of what they need could otherwise wait for one another for ever.
//!
//! Two pools, not one, because a request learns its second charge only while holding its
//! first: with one pool, requests holding frames could each wait for more while none returns
//! any. Here a connection waits for work memory holding only frame memory, and holders of work
//! memory never wait for frame memory, so each wait ends. A connection holding answers back
//! (Produce requests waiting for their flush) writes them while it waits for either pool, so
//! what they hold comes back without it.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Charges are counted in KiB so that a pool of any size fits the semaphore's permits.
const UNIT: u64 = 1024;

/// The bytes of a request its connection reads into its own buffer before the request is
/// charged: a request up to this size is charged once whole, a larger one once it outgrows
/// this. Every connection may hold this much besides the pools.
pub const OWN_BUFFER: usize = 64 * 1024;

/// One pool; `None` permits means unlimited (Kafka's `-1`).
#[derive(Debug, Clone)]
struct Pool {
    permits: Option<Arc<Semaphore>>,
    capacity_units: u64,
}

/// The two pools and the two caps on requests still arriving.
#[derive(Debug, Clone)]
pub struct RequestMemory {
    frames: Pool,
    arriving: Pool,
    unauthenticated: Pool,
    work: Pool,
}

/// What one request holds; given back when dropped.
#[derive(Debug, Default)]
pub struct Charge {
    frame: Option<OwnedSemaphorePermit>,
    arriving: Option<OwnedSemaphorePermit>,
    unauthenticated: Option<OwnedSemaphorePermit>,
    work: Option<OwnedSemaphorePermit>,
}

/// A request needing more memory than a whole pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    pub needed: u64,
    pub capacity: u64,
}

/// Whose connection a request arrives on: one not yet authenticated may reserve less.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    Authenticated,
    Unauthenticated,
}

fn units(bytes: u64) -> u64 {
    bytes.div_ceil(UNIT)
}

impl Pool {
    fn new(capacity_bytes: Option<u64>) -> Self {
        match capacity_bytes {
            Some(bytes) => {
                let capacity_units = units(bytes).clamp(1, u64::from(u32::MAX));
                Self {
                    permits: Some(Arc::new(Semaphore::new(capacity_units as usize))),
                    capacity_units,
                }
            }
            None => Self {
                permits: None,
                capacity_units: u64::MAX,
            },
        }
    }

    fn too_large(&self, bytes: u64) -> Option<TooLarge> {
        (units(bytes) > self.capacity_units).then(|| TooLarge {
            needed: bytes,
            capacity: self.capacity_units.saturating_mul(UNIT),
        })
    }

    /// `bytes` from the pool, waiting while it cannot give them.
    async fn take(&self, bytes: u64) -> Result<Option<OwnedSemaphorePermit>, TooLarge> {
        if let Some(too_large) = self.too_large(bytes) {
            return Err(too_large);
        }
        Ok(self.take_at_most(bytes).await)
    }

    /// `bytes` from the pool, or the whole pool when it has fewer, waiting while it cannot
    /// give them: a cap is never a reason to refuse a request.
    async fn take_at_most(&self, bytes: u64) -> Option<OwnedSemaphorePermit> {
        let permits = self.permits.as_ref()?;
        let wanted = units(bytes).min(self.capacity_units) as u32;
        if wanted == 0 {
            return None;
        }
        // The semaphore is never closed.
        Arc::clone(permits).acquire_many_owned(wanted).await.ok()
    }

    fn available_bytes(&self) -> u64 {
        self.permits.as_ref().map_or(u64::MAX, |permits| {
            permits.available_permits() as u64 * UNIT
        })
    }
}

fn held(permit: &Option<OwnedSemaphorePermit>) -> u64 {
    permit
        .as_ref()
        .map_or(0, |permit| permit.num_permits() as u64)
}

impl RequestMemory {
    /// Two pools of `capacity_bytes` each (`None`: unlimited), with the caps on requests
    /// still arriving at a half and a sixteenth of it.
    pub fn new(capacity_bytes: Option<u64>) -> Self {
        Self {
            frames: Pool::new(capacity_bytes),
            arriving: Pool::new(capacity_bytes.map(|bytes| bytes / 2)),
            unauthenticated: Pool::new(capacity_bytes.map(|bytes| bytes / 16)),
            work: Pool::new(capacity_bytes),
        }
    }

    /// Whether a request of `bytes` is larger than the frame pool, so never to be served.
    pub fn frame_too_large(&self, bytes: u64) -> Option<TooLarge> {
        self.frames.too_large(bytes)
    }

    /// A request of `bytes`, charged once it has arrived into its connection's own buffer (a
    /// small one whole, a larger one its first [`OWN_BUFFER`] bytes): see [`Self::charge_frame`]
    /// and [`Self::charge_arriving`].
    pub async fn charge_request(&self, bytes: u64, sender: Sender) -> Result<Charge, TooLarge> {
        if bytes <= OWN_BUFFER as u64 {
            self.charge_frame(bytes).await
        } else {
            self.charge_arriving(bytes, sender).await
        }
    }

    /// A request of at most [`OWN_BUFFER`] bytes, charged once whole; waits while the frame
    /// pool cannot give them (holding nothing meanwhile).
    pub async fn charge_frame(&self, bytes: u64) -> Result<Charge, TooLarge> {
        Ok(Charge {
            frame: self.frames.take(bytes).await?,
            ..Charge::default()
        })
    }

    /// A larger request of `bytes` whose first [`OWN_BUFFER`] bytes have arrived: its whole
    /// size is charged from the caps on requests still arriving, then from the frame pool;
    /// waits while they cannot give it (holding, while it waits for the frame pool, only what
    /// the caps gave). [`Charge::arrived`] gives the caps back once its last byte is read.
    pub async fn charge_arriving(&self, bytes: u64, sender: Sender) -> Result<Charge, TooLarge> {
        if let Some(too_large) = self.frames.too_large(bytes) {
            return Err(too_large);
        }
        let unauthenticated = match sender {
            Sender::Unauthenticated => self.unauthenticated.take_at_most(bytes).await,
            Sender::Authenticated => None,
        };
        let arriving = self.arriving.take_at_most(bytes).await;
        let frame = self.frames.take(bytes).await?;
        Ok(Charge {
            frame,
            arriving,
            unauthenticated,
            work: None,
        })
    }

    /// What decoding and answering the request will take, `bytes`, charged from the work pool;
    /// waits while the work pool cannot give them.
    pub async fn charge_work(&self, charge: &mut Charge, bytes: u64) -> Result<(), TooLarge> {
        let more = self.work.take(bytes).await?;
        absorb(&mut charge.work, more);
        Ok(())
    }

    /// Raises the work charge to `bytes` if the work pool has the difference now; never waits.
    pub fn try_raise_work(&self, charge: &mut Charge, bytes: u64) -> bool {
        let Some(permits) = &self.work.permits else {
            return true;
        };
        let (wanted, holding) = (units(bytes), held(&charge.work));
        if wanted <= holding {
            return true;
        }
        let missing = (wanted - holding).min(u64::from(u32::MAX)) as u32;
        match Arc::clone(permits).try_acquire_many_owned(missing) {
            Ok(permit) => {
                absorb(&mut charge.work, Some(permit));
                true
            }
            Err(_) => false,
        }
    }

    /// Bytes the frame pool and the work pool can give now.
    pub fn available_bytes(&self) -> (u64, u64) {
        (self.frames.available_bytes(), self.work.available_bytes())
    }

    /// Bytes the cap on requests still arriving, and the one for unauthenticated connections,
    /// can give now.
    pub fn arriving_available_bytes(&self) -> (u64, u64) {
        (
            self.arriving.available_bytes(),
            self.unauthenticated.available_bytes(),
        )
    }
}

fn absorb(into: &mut Option<OwnedSemaphorePermit>, more: Option<OwnedSemaphorePermit>) {
    match (into.as_mut(), more) {
        (Some(mine), Some(theirs)) => mine.merge(theirs),
        (None, theirs) => *into = theirs,
        (Some(_), None) => {}
    }
}

impl Charge {
    /// Bytes this charge holds from the frame pool and the work pool.
    pub fn bytes(&self) -> (u64, u64) {
        (held(&self.frame) * UNIT, held(&self.work) * UNIT)
    }

    /// The request's last byte has arrived: the caps on requests still arriving get their
    /// share back; the frame pool's charge stays until the response is written.
    pub fn arrived(&mut self) {
        self.arriving = None;
        self.unauthenticated = None;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[tokio::test]
    async fn charges_wait_for_memory_and_give_it_back() {
        let pool = RequestMemory::new(Some(10 * UNIT));
        let mut first = pool.charge_frame(6 * UNIT).await.unwrap();
        pool.charge_work(&mut first, 3 * UNIT).await.unwrap();
        assert_eq!(pool.available_bytes(), (4 * UNIT, 7 * UNIT));
        assert!(pool.try_raise_work(&mut first, 9 * UNIT));
        assert!(!pool.try_raise_work(&mut first, 20 * UNIT));
        assert_eq!(first.bytes(), (6 * UNIT, 9 * UNIT));
        let waiting = tokio::spawn({
            let pool = pool.clone();
            async move { pool.charge_frame(6 * UNIT).await.unwrap() }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the second frame waits");
        drop(first);
        assert_eq!(waiting.await.unwrap().bytes(), (6 * UNIT, 0));
        assert_eq!(
            pool.charge_frame(11 * UNIT).await.unwrap_err(),
            TooLarge {
                needed: 11 * UNIT,
                capacity: 10 * UNIT
            }
        );
    }

    #[tokio::test]
    async fn frames_waiting_for_work_memory_cannot_starve_each_other() {
        // Every frame slot is taken by requests that then need work memory, more than there
        // is for all of them at once: they still all finish, one after another.
        let pool = RequestMemory::new(Some(8 * UNIT));
        let requests: Vec<_> = (0..16)
            .map(|_| {
                let pool = pool.clone();
                tokio::spawn(async move {
                    let mut charge = pool.charge_frame(2 * UNIT).await.unwrap();
                    pool.charge_work(&mut charge, 5 * UNIT).await.unwrap();
                    tokio::task::yield_now().await;
                })
            })
            .collect();
        let all = async {
            for request in requests {
                request.await.unwrap();
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), all)
            .await
            .expect("no deadlock");
        assert_eq!(pool.available_bytes(), (8 * UNIT, 8 * UNIT));
    }

    #[tokio::test]
    async fn requests_still_arriving_hold_at_most_half_the_frame_pool() {
        let pool = RequestMemory::new(Some(16 * UNIT));
        // Requests whose last bytes never come: the first takes the whole arriving cap.
        let first = pool
            .charge_arriving(8 * UNIT, Sender::Authenticated)
            .await
            .unwrap();
        let stalled = tokio::spawn({
            let pool = pool.clone();
            async move {
                pool.charge_arriving(UNIT, Sender::Authenticated)
                    .await
                    .unwrap()
            }
        });
        tokio::task::yield_now().await;
        assert!(!stalled.is_finished(), "the arriving cap is spent");
        // A request that has arrived is still charged at once.
        let small = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            pool.charge_frame(8 * UNIT),
        )
        .await
        .expect("the frame pool's other half is there")
        .unwrap();
        assert_eq!(small.bytes(), (8 * UNIT, 0));
        drop(small);
        // Once its last byte arrives, the first request gives the cap back and keeps its frame.
        let mut first = first;
        first.arrived();
        assert_eq!(first.bytes(), (8 * UNIT, 0));
        let mut second = stalled.await.unwrap();
        second.arrived();
        assert_eq!(pool.arriving_available_bytes().0, 8 * UNIT);
        assert_eq!(pool.available_bytes().0, 16 * UNIT - 9 * UNIT);
    }

    #[tokio::test]
    async fn unauthenticated_connections_share_a_sixteenth() {
        let pool = RequestMemory::new(Some(64 * UNIT));
        let held = pool
            .charge_arriving(4 * UNIT, Sender::Unauthenticated)
            .await
            .unwrap();
        assert_eq!(pool.arriving_available_bytes(), (28 * UNIT, 0));
        let waiting = tokio::spawn({
            let pool = pool.clone();
            async move {
                pool.charge_arriving(UNIT, Sender::Unauthenticated)
                    .await
                    .unwrap()
            }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the unauthenticated cap is spent");
        // Authenticated connections are not held up by it.
        pool.charge_arriving(8 * UNIT, Sender::Authenticated)
            .await
            .unwrap();
        drop(held);
        waiting.await.unwrap();
    }

    #[tokio::test]
    async fn a_request_larger_than_a_cap_takes_all_of_it_and_is_served() {
        let pool = RequestMemory::new(Some(16 * UNIT));
        let mut charge = pool
            .charge_arriving(12 * UNIT, Sender::Unauthenticated)
            .await
            .unwrap();
        assert_eq!(pool.arriving_available_bytes(), (0, 0));
        assert_eq!(charge.bytes(), (12 * UNIT, 0));
        charge.arrived();
        assert_eq!(pool.arriving_available_bytes(), (8 * UNIT, UNIT));
        assert_eq!(
            pool.charge_arriving(17 * UNIT, Sender::Authenticated)
                .await
                .unwrap_err(),
            TooLarge {
                needed: 17 * UNIT,
                capacity: 16 * UNIT
            }
        );
    }

    #[tokio::test]
    async fn an_unlimited_pool_never_waits() {
        let pool = RequestMemory::new(None);
        let mut charge = pool.charge_frame(u64::MAX / 2).await.unwrap();
        pool.charge_work(&mut charge, u64::MAX).await.unwrap();
        let arriving = pool.charge_arriving(u64::MAX / 2, Sender::Unauthenticated);
        assert_eq!(arriving.await.unwrap().bytes(), (0, 0));
        assert!(pool.try_raise_work(&mut charge, u64::MAX));
    }
}
