//! Connection slots shared fairly: a listener flooded to its limit leaves the others theirs
//! (`listener.name.<l>.max.connections`, and a reserve for each listener by default);
//! connections that do not authenticate, or send no first request, within
//! `ferrolog.connection.setup.timeout.ms` are closed; a long-poll fetch is answered by
//! `connections.max.idle.ms` at the latest; limits and connection creation rates changed at
//! run time hold new connections back.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::time::{Duration, Instant};

use common::sasl::{alice, plain_listener, start_listeners};
use common::{Client, api_versions_request};
use ferrolog_broker::BrokerConfig;
use ferrolog_broker::listener::Listener;
use ferrolog_broker::network::limits::ConnectionLimits;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, FetchRequest, FetchResponse};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// The PLAINTEXT listener, and the administrators' SASL one.
fn two_listeners() -> [&'static dyn Fn(u16) -> Listener; 2] {
    [&|port| Listener::plaintext("127.0.0.1", port), &|port| {
        plain_listener("ADMIN", port)
    }]
}

/// A connection that asks for ApiVersions and then sits there: served, so not closed for want
/// of a first request, and idle. `None` when the broker did not answer within a second (the
/// connection waits in the listen backlog).
async fn served_connection(port: u16) -> Option<Client> {
    let mut client = Client::connect(port).await;
    let request = api_versions_request();
    let asked = client.send::<_, ApiVersionsResponse>(ApiKey::ApiVersions, 3, &request);
    match tokio::time::timeout(Duration::from_secs(1), asked).await {
        Ok(answer) => {
            assert_eq!(answer.error_code, 0);
            Some(client)
        }
        Err(_) => None,
    }
}

/// Opens connections to `port` until one is not served; the ones served.
async fn flood(port: u16, at_most: usize) -> Vec<Client> {
    let mut served = Vec::new();
    for _ in 0..at_most {
        match served_connection(port).await {
            Some(client) => served.push(client),
            None => break,
        }
    }
    served
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooded_listener_leaves_the_others_their_reserve() {
    let temp = tempfile::tempdir().unwrap();
    let config = BrokerConfig {
        limits: ConnectionLimits {
            max_connections: 40,
            ..ConnectionLimits::default()
        },
        ..BrokerConfig::default()
    };
    let (context, ports, server) = start_listeners(temp.path(), config, &two_listeners()).await;
    // max.connections 40, two listeners: each may hold 40 − 5 (a quarter of an even share).
    let flooded = flood(ports[0], 40).await;
    assert_eq!(
        flooded.len(),
        35,
        "the PLAINTEXT listener stops at its own limit"
    );
    let mut admin = tokio::time::timeout(Duration::from_secs(5), alice(ports[1]))
        .await
        .expect("an administrator still logs in on the other listener");
    assert_eq!(
        admin.create_topic("after-flood", 1, &[]).await.error_code,
        0
    );
    drop(flooded);
    server.abort();
    context.manager.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_s_own_limit_holds_whatever_the_broker_allows() {
    let temp = tempfile::tempdir().unwrap();
    let capped = |port| Listener {
        max_connections: Some(3),
        ..Listener::plaintext("127.0.0.1", port)
    };
    let listeners: [&dyn Fn(u16) -> Listener; 2] = [&capped, &|port| plain_listener("ADMIN", port)];
    let (context, ports, server) =
        start_listeners(temp.path(), BrokerConfig::default(), &listeners).await;
    let mut flooded = flood(ports[0], 10).await;
    assert_eq!(flooded.len(), 3);
    // One closes: the listener takes the next, which waited in the backlog.
    flooded.pop();
    let waiting = tokio::time::timeout(Duration::from_secs(5), served_connection(ports[0])).await;
    assert!(waiting.unwrap().is_some(), "a slot freed is taken again");
    alice(ports[1]).await;
    server.abort();
    context.manager.shutdown().unwrap();
}

/// Whether the broker closes `stream` within `wait`, unanswered.
async fn closed_within(stream: &mut TcpStream, wait: Duration) -> bool {
    let mut sink = [0u8; 256];
    match tokio::time::timeout(wait, stream.read(&mut sink)).await {
        Err(_) => false,
        Ok(Ok(0) | Err(_)) => true,
        Ok(Ok(read)) => panic!("answered {read} bytes instead of closing"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_not_set_up_in_time_are_closed_and_working_ones_stay() {
    let temp = tempfile::tempdir().unwrap();
    let setup = Duration::from_secs(1);
    let config = BrokerConfig {
        connection_setup_timeout: Some(setup),
        ..BrokerConfig::default()
    };
    let (context, ports, server) = start_listeners(temp.path(), config, &two_listeners()).await;
    let started = Instant::now();
    // Silent on PLAINTEXT; on SASL, an ApiVersions (served before authentication) and no
    // login. Both are closed at the setup limit.
    let mut silent = TcpStream::connect(("127.0.0.1", ports[0])).await.unwrap();
    let mut unauthenticated = Client::connect(ports[1]).await;
    let answer: ApiVersionsResponse = unauthenticated
        .send(ApiKey::ApiVersions, 3, &api_versions_request())
        .await;
    assert_eq!(answer.error_code, 0);
    // Working connections: one that asked something, one logged in.
    let mut working = served_connection(ports[0]).await.unwrap();
    let mut admin = alice(ports[1]).await;
    assert!(closed_within(&mut silent, Duration::from_secs(5)).await);
    assert!(closed_within(&mut unauthenticated.stream, Duration::from_secs(5)).await);
    assert!(started.elapsed() >= setup, "not before their time");
    tokio::time::sleep(setup).await;
    let asked: ApiVersionsResponse = working
        .send(ApiKey::ApiVersions, 3, &api_versions_request())
        .await;
    assert_eq!(
        asked.error_code, 0,
        "a connection that sent its first request in time stays"
    );
    assert_eq!(admin.create_topic("set-up", 1, &[]).await.error_code, 0);
    server.abort();
    context.manager.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_is_answered_by_the_idle_limit() {
    let temp = tempfile::tempdir().unwrap();
    let idle = Duration::from_secs(2);
    let config = BrokerConfig {
        connections_max_idle: Some(idle),
        ..BrokerConfig::default()
    };
    let listeners: [&dyn Fn(u16) -> Listener; 1] = [&|port| Listener::plaintext("127.0.0.1", port)];
    let (context, ports, server) = start_listeners(temp.path(), config, &listeners).await;
    let mut client = Client::connect(ports[0]).await;
    assert_eq!(client.create_topic("quiet", 1, &[]).await.error_code, 0);
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    let request = FetchRequest::default()
        .with_max_wait_ms(i32::MAX)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(kafka_protocol::messages::TopicName("quiet".into()))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ]);
    let started = Instant::now();
    let answered: FetchResponse = tokio::time::timeout(
        Duration::from_secs(10),
        client.send(ApiKey::Fetch, 11, &request),
    )
    .await
    .expect("a fetch asking to wait 24 days is answered at the idle limit");
    assert_eq!(answered.responses[0].partitions[0].error_code, 0);
    assert!(started.elapsed() >= idle);
    let asked: ApiVersionsResponse = client
        .send(ApiKey::ApiVersions, 3, &api_versions_request())
        .await;
    assert_eq!(asked.error_code, 0, "and the connection serves on");
    server.abort();
    context.manager.shutdown().unwrap();
}

/// Changes `key` for the whole cluster, as `kafka-configs --entity-default` does.
fn set_for_cluster(context: &ferrolog_broker::Context, key: &str, value: &str) {
    use ferrolog_broker::dynamic_configs::{Change, Scope};
    context
        .dynamic_configs
        .apply(
            Scope::ClusterDefault,
            &[Change::Set(key.to_owned(), value.to_owned())],
            false,
        )
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_connections_changed_at_run_time_lets_more_in_or_holds_new_ones_back() {
    let temp = tempfile::tempdir().unwrap();
    let config = BrokerConfig {
        limits: ConnectionLimits {
            max_connections: 4,
            ..ConnectionLimits::default()
        },
        ..BrokerConfig::default()
    };
    let one: [&dyn Fn(u16) -> Listener; 1] = [&|port| Listener::plaintext("127.0.0.1", port)];
    let (context, ports, server) = start_listeners(temp.path(), config, &one).await;
    let mut open = flood(ports[0], 10).await;
    assert_eq!(open.len(), 4);

    set_for_cluster(&context, "max.connections", "6");
    open.extend(flood(ports[0], 10).await);
    assert_eq!(open.len(), 6, "raised: two more are let in");

    // Lowered to 3 with 6 open: none is closed, and a new one waits until fewer than 3 are.
    set_for_cluster(&context, "max.connections", "3");
    open.truncate(3);
    assert!(
        served_connection(ports[0]).await.is_none(),
        "3 open, 3 allowed"
    );
    open.pop();
    let waiting = tokio::time::timeout(Duration::from_secs(5), served_connection(ports[0])).await;
    assert!(waiting.unwrap().is_some(), "2 open: the next is served");
    assert_eq!(
        context
            .dynamic_configs
            .values()
            .default
            .get("max.connections")
            .map(String::as_str),
        Some("3")
    );
    server.abort();
    context.manager.shutdown().unwrap();
}

/// Serves a connection on `port` on a task of its own: finished once the broker answered it.
fn connect_in_background(port: u16) -> tokio::task::JoinHandle<Option<Client>> {
    tokio::spawn(async move {
        let mut client = Client::connect(port).await;
        let request = api_versions_request();
        let asked = client.send::<_, ApiVersionsResponse>(ApiKey::ApiVersions, 3, &request);
        let answer = tokio::time::timeout(Duration::from_secs(20), asked)
            .await
            .ok()?;
        assert_eq!(answer.error_code, 0);
        Some(client)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_creation_rates_changed_at_run_time_hold_new_connections_back() {
    use ferrolog_broker::dynamic_configs::{Change, Scope};
    let temp = tempfile::tempdir().unwrap();
    // Rates over two windows of 3 s: the first window is measured as 3 s, and a throttle is
    // at most 3 s, well apart from the second the helpers wait for an answer.
    let config = BrokerConfig {
        quota_sampling: ferrolog_broker::quotas::Sampling {
            samples: 2,
            window_ms: 3_000,
        },
        ..BrokerConfig::default()
    };
    let one: [&dyn Fn(u16) -> Listener; 1] = [&|port| Listener::plaintext("127.0.0.1", port)];
    let (context, ports, server) = start_listeners(temp.path(), config, &one).await;
    let rate_key = "listener.name.plaintext.max.connection.creation.rate";
    set_for_cluster(&context, rate_key, "1");

    // One a second: three fit the first window; the fourth waits before it is served, and
    // the listener accepts nothing else meanwhile.
    let mut open = flood(ports[0], 3).await;
    assert_eq!(open.len(), 3);
    let fourth = connect_in_background(ports[0]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!fourth.is_finished(), "held back by the listener's rate");
    open.push(fourth.await.unwrap().expect("served after its wait"));

    // Without the listener's rate, the broker's (unlimited) applies: no wait.
    context
        .dynamic_configs
        .apply(
            Scope::ClusterDefault,
            &[Change::Delete(rate_key.to_owned())],
            false,
        )
        .unwrap();
    open.extend(flood(ports[0], 5).await);
    assert_eq!(open.len(), 9, "the next five are served at once");

    // The broker's own rate holds every listener: nine were made in this window.
    set_for_cluster(&context, "max.connection.creation.rate", "1");
    let held = connect_in_background(ports[0]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!held.is_finished(), "held back by the broker's rate");
    assert!(held.await.unwrap().is_some());
    server.abort();
    context.manager.shutdown().unwrap();
}
