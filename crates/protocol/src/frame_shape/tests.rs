//! The schemas against the codec, and the checks against hostile frames.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::RequestKind;
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::ApiKey;
use crate::messages::{
    DescribeShareGroupOffsetsRequest, ShareAcknowledgeRequest, ShareFetchRequest,
    StreamsGroupDescribeRequest, StreamsGroupHeartbeatRequest,
    StreamsGroupTopologyDescriptionUpdateRequest,
};

use super::*;

/// A deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

fn put_varint(out: &mut BytesMut, mut value: u64) {
    while value >= 0x80 {
        out.put_u8((value as u8) | 0x80);
        value >>= 7;
    }
    out.put_u8(value as u8);
}

fn put_length(out: &mut BytesMut, flexible: bool, width: usize, length: Option<usize>) {
    match (flexible, length) {
        (true, None) => put_varint(out, 0),
        (true, Some(length)) => put_varint(out, length as u64 + 1),
        (false, None) if width == 2 => out.put_i16(-1),
        (false, None) => out.put_i32(-1),
        (false, Some(length)) if width == 2 => out.put_i16(length as i16),
        (false, Some(length)) => out.put_i32(length as i32),
    }
}

/// Writes random values of `fields` for `version`; counts the elements written.
fn generate(
    rng: &mut Rng,
    out: &mut BytesMut,
    fields: &[Field],
    version: i16,
    flexible: bool,
    depth: u32,
    elements: &mut u64,
) {
    for field in fields {
        let tagged = field
            .tag
            .is_some_and(|(_, versions)| versions.contains(version));
        if field.versions.contains(version) && !tagged {
            generate_value(
                rng,
                out,
                field,
                &field.kind,
                version,
                flexible,
                depth,
                elements,
            );
        }
    }
    if flexible {
        let known: Vec<&Field> = fields
            .iter()
            .filter(|field| {
                field.versions.contains(version)
                    && field
                        .tag
                        .is_some_and(|(_, versions)| versions.contains(version))
            })
            .collect();
        let mut tagged = BytesMut::new();
        let mut count = 0;
        for field in known {
            if rng.below(2) == 0 {
                // Never its default (null): the codec leaves a default tagged field out when it
                // encodes, so the bytes would not round-trip.
                let present = Field {
                    nullable: NONE,
                    ..Field::new(field.name, Kind::Bool, field.versions)
                };
                let mut value = BytesMut::new();
                generate_value(
                    rng,
                    &mut value,
                    &present,
                    &field.kind,
                    version,
                    flexible,
                    depth,
                    elements,
                );
                put_varint(&mut tagged, u64::from(field.tag.unwrap().0));
                put_varint(&mut tagged, value.len() as u64);
                tagged.put_slice(&value);
                count += 1;
            }
        }
        put_varint(out, count);
        out.put_slice(&tagged);
        *elements += count;
    }
}

#[allow(clippy::too_many_arguments, reason = "a recursive test generator")]
fn generate_value(
    rng: &mut Rng,
    out: &mut BytesMut,
    field: &Field,
    kind: &Kind,
    version: i16,
    flexible: bool,
    depth: u32,
    elements: &mut u64,
) {
    let null = field.nullable.contains(version) && rng.below(5) == 0;
    match kind {
        Kind::Bool => out.put_u8(rng.below(2) as u8),
        Kind::Int8 => out.put_i8(rng.next() as i8),
        Kind::Int16 | Kind::Uint16 => out.put_u16(rng.next() as u16),
        Kind::Int32 => out.put_i32(rng.next() as i32),
        Kind::Int64 => out.put_i64(rng.next() as i64),
        Kind::Float64 => out.put_f64(rng.next() as f64),
        Kind::Uuid => out.put_u128(u128::from(rng.next()) << 64 | u128::from(rng.next())),
        Kind::String => {
            if null {
                put_length(out, flexible, 2, None);
            } else {
                let length = rng.below(12) as usize;
                put_length(out, flexible, 2, Some(length));
                for _ in 0..length {
                    out.put_u8(b'a' + rng.below(26) as u8);
                }
            }
        }
        Kind::Bytes | Kind::Records => {
            if null {
                put_length(out, flexible, 4, None);
            } else {
                let length = rng.below(40) as usize;
                put_length(out, flexible, 4, Some(length));
                for _ in 0..length {
                    out.put_u8(rng.next() as u8);
                }
            }
        }
        Kind::PrimitiveArray(element) => {
            if null {
                put_length(out, flexible, 4, None);
            } else {
                let count = rng.below(if depth < 3 { 4 } else { 1 }) as usize;
                put_length(out, flexible, 4, Some(count));
                *elements += count as u64;
                for _ in 0..count {
                    generate_value(
                        rng,
                        out,
                        &ELEMENT,
                        element,
                        version,
                        flexible,
                        depth + 1,
                        elements,
                    );
                }
            }
        }
        Kind::Struct(fields) => {
            generate(rng, out, fields, version, flexible, depth + 1, elements);
        }
        Kind::NullableStruct(fields) => {
            if null {
                out.put_i8(-1);
            } else {
                out.put_i8(1);
                generate(rng, out, fields, version, flexible, depth + 1, elements);
            }
        }
        Kind::Array(fields) => {
            if null {
                put_length(out, flexible, 4, None);
            } else {
                let count = rng.below(if depth < 3 { 4 } else { 1 }) as usize;
                put_length(out, flexible, 4, Some(count));
                *elements += count as u64;
                for _ in 0..count {
                    generate(rng, out, fields, version, flexible, depth + 1, elements);
                }
            }
        }
    }
}

/// A frame: the request header for `api` at `version` with a client id, then `body`.
fn frame(api: ApiKey, version: i16, body: &[u8]) -> Bytes {
    let mut out = BytesMut::new();
    out.put_i16(api as i16);
    out.put_i16(version);
    out.put_i32(7);
    out.put_i16(4);
    out.put_slice(b"test");
    if api.request_header_version(version) >= 2 {
        put_varint(&mut out, 0);
    }
    out.put_slice(body);
    out.freeze()
}

/// `body` decoded by the codec the broker decodes `api` with, and encoded again.
fn round_trip(api: ApiKey, body: &mut Bytes, version: i16) -> anyhow::Result<BytesMut> {
    let mut encoded = BytesMut::new();
    match api {
        ApiKey::StreamsGroupHeartbeat => {
            StreamsGroupHeartbeatRequest::decode(body, version)?.encode(&mut encoded, version)?;
        }
        ApiKey::StreamsGroupDescribe => {
            StreamsGroupDescribeRequest::decode(body, version)?.encode(&mut encoded, version)?;
        }
        ApiKey::ShareFetch => {
            ShareFetchRequest::decode(body, version)?.encode(&mut encoded, version)?;
        }
        ApiKey::ShareAcknowledge => {
            ShareAcknowledgeRequest::decode(body, version)?.encode(&mut encoded, version)?;
        }
        ApiKey::DescribeShareGroupOffsets => {
            DescribeShareGroupOffsetsRequest::decode(body, version)?
                .encode(&mut encoded, version)?;
        }
        ApiKey::StreamsGroupTopologyDescriptionUpdate => {
            StreamsGroupTopologyDescriptionUpdateRequest::decode(body, version)?
                .encode(&mut encoded, version)?;
        }
        _ => {
            let codec = kafka_protocol::messages::ApiKey::try_from(api as i16)
                .map_err(|_| anyhow::anyhow!("no codec for {api:?}"))?;
            RequestKind::decode(codec, body, version)?.encode(&mut encoded, version)?;
        }
    }
    Ok(encoded)
}

#[test]
fn frames_built_from_every_schema_decode_completely_and_are_counted_exactly() {
    let mut rng = Rng(0x5eed_0f5c_a1ab_1e00);
    for message in generated::ALL {
        let api = ApiKey::try_from(message.api_key).unwrap();
        let (min, max) = crate::apis::supported_range(api).unwrap();
        for version in min..=max {
            let flexible = is_flexible(api, version);
            for round in 0..40 {
                let mut body = BytesMut::new();
                let mut elements = 0;
                generate(
                    &mut rng,
                    &mut body,
                    message.fields,
                    version,
                    flexible,
                    0,
                    &mut elements,
                );
                let body = body.freeze();
                let mut decoding = body.clone();
                let encoded = round_trip(api, &mut decoding, version).unwrap_or_else(|error| {
                    panic!("{api:?} v{version} round {round}: the codec refuses {body:?}: {error}")
                });
                assert!(
                    decoding.is_empty(),
                    "{api:?} v{version}: {} bytes left after decoding",
                    decoding.len()
                );
                assert_eq!(encoded.freeze(), body, "{api:?} v{version} round {round}");
                let shape = scan(frame(api, version, &body)).unwrap().shape();
                assert_eq!(shape.elements, elements, "{api:?} v{version} round {round}");
            }
        }
    }
}

#[test]
fn every_served_api_has_one_schema() {
    for (api, _, _) in crate::apis::SUPPORTED {
        let schemas = generated::ALL
            .iter()
            .filter(|message| message.api_key == *api as i16)
            .count();
        assert_eq!(schemas, 1, "{api:?}");
    }
    assert_eq!(generated::ALL.len(), crate::apis::SUPPORTED.len());
}

#[test]
fn absurd_counts_and_lengths_are_refused_before_anything_is_decoded() {
    // Produce v3: no transactional id, acks, timeout, then two billion topics in 4 bytes.
    let mut body = BytesMut::new();
    body.put_i16(-1);
    body.put_i16(1);
    body.put_i32(1000);
    body.put_i32(2_000_000_000);
    body.put_slice(&[0; 64]);
    let refused = scan(frame(ApiKey::Produce, 3, &body)).unwrap_err();
    assert!(
        refused
            .reason
            .contains("TopicData declares 2000000000 elements"),
        "{refused}"
    );

    // Produce v9 (compact): a topic whose partition array declares 4 billion elements.
    let mut body = BytesMut::new();
    put_varint(&mut body, 0);
    body.put_i16(1);
    body.put_i32(1000);
    put_varint(&mut body, 2);
    put_varint(&mut body, 2);
    body.put_slice(b"t");
    put_varint(&mut body, u64::from(u32::MAX));
    let refused = scan(frame(ApiKey::Produce, 9, &body)).unwrap_err();
    assert!(
        refused.reason.contains("PartitionData declares"),
        "{refused}"
    );

    // Metadata v1: a topic name said to be 30,000 bytes long in a 20-byte frame.
    let mut body = BytesMut::new();
    body.put_i32(1);
    body.put_i16(30_000);
    let refused = scan(frame(ApiKey::Metadata, 1, &body)).unwrap_err();
    assert!(refused.reason.contains("needs 30000 bytes"), "{refused}");

    // A header cut short.
    assert!(scan(Bytes::from_static(&[0, 3])).is_err());
    let mut short = BytesMut::new();
    short.put_i16(3);
    short.put_i16(1);
    short.put_i32(1);
    short.put_i16(50);
    assert!(scan(short.freeze()).is_err());
}

#[test]
fn a_request_naming_millions_of_partitions_is_priced_at_what_decoding_it_costs() {
    // Produce v3 to one topic with 1,000,000 partitions of null records: 8 bytes each.
    let partitions = 1_000_000u32;
    let mut body = BytesMut::new();
    body.put_i16(-1);
    body.put_i16(1);
    body.put_i32(1000);
    body.put_i32(1);
    body.put_i16(1);
    body.put_slice(b"t");
    body.put_i32(partitions as i32);
    for index in 0..partitions {
        body.put_i32(index as i32);
        body.put_i32(-1);
    }
    let checked = scan(frame(ApiKey::Produce, 3, &body)).unwrap();
    assert_eq!(checked.shape().elements, u64::from(partitions) + 1);
    assert!(checked.work_bytes() > ELEMENT_COST * u64::from(partitions));
}

#[test]
fn frames_of_other_apis_and_versions_are_left_to_the_dispatcher() {
    let unknown_version = frame(ApiKey::Produce, 2, &[1, 2, 3]);
    assert_eq!(scan(unknown_version).unwrap().shape(), Shape::default());
    let unserved_api = frame(ApiKey::BrokerHeartbeat, 1, &[9; 5]);
    assert_eq!(scan(unserved_api).unwrap().shape(), Shape::default());
}

#[test]
fn the_element_cost_covers_the_codecs_largest_elements() {
    use kafka_protocol::messages::*;
    use std::mem::size_of;
    // A request element and the response element answering it, both decoded structs.
    let pairs = [
        size_of::<produce_request::PartitionProduceData>()
            + size_of::<produce_response::PartitionProduceResponse>(),
        size_of::<produce_request::TopicProduceData>()
            + size_of::<produce_response::TopicProduceResponse>(),
        size_of::<fetch_request::FetchPartition>() + size_of::<fetch_response::PartitionData>(),
        size_of::<fetch_request::FetchTopic>()
            + size_of::<fetch_response::FetchableTopicResponse>(),
        size_of::<list_offsets_request::ListOffsetsPartition>()
            + size_of::<list_offsets_response::ListOffsetsPartitionResponse>(),
        size_of::<metadata_request::MetadataRequestTopic>()
            + size_of::<metadata_response::MetadataResponseTopic>(),
        size_of::<offset_commit_request::OffsetCommitRequestPartition>()
            + size_of::<offset_commit_response::OffsetCommitResponsePartition>(),
        size_of::<offset_fetch_request::OffsetFetchRequestTopics>()
            + size_of::<offset_fetch_response::OffsetFetchResponseTopics>(),
        size_of::<create_topics_request::CreatableTopic>()
            + size_of::<create_topics_response::CreatableTopicResult>(),
        size_of::<describe_configs_request::DescribeConfigsResource>()
            + size_of::<describe_configs_response::DescribeConfigsResult>(),
        size_of::<delete_records_request::DeleteRecordsPartition>()
            + size_of::<delete_records_response::DeleteRecordsPartitionResult>(),
        size_of::<join_group_request::JoinGroupRequestProtocol>()
            + size_of::<join_group_response::JoinGroupResponseMember>(),
    ];
    // What an element's answer takes encoded (error code, offsets, a name) is under 64 bytes.
    for (index, structs) in pairs.iter().enumerate() {
        let cost = *structs as u64 + 64;
        assert!(
            cost <= ELEMENT_COST,
            "pair {index}: {cost} bytes, more than ELEMENT_COST ({ELEMENT_COST})"
        );
    }
}
