use std::path::Path;

use super::file::{format, parse};
use super::{Assigned, EpochEnd, EpochEntry, LeaderEpochs};
use crate::epoch::LeaderEpoch;
use crate::error::StorageError;
use crate::offset::Offset;

fn cache(entries: &[(i32, i64)]) -> LeaderEpochs {
    let mut epochs = LeaderEpochs::default();
    for &(epoch, start) in entries {
        epochs.assign(LeaderEpoch::new(epoch), Offset::new(start));
    }
    assert_eq!(pairs(&epochs), entries, "the cache was built as given");
    epochs
}

fn pairs(epochs: &LeaderEpochs) -> Vec<(i32, i64)> {
    epochs
        .entries()
        .iter()
        .map(|entry| (entry.epoch.value(), entry.start_offset.value()))
        .collect()
}

fn assign(epochs: &mut LeaderEpochs, epoch: i32, start: i64) -> Assigned {
    let assigned = epochs.assign(LeaderEpoch::new(epoch), Offset::new(start));
    epochs.check().expect("assign keeps the invariant");
    assigned
}

#[test]
fn the_latest_epoch_again_changes_nothing_unless_it_starts_lower() {
    let mut epochs = cache(&[(0, 0), (2, 10)]);
    assert_eq!(assign(&mut epochs, 2, 10), Assigned::Unchanged);
    assert_eq!(assign(&mut epochs, 2, 25), Assigned::Unchanged);
    assert_eq!(
        assign(&mut epochs, 2, 7),
        Assigned::Added {
            removed: vec![EpochEntry::new(2, 10)]
        }
    );
    assert_eq!(pairs(&epochs), [(0, 0), (2, 7)]);
}

#[test]
fn a_lower_epoch_removes_every_newer_entry() {
    let mut epochs = cache(&[(0, 0), (2, 10), (4, 20), (5, 30)]);
    let assigned = assign(&mut epochs, 3, 25);
    assert_eq!(
        assigned,
        Assigned::Added {
            removed: vec![EpochEntry::new(4, 20), EpochEntry::new(5, 30)]
        }
    );
    assert_eq!(pairs(&epochs), [(0, 0), (2, 10), (3, 25)]);
    // A higher epoch starting below the latest start removes the entries it overlaps.
    assign(&mut epochs, 6, 10);
    assert_eq!(pairs(&epochs), [(0, 0), (6, 10)]);
}

#[test]
fn truncating_from_the_end_removes_the_epochs_starting_at_or_after_the_cut() {
    let mut epochs = cache(&[(0, 0), (2, 10), (4, 20)]);
    assert!(!epochs.truncate_from_end(Offset::new(21)));
    assert!(epochs.truncate_from_end(Offset::new(20)));
    assert_eq!(pairs(&epochs), [(0, 0), (2, 10)]);
    assert!(epochs.truncate_from_end(Offset::new(0)));
    assert!(epochs.is_empty());
}

#[test]
fn truncating_from_the_start_moves_the_straddling_epoch_up() {
    let mut epochs = cache(&[(0, 0), (2, 10), (4, 20)]);
    assert!(
        !epochs.truncate_from_start(Offset::new(0)),
        "the first entry starts there"
    );
    assert!(epochs.truncate_from_start(Offset::new(15)));
    assert_eq!(pairs(&epochs), [(2, 15), (4, 20)]);
    assert!(!epochs.truncate_from_start(Offset::new(15)));
    assert!(epochs.truncate_from_start(Offset::new(20)));
    assert_eq!(pairs(&epochs), [(4, 20)]);
    // Past every entry, the latest epoch holds from the new start.
    assert!(epochs.truncate_from_start(Offset::new(99)));
    assert_eq!(pairs(&epochs), [(4, 99)]);
    assert!(!LeaderEpochs::default().truncate_from_start(Offset::new(5)));
}

#[test]
fn end_offsets_answer_as_kafka_does() {
    let epochs = cache(&[(1, 0), (3, 10), (6, 40)]);
    let log_end = Offset::new(55);
    let end = |requested| epochs.end_offset_for(requested, log_end);
    let answer = |epoch, end_offset| EpochEnd { epoch, end_offset };
    assert_eq!(
        end(6),
        answer(6, 55),
        "the latest epoch ends at the log end"
    );
    assert_eq!(end(3), answer(3, 40));
    assert_eq!(end(1), answer(1, 10));
    assert_eq!(end(4), answer(3, 40), "an epoch in a gap: the one below it");
    assert_eq!(
        end(0),
        answer(0, 0),
        "below every entry: itself, the first start"
    );
    assert_eq!(end(-2), answer(-2, 0), "only -1 means no epoch");
    assert_eq!(end(7), EpochEnd::UNDEFINED, "above the latest");
    assert_eq!(end(-1), EpochEnd::UNDEFINED);
    assert_eq!(
        LeaderEpochs::default().end_offset_for(0, log_end),
        EpochEnd::UNDEFINED
    );
}

#[test]
fn epoch_for_offset_is_the_entry_at_or_below() {
    let epochs = cache(&[(1, 5), (3, 10)]);
    let epoch = |offset| {
        epochs
            .epoch_for_offset(Offset::new(offset))
            .map(|e| e.value())
    };
    assert_eq!(epoch(4), None);
    assert_eq!(epoch(5), Some(1));
    assert_eq!(epoch(9), Some(1));
    assert_eq!(epoch(10), Some(3));
    assert_eq!(epoch(1_000), Some(3));
}

#[test]
fn the_file_reads_back_what_was_written() {
    let epochs = cache(&[(0, 0), (3, 1200)]);
    let text = format(&epochs);
    assert_eq!(text, "0\n2\n0 0\n3 1200\n");
    assert_eq!(parse(&text, Path::new("f")).unwrap(), epochs);
    assert_eq!(format(&LeaderEpochs::default()), "0\n0\n");
}

#[test]
fn files_kafka_reads_as_empty_are_empty() {
    // Kafka reads the version as an integer: "00" and "+0" are version 0.
    for text in ["", "0\n", "0\n0\n", "00\n0\n", "+0\n0\n"] {
        assert!(parse(text, Path::new("f")).unwrap().is_empty(), "{text:?}");
    }
    // Any whitespace between the two numbers, and after them.
    let parsed = parse("0\n2\n0\t0\n5   9 \n", Path::new("f")).unwrap();
    assert_eq!(pairs(&parsed), [(0, 0), (5, 9)]);
}

#[test]
fn malformed_files_name_the_line_and_what_is_wrong() {
    let cases = [
        ("x\n", 1, "version"),
        ("1\n0\n", 1, "unsupported version 1"),
        ("0\n-1\n", 2, "count"),
        ("0\n2\n0 0\n", 2, "2 entries announced, 1 found"),
        ("0\n1\n0 0\n1 5\n", 2, "1 entries announced, 2 found"),
        ("0\n1\n 0 0\n", 3, "is not an epoch"),
        ("0\n1\n0 0 0\n", 3, "is not an epoch"),
        ("0\n1\n\n", 3, "is not an epoch"),
        ("0\n1\nzero 0\n", 3, "epoch \"zero\""),
        ("0\n1\n0 -5\n", 3, "negative"),
    ];
    for (text, expected_line, expected) in cases {
        match parse(text, Path::new("p/leader-epoch-checkpoint")) {
            Err(StorageError::MalformedFile { path, line, reason }) => {
                assert_eq!(path, Path::new("p/leader-epoch-checkpoint"));
                assert_eq!(line, expected_line, "{text:?}: {reason}");
                assert!(reason.contains(expected), "{text:?}: {reason}");
            }
            other => panic!("{text:?} gave {other:?}"),
        }
    }
}

#[test]
fn entries_out_of_order_load_as_kafka_loads_them() {
    // Kafka's loader assigns each entry in turn: a lower epoch cuts the newer ones.
    let parsed = parse("0\n3\n0 0\n5 50\n2 20\n", Path::new("f")).unwrap();
    assert_eq!(pairs(&parsed), [(0, 0), (2, 20)]);
    parsed.check().unwrap();
}
