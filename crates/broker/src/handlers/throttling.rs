//! Client quotas on Produce and Fetch, applied as Kafka applies them (KIP-13, KIP-219): the
//! bytes a client produces (the request's size) or fetches (the response's) are recorded
//! against the quota it is under, and a rate over the quota earns a throttle time. The
//! response goes out at once carrying it (`throttle_time_ms`), and the connection reads
//! nothing more until it is up; a throttled fetch is answered empty, its bytes not counted.
//! A fetch asks for no more than its quota allows in one window's span.
//!
//! Every request's handling time counts against the client's request quota
//! (`request_percentage`, [`requested`]); the larger throttle is the one answered.
//!
//! CreateTopics, CreatePartitions and DeleteTopics count the partitions they create or delete
//! against the controller mutation quota ([`mutations`]), answering with its throttle time.

use crate::Context;
use crate::authz::Asked;
use crate::quotas::mutations::Mutations;
use crate::quotas::{Throttle, entity::sanitized_user};
use crate::session::Session;

/// Records a produce request of `request_bytes` from `session` with `client_id`; returns the
/// throttle time its response carries, the connection muted for it.
pub fn produced(
    context: &Context,
    session: &Session,
    client_id: &str,
    request_bytes: usize,
) -> i32 {
    let now = context.manager.clock().now_ms();
    let throttle = context
        .quotas
        .produced(session.user_name(), client_id, request_bytes, now);
    applied("Produce", session, throttle, request_bytes)
}

/// The most bytes a fetch from `session` with `client_id` may ask for: `asked`, or less under
/// its consumer quota.
pub fn fetch_max_bytes(context: &Context, session: &Session, client_id: &str, asked: i32) -> i32 {
    match context
        .quotas
        .fetch_max_bytes(session.user_name(), client_id)
    {
        Some(limit) if limit < f64::from(asked) => limit.max(0.0) as i32,
        _ => asked,
    }
}

/// Records a consumer's fetch response of `response_bytes` to `session` with `client_id`,
/// and the fetch's handling time against the request quota first, as Kafka does; returns the
/// longer throttle time the two earned (then the fetch is to be answered empty, its bytes not
/// counted), the connection muted for it.
pub fn fetched(
    context: &Context,
    session: &Session,
    client_id: &str,
    response_bytes: usize,
) -> i32 {
    let requested = requested(context, session, client_id);
    let now = context.manager.clock().now_ms();
    let throttle = context.quotas.fetched(
        session.user_name(),
        client_id,
        (response_bytes, requested > 0),
        now,
    );
    let counted = match &throttle {
        Some(throttle) if throttle.ms > 0 || requested > 0 => 0,
        _ => response_bytes,
    };
    applied("Fetch", session, throttle, counted).max(requested)
}

/// Mutes the connection for the throttle and counts it; the throttle time as answered.
fn applied(group: &str, session: &Session, throttle: Option<Throttle>, bytes: usize) -> i32 {
    let Some(mut throttle) = throttle else {
        return 0;
    };
    // The answer carries at most i32::MAX ms: the connection is muted no longer than it says.
    throttle.ms = throttle.ms.min(i64::from(i32::MAX));
    session.throttle(throttle.ms);
    crate::metrics::record_quota(
        group,
        &sanitized_user(&throttle.tags.user),
        &throttle.tags.client_id,
        Some(bytes as u64),
        throttle.ms,
    );
    i32::try_from(throttle.ms).unwrap_or(i32::MAX)
}

/// The partition changes of a request under its client's controller mutation quota, strict
/// from version `strict_from` of its API.
pub fn mutations<'a>(context: &'a Context, asked: &Asked<'_>, strict_from: i16) -> Mutations<'a> {
    let client_id = asked.header().client_id.as_deref().unwrap_or_default();
    let user = asked.session().user_name();
    context
        .quotas
        .mutations(user, client_id, asked.version() >= strict_from)
}

/// The time now on the broker's clock, as quotas measure it.
pub fn now_ms(context: &Context) -> i64 {
    context.manager.clock().now_ms()
}

/// The throttle time the request's mutations earned, the connection muted for it.
pub fn mutated(session: &Session, mutations: &Mutations<'_>) -> i32 {
    let throttle = mutations.throttle_ms().min(i64::from(i32::MAX));
    if let Some(tags) = mutations.tags() {
        session.throttle(throttle);
        crate::metrics::record_quota(
            "ControllerMutation",
            &sanitized_user(&tags.user),
            &tags.client_id,
            None,
            throttle,
        );
    }
    i32::try_from(throttle).unwrap_or(i32::MAX)
}

/// Records the handling time of the request being answered (see [`crate::bridge::spent`])
/// against `session`'s request quota; returns the throttle time it earned, the connection
/// muted for it.
pub fn requested(context: &Context, session: &Session, client_id: &str) -> i32 {
    let now = context.manager.clock().now_ms();
    let spent = crate::bridge::spent();
    let throttle = context
        .quotas
        .requested(session.user_name(), client_id, spent, now);
    applied_without_bytes("Request", session, throttle)
}

fn applied_without_bytes(group: &str, session: &Session, throttle: Option<Throttle>) -> i32 {
    let Some(mut throttle) = throttle else {
        return 0;
    };
    throttle.ms = throttle.ms.min(i64::from(i32::MAX));
    session.throttle(throttle.ms);
    crate::metrics::record_quota(
        group,
        &sanitized_user(&throttle.tags.user),
        &throttle.tags.client_id,
        None,
        throttle.ms,
    );
    i32::try_from(throttle.ms).unwrap_or(i32::MAX)
}
