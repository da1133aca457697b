//! Requests in Kafka's protocol over a plain blocking socket, for tests that ask a broker
//! (ferrolog or Kafka itself) the same questions and compare the answers.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// `request` framed for the wire: its size, a request header (correlation id 1, client id
/// "ferrolog-test") and its body at `version`.
pub fn frame<R: Encodable>(api: ApiKey, version: i16, request: &R) -> Vec<u8> {
    let mut body = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("ferrolog-test")))
        .encode(&mut body, api.request_header_version(version))
        .unwrap();
    request.encode(&mut body, version).unwrap();
    let mut framed = (body.len() as i32).to_be_bytes().to_vec();
    framed.extend_from_slice(&body);
    framed
}

/// Sends a framed request and returns the response frame (header and body), or `None` when
/// the broker closed the connection instead.
pub fn exchange(stream: &mut TcpStream, framed: &[u8]) -> Option<Bytes> {
    stream.write_all(framed).ok()?;
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).ok()?;
    let mut response = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut response).ok()?;
    Some(Bytes::from(response))
}

/// Sends `request` and decodes the response, or `None` when the broker closed the connection.
pub fn send<Req: Encodable, Resp: Decodable>(
    stream: &mut TcpStream,
    api: ApiKey,
    version: i16,
    request: &Req,
) -> Option<Resp> {
    let mut response = exchange(stream, &frame(api, version, request))?;
    ResponseHeader::decode(&mut response, api.response_header_version(version)).unwrap();
    Some(Resp::decode(&mut response, version).unwrap())
}

/// A connection to the broker on 127.0.0.1:`port` that waits up to 30 s for an answer.
pub fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
}

/// A protocol string from text.
pub fn name(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}
