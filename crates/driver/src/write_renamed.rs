//! The one way this crate replaces a file whole: the bytes go to a temporary name beside it,
//! are synced, and the temporary file is renamed over the name, so that a reader (or a crash)
//! meets either the old file or the new one, never a part.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `p` through a temporary name (`<name>.tmp-<pid>`, so that two processes
/// never share one), synced before the rename; the directory is synced after it where the
/// platform allows (best effort). On an error the temporary file is removed. Temporary files
/// of `p` left by processes killed during a write are removed first (see
/// [`remove_stale_temporaries`]).
pub(crate) fn write_renamed(p: &Path, bytes: &[u8]) -> std::io::Result<()> {
    remove_stale_temporaries(p);
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
    if let Ok(d) = File::open(directory_of(p)) {
        // Best effort: makes the rename durable on file systems that need it.
        let _ = d.sync_all();
    }
    Ok(())
}

/// The directory `p` is in (`.` for a bare file name).
fn directory_of(p: &Path) -> &Path {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

fn temporary_name(p: &Path) -> PathBuf {
    temporary_name_of(p, std::process::id())
}

fn temporary_name_of(p: &Path, pid: u32) -> PathBuf {
    let mut name = p.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{pid}"));
    p.with_file_name(name)
}

/// How long a temporary file must have gone unwritten before it may be taken for a dead
/// process's: a write in progress touches its file every moment, so this only guards against
/// a process that [`process_alive`] cannot see (another machine sharing the directory).
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes the temporary files of `p` (`<name>.tmp-<pid>`) that a process killed during a
/// write left behind: those whose process no longer runs on this machine and that have not
/// been written for [`STALE_AFTER`]. A table checkpoint's can be more than a gigabyte. Best
/// effort: anything it cannot read or remove stays.
fn remove_stale_temporaries(p: &Path) {
    let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    let prefix = format!("{name}.tmp-");
    let Ok(entries) = std::fs::read_dir(directory_of(p)) else {
        return;
    };
    for e in entries.flatten() {
        let file_name = e.file_name();
        let Some(pid) = file_name.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() || process_alive(pid) {
            continue;
        }
        let idle = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok());
        if idle.is_some_and(|d| d >= STALE_AFTER) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Whether a process `pid` runs on this machine (when in doubt, yes).
#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 sends nothing; it only asks whether `pid` names a process.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn process_alive(_pid: u32) -> bool {
    true
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

    #[test]
    fn removes_the_temporary_files_of_dead_processes_only_once_they_are_old() {
        let dir = std::env::temp_dir().join(format!("kalah-write-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("table.ckp");
        // A process that has ended (and been reaped), and one that still runs.
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        dead.wait().unwrap();
        let mut alive = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let old = std::time::SystemTime::now() - 2 * STALE_AFTER;
        let make = |name: PathBuf, when: Option<std::time::SystemTime>| {
            let f = File::create(&name).unwrap();
            if let Some(t) = when {
                f.set_modified(t).unwrap();
            }
            name
        };
        let stale = make(temporary_name_of(&p, dead_pid), Some(old));
        let fresh = make(temporary_name_of(&dir.join("fresh"), dead_pid), None);
        let fresh_target = dir.join("fresh");
        let running = make(temporary_name_of(&p, alive.id()), Some(old));
        let other = make(dir.join(format!("table.ckp.tmp-{dead_pid}x")), Some(old));
        let unrelated = make(
            temporary_name_of(&dir.join("ledger.jsonl"), dead_pid),
            Some(old),
        );
        write_renamed(&p, b"table").unwrap();
        write_renamed(&fresh_target, b"x").unwrap();
        assert!(
            !stale.exists(),
            "a dead process's old temporary file is removed"
        );
        assert!(fresh.exists(), "one written lately stays");
        assert!(running.exists(), "a running process's stays");
        assert!(other.exists(), "a name that is not <name>.tmp-<pid> stays");
        assert!(
            unrelated.exists(),
            "another file's temporaries are left to its writes"
        );
        assert_eq!(std::fs::read(&p).unwrap(), b"table");
        alive.kill().unwrap();
        alive.wait().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
