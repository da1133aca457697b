//! Client quotas (Kafka's KIP-13, KIP-55, KIP-124, KIP-219, KIP-599): what each user and client
//! id may spend, kept as Kafka keeps it ([`store`], set by AlterClientQuotas and listed by
//! DescribeClientQuotas through a [`filter`]), the quota a client is under ([`resolve`]), and
//! the rates measured as Kafka's sensors measure them ([`rate`], [`sensors`]).
//!
//! [`ClientQuotas`] is what the broker holds: the handlers record what a client spends and get
//! back the throttle time it earns, which the response carries and for which the connection
//! reads nothing more ([`crate::session::Session::throttle`]).

pub mod entity;
pub mod filter;
pub mod mutations;
pub mod rate;
pub mod resolve;
pub mod sensors;
pub mod store;
pub mod validate;

use std::sync::Arc;

use ferrolog_storage::StorageError;
use ferrolog_storage::manager::LogManager;

pub use entity::{EntityName, QuotaEntity, QuotaKey};
pub use filter::{Filter, Match};
pub use rate::Sampling;
pub use resolve::{Applied, SensorTags};
pub use store::{
    Alteration, MAX_QUOTA_ENTITIES, QUOTAS_DOCUMENT, QuotaState, QuotaStore, QuotaValues, Quotas,
    Refused,
};
pub use validate::RawEntity;

use crate::stored::Rollback;
use mutations::{MutationBuckets, Mutations};
use sensors::Sensors;

/// What a client's request earned under a quota: the throttle time, and the sensor it was
/// measured by (for the metrics of throttling per user and client id).
#[derive(Debug, Clone, PartialEq)]
pub struct Throttle {
    pub ms: i64,
    pub tags: SensorTags,
}

/// The client quotas in force and the rates measured against them.
#[derive(Debug)]
pub struct ClientQuotas {
    store: QuotaStore,
    produce: Sensors,
    fetch: Sensors,
    request: Sensors,
    connections: Sensors,
    mutations: MutationBuckets,
}

impl ClientQuotas {
    /// Loads the stored quotas (a damaged copy stops startup naming its file and line); rates
    /// are sampled with `sampling`, the controller mutation quota's burst with `controller`.
    pub fn open(
        manager: Arc<LogManager>,
        rollback: Rollback,
        (sampling, controller): (Sampling, Sampling),
    ) -> Result<Self, StorageError> {
        Ok(Self {
            store: QuotaStore::open(manager, rollback)?,
            produce: Sensors::new(sampling, None),
            fetch: Sensors::new(sampling, None),
            // Kafka caps the request quota's throttle at one window.
            request: Sensors::new(sampling, Some(sampling.window_ms)),
            connections: Sensors::new(sampling, Some(sampling.window_ms)),
            mutations: MutationBuckets::new(controller),
        })
    }

    /// The quotas, to list and change.
    pub fn store(&self) -> &QuotaStore {
        &self.store
    }

    /// Records `bytes` produced by `user` (the principal's name) with `client_id`; `None`
    /// when no producer quota applies to it.
    pub fn produced(
        &self,
        user: &str,
        client_id: &str,
        bytes: usize,
        now_ms: i64,
    ) -> Option<Throttle> {
        let state = self.store.snapshot();
        let applied = state.producer_byte_rate.applied(user, client_id)?;
        let ms = self.produce.record(&applied, bytes as f64, now_ms);
        Some(Throttle {
            ms,
            tags: applied.tags,
        })
    }

    /// The most a fetch of `user` with `client_id` may return at once, under its consumer
    /// quota (`None`: no quota applies).
    pub fn fetch_max_bytes(&self, user: &str, client_id: &str) -> Option<f64> {
        let state = self.store.snapshot();
        let applied = state.consumer_byte_rate.applied(user, client_id)?;
        Some(self.fetch.max_value_in_window(applied.limit))
    }

    /// Records `bytes` fetched by `user` with `client_id`; when that earns a throttle, or the
    /// fetch is `throttled_otherwise` (by the request quota), the bytes are taken back out,
    /// since the fetch is then answered empty (as in Kafka).
    pub fn fetched(
        &self,
        user: &str,
        client_id: &str,
        (bytes, throttled_otherwise): (usize, bool),
        now_ms: i64,
    ) -> Option<Throttle> {
        let state = self.store.snapshot();
        let applied = state.consumer_byte_rate.applied(user, client_id)?;
        let ms = self.fetch.record(&applied, bytes as f64, now_ms);
        if ms > 0 || throttled_otherwise {
            self.fetch.unrecord(&applied, bytes as f64, now_ms);
        }
        Some(Throttle {
            ms,
            tags: applied.tags,
        })
    }

    /// A CreateTopics, CreatePartitions or DeleteTopics request's partition changes under the
    /// controller mutation quota of `user` with `client_id`; `strict` for the versions whose
    /// topics are refused once the quota is spent.
    pub fn mutations(&self, user: &str, client_id: &str, strict: bool) -> Mutations<'_> {
        let state = self.store.snapshot();
        let applied = state.controller_mutation_rate.applied(user, client_id);
        self.mutations.request(applied, strict)
    }

    /// Records `time` spent handling a request of `user` with `client_id`, as a percentage of
    /// one thread's second (Kafka's `request_percentage` unit); `None` when no request quota
    /// applies to it.
    pub fn requested(
        &self,
        user: &str,
        client_id: &str,
        time: std::time::Duration,
        now_ms: i64,
    ) -> Option<Throttle> {
        let state = self.store.snapshot();
        let applied = state.request_percentage.applied(user, client_id)?;
        let percent = time.as_secs_f64() * 100.0;
        let ms = self.request.record(&applied, percent, now_ms);
        Some(Throttle {
            ms,
            tags: applied.tags,
        })
    }

    /// Records a connection accepted from `ip`; the time to hold it before closing it
    /// unserved when that would take the address over its `connection_creation_rate` (at
    /// most one window, as Kafka's; the connection is then not counted), else `None`.
    pub fn connected(&self, ip: std::net::IpAddr, now_ms: i64) -> Option<i64> {
        let limit = self.store.snapshot().connection_rate(ip)?;
        let applied = Applied {
            limit,
            tags: SensorTags {
                user: String::new(),
                client_id: ip.to_canonical().to_string(),
            },
        };
        let ms = self.connections.record(&applied, 1.0, now_ms);
        if ms == 0 {
            return None;
        }
        // Not accepted after all: not counted, as Kafka takes it back, so a client retrying
        // gets about its quota's worth through.
        self.connections.unrecord(&applied, 1.0, now_ms);
        Some(ms)
    }
}
