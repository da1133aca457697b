//! The generation each document was last written at, recorded apart from the documents
//! (`ferrolog-document-generations` in every data directory): a document found older than its
//! record, or missing while its record says it was written, was deleted or rolled back (a file
//! restored from an old backup, say). Its owner decides what that means; for the ACLs it would
//! silently open what they closed.
//!
//! Format: one `name generation` line per document. Written as the documents are (atomically,
//! mode 0600), after each change of a document, so a crash between the two leaves the record
//! behind the document, never ahead of it.

use std::collections::BTreeMap;

use super::data_dir::DataDir;
use super::documents::Documents;
use crate::error::{Result, StorageError};
use crate::fs::{atomic_write_private, read_text_if_exists};

/// The record's file name at the top of each data directory.
pub const GENERATIONS_FILE: &str = "ferrolog-document-generations";

impl Documents<'_> {
    /// The highest generation any online directory records for the document `name` (0 when
    /// none records it): what its newest copy should be at least.
    pub fn recorded_generation(&self, name: &str) -> Result<u64> {
        let mut highest = 0;
        for dir in self.manager.dirs.iter().filter(|dir| !dir.is_offline()) {
            if let Some(&generation) = read_recorded(dir)?.get(name) {
                highest = highest.max(generation);
            }
        }
        Ok(highest)
    }
}

/// Records that `name` was written at `generation` in `dir` (a lower one already there is
/// replaced, a higher one kept).
pub(super) fn record(dir: &DataDir, name: &str, generation: u64) -> Result<()> {
    let _writing = dir.generation_writes.lock();
    let mut recorded = read_recorded(dir)?;
    let entry = recorded.entry(name.to_owned()).or_insert(0);
    if *entry >= generation {
        return Ok(());
    }
    *entry = generation;
    let text: String = recorded
        .iter()
        .map(|(name, generation)| format!("{name} {generation}\n"))
        .collect();
    atomic_write_private(&dir.path().join(GENERATIONS_FILE), text.as_bytes())
}

fn read_recorded(dir: &DataDir) -> Result<BTreeMap<String, u64>> {
    let path = dir.path().join(GENERATIONS_FILE);
    let Some(text) = read_text_if_exists(&path)? else {
        return Ok(BTreeMap::new());
    };
    parse(&text).map_err(|(line, reason)| StorageError::MalformedFile { path, line, reason })
}

fn parse(text: &str) -> std::result::Result<BTreeMap<String, u64>, (usize, String)> {
    let mut recorded = BTreeMap::new();
    for (index, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let parsed = line
            .split_once(' ')
            .and_then(|(name, generation)| Some((name, generation.trim().parse::<u64>().ok()?)));
        let Some((name, generation)) = parsed else {
            return Err((
                index + 1,
                format!("expected `name generation`, found {line:?}"),
            ));
        };
        recorded.insert(name.to_owned(), generation);
    }
    Ok(recorded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_a_document_and_its_generation() {
        let recorded = parse("ferrolog-acls 12\nferrolog-scram-credentials 3\n").unwrap();
        assert_eq!(recorded.get("ferrolog-acls"), Some(&12));
        assert_eq!(parse("").unwrap().len(), 0);
        assert_eq!(parse("ferrolog-acls twelve\n").unwrap_err().0, 1);
        assert_eq!(parse("ferrolog-acls 1\nbroken\n").unwrap_err().0, 2);
    }
}
