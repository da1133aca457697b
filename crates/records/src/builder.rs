//! Builds v2 record batches byte-for-byte as Kafka's `MemoryRecordsBuilder` does for the same
//! inputs: `baseTimestamp` is the first record's timestamp (or the delete horizon, when one is
//! set), `maxTimestamp` the largest record timestamp (or the LogAppendTime), record attributes 0,
//! and timestamp and offset deltas taken from the batch's base. Compressed batches hold the
//! same records in one stream of the chosen codec; the compressed bytes themselves depend on
//! the compressor, so only their decompressed content is comparable with Kafka's.

use crate::batch::{
    Attributes, BATCH_HEADER_LEN, LOG_OVERHEAD, MAGIC_V2, NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP, TimestampType, compute_crc,
    field,
};
use crate::compression::Compression;
use crate::error::RecordsError;
use crate::varint::{varint_len, varlong_len, write_varint, write_varlong};

/// One header to write: a UTF-8 key and an optional value.
pub type HeaderRef<'h> = (&'h str, Option<&'h [u8]>);

/// Accumulates records, then writes one batch.
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    base_offset: i64,
    compression: Compression,
    timestamp_type: TimestampType,
    log_append_time: i64,
    transactional: bool,
    control: bool,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    partition_leader_epoch: i32,
    delete_horizon_ms: Option<i64>,
    last_offset_delta_override: Option<i32>,
    records: Vec<u8>,
    count: i32,
    base_timestamp: Option<i64>,
    max_timestamp: i64,
    last_offset: Option<i64>,
}

impl BatchBuilder {
    /// A builder for a batch whose first offset is `base_offset`, uncompressed, CreateTime, no
    /// producer, leader epoch −1 (as Kafka's producer writes it).
    pub fn new(base_offset: i64) -> Self {
        Self {
            base_offset,
            compression: Compression::None,
            timestamp_type: TimestampType::CreateTime,
            log_append_time: NO_TIMESTAMP,
            transactional: false,
            control: false,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            delete_horizon_ms: None,
            last_offset_delta_override: None,
            records: Vec::new(),
            count: 0,
            base_timestamp: None,
            max_timestamp: NO_TIMESTAMP,
            last_offset: None,
        }
    }

    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }
    /// Marks the batch LogAppendTime with the broker's append time as `maxTimestamp`.
    pub fn log_append_time(mut self, append_time_ms: i64) -> Self {
        self.timestamp_type = TimestampType::LogAppendTime;
        self.log_append_time = append_time_ms;
        self
    }
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }
    pub fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }
    pub fn control(mut self, control: bool) -> Self {
        self.control = control;
        self
    }
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }
    /// Writes `horizon_ms` as `baseTimestamp` and sets attribute bit 6 (KIP-534); record
    /// timestamp deltas are then taken from the horizon. Must be set before the first record.
    pub fn delete_horizon_ms(mut self, horizon_ms: i64) -> Self {
        self.delete_horizon_ms = Some(horizon_ms);
        self.base_timestamp = Some(horizon_ms);
        self
    }
    /// Keeps a `lastOffsetDelta` larger than the last record's, as compaction does so a batch
    /// keeps covering the offsets it covered before its last records were removed.
    pub fn last_offset_delta(mut self, delta: i32) -> Self {
        self.last_offset_delta_override = Some(delta);
        self
    }

    /// Stamps a batch that will hold no records with `timestamp` as both its base and max
    /// timestamp, as Kafka writes the empty batches compaction keeps for producer state.
    pub fn empty_batch_timestamp(mut self, timestamp: i64) -> Self {
        self.base_timestamp = Some(timestamp);
        self.max_timestamp = timestamp;
        self
    }

    /// Records appended so far.
    pub fn count(&self) -> i32 {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// The uncompressed size the batch would have now.
    pub fn estimated_size(&self) -> usize {
        BATCH_HEADER_LEN + self.records.len()
    }

    /// Appends a record at the next offset after the previous one (or at the base offset).
    pub fn append(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[HeaderRef<'_>],
    ) -> Result<(), RecordsError> {
        let offset = self.last_offset.map_or(self.base_offset, |last| last + 1);
        self.append_with_offset(offset, timestamp, key, value, headers)
    }

    /// Appends a record at `offset`, which must be above the previous record's and within
    /// `i32::MAX` of the base offset.
    pub fn append_with_offset(
        &mut self,
        offset: i64,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[HeaderRef<'_>],
    ) -> Result<(), RecordsError> {
        if self.last_offset.is_some_and(|last| offset <= last) || offset < self.base_offset {
            return Err(RecordsError::Inconsistent(format!(
                "offset {offset} does not follow {:?} in a batch based at {}",
                self.last_offset, self.base_offset
            )));
        }
        let offset_delta = i32::try_from(offset - self.base_offset).map_err(|_| {
            RecordsError::Inconsistent(format!(
                "offset {offset} is too far from base offset {}",
                self.base_offset
            ))
        })?;
        let base_timestamp = *self.base_timestamp.get_or_insert(timestamp);
        let timestamp_delta = timestamp.wrapping_sub(base_timestamp);

        let len_i32 = |len: usize| {
            i32::try_from(len).map_err(|_| RecordsError::InvalidLength {
                what: "record field",
                value: len as i64,
            })
        };
        let nullable_len = |bytes: Option<&[u8]>| -> Result<(i32, usize), RecordsError> {
            match bytes {
                None => Ok((-1, 0)),
                Some(bytes) => Ok((len_i32(bytes.len())?, bytes.len())),
            }
        };
        let (key_len, key_bytes) = nullable_len(key)?;
        let (value_len, value_bytes) = nullable_len(value)?;
        let header_count = len_i32(headers.len())?;
        let mut body_len = 1
            + varlong_len(timestamp_delta)
            + varint_len(offset_delta)
            + varint_len(key_len)
            + key_bytes
            + varint_len(value_len)
            + value_bytes
            + varint_len(header_count);
        for (header_key, header_value) in headers {
            let (hv_len, hv_bytes) = nullable_len(*header_value)?;
            body_len += varint_len(len_i32(header_key.len())?) + header_key.len();
            body_len += varint_len(hv_len) + hv_bytes;
        }

        let out = &mut self.records;
        out.reserve(body_len + 5);
        write_varint(out, len_i32(body_len)?);
        out.push(0);
        write_varlong(out, timestamp_delta);
        write_varint(out, offset_delta);
        write_varint(out, key_len);
        out.extend_from_slice(key.unwrap_or_default());
        write_varint(out, value_len);
        out.extend_from_slice(value.unwrap_or_default());
        write_varint(out, header_count);
        for (header_key, header_value) in headers {
            write_varint(out, header_key.len() as i32);
            out.extend_from_slice(header_key.as_bytes());
            match header_value {
                None => write_varint(out, -1),
                Some(bytes) => {
                    write_varint(out, bytes.len() as i32);
                    out.extend_from_slice(bytes);
                }
            }
        }

        self.count += 1;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        self.last_offset = Some(offset);
        Ok(())
    }

    /// Appends a copy of `record` (timestamp, key, value and headers) at the next offset, as a
    /// broker does when it rebuilds a producer's batch in another codec.
    pub fn append_record(&mut self, record: &crate::Record<'_>) -> Result<(), RecordsError> {
        let offset = self.last_offset.map_or(self.base_offset, |last| last + 1);
        self.append_record_at(offset, record)
    }

    /// Appends a copy of `record` at `offset`, as compaction does when it keeps some records of
    /// a batch at their original offsets.
    pub fn append_record_at(
        &mut self,
        offset: i64,
        record: &crate::Record<'_>,
    ) -> Result<(), RecordsError> {
        let mut headers = Vec::with_capacity(record.header_count());
        for header in record.headers() {
            // Header keys were checked to be UTF-8 when the record was parsed.
            let key = std::str::from_utf8(header.key).map_err(|_| RecordsError::InvalidRecord {
                index: self.count as usize,
                reason: "header key is not UTF-8".into(),
            })?;
            headers.push((key, header.value));
        }
        self.append_with_offset(offset, record.timestamp, record.key, record.value, &headers)
    }

    /// Writes the batch: header, then the records (compressed in one stream if a codec is set).
    pub fn build(&self) -> Result<Vec<u8>, RecordsError> {
        let payload = match self.compression {
            Compression::None => None,
            codec => Some(codec.compress(&self.records)?),
        };
        let payload = payload.as_deref().unwrap_or(&self.records);
        let total = BATCH_HEADER_LEN + payload.len();
        let batch_length =
            i32::try_from(total - LOG_OVERHEAD).map_err(|_| RecordsError::InvalidLength {
                what: "batch length",
                value: total as i64,
            })?;
        let last_offset_delta = self.last_offset_delta_override.unwrap_or_else(|| {
            self.last_offset
                .map_or(0, |last| (last - self.base_offset) as i32)
        });
        let max_timestamp = match self.timestamp_type {
            TimestampType::LogAppendTime => self.log_append_time,
            TimestampType::CreateTime => self.max_timestamp,
        };
        let attributes = Attributes::new(
            self.compression,
            self.timestamp_type,
            self.transactional,
            self.control,
            self.delete_horizon_ms.is_some(),
        );

        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&self.base_offset.to_be_bytes());
        out.extend_from_slice(&batch_length.to_be_bytes());
        out.extend_from_slice(&self.partition_leader_epoch.to_be_bytes());
        out.push(MAGIC_V2);
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&attributes.0.to_be_bytes());
        out.extend_from_slice(&last_offset_delta.to_be_bytes());
        out.extend_from_slice(&self.base_timestamp.unwrap_or(NO_TIMESTAMP).to_be_bytes());
        out.extend_from_slice(&max_timestamp.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.to_be_bytes());
        out.extend_from_slice(&self.base_sequence.to_be_bytes());
        out.extend_from_slice(&self.count.to_be_bytes());
        debug_assert_eq!(out.len(), BATCH_HEADER_LEN);
        out.extend_from_slice(payload);
        let crc = compute_crc(&out);
        out[field::CRC..field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
        Ok(out)
    }
}
