//! A log view that breaks its invariants is refused where it is made.

use super::*;

#[test]
fn a_view_out_of_order_is_refused_naming_what_breaks() {
    let fixture = Fixture::new();
    let log = fixture.create(small_segments(300));
    for i in 0..10 {
        append_value(&log, &format!("value-{i}"));
    }
    let view = (*log.view()).clone();
    assert_eq!(view.check(), Ok(()));

    let past_the_end = LogView {
        high_watermark: view.log_end.offset.next(),
        ..view.clone()
    };
    assert!(past_the_end.check().unwrap_err().contains("high watermark"));

    let start_past_the_high_watermark = LogView {
        log_start_offset: view.high_watermark.next(),
        ..view.clone()
    };
    assert!(
        start_past_the_high_watermark
            .check()
            .unwrap_err()
            .contains("log start")
    );

    let unflushed_past_the_end = LogView {
        recovery_point: view.log_end.offset.next(),
        ..view.clone()
    };
    assert!(
        unflushed_past_the_end
            .check()
            .unwrap_err()
            .contains("recovery point")
    );

    assert!(view.segments.len() > 1, "several segments to reorder");
    let mut reordered: Vec<_> = view.segments.iter().cloned().collect();
    reordered.swap(0, 1);
    let out_of_order = LogView {
        segments: Arc::new(reordered),
        ..view.clone()
    };
    assert!(out_of_order.check().is_err());

    let without_segments = LogView {
        segments: Arc::new(Vec::new()),
        ..view
    };
    assert_eq!(without_segments.check(), Err("no segment".into()));
}
