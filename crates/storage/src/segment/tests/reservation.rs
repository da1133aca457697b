//! Disk blocks reserved ahead of a `.log`'s data, and released when the segment seals.

use super::*;

/// Bytes of disk the segment's `.log` occupies.
fn allocated(segment: &Segment) -> u64 {
    segment.log_file().allocated_bytes().unwrap()
}

/// A new segment in a temp dir whose file system reserves blocks, or `None` (the test then has
/// nothing to check).
fn reserving_segment() -> Option<(tempfile::TempDir, Segment)> {
    let dir = tempfile::tempdir().unwrap();
    if !records_file::file_system_reserves_blocks(dir.path()) {
        return None;
    }
    let segment = create(&dir, 0);
    Some((dir, segment))
}

fn block_rounded(bytes: u64) -> u64 {
    bytes.div_ceil(4096) * 4096
}

/// Appends batches of ten 100 kB records from `offset` until the segment holds `bytes`;
/// returns the next offset.
fn fill_to(segment: &Segment, mut offset: i64, bytes: u64) -> i64 {
    let value = "v".repeat(100_000);
    while segment.size() < bytes {
        append(segment, &records_at(offset, NOW, &[value.as_str(); 10]));
        offset += 10;
    }
    offset
}

#[test]
fn a_segment_under_1_mib_reserves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let segment = create(&dir, 0);
    append(&segment, &records_at(0, NOW, &["a", "b"]));
    assert_eq!(allocated(&segment), block_rounded(segment.size()));
}

#[test]
fn appends_reserve_blocks_ahead_and_the_file_length_stays_the_data() {
    let Some((_dir, segment)) = reserving_segment() else {
        return;
    };
    fill_to(&segment, 0, records_file::RESERVE_AFTER_BYTES);
    let size = segment.size();
    // Readers, `ls` and Kafka see only the data; the disk holds the data and the reservation.
    assert_eq!(segment.log_file().file_length().unwrap(), size);
    let reserved = allocated(&segment) - block_rounded(size);
    assert!(reserved >= size - 4096, "{reserved} reserved past {size}");
    // Rolling (or closing) releases the reservation.
    segment.on_becoming_inactive().unwrap();
    assert_eq!(segment.log_file().file_length().unwrap(), size);
    assert_eq!(allocated(&segment), block_rounded(size));
}

#[test]
fn the_reservation_is_bounded_by_the_data_written_and_by_its_cap() {
    let Some((_dir, segment)) = reserving_segment() else {
        return;
    };
    let mut offset = 0;
    let mut most_reserved = 0;
    while segment.size() < 2 * records_file::MAX_RESERVE_AHEAD_BYTES + (4 << 20) {
        offset = fill_to(&segment, offset, segment.size() + 1);
        let size = segment.size();
        let reserved = allocated(&segment) - block_rounded(size);
        assert!(reserved <= size + 4096, "{reserved} reserved past {size}");
        assert!(
            reserved <= records_file::MAX_RESERVE_AHEAD_BYTES + 4096,
            "{reserved} reserved past {size}"
        );
        most_reserved = most_reserved.max(reserved);
    }
    // A segment past the cap reserves the whole cap ahead (less what the last write used).
    assert!(
        most_reserved > records_file::MAX_RESERVE_AHEAD_BYTES - (2 << 20),
        "{most_reserved}"
    );
}

#[test]
fn truncation_releases_the_reservation_and_appends_reserve_again() {
    let Some((_dir, segment)) = reserving_segment() else {
        return;
    };
    let next = fill_to(&segment, 0, records_file::RESERVE_AFTER_BYTES);
    let kept_size = segment.size();
    fill_to(&segment, next, kept_size + 1);
    segment.truncate_to(Offset::new(next), NOW).unwrap();
    assert_eq!(segment.log_file().file_length().unwrap(), kept_size);
    assert_eq!(allocated(&segment), block_rounded(kept_size));
    fill_to(&segment, next, kept_size + 1);
    assert!(allocated(&segment) > block_rounded(segment.size()));
}

#[test]
fn blocks_reserved_before_an_unclean_stop_are_released_after_recovery() {
    let Some((dir, segment)) = reserving_segment() else {
        return;
    };
    fill_to(&segment, 0, records_file::RESERVE_AFTER_BYTES);
    let size = segment.size();
    drop(segment); // no roll, no close: the reservation stays on disk
    let reopened = Segment::open(dir.path(), Offset::ZERO, &config(), NOW, "").unwrap();
    assert!(allocated(&reopened) > block_rounded(size));
    let outcome = reopened.recover().unwrap();
    assert_eq!(outcome.valid_bytes, size);
    assert_eq!(
        outcome.corruption, None,
        "reserved blocks are past the end, never read"
    );
    reopened.on_becoming_inactive().unwrap();
    assert_eq!(allocated(&reopened), block_rounded(size));
}
