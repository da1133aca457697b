//! Kafka's rules for delegation tokens (KIP-48), as pure functions of a token, the principal
//! asking and the time: how long a new token lives, who may renew or expire it and until
//! when, and who may see it. Times are milliseconds since the epoch.

use hmac::{Hmac, Mac};
use sha2::Sha512;

/// Kafka's error codes for tokens.
pub const DELEGATION_TOKEN_NOT_FOUND: i16 = 62;
pub const DELEGATION_TOKEN_OWNER_MISMATCH: i16 = 63;
pub const DELEGATION_TOKEN_EXPIRED: i16 = 66;

/// The token settings, Kafka's keys and defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lifetimes {
    /// `delegation.token.max.lifetime.ms`: the longest a token lives, renewals included
    /// (7 days).
    pub max_lifetime_ms: i64,
    /// `delegation.token.expiry.time.ms`: how long a token lives before it must be renewed,
    /// and the most one renewal adds (24 hours).
    pub expiry_time_ms: i64,
}

impl Default for Lifetimes {
    fn default() -> Self {
        Self {
            max_lifetime_ms: 604_800_000,
            expiry_time_ms: 86_400_000,
        }
    }
}

/// One token, as Kafka's `DelegationTokenRecord` holds it; principals as `Type:name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub id: String,
    pub owner: String,
    pub requester: String,
    pub renewers: Vec<String>,
    pub issue_ms: i64,
    pub max_ms: i64,
    pub expiry_ms: i64,
}

impl Token {
    /// A token created at `now` for `owner` by `requester`: it lives `max_lifetime_ms` (the
    /// server's when the request asks for none, or for more), and expires after
    /// `expiry_time_ms` unless renewed.
    pub fn new(
        id: String,
        (owner, requester, renewers): (String, String, Vec<String>),
        now: i64,
        requested_max_lifetime_ms: i64,
        lifetimes: Lifetimes,
    ) -> Self {
        let lifetime = if requested_max_lifetime_ms > 0 {
            lifetimes.max_lifetime_ms.min(requested_max_lifetime_ms)
        } else {
            lifetimes.max_lifetime_ms
        };
        let max_ms = now.saturating_add(lifetime);
        let token = Self {
            id,
            owner,
            requester,
            renewers,
            issue_ms: now,
            max_ms,
            expiry_ms: max_ms.min(now.saturating_add(lifetimes.expiry_time_ms)),
        };
        debug_assert!(token.issue_ms <= token.expiry_ms && token.expiry_ms <= token.max_ms);
        token
    }

    /// Whether the token is past its expiry or its end of life.
    pub fn expired(&self, now: i64) -> bool {
        self.max_ms < now || self.expiry_ms < now
    }

    /// The owner or a renewer: who may renew and expire the token.
    fn may_renew(&self, principal: &str) -> bool {
        self.owner == principal || self.renewers.iter().any(|renewer| renewer == principal)
    }

    /// Kafka's `ownerOrRenewer`, which a description's filters and visibility use: the owner,
    /// the requester or a renewer.
    pub fn concerns(&self, principal: &str) -> bool {
        self.may_renew(principal) || self.requester == principal
    }

    /// RenewDelegationToken by `principal` at `now`, asking for `period_ms` more: the new
    /// expiry, at most the server's expiry time from now and never past the token's end of
    /// life.
    pub fn renewed(
        &self,
        principal: &str,
        now: i64,
        period_ms: i64,
        lifetimes: Lifetimes,
    ) -> Result<i64, i16> {
        if self.expired(now) {
            return Err(DELEGATION_TOKEN_EXPIRED);
        }
        if !self.may_renew(principal) {
            return Err(DELEGATION_TOKEN_OWNER_MISMATCH);
        }
        let period = if period_ms > 0 {
            lifetimes.expiry_time_ms.min(period_ms)
        } else {
            lifetimes.expiry_time_ms
        };
        Ok(self.max_ms.min(now.saturating_add(period)))
    }

    /// ExpireDelegationToken by `principal` at `now` with `period_ms`: a negative period
    /// removes the token now ([`Expiry::Removed`]); another sets its expiry that far ahead,
    /// never past its end of life.
    pub fn expiring(&self, principal: &str, now: i64, period_ms: i64) -> Result<Expiry, i16> {
        if !self.may_renew(principal) {
            return Err(DELEGATION_TOKEN_OWNER_MISMATCH);
        }
        if period_ms < 0 {
            return Ok(Expiry::Removed(now));
        }
        if self.expired(now) {
            return Err(DELEGATION_TOKEN_EXPIRED);
        }
        Ok(Expiry::At(self.max_ms.min(now.saturating_add(period_ms))))
    }
}

/// What ExpireDelegationToken does to a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// Gone at once; the answer's expiry is this time.
    Removed(i64),
    /// It expires at this time.
    At(i64),
}

/// A token's HMAC, its password: HMAC-SHA512 of its id keyed with
/// `delegation.token.secret.key`, as Kafka computes it.
pub fn hmac(secret_key: &str, token_id: &str) -> Vec<u8> {
    let mut mac = <Hmac<Sha512> as Mac>::new_from_slice(secret_key.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
    mac.update(token_id.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;

    fn token(now: i64, asked: i64) -> Token {
        Token::new(
            "id".to_owned(),
            (
                "User:alice".to_owned(),
                "User:admin".to_owned(),
                vec!["User:bob".to_owned()],
            ),
            now,
            asked,
            Lifetimes::default(),
        )
    }

    #[test]
    fn a_new_token_lives_what_was_asked_within_the_servers_bounds() {
        let asked_too_much = token(1000, 30 * 24 * HOUR);
        assert_eq!(asked_too_much.max_ms - 1000, 7 * 24 * HOUR);
        assert_eq!(asked_too_much.expiry_ms - 1000, 24 * HOUR);
        let an_hour = token(1000, HOUR);
        assert_eq!(
            (an_hour.expiry_ms, an_hour.max_ms),
            (1000 + HOUR, 1000 + HOUR)
        );
        assert_eq!(token(1000, -1).max_ms - 1000, 7 * 24 * HOUR);
    }

    #[test]
    fn renewals_are_the_owners_and_renewers_and_never_pass_the_default_or_the_end_of_life() {
        let t = token(0, 0);
        let lifetimes = Lifetimes::default();
        assert_eq!(
            t.renewed("User:bob", 10, 2 * 24 * HOUR, lifetimes),
            Ok(10 + 24 * HOUR)
        );
        assert_eq!(
            t.renewed("User:alice", 10, 0, lifetimes),
            Ok(10 + 24 * HOUR)
        );
        assert_eq!(t.renewed("User:alice", 10, HOUR, lifetimes), Ok(10 + HOUR));
        // The requester may not.
        assert_eq!(
            t.renewed("User:admin", 10, HOUR, lifetimes),
            Err(DELEGATION_TOKEN_OWNER_MISMATCH)
        );
        let late = t.max_ms - 10;
        let within_life = Token {
            expiry_ms: late,
            ..t.clone()
        };
        assert_eq!(
            within_life.renewed("User:bob", late - 5, HOUR, lifetimes),
            Ok(t.max_ms)
        );
        assert_eq!(
            t.renewed("User:bob", t.expiry_ms + 1, HOUR, lifetimes),
            Err(DELEGATION_TOKEN_EXPIRED)
        );
    }

    #[test]
    fn expiring_checks_the_principal_before_the_expiry() {
        let t = token(0, 0);
        let after = t.expiry_ms + 1;
        assert_eq!(
            t.expiring("User:carol", after, 0),
            Err(DELEGATION_TOKEN_OWNER_MISMATCH)
        );
        assert_eq!(
            t.expiring("User:alice", after, 0),
            Err(DELEGATION_TOKEN_EXPIRED)
        );
        assert_eq!(
            t.expiring("User:alice", after, -1),
            Ok(Expiry::Removed(after))
        );
        assert_eq!(t.expiring("User:bob", 5, 0), Ok(Expiry::At(5)));
        assert_eq!(t.expiring("User:bob", 5, HOUR), Ok(Expiry::At(5 + HOUR)));
        assert!(t.concerns("User:admin") && !t.concerns("User:carol"));
    }

    #[test]
    fn the_hmac_is_kafkas() {
        // HMAC-SHA512("secret", "token") as `openssl dgst -sha512 -hmac secret` computes it.
        let mac = hmac("secret", "token");
        assert_eq!(mac.len(), 64);
        assert_eq!(mac[..4], [0xa4, 0x86, 0x6a, 0xa8]);
        assert_eq!(mac[60..], [0x47, 0xd3, 0x88, 0x4f]);
    }
}
