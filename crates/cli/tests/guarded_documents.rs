//! `ferrolog serve` and the files holding authorization: a copy other users may read is
//! reported at startup, and a deleted one stops startup, naming the file and the setting that
//! accepts it, until that setting is given for one start.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const AUTHORIZER: &str =
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// Starts `serve` on `data` with the authorizer and `overrides`, stops it after a moment;
/// whether it ran until stopped, and its stderr.
fn serve(data: &Path, overrides: &[&str]) -> (bool, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ferrolog"));
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--log-dirs"])
        .arg(data)
        .args(["--override", AUTHORIZER])
        .args(["--override", "super.users=User:admin"])
        .args(overrides.iter().flat_map(|o| ["--override", o]))
        .env("FERROLOG_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let output = child.wait_with_output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_shared_copy_is_reported_and_a_deleted_one_stops_startup() {
    let temp = tempfile::tempdir().unwrap();
    let data = temp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    // ACLs as an earlier ferrolog wrote them (no ACL yet), left readable by everyone.
    let acls = data.join("ferrolog-acls");
    std::fs::write(&acls, "0\n1\n").unwrap();
    std::fs::set_permissions(&acls, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (ran, stderr) = serve(&data, &[]);
    assert!(ran, "{stderr}");
    assert!(
        stderr.contains("open to other users") && stderr.contains("ferrolog-acls"),
        "{stderr}"
    );
    let recorded = data.join("ferrolog-document-generations");
    assert_eq!(
        std::fs::metadata(&recorded).unwrap().permissions().mode() & 0o777,
        0o600
    );

    std::fs::remove_file(&acls).unwrap();
    let (ran, stderr) = serve(&data, &[]);
    assert!(!ran, "a start without the ACLs it had: {stderr}");
    assert!(
        stderr.contains("ferrolog-acls")
            && stderr.contains("ferrolog.accept.rolled.back.documents"),
        "{stderr}"
    );
    let (ran, stderr) = serve(&data, &["ferrolog.accept.rolled.back.documents=true"]);
    assert!(ran, "{stderr}");
    let (ran, stderr) = serve(&data, &[]);
    assert!(ran, "once accepted, later starts need no flag: {stderr}");
}
