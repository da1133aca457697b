//! The same produce and consume loads through rskafka, a pure-Rust Kafka client with no local
//! queue: the application hands it whole batches and gets whole fetch responses back, so it
//! spends far less CPU per message than librdkafka. On a two-core machine the client's CPU is
//! most of what a loopback benchmark measures, so this shows what the broker sustains when the
//! client is cheap.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use rskafka::client::ClientBuilder;
use rskafka::client::error::{Error, ProtocolError};
use rskafka::client::partition::{Compression, PartitionClient, UnknownTopicHandling};
use rskafka::record::Record;
use tokio::task::JoinSet;

use crate::stopwatch::{Outcome, Stopwatch};

/// Produces `messages` values of `size` bytes to partition 0 in batches of `batch` records,
/// keeping `in_flight` produce requests outstanding (rskafka sends each with acks=all, the same
/// as acks=1 on a single broker).
pub fn produce(
    brokers: &str,
    topic: &str,
    messages: u64,
    size: usize,
    batch: u64,
    in_flight: usize,
) -> Result<Outcome> {
    runtime()?.block_on(async {
        let partition = Arc::new(partition_client(brokers, topic).await?);
        let value = vec![b'x'; size];
        // One record first, so the connection and the topic's metadata are in place before the
        // clock starts.
        partition
            .produce(vec![record(&value, u64::MAX)], Compression::NoCompression)
            .await
            .context("producing the warm-up message")?;
        let stopwatch = Stopwatch::start();
        let mut pending = JoinSet::new();
        let mut next = 0u64;
        while next < messages || !pending.is_empty() {
            while next < messages && pending.len() < in_flight {
                let count = batch.min(messages - next);
                let records: Vec<Record> = (next..next + count)
                    .map(|key| record(&value, key))
                    .collect();
                let partition = Arc::clone(&partition);
                pending.spawn(async move {
                    partition.produce(records, Compression::NoCompression).await
                });
                next += count;
            }
            if let Some(done) = pending.join_next().await {
                done.context("produce task")?.context("producing a batch")?;
            }
        }
        Ok(stopwatch.finish(messages, messages * size as u64))
    })
}

/// Reads `messages` messages from the start of partition 0, one fetch of up to `fetch_bytes`
/// at a time.
pub fn consume(brokers: &str, topic: &str, messages: u64, fetch_bytes: i32) -> Result<Outcome> {
    runtime()?.block_on(async {
        let partition = partition_client(brokers, topic).await?;
        let mut stopwatch = Stopwatch::start();
        let (mut received, mut bytes, mut offset) = (0u64, 0u64, 0i64);
        while received < messages {
            let (records, _high_watermark) = partition
                .fetch_records(offset, 1..fetch_bytes, 10_000)
                .await
                .with_context(|| format!("fetching from offset {offset}"))?;
            if records.is_empty() {
                bail!("no message for 10 s after {received} of {messages}");
            }
            if received == 0 {
                stopwatch = Stopwatch::start();
            }
            for record in &records {
                received += 1;
                bytes += record
                    .record
                    .value
                    .as_ref()
                    .map_or(0, |value| value.len() as u64);
                offset = record.offset + 1;
            }
        }
        Ok(stopwatch.finish(received, bytes))
    })
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

async fn partition_client(brokers: &str, topic: &str) -> Result<PartitionClient> {
    let bootstrap = brokers.split(',').map(str::to_string).collect();
    let client = ClientBuilder::new(bootstrap)
        .build()
        .await
        .context("connecting")?;
    // Created here if missing (rskafka's metadata requests never create topics).
    let controller = client
        .controller_client()
        .context("finding the controller")?;
    match controller.create_topic(topic, 1, 1, 5_000).await {
        Ok(())
        | Err(Error::ServerError {
            protocol_error: ProtocolError::TopicAlreadyExists,
            ..
        }) => {}
        Err(error) => return Err(error).context("creating the topic"),
    }
    client
        .partition_client(topic, 0, UnknownTopicHandling::Retry)
        .await
        .context("finding partition 0")
}

fn record(value: &[u8], key: u64) -> Record {
    Record {
        key: Some(key.to_be_bytes().to_vec()),
        value: Some(value.to_vec()),
        headers: BTreeMap::new(),
        timestamp: chrono::Utc::now(),
    }
}
