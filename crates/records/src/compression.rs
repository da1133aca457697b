//! The compression codecs of Kafka's record formats and their stream framings.
//!
//! | id | codec  | framing on the wire and on disk                                              |
//! |----|--------|------------------------------------------------------------------------------|
//! | 0  | none   | —                                                                            |
//! | 1  | gzip   | RFC 1952 gzip stream                                                         |
//! | 2  | snappy | xerial "snappy-java" stream (16-byte header, then `i32` length + raw block) as Kafka's Java client writes; raw snappy blocks, as some other clients send, are also read |
//! | 3  | lz4    | LZ4 frame format (64 KiB independent blocks, no checksums), as Kafka writes  |
//! | 4  | zstd   | zstd frame                                                                   |
//!
//! Decompression is bounded by a caller-given limit so a small corrupt or hostile batch cannot
//! make the process allocate without bound.

use std::fmt;
use std::io::{Read, Write};

use crate::error::RecordsError;

/// A record batch's compression codec (attribute bits 0–2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

/// Upper bound used when a caller has no better idea how large a batch may inflate to.
pub const DEFAULT_MAX_DECOMPRESSED_BYTES: usize = 256 * 1024 * 1024;

/// Start of a xerial snappy-java stream: magic, then version 1 and minimum compatible version 1.
const XERIAL_HEADER: [u8; 16] = [
    0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1,
];
const XERIAL_MAGIC_LEN: usize = 8;
/// snappy-java's default block size, which Kafka's producer uses.
const XERIAL_BLOCK_BYTES: usize = 32 * 1024;

impl Compression {
    /// The codec for attribute bits 0–2, or an error naming the unknown id.
    pub fn from_id(id: u8) -> Result<Self, RecordsError> {
        Ok(match id {
            0 => Self::None,
            1 => Self::Gzip,
            2 => Self::Snappy,
            3 => Self::Lz4,
            4 => Self::Zstd,
            other => return Err(RecordsError::UnknownCompression(other)),
        })
    }

    /// The attribute bits for this codec.
    pub fn id(self) -> u8 {
        match self {
            Self::None => 0,
            Self::Gzip => 1,
            Self::Snappy => 2,
            Self::Lz4 => 3,
            Self::Zstd => 4,
        }
    }

    /// Kafka's name for the codec, as used by `compression.type`.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Gzip => "gzip",
            Self::Snappy => "snappy",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
        }
    }

    /// Parses a Kafka codec name (`none`, `gzip`, `snappy`, `lz4`, `zstd`).
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::None, Self::Gzip, Self::Snappy, Self::Lz4, Self::Zstd]
            .into_iter()
            .find(|codec| codec.name() == name)
    }

    /// Compresses `data` into a stream in this codec's Kafka framing.
    pub fn compress(self, data: &[u8]) -> Result<Vec<u8>, RecordsError> {
        let failed = |source: std::io::Error| RecordsError::Compression {
            codec: self,
            source,
        };
        match self {
            Self::None => Ok(data.to_vec()),
            Self::Gzip => {
                let mut encoder = flate2::write::GzEncoder::new(
                    Vec::with_capacity(data.len() / 2),
                    flate2::Compression::default(),
                );
                encoder.write_all(data).map_err(failed)?;
                encoder.finish().map_err(failed)
            }
            Self::Snappy => xerial_snappy_compress(data).map_err(failed),
            Self::Lz4 => {
                let info = lz4_flex::frame::FrameInfo::new()
                    .block_size(lz4_flex::frame::BlockSize::Max64KB)
                    .block_mode(lz4_flex::frame::BlockMode::Independent);
                let mut encoder = lz4_flex::frame::FrameEncoder::with_frame_info(
                    info,
                    Vec::with_capacity(data.len() / 2),
                );
                encoder.write_all(data).map_err(failed)?;
                encoder
                    .finish()
                    .map_err(|error| failed(std::io::Error::other(error)))
            }
            Self::Zstd => {
                zstd::bulk::compress(data, zstd::DEFAULT_COMPRESSION_LEVEL).map_err(failed)
            }
        }
    }

    /// Decompresses a stream in this codec's Kafka framing, refusing to produce more than
    /// `max_bytes` ([`RecordsError::DecompressedTooLarge`]). No size the stream declares is
    /// trusted beyond the limit: output is produced as the stream yields it (a snappy block
    /// takes the size it declares only once that fits within the limit), and decompression
    /// stops as soon as it passes the limit.
    pub fn decompress(self, data: &[u8], max_bytes: usize) -> Result<Vec<u8>, RecordsError> {
        let failed = |source: std::io::Error| {
            if source.get_ref().is_some_and(|inner| inner.is::<TooLarge>()) {
                RecordsError::DecompressedTooLarge {
                    codec: self,
                    limit: max_bytes,
                }
            } else {
                RecordsError::Compression {
                    codec: self,
                    source,
                }
            }
        };
        let out = match self {
            Self::None => Ok(data.to_vec()),
            Self::Gzip => read_bounded(flate2::read::MultiGzDecoder::new(data), max_bytes),
            Self::Snappy => return snappy_decompress(data, max_bytes).map_err(failed),
            Self::Lz4 => read_bounded(lz4_flex::frame::FrameDecoder::new(data), max_bytes),
            Self::Zstd => read_bounded(
                zstd::stream::read::Decoder::new(data).map_err(failed)?,
                max_bytes,
            ),
        }
        .map_err(failed)?;
        Ok(out)
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn read_bounded(reader: impl Read, max_bytes: usize) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let limit = u64::try_from(max_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    reader.take(limit).read_to_end(&mut out)?;
    if out.len() > max_bytes {
        return Err(too_large(max_bytes));
    }
    Ok(out)
}

/// The marker inside the I/O error a bounded decompression fails with.
#[derive(Debug)]
struct TooLarge(usize);

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "decompressed data exceeds the limit of {} bytes", self.0)
    }
}

impl std::error::Error for TooLarge {}

fn too_large(max_bytes: usize) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, TooLarge(max_bytes))
}

fn xerial_snappy_compress(data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(XERIAL_HEADER.len() + data.len() / 2 + 16);
    out.extend_from_slice(&XERIAL_HEADER);
    let mut encoder = snap::raw::Encoder::new();
    for block in data.chunks(XERIAL_BLOCK_BYTES) {
        let compressed = encoder.compress_vec(block).map_err(std::io::Error::other)?;
        let len = i32::try_from(compressed.len()).map_err(std::io::Error::other)?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&compressed);
    }
    Ok(out)
}

fn snappy_decompress(data: &[u8], max_bytes: usize) -> std::io::Result<Vec<u8>> {
    let invalid =
        |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    let mut decoder = snap::raw::Decoder::new();
    let mut inflate_block = |block: &[u8], out: &mut Vec<u8>| -> std::io::Result<()> {
        let block_len = snap::raw::decompress_len(block).map_err(std::io::Error::other)?;
        if out.len() + block_len > max_bytes {
            return Err(too_large(max_bytes));
        }
        let start = out.len();
        out.resize(start + block_len, 0);
        decoder
            .decompress(block, &mut out[start..])
            .map_err(std::io::Error::other)?;
        Ok(())
    };
    let mut out = Vec::new();
    if data.len() < XERIAL_HEADER.len()
        || data[..XERIAL_MAGIC_LEN] != XERIAL_HEADER[..XERIAL_MAGIC_LEN]
    {
        inflate_block(data, &mut out)?;
        return Ok(out);
    }
    let mut rest = &data[XERIAL_HEADER.len()..];
    while !rest.is_empty() {
        let (len_bytes, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| invalid("snappy stream ends inside a block length"))?;
        let len = usize::try_from(i32::from_be_bytes(*len_bytes))
            .map_err(|_| invalid("negative snappy block length"))?;
        if len > tail.len() {
            return Err(invalid("snappy block runs past the end of the stream"));
        }
        let (block, after) = tail.split_at(len);
        inflate_block(block, &mut out)?;
        rest = after;
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    fn sample() -> Vec<u8> {
        (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect()
    }

    #[test]
    fn every_codec_round_trips_large_input() {
        let data = sample();
        for codec in ALL {
            let compressed = codec.compress(&data).unwrap();
            let back = codec.decompress(&compressed, data.len()).unwrap();
            assert_eq!(back, data, "{codec}");
        }
    }

    #[test]
    fn every_codec_round_trips_empty_input() {
        for codec in ALL {
            let compressed = codec.compress(&[]).unwrap();
            assert!(
                codec.decompress(&compressed, 0).unwrap().is_empty(),
                "{codec}"
            );
        }
    }

    #[test]
    fn decompression_refuses_output_past_the_limit() {
        let data = sample();
        for codec in ALL.into_iter().skip(1) {
            let compressed = codec.compress(&data).unwrap();
            assert!(
                matches!(
                    codec.decompress(&compressed, data.len() - 1),
                    Err(RecordsError::DecompressedTooLarge { limit, .. }) if limit == data.len() - 1
                ),
                "{codec}"
            );
        }
    }

    #[test]
    fn bombs_stop_at_the_limit_without_taking_what_they_declare() {
        // 32 MiB of zeros in every codec: from a few KiB (zstd) to 1.5 MiB (xerial snappy).
        let zeros = vec![0u8; 32 << 20];
        for codec in ALL.into_iter().skip(1) {
            let bomb = codec.compress(&zeros).unwrap();
            assert!(
                bomb.len() < zeros.len() / 20,
                "{codec}: {} bytes",
                bomb.len()
            );
            assert!(
                matches!(
                    codec.decompress(&bomb, 1 << 20),
                    Err(RecordsError::DecompressedTooLarge { .. })
                ),
                "{codec}"
            );
        }
        // A raw snappy block declaring 250 MiB in a few bytes is refused before any output.
        let mut declared = Vec::new();
        let mut length = 250u64 << 20;
        while length >= 0x80 {
            declared.push((length as u8) | 0x80);
            length >>= 7;
        }
        declared.push(length as u8);
        declared.extend_from_slice(&[0, 0, 0]);
        assert!(matches!(
            Compression::Snappy.decompress(&declared, 1 << 20),
            Err(RecordsError::DecompressedTooLarge { .. })
        ));
    }

    #[test]
    fn snappy_writes_xerial_framing_and_reads_raw_blocks() {
        let data = sample();
        let framed = Compression::Snappy.compress(&data).unwrap();
        assert_eq!(framed[..16], XERIAL_HEADER);
        let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(
            Compression::Snappy.decompress(&raw, data.len()).unwrap(),
            data
        );
    }

    #[test]
    fn lz4_frame_header_matches_kafka() {
        let framed = Compression::Lz4.compress(b"hello").unwrap();
        // Magic 0x184D2204 (little-endian), FLG = version 01 + block independence, BD = 64 KiB.
        assert_eq!(framed[..6], [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40]);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for codec in ALL.into_iter().skip(1) {
            for garbage in [
                &b""[..],
                b"\x00",
                b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
                &XERIAL_HEADER,
            ] {
                let _ = codec.decompress(garbage, 1024);
            }
        }
        let mut bad_xerial = XERIAL_HEADER.to_vec();
        bad_xerial.extend_from_slice(&100i32.to_be_bytes());
        assert!(Compression::Snappy.decompress(&bad_xerial, 1024).is_err());
    }

    #[test]
    fn names_and_ids_round_trip() {
        for codec in ALL {
            assert_eq!(Compression::from_id(codec.id()).unwrap(), codec);
            assert_eq!(Compression::from_name(codec.name()), Some(codec));
        }
        assert!(Compression::from_id(5).is_err());
    }
}
