//! confluent-kafka with `enable.idempotence=true` produces through a proxy that, again and
//! again, drops the broker's responses and cuts every connection mid-stream: batches are written
//! whose acknowledgements are lost, the client retries them, and the broker must recognise the
//! retries. Every message ends up in the log exactly once, in order per partition.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::{Server, free_port, python_with_confluent_kafka, run_script};

#[test]
fn retried_batches_are_written_once_through_repeated_connection_cuts() {
    let Some(python) = python_with_confluent_kafka() else {
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    let proxy_port = free_port();
    let advertised = format!("advertised.listeners=PLAINTEXT://127.0.0.1:{proxy_port}");
    // Debug logs name each duplicate batch the broker acknowledges without writing.
    let server = Server::start_logging(
        &temp.path().join("data"),
        &[&advertised],
        "warn,ferrolog_storage::log=debug",
    );
    let proxy_port = proxy_port.to_string();
    let out = run_script(
        &python,
        "idempotent_through_cuts.py",
        server.port,
        &[&proxy_port],
    );
    assert!(
        out.contains("idempotent ok: 30000 messages exactly once"),
        "{out}"
    );
    let duplicates = server.stderr().matches("duplicate producer batch").count();
    assert!(
        duplicates > 0,
        "the cuts lost no acknowledgement, so no retry was tested:\n{out}"
    );
    server.stop();
}
