//! Small documents a broker keeps beside the logs: cluster metadata that Kafka holds in its
//! metadata log (ACLs, for one) and a single node keeps in files instead.
//!
//! The topic configs (`ferrolog-topic-configs`) are one; ACLs another.
//!
//! A document is a named text file at the top of every online data directory, written whole and
//! atomically (temp file, fsync, rename, directory fsync). Each copy carries a generation that
//! every write raises; the newest copy wins when the documents are read at startup, so a
//! directory that was offline during a change does not bring the old contents back. The storage
//! layer does not look inside the body; its owner parses it.
//!
//! Every document is written readable by the broker's user alone (mode 0600), and its
//! generation recorded apart ([`super::document_generations`]) so that a deleted or
//! rolled-back copy is found.
//!
//! Format: the version line, the generation line, then the body.
//!
//! ```text
//! 0
//! 12
//! <body>
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::LogManager;
use super::data_dir::DataDir;
use crate::error::{Result, StorageError};
use crate::fs::read_text_if_exists;

const VERSION: u32 = 0;

/// One copy of a document: its generation (0 when no directory holds it) and its body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Document {
    /// Raised by every write; the highest among the directories is the current one.
    pub generation: u64,
    /// The owner's text.
    pub body: String,
    /// The file it was read from (`None` when no directory holds it, and ignored by
    /// [`Documents::store`]), for the owner's errors about the body: its first line is the
    /// file's third.
    pub source: Option<PathBuf>,
}

/// The node's documents, across every online data directory: reading the newest copy or each
/// copy, storing a change, bringing older copies up to date, and the generation last recorded.
/// Returned by [`LogManager::documents`].
#[derive(Debug, Clone, Copy)]
pub struct Documents<'a> {
    pub(super) manager: &'a LogManager,
}

impl Documents<'_> {
    /// The newest copy of the document `name` among the online directories; an empty document
    /// at generation 0 when none holds it. A copy whose version or generation line is damaged
    /// is an error naming its file and line: starting without, say, the ACLs would open what
    /// they close. Two copies of one generation that differ (which no write of this module
    /// makes) are reported, and the first directory's wins.
    pub fn read(&self, name: &str) -> Result<Document> {
        read_newest(self.manager.dirs.all(), name)
    }

    /// Every online directory's copy of the document `name`, for an owner that checks each
    /// body (a damaged older copy is as much a fault as a damaged newest one); a directory
    /// without one gives an empty document at generation 0.
    pub fn read_copies(&self, name: &str) -> Result<Vec<Document>> {
        read_copies(self.manager.dirs.all(), name)
    }

    /// Writes `document` to every online directory. It is stored when at least one directory
    /// stored it; a directory whose write fails is handled as any failed write of it (see the
    /// faults table in docs/operations.md). The caller raises the generation and serializes its
    /// writes.
    pub fn store(&self, name: &str, document: &Document) -> Result<()> {
        store(self.manager.dirs.all(), name, document)
    }

    /// Writes `document`, under its own generation, to each online directory whose copy is
    /// older or missing, so that every online directory holds the newest copy; one holding the
    /// same or a newer generation is left as it is. Each records the generation in its
    /// `ferrolog-document-generations` file. A failed write is reported and leaves that
    /// directory's copy as it was (the next change writes it again).
    pub fn spread(&self, name: &str, document: &Document) -> Result<()> {
        check_name(name)?;
        let text = format!("{VERSION}\n{}\n{}", document.generation, document.body);
        for dir in self.manager.dirs.iter().filter(|dir| !dir.is_offline()) {
            if read_copy(dir, name)?.generation < document.generation {
                dir.write_document(name, &text)?;
            }
            // Recorded also where the copy was already there: a data directory from before the
            // record was kept gets one at its first start.
            if document.generation > 0 {
                super::document_generations::record(dir, name, document.generation)?;
            }
        }
        Ok(())
    }
}

/// Every online directory's copy of `name` (an empty one at generation 0 where it is missing),
/// in the order of `dirs`.
pub(super) fn read_copies(dirs: &[Arc<DataDir>], name: &str) -> Result<Vec<Document>> {
    check_name(name)?;
    dirs.iter()
        .filter(|dir| !dir.is_offline())
        .map(|dir| read_copy(dir, name))
        .collect()
}

impl Document {
    /// The newest of `copies` (the first directory's on a tie, which is logged when the copies
    /// differ), as [`Documents::read`] chooses it; an empty document when there are none.
    pub fn newest_of(copies: Vec<Document>) -> Document {
        newest(copies)
    }
}

fn newest(copies: Vec<Document>) -> Document {
    let mut newest = Document::default();
    for copy in copies {
        if copy.generation > newest.generation {
            newest = copy;
        } else if copy.generation == newest.generation
            && copy.generation > 0
            && copy.body != newest.body
        {
            tracing::warn!(
                kept = %newest.source.as_deref().unwrap_or(Path::new("")).display(),
                ignored = %copy.source.as_deref().unwrap_or(Path::new("")).display(),
                generation = copy.generation,
                "two copies of one generation differ; the first directory's is kept"
            );
        }
    }
    newest
}

/// The newest copy of `name` among the online `dirs` (see [`Documents::read`]).
pub(super) fn read_newest(dirs: &[Arc<DataDir>], name: &str) -> Result<Document> {
    read_copies(dirs, name).map(newest)
}

/// Writes `document` to every online directory of `dirs` (see [`Documents::store`]).
pub(super) fn store(dirs: &[Arc<DataDir>], name: &str, document: &Document) -> Result<()> {
    check_name(name)?;
    let text = format!("{VERSION}\n{}\n{}", document.generation, document.body);
    let mut stored_somewhere = false;
    let mut first_error = None;
    for dir in dirs.iter().filter(|dir| !dir.is_offline()) {
        let written = dir
            .write_document(name, &text)
            .and_then(|()| super::document_generations::record(dir, name, document.generation));
        match written {
            Ok(()) => stored_somewhere = true,
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    if stored_somewhere {
        Ok(())
    } else {
        Err(first_error
            .unwrap_or_else(|| StorageError::Fatal("every data directory is offline".into())))
    }
}

/// Documents are regular files named `ferrolog-…` at the top of a data directory, where Kafka
/// ignores them and ferrolog's log loading (which looks at directories) does too.
fn check_name(name: &str) -> Result<()> {
    let plain = name.starts_with("ferrolog-")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if plain {
        Ok(())
    } else {
        Err(StorageError::Fatal(format!(
            "{name:?} is not a document name (ferrolog- followed by letters, digits, - and _)"
        )))
    }
}

fn read_copy(dir: &DataDir, name: &str) -> Result<Document> {
    let path = dir.path().join(name);
    match read_text_if_exists(&path)? {
        Some(text) => parse(&text, &path),
        None => Ok(Document::default()),
    }
}

fn parse(text: &str, path: &Path) -> Result<Document> {
    let malformed = |line: usize, reason: String| StorageError::MalformedFile {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let (version, rest) = text
        .split_once('\n')
        .ok_or_else(|| malformed(1, "the file ends before the version line".into()))?;
    if version.trim() != VERSION.to_string() {
        return Err(malformed(1, format!("unsupported version {version:?}")));
    }
    let (generation, body) = rest
        .split_once('\n')
        .ok_or_else(|| malformed(2, "the file ends before the generation line".into()))?;
    let generation = generation
        .trim()
        .parse::<u64>()
        .map_err(|_| malformed(2, format!("expected the generation, found {generation:?}")))?;
    Ok(Document {
        generation,
        body: body.to_owned(),
        source: Some(path.to_path_buf()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_it_writes_and_names_the_line_of_damage() {
        let path = Path::new("ferrolog-acls");
        let document = parse("0\n12\nline one\nline two\n", path).unwrap();
        assert_eq!(document.generation, 12);
        assert_eq!(document.body, "line one\nline two\n");
        assert_eq!(parse("0\n1\n", path).unwrap().body, "");
        for (text, line, reason) in [
            ("", 1, "before the version"),
            ("1\n1\n", 1, "unsupported version"),
            ("0\n", 2, "before the generation"),
            ("0\nmany\nx", 2, "expected the generation"),
        ] {
            let StorageError::MalformedFile {
                line: at,
                reason: why,
                ..
            } = parse(text, path).unwrap_err()
            else {
                panic!("{text:?}: not a malformed-file error");
            };
            assert_eq!(at, line, "{text:?}");
            assert!(why.contains(reason), "{text:?}: {why}");
        }
    }

    #[test]
    fn names_are_plain_ferrolog_files() {
        assert!(check_name("ferrolog-acls").is_ok());
        for bad in [
            "acls",
            "ferrolog-../x",
            "ferrolog-a/b",
            "ferrolog-a b",
            "meta.properties",
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
