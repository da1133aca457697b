//! DescribeCluster: this node, which is also the controller. Anyone may ask, as in Kafka; the
//! cluster's authorized operations, when asked for, are 0 without DESCRIBE on the cluster.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;

use crate::Context;
use crate::authz::Asked;

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
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
                    asked.session().listener().advertised.host.clone(),
                ))
                .with_port(i32::from(asked.session().listener().advertised.port)),
        ]);
    if asked.version() >= 1 {
        response = response.with_endpoint_type(request.endpoint_type);
    }
    if request.include_cluster_authorized_operations {
        response = response.with_cluster_authorized_operations(
            super::metadata::cluster_operations(context, asked),
        );
    }
    response
}
