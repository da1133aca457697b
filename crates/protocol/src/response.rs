//! Responses as they go on the wire: protocol bytes encoded by `kafka-protocol`, with the record
//! bytes of a Fetch left in the segment files and spliced in only when the frame is written.
//!
//! The codec encodes a partition's `records` with a single `put_slice`. A fetch hands it a
//! *placeholder* — a slice of a reserved region of address space that is never read — and
//! [`SplicingBuf`] recognises that slice by its address: instead of copying it, it closes the
//! current chunk of encoded bytes and records the file region that belongs there. The codec
//! still writes every length prefix itself, so nothing of the wire format is hand-written.

#![allow(unsafe_code)] // `BufMut` is an unsafe trait; SplicingBuf forwards it to a BytesMut. The
// placeholder region is an anonymous mapping.

use std::collections::VecDeque;

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes, BytesMut};
use ferrolog_storage::log::FileSlice;
use kafka_protocol::protocol::buf::ByteBufMut;

/// The most record bytes one partition of a response can carry (the protocol's `i32` length).
const PLACEHOLDER_BYTES: usize = i32::MAX as usize;

/// The region placeholders are cut from: a read-only anonymous mapping as long as any record
/// bytes can be, made once. It is address space only (never read, never written, and, being
/// read-only, not counted against memory even under strict overcommit), so a fetch of any
/// size is spliced and none is copied into memory. `None` if the mapping could not be made.
fn placeholder_region() -> Option<&'static [u8]> {
    static REGION: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let address = *REGION.get_or_init(|| {
        // SAFETY: a fresh private anonymous read-only mapping; no existing memory is touched.
        let address = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PLACEHOLDER_BYTES,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        (address != libc::MAP_FAILED).then_some(address as usize)
    });
    let address = address?;
    // SAFETY: the mapping is PLACEHOLDER_BYTES long, readable (as zeros), and never unmapped.
    Some(unsafe { std::slice::from_raw_parts(address as *const u8, PLACEHOLDER_BYTES) })
}

/// A byte range of one segment's `.log`, sent from the file when the response is written.
#[derive(Debug, Clone)]
pub struct FileRegion {
    pub slice: FileSlice,
    /// The slice's length, as the codec counts it.
    pub length: usize,
}

impl FileRegion {
    /// A region for a non-empty slice; `None` for an empty one, or one longer than any
    /// response can carry.
    pub fn of(slice: FileSlice) -> Option<Self> {
        let length = usize::try_from(slice.len())
            .ok()
            .filter(|length| (1..=PLACEHOLDER_BYTES).contains(length))?;
        Some(Self { slice, length })
    }
}

impl FileRegion {
    /// What the codec is given in place of this region's bytes, or `None` when no placeholder
    /// region could be mapped.
    pub fn placeholder(&self) -> Option<Bytes> {
        let region = placeholder_region()?;
        region.get(..self.length).map(Bytes::from_static)
    }
}

/// One piece of a response frame.
#[derive(Debug)]
pub enum Chunk {
    Encoded(Bytes),
    File(FileRegion),
}

/// A whole response frame, size prefix included, in the order its chunks go on the wire.
#[derive(Debug)]
pub struct ResponseFrame {
    pub chunks: Vec<Chunk>,
}

impl ResponseFrame {
    /// Bytes of the frame held in memory: its encoded chunks. File regions are not counted:
    /// they go to the socket from the files, a piece at a time.
    pub fn encoded_len(&self) -> usize {
        self.chunks
            .iter()
            .map(|chunk| match chunk {
                Chunk::Encoded(bytes) => bytes.len(),
                Chunk::File(_) => 0,
            })
            .sum()
    }
}

/// A [`ByteBufMut`] that turns placeholders into [`Chunk::File`]s. The regions must be given in
/// the order the codec encodes them (topics, then partitions, as the response lists them).
#[derive(Debug)]
pub struct SplicingBuf {
    current: BytesMut,
    /// Finished pieces: encoded bytes, each followed by the region spliced in after them.
    spliced: Vec<(BytesMut, FileRegion)>,
    regions: VecDeque<FileRegion>,
    /// A placeholder arrived that did not match the next region: the frame is unusable.
    mismatch: bool,
}

impl SplicingBuf {
    /// Starts a frame with room for its 4-byte size prefix.
    pub fn new(regions: Vec<FileRegion>) -> Self {
        let mut current = BytesMut::with_capacity(256);
        current.put_i32(0);
        Self {
            current,
            spliced: Vec::new(),
            regions: regions.into(),
            mismatch: false,
        }
    }

    /// Closes the frame, filling in its size prefix. Fails when a region was not spliced in
    /// exactly once.
    pub fn finish(mut self) -> Result<ResponseFrame, String> {
        if self.mismatch || !self.regions.is_empty() {
            return Err(format!(
                "{} file regions were not placed in the encoded response",
                self.regions.len() + usize::from(self.mismatch)
            ));
        }
        // The first piece starts with the prefix's 4 bytes, which the size does not count.
        let body = self.current.len()
            + self
                .spliced
                .iter()
                .map(|(encoded, region)| encoded.len() + region.length)
                .sum::<usize>()
            - 4;
        let size = i32::try_from(body).map_err(|_| format!("a response of {body} bytes"))?;
        let first = match self.spliced.first_mut() {
            Some((encoded, _)) => encoded,
            None => &mut self.current,
        };
        first[..4].copy_from_slice(&size.to_be_bytes());
        let mut chunks = Vec::with_capacity(2 * self.spliced.len() + 1);
        for (encoded, region) in self.spliced {
            chunks.push(Chunk::Encoded(encoded.freeze()));
            chunks.push(Chunk::File(region));
        }
        if !self.current.is_empty() {
            chunks.push(Chunk::Encoded(self.current.freeze()));
        }
        Ok(ResponseFrame { chunks })
    }

    fn is_placeholder(slice: &[u8]) -> bool {
        !slice.is_empty()
            && placeholder_region()
                .is_some_and(|region| std::ptr::eq(slice.as_ptr(), region.as_ptr()))
    }
}

// SAFETY: every method forwards to the BytesMut in `current`, which upholds BufMut's contract;
// `put_slice` either forwards too or appends nothing to `current`.
unsafe impl BufMut for SplicingBuf {
    fn remaining_mut(&self) -> usize {
        self.current.remaining_mut()
    }

    unsafe fn advance_mut(&mut self, count: usize) {
        // SAFETY: the caller guarantees `count` bytes of `chunk_mut()` (current's) are written.
        unsafe { self.current.advance_mut(count) }
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        self.current.chunk_mut()
    }

    fn put_slice(&mut self, slice: &[u8]) {
        if !Self::is_placeholder(slice) {
            self.current.put_slice(slice);
            return;
        }
        match self.regions.pop_front() {
            Some(region) if region.length == slice.len() => {
                self.spliced.push((self.current.split(), region));
            }
            _ => self.mismatch = true,
        }
    }
}

/// Offsets and seeks stay within the chunk being encoded; `kafka-protocol`'s message codecs do
/// not use gaps, which are the only users of these.
impl ByteBufMut for SplicingBuf {
    fn offset(&self) -> usize {
        self.current.offset()
    }
    fn seek(&mut self, offset: usize) {
        self.current.seek(offset);
    }
    fn range(&mut self, r: std::ops::Range<usize>) -> &mut [u8] {
        self.current.range(r)
    }
}
