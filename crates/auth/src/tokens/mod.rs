//! Delegation tokens (KIP-48): credentials a client authenticated otherwise hands to its
//! workers, which authenticate with SCRAM as the token's owner (the token's id as the user
//! name, its HMAC as the password, and the `tokenauth=true` extension). Kafka keeps tokens in
//! its metadata log; a single node keeps them in the document `ferrolog-delegation-tokens`
//! ([`crate::stored`]), written before a change is in force. As in Kafka, the HMAC itself is
//! never stored: it is computed again from `delegation.token.secret.key`, so a token outlives a
//! restart only under the same key.
//!
//! The SCRAM credentials a token authenticates with are derived from its HMAC the first time
//! it is used (salted as a client salts a password, 4,096 iterations, as Kafka) and kept while
//! the token lives.

pub mod rules;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ferrolog_storage::StorageError;
use ferrolog_storage::manager::LogManager;
use parking_lot::{Mutex, RwLock};

use crate::sasl::{Mechanism, ScramCredential};
use crate::stored::{Rollback, StoredDocument, escape, unescape};
pub use rules::{Expiry, Lifetimes, Token};

/// The document the tokens are kept in.
pub const TOKENS_DOCUMENT: &str = "ferrolog-delegation-tokens";
/// Iterations of a token's SCRAM credentials: Kafka's minimum, as Kafka uses.
const TOKEN_ITERATIONS: u32 = 4096;
/// Tokens removed by one sweep at most, as Kafka's controller.
const MAX_SWEPT: usize = 1000;

/// The token settings.
#[derive(Clone)]
pub struct TokenConfig {
    /// `delegation.token.secret.key`: tokens are served only when it is set (and not empty).
    pub secret_key: Option<String>,
    pub lifetimes: Lifetimes,
    /// `delegation.token.expiry.check.interval.ms`: how often expired tokens are removed
    /// (1 hour).
    pub check_interval_ms: i64,
    /// `ferrolog.max.delegation.tokens`: the most tokens kept (10,000; Kafka: unlimited).
    pub max_tokens: usize,
}

impl Default for TokenConfig {
    fn default() -> Self {
        Self {
            secret_key: None,
            lifetimes: Lifetimes::default(),
            check_interval_ms: 3_600_000,
            max_tokens: 10_000,
        }
    }
}

impl std::fmt::Debug for TokenConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenConfig")
            .field("enabled", &self.secret_key.is_some())
            .field("lifetimes", &self.lifetimes)
            .field("check_interval_ms", &self.check_interval_ms)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

/// Why a change was not made.
#[derive(Debug, thiserror::Error)]
pub enum TokenRefusal {
    /// One of Kafka's error codes for tokens.
    #[error("refused with error code {0}")]
    Code(i16),
    #[error("the broker keeps at most {0} delegation tokens (ferrolog.max.delegation.tokens)")]
    TooMany(usize),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// The tokens by id, and their ids by HMAC (what Renew and Expire name a token by).
#[derive(Clone, Default)]
struct Held {
    tokens: BTreeMap<String, Token>,
    by_hmac: HashMap<Vec<u8>, String>,
}

impl Held {
    fn new(tokens: BTreeMap<String, Token>, hmac: impl Fn(&str) -> Vec<u8>) -> Self {
        let by_hmac = tokens.keys().map(|id| (hmac(id), id.clone())).collect();
        Self { tokens, by_hmac }
    }

    fn remove(&mut self, id: &str) -> Option<Token> {
        self.by_hmac.retain(|_, held| held != id);
        self.tokens.remove(id)
    }
}

/// The tokens in force and their stored copy; the one owner of both.
pub struct DelegationTokens {
    config: TokenConfig,
    document: StoredDocument,
    clock: Arc<dyn ferrolog_storage::Clock>,
    held: RwLock<Held>,
    /// The SCRAM credentials of the tokens used so far, by token id and mechanism.
    credentials: Mutex<HashMap<(String, Mechanism), ScramCredential>>,
    /// When expired tokens were last removed.
    last_sweep_ms: Mutex<i64>,
}

impl std::fmt::Debug for DelegationTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelegationTokens")
            .field("config", &self.config)
            .field("tokens", &self.held.read().tokens.len())
            .finish_non_exhaustive()
    }
}

impl DelegationTokens {
    /// Loads the stored tokens; a damaged copy stops startup naming its file and line.
    pub fn open(
        manager: Arc<LogManager>,
        config: TokenConfig,
        rollback: Rollback,
    ) -> Result<Self, StorageError> {
        let clock = Arc::clone(manager.clock());
        let (document, tokens) = StoredDocument::open(manager, TOKENS_DOCUMENT, parse, rollback)?;
        let key = config.secret_key.clone().unwrap_or_default();
        let held = Held::new(tokens, |id| rules::hmac(&key, id));
        Ok(Self {
            config,
            document,
            clock,
            held: RwLock::new(held),
            credentials: Mutex::new(HashMap::new()),
            last_sweep_ms: Mutex::new(0),
        })
    }

    /// Whether tokens are served (`delegation.token.secret.key` is set).
    pub fn enabled(&self) -> bool {
        self.secret_key().is_some()
    }

    fn secret_key(&self) -> Option<&str> {
        self.config
            .secret_key
            .as_deref()
            .filter(|key| !key.is_empty())
    }

    /// A token's HMAC under this broker's key.
    pub fn hmac(&self, token_id: &str) -> Vec<u8> {
        rules::hmac(self.secret_key().unwrap_or_default(), token_id)
    }

    /// Creates a token at `now` for (owner, requester, renewers); the caller has checked that
    /// tokens are enabled and the requester may ask.
    pub fn create(
        &self,
        principals: (String, String, Vec<String>),
        requested_max_lifetime_ms: i64,
        now: i64,
    ) -> Result<Token, TokenRefusal> {
        let mut change = self.document.change();
        let mut held = self.held.read().clone();
        if held.tokens.len() >= self.config.max_tokens {
            return Err(TokenRefusal::TooMany(self.config.max_tokens));
        }
        let id = loop {
            let id = ferrolog_storage::manager::TopicId::random().to_string();
            if !held.tokens.contains_key(&id) {
                break id;
            }
        };
        let token = Token::new(
            id,
            principals,
            now,
            requested_max_lifetime_ms,
            self.config.lifetimes,
        );
        held.tokens.insert(token.id.clone(), token.clone());
        held.by_hmac.insert(self.hmac(&token.id), token.id.clone());
        change.store(format(&held.tokens))?;
        *self.held.write() = held;
        Ok(token)
    }

    /// RenewDelegationToken: the new expiry.
    pub fn renew(
        &self,
        hmac: &[u8],
        principal: &str,
        period_ms: i64,
        now: i64,
    ) -> Result<i64, TokenRefusal> {
        self.change(hmac, |token| {
            let expiry = token.renewed(principal, now, period_ms, self.config.lifetimes)?;
            Ok((expiry, Some(expiry)))
        })
    }

    /// ExpireDelegationToken: the new expiry (now, when the token is removed).
    pub fn expire(
        &self,
        hmac: &[u8],
        principal: &str,
        period_ms: i64,
        now: i64,
    ) -> Result<i64, TokenRefusal> {
        self.change(hmac, |token| {
            match token.expiring(principal, now, period_ms)? {
                Expiry::Removed(at) => Ok((at, None)),
                Expiry::At(at) => Ok((at, Some(at))),
            }
        })
    }

    /// Applies `decide` to the token of `hmac`: (the answer, the token's new expiry or `None`
    /// to remove it), stored before it is in force.
    fn change(
        &self,
        hmac: &[u8],
        decide: impl FnOnce(&Token) -> Result<(i64, Option<i64>), i16>,
    ) -> Result<i64, TokenRefusal> {
        let mut change = self.document.change();
        let mut held = self.held.read().clone();
        let not_found = TokenRefusal::Code(rules::DELEGATION_TOKEN_NOT_FOUND);
        let id = held.by_hmac.get(hmac).cloned().ok_or(not_found)?;
        let Some(token) = held.tokens.get_mut(&id) else {
            return Err(TokenRefusal::Code(rules::DELEGATION_TOKEN_NOT_FOUND));
        };
        let (answer, expiry) = decide(token).map_err(TokenRefusal::Code)?;
        match expiry {
            Some(expiry) => token.expiry_ms = expiry,
            None => {
                held.remove(&id);
            }
        }
        change.store(format(&held.tokens))?;
        *self.held.write() = held;
        if expiry.is_none() {
            self.forget_credentials(&[id]);
        }
        Ok(answer)
    }

    /// Every token, by id.
    pub fn all(&self) -> Vec<Token> {
        self.held.read().tokens.values().cloned().collect()
    }

    /// Removes the tokens expired at `now` (at most 1,000), once a check interval; returns
    /// how many went.
    pub fn sweep(&self, now: i64) -> Result<usize, StorageError> {
        {
            let mut last = self.last_sweep_ms.lock();
            if now.saturating_sub(*last) < self.config.check_interval_ms {
                return Ok(0);
            }
            *last = now;
        }
        let mut change = self.document.change();
        let mut held = self.held.read().clone();
        let expired: Vec<String> = held
            .tokens
            .values()
            .filter(|token| token.expired(now))
            .take(MAX_SWEPT)
            .map(|token| token.id.clone())
            .collect();
        if expired.is_empty() {
            return Ok(0);
        }
        for id in &expired {
            if let Some(token) = held.remove(id) {
                tracing::info!(token = %id, owner = %token.owner, "delegation token expired");
            }
        }
        change.store(format(&held.tokens))?;
        *self.held.write() = held;
        self.forget_credentials(&expired);
        Ok(expired.len())
    }

    fn forget_credentials(&self, ids: &[String]) {
        self.credentials
            .lock()
            .retain(|(id, _), _| !ids.contains(id));
    }

    /// For a SCRAM exchange with `tokenauth=true`: the credential of token `id` for
    /// `mechanism` and the name of its owner, who the connection authenticates as. An
    /// unknown or expired token has none.
    pub fn scram_credential(
        &self,
        id: &str,
        mechanism: Mechanism,
    ) -> Option<(ScramCredential, String)> {
        let hash = mechanism.scram()?;
        let owner = self.live_owner(id)?;
        let key = (id.to_owned(), mechanism);
        if let Some(known) = self.credentials.lock().get(&key) {
            return Some((known.clone(), owner));
        }
        // Derived outside the locks: PBKDF2 takes milliseconds.
        let password = BASE64.encode(self.hmac(id));
        let salt: [u8; 16] = rand::random();
        let salted = salted_password(hash, &password, &salt);
        let credential = ScramCredential::from_salted_password(
            hash,
            salt.to_vec(),
            &salted,
            TOKEN_ITERATIONS as i32,
        );
        let mut credentials = self.credentials.lock();
        // Kept only if the token is still there: one removed meanwhile must not leave its
        // credential behind.
        let owner = self.live_owner(id)?;
        credentials.insert(key, credential.clone());
        Some((credential, owner))
    }

    /// The name of the owner of token `id`, while it is in force.
    fn live_owner(&self, id: &str) -> Option<String> {
        if !self.enabled() {
            return None;
        }
        let now = self.clock.now_ms();
        let held = self.held.read();
        let token = held.tokens.get(id).filter(|token| !token.expired(now))?;
        Some(
            token
                .owner
                .split_once(':')
                .map_or(token.owner.clone(), |(_, name)| name.to_owned()),
        )
    }
}

/// PBKDF2 of `password` with the mechanism's HMAC: SCRAM's `Hi`.
fn salted_password(hash: crate::sasl::scram::ScramHash, password: &str, salt: &[u8]) -> Vec<u8> {
    use crate::sasl::scram::ScramHash;
    match hash {
        ScramHash::Sha256 => pbkdf2::pbkdf2_hmac_array::<sha2::Sha256, 32>(
            password.as_bytes(),
            salt,
            TOKEN_ITERATIONS,
        )
        .to_vec(),
        ScramHash::Sha512 => pbkdf2::pbkdf2_hmac_array::<sha2::Sha512, 64>(
            password.as_bytes(),
            salt,
            TOKEN_ITERATIONS,
        )
        .to_vec(),
    }
}

/// The document body: one line per token, `id owner requester issue max expiry [renewer...]`,
/// each field escaped.
fn format(tokens: &BTreeMap<String, Token>) -> String {
    let mut text = String::new();
    for token in tokens.values() {
        let mut fields = vec![
            escape(&token.id),
            escape(&token.owner),
            escape(&token.requester),
            token.issue_ms.to_string(),
            token.max_ms.to_string(),
            token.expiry_ms.to_string(),
        ];
        fields.extend(token.renewers.iter().map(|renewer| escape(renewer)));
        text.push_str(&fields.join(" "));
        text.push('\n');
    }
    text
}

/// The tokens of a document body, or the line (counting from 1) that does not parse.
fn parse(body: &str) -> Result<BTreeMap<String, Token>, (usize, String)> {
    let mut tokens = BTreeMap::new();
    for (index, line) in body.lines().enumerate() {
        let number = index + 1;
        let fields: Vec<&str> = line.split(' ').collect();
        if fields.len() < 6 {
            return Err((
                number,
                "expected id, owner, requester, issue, max and expiry times, and renewers, separated by spaces".into(),
            ));
        }
        let text = |field: &str| {
            unescape(field)
                .filter(|text| !text.is_empty())
                .ok_or_else(|| (number, format!("{field:?} is not a token id or principal")))
        };
        let time = |field: &str| {
            field
                .parse::<i64>()
                .map_err(|_| (number, format!("{field:?} is not a time")))
        };
        let token = Token {
            id: text(fields[0])?,
            owner: text(fields[1])?,
            requester: text(fields[2])?,
            issue_ms: time(fields[3])?,
            max_ms: time(fields[4])?,
            expiry_ms: time(fields[5])?,
            renewers: fields[6..]
                .iter()
                .map(|field| text(field))
                .collect::<Result<_, _>>()?,
        };
        if tokens.insert(token.id.clone(), token).is_some() {
            return Err((number, "a second token of one id".into()));
        }
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests;
