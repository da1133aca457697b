//! The name of the resource a request's field names, for the request-level needs of the API
//! table (`Group Read of group_id`).

use kafka_protocol::messages::{GroupId, TransactionalId};
use kafka_protocol::protocol::StrBytes;

/// The name of the resource a request's field names (`None`: the field is null, and names
/// nothing).
pub trait ResourceName {
    fn resource_name(&self) -> Option<&str>;
}

impl ResourceName for StrBytes {
    fn resource_name(&self) -> Option<&str> {
        Some(self.as_str())
    }
}

impl ResourceName for GroupId {
    fn resource_name(&self) -> Option<&str> {
        Some(self.0.as_str())
    }
}

impl ResourceName for TransactionalId {
    fn resource_name(&self) -> Option<&str> {
        Some(self.0.as_str())
    }
}

impl<T: ResourceName> ResourceName for Option<T> {
    fn resource_name(&self) -> Option<&str> {
        self.as_ref().and_then(ResourceName::resource_name)
    }
}
