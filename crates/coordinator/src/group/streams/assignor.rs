//! The `sticky` task assignor of Kafka 4.4's streams groups: active tasks stay with their
//! previous member while it is under its share, then go to a member that kept the task's state
//! (a previous standby, or the most recent changelog offsets), then to the least-loaded
//! process; standby replicas go to other processes, the previous holders first. Warm-up tasks
//! are never assigned, as in Kafka 4.4 (its refinement step returns the target unchanged).
//!
//! Pure, and deterministic: where Kafka's order comes from a `HashMap` or the history of a
//! priority queue (among members or processes equally loaded), this takes the smallest id.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// A task: a subtopology's partition.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId {
    pub subtopology: String,
    pub partition: i32,
}

impl TaskId {
    pub fn new(subtopology: &str, partition: i32) -> Self {
        Self {
            subtopology: subtopology.to_owned(),
            partition,
        }
    }
}

/// Tasks grouped as the protocol lists them: each subtopology's partitions, both in order.
pub fn partitions_by_subtopology<'a>(
    tasks: impl IntoIterator<Item = &'a TaskId>,
) -> BTreeMap<String, Vec<i32>> {
    let mut grouped: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for task in tasks {
        grouped
            .entry(task.subtopology.clone())
            .or_default()
            .push(task.partition);
    }
    for partitions in grouped.values_mut() {
        partitions.sort_unstable();
    }
    grouped
}

/// What the assignor knows of one member.
#[derive(Debug, Clone, Default)]
pub struct MemberSpec {
    pub process_id: String,
    /// The active tasks it holds now.
    pub active: BTreeSet<TaskId>,
    pub standby: BTreeSet<TaskId>,
    /// The changelog offsets it last reported, summed per task.
    pub task_offsets: BTreeMap<TaskId, i64>,
}

/// The topology as the assignor sees it: each subtopology's number of tasks and whether it
/// keeps state (only those have standby replicas).
#[derive(Debug, Clone, Default)]
pub struct TasksSpec {
    pub subtopologies: BTreeMap<String, (i32, bool)>,
}

/// One member's assignment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberTasks {
    pub active: BTreeSet<TaskId>,
    pub standby: BTreeSet<TaskId>,
}

/// Assigns every task of `tasks` to `members` (by member id), with `standby_replicas` standby
/// copies of each stateful task where a process without the task has room.
pub fn assign(
    members: &BTreeMap<String, MemberSpec>,
    tasks: &TasksSpec,
    standby_replicas: u32,
) -> BTreeMap<String, MemberTasks> {
    let mut state = State::new(members, tasks, standby_replicas);
    let active: Vec<TaskId> = all_tasks(tasks, false);
    state.assign_active(active);
    if standby_replicas > 0 {
        state.assign_standby(all_tasks(tasks, true), standby_replicas);
    }
    let mut assignment: BTreeMap<String, MemberTasks> = members
        .keys()
        .map(|member| (member.clone(), MemberTasks::default()))
        .collect();
    for process in state.processes.values() {
        for (member, tasks) in &process.tasks {
            if let Some(entry) = assignment.get_mut(member) {
                entry.active.extend(tasks.active.iter().cloned());
                entry.standby.extend(tasks.standby.iter().cloned());
            }
        }
    }
    assignment
}

fn all_tasks(tasks: &TasksSpec, stateful_only: bool) -> Vec<TaskId> {
    tasks
        .subtopologies
        .iter()
        .filter(|(_, (_, stateful))| !stateful_only || *stateful)
        .flat_map(|(id, (count, _))| (0..*count).map(move |p| TaskId::new(id, p)))
        .collect()
}

fn ceil_div(numerator: u64, denominator: u64) -> u64 {
    if denominator == 0 {
        0
    } else {
        numerator.div_ceil(denominator)
    }
}

/// The tasks of one process, member by member.
#[derive(Debug, Default)]
struct Process {
    tasks: BTreeMap<String, MemberTasks>,
    task_count: u64,
    held: BTreeSet<TaskId>,
}

impl Process {
    fn capacity(&self) -> u64 {
        self.tasks.len() as u64
    }

    /// Compares loads (tasks per member) without rounding.
    fn load_cmp(&self, other: &Self) -> Ordering {
        (u128::from(self.task_count) * u128::from(other.capacity()))
            .cmp(&(u128::from(other.task_count) * u128::from(self.capacity())))
    }

    fn count(&self, member: &str) -> u64 {
        self.tasks
            .get(member)
            .map_or(0, |t| (t.active.len() + t.standby.len()) as u64)
    }

    fn add(&mut self, member: &str, task: TaskId, active: bool) -> u64 {
        self.held.insert(task.clone());
        self.task_count += 1;
        let tasks = self.tasks.entry(member.to_owned()).or_default();
        if active {
            tasks.active.insert(task);
        } else {
            tasks.standby.insert(task);
        }
        self.count(member)
    }

    fn least_loaded_member(&self) -> Option<String> {
        self.tasks
            .keys()
            .min_by_key(|member| self.count(member))
            .cloned()
    }
}

/// A member that may take a task: whether it held it as a standby, and its offsets for it.
#[derive(Debug, Clone)]
struct Candidate {
    member: String,
    was_standby: bool,
    offset: i64,
}

/// Quotas: tasks per member, lowered as members fill up.
#[derive(Debug)]
struct Quota {
    remaining: u64,
    members: u64,
    per_member: u64,
}

impl Quota {
    fn new(total: u64, members: u64) -> Self {
        Self {
            remaining: total,
            members,
            per_member: ceil_div(total, members),
        }
    }

    /// A member reached `count`: at exactly the share, it leaves the pool and the share of the
    /// others is recomputed.
    fn update(&mut self, count: u64) {
        if count == self.per_member {
            self.members = self.members.saturating_sub(1);
            self.remaining = self.remaining.saturating_sub(count);
            self.per_member = ceil_div(self.remaining, self.members);
        }
    }
}

struct State {
    processes: BTreeMap<String, Process>,
    process_of: BTreeMap<String, String>,
    previous_active: BTreeMap<TaskId, String>,
    candidates: BTreeMap<TaskId, Vec<Candidate>>,
    active_quota: Quota,
    total_quota: Quota,
}

impl State {
    fn new(members: &BTreeMap<String, MemberSpec>, tasks: &TasksSpec, standbys: u32) -> Self {
        let active_total: u64 = tasks.subtopologies.values().map(|(n, _)| *n as u64).sum();
        let stateful: u64 = tasks
            .subtopologies
            .values()
            .filter(|(_, stateful)| *stateful)
            .map(|(n, _)| *n as u64)
            .sum();
        let count = members.len() as u64;
        let mut state = Self {
            processes: BTreeMap::new(),
            process_of: BTreeMap::new(),
            previous_active: BTreeMap::new(),
            candidates: BTreeMap::new(),
            active_quota: Quota::new(active_total, count),
            total_quota: Quota::new(active_total + stateful * u64::from(standbys), count),
        };
        for (member, spec) in members {
            let process = state.processes.entry(spec.process_id.clone()).or_default();
            process.tasks.insert(member.clone(), MemberTasks::default());
            state
                .process_of
                .insert(member.clone(), spec.process_id.clone());
            for task in &spec.active {
                state.previous_active.insert(task.clone(), member.clone());
            }
            for task in &spec.standby {
                let offset = spec.task_offsets.get(task).copied().unwrap_or(0);
                state.candidate(task, member, true, offset);
            }
            for (task, offset) in &spec.task_offsets {
                if !spec.standby.contains(task) {
                    state.candidate(task, member, false, *offset);
                }
            }
        }
        for list in state.candidates.values_mut() {
            // Stable: among equals, the member order stands.
            list.sort_by(|a, b| {
                b.was_standby
                    .cmp(&a.was_standby)
                    .then(b.offset.cmp(&a.offset))
            });
        }
        state
    }

    fn candidate(&mut self, task: &TaskId, member: &str, was_standby: bool, offset: i64) {
        self.candidates
            .entry(task.clone())
            .or_default()
            .push(Candidate {
                member: member.to_owned(),
                was_standby,
                offset,
            });
    }

    fn process(&self, member: &str) -> Option<&Process> {
        self.processes.get(self.process_of.get(member)?)
    }

    fn count(&self, member: &str) -> u64 {
        self.process(member).map_or(0, |p| p.count(member))
    }

    fn add(&mut self, member: &str, task: TaskId, active: bool) -> u64 {
        let Some(process) = self.process_of.get(member).cloned() else {
            return 0;
        };
        let count = self
            .processes
            .get_mut(&process)
            .map_or(0, |p| p.add(member, task, active));
        if active {
            self.active_quota.update(count);
        }
        self.total_quota.update(count);
        count
    }

    /// Among `task`'s candidates (skipping processes that hold it, for a standby), the first
    /// whose process and own load are both below every earlier pick's.
    fn least_loaded_candidate(&self, task: &TaskId, for_standby: bool) -> Option<String> {
        let mut chosen: Option<(&str, &Process, u64)> = None;
        for candidate in self.candidates.get(task).into_iter().flatten() {
            let Some(process) = self.process(&candidate.member) else {
                continue;
            };
            if for_standby && process.held.contains(task) {
                continue;
            }
            let count = process.count(&candidate.member);
            let better = chosen.is_none_or(|(_, best, best_count)| {
                process.load_cmp(best) == Ordering::Less && count < best_count
            });
            if better {
                chosen = Some((&candidate.member, process, count));
            }
        }
        chosen.map(|(member, _, _)| member.to_owned())
    }

    /// The least-loaded process without `task` (any process for an active task), smallest id
    /// first among equals.
    fn least_loaded_process(&self, without: Option<&TaskId>) -> Option<String> {
        self.processes
            .iter()
            .filter(|(_, p)| p.capacity() > 0 && without.is_none_or(|t| !p.held.contains(t)))
            .min_by(|(_, a), (_, b)| a.load_cmp(b))
            .map(|(id, _)| id.clone())
    }

    fn add_to_process(&mut self, process: &str, task: TaskId, active: bool) -> bool {
        let Some(member) = self
            .processes
            .get(process)
            .and_then(Process::least_loaded_member)
        else {
            return false;
        };
        self.add(&member, task, active);
        true
    }

    fn assign_active(&mut self, mut tasks: Vec<TaskId>) {
        tasks.sort_by(|a, b| {
            a.partition
                .cmp(&b.partition)
                .then(a.subtopology.cmp(&b.subtopology))
        });
        let mut remaining = Vec::new();
        for task in tasks {
            match self.previous_active.get(&task).cloned() {
                Some(member) if self.count(&member) < self.active_quota.per_member => {
                    self.add(&member, task, true);
                }
                _ => remaining.push(task),
            }
        }
        let mut unplaced = Vec::new();
        for task in remaining {
            match self.least_loaded_candidate(&task, false) {
                Some(member) if self.count(&member) < self.active_quota.per_member => {
                    self.add(&member, task, true);
                }
                _ => unplaced.push(task),
            }
        }
        unplaced.sort();
        for task in unplaced {
            // Every task gets an active owner while there is a member at all.
            if let Some(process) = self.least_loaded_process(None) {
                self.add_to_process(&process, task, true);
            }
        }
    }

    fn assign_standby(&mut self, mut tasks: Vec<TaskId>, replicas: u32) {
        tasks.sort_by(|a, b| {
            b.partition
                .cmp(&a.partition)
                .then(b.subtopology.cmp(&a.subtopology))
        });
        let mut short = Vec::new();
        for task in tasks {
            let placed = self.standby_on_previous_holders(&task, replicas);
            if placed < replicas {
                short.push((task, replicas - placed));
            }
        }
        short.sort_by(|(a, _), (b, _)| b.cmp(a));
        for (task, missing) in short {
            for placed in 0..missing {
                let Some(process) = self.least_loaded_process(Some(&task)) else {
                    tracing::warn!(
                        task = %format!("{}_{}", task.subtopology, task.partition),
                        unassigned = missing - placed,
                        replicas,
                        "not enough processes for the standby replicas of a task"
                    );
                    break;
                };
                self.add_to_process(&process, task.clone(), false);
            }
        }
    }

    /// Standbys on the task's previous active owner, then on its candidates, within the total
    /// share; how many were placed.
    fn standby_on_previous_holders(&mut self, task: &TaskId, replicas: u32) -> u32 {
        let mut placed = 0;
        while placed < replicas {
            let quota = self.total_quota.per_member;
            let previous = self.previous_active.get(task).cloned().filter(|member| {
                self.process(member).is_some_and(|p| !p.held.contains(task))
                    && self.count(member) < quota
            });
            let member = match previous {
                Some(member) => member,
                None => match self.least_loaded_candidate(task, true) {
                    Some(member) if self.count(&member) < quota => member,
                    _ => break,
                },
            };
            self.add(&member, task.clone(), false);
            placed += 1;
        }
        placed
    }
}

#[cfg(test)]
mod tests;
