//! Password guessing is slowed down, beyond Kafka: every failed authentication waits out
//! `connection.failed.authentication.delay.ms` (SCRAM after a SaslHandshake v0 too, which Kafka
//! closes at once), and the SASL exchanges of an address are checked no faster than
//! `ferrolog.authentication.failures.per.second.per.ip` however many connections it opens, while
//! another address logs in at once.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::Client;
use common::sasl::{alice, plain_listener, start_listeners};
use ferrolog_broker::BrokerConfig;
use ferrolog_broker::listener::Listener;
use ferrolog_broker::sasl::{Mechanism, SaslSettings};
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use tokio::io::AsyncReadExt;

/// The SASL listener with SCRAM-SHA-256 besides PLAIN.
fn with_scram(port: u16) -> Listener {
    let mut listener = plain_listener("CLIENTS", port);
    let settings = listener.sasl.as_ref().unwrap();
    listener.sasl = Some(Arc::new(SaslSettings {
        mechanisms: vec![Mechanism::Plain, Mechanism::ScramSha256],
        plain_users: settings.plain_users.clone(),
    }));
    listener
}

async fn closed(client: &mut Client) -> bool {
    let mut sink = [0u8; 64];
    loop {
        match tokio::time::timeout(Duration::from_secs(10), client.stream.read(&mut sink)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scram_failure_after_a_version_0_handshake_waits_out_the_delay() {
    let temp = tempfile::tempdir().unwrap();
    let delay = Duration::from_millis(500);
    let config = BrokerConfig {
        failed_authentication_delay: delay,
        ..BrokerConfig::default()
    };
    let listeners: [&dyn Fn(u16) -> Listener; 1] = [&with_scram];
    let (context, ports, server) = start_listeners(temp.path(), config, &listeners).await;
    let mut client = Client::connect(ports[0]).await;
    let request =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("SCRAM-SHA-256"));
    let answer: SaslHandshakeResponse = client.send(ApiKey::SaslHandshake, 0, &request).await;
    assert_eq!(answer.error_code, 0);
    let started = Instant::now();
    client.send_raw(b"n,,n=nobody,r=abcdefghijklmnop").await;
    assert!(closed(&mut client).await);
    assert!(
        started.elapsed() >= delay,
        "closed after {:?}",
        started.elapsed()
    );
    server.abort();
    context.manager.shutdown().unwrap();
}

/// A PLAIN login of alice with a wrong password, from its own connection; whether refused.
async fn wrong_guess(port: u16) -> bool {
    let mut client = Client::connect(port).await;
    let request =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
    let _: SaslHandshakeResponse = client.send(ApiKey::SaslHandshake, 1, &request).await;
    let guess =
        SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(b"\0alice\0guess"));
    let frame = common::frame(ApiKey::SaslAuthenticate, 2, 9, &guess);
    client.send_raw(&frame).await;
    let answer = client.read_frame().await;
    answer.is_some() && closed(&mut client).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_s_guesses_go_at_its_rate_and_other_addresses_log_in_meanwhile() {
    let temp = tempfile::tempdir().unwrap();
    let config = BrokerConfig {
        failed_authentication_delay: Duration::ZERO,
        authentication_failures_per_second_per_ip: Some(5),
        ..BrokerConfig::default()
    };
    let listeners: [&dyn Fn(u16) -> Listener; 1] = [&|port| plain_listener("CLIENTS", port)];
    let (context, ports, server) = start_listeners(temp.path(), config, &listeners).await;
    let port = ports[0];
    // 30 guesses at once from 127.0.0.1: 10 at once (the burst), then 5 a second.
    let started = Instant::now();
    let guesses: Vec<_> = (0..30).map(|_| tokio::spawn(wrong_guess(port))).collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Meanwhile another address logs in, without waiting behind them.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let stream = socket
        .connect(format!("127.0.0.1:{port}").parse().unwrap())
        .await
        .unwrap();
    let mut other = Client::from_stream(stream);
    let request =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
    let _: SaslHandshakeResponse = other.send(ApiKey::SaslHandshake, 1, &request).await;
    let login = SaslAuthenticateRequest::default()
        .with_auth_bytes(Bytes::from_static(b"\0alice\0alice-secret"));
    let answer: kafka_protocol::messages::SaslAuthenticateResponse =
        other.send(ApiKey::SaslAuthenticate, 2, &login).await;
    assert_eq!(answer.error_code, 0);
    let unfinished = guesses.iter().filter(|guess| !guess.is_finished()).count();
    assert!(
        unfinished > 0,
        "the other address did not wait for the guesses"
    );
    for guess in guesses {
        assert!(guess.await.unwrap(), "each guess is refused");
    }
    // Twenty past the burst at five a second: four seconds at least.
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    // alice from the guessing address still gets in once its turn comes.
    tokio::time::timeout(Duration::from_secs(10), alice(port))
        .await
        .unwrap();
    server.abort();
    context.manager.shutdown().unwrap();
}
