//! InitProducerId: a producer id for idempotent producers, never handed out twice, and an epoch
//! bump for a producer that asks with its current id. Ids come from the wall clock in
//! milliseconds (and count up from there within a run), so a restart never reuses one without
//! any state on disk. Sequence checks and producer snapshots are not done yet: a retried batch
//! may be stored twice. Transactional producers get UNSUPPORTED_VERSION: no transactions.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use kafka_protocol::messages::{
    InitProducerIdRequest, InitProducerIdResponse, ProducerId, RequestHeader,
};

use crate::{Context, errors};

static LAST_PRODUCER_ID: AtomicI64 = AtomicI64::new(0);

fn next_producer_id() -> i64 {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64);
    let mut last = LAST_PRODUCER_ID.load(Ordering::Relaxed);
    loop {
        let next = now_ms.max(last + 1);
        match LAST_PRODUCER_ID.compare_exchange(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(current) => last = current,
        }
    }
}

pub fn handle(
    _context: &Context,
    _header: &RequestHeader,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    if request.transactional_id.is_some() {
        return InitProducerIdResponse::default()
            .with_error_code(errors::UNSUPPORTED_VERSION)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
    }
    if request.producer_id.0 >= 0
        && request.producer_epoch >= 0
        && request.producer_epoch < i16::MAX
    {
        return InitProducerIdResponse::default()
            .with_producer_id(request.producer_id)
            .with_producer_epoch(request.producer_epoch + 1);
    }
    InitProducerIdResponse::default()
        .with_producer_id(ProducerId(next_producer_id()))
        .with_producer_epoch(0)
}
