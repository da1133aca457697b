//! Salvage of a partition's damaged sealed segments while the broker runs, on an operator's
//! request (see `log/salvage_online.rs`). The cleaner is kept off the partition meanwhile (its
//! own swap would race salvage's), and a partition moving between data directories is refused
//! until its move is done (the copy would carry the damage).

use super::LogManager;
use crate::error::{Result, StorageError};
use crate::log::SalvagedSegment;
use crate::types::TopicPartition;

impl LogManager {
    /// Salvages every damaged sealed segment of `topic_partition`; `None` when this broker has
    /// no such partition.
    pub fn salvage_partition(
        &self,
        topic_partition: &TopicPartition,
    ) -> Result<Option<Vec<SalvagedSegment>>> {
        let Some(log) = self.get(topic_partition) else {
            return Ok(None);
        };
        if self.moves().is_moving(topic_partition) {
            return Err(StorageError::Dropped(format!(
                "{topic_partition} is moving between data directories; salvage it once the move is done"
            )));
        }
        let cleaner = self.maintenance.cleaner.lock().clone();
        if let Some(cleaner) = &cleaner {
            cleaner.abort_and_pause(topic_partition);
        }
        let salvaged = log.salvage_sealed();
        if let Some(cleaner) = &cleaner {
            cleaner.resume(topic_partition);
        }
        let salvaged = salvaged?;
        log.warn_possibly_unended(&salvaged);
        Ok(Some(salvaged))
    }
}
