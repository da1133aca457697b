//! ferrolog's coordinators: the group coordinator ([`group`]), the share coordinator
//! ([`share_state`], the durable state of share groups' partitions) and the transaction
//! coordinator ([`txn`]), each a state machine over its internal topic (`__consumer_offsets`,
//! `__share_group_state`, `__transaction_state`) that runs on one coordinator runtime ([`runtime`]: a shard per
//! internal-topic partition, state rebuilt by replaying its records, writes applied once their
//! records are appended, timers owned by the shards). They know the storage engine and the
//! protocol's error codes, and nothing of the network or of who asks.

pub mod group;
pub mod runtime;
pub mod share_partition;
pub mod share_state;
pub mod txn;

use ferrolog_protocol::errors;
