use std::collections::{BTreeMap, BTreeSet};

use super::*;

fn tasks(list: &[(&str, &[i32])]) -> BTreeSet<TaskId> {
    list.iter()
        .flat_map(|(sub, partitions)| partitions.iter().map(|p| TaskId::new(sub, *p)))
        .collect()
}

fn member(process: &str, active: &[(&str, &[i32])], standby: &[(&str, &[i32])]) -> MemberSpec {
    MemberSpec {
        process_id: process.to_owned(),
        active: tasks(active),
        standby: tasks(standby),
        task_offsets: BTreeMap::new(),
    }
}

fn offsets(list: &[(&str, i32, i64)]) -> BTreeMap<TaskId, i64> {
    list.iter()
        .map(|(sub, p, offset)| (TaskId::new(sub, *p), *offset))
        .collect()
}

fn spec(list: &[(&str, i32, bool)]) -> TasksSpec {
    TasksSpec {
        subtopologies: list
            .iter()
            .map(|(id, count, stateful)| ((*id).to_owned(), (*count, *stateful)))
            .collect(),
    }
}

fn expect(
    assignment: &BTreeMap<String, MemberTasks>,
    member: &str,
    active: &[(&str, &[i32])],
    standby: &[(&str, &[i32])],
) {
    let tasks_of = &assignment[member];
    assert_eq!(tasks_of.active, tasks(active), "{member}'s active tasks");
    assert_eq!(tasks_of.standby, tasks(standby), "{member}'s standby tasks");
}

/// Kafka 4.4's own assignor gives this assignment for these members (run against its jar):
/// previous owners keep their share, the new process takes the rest, and standbys follow the
/// previous holders.
#[test]
fn previous_owners_and_standby_holders_are_kept_as_kafka_keeps_them() {
    let mut members = BTreeMap::new();
    members.insert(
        "m1".to_owned(),
        member("p1", &[("0", &[0, 1, 2])], &[("0", &[3])]),
    );
    members.insert(
        "m2".to_owned(),
        member("p2", &[("0", &[3, 4, 5])], &[("0", &[0])]),
    );
    members.insert("m3".to_owned(), member("p3", &[], &[]));
    let assignment = assign(&members, &spec(&[("0", 6, true)]), 1);
    expect(&assignment, "m1", &[("0", &[0, 1])], &[("0", &[2, 3])]);
    expect(&assignment, "m2", &[("0", &[3, 4])], &[("0", &[0, 5])]);
    expect(&assignment, "m3", &[("0", &[2, 5])], &[("0", &[1, 4])]);
}

/// The same, with reported changelog offsets deciding who takes a standby: the member with the
/// most recent state of a task keeps it.
#[test]
fn reported_offsets_rank_the_standby_candidates_as_kafka_ranks_them() {
    let mut members = BTreeMap::new();
    members.insert(
        "m1".to_owned(),
        member("p1", &[("0", &[0, 1]), ("1", &[0, 1, 2])], &[]),
    );
    let mut m2 = member("p2", &[("0", &[2, 3])], &[("0", &[0, 1])]);
    m2.task_offsets = offsets(&[("0", 0, 100), ("0", 1, 50)]);
    members.insert("m2".to_owned(), m2);
    let mut m3 = member("p3", &[], &[]);
    m3.task_offsets = offsets(&[("0", 2, 10), ("0", 3, 20)]);
    members.insert("m3".to_owned(), m3);
    let assignment = assign(&members, &spec(&[("0", 4, true), ("1", 3, false)]), 1);
    expect(&assignment, "m1", &[("0", &[0, 1]), ("1", &[0])], &[]);
    expect(&assignment, "m2", &[("0", &[2, 3])], &[("0", &[0, 1])]);
    expect(&assignment, "m3", &[("1", &[1, 2])], &[("0", &[2, 3])]);
}

#[test]
fn no_member_no_assignment_and_no_panic() {
    let assignment = assign(&BTreeMap::new(), &spec(&[("0", 4, true)]), 2);
    assert!(assignment.is_empty());
}

/// A small deterministic generator for the invariant test.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Whatever the members held before: every task has exactly one active owner, a process never
/// holds two copies of a task, and standbys are placed while some process lacks the task.
/// (How evenly tasks spread is the quota rule's, which Kafka's examples above pin.)
#[test]
fn every_task_has_one_owner_and_copies_stay_on_distinct_processes() {
    let mut rng = Rng(0x5eed_5712_c4e0_0001);
    for round in 0..300 {
        let topology = spec(&[
            ("0", 1 + rng.below(8) as i32, true),
            ("1", 1 + rng.below(5) as i32, false),
            ("2", rng.below(6) as i32, true),
        ]);
        let all: Vec<TaskId> = all_tasks(&topology, false);
        let processes = 1 + rng.below(4);
        let mut members = BTreeMap::new();
        for index in 0..1 + rng.below(6) {
            let mut spec = MemberSpec {
                process_id: format!("p{}", rng.below(processes)),
                ..MemberSpec::default()
            };
            for task in &all {
                match rng.below(6) {
                    0 => drop(spec.active.insert(task.clone())),
                    1 => drop(spec.standby.insert(task.clone())),
                    2 => drop(
                        spec.task_offsets
                            .insert(task.clone(), rng.below(1000) as i64),
                    ),
                    _ => {}
                }
            }
            members.insert(format!("m{index}"), spec);
        }
        let replicas = rng.below(3) as u32;
        let assignment = assign(&members, &topology, replicas);
        let mut owners: BTreeMap<&TaskId, usize> = BTreeMap::new();
        let mut copies: BTreeMap<(&str, &TaskId), usize> = BTreeMap::new();
        for (member, tasks) in &assignment {
            let process = members[member].process_id.as_str();
            for task in tasks.active.iter() {
                *owners.entry(task).or_default() += 1;
            }
            for task in tasks.active.iter().chain(&tasks.standby) {
                *copies.entry((process, task)).or_default() += 1;
            }
        }
        for task in &all {
            assert_eq!(
                owners.get(task),
                Some(&1),
                "round {round}: {task:?} active owners"
            );
        }
        assert!(
            copies.values().all(|n| *n == 1),
            "round {round}: two copies on a process"
        );
        let distinct: BTreeSet<&str> = members.values().map(|m| m.process_id.as_str()).collect();
        for (id, (count, stateful)) in &topology.subtopologies {
            for partition in 0..*count {
                let task = TaskId::new(id, partition);
                let standbys = assignment
                    .values()
                    .filter(|t| t.standby.contains(&task))
                    .count();
                let wanted = if *stateful { replicas as usize } else { 0 };
                let possible = wanted.min(distinct.len() - 1);
                assert_eq!(standbys, possible, "round {round}: standbys of {task:?}");
            }
        }
    }
}
