//! Batches built by kafka-python (an implementation written elsewhere) decode in ferrolog, and
//! batches ferrolog builds decode in kafka-python, for every codec, with headers and null keys
//! and values; legacy magic 0 and 1 too. Uncompressed batches are byte-identical.
//!
//! Needs a Python with kafka-python, lz4, python-snappy (or cramjam) and zstandard:
//! `$FERROLOG_PYTHON`, else `python3`. Skipped with a message when it is missing, except under
//! CI (`CI` set), where a missing client is a failure.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ferrolog_records::{BatchBuilder, Compression, EntryIter};

fn python() -> Option<String> {
    let python = std::env::var("FERROLOG_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let probe = Command::new(&python)
        .args([
            "-c",
            "import kafka.record, lz4, zstandard; import kafka.codec as c; assert c.has_snappy()",
        ])
        .output();
    match probe {
        Ok(output) if output.status.success() => Some(python),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "kafka-python is required under CI: set FERROLOG_PYTHON to a python with it"
            );
            eprintln!(
                "skipped: no python with kafka-python, lz4, snappy and zstandard (set FERROLOG_PYTHON)"
            );
            None
        }
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/kafka_python_records.py")
}

/// One record as the JSON of both sides describes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Described {
    offset: i64,
    timestamp: i64,
    key: Option<String>,
    value: Option<String>,
    headers: Vec<(String, Option<String>)>,
}

fn hex(bytes: Option<&[u8]>) -> Option<String> {
    bytes.map(|bytes| bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Reads the script's JSON: `{"name": [{"offset", "timestamp", "key", "value", "headers"}]}`.
fn parse_json(text: &str) -> BTreeMap<String, Vec<Described>> {
    let files: BTreeMap<String, Vec<serde_json::Value>> = serde_json::from_str(text).unwrap();
    let text_of = |value: &serde_json::Value| value.as_str().map(str::to_owned);
    files
        .into_iter()
        .map(|(name, records)| {
            let records = records
                .iter()
                .map(|record| Described {
                    offset: record["offset"].as_i64().unwrap(),
                    timestamp: record["timestamp"].as_i64().unwrap(),
                    key: text_of(&record["key"]),
                    value: text_of(&record["value"]),
                    headers: record["headers"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|pair| (text_of(&pair[0]).unwrap(), text_of(&pair[1])))
                        .collect(),
                })
                .collect();
            (name, records)
        })
        .collect()
}

fn decode_with_ferrolog(bytes: &[u8]) -> Vec<Described> {
    let mut out = Vec::new();
    for entry in EntryIter::new(bytes) {
        let (_, entry) = entry.unwrap();
        entry.validate().unwrap();
        let records = entry.records(1 << 24).unwrap();
        for record in records.to_vec().unwrap() {
            out.push(Described {
                offset: record.offset,
                timestamp: record.timestamp,
                key: hex(record.key),
                value: hex(record.value),
                headers: record
                    .headers()
                    .map(|header| {
                        (
                            String::from_utf8(header.key.to_vec()).unwrap(),
                            hex(header.value),
                        )
                    })
                    .collect(),
            });
        }
    }
    out
}

#[test]
fn kafka_python_batches_decode_in_ferrolog() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(&python)
        .arg(script())
        .arg("build")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let expected = parse_json(&std::fs::read_to_string(dir.path().join("expected.json")).unwrap());
    assert_eq!(
        expected.len(),
        13,
        "5 codecs in v2, and all but zstd in magic 0 and 1"
    );
    for (name, records) in &expected {
        let bytes = std::fs::read(dir.path().join(format!("{name}.bin"))).unwrap();
        assert_eq!(&decode_with_ferrolog(&bytes), records, "{name}");
    }
}

/// The records kafka-python's script builds, rebuilt with ferrolog's builder.
fn ferrolog_batch(compression: Compression, partition_leader_epoch: i32) -> Vec<u8> {
    let mut builder = BatchBuilder::new(0)
        .compression(compression)
        .partition_leader_epoch(partition_leader_epoch);
    for i in 0..40i64 {
        let key = (i % 7 != 3).then(|| format!("key-{i}"));
        let value = (i % 11 != 5).then(|| format!("value-{i}-").repeat(1 + (i % 5) as usize));
        let header_value = format!("hv-{i}");
        let header_key = format!("h-{i}");
        let headers: Vec<(&str, Option<&[u8]>)> = if i % 3 == 0 {
            vec![
                (header_key.as_str(), Some(header_value.as_bytes())),
                ("null-header", None),
            ]
        } else {
            Vec::new()
        };
        builder
            .append(
                1_700_000_000_000 + i * 3 - (i % 4),
                key.as_deref().map(str::as_bytes),
                value.as_deref().map(str::as_bytes),
                &headers,
            )
            .unwrap();
    }
    builder.build().unwrap()
}

#[test]
fn ferrolog_batches_decode_in_kafka_python() {
    let Some(python) = python() else { return };
    let built = tempfile::tempdir().unwrap();
    let status = Command::new(&python)
        .arg(script())
        .arg("build")
        .arg(built.path())
        .status()
        .unwrap();
    assert!(status.success());
    let expected =
        parse_json(&std::fs::read_to_string(built.path().join("expected.json")).unwrap());

    let ours = tempfile::tempdir().unwrap();
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        std::fs::write(
            ours.path().join(format!("v2-{codec}.bin")),
            ferrolog_batch(codec, -1),
        )
        .unwrap();
    }
    let output = Command::new(&python)
        .arg(script())
        .arg("read")
        .arg(ours.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let decoded = parse_json(&String::from_utf8(output.stdout).unwrap());
    assert_eq!(decoded.len(), 5);
    for (name, records) in decoded {
        assert_eq!(
            Some(&records),
            expected.get(&name),
            "{name} as kafka-python reads it"
        );
    }
}

#[test]
fn uncompressed_batches_are_byte_identical_to_kafka_python() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(&python)
        .arg(script())
        .arg("build")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let theirs = std::fs::read(dir.path().join("v2-none.bin")).unwrap();
    // kafka-python leaves the partition leader epoch at 0 where Kafka's Java producer writes -1;
    // the field is outside the CRC and the broker overwrites it on append.
    assert_eq!(ferrolog_batch(Compression::None, 0), theirs);
}
