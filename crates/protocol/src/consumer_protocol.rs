//! The consumer protocol embedded in classic group requests (protocol type `consumer`): a
//! member's subscription in its JoinGroup metadata and its assignment in SyncGroup, each an
//! `i16` version followed by the message. Kafka reads versions above 3 as 3 (the newest it
//! knows) and writes an assignment in the version of the member's subscription, capped at 3;
//! versions 0 to 3 of the assignment share one layout.

use bytes::BytesMut;
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition as AssignedTopic;
use kafka_protocol::messages::{ConsumerProtocolAssignment, TopicName};
use kafka_protocol::protocol::{Encodable, StrBytes};

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
    let mut reader = Reader(&metadata[2..]);
    let count = reader.count(2)?;
    let mut topics = Vec::with_capacity(count);
    for _ in 0..count {
        topics.push(reader.string()?);
    }
    reader.nullable_bytes()?;
    let mut subscription = Subscription {
        topics,
        ..Subscription::default()
    };
    if version >= 1 {
        subscription.owned = reader.topic_partitions()?;
    }
    if version >= 2 {
        reader.i32()?;
    }
    if version >= 3 {
        subscription.rack_id = reader.nullable_string()?.filter(|rack| !rack.is_empty());
    }
    Ok(subscription)
}

/// The partitions an assignment gives, by topic name, and whether it carries user data (which
/// only a custom client-side assignor writes); an empty assignment gives nothing.
pub fn decode_assignment(bytes: &[u8]) -> Result<(NamedPartitions, bool), String> {
    if bytes.is_empty() {
        return Ok((Vec::new(), false));
    }
    version(bytes).ok_or("no version at the head of the assignment")?;
    let mut reader = Reader(&bytes[2..]);
    let partitions = reader.topic_partitions()?;
    let user_data = reader
        .nullable_bytes()?
        .is_some_and(|data| !data.is_empty());
    Ok((partitions, user_data))
}

/// Reads the embedded messages (classic encodings: `i16` string lengths, `i32` array and bytes
/// lengths), every count checked against the bytes left before anything is reserved for it:
/// the bytes come from a client.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], String> {
        if count > self.0.len() {
            return Err(format!(
                "the embedded consumer protocol needs {count} bytes, {} are left",
                self.0.len()
            ));
        }
        let (taken, rest) = self.0.split_at(count);
        self.0 = rest;
        Ok(taken)
    }

    fn i16(&mut self) -> Result<i16, String> {
        let bytes: [u8; 2] = self.take(2)?.try_into().map_err(|_| "short i16")?;
        Ok(i16::from_be_bytes(bytes))
    }

    fn i32(&mut self) -> Result<i32, String> {
        let bytes: [u8; 4] = self.take(4)?.try_into().map_err(|_| "short i32")?;
        Ok(i32::from_be_bytes(bytes))
    }

    /// An array's count, each element at least `least` bytes; a negative count is refused.
    fn count(&mut self, least: usize) -> Result<usize, String> {
        let count = self.i32()?;
        let count = usize::try_from(count).map_err(|_| format!("an array of {count} elements"))?;
        if count.saturating_mul(least) > self.0.len() {
            return Err(format!(
                "an array of {count} elements in {} bytes",
                self.0.len()
            ));
        }
        Ok(count)
    }

    fn nullable_string(&mut self) -> Result<Option<String>, String> {
        let length = self.i16()?;
        if length < 0 {
            return Ok(None);
        }
        let bytes = self.take(length as usize)?;
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| "a string is not UTF-8".to_owned())
    }

    fn string(&mut self) -> Result<String, String> {
        self.nullable_string()?
            .ok_or_else(|| "a null string where one is required".to_owned())
    }

    fn nullable_bytes(&mut self) -> Result<Option<&'a [u8]>, String> {
        let length = self.i32()?;
        if length < 0 {
            return Ok(None);
        }
        self.take(length as usize).map(Some)
    }

    fn topic_partitions(&mut self) -> Result<NamedPartitions, String> {
        let count = self.count(6)?;
        let mut topics = Vec::with_capacity(count);
        for _ in 0..count {
            let topic = self.string()?;
            let partitions = self.count(4)?;
            let mut indexes = Vec::with_capacity(partitions);
            for _ in 0..partitions {
                indexes.push(self.i32()?);
            }
            topics.push((topic, indexes));
        }
        Ok(topics)
    }
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
        use kafka_protocol::messages::ConsumerProtocolSubscription;
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

    #[test]
    fn a_count_beyond_the_bytes_is_refused_before_anything_is_reserved() {
        // Version 0, then 2^31 - 1 topics in no bytes at all.
        let error = decode_subscription(&[0, 0, 0x7f, 0xff, 0xff, 0xff]).unwrap_err();
        assert!(error.contains("2147483647 elements"), "{error}");
        assert!(decode_assignment(&[0, 0, 0x7f, 0xff, 0xff, 0xff]).is_err());
        assert!(decode_assignment(&[0, 0, 0xff, 0xff, 0xff, 0xff]).is_err());
    }
}
