//! A blocking connection to one Kafka-protocol broker (Kafka or ferrolog), plaintext, one
//! request at a time: what `move-to-kafka` and `log-dirs` need to ask a broker.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::Context;
use bytes::BytesMut;
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// A blocking connection to one Kafka broker, one request at a time.
pub struct KafkaConnection {
    client_id: &'static str,
    stream: TcpStream,
    address: String,
    correlation_id: i32,
}

impl KafkaConnection {
    /// Connects to `address` (host:port), naming itself `client_id` in every request.
    pub fn open(address: &str, client_id: &'static str) -> anyhow::Result<Self> {
        let stream =
            TcpStream::connect(address).with_context(|| format!("connecting to {address}"))?;
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        Ok(Self {
            client_id,
            stream,
            address: address.to_owned(),
            correlation_id: 0,
        })
    }

    /// Sends `request` as `api` version `version` and reads its answer.
    pub fn send<Req: Encodable, Resp: Decodable>(
        &mut self,
        api: ApiKey,
        version: i16,
        request: &Req,
    ) -> anyhow::Result<Resp> {
        self.correlation_id += 1;
        let mut body = BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(StrBytes::from_static_str(self.client_id)))
            .encode(&mut body, api.request_header_version(version))?;
        request.encode(&mut body, version)?;
        let mut framed = (body.len() as i32).to_be_bytes().to_vec();
        framed.extend_from_slice(&body);
        let context = || format!("{api:?} v{version} to {}", self.address);
        self.stream.write_all(&framed).with_context(context)?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).with_context(context)?;
        let size = usize::try_from(i32::from_be_bytes(size)).with_context(context)?;
        let mut response = vec![0u8; size];
        self.stream
            .read_exact(&mut response)
            .with_context(context)?;
        let mut response = bytes::Bytes::from(response);
        ResponseHeader::decode(&mut response, api.response_header_version(version))
            .with_context(context)?;
        Resp::decode(&mut response, version).with_context(context)
    }
}
