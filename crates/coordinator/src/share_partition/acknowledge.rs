//! What members do with records they acquired (Kafka's `SharePartition#acknowledge`):
//! accept, release, reject, mark a gap or renew the lock; and what happens to acquired records
//! when their holder goes (release) or their lock lapses. Each returns the state batches that
//! changed, for the broker to persist; an acknowledgement or release whose write fails is
//! undone by the caller (it holds the partition as it was), a lapsed lock is not (as Kafka).

use ferrolog_records::share_state_records::StateBatch;

use super::cache::{Held, Rec};
use super::{RecordState, SharePartition};
use crate::errors;

/// One acknowledgement batch: a range and one type for all of it, or one per offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckBatch {
    pub first: i64,
    pub last: i64,
    /// 0 gap, 1 accept, 2 release, 3 reject, 4 renew (KIP-1222).
    pub types: Vec<i8>,
}

const GAP: i8 = 0;
const ACCEPT: i8 = 1;
const RELEASE: i8 = 2;
const REJECT: i8 = 3;
const RENEW: i8 = 4;

/// Kafka's broker checks of one partition's acknowledgement batches, in its order: ranges in
/// order and not backwards, types present and one per offset when several, known at the
/// request's version, RENEW only on a renewing request (version 2's `IsRenewAck`).
pub fn check_ack_batches(batches: &[AckBatch], version: i16, renew_ack: bool) -> bool {
    let highest = if version >= 2 { RENEW } else { REJECT };
    let mut previous_last: Option<i64> = None;
    for batch in batches {
        let several = batch.types.len() > 1;
        if batch.first > batch.last
            || previous_last.is_some_and(|last| batch.first < last)
            || batch.types.is_empty()
            || (several && batch.last - batch.first != batch.types.len() as i64 - 1)
            || batch.types.iter().any(|t| *t < 0 || *t > highest)
            || (batch.types.contains(&RENEW) && !renew_ack)
        {
            return false;
        }
        previous_last = Some(batch.last);
    }
    true
}

impl SharePartition {
    /// Applies `member`'s acknowledgements; returns the changed batches to persist, or the
    /// partition's error (INVALID_RECORD_STATE, INVALID_REQUEST), the partition then to be
    /// restored by the caller.
    pub fn acknowledge(
        &mut self,
        member: &str,
        batches: &[AckBatch],
        now_ms: i64,
    ) -> Result<Vec<StateBatch>, i16> {
        let mut changed = Vec::new();
        for ack in batches {
            if ack.last < self.start {
                continue;
            }
            let floor = self
                .cache
                .range(..=ack.first)
                .next_back()
                .or_else(|| {
                    self.cache
                        .range(..=self.start)
                        .next_back()
                        .filter(|_| ack.first < self.start)
                })
                .map(|(key, _)| *key)
                .ok_or(errors::INVALID_RECORD_STATE)?;
            let keys: Vec<i64> = self
                .cache
                .range(floor..=ack.last)
                .map(|(key, _)| *key)
                .collect();
            let cached_last = keys
                .last()
                .and_then(|key| self.cache.get(key))
                .map_or(i64::MIN, |b| b.last);
            if cached_last < ack.first || ack.last > cached_last {
                return Err(errors::INVALID_REQUEST);
            }
            for key in keys {
                self.acknowledge_in(key, member, ack, now_ms, &mut changed)?;
            }
        }
        self.advance_start();
        self.check();
        Ok(changed)
    }

    /// Applies `ack` to the cached batch at `key`.
    fn acknowledge_in(
        &mut self,
        key: i64,
        member: &str,
        ack: &AckBatch,
        now_ms: i64,
        changed: &mut Vec<StateBatch>,
    ) -> Result<(), i16> {
        let (start, limits) = (self.start, self.limits);
        let Some(batch) = self.cache.get_mut(&key) else {
            return Ok(());
        };
        if batch.last < start {
            return Ok(());
        }
        let (first, last) = (batch.first, batch.last);
        if let Held::Whole(rec) = &mut batch.held {
            if !rec.held_by(member) {
                return Err(errors::INVALID_RECORD_STATE);
            }
            let inside = first >= ack.first && last <= ack.last && first >= start;
            if inside && ack.types.len() == 1 {
                apply(rec, ack.types[0], now_ms, limits)?
                    .then(|| changed.push(state_batch(first, last, rec)));
                return Ok(());
            }
        }
        let recs = batch.split();
        for offset in ack.first.max(start).max(first)..=ack.last.min(last) {
            let rec = &mut recs[(offset - first) as usize];
            if !rec.held_by(member) {
                return Err(errors::INVALID_RECORD_STATE);
            }
            let kind = if ack.types.len() == 1 {
                ack.types[0]
            } else {
                ack.types[(offset - ack.first) as usize]
            };
            apply(rec, kind, now_ms, limits)?
                .then(|| changed.push(state_batch(offset, offset, rec)));
        }
        Ok(())
    }

    /// Releases every record `member` holds (its session closed): available again, archived
    /// at the delivery-count limit or behind the start offset.
    pub fn release(&mut self, member: &str) -> Vec<StateBatch> {
        self.give_back(|rec| rec.held_by(member))
    }

    /// Gives back the records whose lock lapsed by `now_ms`.
    pub fn expire_locks(&mut self, now_ms: i64) -> Vec<StateBatch> {
        self.give_back(|rec| rec.state == RecordState::Acquired && rec.deadline_ms <= now_ms)
    }

    /// The earliest lock deadline of the records acquired, if any.
    pub fn next_lock_deadline(&self) -> Option<i64> {
        self.cache
            .values()
            .flat_map(|batch| match &batch.held {
                Held::Whole(rec) => vec![rec],
                Held::Offsets(recs) => recs.iter().collect(),
            })
            .filter(|rec| rec.state == RecordState::Acquired)
            .map(|rec| rec.deadline_ms)
            .min()
    }

    fn give_back(&mut self, chosen: impl Fn(&Rec) -> bool) -> Vec<StateBatch> {
        let (start, limit) = (self.start, self.limits.delivery_count_limit);
        let back = |rec: &mut Rec, behind: bool| {
            let state = if behind || rec.count >= limit {
                RecordState::Archived
            } else {
                RecordState::Available
            };
            *rec = Rec::idle(state, rec.count);
        };
        let mut changed = Vec::new();
        for batch in self.cache.values_mut() {
            let (first, last) = (batch.first, batch.last);
            match &mut batch.held {
                Held::Whole(rec) if chosen(rec) && (last < start || first >= start) => {
                    back(rec, last < start);
                    changed.push(state_batch(first, last, rec));
                }
                Held::Whole(rec) if !chosen(rec) => {}
                _ => {
                    let recs = batch.split();
                    for (index, rec) in recs.iter_mut().enumerate().filter(|(_, rec)| chosen(rec)) {
                        let offset = first + index as i64;
                        back(rec, offset < start);
                        changed.push(state_batch(offset, offset, rec));
                    }
                }
            }
        }
        self.advance_start();
        self.check();
        changed
    }
}

/// Applies one acknowledgement type to an acquired record; `Ok(true)` when its state changed
/// (a renewal only restarts the lock).
fn apply(rec: &mut Rec, kind: i8, now_ms: i64, limits: super::Limits) -> Result<bool, i16> {
    let state = match kind {
        ACCEPT => RecordState::Acknowledged,
        GAP | REJECT => RecordState::Archived,
        RELEASE if rec.count >= limits.delivery_count_limit => RecordState::Archived,
        RELEASE => RecordState::Available,
        RENEW if limits.renew_enabled => {
            rec.deadline_ms = now_ms + limits.lock_duration_ms;
            return Ok(false);
        }
        RENEW => return Err(errors::INVALID_RECORD_STATE),
        _ => return Err(errors::INVALID_REQUEST),
    };
    *rec = Rec::idle(state, rec.count);
    Ok(true)
}

fn state_batch(first: i64, last: i64, rec: &Rec) -> StateBatch {
    StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: rec.state.id(),
        delivery_count: rec.count,
    }
}
