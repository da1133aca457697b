//! The records of the internal `__transaction_state` topic, where the transaction coordinator
//! keeps each transactional id's state, with Kafka's exact key and value schemas, so a Kafka
//! data dir's transactions load here and ours load in Kafka.
//!
//! Key: `record type i16` (0), `transactional id` (string, `i16` length).
//!
//! Value: `version i16`, then
//!
//! | field                          | type   | v0 | v1 (flexible)          |
//! |--------------------------------|--------|----|------------------------|
//! | producer id                    | i64    | ✓  | ✓                      |
//! | previous producer id           | i64    |    | tag 0, default −1      |
//! | next producer id               | i64    |    | tag 1, default −1      |
//! | producer epoch                 | i16    | ✓  | ✓                      |
//! | next producer epoch            | i16    |    | tag 3, default −1      |
//! | transaction timeout ms         | i32    | ✓  | ✓                      |
//! | status                         | i8     | ✓  | ✓ (see [`TxnStatus`])  |
//! | partitions                     | nullable `[{topic string, partition ids [i32]}]` | ✓ | ✓ (compact) |
//! | last update timestamp ms       | i64    | ✓  | ✓                      |
//! | start timestamp ms             | i64    | ✓  | ✓                      |
//! | client transaction version     | i16    |    | tag 2, default 0       |
//!
//! Tagged fields are written only when they differ from their default, in tag order. A record
//! with a null value is a tombstone: the transactional id is gone. Kafka writes version 1 on a
//! cluster at `transaction.version` 1 or 2 and version 0 on one at 0.

use crate::coordinator_codec::{Reader, put_string, put_unsigned_varint};
use crate::error::RecordsError;

/// A transactional id's state, with the ids Kafka writes (`TransactionState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnStatus {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    /// Only ever a pending state: expiration removes the id (a tombstone is written).
    Dead,
    /// Only ever a pending state: an InitProducerId fencing an ongoing transaction.
    PrepareEpochFence,
}

impl TxnStatus {
    /// Every state, by id.
    pub const ALL: [Self; 8] = [
        Self::Empty,
        Self::Ongoing,
        Self::PrepareCommit,
        Self::PrepareAbort,
        Self::CompleteCommit,
        Self::CompleteAbort,
        Self::Dead,
        Self::PrepareEpochFence,
    ];

    /// The id written in the value's status field.
    pub fn id(self) -> i8 {
        match self {
            Self::Empty => 0,
            Self::Ongoing => 1,
            Self::PrepareCommit => 2,
            Self::PrepareAbort => 3,
            Self::CompleteCommit => 4,
            Self::CompleteAbort => 5,
            Self::Dead => 6,
            Self::PrepareEpochFence => 7,
        }
    }

    /// The state with status id `id`.
    pub fn from_id(id: i8) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.id() == id)
    }

    /// The name DescribeTransactions and ListTransactions answer with.
    pub fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::Ongoing => "Ongoing",
            Self::PrepareCommit => "PrepareCommit",
            Self::PrepareAbort => "PrepareAbort",
            Self::CompleteCommit => "CompleteCommit",
            Self::CompleteAbort => "CompleteAbort",
            Self::Dead => "Dead",
            Self::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// Whether a transaction may move from `self` to `next` (Kafka's
    /// `TransactionState.VALID_PREVIOUS_STATES`). PrepareAbort from Empty or a Complete state is
    /// an abort under transactions v2 only, which the coordinator checks besides.
    pub fn may_become(self, next: Self) -> bool {
        use TxnStatus::*;
        let previous: &[Self] = match next {
            Empty => &[Empty, CompleteCommit, CompleteAbort],
            Ongoing => &[Ongoing, Empty, CompleteCommit, CompleteAbort],
            PrepareCommit => &[Ongoing],
            PrepareAbort => &[
                Ongoing,
                PrepareEpochFence,
                Empty,
                CompleteCommit,
                CompleteAbort,
            ],
            CompleteCommit => &[PrepareCommit],
            CompleteAbort => &[PrepareAbort],
            Dead => &[Empty, CompleteAbort, CompleteCommit],
            PrepareEpochFence => &[Ongoing],
        };
        previous.contains(&self)
    }

    /// Whether a transactional id in this state may expire (`transactional.id.expiration.ms`).
    pub fn may_expire(self) -> bool {
        matches!(
            self,
            Self::Empty | Self::CompleteCommit | Self::CompleteAbort
        )
    }
}

/// The key of a `__transaction_state` record: the transactional id.
pub fn encode_key(transactional_id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + transactional_id.len());
    out.extend_from_slice(&0i16.to_be_bytes());
    put_string(&mut out, transactional_id);
    out
}

/// The transactional id a key names; an error for another record type or damaged bytes.
pub fn decode_key(bytes: &[u8]) -> Result<String, RecordsError> {
    let mut reader = Reader::new(bytes, "__transaction_state key");
    let record_type = reader.i16()?;
    if record_type != 0 {
        return Err(RecordsError::Inconsistent(format!(
            "unknown __transaction_state key record type {record_type}"
        )));
    }
    reader.string()
}

/// A topic's partitions in a transaction.
pub type TxnPartitions = Vec<(String, Vec<i32>)>;

/// A transactional id's state as the coordinator keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnLogValue {
    pub producer_id: i64,
    /// The producer id before the last transition (version 1; −1 for none).
    pub previous_producer_id: i64,
    /// The producer id the transaction moves to once it completes (version 1; −1 for none).
    pub next_producer_id: i64,
    pub producer_epoch: i16,
    /// Never set by Kafka (version 1; −1).
    pub next_producer_epoch: i16,
    pub timeout_ms: i32,
    pub status: TxnStatus,
    /// The partitions in the transaction, by topic; `None` (null) in the Empty state.
    pub partitions: Option<TxnPartitions>,
    pub last_update_ms: i64,
    /// When the transaction began; −1 when none has.
    pub start_ms: i64,
    /// The client's transaction version (version 1; 0 by default).
    pub client_transaction_version: i16,
}

impl TxnLogValue {
    /// The value at `version` (0 or 1). Version 0 cannot carry a client transaction version
    /// other than 0 (Kafka refuses it too).
    pub fn encode(&self, version: i16) -> Result<Vec<u8>, RecordsError> {
        let flexible = match version {
            0 if self.client_transaction_version != 0 => {
                return Err(RecordsError::Inconsistent(format!(
                    "a __transaction_state value of version 0 cannot hold client transaction version {}",
                    self.client_transaction_version
                )));
            }
            0 => false,
            1 => true,
            other => return Err(unknown_version(other)),
        };
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(&version.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.to_be_bytes());
        out.extend_from_slice(&self.timeout_ms.to_be_bytes());
        out.push(self.status.id() as u8);
        let put_length =
            |out: &mut Vec<u8>, length: Option<usize>, wide: bool| match (flexible, length) {
                (true, None) => out.push(0),
                (true, Some(length)) => put_unsigned_varint(out, length as u32 + 1),
                (false, None) if wide => out.extend_from_slice(&(-1i32).to_be_bytes()),
                (false, None) => out.extend_from_slice(&(-1i16).to_be_bytes()),
                (false, Some(length)) if wide => {
                    out.extend_from_slice(&(length as i32).to_be_bytes())
                }
                (false, Some(length)) => out.extend_from_slice(&(length as i16).to_be_bytes()),
            };
        put_length(&mut out, self.partitions.as_ref().map(Vec::len), true);
        for (topic, partitions) in self.partitions.iter().flatten() {
            put_length(&mut out, Some(topic.len()), false);
            out.extend_from_slice(topic.as_bytes());
            put_length(&mut out, Some(partitions.len()), true);
            for partition in partitions {
                out.extend_from_slice(&partition.to_be_bytes());
            }
            if flexible {
                out.push(0); // the element's tagged fields: none
            }
        }
        out.extend_from_slice(&self.last_update_ms.to_be_bytes());
        out.extend_from_slice(&self.start_ms.to_be_bytes());
        if flexible {
            let mut tagged: Vec<(u32, Vec<u8>)> = Vec::new();
            if self.previous_producer_id != -1 {
                tagged.push((0, self.previous_producer_id.to_be_bytes().to_vec()));
            }
            if self.next_producer_id != -1 {
                tagged.push((1, self.next_producer_id.to_be_bytes().to_vec()));
            }
            if self.client_transaction_version != 0 {
                tagged.push((2, self.client_transaction_version.to_be_bytes().to_vec()));
            }
            if self.next_producer_epoch != -1 {
                tagged.push((3, self.next_producer_epoch.to_be_bytes().to_vec()));
            }
            put_unsigned_varint(&mut out, tagged.len() as u32);
            for (tag, value) in tagged {
                put_unsigned_varint(&mut out, tag);
                put_unsigned_varint(&mut out, value.len() as u32);
                out.extend_from_slice(&value);
            }
        }
        Ok(out)
    }

    /// Reads a value of version 0 or 1; damage, an unknown version or status, is an error.
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordsError> {
        let mut reader = Reader::new(bytes, "__transaction_state value");
        let version = reader.i16()?;
        reader.flexible = match version {
            0 => false,
            1 => true,
            other => return Err(unknown_version(other)),
        };
        let producer_id = reader.i64()?;
        let producer_epoch = reader.i16()?;
        let timeout_ms = reader.i32()?;
        let status_id = reader.array::<1>()?[0] as i8;
        let status = TxnStatus::from_id(status_id).ok_or_else(|| {
            RecordsError::Inconsistent(format!("unknown transaction status {status_id}"))
        })?;
        let partitions = match reader.length(true)? {
            None => None,
            Some(count) => {
                let mut topics = Vec::with_capacity(count.min(1024));
                for _ in 0..count {
                    let topic = reader.string()?;
                    let ids = reader.array_len()?;
                    let mut partitions = Vec::with_capacity(ids.min(1024));
                    for _ in 0..ids {
                        partitions.push(reader.i32()?);
                    }
                    reader.skip_tagged_fields()?;
                    topics.push((topic, partitions));
                }
                Some(topics)
            }
        };
        let mut value = Self {
            producer_id,
            previous_producer_id: -1,
            next_producer_id: -1,
            producer_epoch,
            next_producer_epoch: -1,
            timeout_ms,
            status,
            partitions,
            last_update_ms: reader.i64()?,
            start_ms: reader.i64()?,
            client_transaction_version: 0,
        };
        if reader.flexible {
            let count = reader.unsigned_varint()?;
            for _ in 0..count {
                let tag = reader.unsigned_varint()?;
                let size = reader.unsigned_varint()? as usize;
                let field = reader.take(size)?;
                let wrong_size = || {
                    RecordsError::Inconsistent(format!(
                        "__transaction_state value: tagged field {tag} of {size} bytes"
                    ))
                };
                match tag {
                    0 | 1 => {
                        let id = i64::from_be_bytes(field.try_into().map_err(|_| wrong_size())?);
                        if tag == 0 {
                            value.previous_producer_id = id;
                        } else {
                            value.next_producer_id = id;
                        }
                    }
                    2 | 3 => {
                        let short = i16::from_be_bytes(field.try_into().map_err(|_| wrong_size())?);
                        if tag == 2 {
                            value.client_transaction_version = short;
                        } else {
                            value.next_producer_epoch = short;
                        }
                    }
                    // A field of a later version: skipped, as Kafka skips unknown tags.
                    _ => {}
                }
            }
        }
        Ok(value)
    }
}

fn unknown_version(version: i16) -> RecordsError {
    RecordsError::Inconsistent(format!(
        "unknown __transaction_state value version {version}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
            .collect()
    }

    fn ongoing() -> TxnLogValue {
        TxnLogValue {
            producer_id: 1000,
            previous_producer_id: -1,
            next_producer_id: -1,
            producer_epoch: 3,
            next_producer_epoch: -1,
            timeout_ms: 60_000,
            status: TxnStatus::Ongoing,
            partitions: Some(vec![("t".to_owned(), vec![0])]),
            last_update_ms: 1_700_000_000_001,
            start_ms: 1_700_000_000_000,
            client_transaction_version: 0,
        }
    }

    #[test]
    fn keys_and_values_are_the_bytes_kafka_4_4_writes() {
        // Produced by Kafka 4.4.0's own TransactionLog (keyToBytes, valueToBytes).
        assert_eq!(encode_key("my-txn"), hex("0000 0006 6d792d74786e"));
        assert_eq!(decode_key(&encode_key("my-txn")).unwrap(), "my-txn");
        let with_tags = TxnLogValue {
            previous_producer_id: 1000,
            client_transaction_version: 2,
            ..ongoing()
        };
        let v1 = hex(
            "0001 00000000000003e8 0003 0000ea60 01 02 02 74 02 00000000 00 \
             0000018bcfe56801 0000018bcfe56800 02 00 08 00000000000003e8 02 02 0002",
        );
        assert_eq!(with_tags.encode(1).unwrap(), v1);
        assert_eq!(TxnLogValue::decode(&v1).unwrap(), with_tags);
        let v0 = hex(
            "0000 00000000000003e8 0003 0000ea60 01 00000001 0001 74 00000001 00000000 \
             0000018bcfe56801 0000018bcfe56800",
        );
        assert_eq!(ongoing().encode(0).unwrap(), v0);
        assert_eq!(TxnLogValue::decode(&v0).unwrap(), ongoing());
        let empty = TxnLogValue {
            producer_epoch: 0,
            status: TxnStatus::Empty,
            partitions: None,
            start_ms: -1,
            ..ongoing()
        };
        let v1_empty =
            hex("0001 00000000000003e8 0000 0000ea60 00 00 0000018bcfe56801 ffffffffffffffff 00");
        assert_eq!(empty.encode(1).unwrap(), v1_empty);
        assert_eq!(TxnLogValue::decode(&v1_empty).unwrap(), empty);
    }

    #[test]
    fn what_kafka_refuses_or_does_not_know_is_an_error() {
        let two = TxnLogValue {
            client_transaction_version: 2,
            ..ongoing()
        };
        assert!(two.encode(0).is_err());
        assert!(ongoing().encode(2).is_err());
        let bytes = ongoing().encode(1).unwrap();
        for cut in 0..bytes.len() {
            assert!(TxnLogValue::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut unknown_status = bytes.clone();
        unknown_status[16] = 9;
        assert!(TxnLogValue::decode(&unknown_status).is_err());
        assert!(decode_key(&hex("0001 0001 61")).is_err());
    }

    #[test]
    fn transitions_follow_kafka_s_table() {
        use TxnStatus::*;
        assert!(Empty.may_become(Ongoing));
        assert!(Ongoing.may_become(PrepareCommit));
        assert!(PrepareCommit.may_become(CompleteCommit));
        assert!(CompleteAbort.may_become(Ongoing));
        assert!(PrepareEpochFence.may_become(PrepareAbort));
        assert!(!Empty.may_become(PrepareCommit));
        assert!(!PrepareCommit.may_become(PrepareAbort));
        assert!(!Ongoing.may_become(Empty));
        assert!(!Ongoing.may_become(Dead));
        let expirable: Vec<TxnStatus> = TxnStatus::ALL
            .into_iter()
            .filter(|status| status.may_expire())
            .collect();
        assert_eq!(expirable, [Empty, CompleteCommit, CompleteAbort]);
        for status in TxnStatus::ALL {
            assert_eq!(TxnStatus::from_id(status.id()), Some(status));
        }
    }
}
