//! How a coordinator's records become bytes in its internal topic and back.

use ferrolog_storage::{StorageError, TopicPartition};

/// The record format of one internal topic (`__consumer_offsets`, `__transaction_state`).
pub trait Codec {
    /// A record as the coordinator's state knows it: a key and a value, or a tombstone.
    type Record;
    /// The internal topic.
    const TOPIC: &'static str;
    /// What the records are, in reports of what loading lost: "group", "transaction".
    const WHAT: &'static str;

    /// The record's key and value bytes (`None` for a tombstone).
    fn encode(record: &Self::Record) -> Result<(Vec<u8>, Option<Vec<u8>>), StorageError>;

    /// The record read back at `offset` of `partition`, or `None` for one the coordinator
    /// passes over (another record type, or one that does not read, which is logged here).
    fn decode(
        partition: &TopicPartition,
        offset: i64,
        key: &[u8],
        value: Option<Vec<u8>>,
    ) -> Option<Self::Record>;
}

/// What loading an internal partition meets, in log order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadEvent<R> {
    /// A record; `producer_id` is the transactional producer that wrote it (pending until its
    /// transaction's marker), `None` for a plain one.
    Record { record: R, producer_id: Option<i64> },
    /// A transaction marker: the producer's pending records in the partition are committed or
    /// dropped.
    Marker { producer_id: i64, commit: bool },
}

/// A records error as the storage error an append refuses with.
pub(crate) fn invalid(error: ferrolog_records::RecordsError) -> StorageError {
    StorageError::InvalidRecord {
        batch_index: 0,
        record_index: None,
        reason: error.to_string(),
    }
}
