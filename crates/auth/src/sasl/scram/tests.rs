use ferrolog_testkit::scram_client::{ScramClient, Sha};

use super::*;

fn credential(hash: ScramHash, password: &str, salt: &[u8], iterations: i32) -> ScramCredential {
    let sha = match hash {
        ScramHash::Sha256 => Sha::Sha256,
        ScramHash::Sha512 => Sha::Sha512,
    };
    let salted = sha.salted_password(password, salt, iterations as u32);
    ScramCredential::from_salted_password(hash, salt.to_vec(), &salted, iterations)
}

fn users(hash: ScramHash) -> impl Fn(Named<'_>) -> Option<(ScramCredential, String)> {
    move |named| match named {
        Named::User(name) if name == "alice" || name == "a,b=c" => Some((
            credential(hash, "alice-secret", b"0123456789abcdefghij", 4096),
            name.to_owned(),
        )),
        Named::User(_) => None,
        // A token authenticates as its owner.
        Named::Token(id) => (id == "token-1").then(|| {
            (
                credential(hash, "token-hmac", b"0123456789abcdefghij", 4096),
                "owner".to_owned(),
            )
        }),
    }
}

/// Runs a whole exchange with the test client; the server's answer to the final message.
fn exchange(hash: ScramHash, username: &str, password: &str) -> Result<Step, Refusal> {
    let sha = match hash {
        ScramHash::Sha256 => Sha::Sha256,
        ScramHash::Sha512 => Sha::Sha512,
    };
    let mut server = ScramServer::new(hash);
    let (mut client, first) = ScramClient::first(sha, username, password, "clientnonce");
    let Step::Challenge(server_first) = server.step(&first, users(hash), "servernonce")? else {
        panic!("a challenge comes first");
    };
    let last = client.finish(&server_first);
    let step = server.step(&last, users(hash), "unused")?;
    if let Step::Authenticated { server_final, .. } = &step {
        assert!(
            client.verify(server_final),
            "the server proves it knew the key"
        );
    }
    Ok(step)
}

#[test]
fn the_rfc_7677_example_exchange_authenticates() {
    let salt = BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    let stored = credential(ScramHash::Sha256, "pencil", &salt, 4096);
    let mut server = ScramServer::new(ScramHash::Sha256);
    let lookup = |named: Named<'_>| {
        (named == Named::User("user")).then(|| (stored.clone(), "user".to_owned()))
    };
    let challenge = server
        .step(
            b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
            lookup,
            "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
        )
        .unwrap();
    assert_eq!(
        challenge,
        Step::Challenge(
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
                .to_vec()
        )
    );
    let done = server
        .step(
            b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
            lookup,
            "",
        )
        .unwrap();
    assert_eq!(
        done,
        Step::Authenticated {
            username: "user".into(),
            token: false,
            server_final: b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".to_vec(),
        }
    );
}

#[test]
fn the_right_password_authenticates_with_either_hash() {
    for hash in [ScramHash::Sha256, ScramHash::Sha512] {
        for user in ["alice", "a,b=c"] {
            match exchange(hash, user, "alice-secret") {
                Ok(Step::Authenticated { username, .. }) => assert_eq!(username, user),
                other => panic!("{hash:?} {user}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_wrong_password_fails_at_the_proof() {
    for hash in [ScramHash::Sha256, ScramHash::Sha512] {
        assert_eq!(
            exchange(hash, "alice", "alice-secreT"),
            Err(Refusal::Generic)
        );
        assert_eq!(exchange(hash, "alice", ""), Err(Refusal::Generic));
    }
}

#[test]
fn an_unknown_user_is_refused_at_the_first_message_as_kafka_refuses_it() {
    for first in [&b"n,,n=mallory,r=abc"[..], b"n,a=alice,n=mallory,r=abc"] {
        let mut server = ScramServer::new(ScramHash::Sha256);
        assert_eq!(
            server.step(first, users(ScramHash::Sha256), "sn"),
            Err(Refusal::Generic)
        );
    }
}

#[test]
fn a_message_longer_than_the_limit_is_refused() {
    let mut server = ScramServer::new(ScramHash::Sha256);
    let nonce = "x".repeat(MAX_MESSAGE_BYTES);
    let first = format!("n,,n=alice,r={nonce}");
    assert_eq!(
        server.step(first.as_bytes(), users(ScramHash::Sha256), "sn"),
        Err(Refusal::Generic)
    );
    let mut server = ScramServer::new(ScramHash::Sha256);
    let first = format!("n,,n=alice,r={}", &nonce[..MAX_MESSAGE_BYTES - 16]);
    assert!(matches!(
        server.step(first.as_bytes(), users(ScramHash::Sha256), "sn"),
        Ok(Step::Challenge(_))
    ));
}

/// The client-final message for `alice` with the right password, taken apart so tests can
/// change a piece; and the server waiting for it.
fn server_awaiting_final() -> (ScramServer, String) {
    let mut server = ScramServer::new(ScramHash::Sha256);
    let (mut client, first) = ScramClient::first(Sha::Sha256, "alice", "alice-secret", "cn");
    let Ok(Step::Challenge(server_first)) = server.step(&first, users(ScramHash::Sha256), "sn")
    else {
        panic!("a challenge");
    };
    let last = String::from_utf8(client.finish(&server_first)).unwrap();
    (server, last)
}

#[test]
fn a_forged_or_altered_final_message_is_refused() {
    let (_, good) = server_awaiting_final();
    let (proof_at, _) = good.rsplit_once(",p=").unwrap();
    let proof = BASE64.decode(&good[proof_at.len() + 3..]).unwrap();
    let mut flipped = proof.clone();
    flipped[0] ^= 1;
    let forged = [
        format!("{proof_at},p={}", BASE64.encode(&flipped)),
        format!("{proof_at},p={}", BASE64.encode(&proof[..31])),
        format!("{proof_at},p={}", BASE64.encode([0u8; 32])),
        format!("{proof_at},p="),
        good.replace("r=cnsn", "r=cnsX"),
        good.replace("r=cnsn", "r=cn"),
        good.replace("c=biws", "c=b!ws"),
        good.replace(",p=", ",q="),
        format!("{good},x"),
        String::new(),
        "garbage".into(),
    ];
    for message in forged {
        let (mut server, _) = server_awaiting_final();
        assert_eq!(
            server.step(message.as_bytes(), users(ScramHash::Sha256), ""),
            Err(Refusal::Generic),
            "{message}"
        );
    }
    let (mut server, good) = server_awaiting_final();
    assert!(matches!(
        server.step(good.as_bytes(), users(ScramHash::Sha256), ""),
        Ok(Step::Authenticated { .. })
    ));
    assert_eq!(
        server.step(good.as_bytes(), users(ScramHash::Sha256), ""),
        Err(Refusal::Generic),
        "an exchange that finished takes no more messages"
    );
}

#[test]
fn malformed_first_messages_are_refused() {
    for message in [
        &b""[..],
        b"n,,",
        b"y,,n=alice,r=abc",
        b"p=tls-server-end-point,,n=alice,r=abc",
        b"n,,n=,r=abc",
        b"n,,n=alice,r=",
        b"n,,n=alice",
        b"n,,r=abc,n=alice",
        b"n,,n=al=ice,r=abc",
        b"n,,n=alice,r=a b",
        b"n,,n=alice,r=abc,=x",
        b"n,,n=alice,r=abc,ext=",
        b"n,,n=alice,r=abc,e1x=y",
        b"n,x=alice,n=alice,r=abc",
        b"n,,n=al\xc3\xa9ce,r=abc",
        b"n,,n=al\0ice,r=abc",
        b"n,,n=alice,r=abc,tokenauth=true",
    ] {
        let mut server = ScramServer::new(ScramHash::Sha256);
        assert_eq!(
            server.step(message, users(ScramHash::Sha256), "sn"),
            Err(Refusal::Generic),
            "{}",
            String::from_utf8_lossy(message)
        );
    }
}

#[test]
fn kafkas_optional_parts_of_the_first_message_are_accepted() {
    for message in [
        &b"n,a=alice,n=alice,r=abc"[..],
        b"n,,m=reserved,n=alice,r=abc",
        b"n,,n=alice,r=abc,tokenauth=false",
        b"n,,n=alice,r=abc,ext=v=1",
    ] {
        let mut server = ScramServer::new(ScramHash::Sha256);
        assert!(
            matches!(
                server.step(message, users(ScramHash::Sha256), "sn"),
                Ok(Step::Challenge(_))
            ),
            "{}",
            String::from_utf8_lossy(message)
        );
    }
}

#[test]
fn another_authorization_id_is_refused_with_kafkas_message() {
    let mut server = ScramServer::new(ScramHash::Sha256);
    assert_eq!(
        server.step(
            b"n,a=admin,n=alice,r=abc",
            users(ScramHash::Sha256),
            "sn"
        ),
        Err(Refusal::Told(
            "Authentication failed: Client requested an authorization id that is different from username".into()
        ))
    );
}

#[test]
fn sasl_names_unescape_as_rfc_5802_writes_them() {
    assert_eq!(username_of("a=2Cb=3Dc").as_deref(), Some("a,b=c"));
    assert_eq!(sasl_name_of("a,b=c"), "a=2Cb=3Dc");
    assert_eq!(username_of("a=2"), None);
    assert_eq!(username_of("a=3d"), None);
    assert_eq!(username_of("=="), None);
}

#[test]
fn server_nonces_are_printable_and_fresh() {
    let (a, b) = (server_nonce(), server_nonce());
    assert_ne!(a, b);
    assert!(is_printable(&a) && a.len() == 32);
}
