//! Combining a share partition's state batches with the batches a write brings, as Kafka 4.4's
//! share coordinator combines them: batches below the start offset are dropped (one that
//! straddles it is cut), and where batches overlap the one with the higher delivery count wins,
//! then the one with the higher delivery state (a record moves only towards higher counts and
//! terminal states, so the later fact wins). Adjacent results of the same state and count are
//! joined, so the output is sorted, disjoint and as short as it can be.

use std::collections::BTreeMap;

use ferrolog_records::share_state_records::StateBatch;

/// What decides between overlapping batches: count first, then state, higher winning.
type Priority = (i16, i8);

/// `so_far` and `new` combined above `start_offset` (−1: nothing is dropped).
pub fn combine(so_far: &[StateBatch], new: &[StateBatch], start_offset: i64) -> Vec<StateBatch> {
    let kept: Vec<StateBatch> = so_far
        .iter()
        .chain(new)
        .filter(|batch| batch.first_offset <= batch.last_offset)
        .filter(|batch| start_offset == -1 || batch.last_offset >= start_offset)
        .map(|batch| StateBatch {
            first_offset: if start_offset == -1 {
                batch.first_offset
            } else {
                batch.first_offset.max(start_offset)
            },
            ..*batch
        })
        .collect();
    if kept.len() <= 1 {
        return kept;
    }
    sweep(&kept)
}

/// The sweep over every batch's start and end: between two consecutive points, the active
/// batch of highest priority covers the range.
fn sweep(batches: &[StateBatch]) -> Vec<StateBatch> {
    // (offset, begins, priority); ends sort before begins at one offset, as Kafka sorts them.
    let mut events: Vec<(i64, bool, Priority)> = Vec::with_capacity(batches.len() * 2);
    for batch in batches {
        let priority = (batch.delivery_count, batch.delivery_state);
        events.push((batch.first_offset, true, priority));
        events.push((batch.last_offset.saturating_add(1), false, priority));
    }
    events.sort_by_key(|&(offset, begins, _)| (offset, begins));
    let mut active: BTreeMap<Priority, usize> = BTreeMap::new();
    let mut out: Vec<StateBatch> = Vec::new();
    let mut open: Option<(i64, Priority)> = None;
    let mut index = 0;
    while index < events.len() {
        let offset = events[index].0;
        if let Some((from, winner)) = open
            && offset > from
        {
            append_coalesced(&mut out, from, offset - 1, winner);
        }
        while index < events.len() && events[index].0 == offset {
            let (_, begins, priority) = events[index];
            index += 1;
            if begins {
                *active.entry(priority).or_default() += 1;
            } else if let Some(count) = active.get_mut(&priority) {
                *count -= 1;
                if *count == 0 {
                    active.remove(&priority);
                }
            }
        }
        open = active.keys().next_back().map(|&winner| (offset, winner));
    }
    out
}

fn append_coalesced(out: &mut Vec<StateBatch>, from: i64, to: i64, (count, state): Priority) {
    if let Some(tail) = out.last_mut()
        && tail.last_offset + 1 == from
        && tail.delivery_state == state
        && tail.delivery_count == count
    {
        tail.last_offset = to;
        return;
    }
    out.push(StateBatch {
        first_offset: from,
        last_offset: to,
        delivery_state: state,
        delivery_count: count,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const AVAILABLE: i8 = 0;
    const ACKNOWLEDGED: i8 = 2;
    const ARCHIVED: i8 = 4;

    fn batch(first: i64, last: i64, state: i8, count: i16) -> StateBatch {
        StateBatch {
            first_offset: first,
            last_offset: last,
            delivery_state: state,
            delivery_count: count,
        }
    }

    #[test]
    fn a_later_acknowledgement_wins_over_the_range_it_covers() {
        let so_far = [batch(100, 109, AVAILABLE, 1)];
        let new = [batch(103, 105, ACKNOWLEDGED, 1)];
        assert_eq!(
            combine(&so_far, &new, 100),
            vec![
                batch(100, 102, AVAILABLE, 1),
                batch(103, 105, ACKNOWLEDGED, 1),
                batch(106, 109, AVAILABLE, 1),
            ]
        );
    }

    #[test]
    fn the_higher_delivery_count_wins_whatever_the_order() {
        let older = [batch(0, 9, ACKNOWLEDGED, 1)];
        let newer = [batch(5, 14, AVAILABLE, 2)];
        let expected = vec![batch(0, 4, ACKNOWLEDGED, 1), batch(5, 14, AVAILABLE, 2)];
        assert_eq!(combine(&older, &newer, -1), expected);
        assert_eq!(combine(&newer, &older, -1), expected);
    }

    #[test]
    fn batches_below_the_start_offset_go_and_one_across_it_is_cut() {
        let so_far = [batch(0, 4, ARCHIVED, 5), batch(5, 9, AVAILABLE, 1)];
        assert_eq!(combine(&so_far, &[], 7), vec![batch(7, 9, AVAILABLE, 1)]);
        assert_eq!(combine(&so_far, &[], 10), vec![]);
    }

    #[test]
    fn adjacent_equal_batches_are_joined() {
        let so_far = [batch(0, 4, ACKNOWLEDGED, 1), batch(10, 12, ACKNOWLEDGED, 1)];
        let new = [batch(5, 9, ACKNOWLEDGED, 1)];
        assert_eq!(
            combine(&so_far, &new, 0),
            vec![batch(0, 12, ACKNOWLEDGED, 1)]
        );
    }

    #[test]
    fn a_gap_between_batches_stays_a_gap() {
        let so_far = [batch(0, 1, ACKNOWLEDGED, 1)];
        let new = [batch(5, 6, ACKNOWLEDGED, 1)];
        assert_eq!(
            combine(&so_far, &new, 0),
            vec![batch(0, 1, ACKNOWLEDGED, 1), batch(5, 6, ACKNOWLEDGED, 1)]
        );
    }
}
