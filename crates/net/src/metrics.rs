//! The Prometheus endpoint (`metrics.listener`): Kafka's metrics under Kafka's names, turned
//! into Prometheus names the way the common JMX exporter rules do — `kafka.log:type=Log,
//! name=LogEndOffset,topic=T,partition=P` becomes `kafka_log_log_logendoffset{topic="T",
//! partition="P"}`; per-second rates become `_total` counters (Prometheus derives the rate).
//!
//! Counters and histograms are recorded where things happen (requests and the error codes of
//! every response in `dispatch`, bytes in produce and fetch, flushes in the storage layer, startup recovery progress in the
//! LogManager); gauges that describe state (offsets, sizes, cleaner figures, offline
//! directories) are read from the LogManager when the endpoint is scraped, so they are never
//! stale. The endpoint is a minimal HTTP/1.1 responder: any `GET` gets the text exposition. It
//! is bounded as the broker's listeners are: [`MAX_SCRAPES`] connections at once, each with its
//! time limits, and an accept loop that pauses on failures instead of ending.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ferrolog_storage::manager::LogManager;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::network::backoff::AcceptBackoff;

/// A gauge not set for this long is dropped from the output: the state gauges are set at every
/// scrape for the partitions that exist, so a deleted partition's disappear.
const STALE_GAUGE: Duration = Duration::from_secs(60);

/// Installs the process-wide recorder. Call once, before anything records.
pub fn install() -> Result<PrometheusHandle, String> {
    PrometheusBuilder::new()
        .idle_timeout(metrics_util::MetricKindMask::GAUGE, Some(STALE_GAUGE))
        .set_buckets(&[
            0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 5000.0,
        ])
        .map_err(|error| error.to_string())?
        .install_recorder()
        .map_err(|error| format!("installing the metrics recorder: {error}"))
}

/// Scrapes served at once; further connections wait in the listen backlog until one ends. Each
/// holds a descriptor and refreshes every partition's gauges: a scraper needs one or two.
pub const MAX_SCRAPES: usize = 32;
/// How long a scraper has to send its request, and then to read the answer; a connection that
/// takes longer is closed, so that idle connections cannot hold the endpoint's slots.
pub const SCRAPE_REQUEST_WITHIN: Duration = Duration::from_secs(5);
pub const SCRAPE_ANSWER_WITHIN: Duration = Duration::from_secs(30);
/// The longest request head read; the rest is not looked at.
const MAX_REQUEST_HEAD: usize = 8 * 1024;

/// More of the exposition, written by a layer above: the metrics clients pushed.
pub type MoreMetrics = Box<dyn Fn() -> String + Send + Sync>;

/// Serves scrapes until the future is dropped; it never ends on its own. `manager` is filled in
/// once the LogManager has opened, and `more` once the broker is up; until then only the
/// startup figures (recovery progress) are there. A failed `accept` pauses accepting, as the
/// broker's listeners do ([`crate::network::backoff`]).
pub async fn serve(
    listener: TcpListener,
    handle: PrometheusHandle,
    manager: Arc<OnceLock<Arc<LogManager>>>,
    more: Arc<OnceLock<MoreMetrics>>,
) {
    let slots = Arc::new(Semaphore::new(MAX_SCRAPES));
    let mut backoff = AcceptBackoff::new();
    loop {
        // The semaphore is never closed.
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                tokio::time::sleep(backoff.failed(&error, "metrics")).await;
                continue;
            }
        };
        backoff.succeeded();
        let handle = handle.clone();
        let manager = Arc::clone(&manager);
        let more = Arc::clone(&more);
        tokio::spawn(async move {
            let _slot = slot;
            scrape(stream, &handle, &manager, &more).await;
        });
    }
}

/// Answers one scrape: any request head gets the text exposition.
async fn scrape(
    mut stream: TcpStream,
    handle: &PrometheusHandle,
    manager: &OnceLock<Arc<LogManager>>,
    more: &Arc<OnceLock<MoreMetrics>>,
) {
    let head = tokio::time::timeout(SCRAPE_REQUEST_WITHIN, read_request_head(&mut stream)).await;
    if !matches!(head, Ok(Ok(true))) {
        return;
    }
    if let Some(manager) = manager.get() {
        let manager = Arc::clone(manager);
        if let Err(error) = crate::bridge::blocking(move || refresh(&manager)).await {
            tracing::warn!(%error, "the log gauges were not refreshed for this scrape");
        }
    }
    let mut body = handle.render();
    if more.get().is_some() {
        let more = Arc::clone(more);
        match crate::bridge::blocking(move || more.get().map(|render| render())).await {
            Ok(Some(text)) => body.push_str(&text),
            Ok(None) => {}
            Err(error) => tracing::warn!(%error, "the pushed client metrics were not rendered"),
        }
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let answer = async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(SCRAPE_ANSWER_WITHIN, answer).await;
}

/// Reads until the end of an HTTP request head (a blank line), [`MAX_REQUEST_HEAD`] bytes, or
/// the end of the stream; `false` when the client sent nothing.
async fn read_request_head(stream: &mut TcpStream) -> std::io::Result<bool> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while head.len() < MAX_REQUEST_HEAD && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..read]);
    }
    Ok(!head.is_empty())
}

/// Sets the state gauges from the LogManager.
pub fn refresh(manager: &LogManager) {
    for (topic_partition, log) in manager.logs() {
        let labels = [
            ("topic", topic_partition.topic.clone()),
            ("partition", topic_partition.partition.to_string()),
        ];
        metrics::gauge!("kafka_log_log_logstartoffset", &labels)
            .set(log.log_start_offset().value() as f64);
        metrics::gauge!("kafka_log_log_logendoffset", &labels)
            .set(log.log_end_offset().value() as f64);
        metrics::gauge!("kafka_log_log_size", &labels).set(log.size_in_bytes() as f64);
        metrics::gauge!("kafka_log_log_numlogsegments", &labels).set(log.segment_count() as f64);
    }
    metrics::gauge!("kafka_log_logmanager_offlinelogdirectorycount")
        .set(manager.offline_dir_count() as f64);
    let open_files = manager.open_files();
    metrics::gauge!("ferrolog_log_open_sealed_segments").set(open_files.open_count() as f64);
    metrics::counter!("ferrolog_log_sealed_segment_file_opens_total")
        .absolute(open_files.reopened());
    metrics::counter!("ferrolog_log_sealed_segment_index_maps_total")
        .absolute(open_files.remapped());
    metrics::gauge!("kafka_server_socket_server_metrics_connection_count")
        .set(OPEN_CONNECTIONS.load(std::sync::atomic::Ordering::Relaxed) as f64);
    if let Some(cleaner) = manager.cleaner() {
        use std::sync::atomic::Ordering::Relaxed;
        let stats = &cleaner.stats;
        metrics::gauge!("kafka_log_logcleaner_max_dirty_percent")
            .set(stats.max_dirty_percent.load(Relaxed) as f64);
        metrics::gauge!("kafka_log_logcleaner_max_clean_time_secs")
            .set(stats.max_clean_time_ms.load(Relaxed) as f64 / 1000.0);
        metrics::gauge!("kafka_log_logcleaner_max_compaction_delay_secs")
            .set(stats.max_compaction_delay_ms.load(Relaxed) as f64 / 1000.0);
        metrics::gauge!("kafka_log_logcleaner_cleaner_recopy_percent")
            .set(stats.recopy_percent.load(Relaxed) as f64);
        metrics::gauge!("kafka_log_logcleaner_max_buffer_utilization_percent")
            .set(stats.buffer_utilization_percent.load(Relaxed) as f64);
        metrics::gauge!("kafka_log_logcleaner_deadthreadcount")
            .set(stats.dead_threads.load(Relaxed) as f64);
        metrics::gauge!("kafka_log_logcleanermanager_uncleanable_partitions_count")
            .set(cleaner.uncleanable_partitions().len() as f64);
        metrics::gauge!("kafka_log_logcleanermanager_uncleanable_bytes")
            .set(cleaner.uncleanable_bytes() as f64);
        metrics::counter!("ferrolog_log_cleaner_passes_total").absolute(stats.passes.load(Relaxed));
    }
}

/// Counts one request and its time (Kafka's `RequestsPerSec` and `TotalTimeMs`).
pub fn record_request(api: &str, millis: f64) {
    metrics::counter!("kafka_network_requestmetrics_requests_total", "request" => api.to_owned())
        .increment(1);
    metrics::histogram!("kafka_network_requestmetrics_totaltimems", "request" => api.to_owned())
        .record(millis);
}

/// Counts an error answered to a request (Kafka's `ErrorsPerSec`), by Kafka's error name.
pub fn record_error(api: &str, code: i16) {
    metrics::counter!(
        "kafka_network_requestmetrics_errors_total",
        "request" => api.to_owned(),
        "error" => crate::errors::name_of(code)
    )
    .increment(1);
}

/// Bytes and messages a produce appended to `topic` (Kafka's `BytesInPerSec`,
/// `MessagesInPerSec`).
pub fn record_produced(topic: &str, bytes: u64, messages: u64) {
    metrics::counter!("kafka_server_brokertopicmetrics_bytesin_total", "topic" => topic.to_owned())
        .increment(bytes);
    metrics::counter!("kafka_server_brokertopicmetrics_messagesin_total", "topic" => topic.to_owned())
        .increment(messages);
}

/// Bytes a fetch returned from `topic` (Kafka's `BytesOutPerSec`).
pub fn record_fetched(topic: &str, bytes: u64) {
    metrics::counter!("kafka_server_brokertopicmetrics_bytesout_total", "topic" => topic.to_owned())
        .increment(bytes);
}

/// Client connections open now; read into a gauge at every scrape.
static OPEN_CONNECTIONS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// A client connection, counted while it lives (Kafka's `connection-count` and
/// `connection-creation-total` of `socket-server-metrics`), also if its task panics.
#[derive(Debug)]
pub struct OpenConnection(());

impl OpenConnection {
    #[allow(clippy::new_without_default, reason = "each one counts a connection")]
    pub fn new() -> Self {
        OPEN_CONNECTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        metrics::counter!("kafka_server_socket_server_metrics_connection_creation_total")
            .increment(1);
        Self(())
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        OPEN_CONNECTIONS.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A connection closed because it had not finished its TLS handshake or authentication, or sent
/// its first request, within `ferrolog.connection.setup.timeout.ms`.
pub fn record_setup_timeout() {
    metrics::counter!("ferrolog_network_connections_setup_timed_out_total").increment(1);
}

/// An `accept` that failed (out of file descriptors, say); the listener goes on after a pause.
pub fn record_accept_failure() {
    metrics::counter!("ferrolog_network_accept_failures_total").increment(1);
}

/// A connection `listener` accepted and held back `ms` milliseconds, over a connection
/// creation rate (Kafka's `connection-accept-throttle-time` averages these).
pub fn record_accept_throttle(listener: &str, ms: i64) {
    let labels = [("listener", listener.to_owned())];
    metrics::counter!("ferrolog_network_accept_throttled_total", &labels).increment(1);
    metrics::counter!("ferrolog_network_accept_throttle_ms_total", &labels)
        .increment(u64::try_from(ms).unwrap_or(0));
}

/// A SASL exchange that ended: authenticated, or failed (wrong credentials, a refused
/// mechanism, a frame out of place), as Kafka's `successful-authentication-total` and
/// `failed-authentication-total` count them.
pub fn record_authentication(succeeded: bool) {
    if succeeded {
        metrics::counter!("kafka_server_socket_server_metrics_successful_authentication_total")
            .increment(1);
    } else {
        metrics::counter!("kafka_server_socket_server_metrics_failed_authentication_total")
            .increment(1);
    }
}

/// What a client under a quota spent and the throttle it earned, under Kafka's names for the
/// quota's group (`kafka.server:type=Produce|Fetch|ControllerMutation,user=..,client-id=..`:
/// `byte-rate`, a `_total` counter here, and `throttle-time`, recorded only when non-zero as
/// Kafka's average is). As in Kafka's JMX names, a tag left empty by the quota's level is left out.
pub fn record_quota(
    group: &str,
    user: &str,
    client_id: &str,
    bytes: Option<u64>,
    throttle_ms: i64,
) {
    let mut labels = Vec::new();
    if !user.is_empty() {
        labels.push(metrics::Label::new("user", user.to_owned()));
    }
    if !client_id.is_empty() {
        labels.push(metrics::Label::new("client_id", client_id.to_owned()));
    }
    let group = group.to_ascii_lowercase();
    if let Some(bytes) = bytes {
        metrics::counter!(format!("kafka_server_{group}_byte_total"), labels.clone())
            .increment(bytes);
    }
    if throttle_ms > 0 {
        metrics::histogram!(format!("kafka_server_{group}_throttle_time"), labels)
            .record(throttle_ms as f64);
    }
}
