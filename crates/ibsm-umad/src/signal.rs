//! Stopping a daemon cleanly on SIGINT/SIGTERM, and noticing SIGHUP, without `unsafe`
//! in the caller.
//!
//! [`StopSignals::install`] sets a handler that only records the signal number in an
//! atomic; the daemon's loop checks [`StopSignals::caught`] between bounded waits. The
//! handler is installed without `SA_RESTART`, so a wait in `poll` ends early with `EINTR`
//! (which [`UmadPort::recv`](crate::UmadPort::recv) treats as "nothing yet").
//! [`RequestSignal`] does the same for SIGHUP, which by daemon convention (OpenSM among
//! them) asks for a reload or a resweep rather than a stop, and for SIGUSR1 (reopen the
//! log file).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::sys;

/// Handle to the process-wide stop flag set by SIGINT and SIGTERM.
#[derive(Debug, Clone, Copy)]
pub struct StopSignals(());

impl StopSignals {
    /// Installs the handler for SIGINT and SIGTERM (idempotent).
    ///
    /// # Errors
    /// [`Error::Io`] when `sigaction` refuses.
    pub fn install() -> Result<Self> {
        for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
            sys::catch_stop_signal(sig).map_err(|e| Error::io("sigaction", name, &e))?;
        }
        Ok(Self(()))
    }

    /// The signal caught since installation (`SIGINT` = 2, `SIGTERM` = 15), if any.
    #[must_use]
    pub fn caught(&self) -> Option<i32> {
        match sys::STOP_SIGNAL.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// The conventional name of a caught signal number.
    #[must_use]
    pub fn name(sig: i32) -> &'static str {
        match sig {
            libc::SIGINT => "SIGINT",
            libc::SIGTERM => "SIGTERM",
            _ => "signal",
        }
    }
}

/// Handle to a process-wide flag set by a signal that asks for something rather than a
/// stop: SIGHUP (by daemon convention a reload or a resweep) or SIGUSR1 (reopen the log
/// file: logrotate renames it, then signals).
///
/// Several signals before [`RequestSignal::take`] count as one request.
#[derive(Debug, Clone, Copy)]
pub struct RequestSignal {
    flag: &'static AtomicBool,
}

impl RequestSignal {
    /// Installs the handler for SIGHUP (idempotent). Until then SIGHUP keeps its default
    /// action, which ends the process.
    ///
    /// # Errors
    /// [`Error::Io`] when `sigaction` refuses.
    pub fn hangup() -> Result<Self> {
        sys::catch_hangup().map_err(|e| Error::io("sigaction", "SIGHUP", &e))?;
        Ok(Self { flag: &sys::HANGUP })
    }

    /// Installs the handler for SIGUSR1 (idempotent). Until then SIGUSR1 keeps its
    /// default action, which ends the process.
    ///
    /// # Errors
    /// [`Error::Io`] when `sigaction` refuses.
    pub fn user1() -> Result<Self> {
        sys::catch_user1().map_err(|e| Error::io("sigaction", "SIGUSR1", &e))?;
        Ok(Self { flag: &sys::USER1 })
    }

    /// Whether the signal arrived since the last call (or since installation); clears it.
    #[must_use]
    pub fn take(&self) -> bool {
        self.flag.swap(false, Ordering::SeqCst)
    }
}

/// Ends the process with `code` after flushing stdout and stderr, running the normal
/// exit handlers but never hanging in them.
///
/// Under ibsim's umad2sim preload, the preload's own `atexit` handler (which tells ibsim
/// the client is gone, freeing one of its ten client slots) joins its socket-reader
/// thread and sometimes deadlocks doing so (seen with libumad2sim of ibsim 0.12): it
/// holds its global lock while it cancels and joins the reader, and a reader that has
/// just read a MAD waits for that lock, which is no cancellation point. A watchdog
/// thread ends the process with `_exit(code)` if the handlers have not finished within
/// `grace`. (By its source the same handler can also crash the process: it invalidates
/// the socket before cancelling the reader, and a reader woken by a MAD in between
/// reads nothing and routes to no queue. Not seen in some 300 exits with MADs in
/// flight; quiet the port before exiting where it matters.)
pub fn exit_process(code: u8, grace: std::time::Duration) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    let _ = std::thread::Builder::new()
        .name("exit-watchdog".into())
        .spawn(move || {
            std::thread::sleep(grace);
            sys::exit_immediately(i32::from(code));
        });
    std::process::exit(i32::from(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raised_signal_is_caught_not_fatal() {
        let s = StopSignals::install().unwrap();
        assert_eq!(s.caught(), None);
        // Raise SIGTERM at ourselves through the safe std API of a child-less process:
        // `kill -TERM <our pid>` would also do; std::process has no raise, so use a shell.
        let st = std::process::Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while s.caught().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(s.caught(), Some(libc::SIGTERM));
        assert_eq!(StopSignals::name(libc::SIGTERM), "SIGTERM");
    }

    #[test]
    fn hangup_is_taken_once_and_does_not_stop() {
        let h = RequestSignal::hangup().unwrap();
        assert!(!h.take());
        for _ in 0..2 {
            let st = std::process::Command::new("kill")
                .args(["-HUP", &std::process::id().to_string()])
                .status()
                .unwrap();
            assert!(st.success());
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !sys::HANGUP.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // Give the second signal a moment to land too: both fold into one request.
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(h.take());
        assert!(!h.take(), "taken once");
    }

    #[test]
    fn user1_is_taken_once_and_does_not_stop() {
        let u = RequestSignal::user1().unwrap();
        assert!(!u.take());
        let st = std::process::Command::new("kill")
            .args(["-USR1", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !sys::USER1.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(u.take());
        assert!(!u.take(), "taken once");
    }
}
