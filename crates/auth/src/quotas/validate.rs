//! AlterClientQuotas' checks of one entry, as Kafka's controller makes them
//! (`ClientQuotaControlManager`), with its messages: the entity's types and names, the
//! combination of types, then each key and value. All refusals are `INVALID_REQUEST`.
//!
//! One difference: Kafka lets NaN through every check (each comparison with it is false);
//! here it is refused, since a rate bounded by NaN cannot be enforced.

use std::collections::BTreeMap;

use super::entity::{CLIENT_ID, EntityName, IP, QuotaEntity, QuotaKey, USER};

/// What one entry asks of one key: a value to set, or `None` to remove it.
pub type Ops = BTreeMap<String, Option<f64>>;

/// An entity as a request names it: each type with its name (`None`, the default). A type
/// named twice keeps its last name, as Kafka reads the pairs into a map.
pub type RawEntity = BTreeMap<String, Option<String>>;

/// The [`RawEntity`] of the wire's (type, name) pairs.
pub fn raw_entity(parts: &[(String, Option<String>)]) -> RawEntity {
    parts.iter().cloned().collect()
}

/// The entity a request names, checked as Kafka checks it.
pub fn entity_of(named: &RawEntity) -> Result<QuotaEntity, String> {
    if named.is_empty() {
        return Err("Invalid empty client quota entity".into());
    }
    let mut entity = QuotaEntity::default();
    for (kind, name) in named {
        let name = name.as_deref();
        let slot = match kind.as_str() {
            USER => &mut entity.user,
            CLIENT_ID => &mut entity.client_id,
            IP => &mut entity.ip,
            other => return Err(format!("Unhandled client quota entity type: {other}")),
        };
        if name == Some("") {
            return Err(format!("Empty {kind} not supported"));
        }
        *slot = Some(EntityName::from_wire(name));
    }
    if entity.ip.is_some() {
        if entity.user.is_some() || entity.client_id.is_some() {
            return Err(
                "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
                    .into(),
            );
        }
        if let Some(EntityName::Named(address)) = &entity.ip
            && !resolvable(address)
        {
            return Err(format!("{address} is not a valid IP or resolvable host."));
        }
    }
    Ok(entity)
}

/// Whether `host` is an IP address or a name that resolves, as Java's `InetAddress.getByName`
/// accepts.
fn resolvable(host: &str) -> bool {
    use std::net::ToSocketAddrs as _;
    host.parse::<std::net::IpAddr>().is_ok()
        || (host, 0)
            .to_socket_addrs()
            .is_ok_and(|mut addresses| addresses.next().is_some())
}

/// Checks each value to set for `entity`: its key applies to the entity's kind, and its value
/// is positive, within its type and whole where the type is an integer.
pub fn check_values(entity: &QuotaEntity, ops: &Ops) -> Result<(), String> {
    for (key, value) in ops {
        if let Some(value) = value {
            check_value(entity, key, *value)?;
        }
    }
    Ok(())
}

fn check_value(entity: &QuotaEntity, key: &str, value: f64) -> Result<(), String> {
    let Some(quota) = QuotaKey::named(key).filter(|quota| quota.is_ip_key() == entity.is_ip())
    else {
        return Err(format!("Invalid configuration key {key}"));
    };
    if value.is_nan() {
        return Err(format!("Quota {key} must be a number"));
    }
    if value <= 0.0 {
        return Err(format!("Quota {key} must be greater than 0"));
    }
    let largest = match quota {
        QuotaKey::RequestPercentage | QuotaKey::ControllerMutationRate => return Ok(()),
        QuotaKey::ConnectionCreationRate => (f64::from(i32::MAX), "an INT"),
        QuotaKey::ProducerByteRate | QuotaKey::ConsumerByteRate => (i64::MAX as f64, "a LONG"),
    };
    if value > largest.0 {
        return Err(format!(
            "Proposed value for {key} is too large for {}.",
            largest.1
        ));
    }
    if (value % 1.0).abs() > 1e-6 {
        return Err(format!("{key} cannot be a fractional value."));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(pairs: &[(&str, Option<&str>)]) -> RawEntity {
        let pairs: Vec<(String, Option<String>)> = pairs
            .iter()
            .map(|(kind, name)| ((*kind).to_owned(), name.map(str::to_owned)))
            .collect();
        raw_entity(&pairs)
    }

    #[test]
    fn entities_are_checked_as_kafka_checks_them() {
        assert_eq!(
            entity_of(&RawEntity::new()).unwrap_err(),
            "Invalid empty client quota entity"
        );
        assert_eq!(
            entity_of(&parts(&[("group", Some("g"))])).unwrap_err(),
            "Unhandled client quota entity type: group"
        );
        assert_eq!(
            entity_of(&parts(&[("user", Some(""))])).unwrap_err(),
            "Empty user not supported"
        );
        assert!(
            entity_of(&parts(&[("ip", Some("1.2.3.4")), ("user", None)]))
                .unwrap_err()
                .contains("shouldnot be combined")
        );
        assert_eq!(
            entity_of(&parts(&[("ip", Some("not an address"))])).unwrap_err(),
            "not an address is not a valid IP or resolvable host."
        );
        let entity = entity_of(&parts(&[("user", Some("alice")), ("client-id", None)])).unwrap();
        assert_eq!(entity.user, Some(EntityName::Named("alice".into())));
        assert_eq!(entity.client_id, Some(EntityName::Default));
        // A type named twice keeps its last name.
        let entity = entity_of(&parts(&[("user", Some("a")), ("user", Some("b"))])).unwrap();
        assert_eq!(entity.user, Some(EntityName::Named("b".into())));
    }

    #[test]
    fn values_are_checked_as_kafka_checks_them() {
        let user = entity_of(&parts(&[("user", Some("alice"))])).unwrap();
        let ip = entity_of(&parts(&[("ip", Some("10.0.0.1"))])).unwrap();
        let check = |entity: &QuotaEntity, key: &str, value: f64| {
            check_values(entity, &Ops::from([(key.to_owned(), Some(value))]))
        };
        assert!(check(&user, "producer_byte_rate", 1024.0).is_ok());
        assert!(check(&user, "request_percentage", 12.5).is_ok());
        assert!(check(&user, "request_percentage", f64::INFINITY).is_ok());
        assert!(check(&ip, "connection_creation_rate", 10.0).is_ok());
        assert_eq!(
            check(&user, "connection_creation_rate", 10.0).unwrap_err(),
            "Invalid configuration key connection_creation_rate"
        );
        assert_eq!(
            check(&ip, "producer_byte_rate", 10.0).unwrap_err(),
            "Invalid configuration key producer_byte_rate"
        );
        assert_eq!(
            check(&user, "producer_byte_rate", 0.0).unwrap_err(),
            "Quota producer_byte_rate must be greater than 0"
        );
        assert_eq!(
            check(&user, "consumer_byte_rate", 10.5).unwrap_err(),
            "consumer_byte_rate cannot be a fractional value."
        );
        assert_eq!(
            check(&ip, "connection_creation_rate", 3e9).unwrap_err(),
            "Proposed value for connection_creation_rate is too large for an INT."
        );
        assert_eq!(
            check(&user, "producer_byte_rate", 1e19).unwrap_err(),
            "Proposed value for producer_byte_rate is too large for a LONG."
        );
        assert!(check(&user, "producer_byte_rate", f64::NAN).is_err());
        // Removing any key, even one that is not a quota, is no error.
        let removal = Ops::from([("not_a_quota".to_owned(), None)]);
        assert!(check_values(&user, &removal).is_ok());
    }
}
