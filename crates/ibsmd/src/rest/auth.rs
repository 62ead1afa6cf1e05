//! The API's users: a credentials file of `user:password` lines (`#` comments and
//! blank lines skipped; the password is everything after the first `:`), which must be
//! readable by its owner only, as the UFM plugin's HTTP basic auth checks them.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Why the credentials file cannot be used (ibsmd refuses to start).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CredentialsError {
    /// It cannot be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Group or others may read or write it: its passwords are not secret.
    #[error(
        "{}: mode {mode:04o} lets group or others at the passwords: make it readable by its owner only (chmod 600)",
        path.display()
    )]
    Permissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A line that is not `user:password`.
    #[error("{}: line {line}: not user:password (both non-empty)", path.display())]
    Line {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
    },
    /// No user at all.
    #[error("{}: no user:password line", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// The users and their passwords.
#[derive(Clone)]
pub(crate) struct Credentials {
    users: Vec<(String, String)>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the passwords.
        f.debug_struct("Credentials")
            .field("users", &self.users.len())
            .finish()
    }
}

impl Credentials {
    /// Reads the credentials file, refusing one group or others may read or write.
    ///
    /// # Errors
    /// [`CredentialsError`].
    pub(crate) fn load(path: &Path) -> Result<Self, CredentialsError> {
        let io = |source| CredentialsError::Io {
            path: path.to_owned(),
            source,
        };
        let mode = std::fs::metadata(path).map_err(io)?.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(CredentialsError::Permissions {
                path: path.to_owned(),
                mode,
            });
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        Self::parse(&text).map_err(|line| match line {
            0 => CredentialsError::Empty {
                path: path.to_owned(),
            },
            line => CredentialsError::Line {
                path: path.to_owned(),
                line,
            },
        })
    }

    /// The users of a credentials file's text; `Err(line)` names the first bad line
    /// (0: no user at all).
    pub(crate) fn parse(text: &str) -> Result<Self, usize> {
        let mut users = Vec::new();
        for (i, l) in text.lines().enumerate() {
            let l = l.trim_end_matches('\r');
            if l.trim().is_empty() || l.trim_start().starts_with('#') {
                continue;
            }
            match l.split_once(':') {
                Some((u, p)) if !u.is_empty() && !p.is_empty() => {
                    users.push((u.to_owned(), p.to_owned()));
                }
                _ => return Err(i + 1),
            }
        }
        if users.is_empty() {
            return Err(0);
        }
        Ok(Self { users })
    }

    /// Whether `user` with `password` is one of the users. Every entry is compared
    /// whole, so the time taken does not tell how much of a guess was right.
    pub(crate) fn check(&self, user: &str, password: &str) -> bool {
        let mut ok = false;
        for (u, p) in &self.users {
            ok |= same(u.as_bytes(), user.as_bytes()) & same(p.as_bytes(), password.as_bytes());
        }
        ok
    }
}

/// `a == b` in a time that depends on the lengths only.
fn same(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0);
    }
    diff == 0
}
