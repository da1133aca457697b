//! Sealed segments' indexes: mapped when read, unmapped with their slot, mapped writable again
//! when the segment changes, and never mapped past the end of their file.

use super::*;

/// A sealed segment at `base` of 30 one-record batches stamped `NOW + i`, an index entry for
/// nearly each, counted in `files`.
fn sealed(dir: &tempfile::TempDir, base: i64, files: &Arc<OpenFiles>) -> Segment {
    let segment = create(dir, base);
    for i in 0..30 {
        append(&segment, &records_at(base + i, NOW + i, &["value"]));
    }
    segment.on_becoming_inactive().unwrap();
    segment.flush().unwrap();
    segment.seal(files);
    segment
}

/// The batch holding each offset of `segment`, and the one at each timestamp, found through
/// its indexes.
fn assert_lookups(segment: &Segment, base: i64) {
    for i in 0..30 {
        let found = segment
            .translate_offset(Offset::new(base + i), FilePosition::START)
            .unwrap()
            .unwrap();
        assert_eq!(found.last_offset, base + i);
        let by_time = segment
            .find_offset_by_timestamp(NOW + i, Offset::ZERO)
            .unwrap()
            .unwrap();
        assert_eq!(by_time.offset, Offset::new(base + i));
    }
    assert_eq!(segment.max_timestamp().unwrap(), NOW + 29);
}

#[test]
fn a_sealed_segment_maps_its_indexes_when_read_and_gives_them_up_to_others() {
    let dir = tempfile::tempdir().unwrap();
    let files = OpenFiles::new(1);
    let first = sealed(&dir, 0, &files);
    let second = sealed(&dir, 100, &files);
    let before = files.remapped();
    assert!(first.offset_index_entries().unwrap().len() > 20);
    assert_lookups(&first, 0);
    assert_eq!(files.remapped(), before + 2, "both indexes mapped once");
    assert_eq!(files.open_count(), 1);
    // The second's reads close the first: the first maps its indexes again when read.
    assert_lookups(&second, 100);
    assert_eq!(files.open_count(), 1);
    assert_lookups(&first, 0);
    assert_eq!(files.remapped(), before + 6);
}

#[test]
fn a_sealed_segment_truncated_back_into_activity_takes_appends_again() {
    let dir = tempfile::tempdir().unwrap();
    let files = OpenFiles::new(1);
    let segment = sealed(&dir, 0, &files);
    let kept = segment.offset_index_entries().unwrap();
    segment.truncate_to(Offset::new(15), NOW).unwrap();
    let truncated = segment.offset_index_entries().unwrap();
    assert_eq!(truncated[..], kept[..truncated.len()]);
    assert!(truncated.iter().all(|entry| entry.offset < Offset::new(15)));
    for i in 15..30 {
        append(&segment, &records_at(i, NOW + i, &["again"]));
    }
    // Other segments' reads do not take the indexes it writes to.
    sealed(&dir, 100, &files);
    assert_lookups(&segment, 0);
    segment.on_becoming_inactive().unwrap();
    segment.flush().unwrap();
    segment.seal(&files);
    assert_lookups(&segment, 0);
    let reopened = Segment::open_sealed(dir.path(), Offset::ZERO, &config(), NOW, &files).unwrap();
    assert_eq!(
        reopened.offset_index_entries().unwrap(),
        segment.offset_index_entries().unwrap(),
        "what was written is on disk"
    );
}

#[test]
fn an_index_shorter_than_its_entries_is_reported_not_mapped() {
    let dir = tempfile::tempdir().unwrap();
    let files = OpenFiles::new(1);
    let segment = sealed(&dir, 0, &files);
    // Nothing of it is mapped once another segment was read.
    assert_lookups(&sealed(&dir, 100, &files), 100);
    let index = segment_path(dir.path(), 0, INDEX_SUFFIX);
    let length = std::fs::metadata(&index).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&index)
        .unwrap()
        .set_len(length - 4)
        .unwrap();
    match segment.translate_offset(Offset::new(5), FilePosition::START) {
        Err(StorageError::Corrupt { path, reason, .. }) => {
            assert_eq!(path, index);
            assert!(reason.contains("shorter than its"), "{reason}");
        }
        other => panic!("expected the damage reported, got {other:?}"),
    }
}
