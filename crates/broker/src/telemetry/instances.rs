//! The client instances the broker knows (KIP-714) and the metrics each last pushed: what each
//! was told, when it last asked and pushed, and its series for the Prometheus endpoint. Kafka's
//! rules, driven by the caller's clock:
//!
//! - an instance asks for its subscription at most once an interval, unless its last push was
//!   refused for a stale subscription or a compression it should not have used;
//! - it pushes once an interval, or at any time after asking again (clients jitter their pushes
//!   by half an interval either way), and a last time when it terminates;
//! - an instance not heard from for three intervals (at least a minute) is forgotten, and with
//!   it its series; beyond [`Limits::max_instances`] the least recently heard from is.
//!
//! Only the metrics an instance was asked for are kept, and what the series may hold in all is
//! bounded ([`Limits::max_retained_bytes`]): a push that would pass it is refused with
//! THROTTLING_QUOTA_EXCEEDED, and the client pushes again an interval later. Silent instances
//! are looked for at most once a second as clients ask and push, and at every scrape.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::otlp::{Kind, Point};
use super::subscriptions::{ClientAttributes, Resolved};
use crate::errors;

/// How much the instances may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Kafka's cache of client instances holds 16,384.
    pub max_instances: usize,
    /// `telemetry.max.bytes`: the largest push, compressed and decompressed.
    pub max_push_bytes: usize,
    /// `ferrolog.telemetry.max.retained.bytes`: the series of every instance together.
    pub max_retained_bytes: usize,
}

/// An instance is forgotten after three intervals without a word, and never sooner than this.
const MIN_EXPIRY: Duration = Duration::from_secs(60);

/// What the broker told one client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscribed {
    pub instance: Uuid,
    pub subscription_id: i32,
    pub resolved: Resolved,
}

/// A push as checked before its payload is read.
#[derive(Debug, Clone, Copy)]
pub struct Push {
    pub instance: Uuid,
    pub subscription_id: i32,
    pub terminating: bool,
}

type SeriesKey = (String, Vec<(String, String)>);

#[derive(Debug)]
struct Instance {
    attributes: ClientAttributes,
    told: Subscribed,
    /// The generation of the subscriptions `told` was resolved from.
    generation: u64,
    last_get: Option<Instant>,
    last_push: Option<Instant>,
    last_error: i16,
    terminating: bool,
    heard: Instant,
    recency: u64,
    series: BTreeMap<SeriesKey, (Kind, f64)>,
    retained: usize,
}

impl Instance {
    fn interval(&self) -> Duration {
        Duration::from_millis(self.told.resolved.interval_ms.max(0) as u64)
    }

    fn expired(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.heard) >= (self.interval() * 3).max(MIN_EXPIRY)
    }
}

/// Every known client instance; the one owner of their state.
#[derive(Debug)]
pub struct ClientInstances {
    limits: Limits,
    entries: HashMap<Uuid, Instance>,
    /// Instances by when they were last heard from, oldest first.
    by_recency: BTreeMap<u64, Uuid>,
    next_recency: u64,
    /// The bytes of every instance's series together.
    retained: usize,
    /// When silent instances were last looked for.
    last_sweep: Option<Instant>,
}

/// A push that passed the checks made before its payload is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    pub instance: Uuid,
    /// The metric name prefixes it was asked for (`*`: all); nothing else is kept.
    pub metrics: Vec<String>,
    /// The bytes its series may take, what the other instances leave.
    pub budget: usize,
}

/// Silent instances are looked for at most this often as clients ask and push.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

impl ClientInstances {
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            entries: HashMap::new(),
            by_recency: BTreeMap::new(),
            next_recency: 0,
            retained: 0,
            last_sweep: None,
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The instance `id` (a new one for the nil id), told again what `resolve` says when the
    /// subscriptions changed since (`generation`), and heard from now.
    fn instance(
        &mut self,
        now: Instant,
        id: Uuid,
        attributes: impl FnOnce(Uuid) -> ClientAttributes,
        (generation, resolve): (u64, &dyn Fn(&ClientAttributes) -> Resolved),
    ) -> &mut Instance {
        if self
            .last_sweep
            .is_none_or(|last| now.saturating_duration_since(last) >= SWEEP_EVERY)
        {
            self.sweep(now);
        }
        let mut id = id;
        while id.is_nil() {
            let fresh = Uuid::from_bytes(ferrolog_storage::manager::TopicId::random().0);
            if !self.entries.contains_key(&fresh) {
                id = fresh;
            }
        }
        if self
            .entries
            .get(&id)
            .is_some_and(|known| known.expired(now))
        {
            self.forget(id);
        }
        if !self.entries.contains_key(&id)
            && self.entries.len() >= self.limits.max_instances
            && let Some((_, oldest)) = self.by_recency.pop_first()
        {
            self.forget(oldest);
        }
        let recency = self.next_recency;
        self.next_recency += 1;
        let instance = self.entries.entry(id).or_insert_with(|| {
            let attributes = attributes(id);
            let told = told(id, resolve(&attributes));
            Instance {
                attributes,
                told,
                generation,
                last_get: None,
                last_push: None,
                last_error: errors::NONE,
                terminating: false,
                heard: now,
                recency,
                series: BTreeMap::new(),
                retained: 0,
            }
        });
        if instance.generation != generation {
            // Told anew, with a clean slate: it may ask and push at once.
            instance.told = told(id, resolve(&instance.attributes));
            instance.generation = generation;
            instance.last_get = None;
            instance.last_push = None;
        }
        self.by_recency.remove(&instance.recency);
        self.by_recency.insert(recency, id);
        instance.recency = recency;
        instance.heard = now;
        instance
    }

    fn forget(&mut self, id: Uuid) {
        if let Some(gone) = self.entries.remove(&id) {
            self.by_recency.remove(&gone.recency);
            self.retained -= gone.retained;
        }
        self.check_invariants();
    }

    /// Forgets every instance silent for too long.
    fn sweep(&mut self, now: Instant) {
        self.last_sweep = Some(now);
        let expired: Vec<Uuid> = self
            .entries
            .iter()
            .filter(|(_, instance)| instance.expired(now))
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            self.forget(id);
        }
    }

    /// The recency index names every instance once, and `retained` is their bytes' sum.
    fn check_invariants(&self) {
        debug_assert_eq!(self.by_recency.len(), self.entries.len());
        debug_assert_eq!(
            self.retained,
            self.entries
                .values()
                .map(|instance| instance.retained)
                .sum::<usize>()
        );
    }

    /// GetTelemetrySubscriptions: what instance `id` (nil: a new instance) is asked for, or
    /// THROTTLING_QUOTA_EXCEEDED when it asks again within its interval.
    pub fn get_subscriptions(
        &mut self,
        now: Instant,
        id: Uuid,
        attributes: impl FnOnce(Uuid) -> ClientAttributes,
        subscriptions: (u64, &dyn Fn(&ClientAttributes) -> Resolved),
    ) -> Result<Subscribed, i16> {
        let instance = self.instance(now, id, attributes, subscriptions);
        let last = instance.last_get.max(instance.last_push);
        let stale = [
            errors::UNKNOWN_SUBSCRIPTION_ID,
            errors::UNSUPPORTED_COMPRESSION_TYPE,
        ]
        .contains(&instance.last_error);
        if !stale
            && last.is_some_and(|last| now.saturating_duration_since(last) < instance.interval())
        {
            instance.last_error = errors::THROTTLING_QUOTA_EXCEEDED;
            return Err(errors::THROTTLING_QUOTA_EXCEEDED);
        }
        instance.last_get = Some(now);
        instance.last_error = errors::NONE;
        Ok(instance.told.clone())
    }

    /// PushTelemetry's checks before its payload is read, in Kafka's order: a valid instance
    /// id, not terminated before, within its rate, of the subscription it was told. The
    /// payload is read outside the instances' lock, then handed to [`Self::complete_push`].
    pub fn admit_push(
        &mut self,
        now: Instant,
        push: Push,
        attributes: impl FnOnce(Uuid) -> ClientAttributes,
        subscriptions: (u64, &dyn Fn(&ClientAttributes) -> Resolved),
    ) -> Result<Admitted, i16> {
        if push.instance.is_nil() || push.instance == Uuid::from_u128(1) {
            return Err(errors::INVALID_REQUEST);
        }
        let instance = self.instance(now, push.instance, attributes, subscriptions);
        let checked = (|| {
            if instance.terminating {
                return Err(errors::INVALID_REQUEST);
            }
            let asked_since = instance.last_get > instance.last_push;
            let waited = instance
                .last_push
                .is_none_or(|last| now.saturating_duration_since(last) >= instance.interval());
            if !(push.terminating || asked_since || waited) {
                return Err(errors::THROTTLING_QUOTA_EXCEEDED);
            }
            instance.last_push = Some(now);
            if push.subscription_id != instance.told.subscription_id {
                return Err(errors::UNKNOWN_SUBSCRIPTION_ID);
            }
            Ok(())
        })();
        // Kafka takes the push's flag whatever its answer: a push after the terminating one is
        // refused and clears it.
        instance.terminating = push.terminating;
        if let Err(code) = checked {
            instance.last_error = code;
            return Err(code);
        }
        let metrics = instance.told.resolved.metrics.clone();
        let own = instance.retained;
        let others = self.retained - own;
        Ok(Admitted {
            instance: push.instance,
            metrics,
            budget: self.limits.max_retained_bytes.saturating_sub(others),
        })
    }

    /// The rest of an admitted push: its points, or the payload's own refusal, kept as the
    /// instance's series if they fit what the other instances leave. Answers the error code.
    /// An instance forgotten meanwhile keeps nothing.
    pub fn complete_push(&mut self, id: Uuid, read: Result<Vec<Point>, i16>) -> i16 {
        let max_retained = self.limits.max_retained_bytes;
        let Self {
            entries, retained, ..
        } = self;
        let Some(instance) = entries.get_mut(&id) else {
            return read.err().unwrap_or(errors::NONE);
        };
        let code = read.and_then(|points| {
            let series = series(&instance.series, points, &instance.attributes);
            let bytes = series_bytes(&series);
            let others = *retained - instance.retained;
            if others + bytes > max_retained {
                return Err(errors::THROTTLING_QUOTA_EXCEEDED);
            }
            instance.series = series;
            instance.retained = bytes;
            *retained = others + bytes;
            Ok(())
        });
        instance.last_error = code.err().unwrap_or(errors::NONE);
        let answer = instance.last_error;
        self.check_invariants();
        answer
    }

    /// Forgets the instances not heard from in time, and hands each remaining series to
    /// `each` as (metric name, kind, labels, value).
    pub fn for_each_series(
        &mut self,
        now: Instant,
        mut each: impl FnMut(&str, Kind, &[(String, String)], f64),
    ) {
        self.sweep(now);
        for instance in self.entries.values() {
            for ((name, labels), (kind, value)) in &instance.series {
                each(name, *kind, labels, *value);
            }
        }
    }

    /// Bytes the series hold now.
    pub fn retained_bytes(&self) -> usize {
        self.retained
    }
}

fn told(instance: Uuid, resolved: Resolved) -> Subscribed {
    Subscribed {
        instance,
        subscription_id: super::subscriptions::subscription_id(&resolved, instance),
        resolved,
    }
}

/// The series after a push of `points`: each labelled with who pushed it, a delta added to the
/// total it had. A series the push left out is dropped.
fn series(
    before: &BTreeMap<SeriesKey, (Kind, f64)>,
    points: Vec<Point>,
    client: &ClientAttributes,
) -> BTreeMap<SeriesKey, (Kind, f64)> {
    let mut after = BTreeMap::new();
    for point in points {
        let mut labels: Vec<(String, String)> = super::subscriptions::ATTRIBUTES[..4]
            .iter()
            .zip(client.iter())
            .map(|(name, value)| ((*name).to_owned(), value.clone()))
            .collect();
        labels.extend(point.labels);
        let key = (point.name, labels);
        let value = match (point.kind, before.get(&key)) {
            (Kind::Delta, Some((Kind::Delta, total))) => total + point.value,
            _ => point.value,
        };
        after.insert(key, (point.kind, value));
    }
    after
}

fn series_bytes(series: &BTreeMap<SeriesKey, (Kind, f64)>) -> usize {
    series
        .keys()
        .map(|(name, labels)| super::otlp::point_bytes(name, labels))
        .sum()
}

#[cfg(test)]
mod tests;
