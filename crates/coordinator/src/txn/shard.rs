//! The ids of one `__transaction_state` partition: a shard of the coordinator runtime, rebuilt
//! from the partition's records.

use std::collections::HashMap;

use ferrolog_records::transaction_state::TxnStatus;

use super::state::TxnMetadata;
use super::topic::{TxnCodec, TxnRecord};
use super::{Entry, Pending};
use crate::runtime::{LoadEvent, Periodic, Shard};

/// The ids of one `__transaction_state` partition, and its timers.
#[derive(Debug)]
pub(super) struct TxnShard {
    pub ids: HashMap<String, Entry>,
    /// Transactions past their timeout are looked for
    /// (`transaction.abort.timed.out.transaction.cleanup.interval.ms`).
    pub timeout_check: Periodic,
    /// Idle ids are looked for (`transaction.remove.expired.transaction.cleanup.interval.ms`).
    pub expiry_check: Periodic,
}

impl Shard for TxnShard {
    type Codec = TxnCodec;

    fn replay(&mut self, event: LoadEvent<TxnRecord>, _now_ms: i64) {
        let LoadEvent::Record {
            record: (id, value),
            ..
        } = event
        else {
            return;
        };
        match value {
            Some(value) => {
                let meta = TxnMetadata::from_value(&value);
                self.ids.insert(
                    id,
                    Entry {
                        meta,
                        pending: None,
                    },
                );
            }
            None => {
                self.ids.remove(&id);
            }
        }
    }
}

impl TxnShard {
    /// Transactions found preparing to commit or abort are completed by the first tick.
    pub fn after_load(&mut self) {
        for entry in self.ids.values_mut() {
            if matches!(
                entry.meta.state,
                TxnStatus::PrepareCommit | TxnStatus::PrepareAbort
            ) {
                entry.pending = Some(Pending::Retry { not_before_ms: 0 });
            }
        }
    }
}
