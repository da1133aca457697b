//! StreamsGroupTopologyDescriptionUpdate (API 93, KIP-1331): a Kafka Streams member sends its
//! topology's description when a heartbeat asked for one. Kafka asks, and keeps the
//! descriptions, only through the plugin `group.streams.topology.description.plugin.class`
//! names; without one (Kafka's default, and ferrolog, which loads no plugin) no member is
//! asked, and a description sent anyway is refused as Kafka refuses it: UNSUPPORTED_VERSION,
//! "The broker has no streams group topology description plugin configured.", after the
//! checks before it (the protocol served, READ on the group).

use ferrolog_protocol::messages::StreamsGroupTopologyDescriptionUpdateRequest;
use ferrolog_protocol::messages::streams_group_topology_description_update_response::StreamsGroupTopologyDescriptionUpdateResponse;

use crate::authz::Asked;
use crate::{Context, errors};

/// Kafka's answer to a description sent to a broker without a plugin.
pub const NO_PLUGIN: &str =
    "The broker has no streams group topology description plugin configured.";

pub fn handle(
    context: &Context,
    _asked: &Asked<'_>,
    _request: StreamsGroupTopologyDescriptionUpdateRequest,
) -> StreamsGroupTopologyDescriptionUpdateResponse {
    let message = super::streams_served(context).then(|| NO_PLUGIN.to_owned());
    StreamsGroupTopologyDescriptionUpdateResponse {
        error_code: errors::UNSUPPORTED_VERSION,
        error_message: message,
        ..StreamsGroupTopologyDescriptionUpdateResponse::default()
    }
}

impl crate::refuse::Refuse for StreamsGroupTopologyDescriptionUpdateRequest {
    fn refused(&self, _version: i16, code: i16) -> StreamsGroupTopologyDescriptionUpdateResponse {
        StreamsGroupTopologyDescriptionUpdateResponse {
            error_code: code,
            ..StreamsGroupTopologyDescriptionUpdateResponse::default()
        }
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use ferrolog_protocol::messages::StreamsGroupTopologyDescriptionUpdateRequest;

    use crate::probes::Probed;

    impl Probed for StreamsGroupTopologyDescriptionUpdateRequest {
        fn probe(_topic: &str, group: &str) -> (i16, Self) {
            let request = StreamsGroupTopologyDescriptionUpdateRequest {
                group_id: group.to_owned(),
                member_id: "nobody".to_owned(),
                ..StreamsGroupTopologyDescriptionUpdateRequest::default()
            };
            (0, request)
        }
    }
}
