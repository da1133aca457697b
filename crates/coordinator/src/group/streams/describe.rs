//! StreamsGroupDescribe: a streams group as Kafka 4.4 describes it, its topology as configured
//! against the topics when it is ready (real partition counts), else as its members declared it.

use ferrolog_records::streams_group_records::{StreamsTopology, Subtopology, TopicInfo};

use super::answer::assigned_sets;
use super::model::StreamsGroup;
use super::reconcile::TaskSets;
use super::topology::{ConfiguredSubtopology, InternalTopic};
use crate::errors;
use crate::group::GroupCoordinator;

/// A described streams group; `error` is set for a missing group or one of another kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribedStreamsGroup {
    pub error: i16,
    pub message: Option<String>,
    pub group_id: String,
    pub state: &'static str,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub topology: Option<StreamsTopology>,
    pub members: Vec<DescribedStreamsMember>,
}

/// One described member.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribedStreamsMember {
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub topology_epoch: i32,
    pub process_id: String,
    pub user_endpoint: Option<(String, u16)>,
    pub client_tags: Vec<(String, String)>,
    pub task_offsets: Vec<(String, i32, i64)>,
    pub task_end_offsets: Vec<(String, i32, i64)>,
    pub assignment: TaskSets,
    pub target: TaskSets,
}

impl GroupCoordinator {
    /// Whether streams groups are served (`streams` in `group.coordinator.rebalance.protocols`).
    pub fn streams_enabled(&self) -> bool {
        self.config.streams.enabled
    }

    /// StreamsGroupDescribe of `group_id`.
    pub fn describe_streams_group(&self, group_id: &str) -> DescribedStreamsGroup {
        let refused = |error, message: Option<String>| DescribedStreamsGroup {
            error,
            message,
            group_id: group_id.to_owned(),
            state: "Dead",
            ..DescribedStreamsGroup::default()
        };
        if group_id.is_empty() {
            return refused(errors::INVALID_GROUP_ID, None);
        }
        let partition = self.partition_of(group_id);
        self.runtime
            .read(partition, |shard| match shard.groups.get(group_id) {
                None => refused(
                    errors::GROUP_ID_NOT_FOUND,
                    Some(format!("Group {group_id} not found.")),
                ),
                Some(group) => match group.streams.as_deref() {
                    None => refused(
                        errors::GROUP_ID_NOT_FOUND,
                        Some(format!("Group {group_id} is not a streams group.")),
                    ),
                    Some(streams) => describe(streams),
                },
            })
    }
}

fn describe(group: &StreamsGroup) -> DescribedStreamsGroup {
    let members = group
        .members
        .values()
        .map(|member| {
            let offsets = |map: &std::collections::BTreeMap<super::assignor::TaskId, i64>| {
                map.iter()
                    .map(|(task, offset)| (task.subtopology.clone(), task.partition, *offset))
                    .collect()
            };
            let metadata = &member.metadata;
            DescribedStreamsMember {
                member_id: member.member_id.clone(),
                member_epoch: member.current.member_epoch,
                instance_id: metadata.instance_id.clone(),
                rack_id: metadata.rack_id.clone(),
                client_id: metadata.client_id.clone(),
                client_host: metadata.client_host.clone(),
                topology_epoch: metadata.topology_epoch,
                process_id: metadata.process_id.clone(),
                user_endpoint: metadata.user_endpoint.clone(),
                client_tags: metadata.client_tags.clone(),
                task_offsets: offsets(&member.task_offsets),
                task_end_offsets: offsets(&member.task_end_offsets),
                assignment: assigned_sets(member),
                target: group
                    .target
                    .get(&member.member_id)
                    .cloned()
                    .unwrap_or_default(),
            }
        })
        .collect();
    DescribedStreamsGroup {
        group_id: group.id.clone(),
        state: group.state().name(),
        group_epoch: group.group_epoch,
        assignment_epoch: group.assignment_epoch,
        topology: described_topology(group),
        members,
        ..DescribedStreamsGroup::default()
    }
}

/// The configured topology when ready, else the declared one, lists sorted.
fn described_topology(group: &StreamsGroup) -> Option<StreamsTopology> {
    let declared = group.topology.as_ref()?;
    let configured = group
        .configured
        .as_ref()
        .filter(|c| c.is_ready())
        .and_then(|c| c.subtopologies.as_ref());
    let subtopologies = match configured {
        Some(configured) => configured
            .iter()
            .map(|(id, s)| configured_subtopology(id, s))
            .collect(),
        None => {
            let mut subtopologies: Vec<Subtopology> =
                declared.subtopologies.iter().map(sorted).collect();
            subtopologies.sort_by(|a, b| a.id.cmp(&b.id));
            subtopologies
        }
    };
    Some(StreamsTopology {
        epoch: declared.epoch,
        subtopologies,
    })
}

fn configured_subtopology(id: &str, subtopology: &ConfiguredSubtopology) -> Subtopology {
    let info = |topic: &InternalTopic| TopicInfo {
        name: topic.name.clone(),
        partitions: topic.partitions,
        replication_factor: topic.replication_factor.unwrap_or(0),
        configs: topic
            .configs
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    };
    Subtopology {
        id: id.to_owned(),
        source_topics: subtopology.source_topics.iter().cloned().collect(),
        repartition_sink_topics: subtopology
            .repartition_sink_topics
            .iter()
            .cloned()
            .collect(),
        state_changelog_topics: subtopology
            .state_changelog_topics
            .values()
            .map(info)
            .collect(),
        repartition_source_topics: subtopology
            .repartition_source_topics
            .values()
            .map(info)
            .collect(),
        ..Subtopology::default()
    }
}

fn sorted(subtopology: &Subtopology) -> Subtopology {
    let mut copy = subtopology.clone();
    copy.source_topics.sort();
    copy.repartition_sink_topics.sort();
    copy.state_changelog_topics
        .sort_by(|a, b| a.name.cmp(&b.name));
    copy.repartition_source_topics
        .sort_by(|a, b| a.name.cmp(&b.name));
    for topic in copy
        .state_changelog_topics
        .iter_mut()
        .chain(&mut copy.repartition_source_topics)
    {
        topic.configs.sort();
    }
    copy
}
