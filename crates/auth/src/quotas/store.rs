//! The client quotas in force, kept across restarts as Kafka keeps them in its metadata log
//! (`ClientQuotaRecord`s): here the document `ferrolog-client-quotas` (see [`crate::stored`]),
//! one entity per line, its parts then its values:
//!
//! ```text
//! user=alice client-id producer_byte_rate=1048576 consumer_byte_rate=2097152
//! client-id=reporting request_percentage=50
//! ip=10.0.0.7 connection_creation_rate=20
//! ```
//!
//! A bare type (`client-id` above) is its default entity; names are `%`-escaped as the other
//! documents' are. An entity whose last quota is removed is forgotten, as Kafka forgets it.
//!
//! Threads: the enforcement reads a snapshot without waiting for changes; changes are
//! serialized, stored, and only then published.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrolog_storage::StorageError;
use ferrolog_storage::manager::LogManager;

use super::entity::{CLIENT_ID, EntityName, IP, QuotaEntity, QuotaKey, USER};
use super::resolve::KeyQuotas;
use super::validate::{Ops, RawEntity, check_values, entity_of};
use crate::stored::{Rollback, StoredDocument, escape, unescape};

/// The document the client quotas are kept in.
pub const QUOTAS_DOCUMENT: &str = "ferrolog-client-quotas";

/// The most quota changes one AlterClientQuotas request may make, as Kafka's controller
/// bounds the records of one operation; beyond, every entry is refused.
pub const MAX_CHANGES_PER_REQUEST: usize = 10_000;

/// The most entities the broker keeps quotas for: each change rewrites the document, and the
/// limit keeps that write small. Kafka has none.
pub const MAX_QUOTA_ENTITIES: usize = 100_000;

/// Each entity's quotas.
pub type QuotaValues = BTreeMap<QuotaKey, f64>;

/// Every entity's quotas.
pub type Quotas = BTreeMap<QuotaEntity, QuotaValues>;

/// One entry of an AlterClientQuotas request: its entity, and each key with the value to set
/// (`None`: remove it), in request order.
#[derive(Debug, Clone)]
pub struct Alteration {
    pub entity: RawEntity,
    pub ops: Vec<(String, Option<f64>)>,
}

/// Why an entry was not applied: Kafka's error code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub code: i16,
    pub message: String,
}

/// What became of each distinct entity an AlterClientQuotas request names, in request order.
pub type Outcomes = Vec<(RawEntity, Result<(), Refused>)>;

/// The quotas in force, and each client key's by level, as the enforcement looks them up.
#[derive(Debug, Default)]
pub struct QuotaState {
    pub quotas: Quotas,
    pub producer_byte_rate: KeyQuotas,
    pub consumer_byte_rate: KeyQuotas,
    pub request_percentage: KeyQuotas,
    pub controller_mutation_rate: KeyQuotas,
    /// `connection_creation_rate` by IP address, and for the default IP.
    ip_rates: std::collections::HashMap<std::net::IpAddr, f64>,
    default_ip_rate: Option<f64>,
}

impl QuotaState {
    /// The connection creation rate an address is under: its own, else the default IP's.
    /// (An entity naming a host rather than an address is kept, and not enforced.)
    pub fn connection_rate(&self, ip: std::net::IpAddr) -> Option<f64> {
        self.ip_rates
            .get(&ip.to_canonical())
            .copied()
            .or(self.default_ip_rate)
    }

    fn of(quotas: Quotas) -> Self {
        let mut ip_rates = std::collections::HashMap::new();
        let mut default_ip_rate = None;
        for (entity, values) in &quotas {
            let (Some(ip), Some(rate)) =
                (&entity.ip, values.get(&QuotaKey::ConnectionCreationRate))
            else {
                continue;
            };
            match ip {
                EntityName::Default => default_ip_rate = Some(*rate),
                EntityName::Named(address) => {
                    if let Ok(address) = address.parse::<std::net::IpAddr>() {
                        ip_rates.insert(address.to_canonical(), *rate);
                    }
                }
            }
        }
        Self {
            ip_rates,
            default_ip_rate,
            producer_byte_rate: KeyQuotas::of(&quotas, QuotaKey::ProducerByteRate),
            consumer_byte_rate: KeyQuotas::of(&quotas, QuotaKey::ConsumerByteRate),
            request_percentage: KeyQuotas::of(&quotas, QuotaKey::RequestPercentage),
            controller_mutation_rate: KeyQuotas::of(&quotas, QuotaKey::ControllerMutationRate),
            quotas,
        }
    }
}

/// The quotas in force and their stored copy.
#[derive(Debug)]
pub struct QuotaStore {
    document: StoredDocument,
    current: parking_lot::RwLock<Arc<QuotaState>>,
}

impl QuotaStore {
    /// Loads the stored quotas; a damaged copy stops startup naming its file and line.
    pub fn open(manager: Arc<LogManager>, rollback: Rollback) -> Result<Self, StorageError> {
        let (document, quotas) = StoredDocument::open(manager, QUOTAS_DOCUMENT, parse, rollback)?;
        Ok(Self {
            document,
            current: parking_lot::RwLock::new(Arc::new(QuotaState::of(quotas))),
        })
    }

    /// The quotas in force now.
    pub fn snapshot(&self) -> Arc<QuotaState> {
        Arc::clone(&self.current.read())
    }

    /// Applies each alteration that passes Kafka's checks, all together (stored, or none
    /// is), unless `validate_only`; returns each distinct entity's outcome in request order.
    /// As in Kafka, an entity named twice, or a key named twice for one entity, is refused
    /// (`Ignoring duplicate entity ...`), though the first naming's changes are made.
    pub fn alter(
        &self,
        alterations: Vec<Alteration>,
        validate_only: bool,
    ) -> Result<Outcomes, StorageError> {
        let changes: usize = alterations.iter().map(|a| a.ops.len()).sum();
        if changes > MAX_CHANGES_PER_REQUEST {
            let refusal = Refused {
                code: ferrolog_protocol::errors::POLICY_VIOLATION,
                message: "Unable to perform excessively large batch operation.".into(),
            };
            return Ok(alterations
                .into_iter()
                .map(|alteration| (alteration.entity, Err(refusal.clone())))
                .collect());
        }
        let mut change = self.document.change();
        let before = self.snapshot();
        let mut quotas = Quotas::clone(&before.quotas);
        let mut outcomes = Outcomes::new();
        let mut seen: std::collections::HashMap<RawEntity, usize> =
            std::collections::HashMap::new();
        for alteration in alterations {
            let duplicate = Err(invalid(format!(
                "Ignoring duplicate entity {}",
                kafka_text(&alteration.entity)
            )));
            if let Some(&at) = seen.get(&alteration.entity) {
                outcomes[at].1 = duplicate;
                continue;
            }
            seen.insert(alteration.entity.clone(), outcomes.len());
            let mut ops = Ops::new();
            let mut repeated = false;
            for (key, value) in &alteration.ops {
                repeated |= ops.insert(key.clone(), *value).is_some();
            }
            let outcome = if repeated {
                duplicate
            } else {
                entity_of(&alteration.entity)
                    .and_then(|entity| check_values(&entity, &ops).map(|()| entity))
                    .map(|entity| apply(&mut quotas, entity, &ops))
                    .map_err(invalid)
            };
            outcomes.push((alteration.entity, outcome));
        }
        if quotas.len() > MAX_QUOTA_ENTITIES && quotas.len() > before.quotas.len() {
            let refusal = Refused {
                code: ferrolog_protocol::errors::POLICY_VIOLATION,
                message: format!(
                    "the broker keeps client quotas for at most {MAX_QUOTA_ENTITIES} entities"
                ),
            };
            for outcome in &mut outcomes {
                if outcome.1.is_ok() {
                    outcome.1 = Err(refusal.clone());
                }
            }
            return Ok(outcomes);
        }
        if !validate_only && quotas != before.quotas {
            change.store(format(&quotas))?;
            *self.current.write() = Arc::new(QuotaState::of(quotas));
        }
        Ok(outcomes)
    }
}

fn invalid(message: String) -> Refused {
    Refused {
        code: ferrolog_protocol::errors::INVALID_REQUEST,
        message,
    }
}

/// Sets and removes what `ops` asks of `entity`; an entity left without quotas is forgotten.
fn apply(quotas: &mut Quotas, entity: QuotaEntity, ops: &Ops) {
    let values = quotas.entry(entity.clone()).or_default();
    for (key, value) in ops {
        let Some(key) = QuotaKey::named(key) else {
            continue; // removing a key that is no quota: nothing to do, as in Kafka
        };
        match value {
            Some(value) => values.insert(key, *value),
            None => values.remove(&key),
        };
    }
    if values.is_empty() {
        quotas.remove(&entity);
    }
}

/// The entity as Kafka's `ClientQuotaEntity#toString` writes it: its map's iteration order
/// puts a client id before a user, and an ip after both (other types last).
fn kafka_text(entity: &RawEntity) -> String {
    let rank = |kind: &str| match kind {
        CLIENT_ID => 0,
        USER => 1,
        IP => 2,
        _ => 3,
    };
    let mut parts: Vec<(&String, &Option<String>)> = entity.iter().collect();
    parts.sort_by_key(|(kind, _)| rank(kind));
    let parts: Vec<String> = parts
        .into_iter()
        .map(|(kind, name)| format!("{kind}={}", name.as_deref().unwrap_or("null")))
        .collect();
    format!("ClientQuotaEntity(entries={{{}}})", parts.join(", "))
}

/// The document body for `quotas`.
fn format(quotas: &Quotas) -> String {
    let mut text = String::new();
    for (entity, values) in quotas {
        let mut tokens: Vec<String> = entity
            .parts()
            .into_iter()
            .map(|(kind, name)| match name {
                EntityName::Default => kind.to_owned(),
                EntityName::Named(name) => format!("{kind}={}", escape(name)),
            })
            .collect();
        tokens.extend(values.iter().map(|(key, value)| format!("{key}={value}")));
        text.push_str(&tokens.join(" "));
        text.push('\n');
    }
    text
}

/// The quotas of a document body, or the line (counting from 1) that does not parse.
pub fn parse(body: &str) -> Result<Quotas, (usize, String)> {
    let mut quotas = Quotas::new();
    for (index, line) in body.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (entity, values) = parse_line(line).map_err(|reason| (number, reason))?;
        if quotas.insert(entity, values).is_some() {
            return Err((number, "the entity is listed twice".into()));
        }
    }
    Ok(quotas)
}

fn parse_line(line: &str) -> Result<(QuotaEntity, QuotaValues), String> {
    let mut entity = QuotaEntity::default();
    let mut values = QuotaValues::new();
    for token in line.split(' ') {
        let (kind, name) = match token.split_once('=') {
            Some((kind, name)) => (kind, Some(name)),
            None => (token, None),
        };
        let slot = match kind {
            USER => &mut entity.user,
            CLIENT_ID => &mut entity.client_id,
            IP => &mut entity.ip,
            key => {
                let quota = QuotaKey::named(key).ok_or_else(|| format!("unknown field {key:?}"))?;
                let value: f64 = name
                    .and_then(|value| value.parse().ok())
                    .filter(|value: &f64| *value > 0.0)
                    .ok_or_else(|| format!("{key} needs a positive number"))?;
                values.insert(quota, value);
                continue;
            }
        };
        let name = match name {
            None => EntityName::Default,
            Some(escaped) => EntityName::Named(
                unescape(escaped).ok_or_else(|| format!("bad escape in {escaped:?}"))?,
            ),
        };
        *slot = Some(name);
    }
    let kinds_ok = match (&entity.ip, &entity.user, &entity.client_id) {
        (Some(_), None, None) => values.keys().all(|key| key.is_ip_key()),
        (None, Some(_), _) | (None, _, Some(_)) => values.keys().all(|key| !key.is_ip_key()),
        _ => false,
    };
    if !kinds_ok || values.is_empty() {
        return Err("expected a user, a client id or both, or an ip, and their quotas".into());
    }
    Ok((entity, values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_reads_back_what_it_wrote() {
        let mut quotas = Quotas::new();
        quotas.insert(
            QuotaEntity {
                user: Some(EntityName::Named("alice smith%".into())),
                client_id: Some(EntityName::Default),
                ip: None,
            },
            QuotaValues::from([
                (QuotaKey::ProducerByteRate, 1_048_576.0),
                (QuotaKey::RequestPercentage, 12.5),
            ]),
        );
        quotas.insert(
            QuotaEntity {
                ip: Some(EntityName::Named("10.0.0.7".into())),
                ..QuotaEntity::default()
            },
            QuotaValues::from([(QuotaKey::ConnectionCreationRate, 20.0)]),
        );
        let text = format(&quotas);
        assert!(text.contains("user=alice%20smith%25 client-id producer_byte_rate=1048576"));
        assert_eq!(parse(&text).unwrap(), quotas);
    }

    #[test]
    fn a_damaged_line_is_named() {
        assert_eq!(parse("user=a producer_byte_rate=x\n").unwrap_err().0, 1);
        assert_eq!(parse("\nuser=a bogus=1\n").unwrap_err().0, 2);
        assert_eq!(parse("ip=1.2.3.4 producer_byte_rate=5\n").unwrap_err().0, 1);
        assert_eq!(parse("user=a\n").unwrap_err().0, 1);
    }

    #[test]
    fn kafka_writes_a_client_id_before_a_user() {
        let entity = RawEntity::from([
            ("user".to_owned(), Some("alice".to_owned())),
            ("client-id".to_owned(), None),
        ]);
        assert_eq!(
            kafka_text(&entity),
            "ClientQuotaEntity(entries={client-id=null, user=alice})"
        );
    }
}
