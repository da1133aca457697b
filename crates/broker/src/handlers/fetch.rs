//! Fetch: record bytes as they lie in the segment files, never decoded. When fewer than
//! `min_bytes` are ready, the request waits (up to `max_wait_ms`) and is woken by the next
//! produce; the first partition with data returns at least one whole batch, so a batch larger
//! than the limits is never stuck. Fetch sessions are not kept: every response is a full one
//! (session id 0).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{FetchRequest, FetchResponse, RequestHeader};

use ferrolog_storage::TopicPartition;
use ferrolog_storage::log::{FetchBound, FetchParams};

use crate::{Context, errors};

pub async fn handle(
    context: &Arc<Context>,
    header: &RequestHeader,
    request: FetchRequest,
) -> FetchResponse {
    let deadline =
        Instant::now() + Duration::from_millis(u64::try_from(request.max_wait_ms).unwrap_or(0));
    let request = Arc::new(request);
    loop {
        // Registered before reading, so a produce between the read and the wait still wakes us.
        let appended = context.appended.notified();
        tokio::pin!(appended);
        appended.as_mut().enable();
        let (context_copy, request_copy, version) = (
            Arc::clone(context),
            Arc::clone(&request),
            header.request_api_version,
        );
        let attempt =
            tokio::task::spawn_blocking(move || read_once(&context_copy, &request_copy, version))
                .await;
        let (response, bytes) = match attempt {
            Ok(result) => result,
            Err(_) => (
                FetchResponse::default().with_error_code(errors::UNKNOWN_SERVER_ERROR),
                0,
            ),
        };
        if bytes >= i64::from(request.min_bytes) || Instant::now() >= deadline {
            return response;
        }
        tokio::select! {
            () = &mut appended => {}
            () = tokio::time::sleep(deadline.saturating_duration_since(Instant::now())) => {}
        }
    }
}

/// One pass over the requested partitions; returns the response and the bytes it carries.
fn read_once(context: &Context, request: &FetchRequest, version: i16) -> (FetchResponse, i64) {
    let mut budget = i64::from(request.max_bytes.max(0));
    let mut total = 0i64;
    let mut first = true;
    let topics = request
        .topics
        .iter()
        .map(|topic| {
            let name = topic.topic.0.to_string();
            let partitions = topic
                .partitions
                .iter()
                .map(|partition| {
                    let response =
                        PartitionData::default().with_partition_index(partition.partition);
                    let Some(log) = context
                        .manager
                        .get(&TopicPartition::new(name.clone(), partition.partition))
                    else {
                        return response.with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION);
                    };
                    let high_watermark = log.high_watermark();
                    let mut response = response
                        .with_high_watermark(high_watermark)
                        .with_last_stable_offset(high_watermark);
                    if version >= 5 {
                        response = response.with_log_start_offset(log.log_start_offset());
                    }
                    let max_bytes = i64::from(partition.partition_max_bytes.max(0)).min(budget);
                    let read = log.read(FetchParams {
                        start_offset: partition.fetch_offset,
                        max_bytes: u64::try_from(max_bytes).unwrap_or(0),
                        bound: FetchBound::HighWatermark,
                        min_one_batch: first,
                    });
                    match read.and_then(|data| data.read_bytes()) {
                        Ok(bytes) => {
                            if !bytes.is_empty() {
                                first = false;
                            }
                            budget -= bytes.len() as i64;
                            total += bytes.len() as i64;
                            response.with_records(Some(Bytes::from(bytes)))
                        }
                        Err(error) => response.with_error_code(errors::code_of(&error)),
                    }
                })
                .collect();
            FetchableTopicResponse::default()
                .with_topic(topic.topic.clone())
                .with_partitions(partitions)
        })
        .collect();
    (FetchResponse::default().with_responses(topics), total)
}
