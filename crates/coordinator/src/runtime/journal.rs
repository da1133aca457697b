//! Writing a coordinator's records: the one writer of its internal topic's partitions. A write
//! is one batch, appended with the coordinator's origin (the high watermark moves with it) and flushed
//! as the topic's `flush.*` settings say, so when an append returns Ok its records are what a
//! reload replays.

use std::sync::Arc;

use ferrolog_records::BatchBuilder;
use ferrolog_storage::log::{AppendOrigin, FlushMode, Log, MarkerRequest};
use ferrolog_storage::manager::LogManager;
use ferrolog_storage::producer::{NoTxnCoordinator, TxnVerifier};
use ferrolog_storage::{ProducerEpoch, Result, StorageError, TopicPartition};

use super::Codec;
use super::codec::invalid;

/// What a write does when its partition does not exist here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// Creates it (`__consumer_offsets`: a group's first commit makes its partition, as the
    /// first FindCoordinator would have).
    Create,
    /// Refuses with [`StorageError::UnknownTopicOrPartition`] (`__transaction_state`: a missing
    /// partition lives in an offline directory and must not be made again elsewhere).
    Refuse,
}

/// Appends to the partitions of one internal topic.
#[derive(Debug)]
pub struct Journal {
    manager: Arc<LogManager>,
    topic: &'static str,
    missing: Missing,
}

impl Journal {
    pub fn new(manager: Arc<LogManager>, topic: &'static str, missing: Missing) -> Self {
        Self {
            manager,
            topic,
            missing,
        }
    }

    pub fn manager(&self) -> &Arc<LogManager> {
        &self.manager
    }

    fn log(&self, partition: i32) -> Result<Arc<Log>> {
        let topic_partition = TopicPartition::new(self.topic, partition);
        match self.missing {
            Missing::Create => self.manager.get_or_create(&topic_partition),
            Missing::Refuse => self
                .manager
                .get(&topic_partition)
                .ok_or(StorageError::UnknownTopicOrPartition { topic_partition }),
        }
    }

    /// Appends `records` to `partition` as one batch stamped `now_ms`; nothing for none.
    pub fn append<C: Codec>(
        &self,
        partition: i32,
        records: &[C::Record],
        now_ms: i64,
    ) -> Result<()> {
        self.append_placed::<C>(partition, records, now_ms)
            .map(|_| ())
    }

    /// As [`Self::append`], and the offset the first record got (`None` for no records).
    pub fn append_placed<C: Codec>(
        &self,
        partition: i32,
        records: &[C::Record],
        now_ms: i64,
    ) -> Result<Option<i64>> {
        if records.is_empty() {
            return Ok(None);
        }
        let log = self.log(partition)?;
        let batch = encode::<C>(BatchBuilder::new(0), records, now_ms)?;
        // Flushed as due before it returns.
        let appended = log.append(
            batch,
            AppendOrigin::Coordinator,
            &NoTxnCoordinator,
            FlushMode::Now,
        )?;
        Ok(Some(appended.info.first_offset.value()))
    }

    /// Appends `records` to `partition` as one transactional batch of `producer_id` at `epoch`
    /// (sequence 0, checked for its epoch only, as Kafka's coordinators write them), once
    /// `verifier` confirms the partition is in the producer's transaction.
    pub fn append_transactional<C: Codec>(
        &self,
        partition: i32,
        records: &[C::Record],
        now_ms: i64,
        (producer_id, epoch): (i64, ProducerEpoch),
        verifier: &dyn TxnVerifier,
    ) -> Result<()> {
        let log = self.log(partition)?;
        let builder = BatchBuilder::new(0)
            .producer(producer_id, epoch.value(), 0)
            .transactional(true);
        let batch = encode::<C>(builder, records, now_ms)?;
        let _flushed = log.append(batch, AppendOrigin::Coordinator, verifier, FlushMode::Now)?;
        Ok(())
    }

    /// Appends a transaction marker to `partition`; `Ok(false)` when the partition does not
    /// exist here, whatever [`Missing`] says: a marker never makes a partition.
    pub fn append_marker(
        &self,
        partition: i32,
        marker: MarkerRequest,
        epoch_bumped: bool,
    ) -> Result<bool> {
        let topic_partition = TopicPartition::new(self.topic, partition);
        let Some(log) = self.manager.get(&topic_partition) else {
            return Ok(false);
        };
        log.append_marker(marker, epoch_bumped)?;
        Ok(true)
    }
}

fn encode<C: Codec>(
    mut builder: BatchBuilder,
    records: &[C::Record],
    now_ms: i64,
) -> Result<Vec<u8>> {
    for record in records {
        let (key, value) = C::encode(record)?;
        builder
            .append(now_ms, Some(&key), value.as_deref(), &[])
            .map_err(invalid)?;
    }
    builder.build().map_err(invalid)
}
