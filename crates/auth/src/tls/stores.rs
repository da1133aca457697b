//! Keys and certificates as Kafka's `ssl.keystore.*` and `ssl.truststore.*` give them: PEM text
//! (a file, or the inline `ssl.keystore.key`, `ssl.keystore.certificate.chain` and
//! `ssl.truststore.certificates`) or a PKCS#12 file. A PEM key is PKCS#8, as Kafka requires,
//! encrypted with `ssl.key.password` (PBES2, which `openssl pkcs8 -topk8` writes) or not; the
//! PKCS#1 and SEC1 forms are taken too. Errors say what is wrong without repeating secrets.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use x509_parser::der_parser::asn1_rs::ToDer;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::principal::{Attribute, rfc2253_name};

const ENCRYPTED_BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
const ENCRYPTED_END: &str = "-----END ENCRYPTED PRIVATE KEY-----";

/// The certificates of PEM text, in order.
pub fn pem_certificates(text: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(text.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|error| format!("the PEM certificates do not parse: {error}"))?;
    if certificates.is_empty() {
        return Err("No matching CERTIFICATE entries in PEM".into());
    }
    Ok(certificates)
}

/// The key and certificate chain of PEM text holding both (or of the key's text and the
/// chain's, concatenated); `password` decrypts an encrypted key.
pub fn pem_key_and_chain(
    text: &str,
    password: Option<&str>,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let chain = pem_certificates(text)?;
    let encrypted = text.find(ENCRYPTED_BEGIN);
    let key = match (encrypted, password) {
        (Some(begin), Some(password)) => {
            let end = text[begin..]
                .find(ENCRYPTED_END)
                .map(|end| begin + end + ENCRYPTED_END.len())
                .ok_or("the ENCRYPTED PRIVATE KEY block is not closed")?;
            let (_, document) = pkcs8::SecretDocument::from_pem(&text[begin..end])
                .map_err(|error| format!("the encrypted private key does not parse: {error}"))?;
            let info = pkcs8::EncryptedPrivateKeyInfo::try_from(document.as_bytes())
                .map_err(|error| format!("the encrypted private key does not parse: {error}"))?;
            let decrypted = info.decrypt(password).map_err(|_| {
                "the private key cannot be decrypted with ssl.key.password (wrong password, or an encryption other than PBES2)".to_owned()
            })?;
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(decrypted.as_bytes().to_vec()))
        }
        (Some(_), None) => {
            return Err("the private key is encrypted, but ssl.key.password is not set".into());
        }
        (None, password) => {
            let keys = text.matches("-----BEGIN ").count()
                - text.matches("-----BEGIN CERTIFICATE-----").count();
            if keys > 1 {
                return Err(format!("Expected one private key, but found {keys}"));
            }
            if password.is_some() {
                return Err("ssl.key.password is set, but the private key is not encrypted".into());
            }
            PrivateKeyDer::from_pem_slice(text.as_bytes())
                .map_err(|error| format!("No matching PRIVATE KEY entries in PEM ({error})"))?
        }
    };
    Ok((chain, key))
}

/// The key and certificate chain of a PKCS#12 file opened with `password`.
pub fn pkcs12_key_and_chain(
    bytes: &[u8],
    password: &str,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let store = open_pkcs12(bytes, password, p12_keystore::Pkcs12ImportPolicy::Strict)?;
    let (_, chain) = store
        .private_key_chain()
        .ok_or("the PKCS#12 key store holds no private key")?;
    let certificates: Vec<CertificateDer<'static>> = chain
        .certs()
        .iter()
        .map(|certificate| CertificateDer::from(certificate.as_der().to_vec()))
        .collect();
    if certificates.is_empty() {
        return Err("the PKCS#12 key store holds a key without its certificate".into());
    }
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec()));
    Ok((certificates, key))
}

/// The certificates of a PKCS#12 trust store opened with `password`.
pub fn pkcs12_certificates(
    bytes: &[u8],
    password: &str,
) -> Result<Vec<CertificateDer<'static>>, String> {
    // Every certificate entry, and of a key entry its own certificate only, as Java's trust
    // manager takes them: not the CA that issued it.
    let store = open_pkcs12(bytes, password, p12_keystore::Pkcs12ImportPolicy::Relaxed)?;
    let mut certificates = Vec::new();
    for (_, entry) in store.entries() {
        match entry {
            p12_keystore::KeyStoreEntry::Certificate(certificate) => {
                certificates.push(CertificateDer::from(certificate.as_der().to_vec()));
            }
            p12_keystore::KeyStoreEntry::PrivateKeyChain(chain) => certificates.extend(
                chain
                    .certs()
                    .first()
                    .map(|certificate| CertificateDer::from(certificate.as_der().to_vec())),
            ),
            _ => {}
        }
    }
    if certificates.is_empty() {
        return Err("the PKCS#12 trust store holds no certificate".into());
    }
    Ok(certificates)
}

fn open_pkcs12(
    bytes: &[u8],
    password: &str,
    policy: p12_keystore::Pkcs12ImportPolicy,
) -> Result<p12_keystore::KeyStore, String> {
    p12_keystore::KeyStore::from_pkcs12(bytes, password, policy).map_err(|error| {
        format!("the PKCS#12 store cannot be opened (a wrong password, or not PKCS#12): {error}")
    })
}

/// The subject of a DER certificate, as Java's `X500Principal.getName()` writes it.
pub fn subject_name(certificate: &[u8]) -> Result<String, String> {
    let (_, parsed) = X509Certificate::from_der(certificate)
        .map_err(|error| format!("the client certificate does not parse: {error}"))?;
    let mut rdns = Vec::new();
    for rdn in parsed.subject().iter_rdn() {
        let mut attributes = Vec::new();
        for attribute in rdn.iter() {
            let value = attribute.attr_value();
            // The string types Java writes as text (decoding their bytes as UTF-8); any other
            // value is written as the hex of its DER encoding.
            let text = JAVA_TEXT_TAGS
                .contains(&value.header.tag().0)
                .then(|| String::from_utf8_lossy(value.data).into_owned());
            let der = value
                .to_der_vec()
                .map_err(|error| format!("the client certificate's subject: {error}"))?;
            attributes.push(Attribute {
                oid: attribute.attr_type().to_id_string(),
                text,
                der,
            });
        }
        rdns.push(attributes);
    }
    Ok(rfc2253_name(&rdns))
}

/// The ASN.1 string types Java's `AVA` writes as text: UTF8String, PrintableString, T61String,
/// IA5String, GeneralString and BMPString.
const JAVA_TEXT_TAGS: [u32; 6] = [12, 19, 20, 22, 27, 30];
