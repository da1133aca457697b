//! A streams group's topology configured against the topics that exist, as Kafka 4.4's
//! `InternalTopicManager.configureTopics` does it: source topics must exist; the partition
//! counts of repartition topics are derived from the subtopologies that write them;
//! copartitioned topics must agree; each changelog gets one partition per task of its
//! subtopology; internal topics that do not exist yet are the ones to create. Pure: the topics
//! are read through a lookup, so the rules are tested without a broker.
//!
//! Where Kafka walks a `HashMap` (the order of subtopologies while deriving repartition counts,
//! of copartition groups, of the names in a status detail) this walks the topology's declared
//! order and sorted names; the outcome differs only where Kafka's own depends on hash order.

use std::collections::{BTreeMap, BTreeSet};

use ferrolog_records::streams_group_records::{StreamsTopology, Subtopology, TopicInfo};

/// A status of the heartbeat answer about the topics (Kafka's `StreamsGroupHeartbeatResponse`
/// status codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicStatus {
    MissingSourceTopics = 1,
    IncorrectlyPartitionedTopics = 2,
    MissingInternalTopics = 3,
}

/// Why the topology cannot run yet: the status its members are told, with Kafka's detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicProblem {
    pub status: TopicStatus,
    pub detail: String,
}

/// A topology that cannot be configured at all: the heartbeat fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigureError {
    /// STREAMS_INVALID_TOPOLOGY, with this message.
    InvalidTopology(String),
    /// UNKNOWN_SERVER_ERROR (Kafka fails the same way, with an internal exception).
    Internal(String),
}

/// An internal topic (repartition or changelog) as it must exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InternalTopic {
    pub name: String,
    pub partitions: i32,
    /// `None`: the broker's default.
    pub replication_factor: Option<i16>,
    /// Exactly what the client declared; the broker adds nothing.
    pub configs: BTreeMap<String, String>,
}

/// One subtopology with its number of tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredSubtopology {
    pub number_of_tasks: i32,
    pub source_topics: BTreeSet<String>,
    pub repartition_sink_topics: BTreeSet<String>,
    pub repartition_source_topics: BTreeMap<String, InternalTopic>,
    pub state_changelog_topics: BTreeMap<String, InternalTopic>,
}

impl ConfiguredSubtopology {
    /// A subtopology with state has standby tasks.
    pub fn is_stateful(&self) -> bool {
        !self.state_changelog_topics.is_empty()
    }
}

/// The outcome of configuring a topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredTopology {
    pub epoch: i32,
    /// By subtopology id; `None` when a source topic is missing or the counts disagree.
    pub subtopologies: Option<BTreeMap<String, ConfiguredSubtopology>>,
    /// The internal topics that do not exist yet, by name.
    pub to_create: BTreeMap<String, InternalTopic>,
    pub problem: Option<TopicProblem>,
}

impl ConfiguredTopology {
    /// Ready to be assigned: every topic exists with the partitions it needs.
    pub fn is_ready(&self) -> bool {
        self.problem.is_none()
    }
}

/// Partition counts, known so far or read from the topics that exist.
struct Counts<'a> {
    existing: &'a dyn Fn(&str) -> Option<i32>,
    decided: BTreeMap<String, i32>,
}

impl Counts<'_> {
    /// An existing topic's actual count wins over a decided one.
    fn of(&self, topic: &str) -> Option<i32> {
        (self.existing)(topic).or_else(|| self.decided.get(topic).copied())
    }
}

/// Configures `topology`; `existing` gives the partition count of each topic that exists.
pub fn configure(
    topology: &StreamsTopology,
    existing: &dyn Fn(&str) -> Option<i32>,
) -> Result<ConfiguredTopology, ConfigureError> {
    let unready = |problem| ConfiguredTopology {
        epoch: topology.epoch,
        subtopologies: None,
        to_create: BTreeMap::new(),
        problem: Some(problem),
    };
    let groups = copartition_groups(topology)?;
    if let Some(problem) = missing_source_topics(topology, existing) {
        return Ok(unready(problem));
    }
    let mut counts = Counts {
        existing,
        decided: BTreeMap::new(),
    };
    counts.decided = repartition_counts(topology, &counts)?;
    if let Err(problem) = enforce_copartitioning(topology, &groups, &mut counts) {
        return problem.map(unready);
    }
    let mut subtopologies = BTreeMap::new();
    for subtopology in &topology.subtopologies {
        let configured = configure_subtopology(subtopology, &counts)?;
        if subtopologies
            .insert(subtopology.id.clone(), configured)
            .is_some()
        {
            return Err(ConfigureError::Internal(format!(
                "subtopology {} is declared twice",
                subtopology.id
            )));
        }
    }
    let to_create = match missing_internal_topics(&subtopologies, existing) {
        Ok(to_create) => to_create,
        Err(problem) => return Ok(unready(problem)),
    };
    // Missing internal topics leave the topology configured: they are the ones to create.
    let problem = (!to_create.is_empty()).then(|| TopicProblem {
        status: TopicStatus::MissingInternalTopics,
        detail: format!(
            "Internal topics are missing: {}",
            summarize(to_create.keys().map(String::as_str))
        ),
    });
    Ok(ConfiguredTopology {
        epoch: topology.epoch,
        subtopologies: Some(subtopologies),
        to_create,
        problem,
    })
}

/// Each subtopology's copartition groups as sets of topic names.
fn copartition_groups(
    topology: &StreamsTopology,
) -> Result<Vec<Vec<BTreeSet<String>>>, ConfigureError> {
    let mut all = Vec::new();
    for subtopology in &topology.subtopologies {
        let mut groups = Vec::new();
        for group in &subtopology.copartition_groups {
            let mut names = BTreeSet::new();
            for index in &group.source_topics {
                names.insert(indexed(&subtopology.source_topics, *index, &subtopology.id)?.clone());
            }
            for index in &group.repartition_source_topics {
                let topic = indexed(
                    &subtopology.repartition_source_topics,
                    *index,
                    &subtopology.id,
                )?;
                names.insert(topic.name.clone());
            }
            groups.push(names);
        }
        all.push(groups);
    }
    Ok(all)
}

fn indexed<'a, T>(list: &'a [T], index: i16, subtopology: &str) -> Result<&'a T, ConfigureError> {
    usize::try_from(index)
        .ok()
        .and_then(|index| list.get(index))
        .ok_or_else(|| {
            ConfigureError::Internal(format!(
                "copartition group of subtopology {subtopology} names topic index {index}, beyond its {} topics",
                list.len()
            ))
        })
}

fn missing_source_topics(
    topology: &StreamsTopology,
    existing: &dyn Fn(&str) -> Option<i32>,
) -> Option<TopicProblem> {
    let missing: BTreeSet<&str> = topology
        .subtopologies
        .iter()
        .flat_map(|subtopology| &subtopology.source_topics)
        .filter(|topic| existing(topic).is_none())
        .map(String::as_str)
        .collect();
    (!missing.is_empty()).then(|| TopicProblem {
        status: TopicStatus::MissingSourceTopics,
        detail: format!("Source topics {} are missing.", summarize(missing)),
    })
}

/// The topics a topology needs to exist: its sources, repartition sources and changelogs (those
/// its metadata hash covers).
pub fn required_topics(topology: &StreamsTopology) -> BTreeSet<String> {
    let mut topics = BTreeSet::new();
    for subtopology in &topology.subtopologies {
        topics.extend(subtopology.source_topics.iter().cloned());
        topics.extend(
            subtopology
                .repartition_source_topics
                .iter()
                .map(|t| t.name.clone()),
        );
        topics.extend(
            subtopology
                .state_changelog_topics
                .iter()
                .map(|t| t.name.clone()),
        );
    }
    topics
}

/// Every topic a topology names: the required ones and the repartition topics it writes.
pub fn named_topics(topology: &StreamsTopology) -> BTreeSet<String> {
    let mut topics = required_topics(topology);
    for subtopology in &topology.subtopologies {
        topics.extend(subtopology.repartition_sink_topics.iter().cloned());
    }
    topics
}

/// Kafka's summary of a list of topics: the first three, then how many more.
pub fn summarize<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    match names.len() {
        0 => "<none>".to_owned(),
        1..=3 => names.join(", "),
        n => format!("{} and {} additional topics", names[..3].join(", "), n - 3),
    }
}

/// The partition count of every repartition topic: the client's fixed ones, and each sink's
/// as the most partitions among the inputs of the subtopology writing it, to a fixed point.
fn repartition_counts(
    topology: &StreamsTopology,
    counts: &Counts<'_>,
) -> Result<BTreeMap<String, i32>, ConfigureError> {
    let mut decided: BTreeMap<String, i32> = topology
        .subtopologies
        .iter()
        .flat_map(|subtopology| &subtopology.repartition_source_topics)
        .filter(|topic| topic.partitions != 0)
        .map(|topic| (topic.name.clone(), topic.partitions))
        .collect();
    loop {
        let (mut needed, mut progress) = (false, false);
        for subtopology in &topology.subtopologies {
            for sink in &subtopology.repartition_sink_topics {
                if decided.contains_key(sink) {
                    continue;
                }
                match input_partitions(subtopology, &decided, counts) {
                    Some(count) => {
                        decided.insert(sink.clone(), count);
                        progress = true;
                    }
                    None => needed = true,
                }
            }
        }
        if !needed {
            break;
        }
        if !progress {
            return Err(ConfigureError::InvalidTopology(
                "Failed to compute number of partitions for all repartition topics. There may be loops in the topology that cannot be resolved.".to_owned(),
            ));
        }
    }
    let unfed = topology
        .subtopologies
        .iter()
        .flat_map(|subtopology| &subtopology.repartition_source_topics)
        .any(|topic| !decided.contains_key(&topic.name));
    if unfed {
        return Err(ConfigureError::InvalidTopology(
            "Failed to compute number of partitions for all repartition topics, because a repartition source topic is never used as a sink topic.".to_owned(),
        ));
    }
    Ok(decided)
}

/// The most partitions among a subtopology's inputs known so far.
fn input_partitions(
    subtopology: &Subtopology,
    decided: &BTreeMap<String, i32>,
    counts: &Counts<'_>,
) -> Option<i32> {
    let repartitioned = subtopology
        .repartition_source_topics
        .iter()
        .filter_map(|topic| decided.get(&topic.name).copied());
    let sources = subtopology
        .source_topics
        .iter()
        .filter_map(|topic| (counts.existing)(topic));
    repartitioned.chain(sources).max()
}

/// Copartitioned topics get one count; a disagreement is a problem, not an error, except where
/// Kafka's is an error. `Err(Ok(problem))` is a problem, `Err(Err(error))` an error.
fn enforce_copartitioning(
    topology: &StreamsTopology,
    groups: &[Vec<BTreeSet<String>>],
    counts: &mut Counts<'_>,
) -> Result<(), Result<TopicProblem, ConfigureError>> {
    let repartition: Vec<&TopicInfo> = topology
        .subtopologies
        .iter()
        .flat_map(|subtopology| &subtopology.repartition_source_topics)
        .collect();
    let fixed: BTreeSet<&str> = repartition
        .iter()
        .filter(|topic| topic.partitions != 0)
        .map(|topic| topic.name.as_str())
        .collect();
    let internal: BTreeSet<&str> = repartition
        .iter()
        .map(|topic| topic.name.as_str())
        .collect();
    for group in groups.iter().flatten() {
        let decided = copartition(group, &fixed, &internal, counts)?;
        counts.decided.extend(decided);
    }
    Ok(())
}

fn copartition(
    group: &BTreeSet<String>,
    fixed: &BTreeSet<&str>,
    internal: &BTreeSet<&str>,
    counts: &Counts<'_>,
) -> Result<BTreeMap<String, i32>, Result<TopicProblem, ConfigureError>> {
    let count = |topic: &str| {
        counts.of(topic).ok_or_else(|| {
            Err(ConfigureError::Internal(format!(
                "Number of partitions is not set for topic: {topic}"
            )))
        })
    };
    let mut repartition = BTreeMap::new();
    let mut others = BTreeMap::new();
    for topic in group {
        let target = if internal.contains(topic.as_str()) {
            &mut repartition
        } else {
            &mut others
        };
        target.insert(topic.clone(), count(topic)?);
    }
    let disagree = |counts: &BTreeMap<String, i32>| {
        let listed: Vec<String> = counts.iter().map(|(t, c)| format!("{t}={c}")).collect();
        Ok(TopicProblem {
            status: TopicStatus::IncorrectlyPartitionedTopics,
            detail: format!(
                "Following topics do not have the same number of partitions: [{{{}}}]",
                listed.join(", ")
            ),
        })
    };
    let chosen = if others.is_empty() {
        if let Some(first) = fixed.first() {
            let wanted = count(first)?;
            for topic in fixed {
                if count(topic)? != wanted {
                    return Err(disagree(&repartition));
                }
            }
            wanted
        } else {
            let most = repartition.values().copied().max().unwrap_or(0);
            if most == 0 {
                let names: Vec<&str> = repartition.keys().map(String::as_str).collect();
                return Err(Err(ConfigureError::InvalidTopology(format!(
                    "All topics in the copartition group had undefined partition number: [{}]",
                    names.join(", ")
                ))));
            }
            most
        }
    } else {
        let first = others.values().copied().next().unwrap_or(0);
        if others.values().any(|count| *count != first) {
            return Err(disagree(&others));
        }
        first
    };
    let mut decided = BTreeMap::new();
    for (topic, count) in repartition {
        if fixed.contains(topic.as_str()) && count != chosen {
            return Err(Ok(TopicProblem {
                status: TopicStatus::IncorrectlyPartitionedTopics,
                detail: format!(
                    "Number of partitions [{count}] of repartition topic [{topic}] doesn't match number of partitions [{chosen}] of the source topic."
                ),
            }));
        }
        decided.insert(topic, chosen);
    }
    Ok(decided)
}

fn configure_subtopology(
    subtopology: &Subtopology,
    counts: &Counts<'_>,
) -> Result<ConfiguredSubtopology, ConfigureError> {
    let inputs = subtopology.source_topics.iter().chain(
        subtopology
            .repartition_source_topics
            .iter()
            .map(|topic| &topic.name),
    );
    let mut tasks = None;
    for topic in inputs {
        let count = counts.of(topic).ok_or_else(|| {
            ConfigureError::Internal(format!(
                "Number of partitions must be set for topic {topic}"
            ))
        })?;
        tasks = tasks.max(Some(count));
    }
    let number_of_tasks = tasks.ok_or_else(|| {
        ConfigureError::InvalidTopology(format!(
            "No source topics found for subtopology {}",
            subtopology.id
        ))
    })?;
    if number_of_tasks <= 0 {
        return Err(ConfigureError::Internal(
            "Number of tasks must be positive".to_owned(),
        ));
    }
    let internal = |topics: &[TopicInfo], changelog: bool| {
        let mut configured = BTreeMap::new();
        for topic in topics {
            let partitions = if changelog {
                number_of_tasks
            } else if topic.partitions != 0 {
                topic.partitions
            } else {
                counts.of(&topic.name).unwrap_or(0)
            };
            if partitions < 1 {
                return Err(ConfigureError::Internal(format!(
                    "Number of partitions must be set for topic {}",
                    topic.name
                )));
            }
            configured.insert(topic.name.clone(), internal_topic(topic, partitions));
        }
        Ok(configured)
    };
    Ok(ConfiguredSubtopology {
        number_of_tasks,
        source_topics: subtopology.source_topics.iter().cloned().collect(),
        repartition_sink_topics: subtopology
            .repartition_sink_topics
            .iter()
            .cloned()
            .collect(),
        repartition_source_topics: internal(&subtopology.repartition_source_topics, false)?,
        state_changelog_topics: internal(&subtopology.state_changelog_topics, true)?,
    })
}

fn internal_topic(topic: &TopicInfo, partitions: i32) -> InternalTopic {
    InternalTopic {
        name: topic.name.clone(),
        partitions,
        replication_factor: (topic.replication_factor > 0).then_some(topic.replication_factor),
        configs: topic.configs.iter().cloned().collect(),
    }
}

/// The internal topics that do not exist; a problem when one exists with another count.
fn missing_internal_topics(
    subtopologies: &BTreeMap<String, ConfiguredSubtopology>,
    existing: &dyn Fn(&str) -> Option<i32>,
) -> Result<BTreeMap<String, InternalTopic>, TopicProblem> {
    let mut wanted = BTreeMap::new();
    for subtopology in subtopologies.values() {
        for topic in subtopology
            .repartition_source_topics
            .values()
            .chain(subtopology.state_changelog_topics.values())
        {
            wanted.insert(topic.name.clone(), topic.clone());
        }
    }
    let mut missing = BTreeMap::new();
    for (name, topic) in wanted {
        match existing(&name) {
            None => {
                missing.insert(name, topic);
            }
            Some(actual) if actual != topic.partitions => {
                return Err(TopicProblem {
                    status: TopicStatus::IncorrectlyPartitionedTopics,
                    detail: format!(
                        "Existing topic {name} has different number of partitions: expected {}, found {actual}",
                        topic.partitions
                    ),
                });
            }
            Some(_) => {}
        }
    }
    Ok(missing)
}

#[cfg(test)]
mod tests;
