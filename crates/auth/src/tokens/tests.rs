#![allow(clippy::unwrap_used, reason = "tests")]

use ferrolog_storage::SystemClock;
use ferrolog_storage::manager::ManagerConfig;
use ferrolog_testkit::scram_client::{ScramClient, Sha};

use super::*;
use crate::sasl::scram::{Named, ScramHash, ScramServer, Step};

const HOUR: i64 = 3_600_000;

fn open(dir: &std::path::Path, key: &str) -> DelegationTokens {
    let manager = Arc::new(
        LogManager::open(
            ManagerConfig {
                log_dirs: vec![dir.to_path_buf()],
                ..ManagerConfig::default()
            },
            Arc::new(SystemClock),
        )
        .unwrap(),
    );
    let config = TokenConfig {
        secret_key: Some(key.to_owned()),
        check_interval_ms: HOUR,
        ..TokenConfig::default()
    };
    DelegationTokens::open(manager, config, Rollback::Refuse).unwrap()
}

fn alice() -> (String, String, Vec<String>) {
    (
        "User:alice".into(),
        "User:alice".into(),
        vec!["User:bob".into()],
    )
}

#[test]
fn tokens_are_kept_across_restarts_and_their_hmac_comes_from_the_key() {
    let temp = tempfile::tempdir().unwrap();
    let (id, hmac) = {
        let tokens = open(temp.path(), "secret");
        let token = tokens.create(alice(), 0, 1000).unwrap();
        assert_eq!(token.id.len(), 22);
        let hmac = tokens.hmac(&token.id);
        assert_eq!(hmac, rules::hmac("secret", &token.id));
        let renewed = tokens.renew(&hmac, "User:bob", HOUR, 2000).unwrap();
        assert_eq!(renewed, 2000 + HOUR);
        (token.id, hmac)
    };
    let tokens = open(temp.path(), "secret");
    let kept = tokens.all();
    assert_eq!(kept.len(), 1);
    assert_eq!(
        (kept[0].id.as_str(), kept[0].expiry_ms),
        (id.as_str(), 2000 + HOUR)
    );
    // Unknown HMACs are not found; the owner removes the token with a negative period.
    let code = |refusal| match refusal {
        TokenRefusal::Code(code) => code,
        other => panic!("{other}"),
    };
    assert_eq!(
        code(tokens.renew(b"nope", "User:alice", 0, 3000).unwrap_err()),
        62
    );
    assert_eq!(
        code(tokens.expire(&hmac, "User:carol", -1, 3000).unwrap_err()),
        63
    );
    assert_eq!(tokens.expire(&hmac, "User:alice", -1, 3000).unwrap(), 3000);
    assert!(tokens.all().is_empty());
    // Under another key, the HMAC is another.
    drop(tokens);
    assert_ne!(open(temp.path(), "other").hmac(&id), hmac);
}

#[test]
fn expired_tokens_are_swept_once_an_interval() {
    let temp = tempfile::tempdir().unwrap();
    let tokens = open(temp.path(), "secret");
    let short = tokens.create(alice(), HOUR, 0).unwrap();
    let long = tokens.create(alice(), 0, 0).unwrap();
    assert_eq!(tokens.sweep(HOUR + 1).unwrap(), 1);
    let left: Vec<String> = tokens.all().into_iter().map(|token| token.id).collect();
    assert_eq!(left, vec![long.id.clone()]);
    assert_ne!(short.id, long.id);
    // Not again before an interval has passed; the other goes once its day is up.
    assert_eq!(
        tokens.sweep(25 * HOUR).unwrap() + tokens.sweep(25 * HOUR + 1).unwrap(),
        1
    );
    assert_eq!(
        tokens.sweep(26 * HOUR - 1).unwrap(),
        0,
        "within the interval"
    );
    assert!(tokens.all().is_empty());
}

#[test]
fn a_token_authenticates_its_owner_with_scram_and_its_hmac() {
    let temp = tempfile::tempdir().unwrap();
    let tokens = open(temp.path(), "secret");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let token = tokens.create(alice(), 0, now).unwrap();
    let password = BASE64.encode(tokens.hmac(&token.id));
    for (mechanism, hash, sha) in [
        (Mechanism::ScramSha256, ScramHash::Sha256, Sha::Sha256),
        (Mechanism::ScramSha512, ScramHash::Sha512, Sha::Sha512),
    ] {
        let mut server = ScramServer::new(hash);
        let (mut client, first) =
            ScramClient::first_with(sha, &token.id, &password, "nonce", ",tokenauth=true");
        let lookup = |named: Named<'_>| match named {
            Named::Token(id) => tokens.scram_credential(id, mechanism),
            Named::User(_) => None,
        };
        let Ok(Step::Challenge(challenge)) = server.step(&first, lookup, "server") else {
            panic!("a challenge");
        };
        let last = client.finish(&challenge);
        let lookup = |_: Named<'_>| None;
        match server.step(&last, lookup, "") {
            Ok(Step::Authenticated {
                username, token, ..
            }) => {
                assert_eq!((username.as_str(), token), ("alice", true));
            }
            other => panic!("{other:?}"),
        }
    }
    // An expired token authenticates no one.
    let hmac = tokens.hmac(&token.id);
    tokens.expire(&hmac, "User:alice", 0, now - 1).unwrap();
    assert!(
        tokens
            .scram_credential(&token.id, Mechanism::ScramSha256)
            .is_none()
    );
}

#[test]
fn a_bad_line_is_named() {
    for (body, reason) in [
        ("id User:a User:a 1 2\n", "expected id"),
        ("id User:a User:a 1 x 3\n", "not a time"),
        (
            "id User:a User:a 1 2 3\nid User:a User:a 1 2 3\n",
            "a second token",
        ),
    ] {
        let (_, why) = parse(body).unwrap_err();
        assert!(why.contains(reason), "{body:?}: {why}");
    }
    let token = Token {
        id: "i d".into(),
        owner: "User:a b".into(),
        requester: "User:c".into(),
        renewers: vec!["User:d".into(), "User:e%".into()],
        issue_ms: 1,
        max_ms: 3,
        expiry_ms: 2,
    };
    let tokens = BTreeMap::from([(token.id.clone(), token)]);
    assert_eq!(parse(&format(&tokens)).unwrap(), tokens);
}
