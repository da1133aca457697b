//! The throttle time a response carries (`throttle_time_ms`), where its schema has one: set by
//! the broker's client quotas on any API's answer, as Kafka's request quota sets it. The rows,
//! one per served API's response, are generated from Kafka's message definitions by
//! `scripts/gen_protocol.py` ([`generated`]).

/// A response's throttle time.
pub trait ThrottleTime {
    /// The throttle time set (0 where the response carries none).
    fn throttle_time_ms(&self) -> i32;
    /// Sets it, at the versions of the response that carry it (elsewhere it is dropped).
    fn set_throttle_time_ms(&mut self, version: i16, ms: i32);
}

/// `Response => first version carrying ThrottleTimeMs` (or `none`), one impl each. Defined
/// before the generated module, which its rows are in.
macro_rules! throttle_times {
    ($($response:ty => $since:tt,)*) => {
        $(throttle_times!(@one $response, $since);)*
    };
    (@one $response:ty, none) => {
        impl $crate::throttle_time::ThrottleTime for $response {
            fn throttle_time_ms(&self) -> i32 {
                0
            }
            fn set_throttle_time_ms(&mut self, _version: i16, _ms: i32) {}
        }
    };
    (@one $response:ty, $since:literal) => {
        impl $crate::throttle_time::ThrottleTime for $response {
            fn throttle_time_ms(&self) -> i32 {
                self.throttle_time_ms
            }
            fn set_throttle_time_ms(&mut self, version: i16, ms: i32) {
                if version >= $since {
                    self.throttle_time_ms = ms;
                }
            }
        }
    };
}

mod generated;
