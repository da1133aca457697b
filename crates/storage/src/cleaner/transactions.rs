//! What the cleaner knows of transactions while it walks a log's batches in offset order, as
//! Kafka's `CleanedTransactionMetadata` keeps it: which producers are inside an aborted
//! transaction (their data batches are dropped, and their keys never reach the offset map), and
//! which inside a committed one, so that each marker is known to still guard data in this pass
//! or not.
//!
//! A marker that still guards data is kept, and an ABORT that does keeps its transaction-index
//! entry in the cleaned segment. A marker whose transaction's data is gone may go: it gets a
//! delete horizon the first time, and is removed by a pass after the horizon (unless it is
//! the last word of its producer, which the caller keeps as an empty batch).

use std::collections::{BTreeMap, HashMap, HashSet};

use ferrolog_records::RecordBatch;
use ferrolog_records::control::ControlType;

use crate::offset::Offset;
use crate::segment::AbortedTxn;

/// The transactions around the batch being looked at.
#[derive(Debug, Default)]
pub(super) struct TxnFilter {
    /// Aborted transactions not reached yet, by first offset (the same transaction may be
    /// listed by more than one segment's search; the key makes it one).
    upcoming: BTreeMap<(Offset, i64), AbortedTxn>,
    /// Producers inside an aborted transaction, and whether data of it was seen in this pass.
    aborted: HashMap<i64, (AbortedTxn, bool)>,
    /// Producers inside a committed (not aborted) transaction whose data was seen.
    committed: HashSet<i64>,
}

/// What to do with a marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MarkerVerdict {
    /// The transaction's data is gone: the marker may go once its delete horizon passed.
    pub discardable: bool,
    /// The entry the cleaned segment's transaction index keeps for a kept ABORT.
    pub index_entry: Option<AbortedTxn>,
}

impl TxnFilter {
    /// Adds aborted transactions to look out for (from the transaction indexes).
    pub(super) fn expect(&mut self, aborted: impl IntoIterator<Item = AbortedTxn>) {
        for txn in aborted {
            self.upcoming
                .insert((txn.first_offset, txn.producer_id), txn);
        }
    }

    /// Before looking at a batch ending at `last_offset`: the aborted transactions that start
    /// by then become current.
    fn reach(&mut self, last_offset: Offset) {
        while let Some(entry) = self.upcoming.first_entry() {
            if entry.key().0 > last_offset {
                break;
            }
            let txn = entry.remove();
            self.aborted.entry(txn.producer_id).or_insert((txn, false));
        }
    }

    /// Whether a data batch belongs to an aborted transaction (and so is dropped).
    pub(super) fn drops_data(&mut self, batch: &RecordBatch<'_>) -> bool {
        self.reach(Offset::new(batch.last_offset()));
        if !batch.is_transactional() {
            return false;
        }
        if let Some((_, seen)) = self.aborted.get_mut(&batch.producer_id()) {
            *seen = true;
            return true;
        }
        self.committed.insert(batch.producer_id());
        false
    }

    /// What a control batch means for its transaction.
    pub(super) fn on_marker(&mut self, batch: &RecordBatch<'_>) -> MarkerVerdict {
        self.reach(Offset::new(batch.last_offset()));
        let keep = MarkerVerdict {
            discardable: false,
            index_entry: None,
        };
        let kind = batch.records(1 << 16).ok().and_then(|records| {
            records
                .iter()
                .next()
                .and_then(|record| record.ok())
                .and_then(|record| record.key.and_then(ControlType::from_key))
        });
        let producer_id = batch.producer_id();
        match kind {
            // An empty control batch (a marker emptied before) holds nothing to keep.
            None if batch.records_count() == 0 => MarkerVerdict {
                discardable: true,
                index_entry: None,
            },
            Some(ControlType::Abort) => match self.aborted.remove(&producer_id) {
                Some((txn, true)) => MarkerVerdict {
                    discardable: false,
                    index_entry: Some(txn),
                },
                _ => MarkerVerdict {
                    discardable: true,
                    index_entry: None,
                },
            },
            Some(ControlType::Commit) => MarkerVerdict {
                discardable: !self.committed.remove(&producer_id),
                index_entry: None,
            },
            _ => keep,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use ferrolog_records::BatchBuilder;
    use ferrolog_records::control::{control_key, marker_value};

    fn data(base: i64, producer_id: i64, transactional: bool) -> Vec<u8> {
        let mut builder = BatchBuilder::new(base)
            .producer(producer_id, 0, 0)
            .transactional(transactional);
        builder.append(1, Some(b"k"), Some(b"v"), &[]).unwrap();
        builder.build().unwrap()
    }

    fn marker(base: i64, producer_id: i64, kind: i16) -> Vec<u8> {
        let mut builder = BatchBuilder::new(base)
            .producer(producer_id, 0, -1)
            .transactional(true)
            .control(true);
        builder
            .append(1, Some(&control_key(kind)), Some(&marker_value(0)), &[])
            .unwrap();
        builder.build().unwrap()
    }

    fn txn(producer_id: i64, first_offset: i64, last_offset: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id,
            first_offset: Offset::new(first_offset),
            last_offset: Offset::new(last_offset),
            last_stable_offset: Offset::new(last_offset + 1),
        }
    }

    #[test]
    fn aborted_data_goes_and_markers_guarding_data_stay() {
        let mut filter = TxnFilter::default();
        filter.expect([txn(1, 0, 3), txn(1, 0, 3)]);
        // Producer 1 aborts 0..=1; producer 2 commits 2; a plain batch at 4.
        let (d0, d1, d2, m3, d4, m5) = (
            data(0, 1, true),
            data(1, 1, true),
            data(2, 2, true),
            marker(3, 1, 0),
            data(4, 9, false),
            marker(5, 2, 1),
        );
        fn view(bytes: &[u8]) -> RecordBatch<'_> {
            RecordBatch::new(bytes).unwrap()
        }
        assert!(filter.drops_data(&view(&d0)));
        assert!(filter.drops_data(&view(&d1)));
        assert!(!filter.drops_data(&view(&d2)));
        assert_eq!(
            filter.on_marker(&view(&m3)),
            MarkerVerdict {
                discardable: false,
                index_entry: Some(txn(1, 0, 3)),
            }
        );
        assert!(!filter.drops_data(&view(&d4)));
        assert_eq!(
            filter.on_marker(&view(&m5)),
            MarkerVerdict {
                discardable: false,
                index_entry: None,
            }
        );
    }

    #[test]
    fn markers_whose_data_is_gone_may_go() {
        let mut filter = TxnFilter::default();
        filter.expect([txn(1, 0, 3)]);
        let abort = marker(3, 1, 0);
        let commit = marker(4, 2, 1);
        for bytes in [&abort, &commit] {
            let verdict = filter.on_marker(&RecordBatch::new(bytes).unwrap());
            assert_eq!(
                verdict,
                MarkerVerdict {
                    discardable: true,
                    index_entry: None,
                }
            );
        }
    }
}
