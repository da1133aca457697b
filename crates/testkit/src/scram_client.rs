//! The client side of SCRAM-SHA-256/512 (RFC 5802), written from the RFC for the tests of the
//! broker's server side, so that neither is checked only against itself: the RFC 7677 example
//! exchange checks this client, and this client checks the server.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

/// SCRAM-SHA-256 or SCRAM-SHA-512.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sha {
    Sha256,
    Sha512,
}

impl Sha {
    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            Sha::Sha256 => {
                let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            Sha::Sha512 => {
                let mut mac = Hmac::<Sha512>::new_from_slice(key).unwrap();
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            Sha::Sha256 => Sha256::digest(data).to_vec(),
            Sha::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// RFC 5802's Hi(): PBKDF2 with this HMAC.
    pub fn salted_password(self, password: &str, salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            Sha::Sha256 => {
                pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password.as_bytes(), salt, iterations)
                    .to_vec()
            }
            Sha::Sha512 => {
                pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password.as_bytes(), salt, iterations)
                    .to_vec()
            }
        }
    }
}

/// One client exchange: [`ScramClient::first`], then [`ScramClient::finish`] with the server's
/// first message, then [`ScramClient::verify`] with its final one.
#[derive(Debug, Clone)]
pub struct ScramClient {
    sha: Sha,
    password: String,
    client_first_bare: String,
    client_nonce: String,
    server_signature: Option<Vec<u8>>,
}

impl ScramClient {
    /// The client-first message for `username` (escaped as RFC 5802 asks) with `nonce`.
    pub fn first(sha: Sha, username: &str, password: &str, nonce: &str) -> (Self, Vec<u8>) {
        Self::first_with(sha, username, password, nonce, "")
    }

    /// The client-first message with `extensions` (`,name=value...`) after the nonce, as a
    /// Kafka client sends `,tokenauth=true` to authenticate with a delegation token.
    pub fn first_with(
        sha: Sha,
        username: &str,
        password: &str,
        nonce: &str,
        extensions: &str,
    ) -> (Self, Vec<u8>) {
        let name = username.replace('=', "=3D").replace(',', "=2C");
        let bare = format!("n={name},r={nonce}{extensions}");
        let message = format!("n,,{bare}").into_bytes();
        let client = Self {
            sha,
            password: password.to_owned(),
            client_first_bare: bare,
            client_nonce: nonce.to_owned(),
            server_signature: None,
        };
        (client, message)
    }

    /// The client-final message answering `server_first`; panics when the server's message is
    /// not a valid server-first one for this client's nonce.
    pub fn finish(&mut self, server_first: &[u8]) -> Vec<u8> {
        let server_first = std::str::from_utf8(server_first).unwrap().to_owned();
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for field in server_first.split(',') {
            match field.split_at(2) {
                ("r=", value) => nonce = Some(value.to_owned()),
                ("s=", value) => salt = Some(BASE64.decode(value).unwrap()),
                ("i=", value) => iterations = Some(value.parse::<u32>().unwrap()),
                _ => {}
            }
        }
        let nonce = nonce.unwrap();
        assert!(
            nonce.starts_with(&self.client_nonce),
            "the server keeps the client's nonce"
        );
        let salted = self
            .sha
            .salted_password(&self.password, &salt.unwrap(), iterations.unwrap());
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let client_key = self.sha.hmac(&salted, b"Client Key");
        let stored_key = self.sha.hash(&client_key);
        let client_signature = self.sha.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&client_signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = self.sha.hmac(&salted, b"Server Key");
        self.server_signature = Some(self.sha.hmac(&server_key, auth_message.as_bytes()));
        format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes()
    }

    /// Whether `server_final` proves the server knew this user's key.
    pub fn verify(&self, server_final: &[u8]) -> bool {
        let expected = format!(
            "v={}",
            BASE64.encode(self.server_signature.as_ref().unwrap())
        );
        server_final == expected.as_bytes()
    }
}
