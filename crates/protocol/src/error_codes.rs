//! The error codes a response carries, wherever its schema puts them (top level, per topic,
//! per partition, per member), so every API's errors are counted the same way for the
//! `ErrorsPerSec` metric. The impls, one per served API's response, are generated from Kafka's
//! message definitions by `scripts/gen_protocol.py` ([`generated`], [`generated_rest`]).

mod generated;
mod generated_rest;

/// The error codes in a response, `NONE` included.
pub trait ErrorCodes {
    fn error_codes(&self) -> Vec<i16>;
}
