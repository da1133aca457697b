//! StreamsGroupDescribe (KIP-1071): streams groups with their epochs, topology and members'
//! current and target tasks. DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED on that
//! group); a group whose topology names a topic the session may not describe is answered
//! TOPIC_AUTHORIZATION_FAILED without members or topology, as Kafka answers it.

use std::collections::BTreeSet;

use ferrolog_coordinator::group::streams::assignor::{TaskId, partitions_by_subtopology};
use ferrolog_coordinator::group::streams::reconcile::TaskSets;
use ferrolog_coordinator::group::streams::topology::named_topics;
use ferrolog_coordinator::group::streams::{DescribedStreamsGroup, DescribedStreamsMember};
use ferrolog_protocol::messages::StreamsGroupDescribeRequest;
use ferrolog_protocol::messages::streams_group_describe_response::{
    Assignment, DescribedGroup, Endpoint, KeyValue, Member, StreamsGroupDescribeResponse,
    Subtopology, TaskIds, TaskOffset, TopicInfo, Topology,
};

use crate::authz::{AclOperation, Asked, ResourceType};
use crate::{Context, errors};

/// The assignor streams groups use (Kafka's `group.streams.assignors` default).
const ASSIGNOR: &str = "sticky";

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: StreamsGroupDescribeRequest,
) -> StreamsGroupDescribeResponse {
    let version = asked.version();
    let groups = request
        .group_ids
        .into_iter()
        .map(|group_id| {
            let refused = |code, message: Option<&str>| DescribedGroup {
                error_code: code,
                error_message: message.map(str::to_owned),
                group_id: group_id.clone(),
                ..DescribedGroup::default()
            };
            if !super::streams_served(context) {
                return refused(errors::UNSUPPORTED_VERSION, None);
            }
            if !asked.allows(ResourceType::Group, &group_id) {
                return refused(errors::GROUP_AUTHORIZATION_FAILED, None);
            }
            let group = context.groups.describe_streams_group(&group_id);
            if group.error != errors::NONE {
                return DescribedGroup {
                    group_state: group.state.to_owned(),
                    ..refused(group.error, group.message.as_deref())
                };
            }
            if group
                .topology
                .as_ref()
                .map(named_topics)
                .unwrap_or_default()
                .iter()
                .any(|topic| !asked.may(AclOperation::Describe, ResourceType::Topic, topic))
            {
                return refused(
                    errors::TOPIC_AUTHORIZATION_FAILED,
                    Some("The described group uses topics that the client is not authorized to describe."),
                );
            }
            let operations = if request.include_authorized_operations {
                asked.authorized_operations(ResourceType::Group, &group_id)
            } else {
                i32::MIN
            };
            let mut described = filled(group, version);
            described.authorized_operations = operations;
            // Asked for a topology description, a broker without the plugin that keeps them
            // says it holds none (NOT_STORED).
            described.topology_description_status = i8::from(request.include_topology_description);
            described
        })
        .collect();
    StreamsGroupDescribeResponse {
        throttle_time_ms: 0,
        groups,
    }
}

fn filled(group: DescribedStreamsGroup, version: i16) -> DescribedGroup {
    let info = |topic: &ferrolog_records::streams_group_records::TopicInfo| TopicInfo {
        name: topic.name.clone(),
        partitions: topic.partitions,
        replication_factor: topic.replication_factor,
        topic_configs: topic
            .configs
            .iter()
            .map(|(key, value)| KeyValue {
                key: key.clone(),
                value: value.clone(),
            })
            .collect(),
    };
    let topology = group.topology.as_ref().map(|topology| Topology {
        epoch: topology.epoch,
        subtopologies: Some(
            topology
                .subtopologies
                .iter()
                .map(|s| Subtopology {
                    subtopology_id: s.id.clone(),
                    source_topics: s.source_topics.clone(),
                    repartition_sink_topics: s.repartition_sink_topics.clone(),
                    state_changelog_topics: s.state_changelog_topics.iter().map(info).collect(),
                    repartition_source_topics: s
                        .repartition_source_topics
                        .iter()
                        .map(info)
                        .collect(),
                })
                .collect(),
        ),
    });
    DescribedGroup {
        group_id: group.group_id,
        group_state: group.state.to_owned(),
        group_epoch: group.group_epoch,
        assignment_epoch: group.assignment_epoch,
        topology,
        members: group.members.into_iter().map(member).collect(),
        assignor_name: (version >= 1).then(|| ASSIGNOR.to_owned()),
        ..DescribedGroup::default()
    }
}

fn member(member: DescribedStreamsMember) -> Member {
    let offsets = |list: Vec<(String, i32, i64)>| {
        list.into_iter()
            .map(|(subtopology_id, partition, offset)| TaskOffset {
                subtopology_id,
                partition,
                offset,
            })
            .collect()
    };
    Member {
        member_id: member.member_id,
        member_epoch: member.member_epoch,
        instance_id: member.instance_id,
        rack_id: member.rack_id,
        client_id: member.client_id,
        client_host: member.client_host,
        topology_epoch: member.topology_epoch,
        process_id: member.process_id,
        user_endpoint: member
            .user_endpoint
            .map(|(host, port)| Endpoint { host, port }),
        client_tags: member
            .client_tags
            .into_iter()
            .map(|(key, value)| KeyValue { key, value })
            .collect(),
        task_offsets: offsets(member.task_offsets),
        task_end_offsets: offsets(member.task_end_offsets),
        assignment: assignment(&member.assignment),
        target_assignment: assignment(&member.target),
        is_classic: false,
    }
}

fn assignment(tasks: &TaskSets) -> Assignment {
    Assignment {
        active_tasks: task_ids(&tasks.active),
        standby_tasks: task_ids(&tasks.standby),
        warmup_tasks: task_ids(&tasks.warmup),
    }
}

fn task_ids(tasks: &BTreeSet<TaskId>) -> Vec<TaskIds> {
    partitions_by_subtopology(tasks)
        .into_iter()
        .map(|(subtopology_id, partitions)| TaskIds {
            subtopology_id,
            partitions,
        })
        .collect()
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use ferrolog_protocol::messages::StreamsGroupDescribeRequest;

    use crate::probes::Probed;

    impl Probed for StreamsGroupDescribeRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request = StreamsGroupDescribeRequest {
                group_ids: vec![group.to_owned()],
                ..StreamsGroupDescribeRequest::default()
            };
            (1, request)
        }
    }
}
