//! CreateTopics: partitions on this node (replication factor 1), topic configs validated with
//! the storage's own rules and applied to the new logs; `validate_only` checks without creating.
//! A manual replica assignment is checked as Kafka's controller checks it (this node's id
//! alone in each list, partitions 0 to n-1, count and factor left at -1) and gives the count.
//! A topic is created whole or not at all.
//!
//! Needs CREATE on the cluster or on each topic (TOPIC_AUTHORIZATION_FAILED, checked first); a
//! created topic's partition count, replication factor and configs are told only with
//! DESCRIBE_CONFIGS on it (otherwise its config error is TOPIC_AUTHORIZATION_FAILED).

use std::collections::BTreeMap;

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use ferrolog_storage::TopicPartition;

use super::{internal_topics, partitions_of, replica_assignment, throttling};
use crate::authz::Asked;
use crate::authz::{AclOperation, ResourceType};
use crate::quotas::mutations::Mutations;
use crate::{Context, errors};

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: CreateTopicsRequest,
) -> CreateTopicsResponse {
    let version = asked.version();
    let default_partitions = context.config.num_partitions;
    // Only the topics the session may create count, as Kafka counts them.
    let creatable: Vec<bool> = request
        .topics
        .iter()
        .map(|topic| super::metadata::may_create(context, asked, &topic.name.0))
        .collect();
    let requested: i64 = request
        .topics
        .iter()
        .zip(&creatable)
        .filter(|(_, creatable)| **creatable)
        .map(|(topic, _)| match topic.num_partitions {
            _ if !topic.assignments.is_empty() => topic.assignments.len() as i64,
            -1 => i64::from(default_partitions),
            count if count > 0 => i64::from(count),
            _ => 0,
        })
        .sum();
    // As Kafka: a request creating too many partitions is refused whole, every topic alike.
    let too_many = requested > errors::MAX_PARTITIONS_PER_REQUEST;
    let mut quota = throttling::mutations(context, asked, STRICT_QUOTA_FROM);
    let topics = request
        .topics
        .into_iter()
        .zip(creatable)
        .map(|(topic, creatable)| {
            let name = topic.name.0.to_string();
            let (shape, overrides) = asked_shape(&topic);
            let outcome = if !creatable {
                // Before anything about the topic is looked at: the answer does not tell
                // whether it exists.
                Err((
                    errors::TOPIC_AUTHORIZATION_FAILED,
                    "Authorization failed.".to_owned(),
                ))
            } else if too_many {
                Err((
                    errors::POLICY_VIOLATION,
                    errors::TOO_MANY_PARTITIONS_PER_REQUEST.to_owned(),
                ))
            } else {
                let made = Made {
                    validate_only: request.validate_only,
                    quota: Some(&mut quota),
                };
                create(context, &name, &shape, overrides, made)
            };
            answer(context, asked, version, topic.name, outcome)
        })
        .collect();
    let throttle = throttling::mutated(asked.session(), &quota);
    CreateTopicsResponse::default()
        .with_topics(topics)
        .with_throttle_time_ms(throttle)
}

/// The first version whose topics are refused once the client's controller mutation quota is
/// spent (older ones are only throttled), as in Kafka.
const STRICT_QUOTA_FROM: i16 = 6;

/// How a topic is made: checked only, or created; counted against a quota or not (a topic
/// the broker makes for a group is not).
struct Made<'q, 'a> {
    validate_only: bool,
    quota: Option<&'q mut Mutations<'a>>,
}

/// The shape and the configs a topic of the request asks for.
fn asked_shape(topic: &CreatableTopic) -> (Shape, BTreeMap<String, String>) {
    let assignments: Vec<(i32, Vec<i32>)> = topic
        .assignments
        .iter()
        .map(|a| {
            (
                a.partition_index,
                a.broker_ids.iter().map(|id| id.0).collect(),
            )
        })
        .collect();
    let shape = Shape {
        num_partitions: topic.num_partitions,
        replication_factor: topic.replication_factor,
        assignments,
    };
    let overrides: BTreeMap<String, String> = topic
        .configs
        .iter()
        .filter_map(|config| {
            config
                .value
                .as_ref()
                .map(|value| (config.name.to_string(), value.to_string()))
        })
        .collect();
    (shape, overrides)
}

/// The answer for one topic: the error of a refusal, or what was made of it, told only to a
/// session that may describe its configs.
fn answer(
    context: &Context,
    asked: &Asked<'_>,
    version: i16,
    topic: TopicName,
    outcome: Result<i32, (i16, String)>,
) -> CreatableTopicResult {
    let name = topic.0.to_string();
    let mut result = CreatableTopicResult::default().with_name(topic);
    let partitions = match outcome {
        Ok(partitions) => partitions,
        Err(_) => -1,
    };
    if let Err((code, message)) = outcome {
        // Every version served (2 and later) carries the message; Kafka's for a spent quota
        // is its error's own text, which it leaves out.
        let message = (code != errors::THROTTLING_QUOTA_EXCEEDED).then_some(message);
        result = result
            .with_error_code(code)
            .with_error_message(message.map(StrBytes::from_string));
    } else if version >= 5 && !asked.may(AclOperation::DescribeConfigs, ResourceType::Topic, &name)
    {
        // Created, but its settings are not told to who may not describe them.
        result = result.with_topic_config_error_code(errors::TOPIC_AUTHORIZATION_FAILED);
        if version >= 7
            && let Some(id) = context.manager.topic_id(&name)
        {
            result = result.with_topic_id(uuid::Uuid::from_bytes(id.0));
        }
    } else if version >= 5 {
        result = result
            .with_num_partitions(partitions)
            .with_replication_factor(1);
        if version >= 7
            && let Some(id) = context.manager.topic_id(&result.name.0)
        {
            result = result.with_topic_id(uuid::Uuid::from_bytes(id.0));
        }
    }
    result
}

/// What a topic asks to be made of: a count and a replication factor, or a manual
/// assignment (with both left at -1).
struct Shape {
    num_partitions: i32,
    replication_factor: i16,
    /// `(partition, replicas)` in request order; empty without one.
    assignments: Vec<(i32, Vec<i32>)>,
}

impl Shape {
    /// The partition count, or the topic's error: a manual assignment decides it (on one node,
    /// each list is this node's id), else the count asked for or `num.partitions`.
    fn partitions(&self, context: &Context) -> Result<i32, (i16, String)> {
        if !self.assignments.is_empty() {
            return replica_assignment::new_topic_partitions(
                &self.assignments,
                self.num_partitions,
                self.replication_factor,
                context.manager.node_id(),
            );
        }
        // The factor first, then the count, in Kafka's order.
        if self.replication_factor != 1 && self.replication_factor != -1 {
            return Err((
                errors::INVALID_REPLICATION_FACTOR,
                format!(
                    "replication factor {}: this broker is a single node",
                    self.replication_factor
                ),
            ));
        }
        let partitions = match self.num_partitions {
            -1 => context.config.num_partitions,
            count => count,
        };
        if partitions <= 0 {
            return Err((
                errors::INVALID_PARTITIONS,
                format!("{partitions} partitions"),
            ));
        }
        Ok(partitions)
    }
}

/// Creates a topic the broker makes for a client (a streams group's internal topics): as
/// CreateTopics would, with the partitions and replication factor given (-1: the broker's) and
/// the client's `configs`.
pub(crate) fn create_for_group(
    context: &Context,
    name: &str,
    (partitions, replication_factor): (i32, i16),
    configs: BTreeMap<String, String>,
) -> Result<i32, (i16, String)> {
    let shape = Shape {
        num_partitions: partitions,
        replication_factor,
        assignments: Vec::new(),
    };
    let made = Made {
        validate_only: false,
        quota: None,
    };
    create(context, name, &shape, configs, made)
}

/// Creates the topic (or, `validate_only`, checks it could be); its partition count.
fn create(
    context: &Context,
    name: &str,
    shape: &Shape,
    overrides: BTreeMap<String, String>,
    made: Made<'_, '_>,
) -> Result<i32, (i16, String)> {
    if !errors::is_valid_topic_name(name) {
        return Err((
            errors::INVALID_TOPIC_EXCEPTION,
            format!("{name:?} is not a valid topic name"),
        ));
    }
    if !partitions_of(context, name).is_empty() {
        return Err((
            errors::TOPIC_ALREADY_EXISTS,
            format!("topic {name} already exists"),
        ));
    }
    if let Some(refusal) = internal_topics::creation_refusal(name) {
        return Err(refusal);
    }
    for (key, value) in &overrides {
        super::kafka_minimum(key, value)?;
    }
    context
        .manager
        .topic_configs()
        .validate(name, &overrides)
        .map_err(|error| (errors::INVALID_CONFIG, error.to_string()))?;
    let partitions = shape.partitions(context)?;
    context
        .manager
        .check_room_for(partitions as usize)
        .map_err(|error| (errors::code_of(&error), error.to_string()))?;
    // Counted once the topic passed its checks, validate-only too, as Kafka counts it.
    if let Some(quota) = made.quota
        && !quota.admit(partitions as usize, throttling::now_ms(context))
    {
        return Err((errors::THROTTLING_QUOTA_EXCEEDED, String::new()));
    }
    if made.validate_only {
        return Ok(partitions);
    }
    context
        .manager
        .topic_configs()
        .set(name, overrides)
        .map_err(|error| (errors::INVALID_CONFIG, error.to_string()))?;
    let all: Vec<TopicPartition> = (0..partitions)
        .map(|partition| TopicPartition::new(name, partition))
        .collect();
    if let Err(error) = context.manager.create_all(&all) {
        // Nothing of the topic is left, its settings included, as Kafka leaves nothing of a
        // topic it could not create.
        if let Err(forgetting) = context.manager.topic_configs().forget(name) {
            tracing::warn!(topic = name, error = %forgetting, "could not forget the settings of a topic not created");
        }
        return Err((errors::code_of(&error), error.to_string()));
    }
    tracing::info!(topic = name, partitions, "created topic");
    Ok(partitions)
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::{CreateTopicsRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for CreateTopicsRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            let request = CreateTopicsRequest::default()
                .with_validate_only(true)
                .with_topics(vec![
                    CreatableTopic::default()
                        .with_name(TopicName(text(&format!("{topic}-new"))))
                        .with_num_partitions(1)
                        .with_replication_factor(1),
                ]);
            (7, request)
        }
    }
}
