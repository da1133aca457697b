//! Requests that would cost far more than their size: compression bombs in every codec (past a
//! raised `max.message.bytes` too), and absurd array counts.

use std::io::Write;

use bytes::Bytes;
use ferrolog_records::{BatchBuilder, Compression};

use super::common::wire::{connect_from, exchange};
use super::{MESSAGE_TOO_LARGE, produce};

/// A batch of one record holding 8 MiB of zeros, compressed with `codec`.
fn bomb(codec: Compression) -> Bytes {
    let mut builder = BatchBuilder::new(0).compression(codec);
    builder
        .append(0, None, Some(&vec![0u8; 8 << 20]), &[])
        .unwrap();
    Bytes::from(builder.build().unwrap())
}

/// A snappy batch whose records are one raw block declaring 250 MiB in a few bytes.
fn snappy_declaring(bytes: u64) -> Bytes {
    use ferrolog_records::batch::{compute_crc, field};
    let mut batch = BatchBuilder::new(0);
    batch.append(0, None, Some(b"x"), &[]).unwrap();
    let mut batch = batch.build().unwrap();
    batch.truncate(field::RECORDS);
    let mut declared = bytes;
    while declared >= 0x80 {
        batch.push((declared as u8) | 0x80);
        declared >>= 7;
    }
    batch.push(declared as u8);
    batch.extend_from_slice(&[0, 0, 0]);
    let length = (batch.len() - 12) as i32;
    batch[8..12].copy_from_slice(&length.to_be_bytes());
    batch[field::ATTRIBUTES + 1] |= Compression::Snappy.id();
    let crc = compute_crc(&batch);
    batch[field::CRC..field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(batch)
}

/// A zstd batch of one record whose value is `value_bytes` zeros, compressed as a stream: a
/// few kilobytes that inflate to gigabytes.
fn zstd_bomb(value_bytes: u64) -> Bytes {
    use ferrolog_records::batch::{compute_crc, field};
    fn varint(mut value: u64, out: &mut Vec<u8>) {
        while value >= 0x80 {
            out.push((value as u8) | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    }
    let zigzag = |value: i64| ((value << 1) ^ (value >> 63)) as u64;
    // Attributes, timestamp and offset deltas, a null key, then the value's length.
    let mut head = vec![0, 0, 0, 1];
    varint(zigzag(value_bytes as i64), &mut head);
    let length = head.len() as u64 + value_bytes + 1;
    let mut record_start = Vec::new();
    varint(zigzag(length as i64), &mut record_start);
    record_start.extend_from_slice(&head);
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
    encoder.write_all(&record_start).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..value_bytes / zeros.len() as u64 {
        encoder.write_all(&zeros).unwrap();
    }
    // No headers.
    encoder.write_all(&[0]).unwrap();
    let compressed = encoder.finish().unwrap();
    let mut batch = BatchBuilder::new(0);
    batch.append(0, None, Some(b"x"), &[]).unwrap();
    let mut batch = batch.build().unwrap();
    batch.truncate(field::RECORDS);
    batch.extend_from_slice(&compressed);
    let batch_length = (batch.len() - 12) as i32;
    batch[8..12].copy_from_slice(&batch_length.to_be_bytes());
    batch[field::ATTRIBUTES + 1] |= Compression::Zstd.id();
    let crc = compute_crc(&batch);
    batch[field::CRC..field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(batch)
}

/// Three 1 GiB zstd bombs at once to a topic whose `max.message.bytes` a client raised to
/// 2 GiB: refused at the broker's decompression memory, which no topic config lifts.
pub fn bombs_past_a_raised_max_message_bytes(port: u16) {
    let bomb = zstd_bomb(1 << 30);
    assert!(bomb.len() < 100_000, "{} bytes", bomb.len());
    std::thread::scope(|scope| {
        for _ in 0..3 {
            let bomb = bomb.clone();
            scope.spawn(move || {
                let mut stream = connect_from("127.0.0.3", port).unwrap();
                assert_eq!(
                    produce(&mut stream, "raised", vec![(0, bomb)]),
                    [MESSAGE_TOO_LARGE]
                );
            });
        }
    });
}

pub fn compression_bombs(port: u16) {
    let mut bombs: Vec<Bytes> = [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ]
    .into_iter()
    .map(bomb)
    .collect();
    bombs.push(snappy_declaring(250 << 20));
    std::thread::scope(|scope| {
        for thread in 0..8 {
            let bombs = &bombs;
            scope.spawn(move || {
                let mut stream = connect_from("127.0.0.3", port).unwrap();
                for round in 0..6 {
                    let records = bombs[(thread + round) % bombs.len()].clone();
                    assert_eq!(
                        produce(&mut stream, "bombed", vec![(0, records)]),
                        [MESSAGE_TOO_LARGE]
                    );
                }
            });
        }
    });
}

pub fn absurd_counts(port: u16) {
    // Produce v3 declaring two billion topics, and Metadata v1 two billion topic names.
    let mut produce = Vec::new();
    produce.extend_from_slice(&(0i16).to_be_bytes());
    produce.extend_from_slice(&3i16.to_be_bytes());
    produce.extend_from_slice(&1i32.to_be_bytes());
    produce.extend_from_slice(&(-1i16).to_be_bytes());
    produce.extend_from_slice(&(-1i16).to_be_bytes());
    produce.extend_from_slice(&1i16.to_be_bytes());
    produce.extend_from_slice(&1000i32.to_be_bytes());
    produce.extend_from_slice(&2_000_000_000i32.to_be_bytes());
    let mut metadata = Vec::new();
    metadata.extend_from_slice(&3i16.to_be_bytes());
    metadata.extend_from_slice(&1i16.to_be_bytes());
    metadata.extend_from_slice(&1i32.to_be_bytes());
    metadata.extend_from_slice(&(-1i16).to_be_bytes());
    metadata.extend_from_slice(&2_000_000_000i32.to_be_bytes());
    // A 60 MiB Produce naming 7.8 million partitions (null records, 8 bytes each): it decodes
    // and is answered at many times its size, so it is refused for the memory it would take.
    let partitions = 7_800_000usize;
    let mut many = Vec::with_capacity(16 + partitions * 8);
    many.extend_from_slice(&(0i16).to_be_bytes());
    many.extend_from_slice(&3i16.to_be_bytes());
    many.extend_from_slice(&1i32.to_be_bytes());
    many.extend_from_slice(&(-1i16).to_be_bytes());
    many.extend_from_slice(&(-1i16).to_be_bytes());
    many.extend_from_slice(&1i16.to_be_bytes());
    many.extend_from_slice(&1000i32.to_be_bytes());
    many.extend_from_slice(&1i32.to_be_bytes());
    many.extend_from_slice(&1i16.to_be_bytes());
    many.push(b't');
    many.extend_from_slice(&(partitions as i32).to_be_bytes());
    for index in 0..partitions {
        many.extend_from_slice(&(index as i32).to_be_bytes());
        many.extend_from_slice(&(-1i32).to_be_bytes());
    }
    for body in [produce, metadata, many] {
        for _ in 0..4 {
            let mut stream = connect_from("127.0.0.3", port).unwrap();
            let mut framed = (body.len() as i32).to_be_bytes().to_vec();
            framed.extend_from_slice(&body);
            assert!(
                exchange(&mut stream, &framed).is_none(),
                "the broker closes the connection rather than decode it"
            );
        }
    }
}
