//! One builder at a time in a database directory: an exclusive lock on `DIR/build.lock`,
//! held while levels are built, with the holder's process id written in the file so that a
//! second builder can say which process it waits for.

use super::DbError;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The lock file's name in a database directory.
pub const LOCK_FILE: &str = "build.lock";

/// A held lock; released when dropped (or when the process ends, however it ends).
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

/// Takes the build lock of `dir` (which must exist), or [`DbError::Busy`] naming the process
/// that holds it.
pub fn lock_dir(dir: &Path) -> Result<DirLock, DbError> {
    let path = dir.join(LOCK_FILE);
    let io = |source| DbError::Io {
        path: path.clone(),
        source,
    };
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(io)?;
    if !try_lock(&file).map_err(io)? {
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        let holder = holder.trim();
        return Err(DbError::Busy {
            path: dir.to_path_buf(),
            holder: if holder.is_empty() {
                "another process".into()
            } else {
                format!("process {holder}")
            },
        });
    }
    file.set_len(0).map_err(io)?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    writeln!(file, "{}", std::process::id()).map_err(io)?;
    Ok(DirLock { _file: file })
}

/// Takes an exclusive lock on `file` without waiting (`flock`): `Ok(false)` when another
/// process holds it. The system releases it when the file is closed or the process ends.
#[cfg(unix)]
pub fn try_lock(file: &File) -> std::io::Result<bool> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a file descriptor this function borrows; no memory is involved.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// Without `flock`: always taken.
#[cfg(not(unix))]
pub fn try_lock(_file: &File) -> std::io::Result<bool> {
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_with_the_holder_named_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock_dir(dir.path()).unwrap();
        let e = lock_dir(dir.path()).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, DbError::Busy { .. }), "{text}");
        assert!(
            text.contains(&format!("process {}", std::process::id())),
            "{text}"
        );
        drop(first);
        lock_dir(dir.path()).unwrap();
    }
}
