//! The server-side assignors of consumer groups, as pure functions of the members'
//! subscriptions, their previous targets and the topics' partition counts.
//!
//! - **uniform** (the default): as even as the subscriptions allow and sticky. When every
//!   member subscribes to the same topics, each keeps its previous partitions up to its quota
//!   (`P / N`, and one more for `P % N` members, kept first by members that already had one
//!   more), and the partitions left over fill the remaining quotas in member order. Otherwise
//!   each member keeps its previous partitions of topics it still subscribes to, the free
//!   partitions go to the least loaded subscriber, and partitions then move from the most to
//!   the least loaded subscriber of each topic until no two differ by more than one.
//! - **range**: per topic, contiguous ranges in member order (static members by instance id
//!   first, then member id); the first `P % N` members get one more. Not sticky; members of the
//!   same topics get the same partition numbers in topics of the same size.
//!
//! Kafka's uniform assignor walks its members and topics in Java hash-table order, so even
//! Kafka's own output is not a function of its inputs alone (it can change after a coordinator
//! moves). ferrolog walks them in id order: the same balance and stickiness, chosen
//! deterministically.

use std::collections::{BTreeMap, BTreeSet};

use ferrolog_storage::manager::TopicId;

use super::model::{ConsumerGroup, ConsumerMember, Partitions, ResolvedRegex};
use super::subscription::{TopicMetadata, subscribed_ids};

/// One member as an assignor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSpec {
    pub member_id: String,
    pub instance_id: Option<String>,
    /// The existing topics it subscribes to.
    pub subscribed: BTreeSet<TopicId>,
    /// Its previous target.
    pub previous: Partitions,
}

/// The members of `group`, with `member` as updated by the heartbeat (and, for a static
/// member's new incarnation, the target it inherits).
pub fn member_specs(
    group: &ConsumerGroup,
    regexes: &BTreeMap<String, ResolvedRegex>,
    member: &ConsumerMember,
    inherited: Option<&Partitions>,
    metadata: &TopicMetadata,
) -> Vec<MemberSpec> {
    let spec = |m: &ConsumerMember, previous: Option<&Partitions>| MemberSpec {
        member_id: m.member_id.clone(),
        instance_id: m.subscription.instance_id.clone(),
        subscribed: subscribed_ids(&m.subscription, regexes, metadata),
        previous: previous.cloned().unwrap_or_default(),
    };
    let replaced = member
        .subscription
        .instance_id
        .as_ref()
        .and_then(|instance| group.static_members.get(instance))
        .filter(|old| **old != member.member_id);
    let mut specs: Vec<MemberSpec> = group
        .members
        .values()
        .filter(|m| m.member_id != member.member_id && Some(&m.member_id) != replaced)
        .map(|m| spec(m, group.target.get(&m.member_id)))
        .collect();
    specs.push(spec(
        member,
        inherited.or_else(|| group.target.get(&member.member_id)),
    ));
    specs.sort_by(|a, b| a.member_id.cmp(&b.member_id));
    specs
}

/// The targets `assignor` computes; every member gets one, possibly empty.
pub fn assign(
    assignor: &str,
    members: &[MemberSpec],
    partition_counts: &BTreeMap<TopicId, i32>,
) -> Result<BTreeMap<String, Partitions>, String> {
    if let Some(missing) = members
        .iter()
        .flat_map(|m| &m.subscribed)
        .find(|topic| !partition_counts.contains_key(topic))
    {
        return Err(format!(
            "Members are subscribed to topic {missing} which doesn't exist in the topic metadata."
        ));
    }
    let targets = match assignor {
        "range" => range(members, partition_counts),
        "uniform" if homogeneous(members) => uniform_homogeneous(members, partition_counts)?,
        "uniform" => uniform_heterogeneous(members, partition_counts),
        other => return Err(format!("unknown assignor {other}")),
    };
    debug_assert!(
        each_partition_once(&targets, members, partition_counts),
        "an assignment gives each subscribed partition to exactly one member"
    );
    Ok(targets)
}

fn homogeneous(members: &[MemberSpec]) -> bool {
    members
        .windows(2)
        .all(|pair| pair[0].subscribed == pair[1].subscribed)
}

fn add(target: &mut Partitions, topic: TopicId, partition: i32) {
    target.entry(topic).or_default().insert(partition);
}

fn count(target: &Partitions) -> usize {
    target.values().map(BTreeSet::len).sum()
}

fn uniform_homogeneous(
    members: &[MemberSpec],
    counts: &BTreeMap<TopicId, i32>,
) -> Result<BTreeMap<String, Partitions>, String> {
    let mut targets: BTreeMap<String, Partitions> = members
        .iter()
        .map(|m| (m.member_id.clone(), Partitions::new()))
        .collect();
    let Some(first) = members.first() else {
        return Ok(targets);
    };
    let topics = &first.subscribed;
    let total: usize = topics.iter().map(|t| counts[t] as usize).sum();
    if topics.is_empty() || total == 0 {
        return Ok(targets);
    }
    let previously: BTreeSet<(TopicId, i32)> = members
        .iter()
        .flat_map(|m| m.previous.iter())
        .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p)))
        .collect();
    let mut free: Vec<(TopicId, i32)> = topics
        .iter()
        .flat_map(|t| (0..counts[t]).map(move |p| (*t, p)))
        .filter(|tp| !previously.contains(tp))
        .collect();
    let n = members.len();
    let min_quota = total / n;
    let mut extra = total % n;
    let mut unfilled: Vec<(&str, usize)> = Vec::new();
    for (index, member) in members.iter().enumerate() {
        let mut quota = min_quota;
        let mut has_extra = false;
        if extra > 0 {
            quota += 1;
            has_extra = true;
        }
        let target = targets.get_mut(&member.member_id).ok_or("member missing")?;
        for (topic, partitions) in &member.previous {
            if !topics.contains(topic) {
                continue;
            }
            for partition in partitions.iter().filter(|p| **p < counts[topic]) {
                if quota > 0 {
                    add(target, *topic, *partition);
                    quota -= 1;
                } else {
                    free.push((*topic, *partition));
                }
            }
        }
        if quota > 0 && has_extra && n - index > extra {
            quota -= 1;
            has_extra = false;
        }
        if quota > 0 {
            unfilled.push((&member.member_id, quota));
        }
        if has_extra {
            extra -= 1;
        }
    }
    let mut free = free.into_iter();
    for (member_id, quota) in unfilled {
        let target = targets.get_mut(member_id).ok_or("member missing")?;
        for (topic, partition) in free.by_ref().take(quota) {
            add(target, topic, partition);
        }
    }
    if free.next().is_some() {
        return Err("Partitions were left unassigned".to_owned());
    }
    Ok(targets)
}

fn uniform_heterogeneous(
    members: &[MemberSpec],
    counts: &BTreeMap<TopicId, i32>,
) -> BTreeMap<String, Partitions> {
    let mut targets: Vec<Partitions> = vec![Partitions::new(); members.len()];
    let mut taken = BTreeSet::new();
    for (index, member) in members.iter().enumerate() {
        for (topic, partitions) in &member.previous {
            if !member.subscribed.contains(topic) {
                continue;
            }
            for partition in partitions {
                if *partition < counts[topic] && taken.insert((*topic, *partition)) {
                    add(&mut targets[index], *topic, *partition);
                }
            }
        }
    }
    for (topic, partitions) in counts {
        let subscribers: Vec<usize> = (0..members.len())
            .filter(|i| members[*i].subscribed.contains(topic))
            .collect();
        if subscribers.is_empty() {
            continue;
        }
        for partition in 0..*partitions {
            if taken.contains(&(*topic, partition)) {
                continue;
            }
            let least = subscribers
                .iter()
                .copied()
                .min_by_key(|i| (count(&targets[*i]), *i))
                .unwrap_or(subscribers[0]);
            add(&mut targets[least], *topic, partition);
        }
        balance_topic(&mut targets, *topic, &subscribers);
    }
    members
        .iter()
        .zip(targets)
        .map(|(m, t)| (m.member_id.clone(), t))
        .collect()
}

/// Moves `topic`'s highest partitions from its most loaded subscriber holding some to its
/// least loaded one, while their loads differ by more than one.
fn balance_topic(targets: &mut [Partitions], topic: TopicId, subscribers: &[usize]) {
    loop {
        let least = subscribers
            .iter()
            .copied()
            .min_by_key(|i| (count(&targets[*i]), *i));
        let most = subscribers
            .iter()
            .copied()
            .filter(|i| targets[*i].get(&topic).is_some_and(|p| !p.is_empty()))
            .max_by_key(|i| (count(&targets[*i]), std::cmp::Reverse(*i)));
        let (Some(least), Some(most)) = (least, most) else {
            return;
        };
        if count(&targets[most]) <= count(&targets[least]) + 1 {
            return;
        }
        let Some(partition) = targets[most].get_mut(&topic).and_then(|p| p.pop_last()) else {
            return;
        };
        if targets[most].get(&topic).is_some_and(BTreeSet::is_empty) {
            targets[most].remove(&topic);
        }
        add(&mut targets[least], topic, partition);
    }
}

fn range(members: &[MemberSpec], counts: &BTreeMap<TopicId, i32>) -> BTreeMap<String, Partitions> {
    let mut sorted: Vec<&MemberSpec> = members.iter().collect();
    sorted.sort_by(|a, b| match (&a.instance_id, &b.instance_id) {
        (Some(x), Some(y)) => x.encode_utf16().cmp(y.encode_utf16()),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.member_id.cmp(&b.member_id),
    });
    let mut targets: BTreeMap<String, Partitions> = members
        .iter()
        .map(|m| (m.member_id.clone(), Partitions::new()))
        .collect();
    for (topic, partitions) in counts {
        let subscribers: Vec<&&MemberSpec> = sorted
            .iter()
            .filter(|m| m.subscribed.contains(topic))
            .collect();
        if subscribers.is_empty() {
            continue;
        }
        let n = subscribers.len() as i32;
        let (quota, mut extra) = (partitions / n, partitions % n);
        let mut next = 0;
        for member in subscribers {
            let mut take = quota;
            if extra > 0 {
                take += 1;
                extra -= 1;
            }
            let end = (next + take).min(*partitions);
            if let Some(target) = targets.get_mut(&member.member_id) {
                for partition in next..end {
                    add(target, *topic, partition);
                }
            }
            next = end;
        }
    }
    targets
}

/// Every partition of a subscribed topic in exactly one target, and nothing else.
fn each_partition_once(
    targets: &BTreeMap<String, Partitions>,
    members: &[MemberSpec],
    counts: &BTreeMap<TopicId, i32>,
) -> bool {
    let subscribed: BTreeSet<TopicId> = members
        .iter()
        .flat_map(|m| m.subscribed.iter().copied())
        .collect();
    let mut seen = BTreeSet::new();
    for target in targets.values() {
        for (topic, partitions) in target {
            for partition in partitions {
                if !seen.insert((*topic, *partition)) {
                    return false;
                }
            }
        }
    }
    let expected: usize = subscribed.iter().map(|t| counts[t] as usize).sum();
    seen.len() == expected
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(n: u8) -> TopicId {
        TopicId([n; 16])
    }

    fn member(id: &str, topics: &[u8], previous: &Partitions) -> MemberSpec {
        MemberSpec {
            member_id: id.to_owned(),
            instance_id: None,
            subscribed: topics.iter().map(|t| topic(*t)).collect(),
            previous: previous.clone(),
        }
    }

    fn sizes(targets: &BTreeMap<String, Partitions>) -> Vec<usize> {
        targets.values().map(count).collect()
    }

    fn moved(before: &BTreeMap<String, Partitions>, after: &BTreeMap<String, Partitions>) -> usize {
        after
            .iter()
            .map(|(member, target)| {
                let old = before.get(member);
                target
                    .iter()
                    .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p)))
                    .filter(|(t, p)| {
                        !old.is_some_and(|o| o.get(t).is_some_and(|ps| ps.contains(p)))
                    })
                    .count()
            })
            .sum()
    }

    #[test]
    fn uniform_spreads_evenly_and_moves_only_what_it_must() {
        let counts = BTreeMap::from([(topic(1), 8)]);
        let none = Partitions::new();
        let three: Vec<MemberSpec> = ["a", "b", "c"]
            .iter()
            .map(|m| member(m, &[1], &none))
            .collect();
        let first = assign("uniform", &three, &counts).unwrap();
        // The extras go to the last members.
        assert_eq!(sizes(&first), [2, 3, 3]);
        let mut four: Vec<MemberSpec> = ["a", "b", "c"]
            .iter()
            .map(|m| member(m, &[1], &first[*m]))
            .collect();
        four.push(member("d", &[1], &none));
        let second = assign("uniform", &four, &counts).unwrap();
        assert_eq!(sizes(&second), [2, 2, 2, 2]);
        // d takes two partitions; no one else changes hands.
        assert_eq!(moved(&first, &second), 2);
        // a leaves: its two partitions go to the others, the rest stay.
        let rest: Vec<MemberSpec> = ["b", "c", "d"]
            .iter()
            .map(|m| member(m, &[1], &second[*m]))
            .collect();
        let third = assign("uniform", &rest, &counts).unwrap();
        assert_eq!(moved(&second, &third), 2);
        assert_eq!(sizes(&third).iter().sum::<usize>(), 8);
    }

    #[test]
    fn uniform_balances_members_of_different_topics() {
        let counts = BTreeMap::from([(topic(1), 6), (topic(2), 3)]);
        let none = Partitions::new();
        let members = vec![
            member("a", &[1], &none),
            member("b", &[1, 2], &none),
            member("c", &[2], &none),
        ];
        let targets = assign("uniform", &members, &counts).unwrap();
        assert_eq!(sizes(&targets), [3, 3, 3]);
        assert!(targets["c"].keys().all(|t| *t == topic(2)));
    }

    #[test]
    fn range_gives_contiguous_ranges_static_members_first() {
        let counts = BTreeMap::from([(topic(1), 7), (topic(2), 7)]);
        let none = Partitions::new();
        let mut members = vec![member("a", &[1, 2], &none), member("b", &[1, 2], &none)];
        let mut fixed = member("z", &[1, 2], &none);
        fixed.instance_id = Some("pod-0".into());
        members.push(fixed);
        let targets = assign("range", &members, &counts).unwrap();
        let range = |m: &str, t: u8| targets[m][&topic(t)].iter().copied().collect::<Vec<_>>();
        assert_eq!(range("z", 1), [0, 1, 2]);
        assert_eq!(range("a", 1), [3, 4]);
        assert_eq!(range("b", 1), [5, 6]);
        // The same numbers in both topics.
        assert_eq!(range("a", 2), range("a", 1));
    }

    #[test]
    fn every_partition_goes_to_exactly_one_member_whatever_the_churn() {
        // A small deterministic generator: the same cases every run.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        for assignor in ["uniform", "range"] {
            let mut previous: BTreeMap<String, Partitions> = BTreeMap::new();
            for _round in 0..60 {
                let topics = 1 + next(4) as u8;
                let counts: BTreeMap<TopicId, i32> = (1..=topics)
                    .map(|t| (topic(t), 1 + next(12) as i32))
                    .collect();
                let homogeneous = next(2) == 0;
                let members: Vec<MemberSpec> = (0..1 + next(7))
                    .map(|m| {
                        let id = format!("m{m}");
                        let subscribed: Vec<u8> = if homogeneous {
                            (1..=topics).collect()
                        } else {
                            (1..=topics).filter(|_| next(2) == 0).collect()
                        };
                        let old = previous.get(&id).cloned().unwrap_or_default();
                        member(&id, &subscribed, &old)
                    })
                    .collect();
                let targets = assign(assignor, &members, &counts).unwrap();
                assert!(each_partition_once(&targets, &members, &counts));
                if assignor == "uniform" && homogeneous {
                    let sizes = sizes(&targets);
                    let (min, max) = (sizes.iter().min(), sizes.iter().max());
                    assert!(max.unwrap() - min.unwrap() <= 1, "{sizes:?}");
                }
                previous = targets;
            }
        }
    }
}
