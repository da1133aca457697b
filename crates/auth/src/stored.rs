//! Broker state that Kafka keeps in its metadata log and a single node keeps as documents of the
//! storage layer (the ACLs, the SCRAM credentials): loading the newest copy, checking every
//! copy, bringing directories that missed a change up to date, and writing each change under a
//! new generation, one change at a time.
//!
//! At startup the newest copy is written, under its own generation, to every online directory
//! holding an older one, so a directory that missed a change while it was offline holds the
//! newest again. A directory that fails to open at startup takes no part in choosing the newest
//! copy: a change kept only there is not in force until the directory is back, and then wins,
//! being newer; unless a change was made in the meantime, whose generation outranks it, in
//! which case it is lost. The broker warns when it starts with a directory offline.
//!
//! A document found older than the generation recorded for it apart
//! ([`ferrolog_storage::manager::GENERATIONS_FILE`]), or missing while one is recorded, was
//! deleted or rolled back: starting on it would bring back what later changes removed (deleted
//! ACLs, revoked credentials) or, with no ACLs at all, open everything under
//! `allow.everyone.if.no.acl.found=true`. The broker refuses to start then, unless
//! `ferrolog.accept.rolled.back.documents=true` says the older copy is wanted: it is then
//! stored again under a generation above the recorded one. A copy readable or writable by
//! others than the broker's user is reported at startup (the broker writes them 0600).

use std::path::PathBuf;
use std::sync::Arc;

use ferrolog_storage::StorageError;
use ferrolog_storage::manager::{Document, LogManager};
use parking_lot::{Mutex, MutexGuard};

/// One document and the generation written last.
#[derive(Debug)]
pub struct StoredDocument {
    manager: Arc<LogManager>,
    name: &'static str,
    /// Held while a change is written, which serializes changes.
    generation: Mutex<u64>,
}

impl StoredDocument {
    /// Loads the document `name`: every copy's body is parsed (damage in an older copy is as
    /// much a fault as in the newest, and stops startup naming the file and line), and the
    /// newest is spread to the directories holding older ones. Returns the newest's contents.
    pub fn open<T>(
        manager: Arc<LogManager>,
        name: &'static str,
        parse: impl Fn(&str) -> Result<T, (usize, String)>,
        rollback: Rollback,
    ) -> Result<(Self, T), StorageError> {
        let copies = manager.documents().read_copies(name)?;
        for copy in &copies {
            parse_copy(name, copy, &parse)?;
            warn_if_shared(copy);
        }
        let mut document = Document::newest_of(copies);
        let contents = parse_copy(name, &document, &parse)?;
        let recorded = manager.documents().recorded_generation(name)?;
        if document.generation < recorded {
            if rollback == Rollback::Refuse {
                return Err(StorageError::Fatal(format!(
                    "{name} is at generation {} but generation {recorded} was written: the file was deleted or replaced by an older copy. Restore it, or start once with ferrolog.accept.rolled.back.documents=true to keep what is there",
                    document.generation
                )));
            }
            tracing::warn!(
                document = name,
                found = document.generation,
                recorded,
                "starting on an older copy, as ferrolog.accept.rolled.back.documents asks; it is stored again as the newest"
            );
            document.generation = recorded + 1;
            manager.documents().store(name, &document)?;
        }
        // Under its own generation: a raised one could outrank a change kept only in a
        // directory that failed to open this time.
        manager.documents().spread(name, &document)?;
        let stored = Self {
            manager,
            name,
            generation: Mutex::new(document.generation),
        };
        Ok((stored, contents))
    }

    /// Starts a change; other changes wait until it is dropped.
    pub fn change(&self) -> Change<'_> {
        Change {
            document: self,
            generation: self.generation.lock(),
        }
    }
}

/// A change in progress, holding the document's write lock.
#[derive(Debug)]
pub struct Change<'a> {
    document: &'a StoredDocument,
    generation: MutexGuard<'a, u64>,
}

impl Change<'_> {
    /// Stores `body` under the next generation. The generation is spent even when the store
    /// fails: a copy may have been written before the failure, and the next change must not
    /// reuse its number.
    pub fn store(&mut self, body: String) -> Result<(), StorageError> {
        *self.generation += 1;
        let document = Document {
            generation: *self.generation,
            body,
            source: None,
        };
        self.document
            .manager
            .documents()
            .store(self.document.name, &document)
    }
}

/// Whether a document found older than its recorded generation may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rollback {
    /// Startup stops, naming the document (the default).
    Refuse,
    /// The older copy is kept and stored again as the newest
    /// (`ferrolog.accept.rolled.back.documents=true`).
    Accept,
}

/// Reports a copy others than the broker's user may read or write.
fn warn_if_shared(copy: &Document) {
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = &copy.source else {
        return;
    };
    if let Ok(metadata) = std::fs::metadata(path) {
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            tracing::warn!(
                file = %path.display(),
                mode = format!("{mode:o}"),
                "a file holding credentials or authorization is open to other users; make it 0600 (chmod 600)"
            );
        }
    }
}

/// One copy's contents; the error names its file and line.
fn parse_copy<T>(
    name: &str,
    copy: &Document,
    parse: impl Fn(&str) -> Result<T, (usize, String)>,
) -> Result<T, StorageError> {
    parse(&copy.body).map_err(|(line, reason)| StorageError::MalformedFile {
        path: copy.source.clone().unwrap_or_else(|| PathBuf::from(name)),
        // The body starts on the third line of the file.
        line: line + 2,
        reason,
    })
}

/// A text field made safe for a space-separated line: `%`, space, tab and line breaks are
/// written `%25`, `%20`, `%09`, `%0A` and `%0D`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            ' ' => out.push_str("%20"),
            '\t' => out.push_str("%09"),
            '\n' => out.push_str("%0A"),
            '\r' => out.push_str("%0D"),
            other => out.push(other),
        }
    }
    out
}

/// The text [`escape`] wrote; `None` for a `%` that is not one of its escapes.
pub fn unescape(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 3)?;
        out.push(match code {
            "25" => '%',
            "20" => ' ',
            "09" => '\t',
            "0A" => '\n',
            "0D" => '\r',
            _ => return None,
        });
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Some(out)
}
