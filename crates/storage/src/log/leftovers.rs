//! Leftovers of interrupted operations in a partition directory, settled before its segments
//! open: `*.deleted` files are removed; `.swap` files at or above the lowest `.cleaned` base
//! belong to an interrupted split and are removed, then every `.cleaned` file is removed; the
//! remaining `.swap` segments replace the segments they overlap and lose their suffix.

use std::path::{Path, PathBuf};

use super::load::LoadReport;
use crate::error::{Result, StorageError};
use crate::fs::{remove_if_exists, rename_if_exists};
use crate::segment::{
    CLEANED_SUFFIX, DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX, TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX, parse_base_offset, without_suffix,
};

/// The files (not directories) in `dir`, sorted by name.
pub(super) fn list_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(StorageError::io("list", dir))? {
        let entry = entry.map_err(StorageError::io("list", dir))?;
        let file_type = entry
            .file_type()
            .map_err(StorageError::io("stat", entry.path()))?;
        if file_type.is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

/// A path's file name, or "" when it has none that is UTF-8.
pub(super) fn file_name(path: &Path) -> &str {
    path.file_name()
        .and_then(|name| name.to_str())
        .unwrap_or("")
}

fn is_segment_file(name: &str) -> bool {
    [
        LOG_SUFFIX,
        INDEX_SUFFIX,
        TIME_INDEX_SUFFIX,
        TXN_INDEX_SUFFIX,
    ]
    .iter()
    .any(|suffix| name.ends_with(suffix))
        && parse_base_offset(name).is_some()
}

/// Removes `.deleted` and `.cleaned` files and completes or abandons `.swap` files (§1.4).
pub(super) fn settle_leftovers(dir: &Path, report: &mut LoadReport) -> Result<()> {
    let mut cleaned = Vec::new();
    let mut swaps = Vec::new();
    for path in list_files(dir)? {
        let name = file_name(&path);
        if name.ends_with(DELETED_SUFFIX) {
            remove_if_exists(&path)?;
            report.removed_files.push(path);
        } else if name.ends_with(CLEANED_SUFFIX) {
            cleaned.push(path);
        } else if name.ends_with(SWAP_SUFFIX) {
            swaps.push(path);
        }
    }
    let min_cleaned_base = cleaned
        .iter()
        .filter_map(|path| parse_base_offset(file_name(path)))
        .min();
    let mut kept_swaps = Vec::new();
    for swap in swaps {
        let base = parse_base_offset(file_name(&swap));
        if let (Some(base), Some(min_cleaned)) = (base, min_cleaned_base)
            && base >= min_cleaned
        {
            // Output of an interrupted split: the originals are still complete.
            remove_if_exists(&swap)?;
            report.removed_files.push(swap);
            continue;
        }
        kept_swaps.push(swap);
    }
    for path in cleaned {
        remove_if_exists(&path)?;
        report.removed_files.push(path);
    }

    // The offsets the completed swap segments cover replace whatever else covers them.
    let mut swap_range: Option<(i64, i64)> = None;
    for swap in &kept_swaps {
        let name = file_name(swap);
        if !name.ends_with(&format!("{LOG_SUFFIX}{SWAP_SUFFIX}")) {
            continue;
        }
        let Some(base) = parse_base_offset(name) else {
            continue;
        };
        let next = next_offset_of_log_file(swap, base)?;
        swap_range = Some(match swap_range {
            None => (base, next),
            Some((low, high)) => (low.min(base), high.max(next)),
        });
    }
    if let Some((low, high)) = swap_range {
        for path in list_files(dir)? {
            let name = file_name(&path);
            if name.ends_with(SWAP_SUFFIX) || !is_segment_file(name) {
                continue;
            }
            if parse_base_offset(name).is_some_and(|base| (low..high).contains(&base)) {
                remove_if_exists(&path)?;
                report.removed_files.push(path);
            }
        }
    }
    for swap in kept_swaps {
        if let Some(target) = without_suffix(&swap, SWAP_SUFFIX) {
            rename_if_exists(&swap, &target)?;
            report.completed_swaps.push(target);
        }
    }
    Ok(())
}

/// The offset after the last whole entry of a `.log` file, read without opening its indexes.
fn next_offset_of_log_file(path: &Path, base_offset: i64) -> Result<i64> {
    let file = crate::segment::RecordsFile::open(path, None)?;
    let mut next = base_offset;
    file.walk_headers(0, file.size(), |entry| {
        next = entry.next_offset();
        std::ops::ControlFlow::Continue(())
    })?;
    Ok(next)
}
