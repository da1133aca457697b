//! A TLS listener's certificate rotated through Kafka's `kafka-configs`, as an operator rotates
//! it on a Kafka cluster (`listener.name.ssl.ssl.keystore.location` on the broker): a
//! connection made before keeps being answered, new ones are served the new certificate, a
//! certificate naming another subject is refused with Kafka's message, a key store file
//! replaced in place is served once its key is set again, and the rotated certificate is
//! still served after a restart. Certificates are made by `openssl`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "tls_with_real_clients/certificates.rs"]
#[allow(dead_code, reason = "the helpers of another test binary")]
mod certificates;
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use common::kafka::{CONFIG_COMMAND, kafka_available, kafka_tool};
use common::{Server, free_port};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// A connection to the SSL listener, its handshake done.
type Connection = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// Connects to the SSL listener on `port`, trusting the CA in `certs`.
fn connect(port: u16, certs: &Path) -> Connection {
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_file_iter(certs.join("test-ca.pem")).unwrap() {
        roots.add(certificate.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from("localhost").unwrap();
    let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut stream = rustls::StreamOwned::new(connection, socket);
    stream.flush().unwrap();
    while stream.conn.is_handshaking() {
        stream.conn.complete_io(&mut stream.sock).unwrap();
    }
    stream
}

/// The certificate `connection` was served (DER).
fn served(connection: &Connection) -> Vec<u8> {
    connection.conn.peer_certificates().unwrap()[0].to_vec()
}

/// The certificate of the PEM file `file` in `certs`.
fn certificate(certs: &Path, file: &str) -> Vec<u8> {
    CertificateDer::from_pem_file(certs.join(file))
        .unwrap()
        .to_vec()
}

/// Sends ApiVersions v0 over `connection` and reads its answer: whether it was answered.
fn answers(connection: &mut Connection, correlation: i32) -> bool {
    let mut request = Vec::new();
    request.extend_from_slice(&18i16.to_be_bytes());
    request.extend_from_slice(&0i16.to_be_bytes());
    request.extend_from_slice(&correlation.to_be_bytes());
    request.extend_from_slice(&(-1i16).to_be_bytes());
    let mut frame = (request.len() as i32).to_be_bytes().to_vec();
    frame.extend(request);
    if connection.write_all(&frame).is_err() {
        return false;
    }
    let mut size = [0u8; 4];
    if connection.read_exact(&mut size).is_err() {
        return false;
    }
    let mut answer = vec![0u8; i32::from_be_bytes(size) as usize];
    connection.read_exact(&mut answer).is_ok()
        && answer[..4] == correlation.to_be_bytes()
        && answer[4..6] == [0, 0]
}

/// `kafka-configs --alter` of broker 0's `key` through `bootstrap`: whether it succeeded, and
/// the refusal's line.
fn set(bootstrap: &str, key: &str, value: Option<&Path>) -> (bool, String) {
    let setting = value.map(|path| format!("{key}={}", path.display()));
    let mut args = vec![
        "--bootstrap-server",
        bootstrap,
        "--alter",
        "--entity-type",
        "brokers",
        "--entity-name",
        "0",
    ];
    match &setting {
        Some(setting) => args.extend(["--add-config", setting]),
        None => args.extend(["--delete-config", key]),
    }
    let output = kafka_tool(CONFIG_COMMAND, &args, b"");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let refusal = stderr.lines().find(|line| line.starts_with("Caused by"));
    (output.status.success(), refusal.unwrap_or("").to_owned())
}

/// A PEM key store (`<name>.pem`: key then certificate) for `subject`, signed by the test CA.
fn key_store(certs: &Path, name: &str, subject: &str) {
    certificates::certificate(
        certs,
        "test",
        name,
        subject,
        Some("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
    );
    let text = |file: String| std::fs::read_to_string(certs.join(file)).unwrap();
    std::fs::write(
        certs.join(format!("{name}.pem")),
        text(format!("{name}.key")) + &text(format!("{name}.crt")),
    )
    .unwrap();
}

fn openssl_available() -> bool {
    let found = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        found || std::env::var_os("CI").is_none(),
        "openssl is required under CI"
    );
    found
}

#[test]
fn a_certificate_rotated_through_kafka_configs_reaches_new_connections_only() {
    if !kafka_available() || !openssl_available() {
        eprintln!("skipped: Kafka's tools or openssl are not installed");
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let certs = temp.path().join("certs");
    std::fs::create_dir(&certs).unwrap();
    certificates::authority(&certs, "test");
    for name in ["first", "second", "third"] {
        key_store(&certs, name, "/CN=localhost");
    }
    key_store(&certs, "impostor", "/CN=impostor");
    let dir = temp.path().join("data");
    let (plain, ssl) = (free_port(), free_port());
    let listeners = format!("listeners=PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{ssl}");
    let store = format!(
        "ssl.keystore.location={}",
        certs.join("first.pem").display()
    );
    let settings = [listeners.as_str(), "ssl.keystore.type=PEM", store.as_str()];
    let start = || Server::start_on(plain, &[], &dir, &settings, "warn");
    let server = start();
    let bootstrap = format!("127.0.0.1:{plain}");
    let key = "listener.name.ssl.ssl.keystore.location";

    let mut before = connect(ssl, &certs);
    assert_eq!(served(&before), certificate(&certs, "first.crt"));
    assert!(answers(&mut before, 1));

    assert!(set(&bootstrap, key, Some(&certs.join("second.pem"))).0);
    assert_eq!(
        served(&connect(ssl, &certs)),
        certificate(&certs, "second.crt")
    );
    assert!(
        answers(&mut before, 2),
        "a connection made before is still answered"
    );

    let (done, refusal) = set(&bootstrap, key, Some(&certs.join("impostor.pem")));
    assert!(!done);
    assert!(
        refusal.contains("Keystore DistinguishedName does not match"),
        "{refusal}"
    );
    // Refused, so not kept: the broker's value is still the second store.
    let described = String::from_utf8_lossy(
        &kafka_tool(
            CONFIG_COMMAND,
            &[
                "--bootstrap-server",
                &bootstrap,
                "--describe",
                "--entity-type",
                "brokers",
                "--entity-name",
                "0",
            ],
            b"",
        )
        .stdout,
    )
    .into_owned();
    let kept = format!(
        "{key}={} sensitive=false",
        certs.join("second.pem").display()
    );
    assert!(described.contains(&kept), "{described}");
    assert_eq!(
        served(&connect(ssl, &certs)),
        certificate(&certs, "second.crt")
    );

    // The file replaced in place, its key set again to the same path.
    std::fs::copy(certs.join("third.pem"), certs.join("second.pem")).unwrap();
    assert_eq!(
        served(&connect(ssl, &certs)),
        certificate(&certs, "second.crt")
    );
    assert!(set(&bootstrap, key, Some(&certs.join("second.pem"))).0);
    assert_eq!(
        served(&connect(ssl, &certs)),
        certificate(&certs, "third.crt")
    );

    // Kept across a restart, over the file's `ssl.keystore.location`.
    server.stop();
    let server = start();
    assert_eq!(
        served(&connect(ssl, &certs)),
        certificate(&certs, "third.crt")
    );
    // Deleted, the file's store is served again.
    assert!(set(&bootstrap, key, None).0);
    assert_eq!(
        served(&connect(ssl, &certs)),
        certificate(&certs, "first.crt")
    );
    server.stop();
}
