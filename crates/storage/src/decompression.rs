//! Memory for decompressing produced batches, over every append of every log
//! (`ferrolog.decompression.memory.bytes`): an append whose batch is compressed reserves what
//! it may decompress to before it starts, waiting while others hold the memory, and gives it
//! back when its records are written or refused. One append may decompress to its topic's
//! `max.message.bytes` (1 MiB at least) and never more than the whole of this memory, which no
//! topic config can raise: a client that raises `max.message.bytes` to 2 GiB and sends bombs
//! (a few kilobytes inflating to gigabytes) makes the broker inflate no more than this, all its
//! connections together. Kafka bounds a batch's decompression by nothing but each record's
//! size (`max.decompressed.message.bytes`, which a topic may raise too).

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

/// The default of `ferrolog.decompression.memory.bytes`: 256 MiB.
pub const DEFAULT_DECOMPRESSION_MEMORY: u64 = 256 << 20;

/// The memory appends decompress into.
#[derive(Debug)]
pub struct DecompressionMemory {
    capacity: u64,
    used: Mutex<u64>,
    freed: Condvar,
}

/// Bytes an append holds; given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    memory: Arc<DecompressionMemory>,
    bytes: u64,
}

impl DecompressionMemory {
    /// `capacity` bytes to decompress into, at least 1 MiB (one default batch).
    pub fn new(capacity: u64) -> Arc<Self> {
        Arc::new(Self {
            capacity: capacity.max(1 << 20),
            used: Mutex::new(0),
            freed: Condvar::new(),
        })
    }

    /// The most one append may decompress to.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes reserved now.
    pub fn in_use(&self) -> u64 {
        *self.used.lock()
    }

    /// Reserves `bytes` (at most the capacity), waiting until the others' reservations leave
    /// room.
    pub fn reserve(self: &Arc<Self>, bytes: u64) -> Reservation {
        let bytes = bytes.min(self.capacity);
        let mut used = self.used.lock();
        while *used + bytes > self.capacity {
            self.freed.wait(&mut used);
        }
        *used += bytes;
        Reservation {
            memory: Arc::clone(self),
            bytes,
        }
    }
}

impl Reservation {
    /// The bytes reserved.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut used = self.memory.used.lock();
        *used -= self.bytes;
        self.memory.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_wait_for_room_and_never_exceed_the_capacity() {
        let memory = DecompressionMemory::new(4 << 20);
        let first = memory.reserve(3 << 20);
        let huge = std::thread::spawn({
            let memory = Arc::clone(&memory);
            move || memory.reserve(u64::MAX).bytes()
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!huge.is_finished(), "waits while the first holds its share");
        assert_eq!(memory.in_use(), 3 << 20);
        drop(first);
        assert_eq!(
            huge.join().unwrap_or(0),
            4 << 20,
            "at most the whole capacity"
        );
        assert_eq!(memory.in_use(), 0, "given back when dropped");
    }
}
