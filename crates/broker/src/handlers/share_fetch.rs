//! ShareFetch (KIP-932): a share consumer's fetch. Its session (epoch 0 opens one, −1 ends it)
//! says which partitions it reads; acknowledgements it carries are applied first; then records
//! are acquired for it from each partition (see [`crate::share_partitions`]) within MaxRecords,
//! waiting up to MaxWaitMs when none is available, woken by a produce to one of them.
//!
//! Checks, in Kafka's order: a group id (INVALID_REQUEST), READ on the group
//! (GROUP_AUTHORIZATION_FAILED), a member id of 1 to 36 characters (INVALID_REQUEST), a
//! renewing request asking for nothing (version 2's `IsRenewAck`), the session; then per
//! topic: a known topic id (UNKNOWN_TOPIC_ID) and READ on it (TOPIC_AUTHORIZATION_FAILED).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrolog_protocol::messages::share_fetch_response::{
    AcquiredRecords, PartitionData, ShareFetchableTopicResponse,
};
use ferrolog_protocol::messages::{ShareFetchRequest, ShareFetchResponse};
use ferrolog_storage::TopicPartition;
use ferrolog_storage::manager::TopicId;

use super::share_common::{
    Access, PartitionKey, ack_batches, acknowledge_all, release_session, share_settings,
    valid_member,
};
use crate::authz::{Asked, ResourceType};
use crate::features::SHARE_VERSION;
use crate::fetch_waiters::Waiting;
use crate::share_partitions::{FetchAsk, Fetched};
use crate::share_sessions::{Context as SessionContext, SessionPartition};
use crate::{Context, errors};

/// One partition's line in the answer.
#[derive(Debug, Default)]
struct Line {
    error: i16,
    ack_error: Option<i16>,
    fetched: Option<Fetched>,
}

/// A refusal of the whole request.
fn top(code: i16, message: Option<&str>) -> ShareFetchResponse {
    ShareFetchResponse {
        error_code: code,
        error_message: message.map(str::to_owned),
        ..ShareFetchResponse::default()
    }
}

/// Kafka's checks before the session: the group id and READ on it, the member id, a renewing
/// request asking for nothing, no acknowledgements on a new session. Returns the group and
/// member.
fn check_request(
    asked: &Asked<'_>,
    request: &ShareFetchRequest,
) -> Result<(String, String), ShareFetchResponse> {
    let Some(group) = request.group_id.clone() else {
        return Err(top(
            errors::INVALID_REQUEST,
            Some("Invalid group id in the request."),
        ));
    };
    if !asked.allows(ResourceType::Group, &group) {
        return Err(top(errors::GROUP_AUTHORIZATION_FAILED, None));
    }
    let Some(member) = valid_member(request.member_id.as_deref()) else {
        return Err(top(
            errors::INVALID_REQUEST,
            Some("Invalid member id in the request."),
        ));
    };
    let renewing = asked.version() >= 2 && request.is_renew_ack;
    let asks_something = request.max_bytes != 0
        || request.min_bytes != 0
        || request.max_records != 0
        || request.max_wait_ms != 0;
    if renewing && asks_something {
        return Err(top(
            errors::INVALID_REQUEST,
            Some("MaxBytes, MinBytes, MaxRecords and MaxWaitMs must be 0 if isRenewAck is true."),
        ));
    }
    if request.share_session_epoch == 0 && has_acks(request) {
        return Err(top(
            errors::INVALID_REQUEST,
            Some("Acknowledge data present on initial fetch."),
        ));
    }
    Ok((group, member))
}

fn has_acks(request: &ShareFetchRequest) -> bool {
    request
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .any(|p| !p.acknowledgement_batches.is_empty())
}

pub async fn handle(
    context: &Arc<Context>,
    asked: &Asked<'_>,
    request: ShareFetchRequest,
) -> ShareFetchResponse {
    if !context.features.serves(SHARE_VERSION) {
        return ShareFetchResponse {
            error_code: errors::UNSUPPORTED_VERSION,
            ..ShareFetchResponse::default()
        };
    }
    let (group, member) = match check_request(asked, &request) {
        Ok(found) => found,
        Err(refusal) => return refusal,
    };
    let renewing = asked.version() >= 2 && request.is_renew_ack;
    let has_acks = has_acks(&request);
    let requested: Vec<SessionPartition> = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (TopicId(t.topic_id.into_bytes()), p.partition_index))
        })
        .collect();
    let forgotten: Vec<SessionPartition> = request
        .forgotten_topics_data
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (TopicId(t.topic_id.into_bytes()), *p))
        })
        .collect();
    let connection = crate::share_sessions::connection_id(asked.session());
    let capacity = context.config.groups.share.max_share_sessions;
    let session_key = (group.clone(), member.clone());
    let session = match context.share_sessions.fetch_context(
        session_key.clone(),
        request.share_session_epoch,
        requested,
        &forgotten,
        connection,
        capacity,
    ) {
        Ok(session) => session,
        Err(code) => {
            if code == errors::SHARE_SESSION_LIMIT_REACHED {
                // As Kafka: the refusal waits MaxWaitMs, so that a client does not spin on it.
                let wait = u64::try_from(request.max_wait_ms).unwrap_or(0).min(30_000);
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
            return top(code, None);
        }
    };
    let access = Access::check(
        context,
        asked,
        session_partitions(&session).iter().map(|p| p.0),
    );
    let settings = share_settings(context, &group);
    let mut lines: std::collections::BTreeMap<SessionPartition, Line> =
        std::collections::BTreeMap::new();
    if has_acks {
        let acks: Vec<(PartitionKey, Vec<_>)> = request
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(move |p| {
                    (
                        (TopicId(t.topic_id.into_bytes()), p.partition_index),
                        ack_batches(&p.acknowledgement_batches),
                    )
                })
            })
            .filter(|(_, batches)| !batches.is_empty())
            .collect();
        for (partition, code) in
            acknowledge_all(context, asked, &access, &group, &member, acks, renewing).await
        {
            lines.entry(partition).or_default().ack_error = Some(code);
        }
    }
    if let SessionContext::Final(partitions) = &session {
        release_session(context, &session_key, partitions).await;
    } else if !renewing {
        let ask = Ask {
            member: member.clone(),
            group: group.clone(),
            request: &request,
            settings,
        };
        fetch_all(context, &access, &session, &ask, &mut lines).await;
    }
    answer(&session, lines, settings.limits.lock_duration_ms)
}

fn session_partitions(session: &SessionContext) -> Vec<SessionPartition> {
    match session {
        SessionContext::Full(all)
        | SessionContext::Final(all)
        | SessionContext::Incremental { all, .. } => all.clone(),
    }
}

/// What a fetch asks, shared by its passes.
struct Ask<'r> {
    member: String,
    group: String,
    request: &'r ShareFetchRequest,
    settings: crate::share_partitions::ShareSettings,
}

/// Acquires from every partition of the session, waiting while nothing is available.
async fn fetch_all(
    context: &Arc<Context>,
    access: &Access,
    session: &SessionContext,
    ask: &Ask<'_>,
    lines: &mut std::collections::BTreeMap<SessionPartition, Line>,
) {
    let partitions = session_partitions(session);
    let mut readable: Vec<(SessionPartition, TopicPartition)> = Vec::new();
    for partition in &partitions {
        match access.refusal(partition.0) {
            Some(code) => lines.entry(*partition).or_default().error = code,
            None => {
                let name = access.name(partition.0).unwrap_or_default().to_owned();
                readable.push((*partition, TopicPartition::new(name, partition.1)));
            }
        }
    }
    // Partitions in turn as Kafka turns them: the list rotated by the session's epoch, so a
    // backlog in the first does not starve the others of MaxRecords.
    let epoch = ask.request.share_session_epoch;
    if epoch >= 1 && readable.len() > 1 {
        let by = usize::try_from(epoch).unwrap_or(0) % readable.len();
        readable.rotate_left(by);
    }
    let deadline =
        Instant::now() + Duration::from_millis(u64::try_from(ask.request.max_wait_ms).unwrap_or(0));
    let waiting = Waiting::new(
        &context.fetch_waiters,
        readable.iter().map(|(_, tp)| tp.clone()).collect(),
    );
    loop {
        waiting.register();
        let pass = one_pass(context, &readable, ask).await;
        // As Kafka: the wait ends when something was acquired, or when every partition failed.
        let acquired = pass.iter().any(|(_, f)| !f.acquired.is_empty());
        let all_failed = !pass.is_empty() && pass.iter().all(|(_, f)| f.error != errors::NONE);
        if acquired || all_failed || Instant::now() >= deadline || ask.request.max_records <= 0 {
            for (partition, fetched) in pass {
                let line = lines.entry(partition).or_default();
                line.error = fetched.error;
                line.fetched = Some(fetched);
            }
            return;
        }
        // Records also come back when a lock lapses or another member releases them: look
        // again at least every 100 ms.
        let nap = deadline
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(100));
        tokio::select! {
            () = waiting.woken() => {}
            () = tokio::time::sleep(nap) => {}
        }
    }
}

/// One pass of acquisitions over `readable`, on the blocking pool.
async fn one_pass(
    context: &Arc<Context>,
    readable: &[(SessionPartition, TopicPartition)],
    ask: &Ask<'_>,
) -> Vec<(SessionPartition, Fetched)> {
    let (context, readable) = (Arc::clone(context), readable.to_vec());
    let (member, group, settings) = (ask.member.clone(), ask.group.clone(), ask.settings);
    let request = ask.request;
    let (mode, batch_size, max_records) = (
        ferrolog_coordinator::share_partition::AcquireMode::from_id(request.share_acquire_mode)
            .unwrap_or(ferrolog_coordinator::share_partition::AcquireMode::BatchOptimized),
        request.batch_size,
        request.max_records,
    );
    let max_bytes = request.max_bytes.clamp(0, context.config.fetch_max_bytes);
    let result = crate::bridge::blocking(move || {
        let now = context.manager.clock().now_ms();
        let share = ferrolog_coordinator::share_state::ShareKey::new;
        let per_partition = u64::try_from(max_bytes).unwrap_or(0) / readable.len().max(1) as u64;
        let mut left = max_records;
        let mut out = Vec::with_capacity(readable.len());
        for (partition, topic_partition) in readable {
            let Some(log) = context.manager.get(&topic_partition) else {
                out.push((
                    partition,
                    Fetched {
                        error: errors::UNKNOWN_TOPIC_OR_PARTITION,
                        ..Fetched::default()
                    },
                ));
                continue;
            };
            let ask = FetchAsk {
                member: &member,
                mode,
                batch_size,
                max_records: left,
                max_bytes: per_partition.max(1),
                now_ms: now,
            };
            let fetched = context.shares.fetch(
                context.groups.share_state(),
                &share(&group, partition.0, partition.1),
                &log,
                settings,
                ask,
            );
            let count: i64 = fetched.acquired.iter().map(|a| a.last - a.first + 1).sum();
            left = left.saturating_sub(i32::try_from(count).unwrap_or(i32::MAX));
            out.push((partition, fetched));
        }
        out
    })
    .await;
    result.unwrap_or_default()
}

/// The response: every partition of a new session; of a running one, those with records, an
/// error, an acknowledgement result, or new to the session.
fn answer(
    session: &SessionContext,
    lines: std::collections::BTreeMap<SessionPartition, Line>,
    lock_ms: i64,
) -> ShareFetchResponse {
    let added: &[SessionPartition] = match session {
        SessionContext::Incremental { added, .. } => added,
        _ => &[],
    };
    let incremental = matches!(session, SessionContext::Incremental { .. });
    let mut topics: Vec<ShareFetchableTopicResponse> = Vec::new();
    for (partition, line) in lines {
        let has_records = line
            .fetched
            .as_ref()
            .is_some_and(|f| !f.acquired.is_empty());
        if incremental
            && !has_records
            && line.error == errors::NONE
            && line.ack_error.is_none()
            && !added.contains(&partition)
        {
            continue;
        }
        let fetched = line.fetched.unwrap_or_default();
        let data = PartitionData {
            partition_index: partition.1,
            error_code: line.error,
            acknowledge_error_code: line.ack_error.unwrap_or(errors::NONE),
            records: fetched.records,
            acquired_records: fetched
                .acquired
                .iter()
                .map(|a| AcquiredRecords {
                    first_offset: a.first,
                    last_offset: a.last,
                    delivery_count: a.count,
                })
                .collect(),
            ..PartitionData::default()
        };
        let topic_id = uuid::Uuid::from_bytes(partition.0.0);
        match topics.last_mut() {
            Some(topic) if topic.topic_id == topic_id => topic.partitions.push(data),
            _ => topics.push(ShareFetchableTopicResponse {
                topic_id,
                partitions: vec![data],
            }),
        }
    }
    ShareFetchResponse {
        acquisition_lock_timeout_ms: i32::try_from(lock_ms).unwrap_or(i32::MAX),
        responses: topics,
        ..ShareFetchResponse::default()
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use ferrolog_protocol::messages::ShareFetchRequest;
    use ferrolog_protocol::messages::share_fetch_request::{FetchPartition, FetchTopic};

    use crate::probes::Probed;

    impl Probed for ShareFetchRequest {
        fn probe(topic: &str, group: &str) -> (i16, Self) {
            Self::probe_by_id(topic, group, uuid::Uuid::nil())
        }

        fn probe_by_id(_topic: &str, group: &str, topic_id: uuid::Uuid) -> (i16, Self) {
            let request = ShareFetchRequest {
                group_id: Some(group.to_owned()),
                member_id: Some("nobody".to_owned()),
                share_session_epoch: 0,
                max_records: 1,
                topics: vec![FetchTopic {
                    topic_id,
                    partitions: vec![FetchPartition {
                        partition_index: 0,
                        ..FetchPartition::default()
                    }],
                }],
                ..ShareFetchRequest::default()
            };
            (1, request)
        }
    }
}
