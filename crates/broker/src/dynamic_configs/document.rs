//! The document `ferrolog-broker-configs`: one line per value, `broker <key> <value>` or
//! `default <key> <value>`, key and value `%`-escaped as the other documents' are.

use std::collections::BTreeMap;

use ferrolog_auth::stored::{escape, unescape};
use ferrolog_storage::manager::{Document, LogManager};
use ferrolog_storage::{Result, StorageError};

use super::{BROKER_CONFIGS_DOCUMENT, Scope, Values};

/// The newest copy of the document and its values; a body that does not parse is an error
/// naming its file and line.
pub(super) fn read_document(manager: &LogManager) -> Result<(Document, Values)> {
    let document = manager.documents().read(BROKER_CONFIGS_DOCUMENT)?;
    let values = parse(&document.body).map_err(|(line, reason)| {
        let file = document.source.clone().unwrap_or_default();
        StorageError::Fatal(format!("{}, line {}: {reason}", file.display(), line + 3))
    })?;
    Ok((document, values))
}

/// The topic defaults a node's data directories hold as dynamic broker configs: the cluster
/// default's values with the node's own over them, of the keys that set a topic default
/// (`log.retention.ms`, `log.cleanup.policy`, `message.max.bytes`, ...). For `move-to-kafka`.
pub fn topic_defaults_set(manager: &LogManager) -> Result<BTreeMap<String, String>> {
    let (_, values) = read_document(manager)?;
    let mut merged = values.default;
    merged.extend(values.broker);
    merged.retain(|key, _| ferrolog_storage::manager::sets_topic_default(key));
    Ok(merged)
}

/// The document's body: every value, this broker's then the defaults, each by key.
pub(super) fn render(values: &Values) -> String {
    let scoped = [("broker", &values.broker), ("default", &values.default)];
    scoped
        .iter()
        .flat_map(|(scope, values)| {
            values
                .iter()
                .map(move |(key, value)| format!("{scope} {} {}\n", escape(key), escape(value)))
        })
        .collect()
}

/// The body's values; an error names the body's line (from 0) and what is wrong.
pub(super) fn parse(body: &str) -> std::result::Result<Values, (usize, String)> {
    let mut values = Values::default();
    for (index, line) in body.lines().enumerate() {
        let mut parts = line.split(' ');
        let (Some(scope), Some(key), Some(value), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err((index, "not a scope, a key and a value".to_owned()));
        };
        let scope = match scope {
            "broker" => Scope::Broker,
            "default" => Scope::ClusterDefault,
            other => return Err((index, format!("unknown scope {other:?}"))),
        };
        let (Some(key), Some(value)) = (unescape(key), unescape(value)) else {
            return Err((index, "not escaped as written".to_owned()));
        };
        values.of_scope(scope).insert(key, value);
    }
    Ok(values)
}
