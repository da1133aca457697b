//! The verification of transactional writes (Kafka's partition verification, KIP-890): a
//! [`TxnVerifier`] the storage layer asks, before it takes a partition's writer lock, whether a
//! batch that would open a transaction belongs to its producer's ongoing one (or, with
//! transactions v2, adds the partition to it), answering with the errors Kafka's broker gives
//! each writer. Under the lock the storage layer checks only that no marker overtook the answer.

use ferrolog_storage::producer::TxnVerifier;
use ferrolog_storage::{ProducerEpoch, Result, StorageError};

use super::state::{self, TxnPartition};
use super::{TransactionCoordinator, topic};
use crate::errors;

/// Whose transactional write is verified, at which request version: the errors are mapped as
/// Kafka's broker maps them for each. Produce from v12 and TxnOffsetCommit from v5 come from
/// transactions-v2 clients, which add the partition to the transaction with the write itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyFor {
    /// Produce.
    Produce { version: i16 },
    /// TxnOffsetCommit, writing the group's offsets.
    TxnOffsetCommit { version: i16 },
}

impl VerifyFor {
    /// Whether the write adds its partition to the transaction (transactions v2).
    fn adds_partition(self) -> bool {
        match self {
            Self::Produce { version } => version >= 12,
            Self::TxnOffsetCommit { version } => version >= 5,
        }
    }

    /// The coordinator's answer as the writer gets it (Kafka's `AddPartitionsToTxnManager`,
    /// the Produce handler's post-verification mapping and the group coordinator's).
    fn map(self, code: i16) -> i16 {
        match (self, code) {
            (_, errors::PRODUCER_FENCED) => errors::INVALID_PRODUCER_EPOCH,
            (Self::Produce { version }, errors::TRANSACTION_ABORTABLE) if version <= 10 => {
                errors::INVALID_TXN_STATE
            }
            (Self::TxnOffsetCommit { version }, errors::TRANSACTION_ABORTABLE) if version <= 3 => {
                errors::INVALID_TXN_STATE
            }
            (
                Self::Produce { .. },
                errors::NOT_COORDINATOR
                | errors::COORDINATOR_NOT_AVAILABLE
                | errors::COORDINATOR_LOAD_IN_PROGRESS,
            ) => errors::NOT_ENOUGH_REPLICAS,
            // Transactions v2 producers are told, and retry; older ones see a retriable error.
            (Self::Produce { version }, errors::CONCURRENT_TRANSACTIONS) if version < 12 => {
                errors::NOT_ENOUGH_REPLICAS
            }
            (_, code) => code,
        }
    }
}

/// A [`TxnVerifier`] for one transactional append.
#[derive(Debug)]
pub struct Verifier<'a> {
    coordinator: &'a TransactionCoordinator,
    transactional_id: &'a str,
    partition: TxnPartition,
    purpose: VerifyFor,
}

impl<'a> Verifier<'a> {
    pub(super) fn new(
        coordinator: &'a TransactionCoordinator,
        transactional_id: &'a str,
        partition: TxnPartition,
        purpose: VerifyFor,
    ) -> Self {
        Self {
            coordinator,
            transactional_id,
            partition,
            purpose,
        }
    }
}

impl TxnVerifier for Verifier<'_> {
    fn verify(&self, producer_id: i64, epoch: ProducerEpoch) -> Result<()> {
        // No transaction can include `__transaction_state` (AddPartitionsToTxn refuses internal
        // topics).
        let answer = if self.partition.0 == topic::TRANSACTION_STATE_TOPIC {
            Err(errors::TRANSACTION_ABORTABLE)
        } else if self.purpose.adds_partition() {
            match self.coordinator.add_partitions(
                self.transactional_id,
                producer_id,
                epoch,
                std::slice::from_ref(&self.partition),
                state::TV_2,
            ) {
                errors::NONE => Ok(()),
                code => Err(code),
            }
        } else {
            self.coordinator
                .verify(self.transactional_id, producer_id, epoch, &self.partition)
        };
        let Err(code) = answer else { return Ok(()) };
        let error_code = self.purpose.map(code);
        let reason = if error_code == errors::INVALID_TXN_STATE {
            format!(
                "partition {}-{} was not added to transaction {}",
                self.partition.0, self.partition.1, self.transactional_id
            )
        } else {
            format!(
                "the transaction coordinator did not verify transaction {} (error {code})",
                self.transactional_id
            )
        };
        Err(StorageError::TxnNotVerified {
            producer_id,
            epoch,
            error_code,
            reason,
        })
    }
}
