//! Kafka 4.4's `simple` assignor, the share groups' only one: every assignable partition is
//! shared by `ceil(members / partitions)` members, each member has a quota of partitions,
//! members keep what they hold as far as quotas and sharing allow, and what is missing is
//! handed out round-robin. Pure.
//!
//! With one subscription for all members (homogeneous) the partitions of every subscribed
//! topic are assigned together; otherwise each topic is assigned on its own among the members
//! subscribed to it. Members are taken in member-id order and partitions in (topic id,
//! partition) order, where Kafka follows its hash maps' iteration order: the rules are Kafka's,
//! the placement of equals may differ. A partition that is not assignable (its share state is
//! not initialized) is never kept or handed out.

use std::collections::{BTreeMap, BTreeSet};

use ferrolog_storage::manager::TopicId;

use crate::group::consumer::Partitions;

/// One member as the assignor sees it: what it subscribes to and its current target.
#[derive(Debug, Clone, Default)]
pub struct MemberSpec {
    pub subscribed: BTreeSet<TopicId>,
    pub current: Partitions,
}

type Tp = (TopicId, i32);

/// Each member's new target, by member id. `assignable` holds the initialized partitions.
pub fn assign(
    members: &BTreeMap<String, MemberSpec>,
    assignable: &Partitions,
) -> BTreeMap<String, Partitions> {
    let ids: Vec<&String> = members.keys().collect();
    let specs: Vec<&MemberSpec> = members.values().collect();
    if specs.is_empty() {
        return BTreeMap::new();
    }
    let homogeneous = specs
        .windows(2)
        .all(|pair| pair[0].subscribed == pair[1].subscribed);
    let mut result: Vec<BTreeSet<Tp>> = vec![BTreeSet::new(); specs.len()];
    if homogeneous {
        let scope = specs[0].subscribed.clone();
        let eligible: Vec<usize> = (0..specs.len()).collect();
        assign_scope(&specs, &scope, &eligible, assignable, true, &mut result);
    } else {
        let topics: BTreeSet<TopicId> = specs
            .iter()
            .flat_map(|s| s.subscribed.iter().copied())
            .collect();
        for topic in topics {
            let eligible: Vec<usize> = (0..specs.len())
                .filter(|&i| specs[i].subscribed.contains(&topic))
                .collect();
            assign_scope(
                &specs,
                &BTreeSet::from([topic]),
                &eligible,
                assignable,
                false,
                &mut result,
            );
        }
    }
    ids.into_iter()
        .zip(result)
        .map(|(id, tps)| {
            let mut partitions = Partitions::new();
            for (topic, partition) in tps {
                partitions.entry(topic).or_default().insert(partition);
            }
            (id.clone(), partitions)
        })
        .collect()
}

/// Kafka's quotas: member `j` of `count` gets `ceil(x(j+1)) - ceil(xj)` with
/// `x = sharing * partitions / count`, in `f64` as Kafka computes it.
fn quotas(count: usize, sharing: usize, partitions: usize) -> Vec<usize> {
    if count == 0 {
        return Vec::new();
    }
    let x = (sharing * partitions) as f64 / count as f64;
    (0..count)
        .map(|j| ((x * (j + 1) as f64).ceil() - (x * j as f64).ceil()) as usize)
        .collect()
}

/// Assigns the partitions of the topics in `scope` among `eligible` members (indices into
/// `specs`), adding each member's share to `result`. `revoked_fill` is the homogeneous rule:
/// a member that gives up an over-shared partition may take another.
fn assign_scope(
    specs: &[&MemberSpec],
    scope: &BTreeSet<TopicId>,
    eligible: &[usize],
    assignable: &Partitions,
    revoked_fill: bool,
    result: &mut [BTreeSet<Tp>],
) {
    let targets: Vec<Tp> = scope
        .iter()
        .flat_map(|topic| {
            assignable
                .get(topic)
                .into_iter()
                .flatten()
                .map(move |p| (*topic, *p))
        })
        .collect();
    let target_set: BTreeSet<Tp> = targets.iter().copied().collect();
    let sharing = if targets.is_empty() {
        0
    } else {
        eligible.len().div_ceil(targets.len())
    };
    let mut quota = vec![0usize; specs.len()];
    for (j, q) in quotas(eligible.len(), sharing, targets.len())
        .into_iter()
        .enumerate()
    {
        quota[eligible[j]] = q;
    }
    // 1. What each member holds and may keep.
    let mut by_part: BTreeMap<Tp, BTreeSet<usize>> =
        targets.iter().map(|tp| (*tp, BTreeSet::new())).collect();
    let mut by_member: Vec<BTreeSet<Tp>> = vec![BTreeSet::new(); specs.len()];
    for (i, spec) in specs.iter().enumerate() {
        for (topic, partitions) in spec.current.iter().filter(|(t, _)| scope.contains(t)) {
            for partition in partitions {
                let tp = (*topic, *partition);
                if target_set.contains(&tp) {
                    by_member[i].insert(tp);
                    by_part.entry(tp).or_default().insert(i);
                }
            }
        }
    }
    // 2. Members over their quota give up partitions.
    for i in 0..specs.len() {
        while by_member[i].len() > quota[i] {
            let Some(tp) = by_member[i].pop_first() else {
                break;
            };
            if let Some(holders) = by_part.get_mut(&tp) {
                holders.remove(&i);
            }
        }
    }
    let mut unfilled: BTreeSet<usize> = eligible
        .iter()
        .copied()
        .filter(|&i| by_member[i].len() < quota[i])
        .collect();
    // 3. Partitions shared by more than `sharing` members lose the extra ones.
    for (tp, holders) in by_part.iter_mut() {
        while holders.len() > sharing {
            let Some(i) = holders.pop_first() else { break };
            by_member[i].remove(tp);
            if revoked_fill {
                unfilled.insert(i);
            }
        }
    }
    // 4. What is missing, round-robin over the members under quota.
    fill(&mut by_part, &mut by_member, &quota, sharing, &mut unfilled);
    for (i, tps) in by_member.into_iter().enumerate() {
        result[i].extend(tps);
    }
}

fn fill(
    by_part: &mut BTreeMap<Tp, BTreeSet<usize>>,
    by_member: &mut [BTreeSet<Tp>],
    quota: &[usize],
    sharing: usize,
    unfilled: &mut BTreeSet<usize>,
) {
    let mut cursor: Option<usize> = None;
    let mut progressed = false;
    let partitions: Vec<Tp> = by_part.keys().copied().collect();
    for tp in partitions {
        if unfilled.is_empty() {
            break;
        }
        let mut need = sharing.saturating_sub(by_part[&tp].len());
        while need > 0 {
            let next = match cursor {
                None => unfilled.first().copied(),
                Some(last) => unfilled.range(last + 1..).next().copied(),
            };
            let Some(i) = next else {
                if !progressed {
                    break;
                }
                cursor = None;
                progressed = false;
                continue;
            };
            cursor = Some(i);
            if by_member[i].insert(tp) {
                if let Some(holders) = by_part.get_mut(&tp) {
                    holders.insert(i);
                }
                need -= 1;
                progressed = true;
                if by_member[i].len() >= quota[i] {
                    unfilled.remove(&i);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
