//! SASL/PLAIN (RFC 4616) as Kafka's PLAIN server checks it: the token is
//! `[authzid] NUL authcid NUL passwd`, the password is compared in constant time with the
//! user's in the listener's JAAS configuration (`user_<name>="<password>"`), and the principal
//! is `User:<authcid>`. Failures carry Kafka's messages, which clients show their users.

use std::collections::BTreeMap;
use std::fmt;

/// The users a PLAIN listener accepts and their passwords, from its JAAS configuration.
/// Never printed: its `Debug` names the users only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PlainUsers {
    passwords: BTreeMap<String, String>,
}

impl fmt::Debug for PlainUsers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlainUsers")
            .field("users", &self.passwords.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl PlainUsers {
    pub fn new(passwords: BTreeMap<String, String>) -> Self {
        Self { passwords }
    }

    pub fn is_empty(&self) -> bool {
        self.passwords.is_empty()
    }

    /// Checks one PLAIN token; the user name on success, Kafka's message on failure.
    pub fn authenticate(&self, token: &[u8]) -> Result<String, String> {
        // Java decodes the token as UTF-8 replacing what is not; so does this.
        let text = String::from_utf8_lossy(token);
        let tokens: Vec<&str> = text.splitn(4, '\0').collect();
        let [authorization_id, username, password] = tokens[..] else {
            return Err(format!(
                "Invalid SASL/PLAIN response: expected 3 tokens, got {}",
                tokens.len()
            ));
        };
        if username.is_empty() {
            return Err("Authentication failed: username not specified".into());
        }
        if password.is_empty() {
            return Err("Authentication failed: password not specified".into());
        }
        let matches = self
            .passwords
            .get(username)
            .is_some_and(|expected| constant_time_eq(expected.as_bytes(), password.as_bytes()));
        if !matches {
            return Err("Authentication failed: Invalid username or password".into());
        }
        if !authorization_id.is_empty() && authorization_id != username {
            return Err(
                "Authentication failed: Client requested an authorization id that is different from username"
                    .into(),
            );
        }
        Ok(username.to_owned())
    }
}

/// Whether `a` equals `b`, taking the same time whatever the first difference (the time still
/// tells the lengths apart, as Kafka's comparison does).
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> PlainUsers {
        PlainUsers::new(BTreeMap::from([
            ("alice".to_owned(), "alice-secret".to_owned()),
            ("admin".to_owned(), "admin-secret".to_owned()),
        ]))
    }

    #[test]
    fn the_right_password_authenticates_the_user() {
        assert_eq!(
            users().authenticate(b"\0alice\0alice-secret"),
            Ok("alice".into())
        );
        assert_eq!(
            users().authenticate(b"alice\0alice\0alice-secret"),
            Ok("alice".into())
        );
    }

    #[test]
    fn every_wrong_token_is_refused_with_kafkas_message() {
        let invalid = Err("Authentication failed: Invalid username or password".to_owned());
        assert_eq!(users().authenticate(b"\0alice\0admin-secret"), invalid);
        assert_eq!(users().authenticate(b"\0alice\0alice-secreT"), invalid);
        assert_eq!(users().authenticate(b"\0alice\0alice-secret "), invalid);
        assert_eq!(users().authenticate(b"\0mallory\0alice-secret"), invalid);
        assert_eq!(
            users().authenticate(b"\0\0alice-secret"),
            Err("Authentication failed: username not specified".into())
        );
        assert_eq!(
            users().authenticate(b"\0alice\0"),
            Err("Authentication failed: password not specified".into())
        );
        assert_eq!(
            users().authenticate(b"admin\0alice\0alice-secret"),
            Err("Authentication failed: Client requested an authorization id that is different from username".into())
        );
        for (token, count) in [
            (&b""[..], 1),
            (b"alice-secret", 1),
            (b"\0alice", 2),
            (b"\0alice\0alice-secret\0", 4),
            (b"\0alice\0alice-secret\0more\0", 4),
        ] {
            assert_eq!(
                users().authenticate(token),
                Err(format!(
                    "Invalid SASL/PLAIN response: expected 3 tokens, got {count}"
                ))
            );
        }
    }

    #[test]
    fn no_password_appears_in_debug_output() {
        let shown = format!("{:?}", users());
        assert!(
            shown.contains("alice") && !shown.contains("secret"),
            "{shown}"
        );
    }
}
