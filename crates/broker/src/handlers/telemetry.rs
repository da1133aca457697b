//! GetTelemetrySubscriptions and PushTelemetry (KIP-714), answered as Kafka 4.4 answers them
//! ([`crate::telemetry`]). Neither needs an ACL, as in Kafka. A refused request is answered
//! with its error code and every other field empty, as Kafka's error answers are.

use std::time::Instant;

use base64::Engine;
use kafka_protocol::messages::{
    GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse, PushTelemetryRequest,
    PushTelemetryResponse,
};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::Context;
use crate::authz::Asked;
use crate::telemetry::instances::Push;
use crate::telemetry::subscriptions::ClientAttributes;

/// The codecs a client may push with, in Kafka's order of preference: zstd, lz4, gzip, snappy.
const ACCEPTED_COMPRESSION_TYPES: [i8; 4] = [4, 3, 1, 2];

pub fn get_subscriptions(
    context: &Context,
    asked: &Asked<'_>,
    request: GetTelemetrySubscriptionsRequest,
) -> GetTelemetrySubscriptionsResponse {
    let id = request.client_instance_id;
    match context
        .telemetry
        .get_subscriptions(Instant::now(), id, |id| attributes(asked, id))
    {
        Ok(told) => GetTelemetrySubscriptionsResponse::default()
            .with_client_instance_id(told.instance)
            .with_subscription_id(told.subscription_id)
            .with_accepted_compression_types(ACCEPTED_COMPRESSION_TYPES.to_vec())
            .with_push_interval_ms(told.resolved.interval_ms)
            .with_telemetry_max_bytes(context.config.telemetry.limits.max_push_bytes as i32)
            .with_delta_temporality(true)
            .with_requested_metrics(
                told.resolved
                    .metrics
                    .into_iter()
                    .map(StrBytes::from_string)
                    .collect(),
            ),
        Err(code) => GetTelemetrySubscriptionsResponse::default().with_error_code(code),
    }
}

pub fn push(
    context: &Context,
    asked: &Asked<'_>,
    request: PushTelemetryRequest,
) -> PushTelemetryResponse {
    let push = Push {
        instance: request.client_instance_id,
        subscription_id: request.subscription_id,
        terminating: request.terminating,
    };
    let code = context.telemetry.push(
        Instant::now(),
        push,
        (request.compression_type, &request.metrics),
        |id| attributes(asked, id),
    );
    PushTelemetryResponse::default().with_error_code(code)
}

/// What a `match` entry may test of the client asking: Kafka's names and forms (the instance
/// id as Kafka writes a Uuid, `unknown` for software the client did not name, the address as
/// Java writes it).
fn attributes(asked: &Asked<'_>, id: Uuid) -> ClientAttributes {
    let session = asked.session();
    let (software, version) = session
        .client_software()
        .unwrap_or_else(|| ("unknown".to_owned(), "unknown".to_owned()));
    [
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.as_bytes()),
        asked
            .header()
            .client_id
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
        software,
        version,
        session.host().to_owned(),
        session.client().port().to_string(),
    ]
}

impl crate::refuse::Refuse for GetTelemetrySubscriptionsRequest {
    fn refused(&self, _version: i16, code: i16) -> GetTelemetrySubscriptionsResponse {
        GetTelemetrySubscriptionsResponse::default().with_error_code(code)
    }
}

impl crate::refuse::Refuse for PushTelemetryRequest {
    fn refused(&self, _version: i16, code: i16) -> PushTelemetryResponse {
        PushTelemetryResponse::default().with_error_code(code)
    }
}
