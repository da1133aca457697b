//! The coordinator's timers, owned by each shard: unfinished transactions retried, transactions
//! past their timeout fenced and aborted, idle transactional ids forgotten.

use ferrolog_storage::{TopicPartition, clock};

use ferrolog_records::transaction_state::TxnStatus;

use super::state::TxnMetadata;
use super::{Pending, TransactionCoordinator};
use crate::errors;
use crate::group::GroupCoordinator;

impl TransactionCoordinator {
    /// The timers, called every 100 ms: unfinished transactions retried; every
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`, transactions past their
    /// timeout fenced and aborted; every
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`, idle ids forgotten. Each
    /// step visits every shard in turn before the next starts, all at one instant. Returns the
    /// partitions that got a marker.
    pub fn tick(&self, groups: &GroupCoordinator) -> Vec<TopicPartition> {
        let now = self.now();
        let mut marked = Vec::new();
        for (id, prepared) in self.take_retries(now) {
            marked.extend(self.finish(groups, &id, &prepared));
        }
        for (id, abort) in self.fence_timed_out(now) {
            tracing::info!(
                transactional_id = id,
                producer_id = abort.producer_id,
                "aborting a transaction past its timeout"
            );
            marked.extend(self.finish(groups, &id, &abort));
        }
        self.remove_expired(now);
        debug_assert_eq!(
            self.runtime
                .read_each(|shard| shard.ids.len())
                .iter()
                .sum::<usize>(),
            self.id_count.load(std::sync::atomic::Ordering::SeqCst),
            "the ids counted against ferrolog.max.transactional.ids are the ids kept"
        );
        marked
    }

    fn take_retries(&self, now: i64) -> Vec<(String, TxnMetadata)> {
        let mut retries = Vec::new();
        self.runtime.write_each(now, |shard, _| {
            retries.extend(
                shard
                    .ids
                    .iter_mut()
                    .filter(|(_, entry)| {
                        matches!(entry.pending, Some(Pending::Retry { not_before_ms }) if not_before_ms <= now)
                    })
                    .map(|(id, entry)| {
                        entry.pending = Some(Pending::InFlight);
                        (id.clone(), entry.meta.clone())
                    }),
            );
        });
        retries
    }

    /// Fences and records the abort of every transaction past its timeout, in the shards whose
    /// check is due.
    fn fence_timed_out(&self, now: i64) -> Vec<(String, TxnMetadata)> {
        let mut fenced = Vec::new();
        self.runtime.write_each(now, |shard, ctx| {
            if !shard.timeout_check.due(now) {
                return;
            }
            let candidates: Vec<String> = shard
                .ids
                .iter()
                .filter(|(_, entry)| entry.pending.is_none() && entry.meta.timed_out(now))
                .map(|(id, _)| id.clone())
                .collect();
            for id in candidates {
                let Some(entry) = shard.ids.get_mut(&id) else {
                    continue;
                };
                let abort = entry
                    .meta
                    .fenced_abort(now, self.config.transaction_version.load(std::sync::atomic::Ordering::Acquire), || {
                        self.manager.next_producer_id().map_err(|error| {
                            tracing::warn!(%error, "no producer id could be reserved");
                            errors::COORDINATOR_NOT_AVAILABLE
                        })
                    });
                let Ok(abort) = abort else {
                    // No producer id for the fenced epoch's successor now: the next check
                    // retries.
                    continue;
                };
                match Self::write(ctx, &id, entry, abort) {
                    Ok(()) => {
                        entry.pending = Some(Pending::InFlight);
                        fenced.push((id, entry.meta.clone()));
                    }
                    Err(error) => {
                        tracing::warn!(transactional_id = id, %error, "fencing a timed-out transaction failed; retrying at the next check");
                    }
                }
            }
        });
        fenced
    }

    /// Forgets ids idle past `transactional.id.expiration.ms`, in the shards whose check is
    /// due: each is marked in flight under its shard's lock, their tombstones are written
    /// without it (one batch per partition), and those written are removed, unless they
    /// changed meanwhile.
    fn remove_expired(&self, now: i64) {
        let expiration = clock::kafka_ms(self.config.id_expiration);
        let mut expired: Vec<String> = Vec::new();
        self.runtime.write_each(now, |shard, _| {
            if !shard.expiry_check.due(now) {
                return;
            }
            expired.extend(
                shard
                    .ids
                    .iter_mut()
                    .filter(|(_, entry)| {
                        entry.pending.is_none() && entry.meta.expired(now, expiration)
                    })
                    .map(|(id, entry)| {
                        entry.pending = Some(Pending::InFlight);
                        id.clone()
                    }),
            );
        });
        let forgotten = self.forget(expired, now);
        if forgotten > 0 {
            tracing::info!(
                forgotten,
                "forgot transactional ids idle past transactional.id.expiration.ms"
            );
        }
    }

    /// At `ferrolog.max.transactional.ids`, makes room for a new id by forgetting, as expiry
    /// would, the least recently used id with no transaction open: one that never began a
    /// transaction first (a client creating ids by the thousand, say), then one whose last
    /// transaction ended. So filling the table cannot lock every other client out; it can only
    /// make it forget idle ids sooner. `false` when every id has a transaction open.
    pub(super) fn make_room(&self, now: i64) -> bool {
        let candidate = |(_, entry): &(&String, &super::Entry)| {
            entry.pending.is_none() && entry.meta.state.may_expire()
        };
        let least_recent = |entry: &super::Entry| {
            let began = entry.meta.state != TxnStatus::Empty;
            (began, entry.meta.last_update_ms)
        };
        let victim = self
            .runtime
            .read_each(|shard| {
                shard
                    .ids
                    .iter()
                    .filter(candidate)
                    .min_by_key(|(_, entry)| least_recent(entry))
                    .map(|(id, entry)| (least_recent(entry), id.clone()))
            })
            .into_iter()
            .flatten()
            .min_by_key(|(order, _)| *order)
            .map(|(_, id)| id);
        let Some(victim) = victim else {
            return false;
        };
        // Taken in its own shard, where it may have changed since it was chosen.
        let taken = self
            .runtime
            .write(self.topic.partition_of(&victim), |shard, _| {
                match shard.ids.get_mut(&victim) {
                    Some(entry) if candidate(&(&victim, &*entry)) => {
                        entry.pending = Some(Pending::InFlight);
                        true
                    }
                    _ => false,
                }
            });
        if !taken {
            return false;
        }
        tracing::info!(
            transactional_id = victim,
            limit = self.config.max_transactional_ids,
            "forgetting the least recently used transactional id: ferrolog.max.transactional.ids reached"
        );
        self.forget(vec![victim], now) == 1
    }

    /// Writes the tombstones of `names` (marked in flight) and removes those written; the
    /// others are unmarked, to be tried again. Returns how many were forgotten.
    fn forget(&self, names: Vec<String>, now: i64) -> usize {
        if names.is_empty() {
            return 0;
        }
        let written = self.topic.append_tombstones(&names, now);
        let mut forgotten = 0;
        for (id, result) in written {
            let partition = self.topic.partition_of(&id);
            self.runtime.write(partition, |shard, _| {
                let Some(entry) = shard.ids.get_mut(&id) else {
                    return;
                };
                match result {
                    Ok(()) => {
                        shard.ids.remove(&id);
                        self.release_id();
                        forgotten += 1;
                    }
                    Err(error) => {
                        tracing::warn!(transactional_id = id, %error, "writing the tombstone of a forgotten transactional id failed; it is kept");
                        entry.pending = None;
                    }
                }
            });
        }
        forgotten
    }
}
