//! DescribeCluster: this node, which is also the controller. Anyone may ask, as in Kafka; the
//! cluster's authorized operations, when asked for, are 0 without DESCRIBE on the cluster.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{
    BrokerId, DescribeClusterRequest, DescribeClusterResponse, RequestHeader,
};
use kafka_protocol::protocol::StrBytes;

use crate::Context;
use crate::session::Session;

pub fn handle(
    context: &Context,
    session: &Session,
    header: &RequestHeader,
    request: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let node = BrokerId(context.manager.node_id());
    let mut response = DescribeClusterResponse::default()
        .with_cluster_id(StrBytes::from_string(
            context.manager.cluster_id().to_owned(),
        ))
        .with_controller_id(node)
        .with_brokers(vec![
            DescribeClusterBroker::default()
                .with_broker_id(node)
                .with_host(StrBytes::from_string(
                    session.listener().advertised.host.clone(),
                ))
                .with_port(i32::from(session.listener().advertised.port)),
        ]);
    if header.request_api_version >= 1 {
        response = response.with_endpoint_type(request.endpoint_type);
    }
    if request.include_cluster_authorized_operations {
        response = response.with_cluster_authorized_operations(
            super::metadata::cluster_operations(context, session),
        );
    }
    response
}
