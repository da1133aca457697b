//! The in-flight batches of a share partition: a range of offsets in one state while it moves
//! as one, a state per offset once part of it moves alone (it never joins up again, as in
//! Kafka).

use std::sync::Arc;

use super::RecordState;

/// One record's (or a whole batch's) delivery: its state and count, and while acquired its
/// holder and the time its lock lapses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Rec {
    pub state: RecordState,
    pub count: i16,
    pub member: Option<Arc<str>>,
    pub deadline_ms: i64,
}

impl Rec {
    /// Not held by anyone.
    pub fn idle(state: RecordState, count: i16) -> Self {
        Self {
            state,
            count,
            member: None,
            deadline_ms: 0,
        }
    }

    pub fn held_by(&self, member: &str) -> bool {
        self.state == RecordState::Acquired && self.member.as_deref() == Some(member)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Held {
    Whole(Rec),
    /// One per offset, from the batch's first.
    Offsets(Vec<Rec>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Batch {
    pub first: i64,
    pub last: i64,
    pub held: Held,
}

impl Batch {
    pub fn whole(first: i64, last: i64, rec: Rec) -> Self {
        Self {
            first,
            last,
            held: Held::Whole(rec),
        }
    }

    pub fn len(&self) -> i64 {
        self.last - self.first + 1
    }

    pub fn rec(&self, offset: i64) -> &Rec {
        match &self.held {
            Held::Whole(rec) => rec,
            Held::Offsets(recs) => &recs[(offset - self.first) as usize],
        }
    }

    /// Tracks each offset on its own from now on.
    pub fn split(&mut self) -> &mut Vec<Rec> {
        if let Held::Whole(rec) = &self.held {
            let recs = vec![rec.clone(); self.len() as usize];
            self.held = Held::Offsets(recs);
        }
        match &mut self.held {
            Held::Offsets(recs) => recs,
            Held::Whole(_) => unreachable!("just split"),
        }
    }

    /// Each offset in `from..=to` (clamped to the batch) with its record.
    pub fn offsets(&self, from: i64, to: i64) -> impl Iterator<Item = (i64, &Rec)> {
        let (from, to) = (from.max(self.first), to.min(self.last));
        (from..=to).map(move |offset| (offset, self.rec(offset)))
    }

    /// The first available offset at or after `start`.
    pub fn first_available(&self, start: i64) -> Option<i64> {
        if let Held::Whole(rec) = &self.held {
            let from = start.max(self.first);
            return (rec.state == RecordState::Available && from <= self.last).then_some(from);
        }
        self.offsets(start, self.last)
            .find(|(_, rec)| rec.state == RecordState::Available)
            .map(|(offset, _)| offset)
    }

    /// How many records at or after `start` match `matches`.
    pub fn count_where(&self, start: i64, matches: impl Fn(&Rec) -> bool) -> i64 {
        match &self.held {
            Held::Whole(rec) => {
                let from = start.max(self.first);
                if matches(rec) && from <= self.last {
                    self.last - from + 1
                } else {
                    0
                }
            }
            Held::Offsets(_) => self
                .offsets(start, self.last)
                .filter(|(_, rec)| matches(rec))
                .count() as i64,
        }
    }

    /// The last offset of the run of done records starting at `from`; `None` if the record at
    /// `from` is not done.
    pub fn done_through(&self, from: i64) -> Option<i64> {
        if let Held::Whole(rec) = &self.held {
            return (rec.state.is_terminal() && from <= self.last).then_some(self.last);
        }
        let mut last = None;
        for (offset, rec) in self.offsets(from, self.last) {
            if !rec.state.is_terminal() {
                break;
            }
            last = Some(offset);
        }
        last
    }

    pub fn any_acquired(&self) -> bool {
        match &self.held {
            Held::Whole(rec) => rec.state == RecordState::Acquired,
            Held::Offsets(recs) => recs.iter().any(|rec| rec.state == RecordState::Acquired),
        }
    }

    /// The highest delivery count among the available records in `from..=to`.
    pub fn max_available_count(&self, from: i64, to: i64) -> Option<i16> {
        if let Held::Whole(rec) = &self.held {
            let overlaps = from.max(self.first) <= to.min(self.last);
            return (rec.state == RecordState::Available && overlaps).then_some(rec.count);
        }
        self.offsets(from, to)
            .filter(|(_, rec)| rec.state == RecordState::Available)
            .map(|(_, rec)| rec.count)
            .max()
    }
}
