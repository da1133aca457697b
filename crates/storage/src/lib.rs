//! ferrolog's storage engine: Kafka's broker-side log layer, byte-compatible with Kafka's data
//! directories. A synchronous library on std threads; it never depends on an async runtime, a
//! protocol crate or a CLI crate, so it can be embedded alone.
//!
//! Layers, each depending only on those above it in this list:
//! * [`segment`] — one `.log` with its `.index` and `.timeindex`;
//! * [`log`] — a partition: an ordered list of segments, appends, reads, rolls, truncation,
//!   loading and recovery.

#![warn(missing_docs)]

pub mod checkpoint;
pub mod cleaner;
pub mod clock;
pub mod config;
pub mod decompression;
pub mod error;
mod fault;
pub mod fs;
pub mod health;
pub mod log;
pub mod manager;
pub mod offset;
pub mod producer;
pub mod scheduler;
pub mod segment;
pub mod throttle;
pub mod types;

pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{CleanupPolicy, LogConfig, TargetCompression};
pub use error::{Result, StorageError};
pub use offset::{FilePosition, Offset, RelativeOffset};
pub use types::TopicPartition;
