//! The error codes a response carries, wherever its schema puts them (top level, per topic,
//! per partition, per member), so every API's errors are counted the same way for the
//! `ErrorsPerSec` metric.

use kafka_protocol::messages::{
    AddOffsetsToTxnResponse, AddPartitionsToTxnResponse, AlterConfigsResponse,
    AlterPartitionReassignmentsResponse, AlterReplicaLogDirsResponse,
    AlterUserScramCredentialsResponse, ApiVersionsResponse, CreateAclsResponse,
    CreatePartitionsResponse, CreateTopicsResponse, DeleteAclsResponse, DeleteGroupsResponse,
    DeleteRecordsResponse, DeleteTopicsResponse, DescribeAclsResponse,
    DescribeClientQuotasResponse, DescribeClusterResponse, DescribeConfigsResponse,
    DescribeGroupsResponse, DescribeLogDirsResponse, DescribeProducersResponse,
    DescribeTopicPartitionsResponse, DescribeTransactionsResponse,
    DescribeUserScramCredentialsResponse, EndTxnResponse, FetchResponse, FindCoordinatorResponse,
    HeartbeatResponse, IncrementalAlterConfigsResponse, InitProducerIdResponse, JoinGroupResponse,
    LeaveGroupResponse, ListGroupsResponse, ListOffsetsResponse,
    ListPartitionReassignmentsResponse, ListTransactionsResponse, MetadataResponse,
    OffsetCommitResponse, OffsetDeleteResponse, OffsetFetchResponse, ProduceResponse,
    SaslAuthenticateResponse, SaslHandshakeResponse, SyncGroupResponse, TxnOffsetCommitResponse,
    WriteTxnMarkersResponse,
};

/// The error codes in a response, `NONE` included.
pub trait ErrorCodes {
    fn error_codes(&self) -> Vec<i16>;
}

macro_rules! top_level {
    ($($response:ty),*) => {$(
        impl ErrorCodes for $response {
            fn error_codes(&self) -> Vec<i16> {
                vec![self.error_code]
            }
        }
    )*};
}

top_level!(
    ApiVersionsResponse,
    ListPartitionReassignmentsResponse,
    DescribeClusterResponse,
    InitProducerIdResponse,
    JoinGroupResponse,
    SyncGroupResponse,
    HeartbeatResponse,
    ListGroupsResponse,
    DescribeAclsResponse,
    SaslHandshakeResponse,
    SaslAuthenticateResponse,
    DescribeClientQuotasResponse,
    AddOffsetsToTxnResponse,
    EndTxnResponse,
    ListTransactionsResponse
);

impl ErrorCodes for DescribeTransactionsResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.transaction_states
            .iter()
            .map(|state| state.error_code)
            .collect()
    }
}

impl ErrorCodes for WriteTxnMarkersResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.markers
            .iter()
            .flat_map(|m| &m.topics)
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect()
    }
}

impl ErrorCodes for AddPartitionsToTxnResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.results_by_topic_v3_and_below
            .iter()
            .flat_map(|t| {
                t.results_by_partition
                    .iter()
                    .map(|p| p.partition_error_code)
            })
            .collect()
    }
}

impl ErrorCodes for TxnOffsetCommitResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect()
    }
}

impl ErrorCodes for DescribeProducersResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect()
    }
}

impl ErrorCodes for DescribeUserScramCredentialsResponse {
    fn error_codes(&self) -> Vec<i16> {
        let mut codes = vec![self.error_code];
        codes.extend(self.results.iter().map(|result| result.error_code));
        codes
    }
}

impl ErrorCodes for AlterUserScramCredentialsResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.results
            .iter()
            .map(|result| result.error_code)
            .collect()
    }
}

impl ErrorCodes for CreateAclsResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.results
            .iter()
            .map(|result| result.error_code)
            .collect()
    }
}

impl ErrorCodes for DeleteAclsResponse {
    fn error_codes(&self) -> Vec<i16> {
        let mut codes = Vec::new();
        for result in &self.filter_results {
            codes.push(result.error_code);
            codes.extend(result.matching_acls.iter().map(|acl| acl.error_code));
        }
        codes
    }
}

impl ErrorCodes for MetadataResponse {
    fn error_codes(&self) -> Vec<i16> {
        let mut codes = vec![self.error_code];
        for topic in &self.topics {
            codes.push(topic.error_code);
            codes.extend(topic.partitions.iter().map(|p| p.error_code));
        }
        codes
    }
}

impl ErrorCodes for DescribeTopicPartitionsResponse {
    fn error_codes(&self) -> Vec<i16> {
        let mut codes = Vec::new();
        for topic in &self.topics {
            codes.push(topic.error_code);
            codes.extend(topic.partitions.iter().map(|p| p.error_code));
        }
        codes
    }
}

impl ErrorCodes for ProduceResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.responses
            .iter()
            .flat_map(|t| t.partition_responses.iter().map(|p| p.error_code))
            .collect()
    }
}

impl ErrorCodes for FetchResponse {
    fn error_codes(&self) -> Vec<i16> {
        let mut codes = vec![self.error_code];
        for topic in &self.responses {
            codes.extend(topic.partitions.iter().map(|p| p.error_code));
        }
        codes
    }
}

impl ErrorCodes for ListOffsetsResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect()
    }
}

impl ErrorCodes for DeleteRecordsResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect()
    }
}

impl ErrorCodes for OffsetCommitResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect()
    }
}

impl ErrorCodes for CreateTopicsResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.topics.iter().map(|t| t.error_code).collect()
    }
}

impl ErrorCodes for DeleteTopicsResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.responses.iter().map(|t| t.error_code).collect()
    }
}

impl ErrorCodes for CreatePartitionsResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.results.iter().map(|t| t.error_code).collect()
    }
}

impl ErrorCodes for DescribeConfigsResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.results.iter().map(|r| r.error_code).collect()
    }
}

impl ErrorCodes for AlterConfigsResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.responses.iter().map(|r| r.error_code).collect()
    }
}

impl ErrorCodes for IncrementalAlterConfigsResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.responses.iter().map(|r| r.error_code).collect()
    }
}

impl ErrorCodes for AlterReplicaLogDirsResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.results
            .iter()
            .flat_map(|topic| topic.partitions.iter().map(|p| p.error_code))
            .collect()
    }
}

impl ErrorCodes for AlterPartitionReassignmentsResponse {
    fn error_codes(&self) -> Vec<i16> {
        let mut codes = vec![self.error_code];
        codes.extend(
            self.responses
                .iter()
                .flat_map(|topic| topic.partitions.iter().map(|p| p.error_code)),
        );
        codes
    }
}

impl ErrorCodes for DescribeLogDirsResponse {
    fn error_codes(&self) -> Vec<i16> {
        let mut codes = vec![self.error_code];
        codes.extend(self.results.iter().map(|r| r.error_code));
        codes
    }
}

impl ErrorCodes for FindCoordinatorResponse {
    fn error_codes(&self) -> Vec<i16> {
        let mut codes = vec![self.error_code];
        codes.extend(self.coordinators.iter().map(|c| c.error_code));
        codes
    }
}

impl ErrorCodes for LeaveGroupResponse {
    fn error_codes(&self) -> Vec<i16> {
        let mut codes = vec![self.error_code];
        codes.extend(self.members.iter().map(|m| m.error_code));
        codes
    }
}

impl ErrorCodes for OffsetFetchResponse {
    fn error_codes(&self) -> Vec<i16> {
        let mut codes = vec![self.error_code];
        for topic in &self.topics {
            codes.extend(topic.partitions.iter().map(|p| p.error_code));
        }
        for group in &self.groups {
            codes.push(group.error_code);
            for topic in &group.topics {
                codes.extend(topic.partitions.iter().map(|p| p.error_code));
            }
        }
        codes
    }
}

impl ErrorCodes for DescribeGroupsResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.groups.iter().map(|g| g.error_code).collect()
    }
}

impl ErrorCodes for DeleteGroupsResponse {
    fn error_codes(&self) -> Vec<i16> {
        self.results.iter().map(|r| r.error_code).collect()
    }
}

impl ErrorCodes for OffsetDeleteResponse {
    fn error_codes(&self) -> Vec<i16> {
        let mut codes = vec![self.error_code];
        for topic in &self.topics {
            codes.extend(topic.partitions.iter().map(|p| p.error_code));
        }
        codes
    }
}
