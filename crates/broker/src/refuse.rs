//! How a request refused as a whole is answered: the router checks a row's request-level needs
//! before the handler runs (see [`crate::protocol::apis`]), and a refused request is answered
//! by its type's [`Refuse`], the answer Kafka's error response for that request gives.

use kafka_protocol::protocol::Request;

use crate::protocol::Unanswerable;

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
        impl $crate::refuse::Refuse for $request {
            fn refused(&self, _version: i16, code: i16) -> $response {
                <$response>::default().with_error_code(code)
            }
        }
    )*};
}
pub(crate) use refused_at_top_level;
