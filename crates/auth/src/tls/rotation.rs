//! A TLS listener's key and trust stores replaced while the broker runs (Kafka's dynamic
//! `listener.name.<l>.ssl.keystore.*` and `...ssl.truststore.*`): connections accepted after
//! the change see the new ones, connections already up keep the session they have.
//!
//! As Kafka's `SslFactory` checks a new key store: its certificate must name the same subject
//! (`ssl.allow.dn.changes`) and keep every subject alternative name of the current one, adding
//! names being fine (`ssl.allow.san.changes`). Both checks are on unless allowed.

use x509_parser::prelude::{FromDer, X509Certificate};

/// What a replaced certificate may change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllowedChanges {
    /// `ssl.allow.dn.changes`: the subject's distinguished name may change.
    pub dn: bool,
    /// `ssl.allow.san.changes`: subject alternative names may be dropped.
    pub san: bool,
}

/// Checks that `new` (a certificate, DER) may replace `current`; the refusal is Kafka's.
pub fn check_compatible(current: &[u8], new: &[u8], allowed: AllowedChanges) -> Result<(), String> {
    let (current_dn, current_sans) = identity(current)?;
    let (new_dn, new_sans) = identity(new)?;
    if !allowed.dn && !current_dn.eq_ignore_ascii_case(&new_dn) {
        return Err(format!(
            "Keystore DistinguishedName does not match:  existing={{DN={current_dn}}}, new={{DN={new_dn}}}"
        ));
    }
    if !allowed.san && !current_sans.iter().all(|name| new_sans.contains(name)) {
        return Err(format!(
            "Keystore SubjectAltNames do not match:  existing={{SAN={}}}, new={{SAN={}}}",
            current_sans.join(", "),
            new_sans.join(", ")
        ));
    }
    Ok(())
}

/// A certificate's subject and its subject alternative names, as text.
fn identity(certificate: &[u8]) -> Result<(String, Vec<String>), String> {
    let (_, parsed) = X509Certificate::from_der(certificate)
        .map_err(|error| format!("the certificate does not parse: {error}"))?;
    let names = parsed
        .subject_alternative_name()
        .map_err(|error| format!("the certificate's alternative names: {error}"))?
        .map(|extension| {
            extension
                .value
                .general_names
                .iter()
                .map(|name| name.to_string())
                .collect()
        })
        .unwrap_or_default();
    Ok((parsed.subject().to_string(), names))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(subject: &str, names: &[&str]) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(
            names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>(),
        )
        .unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, subject);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn the_same_subject_with_more_names_may_replace_and_nothing_else_may_unless_allowed() {
        let current = certificate("broker", &["localhost", "broker.example"]);
        let more = certificate("broker", &["localhost", "broker.example", "b2.example"]);
        assert_eq!(
            check_compatible(&current, &more, AllowedChanges::default()),
            Ok(())
        );

        let fewer = certificate("broker", &["localhost"]);
        let refused = check_compatible(&current, &fewer, AllowedChanges::default()).unwrap_err();
        assert!(
            refused.starts_with("Keystore SubjectAltNames do not match"),
            "{refused}"
        );
        let san = AllowedChanges {
            dn: false,
            san: true,
        };
        assert_eq!(check_compatible(&current, &fewer, san), Ok(()));

        let other = certificate("impostor", &["localhost", "broker.example"]);
        let refused = check_compatible(&current, &other, AllowedChanges::default()).unwrap_err();
        assert!(
            refused.starts_with("Keystore DistinguishedName does not match"),
            "{refused}"
        );
        let dn = AllowedChanges {
            dn: true,
            san: false,
        };
        assert_eq!(check_compatible(&current, &other, dn), Ok(()));
    }
}
