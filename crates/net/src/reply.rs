//! What a request is answered with, as the network edge writes it.

use std::pin::Pin;

use ferrolog_protocol::Unanswerable;
use ferrolog_protocol::response::ResponseFrame;

/// What a request is answered with.
pub enum Reply {
    /// Nothing (Produce with acks=0).
    Nothing,
    /// The response, to be written now.
    Now(ResponseFrame),
    /// A Produce's response, once the flushes its appends were due (`flush.messages`) have
    /// ended. The appends are done, and the flushes run when the future is first polled: the
    /// connection may read and serve its next requests meanwhile, as long as it writes the
    /// responses in order.
    AfterFlush(PendingReply),
}

/// A response still waiting for the flushes it acknowledges.
pub type PendingReply = Pin<Box<dyn Future<Output = Result<ResponseFrame, Unanswerable>> + Send>>;

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Nothing => f.write_str("Nothing"),
            Self::Now(response) => f.debug_tuple("Now").field(response).finish(),
            Self::AfterFlush(_) => f.write_str("AfterFlush(..)"),
        }
    }
}

impl Reply {
    /// The response, after its flushes when it waits for any; `None` for no response.
    pub async fn into_response(self) -> Result<Option<ResponseFrame>, Unanswerable> {
        match self {
            Self::Nothing => Ok(None),
            Self::Now(response) => Ok(Some(response)),
            Self::AfterFlush(pending) => pending.await.map(Some),
        }
    }
}
