//! The name of the resource a request's field names, for the request-level needs of the API
//! table (`Group Read of group_id`): the group ids and transactional ids the rows name.

use kafka_protocol::messages::{GroupId, TransactionalId};

/// The name of the resource a request's field names.
pub trait ResourceName {
    fn resource_name(&self) -> &str;
}

impl ResourceName for GroupId {
    fn resource_name(&self) -> &str {
        self.0.as_str()
    }
}

impl ResourceName for TransactionalId {
    fn resource_name(&self) -> &str {
        self.0.as_str()
    }
}

/// The group id of a request whose codec is generated here (a plain string).
impl ResourceName for String {
    fn resource_name(&self) -> &str {
        self.as_str()
    }
}
