//! ferrolog's storage engine: Kafka's broker-side log layer, byte-compatible with Kafka's data
//! directories. A synchronous library on std threads; it never depends on an async runtime, a
//! protocol crate or a CLI crate, so it can be embedded alone.
//!
//! Layers, bottom-up, each using only those listed before it:
//! * foundations: [`offset`] (offsets, relative offsets and file positions as types), [`epoch`]
//!   (producer, partition leader and transaction coordinator epochs as types), [`types`]
//!   (partition names and directories), [`error`], [`clock`], [`config`] (per-topic log
//!   configuration), [`fs`] (fsyncs, atomic replace, renames), [`health`] (a data directory's
//!   online state), [`checkpoint`] (Kafka's offset checkpoint files), [`leader_epochs`] (a
//!   partition's leader-epoch cache and its checkpoint file), [`decompression`], [`throttle`],
//!   [`scheduler`];
//! * [`segment`] — one `.log` with its `.index`, `.timeindex` and `.txnindex`, and the bound on
//!   sealed segments' open files and mappings;
//! * [`producer`] — idempotent and transactional producers' state and its snapshot files;
//! * [`log`] — a partition: an ordered list of segments, appends, reads, rolls, flushes,
//!   truncation, retention, loading and recovery, moves between directories;
//! * [`cleaner`] — compaction threads, swapping cleaned segments into their log;
//! * [`manager`] — the LogManager: data directories, creating, loading, deleting and moving
//!   logs, checkpoints, the deleter, and the cleaner and scheduler it runs.

#![warn(missing_docs)]

pub mod checkpoint;
pub mod cleaner;
pub mod clock;
pub mod config;
pub mod decompression;
pub mod epoch;
pub mod error;
mod fault;
pub mod fs;
pub mod health;
pub mod leader_epochs;
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
pub use epoch::{CoordinatorEpoch, LeaderEpoch, ProducerEpoch};
pub use error::{Result, StorageError};
pub use offset::{FilePosition, Offset, RelativeOffset};
pub use types::TopicPartition;
