//! The simple assignor's invariants, as Kafka's own tests state them: every assignable
//! partition shared by `ceil(members / partitions)` members, quotas kept, holdings kept where
//! quotas allow, unsubscribed topics given up.

use super::*;

fn topic(n: u8) -> TopicId {
    TopicId([n; 16])
}

fn partitions(topic_id: TopicId, count: i32) -> Partitions {
    Partitions::from([(topic_id, (0..count).collect())])
}

fn members(count: usize, subscribed: &[TopicId]) -> BTreeMap<String, MemberSpec> {
    (0..count)
        .map(|i| {
            let spec = MemberSpec {
                subscribed: subscribed.iter().copied().collect(),
                current: Partitions::new(),
            };
            (format!("m{i}"), spec)
        })
        .collect()
}

/// How many members hold each partition of `topic_id`.
fn holders(result: &BTreeMap<String, Partitions>, topic_id: TopicId) -> BTreeMap<i32, usize> {
    let mut count = BTreeMap::new();
    for target in result.values() {
        for partition in target.get(&topic_id).into_iter().flatten() {
            *count.entry(*partition).or_default() += 1;
        }
    }
    count
}

fn sizes(result: &BTreeMap<String, Partitions>) -> Vec<usize> {
    result
        .values()
        .map(|t| t.values().map(BTreeSet::len).sum())
        .collect()
}

#[test]
fn quotas_are_kafkas_including_its_rounding() {
    assert_eq!(quotas(3, 1, 4), vec![2, 1, 1]);
    assert_eq!(quotas(5, 3, 2), vec![2, 1, 1, 1, 1]);
    // Kafka's example where the quotas add up to one more than the slots.
    let q = quotas(7, 1, 29);
    assert_eq!(q, vec![5, 4, 4, 4, 4, 4, 5]);
    assert_eq!(q.iter().sum::<usize>(), 30);
}

#[test]
fn more_partitions_than_members_each_partition_once() {
    let t = topic(1);
    let result = assign(&members(3, &[t]), &partitions(t, 4));
    assert_eq!(
        holders(&result, t),
        BTreeMap::from([(0, 1), (1, 1), (2, 1), (3, 1)])
    );
    assert_eq!(sizes(&result), vec![2, 1, 1]);
}

#[test]
fn more_members_than_partitions_share_each_partition() {
    let t = topic(1);
    let result = assign(&members(5, &[t]), &partitions(t, 2));
    assert_eq!(holders(&result, t), BTreeMap::from([(0, 3), (1, 3)]));
    assert!(sizes(&result).iter().all(|&n| n >= 1), "{result:?}");
    let one = assign(&members(4, &[t]), &partitions(t, 1));
    assert_eq!(holders(&one, t), BTreeMap::from([(0, 4)]));
}

#[test]
fn holdings_are_kept_where_quotas_allow() {
    let t = topic(1);
    let mut group = members(2, &[t]);
    group.get_mut("m1").unwrap().current = partitions(t, 3);
    let result = assign(&group, &partitions(t, 4));
    // m1 keeps one of its three (its quota), m0 gets the other three slots' worth.
    assert_eq!(sizes(&result), vec![2, 2]);
    assert_eq!(
        holders(&result, t).values().copied().collect::<Vec<_>>(),
        vec![1, 1, 1, 1]
    );
    let kept = &result["m1"][&t];
    assert!(
        kept.iter().all(|p| (0..3).contains(p)),
        "m1 keeps what it held: {kept:?}"
    );
}

#[test]
fn uninitialized_partitions_are_never_assigned() {
    let t = topic(1);
    let mut group = members(2, &[t]);
    group.get_mut("m0").unwrap().current = partitions(t, 4);
    let assignable = Partitions::from([(t, BTreeSet::from([0, 1]))]);
    let result = assign(&group, &assignable);
    assert_eq!(holders(&result, t), BTreeMap::from([(0, 1), (1, 1)]));
    assert_eq!(
        assign(&group, &Partitions::new())
            .values()
            .map(|t| t.len())
            .sum::<usize>(),
        0
    );
}

#[test]
fn each_topic_among_its_own_subscribers() {
    let (a, b) = (topic(1), topic(2));
    let mut group = members(3, &[a]);
    group.get_mut("m2").unwrap().subscribed = BTreeSet::from([a, b]);
    group.get_mut("m1").unwrap().current = partitions(b, 2);
    let mut assignable = partitions(a, 3);
    assignable.extend(partitions(b, 2));
    let result = assign(&group, &assignable);
    assert_eq!(
        holders(&result, a),
        BTreeMap::from([(0, 1), (1, 1), (2, 1)])
    );
    // Only m2 subscribes to b: it holds both, and m1, no longer subscribed, gives them up.
    assert_eq!(holders(&result, b), BTreeMap::from([(0, 1), (1, 1)]));
    assert_eq!(result["m2"][&b], BTreeSet::from([0, 1]));
    assert!(!result["m1"].contains_key(&b));
}
