//! Client telemetry (KIP-714). Kafka 4.4's `kafka-client-metrics` prints the same from
//! ferrolog and from Kafka 4.4 as subscriptions are listed, made, described, refused and
//! deleted; and a Java producer under a subscription pushes its metrics to ferrolog, which
//! shows them on its Prometheus endpoint. (A stock Kafka keeps pushed metrics only through a
//! plugin, so that half has no Kafka side.)

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::kafka::{KafkaPeer, kafka_available, kafka_tool};
use common::wire::{connect, send};
use common::{Server, free_port};
use kafka_protocol::messages::{
    ApiKey, GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse,
    PushTelemetryRequest, PushTelemetryResponse,
};

const CLIENT_METRICS_COMMAND: &str = "org.apache.kafka.tools.ClientMetricsCommand";
const PRODUCER_PERFORMANCE: &str = "org.apache.kafka.tools.ProducerPerformance";

/// `kafka-client-metrics` against `bootstrap`: its exit status, stdout and stderr.
fn client_metrics(bootstrap: &str, args: &[&str]) -> String {
    let mut all = vec!["--bootstrap-server", bootstrap];
    all.extend_from_slice(args);
    let output = kafka_tool(CLIENT_METRICS_COMMAND, &all, b"");
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The JVM's own warnings are not the tool's answer, nor the time a line was logged.
    let stderr: Vec<&str> = stderr
        .lines()
        .filter(|line| !line.contains("WARNING") && !line.starts_with("SLF4J"))
        .map(|line| match line.split_once("] ") {
            Some((stamp, rest)) if stamp.starts_with("[20") => rest,
            _ => line,
        })
        .collect();
    format!(
        "$ {}\nexit {}\n{}{}",
        args.join(" "),
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout),
        stderr.join("\n")
    )
}

/// Each step of the scenario, as printed.
fn transcript(bootstrap: &str) -> Vec<String> {
    let steps: &[&[&str]] = &[
        &["--list"],
        &[
            "--alter",
            "--name",
            "producers",
            "--metrics",
            "org.apache.kafka.producer.,org.apache.kafka.consumer.",
            "--interval",
            "1000",
            "--match",
            "client_software_name=apache-kafka-java,client_id=perf-.*",
        ],
        &["--describe", "--name", "producers"],
        &["--describe", "--name", "nosuch"],
        &["--alter", "--name", "fast", "--interval", "50"],
        &["--alter", "--name", "odd", "--match", "colour=red"],
        &["--alter", "--name", "bad", "--interval", "abc"],
        &["--list"],
        &["--alter", "--name", "producers", "--interval", "2000"],
        &["--describe"],
        &["--delete", "--name", "producers"],
        &["--list"],
        &["--delete", "--name", "never-was"],
    ];
    steps
        .iter()
        .map(|args| client_metrics(bootstrap, args))
        .collect()
}

/// GetTelemetrySubscriptions of `instance` (nil: a new one): its answer, without the instance
/// and subscription ids (drawn at random), and those ids.
fn get(stream: &mut TcpStream, instance: uuid::Uuid) -> (String, uuid::Uuid, i32) {
    let request = GetTelemetrySubscriptionsRequest::default().with_client_instance_id(instance);
    let answer: GetTelemetrySubscriptionsResponse =
        send(stream, ApiKey::GetTelemetrySubscriptions, 0, &request).unwrap();
    let shown = format!(
        "get: {} metrics {:?} every {} ms, codecs {:?}, at most {} bytes, delta {}",
        answer.error_code,
        answer.requested_metrics,
        answer.push_interval_ms,
        answer.accepted_compression_types,
        answer.telemetry_max_bytes,
        answer.delta_temporality
    );
    (shown, answer.client_instance_id, answer.subscription_id)
}

fn push(
    stream: &mut TcpStream,
    (instance, subscription): (uuid::Uuid, i32),
    codec: i8,
    metrics: &[u8],
    terminating: bool,
) -> String {
    let request = PushTelemetryRequest::default()
        .with_client_instance_id(instance)
        .with_subscription_id(subscription)
        .with_terminating(terminating)
        .with_compression_type(codec)
        .with_metrics(Bytes::copy_from_slice(metrics));
    let answer: PushTelemetryResponse = send(stream, ApiKey::PushTelemetry, 0, &request).unwrap();
    format!("push: {}", answer.error_code)
}

/// Asks and pushes as a client would, and as no client should, on one connection (Kafka
/// forgets a client instance when its connection closes): each answer.
fn wire_answers(port: u16) -> Vec<String> {
    let nil = uuid::Uuid::nil();
    let stream = &mut connect(port);
    let mut answers = Vec::new();
    let (told, first, subscription) = get(stream, nil);
    answers.push(told);
    // Asked again within the interval: throttled.
    answers.push(get(stream, first).0);
    // Bytes that do not decompress.
    answers.push(push(stream, (first, subscription), 1, b"not gzip", false));
    // Pushed again within the interval: throttled.
    answers.push(push(stream, (first, subscription), 0, b"", false));
    let (_, second, subscription) = get(stream, nil);
    answers.push(push(stream, (second, subscription), 9, b"x", false));
    answers.push(push(stream, (nil, subscription), 0, b"", false));
    let (_, third, subscription) = get(stream, nil);
    answers.push(push(stream, (third, subscription ^ 1), 0, b"", false));
    // A terminating push is taken at once; the next is refused, and clears the flag, so that
    // the one after is only throttled.
    answers.push(push(stream, (third, subscription), 0, b"", true));
    answers.push(push(stream, (third, subscription), 0, b"", false));
    answers.push(push(stream, (third, subscription), 0, b"", false));
    answers
}

#[test]
fn kafka_client_metrics_prints_the_same_from_ferrolog_and_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), &[]);
    let server = Server::start(&temp.path().join("ferrolog"));
    let theirs = transcript(&kafka.bootstrap());
    let ours = transcript(&format!("127.0.0.1:{}", server.port));
    for (theirs, ours) in theirs.iter().zip(&ours) {
        println!("kafka:\n{theirs}\nferrolog:\n{ours}\n");
    }
    assert_eq!(ours, theirs);
    // What the scenario is about, as Kafka prints it.
    assert!(
        theirs[2].contains("interval.ms=1000"),
        "the subscription is described: {}",
        theirs[2]
    );
    assert!(theirs[4].contains("interval must be between 100 and 3600000"));
    let theirs = wire_answers(kafka.port);
    let ours = wire_answers(server.port);
    println!("kafka:    {theirs:?}\nferrolog: {ours:?}");
    assert_eq!(ours, theirs);
    assert_eq!(
        theirs[1..],
        [
            "get: 89 metrics [] every 0 ms, codecs [], at most 0 bytes, delta false",
            "push: 87",
            "push: 89",
            "push: 76",
            "push: 42",
            "push: 117",
            "push: 0",
            "push: 42",
            "push: 89"
        ]
    );
}

fn scrape(port: u16) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// The pushed `record.send.total` series of a Java producer, once one is shown.
fn pushed_send_total(port: u16, within: Duration) -> Option<String> {
    let started = Instant::now();
    while started.elapsed() < within {
        let metrics = scrape(port);
        if let Some(line) = metrics.lines().find(|line| {
            line.starts_with("org_apache_kafka_producer_record_send_total{")
                && line.contains("client_software_name=\"apache-kafka-java\"")
        }) {
            return Some(line.to_owned());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    None
}

#[test]
fn a_java_producers_pushed_metrics_are_shown_on_the_prometheus_endpoint() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let metrics_port = free_port();
    let listener = format!("metrics.listener=http://127.0.0.1:{metrics_port}");
    let server = Server::start_with(&temp.path().join("data"), &[&listener]);
    let bootstrap = format!("127.0.0.1:{}", server.port);
    let made = client_metrics(
        &bootstrap,
        &[
            "--alter",
            "--name",
            "producers",
            "--metrics",
            "org.apache.kafka.producer.",
            "--interval",
            "1000",
            "--match",
            "client_software_name=apache-kafka-java",
        ],
    );
    assert!(
        made.contains("Altered client metrics config for producers."),
        "{made}"
    );
    let producer = std::thread::spawn(move || {
        let props = format!("bootstrap.servers={bootstrap}");
        kafka_tool(
            PRODUCER_PERFORMANCE,
            &[
                "--topic",
                "t",
                "--num-records",
                "40000",
                "--throughput",
                "4000",
                "--record-size",
                "100",
                "--producer-props",
                &props,
            ],
            b"",
        )
    });
    let line = pushed_send_total(metrics_port, Duration::from_secs(60));
    let output = producer.join().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = line.expect("the producer's pushed record.send.total is shown");
    let sent: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(sent > 0.0, "records were sent while pushing: {line}");
    assert!(line.contains("client_instance_id=\""), "{line}");
    // Only what the subscription asked for was pushed.
    let metrics = scrape(metrics_port);
    assert!(
        !metrics.contains("org_apache_kafka_consumer_"),
        "no consumer metric was asked for"
    );
    // The totals keep adding up as pushes arrive.
    let later = pushed_send_total(metrics_port, Duration::from_secs(5)).unwrap();
    let sent_later: f64 = later.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(sent_later >= sent, "{line} then {later}");
}
