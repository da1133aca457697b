//! What ShareFetch and ShareAcknowledge share: the member id check, the topics a session names
//! (known, and readable by the session), acknowledgements checked and applied, and a session's
//! end releasing what its member holds.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrolog_coordinator::share_partition::{AckBatch, Limits, check_ack_batches};
use ferrolog_coordinator::share_state::ShareKey;
use ferrolog_storage::manager::TopicId;

use crate::authz::{Asked, ResourceType};
use crate::share_partitions::ShareSettings;
use crate::share_sessions::SessionPartition;
use crate::{Context, errors};

/// A partition by topic id.
pub type PartitionKey = SessionPartition;

/// The longest member id Kafka accepts (a UUID's text).
const MAX_MEMBER_ID_CHARS: usize = 36;

/// The member id, if Kafka's broker would take it: 1 to 36 characters.
pub fn valid_member(member: Option<&str>) -> Option<String> {
    member
        .filter(|m| !m.is_empty() && m.encode_utf16().count() <= MAX_MEMBER_ID_CHARS)
        .map(str::to_owned)
}

/// The topics a request names: each one's name, or why it may not be used.
#[derive(Debug, Default)]
pub struct Access {
    topics: BTreeMap<TopicId, Result<String, i16>>,
}

impl Access {
    /// Looks each of `ids` up and asks READ on the topics that exist, as Kafka asks it.
    pub fn check(
        context: &Context,
        asked: &Asked<'_>,
        ids: impl IntoIterator<Item = TopicId>,
    ) -> Self {
        let mut topics = BTreeMap::new();
        for id in ids {
            topics
                .entry(id)
                .or_insert_with(|| match context.manager.topic_with_id(id) {
                    None => Err(errors::UNKNOWN_TOPIC_ID),
                    Some(name) if !asked.allows(ResourceType::Topic, &name) => {
                        Err(errors::TOPIC_AUTHORIZATION_FAILED)
                    }
                    Some(name) => Ok(name),
                });
        }
        Self { topics }
    }

    pub fn refusal(&self, id: TopicId) -> Option<i16> {
        match self.topics.get(&id) {
            Some(Ok(_)) => None,
            Some(Err(code)) => Some(*code),
            None => Some(errors::UNKNOWN_TOPIC_ID),
        }
    }

    pub fn name(&self, id: TopicId) -> Option<&str> {
        self.topics.get(&id).and_then(|topic| topic.as_deref().ok())
    }
}

/// What `group`'s share partitions follow: its own `share.*` configs, else the broker's
/// `group.share.*` settings.
pub fn share_settings(context: &Context, group: &str) -> ShareSettings {
    let own = context.groups.share_settings(group);
    ShareSettings {
        limits: Limits {
            delivery_count_limit: own.delivery_count_limit,
            lock_duration_ms: i64::from(own.lock_duration_ms),
            max_in_flight: i64::from(own.max_record_locks),
            renew_enabled: own.renew_enabled,
        },
        read_committed: own.read_committed,
        offset_reset: own.offset_reset,
    }
}

/// The acknowledgement batches of a request, whatever message they came in.
pub fn ack_batches<B: AckSource>(batches: &[B]) -> Vec<AckBatch> {
    batches.iter().map(AckSource::to_batch).collect()
}

/// A request's acknowledgement batch (ShareFetch's and ShareAcknowledge's are alike).
pub trait AckSource {
    fn to_batch(&self) -> AckBatch;
}

impl AckSource for ferrolog_protocol::messages::share_fetch_request::AcknowledgementBatch {
    fn to_batch(&self) -> AckBatch {
        AckBatch {
            first: self.first_offset,
            last: self.last_offset,
            types: self.acknowledge_types.clone(),
        }
    }
}

impl AckSource for ferrolog_protocol::messages::share_acknowledge_request::AcknowledgementBatch {
    fn to_batch(&self) -> AckBatch {
        AckBatch {
            first: self.first_offset,
            last: self.last_offset,
            types: self.acknowledge_types.clone(),
        }
    }
}

/// Checks and applies each partition's acknowledgements; the error of each partition.
pub async fn acknowledge_all(
    context: &Arc<Context>,
    asked: &Asked<'_>,
    access: &Access,
    group: &str,
    member: &str,
    acks: Vec<(PartitionKey, Vec<AckBatch>)>,
    renewing: bool,
) -> Vec<(PartitionKey, i16)> {
    let version = asked.version();
    let mut results = Vec::new();
    let mut valid = Vec::new();
    for (partition, batches) in acks {
        if !check_ack_batches(&batches, version, renewing) {
            results.push((partition, errors::INVALID_REQUEST));
        } else if let Some(code) = access.refusal(partition.0) {
            results.push((partition, code));
        } else {
            valid.push((partition, batches));
        }
    }
    let (context, group, member) = (Arc::clone(context), group.to_owned(), member.to_owned());
    let applied = crate::bridge::blocking(move || {
        let now = context.manager.clock().now_ms();
        valid
            .into_iter()
            .map(|(partition, batches)| {
                let key = ShareKey::new(&group, partition.0, partition.1);
                let code = context.shares.acknowledge(
                    context.groups.share_state(),
                    &key,
                    &member,
                    &batches,
                    now,
                );
                (partition, code)
            })
            .collect::<Vec<_>>()
    })
    .await;
    results.extend(applied.unwrap_or_default());
    results
}

/// Ends the session of `key` and releases what its member holds in the session's partitions
/// and in `partitions` (those the closing request named), as Kafka releases a session's.
pub async fn release_session(
    context: &Arc<Context>,
    key: &(String, String),
    partitions: &[PartitionKey],
) {
    let mut all = context.share_sessions.close(key).unwrap_or_default();
    all.extend(
        partitions
            .iter()
            .filter(|p| !all.contains(p))
            .copied()
            .collect::<Vec<_>>(),
    );
    let keys: Vec<ShareKey> = all
        .iter()
        .map(|p| ShareKey::new(&key.0, p.0, p.1))
        .collect();
    let (context, member, group) = (Arc::clone(context), key.1.clone(), key.0.clone());
    let _ = crate::bridge::blocking(move || {
        let idle = !context.share_sessions.group_has_sessions(&group);
        context
            .shares
            .release(context.groups.share_state(), &keys, &member, idle);
    })
    .await;
}
