use std::collections::BTreeMap;

use ferrolog_records::streams_group_records::{
    CopartitionGroup, StreamsTopology, Subtopology, TopicInfo,
};

use super::*;

fn info(name: &str, partitions: i32) -> TopicInfo {
    TopicInfo {
        name: name.to_owned(),
        partitions,
        replication_factor: 0,
        configs: vec![("cleanup.policy".to_owned(), "compact".to_owned())],
    }
}

fn subtopology(id: &str, sources: &[&str]) -> Subtopology {
    Subtopology {
        id: id.to_owned(),
        source_topics: sources.iter().map(|s| (*s).to_owned()).collect(),
        ..Subtopology::default()
    }
}

/// Word count: subtopology 0 reads `input` and writes the repartition topic; subtopology 1
/// reads it and keeps a store.
fn word_count() -> StreamsTopology {
    let mut split = subtopology("0", &["input"]);
    split.repartition_sink_topics = vec!["app-counts-repartition".to_owned()];
    let mut count = subtopology("1", &[]);
    count.repartition_source_topics = vec![info("app-counts-repartition", 0)];
    count.state_changelog_topics = vec![info("app-counts-changelog", 0)];
    StreamsTopology {
        epoch: 0,
        subtopologies: vec![split, count],
    }
}

fn topics(existing: &[(&str, i32)]) -> impl Fn(&str) -> Option<i32> {
    let existing: BTreeMap<String, i32> = existing
        .iter()
        .map(|(name, count)| ((*name).to_owned(), *count))
        .collect();
    move |name| existing.get(name).copied()
}

#[test]
fn missing_source_topics_are_summarized_sorted_three_at_most() {
    let topology = StreamsTopology {
        epoch: 0,
        subtopologies: vec![
            subtopology("0", &["e", "b", "a"]),
            subtopology("1", &["d", "c"]),
        ],
    };
    let configured = configure(&topology, &topics(&[])).unwrap();
    assert_eq!(configured.subtopologies, None);
    assert!(configured.to_create.is_empty());
    assert_eq!(
        configured.problem,
        Some(TopicProblem {
            status: TopicStatus::MissingSourceTopics,
            detail: "Source topics a, b, c and 2 additional topics are missing.".to_owned(),
        })
    );
}

#[test]
fn missing_internal_topics_take_their_counts_from_the_sources_and_are_to_create() {
    let configured = configure(&word_count(), &topics(&[("input", 3)])).unwrap();
    assert_eq!(
        configured.problem,
        Some(TopicProblem {
            status: TopicStatus::MissingInternalTopics,
            detail: "Internal topics are missing: app-counts-changelog, app-counts-repartition"
                .to_owned(),
        })
    );
    let to_create: Vec<(&str, i32)> = configured
        .to_create
        .values()
        .map(|topic| (topic.name.as_str(), topic.partitions))
        .collect();
    assert_eq!(
        to_create,
        [("app-counts-changelog", 3), ("app-counts-repartition", 3)]
    );
    let changelog = &configured.to_create["app-counts-changelog"];
    assert_eq!(changelog.replication_factor, None);
    assert_eq!(changelog.configs["cleanup.policy"], "compact");
    let subtopologies = configured.subtopologies.expect("configured all the same");
    assert_eq!(subtopologies["0"].number_of_tasks, 3);
    assert_eq!(subtopologies["1"].number_of_tasks, 3);
    assert!(subtopologies["1"].is_stateful() && !subtopologies["0"].is_stateful());
}

#[test]
fn a_topology_whose_topics_all_exist_is_ready() {
    let existing = [
        ("input", 3),
        ("app-counts-repartition", 3),
        ("app-counts-changelog", 3),
    ];
    let configured = configure(&word_count(), &topics(&existing)).unwrap();
    assert!(configured.is_ready());
    assert!(configured.to_create.is_empty());
}

#[test]
fn an_existing_internal_topic_with_other_partitions_fails_the_configuration() {
    let existing = [
        ("input", 3),
        ("app-counts-repartition", 3),
        ("app-counts-changelog", 2),
    ];
    let configured = configure(&word_count(), &topics(&existing)).unwrap();
    assert_eq!(configured.subtopologies, None);
    assert_eq!(
        configured.problem,
        Some(TopicProblem {
            status: TopicStatus::IncorrectlyPartitionedTopics,
            detail: "Existing topic app-counts-changelog has different number of partitions: expected 3, found 2".to_owned(),
        })
    );
}

#[test]
fn copartitioned_sources_must_agree() {
    let mut join = subtopology("0", &["left", "right"]);
    join.copartition_groups = vec![CopartitionGroup {
        source_topics: vec![0, 1],
        ..CopartitionGroup::default()
    }];
    let topology = StreamsTopology {
        epoch: 0,
        subtopologies: vec![join],
    };
    let configured = configure(&topology, &topics(&[("left", 2), ("right", 3)])).unwrap();
    assert_eq!(
        configured.problem.unwrap().detail,
        "Following topics do not have the same number of partitions: [{left=2, right=3}]"
    );
    let agreed = configure(&topology, &topics(&[("left", 3), ("right", 3)])).unwrap();
    assert!(agreed.is_ready());
}

#[test]
fn a_repartition_source_nobody_writes_is_an_invalid_topology() {
    let mut orphan = subtopology("0", &[]);
    orphan.repartition_source_topics = vec![info("nobody-writes-this", 0)];
    let topology = StreamsTopology {
        epoch: 0,
        subtopologies: vec![orphan],
    };
    let error = configure(&topology, &topics(&[])).unwrap_err();
    assert!(
        matches!(&error, ConfigureError::InvalidTopology(message) if message.ends_with("is never used as a sink topic.")),
        "{error:?}"
    );
}

#[test]
fn a_repartition_loop_without_inputs_is_an_invalid_topology() {
    let mut first = subtopology("0", &[]);
    first.repartition_source_topics = vec![info("a", 0)];
    first.repartition_sink_topics = vec!["b".to_owned()];
    let mut second = subtopology("1", &[]);
    second.repartition_source_topics = vec![info("b", 0)];
    second.repartition_sink_topics = vec!["a".to_owned()];
    let topology = StreamsTopology {
        epoch: 0,
        subtopologies: vec![first, second],
    };
    let error = configure(&topology, &topics(&[])).unwrap_err();
    assert!(
        matches!(&error, ConfigureError::InvalidTopology(message) if message.contains("loops")),
        "{error:?}"
    );
}

#[test]
fn summaries_follow_kafkas_wording() {
    assert_eq!(summarize([]), "<none>");
    assert_eq!(summarize(["a"]), "a");
    assert_eq!(summarize(["a", "b", "c"]), "a, b, c");
    assert_eq!(
        summarize(["a", "b", "c", "d"]),
        "a, b, c and 1 additional topics"
    );
}
