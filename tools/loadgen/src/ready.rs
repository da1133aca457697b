//! Start-to-serving: started beside a broker that is still loading, produces one record to each
//! partition of the given topics as soon as the broker takes it, and reports when the last was
//! acknowledged.
//!
//! It speaks the protocol itself (one Produce request naming every partition still to be
//! served, sent again every 10 ms for those that answered an error, over a connection retried
//! every 10 ms) rather than through a client library: librdkafka took 5.4 s of two cores to
//! produce one message to each of 10,000 partitions of a broker already serving, which would
//! have hidden the brokers' own start.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use bytes::{Bytes, BytesMut};
use ferrolog_records::BatchBuilder;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ProduceRequest, ProduceResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// Produce v9: the first flexible version, which both brokers serve.
const PRODUCE_VERSION: i16 = 9;
const RETRY: Duration = Duration::from_millis(10);

/// Prints `{"ready_unix_seconds": …}`: the wall-clock time at which the last partition's
/// produce was acknowledged.
pub fn ready(brokers: &str, topics: &[String], partitions: i32, timeout: Duration) -> Result<()> {
    let address = brokers.split(',').next().unwrap_or(brokers);
    let deadline = Instant::now() + timeout;
    let batch = Bytes::from(one_record_batch()?);
    let mut pending: BTreeSet<(String, i32)> = topics
        .iter()
        .flat_map(|topic| (0..partitions).map(move |partition| (topic.clone(), partition)))
        .collect();
    let mut correlation_id = 0;
    let mut last_errors = String::new();
    while !pending.is_empty() {
        if Instant::now() > deadline {
            bail!(
                "{} partitions were not served within {timeout:?} (last errors: {last_errors})",
                pending.len()
            );
        }
        let Ok(mut stream) = TcpStream::connect(address) else {
            sleep(RETRY);
            continue;
        };
        stream.set_nodelay(true)?;
        while !pending.is_empty() && Instant::now() <= deadline {
            correlation_id += 1;
            let request = produce_request(&pending, &batch);
            let Ok(response) = exchange(&mut stream, correlation_id, &request) else {
                break; // The broker closed the connection: connect again.
            };
            let mut errors = BTreeSet::new();
            for topic in response.responses {
                for partition in topic.partition_responses {
                    if partition.error_code == 0 {
                        pending.remove(&(topic.name.0.to_string(), partition.index));
                    } else {
                        errors.insert(partition.error_code);
                    }
                }
            }
            last_errors = format!("{errors:?}");
            if !pending.is_empty() {
                sleep(RETRY);
            }
        }
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .context("the clock is before 1970")?;
    println!("{{\"ready_unix_seconds\": {:.3}}}", now.as_secs_f64());
    Ok(())
}

fn one_record_batch() -> Result<Vec<u8>> {
    let mut builder = BatchBuilder::new(0);
    builder
        .append(
            chrono::Utc::now().timestamp_millis(),
            None,
            Some(b"ready"),
            &[],
        )
        .context("building the record batch")?;
    builder.build().context("building the record batch")
}

fn produce_request(pending: &BTreeSet<(String, i32)>, batch: &Bytes) -> ProduceRequest {
    let mut topics: Vec<TopicProduceData> = Vec::new();
    for (topic, partition) in pending {
        if topics
            .last()
            .is_none_or(|last| last.name.0.as_str() != topic)
        {
            topics.push(
                TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_string(topic.clone()))),
            );
        }
        if let Some(last) = topics.last_mut() {
            last.partition_data.push(
                PartitionProduceData::default()
                    .with_index(*partition)
                    .with_records(Some(batch.clone())),
            );
        }
    }
    ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(30_000)
        .with_topic_data(topics)
}

/// Sends one Produce request and reads its response.
fn exchange(
    stream: &mut TcpStream,
    correlation_id: i32,
    request: &ProduceRequest,
) -> Result<ProduceResponse> {
    let mut frame = BytesMut::new();
    frame.extend_from_slice(&[0; 4]);
    RequestHeader::default()
        .with_request_api_key(ApiKey::Produce as i16)
        .with_request_api_version(PRODUCE_VERSION)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("ferrolog-loadgen-ready")))
        .encode(
            &mut frame,
            ApiKey::Produce.request_header_version(PRODUCE_VERSION),
        )?;
    request.encode(&mut frame, PRODUCE_VERSION)?;
    let size = i32::try_from(frame.len() - 4).context("request too large")?;
    frame[..4].copy_from_slice(&size.to_be_bytes());
    stream.write_all(&frame)?;
    let mut size = [0u8; 4];
    stream.read_exact(&mut size)?;
    let size = usize::try_from(i32::from_be_bytes(size)).context("negative response size")?;
    let mut body = vec![0u8; size];
    stream.read_exact(&mut body)?;
    let mut body = Bytes::from(body);
    let header = ResponseHeader::decode(
        &mut body,
        ApiKey::Produce.response_header_version(PRODUCE_VERSION),
    )?;
    if header.correlation_id != correlation_id {
        bail!(
            "response to request {} where {correlation_id} was expected",
            header.correlation_id
        );
    }
    ProduceResponse::decode(&mut body, PRODUCE_VERSION)
}
