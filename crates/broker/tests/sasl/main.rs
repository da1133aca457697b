//! SASL listeners end to end over loopback: PLAIN and SCRAM authenticate, every wrong secret and
//! every frame out of place is refused and closes the connection, SCRAM users are managed with
//! Kafka's APIs and kept across restarts, and each listener advertises its own address.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "../common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{Client, api_versions_request, frame, raw_frame};
use ferrolog_broker::authz::AuthorizerConfig;
use ferrolog_broker::listener::{Endpoint, Listener, SecurityProtocol};
use ferrolog_broker::sasl::{Mechanism, PlainUsers, SaslSettings};
use ferrolog_broker::{BrokerConfig, Context};
use ferrolog_storage::SystemClock;
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_testkit::scram_client::{ScramClient, Sha};
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ApiKey,
    ApiVersionsRequest, ApiVersionsResponse, DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse, MetadataRequest, MetadataResponse,
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use tokio::io::AsyncWriteExt;

mod delegation_tokens;
mod scram_users;

const DELAY: Duration = Duration::from_millis(300);
const SASL_AUTHENTICATION_FAILED: i16 = 58;
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
const ILLEGAL_SASL_STATE: i16 = 34;
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;

/// A broker with a SASL_PLAINTEXT listener (PLAIN with alice, a super user, and both SCRAMs)
/// and a PLAINTEXT one, each advertised at a port of its own.
struct SaslBroker {
    context: Arc<Context>,
    sasl_port: u16,
    plaintext_port: u16,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for SaslBroker {
    fn drop(&mut self) {
        self.server.abort();
        let _ = self.context.manager.shutdown();
    }
}

async fn start(dir: &Path) -> SaslBroker {
    let manager = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        ..ManagerConfig::default()
    };
    let manager = Arc::new(LogManager::open(manager, Arc::new(SystemClock)).unwrap());
    let config = BrokerConfig {
        failed_authentication_delay: DELAY,
        authorizer: Some(AuthorizerConfig::parse(Some("User:alice"), None).unwrap()),
        tokens: ferrolog_broker::tokens::TokenConfig {
            secret_key: Some("token-secret".to_owned()),
            ..Default::default()
        },
        ..BrokerConfig::default()
    };
    let context = Arc::new(Context::new(manager, config).unwrap());
    let sasl_socket = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let plaintext_socket = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sasl_port = sasl_socket.local_addr().unwrap().port();
    let plaintext_port = plaintext_socket.local_addr().unwrap().port();
    let sasl = Listener {
        name: "CLIENTS".into(),
        protocol: SecurityProtocol::SaslPlaintext,
        advertised: Endpoint {
            host: "127.0.0.1".into(),
            port: sasl_port,
        },
        sasl: Some(Arc::new(SaslSettings {
            mechanisms: vec![
                Mechanism::Plain,
                Mechanism::ScramSha256,
                Mechanism::ScramSha512,
            ],
            plain_users: PlainUsers::new(BTreeMap::from([(
                "alice".to_owned(),
                "alice-secret".to_owned(),
            )])),
        })),
        tls: None,
        max_connections: None,
    };
    let plaintext = Listener::plaintext("127.0.0.1", plaintext_port);
    let server = tokio::spawn(ferrolog_broker::serve_listeners(
        vec![
            (sasl_socket, Arc::new(sasl)),
            (plaintext_socket, Arc::new(plaintext)),
        ],
        Arc::clone(&context),
    ));
    SaslBroker {
        context,
        sasl_port,
        plaintext_port,
        server,
    }
}

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_owned())
}

async fn handshake(client: &mut Client, version: i16, mechanism: &str) -> SaslHandshakeResponse {
    let request = SaslHandshakeRequest::default().with_mechanism(text(mechanism));
    client.send(ApiKey::SaslHandshake, version, &request).await
}

async fn authenticate(client: &mut Client, token: &[u8]) -> SaslAuthenticateResponse {
    let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::copy_from_slice(token));
    client.send(ApiKey::SaslAuthenticate, 2, &request).await
}

/// A connection to the SASL listener authenticated with PLAIN as alice.
async fn alice(broker: &SaslBroker) -> Client {
    let mut client = Client::connect(broker.sasl_port).await;
    assert_eq!(handshake(&mut client, 1, "PLAIN").await.error_code, 0);
    let answer = authenticate(&mut client, b"\0alice\0alice-secret").await;
    assert_eq!(answer.error_code, 0, "{:?}", answer.error_message);
    client
}

/// Whether the broker closed the connection without sending anything more.
async fn closed(client: &mut Client) -> bool {
    tokio::time::timeout(Duration::from_secs(10), client.read_frame())
        .await
        .expect("the broker answers or closes within 10 s")
        .is_none()
}

async fn create_topic_code(client: &mut Client, topic: &str) -> i16 {
    client.create_topic(topic, 1, &[]).await.error_code
}

/// The SCRAM exchange for `user` with `password`; the SaslAuthenticate answers.
async fn scram(
    broker: &SaslBroker,
    sha: Sha,
    user: &str,
    password: &str,
) -> (Client, Result<ScramClient, (i16, String)>) {
    let mechanism = match sha {
        Sha::Sha256 => "SCRAM-SHA-256",
        Sha::Sha512 => "SCRAM-SHA-512",
    };
    let mut client = Client::connect(broker.sasl_port).await;
    assert_eq!(handshake(&mut client, 1, mechanism).await.error_code, 0);
    let (mut scram, first) = ScramClient::first(sha, user, password, "fyko+d2lbbFgONRv9qkxdawL");
    let challenge = authenticate(&mut client, &first).await;
    let failure = |answer: SaslAuthenticateResponse| {
        Err((
            answer.error_code,
            answer
                .error_message
                .map(|m| m.to_string())
                .unwrap_or_default(),
        ))
    };
    if challenge.error_code != 0 {
        return (client, failure(challenge));
    }
    let last = scram.finish(&challenge.auth_bytes);
    let done = authenticate(&mut client, &last).await;
    if done.error_code != 0 {
        return (client, failure(done));
    }
    assert!(
        scram.verify(&done.auth_bytes),
        "the server proves it knew the key"
    );
    assert_eq!(done.session_lifetime_ms, 0);
    (client, Ok(scram))
}

fn upsertion(sha: Sha, user: &str, password: &str, iterations: i32) -> ScramCredentialUpsertion {
    let salt = format!("salt-of-{user}");
    ScramCredentialUpsertion::default()
        .with_name(text(user))
        .with_mechanism(match sha {
            Sha::Sha256 => 1,
            Sha::Sha512 => 2,
        })
        .with_iterations(iterations)
        .with_salted_password(Bytes::from(sha.salted_password(
            password,
            salt.as_bytes(),
            iterations as u32,
        )))
        .with_salt(Bytes::from(salt))
}

async fn alter(
    client: &mut Client,
    deletions: Vec<ScramCredentialDeletion>,
    upsertions: Vec<ScramCredentialUpsertion>,
) -> Vec<(String, i16, Option<String>)> {
    let request = AlterUserScramCredentialsRequest::default()
        .with_deletions(deletions)
        .with_upsertions(upsertions);
    let response: AlterUserScramCredentialsResponse = client
        .send(ApiKey::AlterUserScramCredentials, 0, &request)
        .await;
    response
        .results
        .into_iter()
        .map(|result| {
            (
                result.user.to_string(),
                result.error_code,
                result.error_message.map(|m| m.to_string()),
            )
        })
        .collect()
}

async fn describe(
    client: &mut Client,
    users: Option<&[&str]>,
) -> DescribeUserScramCredentialsResponse {
    let request = DescribeUserScramCredentialsRequest::default().with_users(users.map(|users| {
        users
            .iter()
            .map(|user| UserName::default().with_name(text(user)))
            .collect()
    }));
    client
        .send(ApiKey::DescribeUserScramCredentials, 0, &request)
        .await
}

#[tokio::test]
async fn plain_authenticates_and_requests_then_run_as_the_user() {
    let temp = tempfile::tempdir().unwrap();
    let broker = start(temp.path()).await;
    let mut client = Client::connect(broker.sasl_port).await;
    // Software names Kafka refuses are answered INVALID_REQUEST, and the client may ask again.
    let nameless: ApiVersionsResponse = client
        .send(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default())
        .await;
    assert_eq!(
        (nameless.error_code, nameless.api_keys.len()),
        (ferrolog_broker::errors::INVALID_REQUEST, 0)
    );
    let versions: ApiVersionsResponse = client
        .send(ApiKey::ApiVersions, 3, &api_versions_request())
        .await;
    assert_eq!(versions.error_code, 0);
    assert!(!versions.api_keys.is_empty());
    let offered = handshake(&mut client, 1, "PLAIN").await;
    assert_eq!(offered.error_code, 0);
    let offered: Vec<String> = offered.mechanisms.iter().map(ToString::to_string).collect();
    assert_eq!(offered, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]);
    let answer = authenticate(&mut client, b"\0alice\0alice-secret").await;
    assert_eq!((answer.error_code, answer.auth_bytes.len()), (0, 0));
    assert_eq!(answer.error_message.as_deref(), Some(""));
    // Alice is a super user; the anonymous client of the PLAINTEXT listener is nobody.
    assert_eq!(create_topic_code(&mut client, "by-alice").await, 0);
    let mut anonymous = Client::connect(broker.plaintext_port).await;
    assert_eq!(
        create_topic_code(&mut anonymous, "by-anonymous").await,
        TOPIC_AUTHORIZATION_FAILED
    );
    // Re-authentication is not offered.
    assert_eq!(
        handshake(&mut client, 1, "PLAIN").await.error_code,
        ILLEGAL_SASL_STATE
    );
    assert_eq!(
        authenticate(&mut client, b"\0alice\0alice-secret")
            .await
            .error_code,
        ILLEGAL_SASL_STATE
    );
    assert_eq!(
        handshake(&mut anonymous, 1, "PLAIN").await.error_code,
        ILLEGAL_SASL_STATE
    );
}

#[tokio::test]
async fn each_listener_advertises_its_own_address() {
    let temp = tempfile::tempdir().unwrap();
    let broker = start(temp.path()).await;
    let all_topics = MetadataRequest::default().with_topics(None);
    let mut alice = alice(&broker).await;
    let through_sasl: MetadataResponse = alice.send(ApiKey::Metadata, 12, &all_topics).await;
    assert_eq!(through_sasl.brokers[0].port, i32::from(broker.sasl_port));
    let mut anonymous = Client::connect(broker.plaintext_port).await;
    let through_plaintext: MetadataResponse =
        anonymous.send(ApiKey::Metadata, 12, &all_topics).await;
    assert_eq!(
        through_plaintext.brokers[0].port,
        i32::from(broker.plaintext_port)
    );
}

#[tokio::test]
async fn every_wrong_plain_token_is_refused_after_the_delay_and_closes_the_connection() {
    let temp = tempfile::tempdir().unwrap();
    let broker = start(temp.path()).await;
    for (token, message) in [
        (
            &b"\0alice\0wrong"[..],
            "Authentication failed: Invalid username or password",
        ),
        (
            b"\0alice\0alice-secret ",
            "Authentication failed: Invalid username or password",
        ),
        (
            b"\0mallory\0alice-secret",
            "Authentication failed: Invalid username or password",
        ),
        (
            b"\0\0alice-secret",
            "Authentication failed: username not specified",
        ),
        (
            b"\0alice\0",
            "Authentication failed: password not specified",
        ),
        (
            b"bob\0alice\0alice-secret",
            "Authentication failed: Client requested an authorization id that is different from username",
        ),
        (b"", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (
            &[0xff; 64],
            "Invalid SASL/PLAIN response: expected 3 tokens, got 1",
        ),
    ] {
        let mut client = Client::connect(broker.sasl_port).await;
        assert_eq!(handshake(&mut client, 1, "PLAIN").await.error_code, 0);
        let started = Instant::now();
        let answer = authenticate(&mut client, token).await;
        assert!(started.elapsed() >= DELAY, "the answer waits for the delay");
        assert_eq!(answer.error_code, SASL_AUTHENTICATION_FAILED);
        assert_eq!(answer.error_message.as_deref(), Some(message));
        assert!(
            closed(&mut client).await,
            "{token:?}: the connection closes"
        );
    }
    let mut good = alice(&broker).await;
    assert_eq!(create_topic_code(&mut good, "still-served").await, 0);
}

#[tokio::test]
async fn handshake_v0_takes_bare_tokens() {
    let temp = tempfile::tempdir().unwrap();
    let broker = start(temp.path()).await;
    let mut client = Client::connect(broker.sasl_port).await;
    assert_eq!(handshake(&mut client, 0, "PLAIN").await.error_code, 0);
    client.send_raw(b"\0alice\0alice-secret").await;
    assert_eq!(
        client.read_frame().await.unwrap().len(),
        0,
        "an empty bare token"
    );
    assert_eq!(create_topic_code(&mut client, "after-v0").await, 0);

    let mut wrong = Client::connect(broker.sasl_port).await;
    assert_eq!(handshake(&mut wrong, 0, "PLAIN").await.error_code, 0);
    wrong.send_raw(b"\0alice\0nope").await;
    assert!(
        closed(&mut wrong).await,
        "a bare token gets no error answer"
    );
}

/// Sends `frames` in order on a fresh connection to the SASL listener, reading the answer to
/// each but the last; whether the broker then closed the connection without answering it.
async fn closes_at_last(broker: &SaslBroker, frames: &[Vec<u8>]) -> bool {
    let mut client = Client::connect(broker.sasl_port).await;
    let (last, before) = frames.split_last().unwrap();
    for each in before {
        client.send_raw(each).await;
        assert!(client.read_frame().await.is_some(), "answered");
    }
    client.send_raw(last).await;
    closed(&mut client).await
}

#[tokio::test]
async fn an_unauthenticated_client_gets_nothing_but_the_exchange() {
    let temp = tempfile::tempdir().unwrap();
    let broker = start(temp.path()).await;
    let versions = frame(ApiKey::ApiVersions, 3, 1, &api_versions_request());
    let plain = frame(
        ApiKey::SaslHandshake,
        1,
        2,
        &SaslHandshakeRequest::default().with_mechanism(text("PLAIN")),
    );
    let metadata = frame(
        ApiKey::Metadata,
        12,
        3,
        &MetadataRequest::default().with_topics(None),
    );
    let token = frame(
        ApiKey::SaslAuthenticate,
        2,
        4,
        &SaslAuthenticateRequest::default()
            .with_auth_bytes(Bytes::from_static(b"\0alice\0alice-secret")),
    );
    // Before the handshake a request out of place closes at once; after it, after the delay.
    let started = Instant::now();
    assert!(closes_at_last(&broker, std::slice::from_ref(&metadata)).await);
    assert!(started.elapsed() < DELAY, "closed at once");
    let started = Instant::now();
    assert!(closes_at_last(&broker, &[plain.clone(), metadata.clone()]).await);
    assert!(started.elapsed() >= DELAY, "closed after the delay");
    for (what, frames) in [
        ("a request before the handshake", vec![metadata.clone()]),
        (
            "a request after ApiVersions",
            vec![versions.clone(), metadata.clone()],
        ),
        (
            "ApiVersions twice",
            vec![versions.clone(), versions.clone()],
        ),
        ("a token before the handshake", vec![token.clone()]),
        (
            "a request in place of a token",
            vec![plain.clone(), metadata.clone()],
        ),
        (
            "a handshake in place of a token",
            vec![plain.clone(), plain.clone()],
        ),
        (
            "bytes that are no request",
            vec![b"GET / HTTP/1.1\r\n\r\n".to_vec()],
        ),
        ("an unknown API", vec![vec![0xee; 12]]),
        (
            "a truncated handshake",
            vec![raw_frame(ApiKey::SaslHandshake, 1, &[0, 9, b'P'])],
        ),
        (
            "a truncated token",
            vec![
                plain.clone(),
                raw_frame(ApiKey::SaslAuthenticate, 2, &[0x7f, 0xff]),
            ],
        ),
        (
            "an unsupported token version",
            vec![plain.clone(), raw_frame(ApiKey::SaslAuthenticate, 9, b"")],
        ),
        (
            "an unsupported handshake version",
            vec![raw_frame(ApiKey::SaslHandshake, 7, b"")],
        ),
    ] {
        assert!(closes_at_last(&broker, &frames).await, "{what}");
    }

    // An unsupported mechanism is answered with the enabled ones, then the connection closes.
    let mut client = Client::connect(broker.sasl_port).await;
    let answer = handshake(&mut client, 1, "GSSAPI").await;
    assert_eq!(answer.error_code, UNSUPPORTED_SASL_MECHANISM);
    assert_eq!(answer.mechanisms.len(), 3);
    assert!(closed(&mut client).await);

    // An HTTP request, unframed: "GET " is read as a size of 1,195,725,856 bytes.
    let mut client = Client::connect(broker.sasl_port).await;
    client
        .stream
        .write_all(b"GET / HTTP/1.1\r\n\r\n")
        .await
        .unwrap();
    assert!(closed(&mut client).await);
    // A size beyond sasl.server.max.receive.size closes the connection before the bytes come.
    let mut client = Client::connect(broker.sasl_port).await;
    client
        .stream
        .write_all(&(1i32 << 20).to_be_bytes())
        .await
        .unwrap();
    assert!(closed(&mut client).await);
    let mut client = Client::connect(broker.sasl_port).await;
    client
        .stream
        .write_all(&(-1i32).to_be_bytes())
        .await
        .unwrap();
    assert!(closed(&mut client).await);

    // Garbage of every length: each connection closes, and the broker serves on.
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for round in 0..40 {
        let mut bytes = Vec::new();
        for _ in 0..(round * 7 % 300) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            bytes.push(seed as u8);
        }
        let frames = if round % 2 == 0 {
            vec![bytes]
        } else {
            vec![plain.clone(), bytes]
        };
        let mut client = Client::connect(broker.sasl_port).await;
        let (last, before) = frames.split_last().unwrap();
        for each in before {
            client.send_raw(each).await;
            client.read_frame().await.unwrap();
        }
        client.send_raw(last).await;
        // Closed, or (were the bytes by chance a valid step) answered; never authenticated.
        let answer = tokio::time::timeout(Duration::from_secs(10), client.read_frame())
            .await
            .unwrap_or_else(|_| panic!("round {round}: neither answered nor closed"));
        if answer.is_some() {
            client.send_raw(&metadata).await;
            assert!(
                closed(&mut client).await,
                "round {round}: no request is served unauthenticated"
            );
        }
    }
    let mut good = alice(&broker).await;
    assert_eq!(create_topic_code(&mut good, "after-garbage").await, 0);
}
