//! How a request refused as a whole is answered: the router checks a row's request-level needs
//! before the handler runs (see [`super::apis`]), and a refused request is answered by its
//! type's [`Refuse`], the answer Kafka's error response for that request gives.

use kafka_protocol::messages::{GroupId, TransactionalId};
use kafka_protocol::protocol::{Request, StrBytes};

use super::Unanswerable;

/// The answer to a request one of whose request-level needs is refused.
pub trait Refuse: Request {
    /// What must hold of the request before its refusal is answered: Kafka parses the ACL
    /// requests before it authorizes them, so one it cannot parse closes the connection even
    /// where the principal could not have made it.
    fn precheck(&self, _version: i16) -> Result<(), Unanswerable> {
        Ok(())
    }

    /// The response refusing the whole request with `code`.
    fn refused(&self, version: i16, code: i16) -> Self::Response;
}

/// Answers a request refused as a whole with the response's top-level error code alone, as
/// Kafka's error response does for these requests.
macro_rules! refused_at_top_level {
    ($($request:ty => $response:ty),* $(,)?) => {$(
        impl $crate::protocol::refuse::Refuse for $request {
            fn refused(&self, _version: i16, code: i16) -> $response {
                <$response>::default().with_error_code(code)
            }
        }
    )*};
}
pub(crate) use refused_at_top_level;

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
