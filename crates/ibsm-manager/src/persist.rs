//! How the SM writes its files (`guid2lid`, the dumps; ibsmd's pid file): to a new
//! temporary file in the same directory, flushed, then renamed over the old one.
//!
//! A reader, or a crash, never sees half a file. The temporary file is created new
//! (`O_CREAT | O_EXCL`, which follows no symbolic link) under a name nobody can guess
//! (std's hasher keys come from the OS's random source), and the rename replaces
//! whatever is at the file's name, a link included, instead of writing through it: a
//! link planted at either name (say in a directory other users can write to) cannot
//! redirect a write made as root.
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("ibsm-persist-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("guid2lid");
//! ibsm_manager::persist::write_atomic(&path, b"0x1 0x1 0x1\n")?;
//! assert_eq!(std::fs::read(&path)?, b"0x1 0x1 0x1\n");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// A file that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct WriteError {
    /// The file (its temporary sibling while that was being written).
    pub path: PathBuf,
    /// The I/O error.
    #[source]
    pub source: std::io::Error,
}

/// Temporary names tried before giving up (another file at each of them).
const TEMP_TRIES: u32 = 8;

/// A temporary name for `name` no other local user can predict.
pub(crate) fn temp_name(name: &str) -> String {
    use std::hash::BuildHasher;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let salt = std::collections::hash_map::RandomState::new().hash_one((std::process::id(), n));
    format!(".{name}.{salt:016x}.tmp")
}

/// Writes `bytes` to `path` as the module says (the directory must exist).
///
/// # Errors
/// [`WriteError`] naming the temporary file or `path` when creating, writing, flushing
/// or renaming fails; the temporary file is removed then, `path` left as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomic_with(path, bytes, &mut temp_name)
}

/// [`write_atomic`] with the temporary names from `tmp_name` (given the file's name).
pub(crate) fn write_atomic_with(
    path: &Path,
    bytes: &[u8],
    tmp_name: &mut dyn FnMut(&str) -> String,
) -> Result<(), WriteError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy());
    let mut tries = 0;
    let (tmp, mut file) = loop {
        let tmp = dir.join(tmp_name(&name));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < TEMP_TRIES => {
                tries += 1;
            }
            Err(source) => return Err(WriteError { path: tmp, source }),
        }
    };
    let done = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|source| WriteError {
            path: tmp.clone(),
            source,
        })
        .and_then(|()| {
            std::fs::rename(&tmp, path).map_err(|source| WriteError {
                path: path.to_owned(),
                source,
            })
        });
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ibsm-persist-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Links planted at the file's name and at a temporary name it would use leave
    /// their targets untouched; the file becomes a regular file with the bytes.
    #[test]
    fn planted_links_redirect_nothing() {
        let d = scratch("links");
        let victim = d.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let path = d.join("guid2lid");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        // The first temporary name is taken by a link: the next one is used.
        let planted = d.join(".guid2lid.planted.tmp");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let mut names = vec![".guid2lid.fresh.tmp", ".guid2lid.planted.tmp"];
        write_atomic_with(&path, b"new", &mut |_| names.pop().unwrap().to_owned()).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert!(!d.join(".guid2lid.fresh.tmp").exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn temporary_names_differ() {
        assert_ne!(temp_name("a"), temp_name("a"));
        assert!(temp_name("a").starts_with(".a.") && temp_name("a").ends_with(".tmp"));
    }
}
