//! Memory for requests in flight (`queued.max.request.bytes`), in two pools of that size.
//!
//! A request is charged its frame's size from the *frame* pool before its bytes are read. Once
//! read and checked ([`crate::frame_shape`]), it is charged what decoding and answering it will
//! take from the *work* pool, and it holds both charges until its response is written. When a
//! pool is spent, connections wait (they read no more requests) until charges come back, as
//! Kafka mutes its sockets, so the memory clients can make the broker hold stays bounded
//! however many send at once. A request needing more than a whole pool is refused.
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

/// One pool; `None` permits means unlimited (Kafka's `-1`).
#[derive(Debug, Clone)]
struct Pool {
    permits: Option<Arc<Semaphore>>,
    capacity_units: u64,
}

/// The two pools.
#[derive(Debug, Clone)]
pub struct RequestMemory {
    frames: Pool,
    work: Pool,
}

/// What one request holds; given back when dropped.
#[derive(Debug, Default)]
pub struct Charge {
    frame: Option<OwnedSemaphorePermit>,
    work: Option<OwnedSemaphorePermit>,
}

/// A request needing more memory than a whole pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    pub needed: u64,
    pub capacity: u64,
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
        let Some(permits) = &self.permits else {
            return Ok(None);
        };
        if let Some(too_large) = self.too_large(bytes) {
            return Err(too_large);
        }
        let wanted = units(bytes) as u32;
        if wanted == 0 {
            return Ok(None);
        }
        Arc::clone(permits)
            .acquire_many_owned(wanted)
            .await
            .map(Some)
            .map_err(|_| TooLarge {
                needed: bytes,
                capacity: 0,
            })
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
    /// Two pools of `capacity_bytes` each (`None`: unlimited).
    pub fn new(capacity_bytes: Option<u64>) -> Self {
        Self {
            frames: Pool::new(capacity_bytes),
            work: Pool::new(capacity_bytes),
        }
    }

    /// A frame of `bytes`, charged before it is read; waits while the frame pool cannot give
    /// them (holding nothing meanwhile).
    pub async fn charge_frame(&self, bytes: u64) -> Result<Charge, TooLarge> {
        Ok(Charge {
            frame: self.frames.take(bytes).await?,
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
    async fn an_unlimited_pool_never_waits() {
        let pool = RequestMemory::new(None);
        let mut charge = pool.charge_frame(u64::MAX / 2).await.unwrap();
        pool.charge_work(&mut charge, u64::MAX).await.unwrap();
        assert!(pool.try_raise_work(&mut charge, u64::MAX));
    }
}
