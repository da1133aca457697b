//! TLS listeners' key and trust stores changed at run time, as Kafka changes them: through
//! `listener.name.<listener>.ssl.keystore.*` and `...ssl.truststore.*` on this broker (never
//! at the cluster default, where each broker's certificate cannot go). The stores are loaded
//! from the settings in force as the listener loaded them at startup (`serve` hands over how,
//! [`TlsListener::rebuild`]), checked against the current certificate (the same subject, no
//! alternative name dropped, unless `ssl.allow.dn.changes` or `ssl.allow.san.changes`), and
//! only then the change is kept and served to new connections. Setting a key to the value it
//! has loads the stores again: the way to serve a key store file replaced in place.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrolog_auth::tls::{AllowedChanges, TlsSettings};

/// The store keys Kafka changes under a listener's prefix, and only there.
pub const STORE_KEYS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.truststore.certificates",
];

/// Builds a listener's TLS settings from the broker's settings in force, or says why not.
pub type Rebuild =
    Box<dyn Fn(&BTreeMap<String, String>) -> Result<TlsSettings, String> + Send + Sync>;

/// A TLS listener of this broker, as `serve` made it.
pub struct TlsListener {
    /// Its name as the keys write it (lower case).
    pub name: String,
    /// The settings its connections are served with.
    pub tls: Arc<TlsSettings>,
    pub rebuild: Rebuild,
}

impl std::fmt::Debug for TlsListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsListener")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The listener whose store `key` names (`listener.name.<listener>.ssl.keystore.location`).
pub fn listener_of(key: &str) -> Option<&str> {
    let rest = key.strip_prefix("listener.name.")?;
    let (listener, base) = rest.split_once('.')?;
    (!listener.is_empty() && STORE_KEYS.contains(&base)).then_some(listener)
}

/// What a certificate replaced on `listener` may change: `ssl.allow.dn.changes` and
/// `ssl.allow.san.changes`, the listener's own first (both false unless set).
pub fn allowed_changes(settings: &BTreeMap<String, String>, listener: &str) -> AllowedChanges {
    let flag = |key: &str| {
        settings
            .get(&format!("listener.name.{listener}.{key}"))
            .or_else(|| settings.get(key))
            .is_some_and(|value| value.trim().eq_ignore_ascii_case("true"))
    };
    AllowedChanges {
        dn: flag("ssl.allow.dn.changes"),
        san: flag("ssl.allow.san.changes"),
    }
}

/// The listeners whose stores `keys` change, by name, each once.
pub fn touched<'k>(keys: impl Iterator<Item = &'k str>) -> Vec<String> {
    let mut listeners: Vec<String> = keys.filter_map(listener_of).map(str::to_owned).collect();
    listeners.sort();
    listeners.dedup();
    listeners
}

/// Loads the stores of each listener in `names` from `settings` and checks each may replace
/// the one served; the listeners and their new settings, or Kafka's refusal.
pub fn prepare(
    listeners: &[TlsListener],
    names: &[String],
    settings: &BTreeMap<String, String>,
) -> Result<Vec<(Arc<TlsSettings>, TlsSettings)>, String> {
    let mut prepared = Vec::new();
    for name in names {
        let Some(listener) = listeners.iter().find(|listener| listener.name == *name) else {
            return Err(format!(
                "Cannot add SSL keystore to an existing listener for which no keystore was configured: {name} is not a TLS listener of this broker"
            ));
        };
        let failed = |error: String| {
            format!("Validation of dynamic config update of SSLFactory failed: {error}")
        };
        let next = (listener.rebuild)(settings).map_err(failed)?;
        listener
            .tls
            .check_replacement(&next, allowed_changes(settings, name))
            .map_err(failed)?;
        prepared.push((Arc::clone(&listener.tls), next));
    }
    Ok(prepared)
}

/// Serves each prepared listener's new stores (checked by [`prepare`]).
pub fn serve(prepared: Vec<(Arc<TlsSettings>, TlsSettings)>) {
    let unchecked = AllowedChanges {
        dn: true,
        san: true,
    };
    for (tls, next) in prepared {
        if let Err(error) = tls.replace_stores(&next, unchecked) {
            tracing::error!(error, "a listener's TLS stores could not be replaced");
        }
    }
}
