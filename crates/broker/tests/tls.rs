//! TLS listeners end to end over loopback, with certificates made for the test (a CA, the
//! broker's certificate, clients' certificates, and a stranger's CA): SSL with client
//! certificates required and requested, the principal taken from the certificate (with and
//! without `ssl.principal.mapping.rules`), refusals in the handshake, produce and fetch over
//! TLS, and SASL over TLS.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{api_versions_request, frame};
use ferrolog_broker::authz::AuthorizerConfig;
use ferrolog_broker::listener::{Endpoint, Listener, SecurityProtocol};
use ferrolog_broker::sasl::{Mechanism, PlainUsers, SaslSettings};
use ferrolog_broker::tls::{
    CertificateDer, ClientAuth, PrincipalRules, PrivateKeyDer, TlsConfig, TlsSettings, stores,
};
use ferrolog_broker::{BrokerConfig, Context};
use ferrolog_storage::SystemClock;
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, CreateTopicsResponse, FetchRequest, FetchResponse,
    MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse, ResponseHeader,
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

const TOPIC_AUTHORIZATION_FAILED: i16 = 29;

/// A certificate authority and what it signs.
struct Authority {
    certificate: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

impl Authority {
    fn new(name: &str) -> Self {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let certificate = params.self_signed(&key).unwrap();
        Self {
            certificate: certificate.der().clone(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A certificate for `names` (SANs) with the subject `subject` (in encoding order), and its
    /// key.
    fn sign(
        &self,
        names: &[&str],
        subject: &[(DnType, &str)],
    ) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(
            names
                .iter()
                .map(|name| (*name).to_owned())
                .collect::<Vec<_>>(),
        )
        .unwrap();
        for (kind, value) in subject {
            params.distinguished_name.push(kind.clone(), *value);
        }
        let certificate = params.signed_by(&key, &self.issuer).unwrap();
        let key = PrivateKeyDer::try_from(key.serialize_der()).unwrap();
        (
            vec![certificate.der().clone(), self.certificate.clone()],
            key,
        )
    }
}

struct TlsBroker {
    context: Arc<Context>,
    port: u16,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for TlsBroker {
    fn drop(&mut self) {
        self.server.abort();
        let _ = self.context.manager.shutdown();
    }
}

/// A broker with one TLS listener (`protocol` SSL or SASL_SSL) using `ca`'s broker certificate.
async fn start(
    dir: &Path,
    ca: &Authority,
    protocol: SecurityProtocol,
    client_auth: ClientAuth,
    rules: PrincipalRules,
    super_user: &str,
) -> TlsBroker {
    let config = BrokerConfig {
        authorizer: Some(AuthorizerConfig::parse(Some(super_user), None).unwrap()),
        ..BrokerConfig::default()
    };
    start_with(dir, ca, protocol, client_auth, rules, config).await
}

async fn start_with(
    dir: &Path,
    ca: &Authority,
    protocol: SecurityProtocol,
    client_auth: ClientAuth,
    rules: PrincipalRules,
    config: BrokerConfig,
) -> TlsBroker {
    let manager = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        ..ManagerConfig::default()
    };
    let manager = Arc::new(LogManager::open(manager, Arc::new(SystemClock)).unwrap());
    let context = Arc::new(Context::new(manager, config).unwrap());
    let (chain, key) = ca.sign(
        &["localhost", "127.0.0.1"],
        &[(DnType::CommonName, "broker")],
    );
    let tls = TlsSettings::build(TlsConfig {
        chain,
        key,
        trusted: vec![ca.certificate.clone()],
        client_auth,
        versions: Vec::new(),
        cipher_suites: Vec::new(),
        principal_rules: rules,
    })
    .unwrap();
    let socket = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = socket.local_addr().unwrap().port();
    let sasl = (protocol == SecurityProtocol::SaslSsl).then(|| {
        Arc::new(SaslSettings {
            mechanisms: vec![Mechanism::Plain],
            plain_users: PlainUsers::new(BTreeMap::from([(
                "alice".to_owned(),
                "alice-secret".to_owned(),
            )])),
        })
    });
    let listener = Listener {
        name: "SECURE".into(),
        protocol,
        advertised: Endpoint {
            host: "localhost".into(),
            port,
        },
        sasl,
        tls: Some(Arc::new(tls)),
        max_connections: None,
    };
    let server = tokio::spawn(ferrolog_broker::serve_listeners(
        vec![(socket, Arc::new(listener))],
        Arc::clone(&context),
    ));
    TlsBroker {
        context,
        port,
        server,
    }
}

type TlsStream = tokio_rustls::client::TlsStream<TcpStream>;

/// A TLS connection trusting `ca`, with `identity` as its client certificate if given; the
/// handshake's error when it fails.
async fn connect(
    port: u16,
    ca: &Authority,
    identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
) -> std::io::Result<TlsStream> {
    let mut roots = RootCertStore::empty();
    roots.add(ca.certificate.clone()).unwrap();
    let builder = ClientConfig::builder().with_root_certificates(roots);
    let config = match identity {
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).unwrap(),
        None => builder.with_no_client_auth(),
    };
    let socket = TcpStream::connect(("127.0.0.1", port)).await?;
    let mut stream = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), socket)
        .await?;
    // With TLS 1.3 a refused client certificate shows only at the first read: make sure the
    // connection is up by asking for metadata.
    let request = MetadataRequest::default().with_topics(Some(Vec::new()));
    send(&mut stream, ApiKey::Metadata, 12, 0, &request).await?;
    let _: MetadataResponse = receive(&mut stream, ApiKey::Metadata, 12).await?;
    Ok(stream)
}

async fn send<R: Encodable>(
    stream: &mut TlsStream,
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    request: &R,
) -> std::io::Result<()> {
    let body = frame(api, version, correlation_id, request);
    let mut framed = (body.len() as i32).to_be_bytes().to_vec();
    framed.extend_from_slice(&body);
    stream.write_all(&framed).await?;
    stream.flush().await
}

async fn receive<R: Decodable>(
    stream: &mut TlsStream,
    api: ApiKey,
    version: i16,
) -> std::io::Result<R> {
    let size = tokio::time::timeout(Duration::from_secs(10), stream.read_i32())
        .await
        .map_err(|_| std::io::Error::other("no answer in 10 s"))??;
    let mut body = vec![0; size as usize];
    stream.read_exact(&mut body).await?;
    let mut body = Bytes::from(body);
    ResponseHeader::decode(&mut body, api.response_header_version(version)).unwrap();
    Ok(R::decode(&mut body, version).unwrap())
}

async fn call<Req: Encodable, Resp: Decodable>(
    stream: &mut TlsStream,
    api: ApiKey,
    version: i16,
    request: &Req,
) -> Resp {
    send(stream, api, version, 1, request).await.unwrap();
    receive(stream, api, version).await.unwrap()
}

async fn create_topic(stream: &mut TlsStream, topic: &str) -> i16 {
    let request = CreateTopicsRequest::default().with_topics(vec![
        CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
            .with_num_partitions(1)
            .with_replication_factor(1),
    ]);
    let response: CreateTopicsResponse = call(stream, ApiKey::CreateTopics, 5, &request).await;
    response.topics[0].error_code
}

fn alice(ca: &Authority) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    ca.sign(
        &[],
        &[
            (DnType::OrganizationName, "Example"),
            (DnType::CommonName, "alice"),
        ],
    )
}

#[tokio::test]
async fn a_required_client_certificate_gives_the_principal() {
    let temp = tempfile::tempdir().unwrap();
    let ca = Authority::new("ferrolog test CA");
    let broker = start(
        temp.path(),
        &ca,
        SecurityProtocol::Ssl,
        ClientAuth::Required,
        PrincipalRules::default(),
        // Java's name for the subject (rcgen encodes CN, then O; Java writes them the other
        // way round, as `openssl x509 -nameopt RFC2253` does).
        "User:O=Example,CN=alice",
    )
    .await;
    let mut client = connect(broker.port, &ca, Some(alice(&ca))).await.unwrap();
    assert_eq!(create_topic(&mut client, "by-alice").await, 0);

    let bob = ca.sign(&[], &[(DnType::CommonName, "bob")]);
    let mut bob = connect(broker.port, &ca, Some(bob)).await.unwrap();
    assert_eq!(
        create_topic(&mut bob, "by-bob").await,
        TOPIC_AUTHORIZATION_FAILED
    );

    // A stranger's certificate, and none at all, are refused in the handshake.
    let stranger = Authority::new("someone else's CA");
    let forged = stranger.sign(&[], &[(DnType::CommonName, "alice")]);
    assert!(connect(broker.port, &ca, Some(forged)).await.is_err());
    assert!(connect(broker.port, &ca, None).await.is_err());
    // A client that does not speak TLS is closed.
    let mut plain = TcpStream::connect(("127.0.0.1", broker.port))
        .await
        .unwrap();
    let request = frame(ApiKey::ApiVersions, 3, 1, &api_versions_request());
    let mut framed = (request.len() as i32).to_be_bytes().to_vec();
    framed.extend_from_slice(&request);
    plain.write_all(&framed).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), plain.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "closed");
    assert!(
        answer.len() < 16,
        "no Kafka answer, at most a TLS alert: {answer:?}"
    );
}

#[tokio::test]
async fn a_requested_certificate_is_optional_and_mapping_rules_shape_the_principal() {
    let temp = tempfile::tempdir().unwrap();
    let ca = Authority::new("ferrolog test CA");
    let rules = PrincipalRules::parse("RULE:^O=.*,CN=(.*?)$/$1/U, DEFAULT").unwrap();
    let broker = start(
        temp.path(),
        &ca,
        SecurityProtocol::Ssl,
        ClientAuth::Requested,
        rules,
        "User:ALICE",
    )
    .await;
    let mut client = connect(broker.port, &ca, Some(alice(&ca))).await.unwrap();
    assert_eq!(create_topic(&mut client, "by-alice").await, 0);
    let mut anonymous = connect(broker.port, &ca, None).await.unwrap();
    assert_eq!(
        create_topic(&mut anonymous, "by-anonymous").await,
        TOPIC_AUTHORIZATION_FAILED
    );
}

#[tokio::test]
async fn a_certificate_no_rule_maps_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let ca = Authority::new("ferrolog test CA");
    let rules = PrincipalRules::parse("RULE:^CN=(.*?),OU=Services$/$1/").unwrap();
    let broker = start(
        temp.path(),
        &ca,
        SecurityProtocol::Ssl,
        ClientAuth::Required,
        rules,
        "User:alice",
    )
    .await;
    assert!(connect(broker.port, &ca, Some(alice(&ca))).await.is_err());
}

#[tokio::test]
async fn a_handshake_not_done_by_the_setup_limit_closes_its_connection() {
    let temp = tempfile::tempdir().unwrap();
    let ca = Authority::new("ferrolog-test-ca");
    let setup = Duration::from_secs(1);
    let config = BrokerConfig {
        connection_setup_timeout: Some(setup),
        ..BrokerConfig::default()
    };
    let broker = start_with(
        temp.path(),
        &ca,
        SecurityProtocol::Ssl,
        ClientAuth::None,
        PrincipalRules::default(),
        config,
    )
    .await;
    // A TCP connection that never starts its handshake, as a half-open flood leaves them.
    let started = std::time::Instant::now();
    let mut silent = TcpStream::connect(("127.0.0.1", broker.port))
        .await
        .unwrap();
    let mut sink = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut sink))
        .await
        .expect("closed at the setup limit, not after a minute");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    assert!(started.elapsed() >= setup);
    // A client that shakes hands is served.
    let mut stream = connect(broker.port, &ca, None).await.unwrap();
    assert_eq!(create_topic(&mut stream, "after-silence").await, 0);
}

#[tokio::test]
async fn records_go_both_ways_over_tls() {
    let temp = tempfile::tempdir().unwrap();
    let ca = Authority::new("ferrolog test CA");
    let broker = start(
        temp.path(),
        &ca,
        SecurityProtocol::Ssl,
        ClientAuth::Required,
        PrincipalRules::default(),
        "User:O=Example,CN=alice",
    )
    .await;
    let mut client = connect(broker.port, &ca, Some(alice(&ca))).await.unwrap();
    assert_eq!(create_topic(&mut client, "records").await, 0);
    // Batches of 64 KiB records, so a fetch's file region spans several TLS records.
    for round in 0..20 {
        let batch = ferrolog_testkit::sized_batch(64 * 1024 + round, 1_700_000_000_000);
        let request = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_static_str("records")))
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(0)
                            .with_records(Some(Bytes::from(batch))),
                    ]),
            ]);
        let response: ProduceResponse = call(&mut client, ApiKey::Produce, 9, &request).await;
        assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
    }
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_max_bytes(50 << 20)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str("records")))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(0)
                        .with_partition_max_bytes(50 << 20),
                ]),
        ]);
    let response: FetchResponse = call(&mut client, ApiKey::Fetch, 12, &request).await;
    let records = response.responses[0].partitions[0].records.clone().unwrap();
    let (fetched, _) = ferrolog_testkit::fetched_records(&records);
    assert_eq!(fetched.len(), 20, "every record came back");
    for (round, record) in fetched.iter().enumerate() {
        assert_eq!(record.offset, round as i64);
        assert_eq!(
            record.value.as_deref(),
            Some(&vec![b'x'; 64 * 1024 + round][..]),
            "record {round} whole"
        );
    }
}

#[tokio::test]
async fn sasl_runs_over_tls() {
    let temp = tempfile::tempdir().unwrap();
    let ca = Authority::new("ferrolog test CA");
    let broker = start(
        temp.path(),
        &ca,
        SecurityProtocol::SaslSsl,
        ClientAuth::None,
        PrincipalRules::default(),
        "User:alice",
    )
    .await;
    let mut roots = RootCertStore::empty();
    roots.add(ca.certificate.clone()).unwrap();
    let config = ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let socket = TcpStream::connect(("127.0.0.1", broker.port))
        .await
        .unwrap();
    let mut stream = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), socket)
        .await
        .unwrap();
    let handshake: SaslHandshakeResponse = call(
        &mut stream,
        ApiKey::SaslHandshake,
        1,
        &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN")),
    )
    .await;
    assert_eq!(handshake.error_code, 0);
    let answer: SaslAuthenticateResponse = call(
        &mut stream,
        ApiKey::SaslAuthenticate,
        2,
        &SaslAuthenticateRequest::default()
            .with_auth_bytes(Bytes::from_static(b"\0alice\0alice-secret")),
    )
    .await;
    assert_eq!(answer.error_code, 0);
    assert_eq!(create_topic(&mut stream, "over-sasl-ssl").await, 0);
}

#[test]
fn pem_keys_load_plain_and_encrypted() {
    let ca = Authority::new("ferrolog test CA");
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params.distinguished_name.push(DnType::CommonName, "broker");
    let certificate = params.signed_by(&key, &ca.issuer).unwrap();
    let plain = format!("{}{}", key.serialize_pem(), certificate.pem());
    let (chain, _) = stores::pem_key_and_chain(&plain, None).unwrap();
    assert_eq!(chain.len(), 1);
    assert!(
        stores::pem_key_and_chain(&plain, Some("secret")).is_err(),
        "not encrypted"
    );

    use pkcs8::EncryptedPrivateKeyInfo;
    use pkcs8::der::EncodePem;
    let parameters =
        pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(2048, &[7; 16], &[9; 16]).unwrap();
    let info = pkcs8::PrivateKeyInfo::try_from(key.serialized_der()).unwrap();
    let encrypted = info.encrypt_with_params(parameters, "secret").unwrap();
    let encrypted_pem = EncryptedPrivateKeyInfo::try_from(encrypted.as_bytes())
        .unwrap()
        .to_pem(pkcs8::LineEnding::LF)
        .unwrap();
    let text = format!("{encrypted_pem}{}", certificate.pem());
    assert!(stores::pem_key_and_chain(&text, Some("secret")).is_ok());
    assert!(stores::pem_key_and_chain(&text, Some("wrong")).is_err());
    assert!(stores::pem_key_and_chain(&text, None).is_err());
}

#[test]
fn pkcs12_stores_load_with_their_password() {
    let ca = Authority::new("ferrolog test CA");
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    let certificate = params.signed_by(&key, &ca.issuer).unwrap();
    let chain = p12_keystore::PrivateKeyChain::new(
        vec![1u8; 20],
        p12_keystore::PrivateKey::from_der(key.serialized_der()).unwrap(),
        [
            p12_keystore::Certificate::from_der(certificate.der()).unwrap(),
            p12_keystore::Certificate::from_der(&ca.certificate).unwrap(),
        ],
    );
    let mut store = p12_keystore::KeyStore::new();
    store.add_entry(
        "broker",
        p12_keystore::KeyStoreEntry::PrivateKeyChain(chain),
    );
    let bytes = store.writer("store-secret").write().unwrap();
    let (loaded, _) = stores::pkcs12_key_and_chain(&bytes, "store-secret").unwrap();
    assert_eq!(loaded.len(), 2);
    assert_eq!(loaded[0].as_ref(), certificate.der().as_ref());
    assert!(stores::pkcs12_key_and_chain(&bytes, "wrong").is_err());
    assert!(stores::pkcs12_key_and_chain(b"not a store", "store-secret").is_err());

    let mut trust = p12_keystore::KeyStore::new();
    trust.add_entry(
        "ca",
        p12_keystore::KeyStoreEntry::Certificate(
            p12_keystore::Certificate::from_der(&ca.certificate).unwrap(),
        ),
    );
    let bytes = trust.writer("trust-secret").write().unwrap();
    let trusted = stores::pkcs12_certificates(&bytes, "trust-secret").unwrap();
    assert_eq!(trusted, vec![ca.certificate.clone()]);

    // A key store used as a trust store: its key entry's own certificate is trusted, as Java's
    // trust manager takes it, not the CA that issued it (which would vouch for every
    // certificate the CA signed).
    let key_entry_store = store.writer("store-secret").write().unwrap();
    let trusted = stores::pkcs12_certificates(&key_entry_store, "store-secret").unwrap();
    assert_eq!(trusted.len(), 1);
    assert_eq!(trusted[0].as_ref(), certificate.der().as_ref());
}
