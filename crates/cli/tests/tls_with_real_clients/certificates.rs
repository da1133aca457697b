//! Certificates made with openssl as an operator would: an authority, and server and client certificates signed by it.

use super::*;

/// Runs `openssl` with `args` in `dir`; panics with its output when it fails.
pub(super) fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A CA (`<name>-ca.pem`) and the certificates it signs.
pub(super) fn authority(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={name} CA"),
            "-keyout",
            &format!("{name}-ca.key"),
            "-out",
            &format!("{name}-ca.pem"),
        ],
    );
}

/// A key (`<name>.key`, PKCS#8) and certificate (`<name>.crt`) for `subject`, signed by the
/// CA `ca`, with `extensions` (an `openssl x509 -extfile` line) if given.
pub(super) fn certificate(
    dir: &Path,
    ca: &str,
    name: &str,
    subject: &str,
    extensions: Option<&str>,
) {
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            subject,
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
        ],
    );
    let mut args = vec![
        "x509".to_owned(),
        "-req".into(),
        "-in".into(),
        format!("{name}.csr"),
        "-CA".into(),
        format!("{ca}-ca.pem"),
        "-CAkey".into(),
        format!("{ca}-ca.key"),
        "-CAcreateserial".into(),
        "-days".into(),
        "2".into(),
        "-out".into(),
        format!("{name}.crt"),
    ];
    if let Some(extensions) = extensions {
        let file = format!("{name}.ext");
        std::fs::write(dir.join(&file), extensions).unwrap();
        args.extend(["-extfile".to_owned(), file]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    openssl(dir, &args);
}

/// The certificates of the test: the broker's (PEM, and PKCS#12 with password
/// `broker-secret`), alice's and mallory's from the same CA, and eve's from another.
pub(super) fn certificates(dir: &Path) {
    authority(dir, "test");
    authority(dir, "stranger");
    certificate(
        dir,
        "test",
        "broker",
        "/CN=localhost",
        Some("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
    );
    let text = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap();
    std::fs::write(
        dir.join("broker.pem"),
        text("broker.key") + &text("broker.crt"),
    )
    .unwrap();
    openssl(
        dir,
        &[
            "pkcs12",
            "-export",
            "-in",
            "broker.crt",
            "-inkey",
            "broker.key",
            "-certfile",
            "test-ca.pem",
            "-passout",
            "pass:broker-secret",
            "-out",
            "broker.p12",
        ],
    );
    // Version 3 certificates: openssl writes version 1 without extensions, which rustls, unlike
    // Java, refuses (see docs/operations.md).
    let client = Some("extendedKeyUsage=clientAuth\n");
    certificate(dir, "test", "alice", "/O=Example/CN=alice", client);
    certificate(dir, "test", "mallory", "/O=Other/CN=mallory", client);
    certificate(dir, "stranger", "eve", "/O=Example/CN=alice", client);
}
