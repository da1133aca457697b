//! How much the batches of one leader append may decompress to, and the reservation of the
//! broker's decompression memory that holds it.

use std::sync::Arc;

use ferrolog_records::batch::Records;
use ferrolog_records::{Compression, RecordBatch, RecordsError};

use crate::config::LogConfig;
use crate::decompression::{DecompressionMemory, Reservation};
use crate::error::{Result, StorageError};

/// The most bytes the compressed batches of one append (a produce request's batches for one
/// partition: one batch, from every maintained client) may decompress to, together: the
/// topic's `max.message.bytes`, and never less than 1 MiB, which the clients' own batch limits
/// stay within; and never more than the broker's decompression memory, whatever the topic says.
/// Decompression stops there, so hostile batches cannot make the broker inflate, allocate, or
/// spend CPU on more, however many of them one append carries.
fn decompression_limit(config: &LogConfig, memory: &DecompressionMemory) -> usize {
    let limit = (config.max_message_bytes as u64).max(1 << 20);
    usize::try_from(limit.min(memory.capacity())).unwrap_or(usize::MAX)
}

/// What the batches of one append may still decompress to ([`decompression_limit`]), and its
/// reservation of the broker's decompression memory, made at its first compressed batch.
pub(super) struct DecompressionBudget<'m> {
    memory: &'m Arc<DecompressionMemory>,
    limit: usize,
    left: usize,
    pub reservation: Option<Reservation>,
}

impl<'m> DecompressionBudget<'m> {
    pub fn new(config: &LogConfig, memory: &'m Arc<DecompressionMemory>) -> Self {
        let limit = decompression_limit(config, memory);
        Self {
            memory,
            limit,
            left: limit,
            reservation: None,
        }
    }

    /// The records of a produced batch, decompressed within what is left of the budget.
    pub fn decompress<'a>(
        &mut self,
        batch: &RecordBatch<'a>,
        batch_index: usize,
    ) -> Result<Records<'a>> {
        if self.reservation.is_none() && batch.compression().is_ok_and(|c| c != Compression::None) {
            self.reservation = Some(self.memory.reserve(self.limit as u64));
        }
        let records = batch.records(self.left).map_err(|source| match source {
            RecordsError::DecompressedTooLarge { .. } => StorageError::DecompressedTooLarge {
                batch_index,
                limit: self.limit,
            },
            source => StorageError::CorruptRecord {
                batch_index,
                source,
            },
        })?;
        if records.is_owned() {
            self.left -= records.data().len();
        }
        Ok(records)
    }
}
