//! StreamsGroupHeartbeat (KIP-1071): a Kafka Streams member joins with its topology,
//! heartbeats the tasks it owns and hears its assignment, or leaves. Needs READ on the group
//! (GROUP_AUTHORIZATION_FAILED), and, with a topology, DESCRIBE on every topic it names
//! (TOPIC_AUTHORIZATION_FAILED), as Kafka checks them. When the group's internal topics
//! (repartition and changelog topics) are missing, the broker creates them, with the
//! partitions the topology needs and the configs the client declared, if the member may
//! create topics (CREATE on the cluster or on each); what it could not create is told in the
//! MISSING_INTERNAL_TOPICS status, as Kafka tells it.

use std::collections::BTreeSet;

use ferrolog_coordinator::group::streams::assignor::{TaskId, partitions_by_subtopology};
use ferrolog_coordinator::group::streams::reconcile::TaskSets;
use ferrolog_coordinator::group::streams::topology::named_topics;
use ferrolog_coordinator::group::streams::{StreamsAnswer, StreamsHeartbeat, StreamsStatus};
use ferrolog_protocol::messages::StreamsGroupHeartbeatRequest;
use ferrolog_protocol::messages::streams_group_heartbeat_request::{self as request, Topology};
use ferrolog_protocol::messages::streams_group_heartbeat_response::{
    self as response, StreamsGroupHeartbeatResponse,
};
use ferrolog_records::streams_group_records::{
    CopartitionGroup, StreamsTopology, Subtopology, TopicInfo,
};

use super::internal_topics;
use crate::authz::{AclOperation, Asked, ResourceType};
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: StreamsGroupHeartbeatRequest,
) -> StreamsGroupHeartbeatResponse {
    // Before anything else is looked at, as Kafka answers when the protocol is off.
    if !super::streams_served(context) {
        return crate::refuse::Refuse::refused(
            &request,
            asked.version(),
            errors::UNSUPPORTED_VERSION,
        );
    }
    let heartbeat = heartbeat(asked, request);
    if let Some(topology) = &heartbeat.topology
        && let Some(refusal) = topology_refusal(asked, topology)
    {
        return refusal;
    }
    let mut answer = context.groups.streams_heartbeat(heartbeat);
    if !answer.to_create.is_empty() {
        create_internal_topics(context, asked, &mut answer);
    }
    response(answer, asked.version())
}

/// Kafka's checks of the topics a topology names: none internal, every name valid, every one
/// describable.
fn topology_refusal(
    asked: &Asked<'_>,
    topology: &StreamsTopology,
) -> Option<StreamsGroupHeartbeatResponse> {
    let topics = named_topics(topology);
    let refused = |code, message: Option<String>| {
        Some(StreamsGroupHeartbeatResponse {
            error_code: code,
            error_message: message,
            acceptable_recovery_lag: -1,
            ..StreamsGroupHeartbeatResponse::default()
        })
    };
    let internal: Vec<&str> = topics
        .iter()
        .map(String::as_str)
        .filter(|t| internal_topics::is_internal(t))
        .collect();
    if !internal.is_empty() {
        return refused(
            errors::STREAMS_INVALID_TOPOLOGY,
            Some(format!(
                "Use of Kafka internal topics {} in a Kafka Streams topology is prohibited.",
                internal.join(",")
            )),
        );
    }
    let invalid: Vec<&str> = topics
        .iter()
        .map(String::as_str)
        .filter(|t| !errors::is_valid_topic_name(t))
        .collect();
    if !invalid.is_empty() {
        return refused(
            errors::STREAMS_INVALID_TOPOLOGY,
            Some(format!(
                "Topic names {} are not valid topic names.",
                invalid.join(",")
            )),
        );
    }
    if topics
        .iter()
        .any(|t| !asked.may(AclOperation::Describe, ResourceType::Topic, t))
    {
        return refused(errors::TOPIC_AUTHORIZATION_FAILED, None);
    }
    None
}

fn heartbeat(asked: &Asked<'_>, request: StreamsGroupHeartbeatRequest) -> StreamsHeartbeat {
    let lists = [
        &request.active_tasks,
        &request.standby_tasks,
        &request.warmup_tasks,
    ];
    let task_lists_sent = lists.iter().filter(|list| list.is_some()).count() as u8;
    let owned = match (
        &request.active_tasks,
        &request.standby_tasks,
        &request.warmup_tasks,
    ) {
        (Some(active), Some(standby), Some(warmup)) => Some(TaskSets {
            active: tasks(active),
            standby: tasks(standby),
            warmup: tasks(warmup),
        }),
        _ => None,
    };
    let offsets = |list: Option<Vec<request::TaskOffset>>| {
        list.map(|list| {
            list.into_iter()
                .map(|o| (TaskId::new(&o.subtopology_id, o.partition), o.offset))
                .collect()
        })
    };
    StreamsHeartbeat {
        version: asked.version(),
        group_id: request.group_id,
        member_id: request.member_id,
        member_epoch: request.member_epoch,
        endpoint_epoch: request.endpoint_information_epoch,
        instance_id: request.instance_id,
        rack_id: request.rack_id,
        rebalance_timeout_ms: request.rebalance_timeout_ms,
        topology: request.topology.map(topology),
        owned,
        task_lists_sent,
        process_id: request.process_id,
        user_endpoint: request.user_endpoint.map(|e| (e.host, e.port)),
        client_tags: request
            .client_tags
            .map(|tags| tags.into_iter().map(|t| (t.key, t.value)).collect()),
        task_offsets: offsets(request.task_offsets),
        task_end_offsets: offsets(request.task_end_offsets),
        shutdown_application: request.shutdown_application,
        client_id: asked
            .header()
            .client_id
            .as_deref()
            .unwrap_or_default()
            .to_owned(),
        client_host: format!("/{}", asked.session().host()),
    }
}

fn tasks(list: &[request::TaskIds]) -> BTreeSet<TaskId> {
    list.iter()
        .flat_map(|ids| {
            ids.partitions
                .iter()
                .map(|p| TaskId::new(&ids.subtopology_id, *p))
        })
        .collect()
}

/// The request's topology as the group's record keeps it.
fn topology(topology: Topology) -> StreamsTopology {
    let info = |topic: request::TopicInfo| TopicInfo {
        name: topic.name,
        partitions: topic.partitions,
        replication_factor: topic.replication_factor,
        configs: topic
            .topic_configs
            .into_iter()
            .map(|c| (c.key, c.value))
            .collect(),
    };
    StreamsTopology {
        epoch: topology.epoch,
        subtopologies: topology
            .subtopologies
            .into_iter()
            .map(|s| Subtopology {
                id: s.subtopology_id,
                source_topics: s.source_topics,
                source_topic_regex: s.source_topic_regex,
                state_changelog_topics: s.state_changelog_topics.into_iter().map(info).collect(),
                repartition_sink_topics: s.repartition_sink_topics,
                repartition_source_topics: s
                    .repartition_source_topics
                    .into_iter()
                    .map(info)
                    .collect(),
                copartition_groups: s
                    .copartition_groups
                    .into_iter()
                    .map(|g| CopartitionGroup {
                        source_topics: g.source_topics,
                        source_topic_regex: g.source_topic_regex,
                        repartition_source_topics: g.repartition_source_topics,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Creates the group's missing internal topics if the member may, and adds to the
/// MISSING_INTERNAL_TOPICS status what could not be created.
fn create_internal_topics(context: &Context, asked: &Asked<'_>, answer: &mut StreamsAnswer) {
    let topics = std::mem::take(&mut answer.to_create);
    let unauthorized: Vec<&str> = topics
        .keys()
        .map(String::as_str)
        .filter(|topic| !super::metadata::may_create(context, asked, topic))
        .collect();
    let note = if unauthorized.is_empty() {
        let mut failed = Vec::new();
        for topic in topics.values() {
            let configs = topic.configs.clone().into_iter().collect();
            let replication = topic.replication_factor.unwrap_or(-1);
            match super::create_topics::create_for_group(
                context,
                &topic.name,
                (topic.partitions, replication),
                configs,
            ) {
                Ok(_) => {
                    tracing::info!(group = %answer.member_id, topic = %topic.name, partitions = topic.partitions, "created a streams group's internal topic")
                }
                // Another member's heartbeat created it a moment ago: it is there.
                Err((code, _)) if code == errors::TOPIC_ALREADY_EXISTS => {}
                Err((_, message)) => failed.push(format!("{} ({message})", topic.name)),
            }
        }
        if failed.is_empty() {
            return;
        }
        let shown = failed.iter().take(3).cloned().collect::<Vec<_>>().join(",");
        let more = if failed.len() > 3 {
            format!(" and {} more", failed.len() - 3)
        } else {
            String::new()
        };
        format!("Creation failed: {shown}{more}.")
    } else {
        format!(
            "Unauthorized to CREATE on topics {}.",
            unauthorized.join(",")
        )
    };
    match answer
        .statuses
        .iter_mut()
        .find(|(s, _)| *s == StreamsStatus::MissingInternalTopics)
    {
        Some((_, detail)) => *detail = format!("{detail}; {note}"),
        None => answer
            .statuses
            .push((StreamsStatus::MissingInternalTopics, note)),
    }
}

fn task_ids(tasks: &BTreeSet<TaskId>) -> Vec<response::TaskIds> {
    partitions_by_subtopology(tasks)
        .into_iter()
        .map(|(subtopology_id, partitions)| response::TaskIds {
            subtopology_id,
            partitions,
        })
        .collect()
}

fn response(answer: StreamsAnswer, _version: i16) -> StreamsGroupHeartbeatResponse {
    let topic_partitions = |by_topic: std::collections::BTreeMap<String, Vec<i32>>| {
        by_topic
            .into_iter()
            .map(|(topic, partitions)| response::TopicPartition { topic, partitions })
            .collect()
    };
    StreamsGroupHeartbeatResponse {
        throttle_time_ms: 0,
        error_code: answer.error,
        error_message: answer.message,
        member_id: answer.member_id,
        member_epoch: answer.member_epoch,
        heartbeat_interval_ms: answer.heartbeat_interval_ms,
        acceptable_recovery_lag_legacy: 0,
        task_offset_interval_ms: answer.task_offset_interval_ms,
        acceptable_recovery_lag: answer.acceptable_recovery_lag,
        status: Some(
            answer
                .statuses
                .into_iter()
                .map(|(code, detail)| response::Status {
                    status_code: code as i8,
                    status_detail: detail,
                })
                .collect(),
        ),
        active_tasks: answer.tasks.as_ref().map(|t| task_ids(&t.active)),
        standby_tasks: answer.tasks.as_ref().map(|t| task_ids(&t.standby)),
        warmup_tasks: answer.tasks.as_ref().map(|t| task_ids(&t.warmup)),
        topology_description_required: false,
        endpoint_information_epoch: answer.endpoint_epoch,
        partitions_by_user_endpoint: answer.partitions_by_endpoint.map(|all| {
            all.into_iter()
                .map(|e| response::EndpointToPartitions {
                    user_endpoint: response::Endpoint {
                        host: e.endpoint.0,
                        port: e.endpoint.1,
                    },
                    active_partitions: topic_partitions(e.active),
                    standby_partitions: topic_partitions(e.standby),
                })
                .collect()
        }),
    }
}

impl crate::refuse::Refuse for StreamsGroupHeartbeatRequest {
    fn refused(&self, _version: i16, code: i16) -> StreamsGroupHeartbeatResponse {
        StreamsGroupHeartbeatResponse {
            error_code: code,
            acceptable_recovery_lag: -1,
            ..StreamsGroupHeartbeatResponse::default()
        }
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use ferrolog_protocol::messages::StreamsGroupHeartbeatRequest;

    use crate::probes::Probed;

    impl Probed for StreamsGroupHeartbeatRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request = StreamsGroupHeartbeatRequest {
                group_id: group.to_owned(),
                member_id: "nobody".to_owned(),
                member_epoch: 1,
                ..StreamsGroupHeartbeatRequest::default()
            };
            (1, request)
        }
    }
}
