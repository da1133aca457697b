//! The server side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), with the message
//! forms Kafka accepts: a client-first message `n,[a=authzid],n=name,r=nonce[,ext=value...]`
//! (no channel binding), a server-first `r=nonce,s=salt,i=iterations`, a client-final
//! `c=...,r=nonce,p=proof` and a server-final `v=signature`.
//!
//! The server holds only what Kafka's metadata holds per user and mechanism (salt, StoredKey,
//! ServerKey, iterations), never the password: it checks that the hash of the key the proof
//! reveals is the StoredKey, compared in constant time.
//!
//! A failure is [`Refusal::Generic`] where Kafka answers its generic "invalid credentials"
//! message, and [`Refusal::Told`] where Kafka tells the client why. As in Kafka, a user
//! without credentials is refused at the first message (with the generic message).
//!
//! A message longer than [`MAX_MESSAGE_BYTES`] is refused: the exchange keeps the first
//! messages until the last arrives, and real clients send about a hundred bytes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

use super::plain::constant_time_eq;

/// The longest SCRAM message taken (Kafka sets no limit of its own).
pub const MAX_MESSAGE_BYTES: usize = 4096;

/// Iterations Kafka accepts for a SCRAM credential (`ScramMechanism`): 4,096 to 16,384.
pub const MIN_ITERATIONS: i32 = 4096;
pub const MAX_ITERATIONS: i32 = 16384;

/// The hash of a SCRAM mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramHash {
    Sha256,
    Sha512,
}

impl ScramHash {
    pub fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => keyed::<Hmac<Sha256>>(key, data),
            ScramHash::Sha512 => keyed::<Hmac<Sha512>>(key, data),
        }
    }

    pub fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => Sha256::digest(data).to_vec(),
            ScramHash::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// The bytes of one hash.
    pub fn output_bytes(self) -> usize {
        match self {
            ScramHash::Sha256 => 32,
            ScramHash::Sha512 => 64,
        }
    }
}

fn keyed<M: Mac + hmac::digest::KeyInit>(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length.
    let mut mac = <M as hmac::digest::KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// One user's credential for one mechanism, as Kafka keeps it (`UserScramCredentialRecord`).
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

impl std::fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramCredential")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl ScramCredential {
    /// The credential a client's salted password makes (what AlterUserScramCredentials sends):
    /// StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword,
    /// "Server Key"). The salted password itself is not kept.
    pub fn from_salted_password(
        hash: ScramHash,
        salt: Vec<u8>,
        salted_password: &[u8],
        iterations: i32,
    ) -> Self {
        let client_key = hash.hmac(salted_password, b"Client Key");
        Self {
            salt,
            stored_key: hash.hash(&client_key),
            server_key: hash.hmac(salted_password, b"Server Key"),
            iterations,
        }
    }
}

/// Why an exchange failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Kafka answers its generic message, which does not say why.
    Generic,
    /// Kafka tells the client this message.
    Told(String),
}

/// What the server answers a client message with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The server-first message; the client's final message is due next.
    Challenge(Vec<u8>),
    /// Authenticated as `username` (a delegation token's owner when `token`); the server-final
    /// message proves the server knew the key.
    Authenticated {
        username: String,
        token: bool,
        server_final: Vec<u8>,
    },
}

/// Who a client-first message names: a user, or, with the extension `tokenauth=true`, a
/// delegation token by its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named<'a> {
    User(&'a str),
    Token(&'a str),
}

/// One SCRAM exchange on the server side.
#[derive(Debug)]
pub struct ScramServer {
    hash: ScramHash,
    state: State,
}

#[derive(Debug)]
enum State {
    AwaitingClientFirst,
    AwaitingClientFinal {
        username: String,
        token: bool,
        credential: ScramCredential,
        client_first_bare: String,
        server_first: String,
        nonce: String,
    },
    Finished,
}

impl ScramServer {
    pub fn new(hash: ScramHash) -> Self {
        Self {
            hash,
            state: State::AwaitingClientFirst,
        }
    }

    /// Takes the client's next message. `credential_of` looks up who the message names: its
    /// credential and the user it authenticates as (a token's owner); `server_nonce` is this
    /// exchange's random part of the nonce (printable, without commas).
    pub fn step(
        &mut self,
        message: &[u8],
        credential_of: impl FnOnce(Named<'_>) -> Option<(ScramCredential, String)>,
        server_nonce: &str,
    ) -> Result<Step, Refusal> {
        let state = std::mem::replace(&mut self.state, State::Finished);
        if message.len() > MAX_MESSAGE_BYTES {
            return Err(Refusal::Generic);
        }
        match state {
            State::AwaitingClientFirst => {
                let first = parse_client_first(message).ok_or(Refusal::Generic)?;
                let named = username_of(first.sasl_name).ok_or(Refusal::Generic)?;
                let token = first.token_authentication;
                // Kafka: "Authentication failed: Invalid user credentials" (or "Invalid
                // tokenId"), told generically.
                let (credential, username) = credential_of(if token {
                    Named::Token(&named)
                } else {
                    Named::User(&named)
                })
                .ok_or(Refusal::Generic)?;
                if !first.authorization_id.is_empty() && first.authorization_id != named {
                    return Err(Refusal::Told(
                        "Authentication failed: Client requested an authorization id that is different from username".into(),
                    ));
                }
                if credential.iterations < MIN_ITERATIONS {
                    return Err(Refusal::Generic);
                }
                let nonce = format!("{}{server_nonce}", first.nonce);
                let server_first = format!(
                    "r={nonce},s={},i={}",
                    BASE64.encode(&credential.salt),
                    credential.iterations
                );
                self.state = State::AwaitingClientFinal {
                    username,
                    token,
                    credential,
                    client_first_bare: first.bare.to_owned(),
                    server_first: server_first.clone(),
                    nonce,
                };
                Ok(Step::Challenge(server_first.into_bytes()))
            }
            State::AwaitingClientFinal {
                username,
                token,
                credential,
                client_first_bare,
                server_first,
                nonce,
            } => {
                let last = parse_client_final(message).ok_or(Refusal::Generic)?;
                if last.nonce != nonce {
                    return Err(Refusal::Generic);
                }
                let auth_message =
                    format!("{client_first_bare},{server_first},{}", last.without_proof);
                let client_signature = self
                    .hash
                    .hmac(&credential.stored_key, auth_message.as_bytes());
                if last.proof.len() != client_signature.len() {
                    return Err(Refusal::Generic);
                }
                let client_key: Vec<u8> = last
                    .proof
                    .iter()
                    .zip(&client_signature)
                    .map(|(a, b)| a ^ b)
                    .collect();
                if !constant_time_eq(&self.hash.hash(&client_key), &credential.stored_key) {
                    return Err(Refusal::Generic);
                }
                let server_signature = self
                    .hash
                    .hmac(&credential.server_key, auth_message.as_bytes());
                Ok(Step::Authenticated {
                    username,
                    token,
                    server_final: format!("v={}", BASE64.encode(server_signature)).into_bytes(),
                })
            }
            // Kafka: "Unexpected challenge in Sasl server state".
            State::Finished => Err(Refusal::Generic),
        }
    }
}

/// A client-first message, as Kafka's pattern takes it apart.
#[derive(Debug)]
struct ClientFirst<'a> {
    authorization_id: &'a str,
    sasl_name: &'a str,
    nonce: &'a str,
    /// From `n=` on: the client-first-message-bare the signatures cover.
    bare: &'a str,
    token_authentication: bool,
}

fn parse_client_first(message: &[u8]) -> Option<ClientFirst<'_>> {
    let text = std::str::from_utf8(message).ok()?;
    if !text.bytes().all(|byte| (0x01..=0x7f).contains(&byte)) {
        return None;
    }
    let rest = text.strip_prefix("n,")?;
    let (authzid, rest) = rest.split_once(',')?;
    let authorization_id = match authzid {
        "" => "",
        _ => {
            let id = authzid.strip_prefix("a=")?;
            is_sasl_name(id).then_some(id)?
        }
    };
    // An optional reserved `m=` attribute, which Kafka's pattern allows and ignores.
    let bare = match rest.strip_prefix("m=") {
        Some(after) => {
            let (value, bare) = after.split_once(',')?;
            (!value.is_empty()).then_some(bare)?
        }
        None => rest,
    };
    let mut fields = bare.split(',');
    let sasl_name = fields.next()?.strip_prefix("n=")?;
    let nonce = fields.next()?.strip_prefix("r=")?;
    if !is_sasl_name(sasl_name) || !is_printable(nonce) {
        return None;
    }
    let mut token_authentication = false;
    for extension in fields {
        let (name, value) = extension_of(extension)?;
        if name == "tokenauth" {
            token_authentication = value.eq_ignore_ascii_case("true");
        }
    }
    Some(ClientFirst {
        authorization_id,
        sasl_name,
        nonce,
        bare,
        token_authentication,
    })
}

/// A client-final message.
#[derive(Debug)]
struct ClientFinal<'a> {
    nonce: &'a str,
    /// `c=...,r=...`, as Kafka puts it into the signed message.
    without_proof: &'a str,
    proof: Vec<u8>,
}

fn parse_client_final(message: &[u8]) -> Option<ClientFinal<'_>> {
    let text = std::str::from_utf8(message).ok()?;
    let (signed, proof) = text.rsplit_once(",p=")?;
    let mut fields = signed.split(',');
    let channel = fields.next()?.strip_prefix("c=")?;
    let nonce = fields.next()?.strip_prefix("r=")?;
    if !is_printable(nonce) || BASE64.decode(channel).is_err() {
        return None;
    }
    for extension in fields {
        extension_of(extension)?;
    }
    let without_proof = &signed[..channel.len() + nonce.len() + ",r=".len() + "c=".len()];
    Some(ClientFinal {
        nonce,
        without_proof,
        proof: BASE64.decode(proof).ok()?,
    })
}

/// An extension attribute, `name=value` (letters, then a non-empty value), as Kafka's pattern
/// takes it.
fn extension_of(field: &str) -> Option<(&str, &str)> {
    let (name, value) = field.split_once('=')?;
    let valid = !name.is_empty()
        && name.bytes().all(|byte| byte.is_ascii_alphabetic())
        && !value.is_empty();
    valid.then_some((name, value))
}

/// RFC 5802's `saslname`: ASCII but NUL, `,` and `=`, which are written `=2C` and `=3D`.
fn is_sasl_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|byte| (0x01..=0x7f).contains(&byte) && byte != b',')
        && username_of(name).is_some()
}

/// `r=` values: printable ASCII without commas.
fn is_printable(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|byte| (0x21..=0x7e).contains(&byte) && byte != b',')
}

/// The user name a `saslname` writes; `None` when an `=` is not part of `=2C` or `=3D`.
pub fn username_of(sasl_name: &str) -> Option<String> {
    let mut name = String::with_capacity(sasl_name.len());
    let mut rest = sasl_name;
    while let Some(at) = rest.find('=') {
        name.push_str(&rest[..at]);
        match rest.get(at..at + 3) {
            Some("=2C") => name.push(','),
            Some("=3D") => name.push('='),
            _ => return None,
        }
        rest = &rest[at + 3..];
    }
    name.push_str(rest);
    Some(name)
}

/// The `saslname` a client writes for `username`.
pub fn sasl_name_of(username: &str) -> String {
    username.replace('=', "=3D").replace(',', "=2C")
}

/// A fresh server nonce: 32 random letters and digits, as printable as RFC 5802 asks.
pub fn server_nonce() -> String {
    use rand::Rng as _;
    rand::rng()
        .sample_iter(rand::distr::Alphanumeric)
        .take(32)
        .map(char::from)
        .collect()
}

#[cfg(test)]
mod tests;
