//! The coordinator runtime, which the group coordinator and the transaction coordinator run on
//! (Kafka 4's `coordinator-common`, for one node).
//!
//! A coordinator keeps its state in an internal topic (`__consumer_offsets`,
//! `__transaction_state`) and splits it by the topic's partitions: one [`Shard`] per partition,
//! holding what that partition's records say (the groups, or the transactional ids, placed
//! there) and the state that is never written (members waiting for a rebalance, transactions
//! whose markers are being written).
//!
//! - **Loading**: at startup every partition is read whole ([`loader`]) and its records
//!   replayed into the shards ([`Shard::replay`]); a partition that cannot be read leaves its
//!   shard unavailable.
//! - **Writing**: an operation runs on one shard under that shard's lock ([`Runtime::write`]),
//!   appends its records through the shard's [`Ctx`] ([`Journal`], the topic's one writer), and
//!   applies their effect once the append returns Ok. A change made before the append (a
//!   rebalance's assignment) is undone if it fails.
//! - **Timers**: shards own their timers ([`Periodic`]); the broker's tick runs them on each
//!   shard in turn ([`Runtime::write_each`]) at one instant, so a manual clock drives them.
//! - **Reading** happens under the shard's lock too. Kafka reads each shard at its last
//!   committed offset, through snapshots of its state per offset, because its appends are
//!   asynchronous and replicated: a write's effect is in memory before its records are
//!   committed. Here an append is synchronous, moves the high watermark itself and happens under
//!   the lock, so whenever a shard's lock is free its state is committed state: no snapshots
//!   are needed.
//!
//! Lock order: a shard's lock, then its partition's writer (inside an append); the transaction
//! verifier of a transactional append then takes a transaction shard's lock. No two shards of
//! one coordinator are locked together.

mod codec;
pub(crate) mod internal_log;
pub mod journal;
pub mod loader;
mod shards;
mod timers;

pub(crate) use codec::invalid;
pub use codec::{Codec, LoadEvent};
pub use journal::{Journal, Missing};
pub use loader::LoadSummary;
pub use shards::{Ctx, Runtime, Shard};
pub use timers::Periodic;

#[cfg(test)]
mod tests;
