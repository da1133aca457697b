//! A stand-in broker that does as little as a Kafka broker can: it answers the requests a
//! producing or consuming client sends, but keeps nothing and reads no disk. Produced batches
//! are counted and dropped; fetches are answered from a log built in memory at start (one batch
//! repeated, each copy's base offset set to where it stands), copied once into the response as
//! a broker copies from the page cache. The same clients driven against it show what they reach
//! when the broker costs next to nothing, on the same two cores. With `--tls-pem` it serves
//! TLS as `ferrolog serve` does (rustls, the same read-ahead), so the clients' TLS runs can be
//! set beside what they reach when the broker costs nothing but TLS.
//!
//! It answers ApiVersions, Metadata (one broker, every topic with one partition), CreateTopics,
//! Produce, ListOffsets, FindCoordinator and Fetch, and nothing else. Not a broker: it checks no
//! CRC, keeps no offsets per topic, and closes a connection on anything it does not know.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use anyhow::{Context, Result, bail};
use bytes::{Buf, Bytes, BytesMut};
use ferrolog_broker::dispatch::supported_range;
use ferrolog_broker::handlers::api_versions::advertising;
use ferrolog_records::{BatchBuilder, RecordBatch};
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, CreateTopicsResponse, FetchRequest, FetchResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, ListOffsetsRequest, ListOffsetsResponse,
    MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse, RequestHeader,
    ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// The APIs answered, at the versions `ferrolog serve` advertises for them, so the clients take
/// the same paths against both.
const ANSWERED: &[ApiKey] = &[
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::Metadata,
    ApiKey::ApiVersions,
    ApiKey::FindCoordinator,
    ApiKey::CreateTopics,
];

fn answered_versions() -> Vec<(ApiKey, i16, i16)> {
    ANSWERED
        .iter()
        .filter_map(|&api| supported_range(api).map(|(min, max)| (api, min, max)))
        .collect()
}

const NODE: BrokerId = BrokerId(0);

/// What every connection shares.
struct Sink {
    address: SocketAddr,
    /// What fetches read: batches of `records_per_batch` records from offset 0 on.
    log: Bytes,
    /// The size of each batch in `log`.
    batch_bytes: usize,
    records_per_batch: i64,
    /// Offsets handed out to produced records, and the end of the log fetches see (fetches
    /// never read past `log`, however far produced records moved it).
    log_end: AtomicI64,
}

/// The in-memory log fetches read: records of `size` bytes (8-byte keys) in batches of
/// `records_per_batch`, at least `log_records` of them, whose end starts at `log_end`; produced
/// records move that end on.
pub struct LogShape {
    pub size: usize,
    pub records_per_batch: i64,
    pub log_records: i64,
    pub log_end: i64,
}

/// Bytes read ahead from the socket under TLS: the same as `ferrolog serve`'s
/// `TLS_READ_AHEAD`, so the stand-in's TLS costs what the broker's does.
const TLS_READ_AHEAD: usize = 64 * 1024;

/// Serves until killed, over TLS with the key and certificates in `tls_pem` if given.
pub fn serve(listen: &str, shape: &LogShape, tls_pem: Option<&Path>) -> Result<()> {
    if shape.records_per_batch < 1 || shape.log_records < 0 || shape.log_end < 0 {
        bail!("--batch-records must be positive and --log-records, --log-end not negative");
    }
    let acceptor = tls_pem.map(tls_acceptor).transpose()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    // Built before listening, so a client that finds the port open is not measuring this.
    let batch = template_batch(shape.size, shape.records_per_batch)?;
    let log = repeat_batch(&batch, shape.records_per_batch, shape.log_records);
    runtime.block_on(async {
        let listener = TcpListener::bind(listen)
            .await
            .with_context(|| format!("listening on {listen}"))?;
        let sink = Arc::new(Sink {
            address: listener.local_addr()?,
            log,
            batch_bytes: batch.len(),
            records_per_batch: shape.records_per_batch,
            log_end: AtomicI64::new(shape.log_end),
        });
        loop {
            let (stream, peer) = listener.accept().await.context("accepting")?;
            stream.set_nodelay(true)?;
            let sink = Arc::clone(&sink);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let served = match acceptor {
                    None => connection(&sink, stream).await,
                    Some(acceptor) => {
                        let socket = BufReader::with_capacity(TLS_READ_AHEAD, stream);
                        match acceptor.accept(socket).await {
                            Ok(stream) => connection(&sink, stream).await,
                            Err(error) => Err(error.into()),
                        }
                    }
                };
                if let Err(error) = served {
                    eprintln!("sink: connection from {peer} closed: {error:#}");
                }
            });
        }
    })
}

/// A TLS acceptor with the key and certificate chain in the PEM file at `path`.
fn tls_acceptor(path: &Path) -> Result<TlsAcceptor> {
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let key = PrivateKeyDer::from_pem_slice(&text)
        .with_context(|| format!("no private key in {}", path.display()))?;
    let chain = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("reading the certificates in {}", path.display()))?;
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("the TLS key and certificates")?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn template_batch(size: usize, records: i64) -> Result<Vec<u8>> {
    let mut builder = BatchBuilder::new(0);
    let value = vec![b'x'; size];
    let now = chrono::Utc::now().timestamp_millis();
    for key in 0..records {
        builder
            .append(now, Some(&key.to_be_bytes()), Some(&value), &[])
            .context("building the template batch")?;
    }
    builder.build().context("building the template batch")
}

/// Copies of `batch` at offsets 0, `records_per_batch`, … until `records` are covered. The base
/// offset lies outside a batch's CRC, so each copy stays valid.
fn repeat_batch(batch: &[u8], records_per_batch: i64, records: i64) -> Bytes {
    let batches = (records + records_per_batch - 1) / records_per_batch;
    let mut log = BytesMut::with_capacity(batch.len() * batches as usize);
    for index in 0..batches {
        let start = log.len();
        log.extend_from_slice(batch);
        log[start..start + 8].copy_from_slice(&(index * records_per_batch).to_be_bytes());
    }
    log.freeze()
}

/// Reads requests and writes answers, one at a time in order. Both buffers are kept and reused,
/// so serving costs no fresh memory per request.
async fn connection<S: AsyncRead + AsyncWrite + Unpin>(sink: &Sink, mut stream: S) -> Result<()> {
    let mut input = BytesMut::with_capacity(1 << 20);
    let mut output = BytesMut::with_capacity(1 << 20);
    loop {
        if !read_to(&mut stream, &mut input, 4).await? {
            return Ok(()); // The client went away.
        }
        let length = i32::from_be_bytes([input[0], input[1], input[2], input[3]]);
        let length = usize::try_from(length).context("negative frame size")?;
        input.advance(4);
        if !read_to(&mut stream, &mut input, length).await? {
            return Ok(());
        }
        // Dropped before the next read, so `input` gets its memory back.
        let frame = input.split_to(length).freeze();
        output.clear();
        if answer(sink, frame, &mut output).await? {
            // Flushed: over TLS, written bytes may wait in the session's buffer.
            let written = match stream.write_all(&output).await {
                Ok(()) => stream.flush().await,
                Err(error) => Err(error),
            };
            match written {
                Ok(()) => {}
                // A consumer that has all it wanted leaves while a fetch is still being answered.
                Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => return Ok(()),
                Err(error) => return Err(error.into()),
            }
        }
    }
}

/// Reads until `buffer` holds at least `wanted` bytes; false if the peer closed first.
async fn read_to<S: AsyncRead + Unpin>(
    stream: &mut S,
    buffer: &mut BytesMut,
    wanted: usize,
) -> Result<bool> {
    buffer.reserve(wanted.saturating_sub(buffer.len()));
    while buffer.len() < wanted {
        if stream.read_buf(buffer).await? == 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Writes the whole response frame, size prefix included, into `out`; false when no response is
/// due (acks=0).
async fn answer(sink: &Sink, mut frame: Bytes, out: &mut BytesMut) -> Result<bool> {
    if frame.len() < 4 {
        bail!("a request shorter than its header");
    }
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let api = ApiKey::try_from(key).map_err(|_| anyhow::anyhow!("unknown API key {key}"))?;
    let header = RequestHeader::decode(&mut frame, api.request_header_version(version))?;
    let answered = ANSWERED.contains(&api)
        && supported_range(api).is_some_and(|(min, max)| (min..=max).contains(&version));
    if !answered {
        bail!("{api:?} v{version} is not answered");
    }
    let header_version = if api == ApiKey::ApiVersions {
        0
    } else {
        api.response_header_version(version)
    };
    out.extend_from_slice(&[0; 4]);
    ResponseHeader::default()
        .with_correlation_id(header.correlation_id)
        .encode(out, header_version)?;
    match api {
        ApiKey::ApiVersions => advertising(&answered_versions()).encode(out, version)?,
        ApiKey::Metadata => {
            metadata(sink, MetadataRequest::decode(&mut frame, version)?).encode(out, version)?
        }
        ApiKey::FindCoordinator => find_coordinator(
            sink,
            FindCoordinatorRequest::decode(&mut frame, version)?,
            version,
        )
        .encode(out, version)?,
        ApiKey::CreateTopics => {
            create_topics(CreateTopicsRequest::decode(&mut frame, version)?).encode(out, version)?
        }
        ApiKey::ListOffsets => list_offsets(sink, ListOffsetsRequest::decode(&mut frame, version)?)
            .encode(out, version)?,
        ApiKey::Produce => {
            let request = ProduceRequest::decode(&mut frame, version)?;
            let acks = request.acks;
            let response = produce(sink, request)?;
            if acks == 0 {
                return Ok(false);
            }
            response.encode(out, version)?
        }
        ApiKey::Fetch => {
            let request = FetchRequest::decode(&mut frame, version)?;
            fetch(sink, request, version).await.encode(out, version)?
        }
        other => bail!("{other:?} is not answered"),
    }
    let size = i32::try_from(out.len() - 4).context("response over 2 GiB")?;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Ok(true)
}

fn metadata(sink: &Sink, request: MetadataRequest) -> MetadataResponse {
    let names = request
        .topics
        .unwrap_or_default()
        .into_iter()
        .filter_map(|topic| topic.name);
    MetadataResponse::default()
        .with_brokers(vec![
            MetadataResponseBroker::default()
                .with_node_id(NODE)
                .with_host(StrBytes::from_string(sink.address.ip().to_string()))
                .with_port(i32::from(sink.address.port())),
        ])
        .with_controller_id(NODE)
        .with_topics(
            names
                .map(|name| {
                    MetadataResponseTopic::default()
                        .with_name(Some(name))
                        .with_partitions(vec![
                            MetadataResponsePartition::default()
                                .with_leader_id(NODE)
                                .with_replica_nodes(vec![NODE])
                                .with_isr_nodes(vec![NODE]),
                        ])
                })
                .collect(),
        )
}

/// This broker coordinates everything; from v4 on, each key asked about gets its own answer.
fn find_coordinator(
    sink: &Sink,
    request: FindCoordinatorRequest,
    version: i16,
) -> FindCoordinatorResponse {
    let host = StrBytes::from_string(sink.address.ip().to_string());
    let port = i32::from(sink.address.port());
    if version >= 4 {
        return FindCoordinatorResponse::default().with_coordinators(
            request
                .coordinator_keys
                .into_iter()
                .map(|key| {
                    Coordinator::default()
                        .with_key(key)
                        .with_node_id(NODE)
                        .with_host(host.clone())
                        .with_port(port)
                })
                .collect(),
        );
    }
    FindCoordinatorResponse::default()
        .with_node_id(NODE)
        .with_host(host)
        .with_port(port)
}

/// Every topic "exists" already: the answer is success.
fn create_topics(request: CreateTopicsRequest) -> CreateTopicsResponse {
    CreateTopicsResponse::default().with_topics(
        request
            .topics
            .into_iter()
            .map(|topic| CreatableTopicResult::default().with_name(topic.name))
            .collect(),
    )
}

fn list_offsets(sink: &Sink, request: ListOffsetsRequest) -> ListOffsetsResponse {
    let end = sink.log_end.load(Ordering::Relaxed);
    ListOffsetsResponse::default().with_topics(
        request
            .topics
            .into_iter()
            .map(|topic| {
                ListOffsetsTopicResponse::default()
                    .with_name(topic.name)
                    .with_partitions(
                        topic
                            .partitions
                            .into_iter()
                            .map(|partition| {
                                // -2 asks for the earliest offset; anything else gets the end.
                                let offset = if partition.timestamp == -2 { 0 } else { end };
                                ListOffsetsPartitionResponse::default()
                                    .with_partition_index(partition.partition_index)
                                    .with_timestamp(-1)
                                    .with_offset(offset)
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

/// Counts each partition's records, hands out their offsets, and drops them.
fn produce(sink: &Sink, request: ProduceRequest) -> Result<ProduceResponse> {
    let mut topics = Vec::new();
    for topic in request.topic_data {
        let mut partitions = Vec::new();
        for partition in topic.partition_data {
            let mut records = 0i64;
            let mut rest = partition.records.as_deref().unwrap_or_default();
            while !rest.is_empty() {
                let batch = RecordBatch::parse_prefix(rest).context("a produced batch")?;
                records += i64::from(batch.last_offset_delta()) + 1;
                rest = &rest[batch.size_in_bytes()..];
            }
            let base_offset = sink.log_end.fetch_add(records, Ordering::Relaxed);
            partitions.push(
                PartitionProduceResponse::default()
                    .with_index(partition.index)
                    .with_base_offset(base_offset)
                    .with_log_append_time_ms(-1),
            );
        }
        topics.push(
            TopicProduceResponse::default()
                .with_name(topic.name)
                .with_partition_responses(partitions),
        );
    }
    Ok(ProduceResponse::default().with_responses(topics))
}

/// Answers each partition from the in-memory log, from the batch holding the fetch offset on, as
/// many whole batches as the partition's and the response's byte limits allow (at least one, as
/// Kafka does). An empty answer waits `max_wait_ms` first, as a long poll would.
async fn fetch(sink: &Sink, request: FetchRequest, version: i16) -> FetchResponse {
    let end = sink.log_end.load(Ordering::Relaxed);
    let mut budget = usize::try_from(request.max_bytes).unwrap_or(usize::MAX);
    let mut any = false;
    let mut topics = Vec::new();
    for topic in request.topics {
        let mut partitions = Vec::new();
        for partition in topic.partitions {
            let limit = usize::try_from(partition.partition_max_bytes)
                .unwrap_or(0)
                .min(budget);
            let first_batch = partition.fetch_offset.max(0) / sink.records_per_batch;
            let batches_before_end = (end + sink.records_per_batch - 1) / sink.records_per_batch;
            let batches = (batches_before_end - first_batch)
                .clamp(0, (limit / sink.batch_bytes).max(1) as i64);
            let start = (first_batch as usize * sink.batch_bytes).min(sink.log.len());
            let stop = (start + batches as usize * sink.batch_bytes).min(sink.log.len());
            let records = sink.log.slice(start..stop);
            budget = budget.saturating_sub(records.len());
            any |= !records.is_empty();
            partitions.push(
                PartitionData::default()
                    .with_partition_index(partition.partition)
                    .with_high_watermark(end)
                    .with_last_stable_offset(end)
                    .with_log_start_offset(0)
                    .with_records(Some(records)),
            );
        }
        let mut response = FetchableTopicResponse::default().with_partitions(partitions);
        if version < 13 {
            response = response.with_topic(topic.topic);
        }
        topics.push(response);
    }
    if !any {
        let wait = u64::try_from(request.max_wait_ms).unwrap_or(0);
        tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
    }
    FetchResponse::default().with_responses(topics)
}
