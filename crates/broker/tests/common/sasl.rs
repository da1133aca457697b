//! Brokers with several listeners, a SASL_PLAINTEXT one among them where alice logs in with
//! PLAIN, for the tests of what a listener's clients can and cannot do to the others'.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use ferrolog_broker::listener::{Endpoint, Listener, SecurityProtocol};
use ferrolog_broker::sasl::{Mechanism, PlainUsers, SaslSettings};
use ferrolog_broker::{BrokerConfig, Context};
use ferrolog_storage::SystemClock;
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::Client;

/// A SASL_PLAINTEXT listener named `name` on `port` where alice logs in with PLAIN.
pub fn plain_listener(name: &str, port: u16) -> Listener {
    Listener {
        name: name.into(),
        protocol: SecurityProtocol::SaslPlaintext,
        advertised: Endpoint {
            host: "127.0.0.1".into(),
            port,
        },
        sasl: Some(Arc::new(SaslSettings {
            mechanisms: vec![Mechanism::Plain],
            plain_users: PlainUsers::new(BTreeMap::from([(
                "alice".to_owned(),
                "alice-secret".to_owned(),
            )])),
        })),
        tls: None,
        max_connections: None,
    }
}

/// A broker over `dir` with `config`, serving one listener per entry of `listeners` (each made
/// from its port): the context, the ports in that order, and the server's task.
pub async fn start_listeners(
    dir: &std::path::Path,
    config: BrokerConfig,
    listeners: &[&dyn Fn(u16) -> Listener],
) -> (
    Arc<Context>,
    Vec<u16>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let manager = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        ..ManagerConfig::default()
    };
    let manager = Arc::new(LogManager::open(manager, Arc::new(SystemClock)).unwrap());
    let context = Arc::new(Context::new(manager, config).unwrap());
    let mut bound = Vec::new();
    let mut ports = Vec::new();
    for make in listeners {
        let socket = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = socket.local_addr().unwrap().port();
        ports.push(port);
        bound.push((socket, Arc::new(make(port))));
    }
    let server = tokio::spawn(ferrolog_broker::serve_listeners(
        bound,
        Arc::clone(&context),
    ));
    (context, ports, server)
}

/// A client logged in as alice with PLAIN on the SASL listener at `port`.
pub async fn alice(port: u16) -> Client {
    let mut client = Client::connect(port).await;
    let mechanism = StrBytes::from_static_str("PLAIN");
    let handshake: SaslHandshakeResponse = client
        .send(
            ApiKey::SaslHandshake,
            1,
            &SaslHandshakeRequest::default().with_mechanism(mechanism),
        )
        .await;
    assert_eq!(handshake.error_code, 0);
    let token = Bytes::from_static(b"\0alice\0alice-secret");
    let authenticated: SaslAuthenticateResponse = client
        .send(
            ApiKey::SaslAuthenticate,
            2,
            &SaslAuthenticateRequest::default().with_auth_bytes(token),
        )
        .await;
    assert_eq!(authenticated.error_code, 0);
    client
}
