//! Hostile clients against a running `ferrolog serve`, over loopback: connection floods past
//! the per-address and broker-wide limits, silent connections, size prefixes that declare more
//! than the request memory, CreateTopics for a million partitions, moves of millions of
//! partitions that do not exist, producer ids by the ten thousand, compression bombs in every
//! codec (past a raised `max.message.bytes` too), requests declaring absurd array counts or
//! naming millions of partitions, and fetchers that never read their responses. Through each,
//! the broker stays up, its peak memory (VmHWM, read from /proc and reset between phases) stays
//! under a stated bound, a bystander connected before the phase produces and fetches all along,
//! and a real client (kcat) produces and consumes during and after. The bystander's answer
//! times are printed beside each phase's peak memory (`-- --nocapture`), not asserted.
//!
//! Every abuser is bounded in count and in time; the whole test takes about a minute.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "../common/mod.rs"]
mod common;

mod bombs;
mod floods;
mod state;

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::wire::{connect_from, send};
use common::{Server, kcat};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, CreateTopicsRequest, CreateTopicsResponse, FetchRequest,
    FetchResponse, ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

/// The request memory pool the broker runs with here (`queued.max.request.bytes`).
const POOL_BYTES: u64 = 128 << 20;
/// The memory it decompresses produced batches into (`ferrolog.decompression.memory.bytes`).
const DECOMPRESSION_BYTES: u64 = 64 << 20;
/// What the broker may take beyond its pool and its memory at rest: the 16 copy buffers of
/// 1 MiB, connections' small buffers and task state, and the allocator's slack.
const HEADROOM_BYTES: u64 = 96 << 20;
/// `connections.max.idle.ms` here: long enough that no phase but the never-reading fetchers
/// meets it, short enough to wait for.
const IDLE_LIMIT: Duration = Duration::from_secs(8);
/// `ferrolog.connection.setup.timeout.ms` here: a connection that sends no request is closed
/// after it.
const SETUP_LIMIT: Duration = Duration::from_secs(3);
const MESSAGE_TOO_LARGE: i16 = 10;
const POLICY_VIOLATION: i16 = 44;

fn topic(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

/// (kB) of a `/proc/PID/status` line.
fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Resets the process's peak resident memory (VmHWM) to what it holds now.
fn reset_peak(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

/// An abuse: its name, when the real client runs, and what the abusers do.
type Phase = (&'static str, RealClient, fn(u16));

/// When the real client runs in a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RealClient {
    DuringAndAfter,
    /// At `max.connections` the broker accepts no one, as Kafka: the client runs after.
    After,
}

/// Runs an abuse phase, then checks the broker's peak memory during it against the bound,
/// that it still runs, and that a real client produces and consumes. A bystander connected
/// before the phase produces and fetches throughout it (in phases where the real client runs
/// during it too).
fn phase(
    name: &str,
    server: &mut Server,
    kcat: &Path,
    at_rest: u64,
    real: RealClient,
    work: impl FnOnce(u16) + Send,
) {
    let port = server.port;
    reset_peak(server.pid());
    let topic = name.replace(' ', "-").replace('.', "");
    let done = AtomicBool::new(false);
    let mut bystander = (real == RealClient::DuringAndAfter).then(|| Bystander::connect(port));
    let answers = std::thread::scope(|scope| {
        let abuse = scope.spawn(|| {
            // Set however the work ends, so that a failed phase stops the bystander too.
            let _done = SetOnDrop(&done);
            work(port);
        });
        let answers = bystander
            .as_mut()
            .map(|bystander| scope.spawn(|| bystander.until(&done)));
        if real == RealClient::DuringAndAfter {
            std::thread::sleep(Duration::from_millis(200));
            real_client(kcat, port, &format!("{topic}-during"));
        }
        abuse.join().unwrap();
        answers.map(|answers| answers.join().unwrap())
    });
    real_client(kcat, port, &format!("{topic}-after"));
    assert!(
        server.is_running(),
        "{name}: the broker stopped:\n{}",
        server.stderr()
    );
    let peak = status_kb(server.pid(), "VmHWM:") * 1024;
    let answered = answers.map_or_else(String::new, |mut times| {
        times.sort();
        format!(
            "; a bystander's produce and fetch: {} answered, median {:.1?}, slowest {:.1?}",
            times.len(),
            times[times.len() / 2],
            times[times.len() - 1]
        )
    });
    eprintln!(
        "{name}: peak resident memory {:.0} MiB (at rest {:.0} MiB){answered}",
        peak as f64 / (1 << 20) as f64,
        at_rest as f64 / (1 << 20) as f64
    );
    let bound = at_rest + POOL_BYTES + DECOMPRESSION_BYTES + HEADROOM_BYTES;
    assert!(
        peak <= bound,
        "{name}: peak memory {peak} bytes over the bound {bound}"
    );
}

/// Sets its flag when dropped.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// A client connected before an abuse begins, producing one record and fetching it back over
/// and over while the abuse goes on.
struct Bystander {
    stream: TcpStream,
    next_offset: i64,
}

impl Bystander {
    fn connect(port: u16) -> Self {
        let stream = connect_from("127.0.0.9", port).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut bystander = Self {
            stream,
            next_offset: 0,
        };
        // Where the last phase's bystander left off.
        bystander.next_offset = bystander.log_end();
        bystander
    }

    /// Produces one record: its error code (the next offset moves on when 0).
    fn produce(&mut self) -> i16 {
        // Stamped now: a record from long ago would be past `retention.ms`, and the broker's
        // first retention run (`log.initial.task.delay.ms` after its start) would delete it
        // between this produce and its fetch.
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let records = Bytes::from(ferrolog_testkit::numbered_batch(0, 1, now_ms));
        let answer = produce(&mut self.stream, "bystander", vec![(0, records)])[0];
        if answer == 0 {
            self.next_offset += 1;
        }
        answer
    }

    /// The topic's log end offset, from a fetch at 0.
    fn log_end(&mut self) -> i64 {
        self.next_offset = 1;
        self.fetch_partition().high_watermark
    }

    /// Fetches the record just produced.
    fn fetch(&mut self) {
        let partition = self.fetch_partition();
        assert_eq!(partition.error_code, 0);
        assert_eq!(partition.high_watermark, self.next_offset);
    }

    fn fetch_partition(&mut self) -> kafka_protocol::messages::fetch_response::PartitionData {
        let mut fetched: FetchResponse = send(
            &mut self.stream,
            ApiKey::Fetch,
            12,
            &FetchRequest::default()
                .with_max_wait_ms(0)
                .with_topics(vec![
                    FetchTopic::default()
                        .with_topic(topic("bystander"))
                        .with_partitions(vec![
                            FetchPartition::default()
                                .with_partition(0)
                                .with_fetch_offset(self.next_offset - 1)
                                .with_partition_max_bytes(1 << 20),
                        ]),
                ]),
        )
        .expect("the bystander's fetch is answered");
        fetched.responses.remove(0).partitions.remove(0)
    }

    /// A produce and a fetch every 50 ms until `done`: how long each pair took.
    fn until(&mut self, done: &AtomicBool) -> Vec<Duration> {
        let mut times = Vec::new();
        while !done.load(Ordering::Acquire) || times.is_empty() {
            let started = Instant::now();
            assert_eq!(self.produce(), 0, "the bystander's produce succeeds");
            self.fetch();
            times.push(started.elapsed());
            std::thread::sleep(Duration::from_millis(50));
        }
        times
    }
}

/// kcat produces 200 records to `topic` and reads every one back.
fn real_client(kcat: &Path, port: u16, topic: &str) {
    let lines: Vec<String> = (0..200).map(|i| format!("{topic}-{i}")).collect();
    let input = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(input.path(), lines.join("\n") + "\n").unwrap();
    let broker = format!("127.0.0.1:{port}");
    let produced = std::process::Command::new(kcat)
        .args(["-b", &broker, "-P", "-t", topic, "-l"])
        .arg(input.path())
        .args(["-X", "message.timeout.ms=20000"])
        .output()
        .unwrap();
    assert!(
        produced.status.success(),
        "{topic}: kcat produce: {}",
        String::from_utf8_lossy(&produced.stderr)
    );
    let consumed = common::kcat_lines(kcat, port, &["-C", "-t", topic, "-o", "beginning", "-e"]);
    assert_eq!(consumed, lines, "{topic}: every record comes back");
}

/// Produces (acks=1) `records` to partitions of `name`, one batch each: the error code of each
/// partition's answer, in order.
fn produce(stream: &mut TcpStream, name: &str, records: Vec<(i32, Bytes)>) -> Vec<i16> {
    let produced: ProduceResponse = send(
        stream,
        ApiKey::Produce,
        9,
        &ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(30_000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(topic(name))
                    .with_partition_data(
                        records
                            .into_iter()
                            .map(|(index, records)| {
                                PartitionProduceData::default()
                                    .with_index(index)
                                    .with_records(Some(records))
                            })
                            .collect(),
                    ),
            ]),
    )
    .expect("the produce is answered");
    produced.responses[0]
        .partition_responses
        .iter()
        .map(|partition| partition.error_code)
        .collect()
}

/// ApiVersions v3 as a client sends it, naming its software.
fn versions_request() -> ApiVersionsRequest {
    ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("ferrolog-tests"))
        .with_client_software_version(StrBytes::from_static_str("1.0"))
}

/// Writes `megabytes` MiB of records to partition 0 of `name` through kcat.
fn fill(kcat: &Path, port: u16, name: &str, megabytes: usize) {
    let line = "x".repeat(1000);
    let input = tempfile::NamedTempFile::new().unwrap();
    let mut file = std::fs::File::create(input.path()).unwrap();
    for _ in 0..megabytes * 1024 {
        writeln!(file, "{line}").unwrap();
    }
    let output = std::process::Command::new(kcat)
        .args(["-b", &format!("127.0.0.1:{port}"), "-P", "-t", name, "-l"])
        .arg(input.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn abusive_clients_neither_stop_the_broker_nor_exhaust_its_memory() {
    let Some(kcat) = kcat() else {
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    let mut server = Server::start_with(
        &temp.path().join("data"),
        &[
            "max.connections=300",
            "max.connections.per.ip.overrides=127.0.0.2:50,127.0.0.3:40,127.0.0.4:60",
            &format!("queued.max.request.bytes={POOL_BYTES}"),
            "socket.request.max.bytes=67108864",
            &format!("connections.max.idle.ms={}", IDLE_LIMIT.as_millis()),
            &format!("ferrolog.decompression.memory.bytes={DECOMPRESSION_BYTES}"),
            &format!(
                "ferrolog.connection.setup.timeout.ms={}",
                SETUP_LIMIT.as_millis()
            ),
        ],
    );
    let port = server.port;
    fill(&kcat, port, "fetched", 40);
    let mut admin = connect_from("127.0.0.1", port).unwrap();
    let created: CreateTopicsResponse = send(
        &mut admin,
        ApiKey::CreateTopics,
        5,
        &CreateTopicsRequest::default().with_topics(vec![
            CreatableTopic::default()
                .with_name(topic("bombed"))
                .with_num_partitions(1)
                .with_replication_factor(1),
            CreatableTopic::default()
                .with_name(topic("raised"))
                .with_num_partitions(1)
                .with_replication_factor(1)
                .with_configs(vec![
                    CreatableTopicConfig::default()
                        .with_name(StrBytes::from_static_str("max.message.bytes"))
                        .with_value(Some(StrBytes::from_static_str("2147483647"))),
                ]),
            CreatableTopic::default()
                .with_name(topic("bystander"))
                .with_num_partitions(1)
                .with_replication_factor(1),
            CreatableTopic::default()
                .with_name(topic(state::PRODUCERS_TOPIC))
                .with_num_partitions(state::PRODUCERS_PARTITIONS)
                .with_replication_factor(1),
        ]),
    )
    .unwrap();
    for created in &created.topics {
        assert_eq!(created.error_code, 0, "{:?}", created.name);
    }
    drop(admin);
    real_client(&kcat, port, "warm-up");
    let at_rest = status_kb(server.pid(), "VmRSS:") * 1024;

    use RealClient::{After, DuringAndAfter};
    let phases: [Phase; 11] = [
        (
            "connection flood from one address",
            DuringAndAfter,
            floods::flood,
        ),
        (
            "size prefixes past the request memory",
            DuringAndAfter,
            floods::stalled_prefixes,
        ),
        (
            "silent connections",
            DuringAndAfter,
            floods::silent_connections,
        ),
        (
            "huge CreateTopics",
            DuringAndAfter,
            state::huge_create_topics,
        ),
        (
            "moves of partitions that do not exist",
            DuringAndAfter,
            state::moves_of_missing_partitions,
        ),
        (
            "producer ids by the ten thousand",
            DuringAndAfter,
            state::producer_ids,
        ),
        (
            "compression bombs",
            DuringAndAfter,
            bombs::compression_bombs,
        ),
        (
            "bombs past a raised max.message.bytes",
            DuringAndAfter,
            bombs::bombs_past_a_raised_max_message_bytes,
        ),
        ("absurd array counts", DuringAndAfter, bombs::absurd_counts),
        (
            "fetchers that never read",
            DuringAndAfter,
            floods::never_reading_fetchers,
        ),
        (
            "connections past max.connections",
            After,
            floods::flood_past_the_broker_limit,
        ),
    ];
    for (name, real, work) in phases {
        phase(name, &mut server, &kcat, at_rest, real, work);
    }
    server.stop();
}

#[test]
fn a_broker_out_of_file_descriptors_keeps_serving_once_some_close() {
    let Some(kcat) = kcat() else {
        return;
    };
    if !common::prlimit_works() {
        return;
    }
    // 160 descriptors in all (soft and hard, so the broker cannot raise it): the flood below
    // exhausts them while max.connections (4096) still admits more.
    let temp = tempfile::tempdir().unwrap();
    let mut server = Server::start_under(
        &["prlimit", "--nofile=160:160"],
        &temp.path().join("data"),
        &[],
        "warn",
    );
    let port = server.port;
    real_client(&kcat, port, "before");
    // Past the descriptors the broker has, and within the listen backlog (128) behind them.
    let flood: Vec<TcpStream> = (0..220)
        .filter_map(|index| connect_from(&format!("127.0.2.{}", index % 200 + 1), port).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        server.is_running(),
        "accept failures must not stop the broker"
    );
    assert!(
        server.stderr().contains("accepting a connection failed"),
        "the failures are logged:\n{}",
        server.stderr()
    );
    drop(flood);
    std::thread::sleep(Duration::from_millis(1500));
    real_client(&kcat, port, "after");
    assert!(server.is_running());
    server.stop();
}
