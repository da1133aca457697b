//! Requests whose bytes do not come: connections that send a size and stall, or part of a
//! large request and stall, never keep other connections' requests from being served, on a
//! plaintext listener and before authentication on a SASL one; a request that trickles closes
//! its connection once `ferrolog.request.arrival.timeout.ms` has passed.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::sasl::{alice, plain_listener, start_listeners};
use common::{Broker, Client};
use ferrolog_broker::BrokerConfig;
use ferrolog_broker::listener::Listener;
use ferrolog_storage::manager::ManagerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a bystander's request may take here before the test fails: far longer than any
/// answer takes, far shorter than the limits (10 minutes idle) that would end the stall.
const ANSWERED_WITHIN: Duration = Duration::from_secs(5);
const MIB: usize = 1 << 20;

/// Connections that each send a request's size, and nothing more.
async fn size_prefixes_alone(port: u16, sizes: &[usize]) -> Vec<TcpStream> {
    let mut stalled = Vec::new();
    for &size in sizes {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream
            .write_all(&(size as i32).to_be_bytes())
            .await
            .unwrap();
        stalled.push(stream);
    }
    // Let the broker read them.
    tokio::time::sleep(Duration::from_millis(300)).await;
    stalled
}

/// Produces to and fetches from `topic` over `client`, each answered within
/// [`ANSWERED_WITHIN`]; the slower of the two answers' time.
async fn produce_and_fetch(client: &mut Client, topic: &str) -> Duration {
    let batch = Bytes::from(ferrolog_testkit::numbered_batch(0, 5, 1_700_000_000_000));
    let started = Instant::now();
    let produced = tokio::time::timeout(ANSWERED_WITHIN, client.produce(topic, 0, batch))
        .await
        .expect("the produce is answered while other connections stall");
    let produce_time = started.elapsed();
    assert_eq!(produced.error_code, 0);
    let started = Instant::now();
    let fetched = tokio::time::timeout(
        ANSWERED_WITHIN,
        client.fetch(topic, 0, produced.base_offset),
    )
    .await
    .expect("the fetch is answered while other connections stall");
    let fetch_time = started.elapsed();
    assert_eq!(
        (fetched.error_code, fetched.high_watermark),
        (0, produced.base_offset + 5)
    );
    produce_time.max(fetch_time)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn size_prefixes_that_exceed_the_request_memory_stall_no_other_connection() {
    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut bystander = broker.client().await;
    assert_eq!(
        bystander.create_topic("bystander", 1, &[]).await.error_code,
        0
    );

    // 5 × 100 MiB + 12 MiB + 1 MiB declared: more than the 512 MiB of queued.max.request.bytes.
    let sizes = [
        100 * MIB,
        100 * MIB,
        100 * MIB,
        100 * MIB,
        100 * MIB,
        12 * MIB,
        MIB,
    ];
    let stalled = size_prefixes_alone(broker.port, &sizes).await;
    let slowest = produce_and_fetch(&mut bystander, "bystander").await;
    // And on a connection opened after the stall began.
    let mut late = broker.client().await;
    let late_slowest = produce_and_fetch(&mut late, "bystander").await;
    println!(
        "slowest answer beside {} stalled size prefixes: {slowest:?}; on a new connection: {late_slowest:?}",
        stalled.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn size_prefixes_before_logging_in_stall_no_one_on_a_sasl_listener() {
    ferrolog_broker::network::raise_file_limit();
    let temp = tempfile::tempdir().unwrap();
    let listeners: [&dyn Fn(u16) -> Listener; 1] = [&|port| plain_listener("CLIENTS", port)];
    let (context, ports, server) =
        start_listeners(temp.path(), BrokerConfig::default(), &listeners).await;
    let port = ports[0];
    let mut admin = alice(port).await;
    assert_eq!(admin.create_topic("logged-in", 1, &[]).await.error_code, 0);

    // 1,100 connections declaring sasl.server.max.receive.size (512 KiB) each before the
    // handshake: 550 MiB, past the 512 MiB pool.
    let stalled = size_prefixes_alone(port, &[512 * 1024; 1100]).await;
    let slowest = produce_and_fetch(&mut admin, "logged-in").await;
    let started = Instant::now();
    let mut late = tokio::time::timeout(ANSWERED_WITHIN, alice(port))
        .await
        .expect("a new client logs in while the others stall");
    let login = started.elapsed();
    let late_slowest = produce_and_fetch(&mut late, "logged-in").await;
    println!(
        "beside {} stalled unauthenticated prefixes: slowest answer {slowest:?}; a new login {login:?}, then {late_slowest:?}",
        stalled.len()
    );
    server.abort();
    context.manager.shutdown().unwrap();
}

/// A broker with a 16 MiB request pool (its cap on requests still arriving 8 MiB) and requests
/// to arrive within `arrival`.
async fn small_pool_broker(dir: &std::path::Path, arrival: Duration) -> Broker {
    let config = BrokerConfig {
        queued_max_request_bytes: Some(16 * MIB as u64),
        socket_request_max_bytes: 8 * MIB,
        request_arrival_timeout: Some(arrival),
        ..BrokerConfig::default()
    };
    let manager = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        ..ManagerConfig::default()
    };
    Broker::start_with(manager, config).await
}

/// Whether the broker closes `stream` within `wait`.
async fn closed_within(stream: &mut TcpStream, wait: Duration) -> bool {
    let mut sink = [0u8; 1024];
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut sink)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_stalled_part_way_hold_at_most_half_the_pool_until_their_time_is_up() {
    let temp = tempfile::tempdir().unwrap();
    let arrival = Duration::from_secs(2);
    let broker = small_pool_broker(temp.path(), arrival).await;
    let mut bystander = broker.client().await;
    assert_eq!(
        bystander.create_topic("bystander", 1, &[]).await.error_code,
        0
    );

    // Four requests of 4 MiB, each with half its bytes sent: 16 MiB declared, the whole pool.
    let mut stalled = Vec::new();
    for _ in 0..4 {
        let mut stream = TcpStream::connect(("127.0.0.1", broker.port))
            .await
            .unwrap();
        stream
            .write_all(&((4 * MIB) as i32).to_be_bytes())
            .await
            .unwrap();
        stream.write_all(&vec![0u8; 2 * MIB]).await.unwrap();
        stalled.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let slowest = produce_and_fetch(&mut bystander, "bystander").await;
    println!("slowest small answer beside requests stalled part way: {slowest:?}");

    // A large produce waits for the cap on requests still arriving, which the stalled ones
    // hold until their time is up: then they are closed and it is served.
    let large = Bytes::from(ferrolog_testkit::numbered_batch(
        0,
        20_000,
        1_700_000_000_000,
    ));
    assert!(large.len() > 256 * 1024, "{} bytes", large.len());
    let started = Instant::now();
    let produced = tokio::time::timeout(
        Duration::from_secs(30),
        bystander.produce("bystander", 0, large),
    )
    .await
    .expect("the large produce is answered once the stalled requests' time is up");
    assert_eq!(produced.error_code, 0);
    println!("a large produce answered after {:?}", started.elapsed());
    for stream in &mut stalled {
        assert!(
            closed_within(stream, Duration::from_secs(10)).await,
            "a request stalled part way closes its connection"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_trickles_in_closes_its_connection_at_the_arrival_timeout() {
    let temp = tempfile::tempdir().unwrap();
    let limit = Duration::from_secs(1);
    let broker = small_pool_broker(temp.path(), limit).await;
    let stream = TcpStream::connect(("127.0.0.1", broker.port))
        .await
        .unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let started = Instant::now();
    // A 1,000-byte request sent a byte every 100 ms: never idle, done after 100 s.
    let trickler = tokio::spawn(async move {
        writer.write_all(&1000i32.to_be_bytes()).await.unwrap();
        for _ in 0..1000 {
            if writer.write_all(&[0]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut sink = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(8), reader.read(&mut sink))
        .await
        .expect("the broker closes the connection once the request's time is up");
    assert!(
        matches!(read, Ok(0) | Err(_)),
        "closed, unanswered: {read:?}"
    );
    assert!(
        started.elapsed() >= limit,
        "not before its time: {:?}",
        started.elapsed()
    );
    trickler.abort();
}
