//! Fault injection for tests: named points in the file layer (writes, fsyncs, renames, index
//! allocation and mapping) where a test makes the next operations fail with a chosen errno.
//! They are the `fail` crate's failpoints, compiled in only with this crate's `failpoints`
//! feature; without it [`point`] is an empty function the optimizer removes.
//!
//! A test arms a point with `fail::cfg("log.write", "return(ENOSPC)")` (or `"1*return(EIO)"`
//! to fail once); the argument names the errno.
//!
//! | point | where |
//! |---|---|
//! | `log.open` | opening or creating a segment's `.log` |
//! | `log.write` | writing appended bytes to a `.log` |
//! | `log.reserve` | reserving blocks ahead of a `.log`'s data |
//! | `log.fsync` | fdatasync of a `.log` |
//! | `index.allocate` | allocating blocks for index entries |
//! | `index.mmap` | mapping an index file |
//! | `index.fsync` | msync and fsync of an index |
//! | `fs.write` | writing the temporary file of an atomic replace (checkpoints, snapshots, configs) |
//! | `fs.fsync` | fsync of such a file |
//! | `fs.rename` | renaming files (atomic replaces, segment suffixes, swaps) |
//! | `fs.fsync_dir` | fsync of a directory |
//!
//! One point makes a crash test's kills land inside a step instead of failing it: armed with
//! `sleep(ms)`, [`pause`] waits there.
//!
//! | point | where |
//! |---|---|
//! | `log.move.between-renames` | a log moving to another directory, between the rename of its current directory to `-delete` and of its future log's to the plain name |

use std::io;

/// Fails with the errno armed for `name`, if any.
#[cfg(feature = "failpoints")]
pub(crate) fn point(name: &str) -> io::Result<()> {
    fail::fail_point!(name, |errno: Option<String>| Err(injected(
        errno.as_deref()
    )));
    Ok(())
}

/// Without the `failpoints` feature no point can be armed.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn point(_name: &str) -> io::Result<()> {
    Ok(())
}

/// Waits as armed for `name` (`sleep(ms)`), if armed.
#[cfg(feature = "failpoints")]
pub(crate) fn pause(name: &str) {
    fail::fail_point!(name);
}

/// Without the `failpoints` feature no point can be armed.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn pause(_name: &str) {}

/// The error an armed point returns: the errno named by its argument (EIO when none).
#[cfg(feature = "failpoints")]
fn injected(errno: Option<&str>) -> io::Error {
    let code = match errno {
        Some("ENOSPC") => libc::ENOSPC,
        Some("EDQUOT") => libc::EDQUOT,
        Some("EMFILE") => libc::EMFILE,
        Some("ENFILE") => libc::ENFILE,
        Some("ENOMEM") => libc::ENOMEM,
        _ => libc::EIO,
    };
    io::Error::from_raw_os_error(code)
}
