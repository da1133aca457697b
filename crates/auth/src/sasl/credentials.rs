//! Users' SCRAM credentials, kept across restarts and crashes.
//!
//! Kafka keeps them as `UserScramCredentialRecord`s in its metadata log (name, mechanism, salt,
//! StoredKey, ServerKey, iterations); a single node keeps the same fields in the document
//! `ferrolog-scram-credentials` (see [`crate::stored`]), one credential per line:
//!
//! ```text
//! alice SCRAM-SHA-512 8192 <salt> <StoredKey> <ServerKey>
//! ```
//!
//! The binary fields are in base64 and the user name is `%`-escaped as the ACLs' text fields
//! are. Neither the password nor the salted password is kept: they cannot be recovered from
//! what is stored, which is also why a credential cannot be carried to a Kafka cluster (Kafka
//! takes only salted passwords).
//!
//! Threads: a connection authenticating reads the current map without waiting for changes;
//! changes are serialized, stored, and only then published.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ferrolog_storage::StorageError;
use ferrolog_storage::manager::LogManager;

use super::Mechanism;
pub use super::scram::ScramCredential;
use crate::stored::{Rollback, StoredDocument, escape, unescape};

/// The document the credentials are kept in.
pub const CREDENTIALS_DOCUMENT: &str = "ferrolog-scram-credentials";

/// The most credentials the broker keeps (a user has at most one per SCRAM mechanism): each
/// change rewrites the document, and the limit keeps that write small. Kafka has none.
pub const MAX_CREDENTIALS: usize = 100_000;

type Credentials = BTreeMap<(String, Mechanism), ScramCredential>;

/// One change AlterUserScramCredentials asks for, already validated.
#[derive(Clone, Debug)]
pub enum CredentialChange {
    Delete {
        user: String,
        mechanism: Mechanism,
    },
    Upsert {
        user: String,
        mechanism: Mechanism,
        credential: ScramCredential,
    },
}

/// Why credentials were not changed.
#[derive(Debug, thiserror::Error)]
pub enum CredentialChangeError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("the broker keeps at most {MAX_CREDENTIALS} SCRAM credentials")]
    TooMany,
}

/// The credentials in force and their stored copy.
#[derive(Debug)]
pub struct ScramStore {
    document: StoredDocument,
    current: parking_lot::RwLock<Arc<Credentials>>,
}

impl ScramStore {
    /// Loads the stored credentials; a damaged copy stops startup naming its file and line.
    pub fn open(manager: Arc<LogManager>, rollback: Rollback) -> Result<Self, StorageError> {
        let (document, credentials) =
            StoredDocument::open(manager, CREDENTIALS_DOCUMENT, parse, rollback)?;
        Ok(Self {
            document,
            current: parking_lot::RwLock::new(Arc::new(credentials)),
        })
    }

    /// `user`'s credential for `mechanism`, if it has one.
    pub fn credential(&self, user: &str, mechanism: Mechanism) -> Option<ScramCredential> {
        self.current
            .read()
            .get(&(user.to_owned(), mechanism))
            .cloned()
    }

    /// Every user with a credential, and its mechanisms with their iterations.
    pub fn describe(&self) -> BTreeMap<String, Vec<(Mechanism, i32)>> {
        let mut users: BTreeMap<String, Vec<(Mechanism, i32)>> = BTreeMap::new();
        for ((user, mechanism), credential) in self.current.read().iter() {
            users
                .entry(user.clone())
                .or_default()
                .push((*mechanism, credential.iterations));
        }
        users
    }

    /// Makes the changes `plan` chooses, seeing whether a user has a credential for a
    /// mechanism, all together: they are stored, or none is. Changes are serialized, so what
    /// `plan` sees is what it changes.
    pub fn apply(
        &self,
        plan: impl FnOnce(&dyn Fn(&str, Mechanism) -> bool) -> Vec<CredentialChange>,
    ) -> Result<(), CredentialChangeError> {
        let mut change = self.document.change();
        let mut credentials = Credentials::clone(&self.current.read());
        let held = credentials.len();
        let changes =
            plan(&|user, mechanism| credentials.contains_key(&(user.to_owned(), mechanism)));
        if changes.is_empty() {
            return Ok(());
        }
        for each in changes {
            match each {
                CredentialChange::Delete { user, mechanism } => {
                    credentials.remove(&(user, mechanism));
                }
                CredentialChange::Upsert {
                    user,
                    mechanism,
                    credential,
                } => {
                    credentials.insert((user, mechanism), credential);
                }
            }
        }
        if credentials.len() > MAX_CREDENTIALS && credentials.len() > held {
            return Err(CredentialChangeError::TooMany);
        }
        change.store(format(&credentials))?;
        *self.current.write() = Arc::new(credentials);
        Ok(())
    }
}

/// The document body for `credentials`.
fn format(credentials: &Credentials) -> String {
    let mut text = String::new();
    for ((user, mechanism), credential) in credentials {
        text.push_str(&format!(
            "{} {} {} {} {} {}\n",
            escape(user),
            mechanism,
            credential.iterations,
            BASE64.encode(&credential.salt),
            BASE64.encode(&credential.stored_key),
            BASE64.encode(&credential.server_key),
        ));
    }
    text
}

/// The credentials of a document body, or the line (counting from 1) that does not parse.
fn parse(body: &str) -> Result<Credentials, (usize, String)> {
    let mut credentials = Credentials::new();
    for (index, line) in body.lines().enumerate() {
        let number = index + 1;
        let fields: Vec<&str> = line.split(' ').collect();
        let [user, mechanism, iterations, salt, stored_key, server_key] = fields[..] else {
            return Err((
                number,
                "expected 6 fields separated by spaces: user, mechanism, iterations, salt, StoredKey, ServerKey".into(),
            ));
        };
        let user = unescape(user)
            .filter(|user| !user.is_empty())
            .ok_or_else(|| (number, format!("{user:?} is not a user name")))?;
        let mechanism = Mechanism::from_name(mechanism)
            .filter(|mechanism| mechanism.scram().is_some())
            .ok_or_else(|| (number, format!("{mechanism:?} is not a SCRAM mechanism")))?;
        let Some(hash) = mechanism.scram() else {
            unreachable!("filtered to SCRAM mechanisms above");
        };
        let iterations = iterations
            .parse::<i32>()
            .ok()
            .filter(|count| *count > 0)
            .ok_or_else(|| (number, format!("{iterations:?} is not an iteration count")))?;
        let bytes = |what: &str, text: &str, exact: Option<usize>| {
            BASE64
                .decode(text)
                .ok()
                .filter(|bytes| exact.is_none_or(|len| bytes.len() == len))
                .ok_or_else(|| (number, format!("{text:?} is not a {what}")))
        };
        let credential = ScramCredential {
            salt: bytes("salt", salt, None)?,
            stored_key: bytes("StoredKey", stored_key, Some(hash.output_bytes()))?,
            server_key: bytes("ServerKey", server_key, Some(hash.output_bytes()))?,
            iterations,
        };
        if credentials.insert((user, mechanism), credential).is_some() {
            return Err((
                number,
                "a second credential for one user and mechanism".into(),
            ));
        }
    }
    Ok(credentials)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sasl::scram::ScramHash;

    fn credential(hash: ScramHash, seed: u8) -> ScramCredential {
        ScramCredential::from_salted_password(hash, vec![seed; 20], &[seed; 32], 8192)
    }

    #[test]
    fn a_body_reads_back_as_written() {
        let credentials = Credentials::from([
            (
                ("alice".to_owned(), Mechanism::ScramSha256),
                credential(ScramHash::Sha256, 1),
            ),
            (
                ("odd user%".to_owned(), Mechanism::ScramSha512),
                credential(ScramHash::Sha512, 2),
            ),
        ]);
        let body = format(&credentials);
        assert!(body.starts_with("alice SCRAM-SHA-256 8192 AQEBAQEBAQEBAQEBAQEBAQEBAQE= "));
        assert!(body.contains("\nodd%20user%25 SCRAM-SHA-512 8192 "));
        assert_eq!(parse(&body).unwrap(), credentials);
    }

    #[test]
    fn a_bad_line_is_named() {
        let good = format(&Credentials::from([(
            ("alice".to_owned(), Mechanism::ScramSha256),
            credential(ScramHash::Sha256, 1),
        )]));
        let key32 = BASE64.encode([0u8; 32]);
        for (body, line, reason) in [
            ("alice SCRAM-SHA-256 8192 AA==\n".to_owned(), 1, "6 fields"),
            (
                format!("alice PLAIN 8192 AA== {key32} {key32}\n"),
                1,
                "not a SCRAM",
            ),
            (
                format!("alice SCRAM-SHA-256 -1 AA== {key32} {key32}\n"),
                1,
                "iteration",
            ),
            (
                format!("alice SCRAM-SHA-256 8192 A {key32} {key32}\n"),
                1,
                "salt",
            ),
            (
                format!("alice SCRAM-SHA-512 8192 AA== {key32} {key32}\n"),
                1,
                "StoredKey",
            ),
            (
                format!("%2 SCRAM-SHA-256 8192 AA== {key32} {key32}\n"),
                1,
                "user name",
            ),
            (format!("{good}{good}"), 2, "a second credential"),
        ] {
            let (at, why) = parse(&body).unwrap_err();
            assert_eq!(at, line, "{body:?}");
            assert!(why.contains(reason), "{body:?}: {why}");
        }
    }
}
