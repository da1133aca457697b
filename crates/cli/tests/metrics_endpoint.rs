//! The Prometheus endpoint of a running broker: its figures move as kcat produces and fetches,
//! as segments roll, as retention deletes and as the cleaner compacts.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::wire::create_topic;
use common::{Server, free_port, kcat};

fn scrape(port: u16) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    response
}

/// The value of the sample whose name and labels start with `prefix`, if any.
fn value(metrics: &str, prefix: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|line| line.starts_with(prefix))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

fn produce(kcat: &std::path::Path, port: u16, from: usize, count: usize) {
    let mut producer = Command::new(kcat)
        .args(["-b", &format!("127.0.0.1:{port}"), "-P", "-t", "m", "-K:"])
        // Batches well under the 32 KiB segments (a batch must fit a segment).
        .args(["-X", "batch.size=8192"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let stdin = producer.stdin.as_mut().unwrap();
        for i in from..from + count {
            // Ten keys, each overwritten again and again: work for the cleaner.
            writeln!(stdin, "k{}:{:0>100}", i % 10, i).unwrap();
        }
    }
    assert!(producer.wait().unwrap().success());
}

#[test]
fn figures_move_with_produce_fetch_roll_retention_and_cleaning() {
    let Some(kcat) = kcat() else { return };
    let temp = tempfile::tempdir().unwrap();
    let metrics_port = free_port();
    let listener = format!("metrics.listener=http://127.0.0.1:{metrics_port}");
    let server = Server::start_with(
        &temp.path().join("data"),
        &[
            &listener,
            "log.cleanup.policy=compact,delete",
            "log.retention.ms=1000",
            "log.retention.check.interval.ms=200",
            "log.initial.task.delay.ms=0",
            "log.cleaner.backoff.ms=100",
            "log.cleaner.min.cleanable.ratio=0.01",
        ],
    );
    let before = scrape(metrics_port);
    assert_eq!(
        value(&before, "kafka_log_log_logendoffset{topic=\"m\""),
        None
    );

    // Segments of 32 KiB, below the 1 MiB `segment.bytes` may be: Kafka's key for tests.
    let created = create_topic(server.port, "m", 1, &[("internal.segment.bytes", "32768")]);
    assert_eq!(created, 0);
    produce(&kcat, server.port, 0, 2000);
    let fetched = Command::new(&kcat)
        .args(["-b", &format!("127.0.0.1:{}", server.port)])
        .args(["-C", "-t", "m", "-o", "beginning", "-e", "-q"])
        .output()
        .unwrap();
    assert!(fetched.status.success());

    let first = scrape(metrics_port);
    let bytes_in = value(
        &first,
        "kafka_server_brokertopicmetrics_bytesin_total{topic=\"m\"}",
    );
    assert!(bytes_in.unwrap() > 200_000.0, "{first}");
    assert_eq!(
        value(
            &first,
            "kafka_server_brokertopicmetrics_messagesin_total{topic=\"m\"}"
        ),
        Some(2000.0)
    );
    assert!(
        value(
            &first,
            "kafka_server_brokertopicmetrics_bytesout_total{topic=\"m\"}"
        )
        .unwrap()
            > 0.0
    );
    assert!(
        value(
            &first,
            "kafka_network_requestmetrics_requests_total{request=\"Produce\"}"
        )
        .unwrap()
            >= 1.0
    );
    assert_eq!(
        value(
            &first,
            "kafka_log_log_logendoffset{topic=\"m\",partition=\"0\"}"
        ),
        Some(2000.0)
    );
    assert!(
        value(
            &first,
            "kafka_log_logflushstats_logflushrateandtimems_count"
        )
        .unwrap()
            >= 1.0,
        "a roll flushes the segment before it: {first}"
    );

    // Retention deletes old segments (the log start moves up) and the cleaner compacts.
    produce(&kcat, server.port, 2000, 2000);
    let deadline = Instant::now() + Duration::from_secs(30);
    let settled = loop {
        let now = scrape(metrics_port);
        let start = value(
            &now,
            "kafka_log_log_logstartoffset{topic=\"m\",partition=\"0\"}",
        );
        let passes = value(&now, "ferrolog_log_cleaner_passes_total");
        if start.is_some_and(|s| s > 0.0) && passes.is_some_and(|p| p > 0.0) {
            break now;
        }
        assert!(
            Instant::now() < deadline,
            "retention or cleaning never showed:\n{now}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        value(
            &settled,
            "kafka_log_log_logendoffset{topic=\"m\",partition=\"0\"}"
        ),
        Some(4000.0)
    );
    assert!(
        value(&settled, "kafka_log_log_size{topic=\"m\",partition=\"0\"}").unwrap()
            < 4000.0 * 100.0,
        "{settled}"
    );
    assert!(
        value(
            &settled,
            "kafka_log_log_numlogsegments{topic=\"m\",partition=\"0\"}"
        )
        .unwrap()
            >= 1.0
    );
    assert_eq!(
        value(&settled, "kafka_log_logmanager_offlinelogdirectorycount"),
        Some(0.0)
    );
    server.stop();
}

#[test]
fn idle_connections_at_the_file_limit_neither_stop_the_endpoint_nor_the_broker() {
    let Some(kcat) = kcat() else { return };
    if !common::prlimit_works() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let metrics_port = free_port();
    let listener = format!("metrics.listener=http://127.0.0.1:{metrics_port}");
    // 256 descriptors in all (soft and hard, so the broker cannot raise it).
    let server = Server::start_under(
        &["prlimit", "--nofile=256:256"],
        &temp.path().join("data"),
        &[&listener],
        "warn",
    );
    // More idle connections than the broker has descriptors, all sending nothing.
    let idle: Vec<TcpStream> = (0..400)
        .filter_map(|_| TcpStream::connect(("127.0.0.1", metrics_port)).ok())
        .collect();
    assert!(idle.len() > 256, "{} connections made", idle.len());
    std::thread::sleep(Duration::from_millis(500));
    // The broker still has descriptors for its partitions and its clients.
    let produced = Command::new(&kcat)
        .args([
            "-b",
            &format!("127.0.0.1:{}", server.port),
            "-P",
            "-t",
            "beside",
        ])
        .stdin(Stdio::piped())
        .spawn()
        .and_then(|mut producer| {
            producer.stdin.take().unwrap().write_all(b"one\ntwo\n")?;
            producer.wait()
        })
        .unwrap();
    assert!(
        produced.success(),
        "a topic is created and written beside the idle scrapers"
    );
    drop(idle);
    // Every one of them is gone now; the endpoint answers again.
    let metrics = scrape(metrics_port);
    assert_eq!(
        value(
            &metrics,
            "kafka_server_brokertopicmetrics_messagesin_total{topic=\"beside\"}"
        ),
        Some(2.0),
        "{metrics}"
    );
    server.stop();
}

/// A client under a quota shows on the endpoint under Kafka's quota metric names, tagged with
/// the quota's client id: the bytes it produced and the throttle times it was given.
#[test]
fn throttled_clients_show_under_kafkas_quota_metric_names() {
    use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
    use kafka_protocol::messages::{AlterClientQuotasRequest, AlterClientQuotasResponse, ApiKey};
    let Some(kcat) = kcat() else { return };
    let temp = tempfile::tempdir().unwrap();
    let metrics_port = free_port();
    let listener = format!("metrics.listener=http://127.0.0.1:{metrics_port}");
    let server = Server::start_with(&temp.path().join("data"), &[listener.as_str()]);
    let mut admin = common::wire::connect(server.port);
    let quota = EntryData::default()
        .with_entity(vec![
            EntityData::default()
                .with_entity_type(common::wire::name("client-id"))
                .with_entity_name(Some(common::wire::name("slow"))),
        ])
        .with_ops(vec![
            OpData::default()
                .with_key(common::wire::name("producer_byte_rate"))
                .with_value(5_000.0),
        ]);
    let request = AlterClientQuotasRequest::default().with_entries(vec![quota]);
    let altered: AlterClientQuotasResponse =
        common::wire::send(&mut admin, ApiKey::AlterClientQuotas, 1, &request).unwrap();
    assert_eq!(altered.entries[0].error_code, 0);
    // 60 KB at once against 5 KB/s (spread over Kafka's ten-second first window: 6 KB/s):
    // throttled about two seconds.
    let mut producer = Command::new(&kcat)
        .args(["-b", &format!("127.0.0.1:{}", server.port), "-P", "-t", "q"])
        .args(["-X", "client.id=slow", "-X", "batch.size=100000"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let stdin = producer.stdin.as_mut().unwrap();
        for i in 0..60 {
            writeln!(stdin, "{i:0>1000}").unwrap();
        }
    }
    assert!(producer.wait().unwrap().success());
    let metrics = scrape(metrics_port);
    let produced = value(
        &metrics,
        "kafka_server_produce_byte_total{client_id=\"slow\"}",
    );
    assert!(produced.is_some_and(|bytes| bytes >= 60_000.0), "{metrics}");
    assert!(
        metrics
            .lines()
            .any(|line| line
                .starts_with("kafka_server_produce_throttle_time_count{client_id=\"slow\"}")),
        "{metrics}"
    );
}
