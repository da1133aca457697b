//! The consumer protocol embedded in classic group requests (protocol type `consumer`): a
//! member's subscription in its JoinGroup metadata and its assignment in SyncGroup, each an
//! `i16` version followed by the message. Kafka reads versions above 3 as 3 (the newest it
//! knows) and writes an assignment in the version of the member's subscription, capped at 3;
//! versions 0 to 3 of the assignment share one layout.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition as AssignedTopic;
use kafka_protocol::messages::{
    ConsumerProtocolAssignment, ConsumerProtocolSubscription, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// The newest version of the embedded messages Kafka 4.4 knows.
const NEWEST: i16 = 3;

/// Partitions by topic name, as the embedded messages list them.
pub type NamedPartitions = Vec<(String, Vec<i32>)>;

/// A member's subscription, as its JoinGroup metadata carries it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subscription {
    pub topics: Vec<String>,
    /// The partitions the member owns, by topic name (version 1 and later; none before).
    pub owned: NamedPartitions,
    /// Version 3 and later.
    pub rack_id: Option<String>,
}

/// The version at the head of embedded consumer-protocol bytes, capped at the newest; `None`
/// when there is none or it is negative.
pub fn version(bytes: &[u8]) -> Option<i16> {
    let head: [u8; 2] = bytes.get(..2)?.try_into().ok()?;
    let version = i16::from_be_bytes(head);
    (version >= 0).then_some(version.min(NEWEST))
}

/// Reads a member's subscription from its protocol metadata.
pub fn decode_subscription(metadata: &[u8]) -> Result<Subscription, String> {
    let version = version(metadata).ok_or("no version at the head of the subscription")?;
    let mut body = Bytes::copy_from_slice(&metadata[2..]);
    let decoded = ConsumerProtocolSubscription::decode(&mut body, version)
        .map_err(|error| format!("the subscription does not decode: {error}"))?;
    Ok(Subscription {
        topics: decoded.topics.iter().map(ToString::to_string).collect(),
        owned: decoded
            .owned_partitions
            .iter()
            .map(|owned| (owned.topic.0.to_string(), owned.partitions.clone()))
            .collect(),
        rack_id: decoded
            .rack_id
            .map(|rack| rack.to_string())
            .filter(|rack| !rack.is_empty()),
    })
}

/// The partitions an assignment gives, by topic name, and whether it carries user data (which
/// only a custom client-side assignor writes); an empty assignment gives nothing.
pub fn decode_assignment(bytes: &[u8]) -> Result<(NamedPartitions, bool), String> {
    if bytes.is_empty() {
        return Ok((Vec::new(), false));
    }
    let version = version(bytes).ok_or("no version at the head of the assignment")?;
    let mut body = Bytes::copy_from_slice(&bytes[2..]);
    let decoded = ConsumerProtocolAssignment::decode(&mut body, version)
        .map_err(|error| format!("the assignment does not decode: {error}"))?;
    let user_data = decoded
        .user_data
        .as_ref()
        .is_some_and(|data| !data.is_empty());
    let partitions = decoded
        .assigned_partitions
        .iter()
        .map(|topic| (topic.topic.0.to_string(), topic.partitions.clone()))
        .collect();
    Ok((partitions, user_data))
}

/// An assignment of `partitions` (by topic name) in `version`, without user data, as Kafka's
/// coordinator writes one for a member it assigned.
pub fn encode_assignment(version: i16, partitions: &[(String, Vec<i32>)]) -> Vec<u8> {
    let assignment = ConsumerProtocolAssignment::default().with_assigned_partitions(
        partitions
            .iter()
            .map(|(topic, partitions)| {
                AssignedTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(topic.clone())))
                    .with_partitions(partitions.clone())
            })
            .collect(),
    );
    let version = version.clamp(0, NEWEST);
    let mut bytes = BytesMut::new();
    bytes.extend_from_slice(&version.to_be_bytes());
    // An assignment always encodes: every field is within its type's bounds.
    if assignment.encode(&mut bytes, version).is_err() {
        bytes.truncate(2);
    }
    bytes.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_assignment_is_kafkas_bytes_and_reads_back() {
        let bytes = encode_assignment(3, &[("t".to_owned(), vec![0, 2])]);
        assert_eq!(
            bytes,
            [
                0, 3, // version
                0, 0, 0, 1, // one topic
                0, 1, b't', // its name
                0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, // partitions 0 and 2
                0xff, 0xff, 0xff, 0xff, // no user data
            ]
        );
        assert_eq!(
            decode_assignment(&bytes).unwrap(),
            (vec![("t".to_owned(), vec![0, 2])], false)
        );
        assert_eq!(decode_assignment(&[]).unwrap(), (Vec::new(), false));
        assert_eq!(version(&[0, 9]), Some(3));
        assert_eq!(version(&[0xff, 0xff]), None);
    }

    #[test]
    fn a_subscription_gives_its_topics_owned_partitions_and_rack() {
        let subscription = ConsumerProtocolSubscription::default()
            .with_topics(vec![StrBytes::from_static_str("t")])
            .with_owned_partitions(vec![
                kafka_protocol::messages::consumer_protocol_subscription::TopicPartition::default()
                    .with_topic(TopicName(StrBytes::from_static_str("t")))
                    .with_partitions(vec![1]),
            ])
            .with_rack_id(Some(StrBytes::from_static_str("r1")));
        let mut bytes = BytesMut::new();
        bytes.extend_from_slice(&3i16.to_be_bytes());
        subscription.encode(&mut bytes, 3).unwrap();
        assert_eq!(
            decode_subscription(&bytes).unwrap(),
            Subscription {
                topics: vec!["t".to_owned()],
                owned: vec![("t".to_owned(), vec![1])],
                rack_id: Some("r1".to_owned()),
            }
        );
        assert!(decode_subscription(&[0, 1, 0]).is_err());
    }
}
