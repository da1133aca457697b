//! Damage of the kinds disks and interrupted writes leave, planted at random in a `.log`
//! file's bytes for tests of the code that must find it and keep what it did not touch.

use std::ops::Range;

use rand::Rng;

/// Damages `data` at a random place in one of five ways: a flipped bit, a zeroed stretch, a
/// torn write (a stretch missing, the rest of the file after it), a batch's length field
/// overwritten, or a bit of a batch's base offset flipped (which no checksum covers).
/// `batch_starts` are the byte positions where batches start. Returns the bytes the damage
/// touched, in the original positions (the batches overlapping them count as damaged), and
/// the damaged data.
pub fn random_damage(
    rng: &mut impl Rng,
    mut data: Vec<u8>,
    batch_starts: &[u64],
) -> (Range<u64>, Vec<u8>) {
    let at = rng.random_range(0..data.len());
    match rng.random_range(0..5) {
        0 => {
            data[at] ^= 1 << rng.random_range(0..8);
            (at as u64..at as u64 + 1, data)
        }
        1 => {
            let end = (at + rng.random_range(1..400)).min(data.len());
            data[at..end].fill(0);
            (at as u64..end as u64, data)
        }
        2 => {
            let end = (at + rng.random_range(1..200)).min(data.len());
            data.drain(at..end);
            (at as u64..end as u64, data)
        }
        3 => {
            let field = batch_starts[rng.random_range(0..batch_starts.len())] as usize + 8;
            let length: i32 = rng.random();
            data[field..field + 4].copy_from_slice(&length.to_be_bytes());
            (field as u64..field as u64 + 4, data)
        }
        _ => {
            let start = batch_starts[rng.random_range(0..batch_starts.len())] as usize;
            let field = start + rng.random_range(0..8);
            data[field] ^= 1 << rng.random_range(0..8);
            (field as u64..field as u64 + 1, data)
        }
    }
}
