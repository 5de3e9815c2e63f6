//! The one way this crate replaces a file whole: the bytes go to a temporary name beside it,
//! are synced, and the temporary file is renamed over the name, so that a reader (or a crash)
//! meets either the old file or the new one, never a part.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `p` through a temporary name (`<name>.tmp-<pid>`, so that two processes
/// never share one), synced before the rename; the directory is synced after it where the
/// platform allows (best effort). On an error the temporary file is removed.
pub(crate) fn write_renamed(p: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temporary_name(p);
    let r = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, p)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return r;
    }
    if let Some(Ok(d)) = p.parent().map(|d| {
        File::open(if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        })
    }) {
        // Best effort: makes the rename durable on file systems that need it.
        let _ = d.sync_all();
    }
    Ok(())
}

fn temporary_name(p: &Path) -> PathBuf {
    let mut name = p.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    p.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_a_file_whole_and_leaves_no_temporary_file() {
        let dir = std::env::temp_dir().join(format!("kalah-write-renamed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("status.json");
        write_renamed(&p, b"first").unwrap();
        write_renamed(&p, b"second, longer").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second, longer");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("status.json")]);
        // A name in a directory that does not exist: an error, and nothing left behind.
        let missing = dir.join("no-such-dir").join("x");
        assert!(write_renamed(&missing, b"x").is_err());
        assert!(!dir.join("no-such-dir").exists());
        // A rename that fails (the name is a directory that is not empty): an error, and the
        // temporary file is gone.
        let taken = dir.join("taken");
        std::fs::create_dir_all(taken.join("inside")).unwrap();
        assert!(write_renamed(&taken, b"x").is_err());
        assert!(!temporary_name(&taken).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
