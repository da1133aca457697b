//! Ending a transaction: EndTxn records its PrepareCommit or PrepareAbort, then its markers
//! are written with no shard lock held (the id in flight meanwhile), then its completion;
//! what cannot be written now is left for the timer.

use ferrolog_storage::{ProducerEpoch, TopicPartition};

use super::state::{EndDecision, TxnMetadata};
use super::{
    EndAnswer, Outcome, Pending, RETRY_BACKOFF_MS, TransactionCoordinator, append_error, failpoint,
    markers,
};
use crate::errors;
use crate::group::GroupCoordinator;

impl TransactionCoordinator {
    /// EndTxn: commits or aborts the id's transaction, as a transactions-v1 client (EndTxn
    /// v0–4) or a v2 one (`v2`, EndTxn v5, whose every end bumps the epoch) asks. The answer's
    /// producer id and epoch are those the producer goes on with (v5), −1 with an error.
    pub fn end_txn(
        &self,
        groups: &GroupCoordinator,
        transactional_id: &str,
        (producer_id, epoch): (i64, ProducerEpoch),
        commit: bool,
        v2: bool,
    ) -> Outcome<EndAnswer> {
        let answer = |code| Outcome {
            answer: EndAnswer {
                code,
                producer_id: -1,
                epoch: ProducerEpoch::NONE,
            },
            marked: Vec::new(),
        };
        if let Err(code) = self.check_available(transactional_id) {
            return answer(code);
        }
        let partition = self.topic.partition_of(transactional_id);
        let prepared = self.runtime.write(partition, |shard, ctx| {
            let now = ctx.now_ms;
            let Some(entry) = shard.ids.get_mut(transactional_id) else {
                return Err(answer(errors::INVALID_PRODUCER_ID_MAPPING));
            };
            let decision = if v2 {
                // Kafka checks a pending transition first with v2: the producer may already be
                // using the id a completing transaction moves to.
                if entry.pending.is_some() {
                    return Err(answer(errors::CONCURRENT_TRANSACTIONS));
                }
                entry.meta.end_txn_v2(producer_id, epoch, commit, now, || {
                    self.manager.next_producer_id().map_err(|error| {
                        tracing::warn!(%error, "no producer id could be reserved");
                        errors::COORDINATOR_NOT_AVAILABLE
                    })
                })
            } else {
                if producer_id != entry.meta.producer_id {
                    return Err(answer(errors::INVALID_PRODUCER_ID_MAPPING));
                }
                if epoch != entry.meta.producer_epoch {
                    return Err(answer(errors::PRODUCER_FENCED));
                }
                if entry.pending.is_some() {
                    return Err(answer(errors::CONCURRENT_TRANSACTIONS));
                }
                entry.meta.end_txn(producer_id, epoch, commit, now)
            };
            match decision {
                EndDecision::Refuse(code) => Err(answer(code)),
                EndDecision::AlreadyComplete => Err(Outcome {
                    answer: EndAnswer {
                        code: errors::NONE,
                        producer_id: entry.meta.producer_id,
                        epoch: entry.meta.producer_epoch,
                    },
                    marked: Vec::new(),
                }),
                EndDecision::Prepare(next) => {
                    if let Err(error) = Self::write(ctx, transactional_id, entry, next) {
                        return Err(answer(append_error(transactional_id, &error)));
                    }
                    entry.pending = Some(Pending::InFlight);
                    Ok((entry.meta.clone(), now))
                }
            }
        });
        let (prepared, now) = match prepared {
            Ok(prepared) => prepared,
            Err(answer) => return answer,
        };
        // What the producer goes on with: the completed state's id and epoch.
        let completed = prepared.completed(now);
        Outcome {
            answer: EndAnswer {
                code: errors::NONE,
                producer_id: completed.producer_id,
                epoch: completed.producer_epoch,
            },
            marked: self.finish(groups, transactional_id, &prepared),
        }
    }

    /// Writes the markers of a prepared transaction (`prepared`, recorded and marked pending),
    /// then its completion. Whatever cannot be written now is left for the timer.
    pub(super) fn finish(
        &self,
        groups: &GroupCoordinator,
        transactional_id: &str,
        prepared: &TxnMetadata,
    ) -> Vec<TopicPartition> {
        failpoint("txn.markers");
        let written = markers::write_all(
            &self.manager,
            groups,
            transactional_id,
            prepared,
            self.coordinator_epoch,
        );
        failpoint("txn.complete");
        let partition = self.topic.partition_of(transactional_id);
        self.runtime.write(partition, |shard, ctx| {
            let Some(entry) = shard.ids.get_mut(transactional_id) else {
                return;
            };
            if entry.meta.producer_id != prepared.producer_id
                || entry.meta.producer_epoch != prepared.producer_epoch
                || entry.meta.state != prepared.state
            {
                return;
            }
            let retry = Pending::Retry {
                not_before_ms: ctx.now_ms.saturating_add(RETRY_BACKOFF_MS),
            };
            match written.left {
                markers::Left::Nothing => {
                    let completed = entry.meta.completed(ctx.now_ms);
                    match Self::write(ctx, transactional_id, entry, completed) {
                        Ok(()) => entry.pending = None,
                        Err(error) => {
                            tracing::warn!(transactional_id, %error, "recording a transaction's completion failed; retrying");
                            // Every marker is written: only the completion is retried.
                            entry.meta.partitions.clear();
                            entry.pending = Some(retry);
                        }
                    }
                }
                markers::Left::Retry(partitions) => {
                    entry.meta.partitions = partitions;
                    entry.pending = Some(retry);
                }
                markers::Left::Refused(partitions) => {
                    entry.meta.partitions = partitions;
                    entry.pending = Some(Pending::Stuck);
                }
            }
        });
        written.marked
    }
}
