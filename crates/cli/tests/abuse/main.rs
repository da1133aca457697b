//! Hostile clients against a running `ferrolog serve`, over loopback: connection floods past
//! the per-address and broker-wide limits, CreateTopics for a million partitions, compression
//! bombs in every codec, requests declaring absurd array counts or naming millions of
//! partitions, and fetchers that never read their responses. Through each, the broker stays
//! up, its peak memory (VmHWM, read from /proc and reset between phases) stays under a stated
//! bound, and a real client (kcat) produces and consumes during and after.
//!
//! Every abuser is bounded in count and in time; the whole test takes about half a minute.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::wire::{connect_from, exchange, frame, send};
use common::{Server, kcat};
use ferrolog_records::{BatchBuilder, Compression};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, CreateTopicsRequest, CreateTopicsResponse, FetchRequest,
    ProduceRequest, ProduceResponse, TopicName,
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
const MESSAGE_TOO_LARGE: i16 = 10;
const POLICY_VIOLATION: i16 = 44;

fn topic(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

/// Reads what the broker sends until it closes the connection (EOF or reset): `Some(bytes
/// read)`, or `None` when it is still open after `wait`.
fn read_until_closed(stream: &mut TcpStream, wait: Duration) -> Option<usize> {
    let deadline = Instant::now() + wait;
    let mut sink = vec![0u8; 1 << 20];
    let mut total = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut sink) {
            Ok(0) => return Some(total),
            Ok(read) => total += read,
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return None;
            }
            Err(_) => return Some(total),
        }
    }
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
/// that it still runs, and that a real client produces and consumes.
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
    std::thread::scope(|scope| {
        let abuse = scope.spawn(|| work(port));
        if real == RealClient::DuringAndAfter {
            std::thread::sleep(Duration::from_millis(200));
            real_client(kcat, port, &format!("{topic}-during"));
        }
        abuse.join().unwrap();
    });
    real_client(kcat, port, &format!("{topic}-after"));
    assert!(
        server.is_running(),
        "{name}: the broker stopped:\n{}",
        server.stderr()
    );
    let peak = status_kb(server.pid(), "VmHWM:") * 1024;
    eprintln!(
        "{name}: peak resident memory {:.0} MiB (at rest {:.0} MiB)",
        peak as f64 / (1 << 20) as f64,
        at_rest as f64 / (1 << 20) as f64
    );
    let bound = at_rest + POOL_BYTES + DECOMPRESSION_BYTES + HEADROOM_BYTES;
    assert!(
        peak <= bound,
        "{name}: peak memory {peak} bytes over the bound {bound}"
    );
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

/// ApiVersions v3 as a client sends it, naming its software.
fn versions_request() -> ApiVersionsRequest {
    ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("ferrolog-tests"))
        .with_client_software_version(StrBytes::from_static_str("1.0"))
}

fn flood(port: u16) {
    // One address past its limit of 50: each connection asks for ApiVersions as soon as it is
    // open; the broker answers the first 50, which stay open, and closes every later one
    // unanswered. Nothing here waits on a clock: all 400 take well under the idle limit.
    let request = frame(ApiKey::ApiVersions, 3, &versions_request());
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..400 {
        let mut stream = connect_from("127.0.0.2", port).unwrap();
        match exchange(&mut stream, &request) {
            Some(_) => held.push(stream),
            None => refused += 1,
        }
    }
    assert_eq!(
        held.len(),
        50,
        "connections from one address that were served"
    );
    assert_eq!(refused, 350);
    for stream in &mut held {
        assert!(
            exchange(stream, &request).is_some(),
            "a connection within the limit is still served"
        );
    }
}

fn flood_past_the_broker_limit(port: u16) {
    // max.connections is 300: past it the broker accepts no more (they wait in the listen
    // backlog, unanswered) until connections close. The 300 answers are awaited (up to 30 s on
    // a loaded machine), then the other 60 are given half a second more to show they stay
    // unanswered. All of this takes well under the idle limit, which would otherwise free
    // slots.
    let request = frame(ApiKey::ApiVersions, 3, &versions_request());
    let mut held: Vec<TcpStream> = (0..360)
        .filter_map(|index| connect_from(&format!("127.0.1.{}", index % 200 + 1), port).ok())
        .collect();
    assert_eq!(
        held.len(),
        360,
        "every connection waits in the listen backlog"
    );
    for stream in &mut held {
        stream.write_all(&request).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(1)))
            .unwrap();
    }
    let mut answered = vec![false; held.len()];
    let count_answers = |held: &mut [TcpStream], answered: &mut [bool]| {
        for (stream, answered) in held.iter_mut().zip(answered.iter_mut()) {
            let mut size = [0u8; 4];
            if !*answered && stream.read_exact(&mut size).is_ok() {
                *answered = true;
            }
        }
        answered.iter().filter(|answered| **answered).count()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while count_answers(&mut held, &mut answered) < 300 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        count_answers(&mut held, &mut answered),
        300,
        "connections served at max.connections=300"
    );
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
}

fn huge_create_topics(port: u16) {
    let mut stream = connect_from("127.0.0.3", port).unwrap();
    for _ in 0..20 {
        let created: CreateTopicsResponse = send(
            &mut stream,
            ApiKey::CreateTopics,
            5,
            &CreateTopicsRequest::default().with_topics(vec![
                CreatableTopic::default()
                    .with_name(topic("a-million"))
                    .with_num_partitions(1_000_000)
                    .with_replication_factor(1),
            ]),
        )
        .unwrap();
        assert_eq!(created.topics[0].error_code, POLICY_VIOLATION);
    }
}

/// A batch of one record holding 8 MiB of zeros, compressed with `codec`.
fn bomb(codec: Compression) -> Bytes {
    let mut builder = BatchBuilder::new(0).compression(codec);
    builder
        .append(0, None, Some(&vec![0u8; 8 << 20]), &[])
        .unwrap();
    Bytes::from(builder.build().unwrap())
}

/// A snappy batch whose records are one raw block declaring 250 MiB in a few bytes.
fn snappy_declaring(bytes: u64) -> Bytes {
    use ferrolog_records::batch::{compute_crc, field};
    let mut batch = BatchBuilder::new(0);
    batch.append(0, None, Some(b"x"), &[]).unwrap();
    let mut batch = batch.build().unwrap();
    batch.truncate(field::RECORDS);
    let mut declared = bytes;
    while declared >= 0x80 {
        batch.push((declared as u8) | 0x80);
        declared >>= 7;
    }
    batch.push(declared as u8);
    batch.extend_from_slice(&[0, 0, 0]);
    let length = (batch.len() - 12) as i32;
    batch[8..12].copy_from_slice(&length.to_be_bytes());
    batch[field::ATTRIBUTES + 1] |= Compression::Snappy.id();
    let crc = compute_crc(&batch);
    batch[field::CRC..field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(batch)
}

/// A zstd batch of one record whose value is `value_bytes` zeros, compressed as a stream: a
/// few kilobytes that inflate to gigabytes.
fn zstd_bomb(value_bytes: u64) -> Bytes {
    use ferrolog_records::batch::{compute_crc, field};
    fn varint(mut value: u64, out: &mut Vec<u8>) {
        while value >= 0x80 {
            out.push((value as u8) | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    }
    let zigzag = |value: i64| ((value << 1) ^ (value >> 63)) as u64;
    // Attributes, timestamp and offset deltas, a null key, then the value's length.
    let mut head = vec![0, 0, 0, 1];
    varint(zigzag(value_bytes as i64), &mut head);
    let length = head.len() as u64 + value_bytes + 1;
    let mut record_start = Vec::new();
    varint(zigzag(length as i64), &mut record_start);
    record_start.extend_from_slice(&head);
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
    encoder.write_all(&record_start).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..value_bytes / zeros.len() as u64 {
        encoder.write_all(&zeros).unwrap();
    }
    // No headers.
    encoder.write_all(&[0]).unwrap();
    let compressed = encoder.finish().unwrap();
    let mut batch = BatchBuilder::new(0);
    batch.append(0, None, Some(b"x"), &[]).unwrap();
    let mut batch = batch.build().unwrap();
    batch.truncate(field::RECORDS);
    batch.extend_from_slice(&compressed);
    let batch_length = (batch.len() - 12) as i32;
    batch[8..12].copy_from_slice(&batch_length.to_be_bytes());
    batch[field::ATTRIBUTES + 1] |= Compression::Zstd.id();
    let crc = compute_crc(&batch);
    batch[field::CRC..field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(batch)
}

/// Three 1 GiB zstd bombs at once to a topic whose `max.message.bytes` a client raised to
/// 2 GiB: refused at the broker's decompression memory, which no topic config lifts.
fn bombs_past_a_raised_max_message_bytes(port: u16) {
    let bomb = zstd_bomb(1 << 30);
    assert!(bomb.len() < 100_000, "{} bytes", bomb.len());
    std::thread::scope(|scope| {
        for _ in 0..3 {
            let bomb = bomb.clone();
            scope.spawn(move || {
                let mut stream = connect_from("127.0.0.3", port).unwrap();
                let produced: ProduceResponse = send(
                    &mut stream,
                    ApiKey::Produce,
                    9,
                    &ProduceRequest::default()
                        .with_acks(1)
                        .with_timeout_ms(5000)
                        .with_topic_data(vec![
                            TopicProduceData::default()
                                .with_name(topic("raised"))
                                .with_partition_data(vec![
                                    PartitionProduceData::default()
                                        .with_index(0)
                                        .with_records(Some(bomb)),
                                ]),
                        ]),
                )
                .unwrap();
                assert_eq!(
                    produced.responses[0].partition_responses[0].error_code,
                    MESSAGE_TOO_LARGE
                );
            });
        }
    });
}

fn compression_bombs(port: u16) {
    let mut bombs: Vec<Bytes> = [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ]
    .into_iter()
    .map(bomb)
    .collect();
    bombs.push(snappy_declaring(250 << 20));
    std::thread::scope(|scope| {
        for thread in 0..8 {
            let bombs = &bombs;
            scope.spawn(move || {
                let mut stream = connect_from("127.0.0.3", port).unwrap();
                for round in 0..6 {
                    let records = bombs[(thread + round) % bombs.len()].clone();
                    let produced: ProduceResponse = send(
                        &mut stream,
                        ApiKey::Produce,
                        9,
                        &ProduceRequest::default()
                            .with_acks(1)
                            .with_timeout_ms(5000)
                            .with_topic_data(vec![
                                TopicProduceData::default()
                                    .with_name(topic("bombed"))
                                    .with_partition_data(vec![
                                        PartitionProduceData::default()
                                            .with_index(0)
                                            .with_records(Some(records)),
                                    ]),
                            ]),
                    )
                    .unwrap();
                    assert_eq!(
                        produced.responses[0].partition_responses[0].error_code,
                        MESSAGE_TOO_LARGE
                    );
                }
            });
        }
    });
}

fn absurd_counts(port: u16) {
    // Produce v3 declaring two billion topics, and Metadata v1 two billion topic names.
    let mut produce = Vec::new();
    produce.extend_from_slice(&(0i16).to_be_bytes());
    produce.extend_from_slice(&3i16.to_be_bytes());
    produce.extend_from_slice(&1i32.to_be_bytes());
    produce.extend_from_slice(&(-1i16).to_be_bytes());
    produce.extend_from_slice(&(-1i16).to_be_bytes());
    produce.extend_from_slice(&1i16.to_be_bytes());
    produce.extend_from_slice(&1000i32.to_be_bytes());
    produce.extend_from_slice(&2_000_000_000i32.to_be_bytes());
    let mut metadata = Vec::new();
    metadata.extend_from_slice(&3i16.to_be_bytes());
    metadata.extend_from_slice(&1i16.to_be_bytes());
    metadata.extend_from_slice(&1i32.to_be_bytes());
    metadata.extend_from_slice(&(-1i16).to_be_bytes());
    metadata.extend_from_slice(&2_000_000_000i32.to_be_bytes());
    // A 60 MiB Produce naming 7.8 million partitions (null records, 8 bytes each): it decodes
    // and is answered at many times its size, so it is refused for the memory it would take.
    let partitions = 7_800_000usize;
    let mut many = Vec::with_capacity(16 + partitions * 8);
    many.extend_from_slice(&(0i16).to_be_bytes());
    many.extend_from_slice(&3i16.to_be_bytes());
    many.extend_from_slice(&1i32.to_be_bytes());
    many.extend_from_slice(&(-1i16).to_be_bytes());
    many.extend_from_slice(&(-1i16).to_be_bytes());
    many.extend_from_slice(&1i16.to_be_bytes());
    many.extend_from_slice(&1000i32.to_be_bytes());
    many.extend_from_slice(&1i32.to_be_bytes());
    many.extend_from_slice(&1i16.to_be_bytes());
    many.push(b't');
    many.extend_from_slice(&(partitions as i32).to_be_bytes());
    for index in 0..partitions {
        many.extend_from_slice(&(index as i32).to_be_bytes());
        many.extend_from_slice(&(-1i32).to_be_bytes());
    }
    for body in [produce, metadata, many] {
        for _ in 0..4 {
            let mut stream = connect_from("127.0.0.3", port).unwrap();
            let mut framed = (body.len() as i32).to_be_bytes().to_vec();
            framed.extend_from_slice(&body);
            assert!(
                exchange(&mut stream, &framed).is_none(),
                "the broker closes the connection rather than decode it"
            );
        }
    }
}

fn never_reading_fetchers(port: u16) {
    // 40 fetches of up to 50 MiB from a topic holding 40 MiB, none read: each write stalls as
    // soon as the socket buffers fill, and connections.max.idle.ms closes them.
    let mut stalled: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut stream = connect_from("127.0.0.4", port).unwrap();
            let fetch = FetchRequest::default()
                .with_max_wait_ms(100)
                .with_max_bytes(50 << 20)
                .with_topics(vec![
                    FetchTopic::default()
                        .with_topic(topic("fetched"))
                        .with_partitions(vec![
                            FetchPartition::default()
                                .with_partition(0)
                                .with_fetch_offset(0)
                                .with_partition_max_bytes(50 << 20),
                        ]),
                ]);
            stream.write_all(&frame(ApiKey::Fetch, 12, &fetch)).unwrap();
            stream
        })
        .collect();
    // Reading before the idle limit passes would unblock the writes.
    std::thread::sleep(IDLE_LIMIT + Duration::from_secs(2));
    for stream in &mut stalled {
        let read = read_until_closed(stream, Duration::from_secs(10))
            .expect("a connection that reads nothing is closed after connections.max.idle.ms");
        // What arrived is what the socket buffers took before the writes stalled (3.9 MiB
        // here), nowhere near the 40 MiB response.
        assert!(read < 20 << 20, "the response was cut short: {read} bytes");
    }
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
                    kafka_protocol::messages::create_topics_request::CreatableTopicConfig::default(
                    )
                    .with_name(StrBytes::from_static_str("max.message.bytes"))
                    .with_value(Some(StrBytes::from_static_str("2147483647"))),
                ]),
        ]),
    )
    .unwrap();
    assert_eq!(created.topics[0].error_code, 0);
    assert_eq!(created.topics[1].error_code, 0);
    drop(admin);
    real_client(&kcat, port, "warm-up");
    let at_rest = status_kb(server.pid(), "VmRSS:") * 1024;

    use RealClient::{After, DuringAndAfter};
    let phases: [Phase; 7] = [
        ("connection flood from one address", DuringAndAfter, flood),
        ("huge CreateTopics", DuringAndAfter, huge_create_topics),
        ("compression bombs", DuringAndAfter, compression_bombs),
        (
            "bombs past a raised max.message.bytes",
            DuringAndAfter,
            bombs_past_a_raised_max_message_bytes,
        ),
        ("absurd array counts", DuringAndAfter, absurd_counts),
        (
            "fetchers that never read",
            DuringAndAfter,
            never_reading_fetchers,
        ),
        (
            "connections past max.connections",
            After,
            flood_past_the_broker_limit,
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
    let prlimit_works = std::process::Command::new("prlimit")
        .args(["--nofile=64:64", "true"])
        .status()
        .is_ok_and(|status| status.success());
    if !prlimit_works {
        println!("skipped: prlimit cannot lower the file limit here");
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
