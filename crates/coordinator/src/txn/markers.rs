//! Writing a prepared transaction's COMMIT or ABORT markers (Kafka's WriteTxnMarkers path, on
//! one broker called directly): one control batch per partition of the transaction, through
//! the partition's log, and for the group's `__consumer_offsets` partition through the group
//! coordinator, which also makes the transaction's offsets visible or drops them.
//!
//! Each partition's answer is treated as Kafka's coordinator treats it: written, or the
//! partition gone (deleted since), and the partition is done; a storage error (a directory
//! offline, a full disk) and the partition is retried later; a stale producer or coordinator
//! epoch and the transaction's markers stop, as in Kafka.

use std::collections::BTreeSet;

use ferrolog_records::transaction_state::TxnStatus;
use ferrolog_storage::log::MarkerRequest;
use ferrolog_storage::manager::LogManager;
use ferrolog_storage::producer::MarkerKind;
use ferrolog_storage::{CoordinatorEpoch, StorageError, TopicPartition};

use super::state::{TxnMetadata, TxnPartition};
use crate::group::GroupCoordinator;
use crate::group::offsets_topic::OFFSETS_TOPIC;

/// What is left of a transaction's markers after a round of writing.
#[derive(Debug)]
pub(super) enum Left {
    Nothing,
    /// These partitions failed for now and are retried.
    Retry(BTreeSet<TxnPartition>),
    /// A partition refused its marker as stale: no more are sent to these partitions (the
    /// others got theirs).
    Refused(BTreeSet<TxnPartition>),
}

#[derive(Debug)]
pub(super) struct Written {
    /// The partitions that got their marker.
    pub marked: Vec<TopicPartition>,
    pub left: Left,
}

/// Writes the markers of `prepared` (PrepareCommit or PrepareAbort) to its partitions.
pub(super) fn write_all(
    manager: &LogManager,
    groups: &GroupCoordinator,
    transactional_id: &str,
    prepared: &TxnMetadata,
    coordinator_epoch: CoordinatorEpoch,
) -> Written {
    let marker = MarkerRequest {
        producer_id: prepared.producer_id,
        epoch: prepared.producer_epoch,
        coordinator_epoch,
        kind: if prepared.state == TxnStatus::PrepareCommit {
            MarkerKind::Commit
        } else {
            MarkerKind::Abort
        },
    };
    // With a directory offline, a partition without a log may be one of its partitions, not a
    // deleted one: its marker waits for it.
    let dirs_offline = manager.data_dirs().iter().any(|dir| dir.is_offline());
    // A transaction v2's markers carry an epoch above the producer's (checked strictly).
    let epoch_bumped = prepared.client_tv >= super::state::TV_2;
    let mut marked = Vec::new();
    let mut retry = BTreeSet::new();
    let mut refused = BTreeSet::new();
    for (topic, partition) in &prepared.partitions {
        let topic_partition = TopicPartition::new(topic.clone(), *partition);
        let written = if topic == OFFSETS_TOPIC {
            groups.complete_txn(*partition, marker, epoch_bumped)
        } else {
            match manager.get(&topic_partition) {
                Some(log) => log.append_marker(marker, epoch_bumped).map(|_| true),
                None if dirs_offline => Err(StorageError::UnknownTopicOrPartition {
                    topic_partition: topic_partition.clone(),
                }),
                // A partition without a log was deleted since it joined the transaction.
                None => Ok(false),
            }
        };
        super::failpoint("txn.marker-written");
        match written {
            Ok(true) => marked.push(topic_partition),
            Ok(false) => {
                tracing::info!(transactional_id, partition = %topic_partition, "no marker for a partition deleted during its transaction");
            }
            Err(
                error @ (StorageError::InvalidProducerEpoch { .. }
                | StorageError::CoordinatorFenced { .. }),
            ) => {
                tracing::error!(
                    transactional_id,
                    partition = %topic_partition,
                    %error,
                    "a partition refused the transaction's marker as stale; it gets none, and the transaction stays unfinished until an operator ends it"
                );
                refused.insert((topic.clone(), *partition));
            }
            Err(error) => {
                tracing::warn!(transactional_id, partition = %topic_partition, %error, "writing a transaction marker failed; retrying");
                retry.insert((topic.clone(), *partition));
            }
        }
    }
    let left = if !refused.is_empty() {
        Left::Refused(refused)
    } else if !retry.is_empty() {
        Left::Retry(retry)
    } else {
        Left::Nothing
    };
    Written { marked, left }
}
