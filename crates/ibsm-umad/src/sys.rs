//! Every system call of the crate, and the only module allowed `unsafe`.
//!
//! Only plain libc symbols that ibsim's `libumad2sim.so` preload interposes are used
//! (`open read write ioctl poll close opendir`, plus `readdir`/`closedir` on a handle from
//! that `opendir`, and `dlsym` to detect the preload). `std::fs` is avoided on purpose: it
//! calls `open64`/`openat`, which the preload does not see, so under ibsim it would read
//! the real, empty `/sys` and `/dev`.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::io;

/// An owned file descriptor, closed on drop with plain `close` (unless
/// [`Fd::keep_open_on_drop`] was called).
#[derive(Debug)]
pub(crate) struct Fd {
    raw: libc::c_int,
    close_on_drop: bool,
}

impl Fd {
    pub(crate) fn raw(&self) -> libc::c_int {
        self.raw
    }

    /// Leaves the descriptor open when this is dropped: the process exit closes it.
    pub(crate) fn keep_open_on_drop(&mut self) {
        self.close_on_drop = false;
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        if !self.close_on_drop {
            return;
        }
        // SAFETY: we own this descriptor (returned by `open`, never duplicated or closed
        // elsewhere); closing it once here is the end of its life.
        unsafe {
            libc::close(self.raw);
        }
    }
}

fn cstring(path: &str) -> io::Result<CString> {
    CString::new(path).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))
}

/// Turns a libc-style return value into a result. The umad2sim preload returns negative
/// errno values directly (e.g. `-EAGAIN`) instead of -1 + errno, so both forms are
/// accepted.
fn check(ret: isize) -> io::Result<usize> {
    match ret {
        r if r >= 0 => Ok(r as usize),
        -1 => Err(io::Error::last_os_error()),
        r => Err(io::Error::from_raw_os_error((-r) as i32)),
    }
}

/// `open(path, flags)`.
pub(crate) fn open(path: &str, flags: libc::c_int) -> io::Result<Fd> {
    let c = cstring(path)?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call; `open` does
    // not keep the pointer. Flags are plain integers.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    check(fd as isize).map(|_| Fd {
        raw: fd,
        close_on_drop: true,
    })
}

/// `read(fd, buf)`.
pub(crate) fn read(fd: &Fd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a valid writable region of `buf.len()` bytes for the whole call.
    let r = unsafe { libc::read(fd.raw(), buf.as_mut_ptr().cast(), buf.len()) };
    check(r)
}

/// `write(fd, buf)`.
pub(crate) fn write(fd: &Fd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a valid readable region of `buf.len()` bytes for the whole call.
    let r = unsafe { libc::write(fd.raw(), buf.as_ptr().cast(), buf.len()) };
    check(r)
}

/// `poll` for readability; `Ok(true)` when data can be read.
pub(crate) fn poll_in(fd: &Fd, timeout_ms: i32) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd: fd.raw(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `p` is one valid pollfd living on our stack for the duration of the call,
    // and we pass nfds = 1 to match.
    let r = unsafe { libc::poll(&raw mut p, 1, timeout_ms) };
    match check(r as isize) {
        Ok(0) => Ok(false),
        Ok(_) => Ok(p.revents & libc::POLLIN != 0),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(false),
        Err(e) => Err(e),
    }
}

/// `ioctl(fd, request, arg)` where `arg` points to a struct the kernel reads and writes.
pub(crate) fn ioctl_buf(fd: &Fd, request: u32, arg: &mut [u8]) -> io::Result<()> {
    // SAFETY: `arg` is a writable buffer of exactly the size encoded in `request` (the
    // callers build it from the ABI tables), valid for the whole call.
    let r = unsafe { libc::ioctl(fd.raw(), libc::c_ulong::from(request), arg.as_mut_ptr()) };
    check(r as isize).map(|_| ())
}

/// `ioctl(fd, request)` for requests without an argument.
pub(crate) fn ioctl_none(fd: &Fd, request: u32) -> io::Result<()> {
    // SAFETY: the request takes no argument; the 0 passed is ignored by the kernel.
    let r = unsafe { libc::ioctl(fd.raw(), libc::c_ulong::from(request), 0usize) };
    check(r as isize).map(|_| ())
}

/// The whole (small) content of a sysfs-style file.
pub(crate) fn read_file(path: &str) -> io::Result<String> {
    let fd = open(path, libc::O_RDONLY)?;
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = read(&fd, &mut chunk)?;
        if n == 0 {
            break;
        }
        out.extend_from_slice(&chunk[..n]);
        if out.len() > 1 << 20 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "file larger than 1 MiB",
            ));
        }
    }
    String::from_utf8(out).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

/// Names in a directory (without `.` and `..`), sorted.
pub(crate) fn list_dir(path: &str) -> io::Result<Vec<String>> {
    let c = cstring(path)?;
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    let dir = unsafe { libc::opendir(c.as_ptr()) };
    if dir.is_null() {
        return Err(io::Error::last_os_error());
    }
    let mut names = Vec::new();
    loop {
        // SAFETY: `dir` is a non-null handle from `opendir` that we have not closed.
        let ent = unsafe { libc::readdir(dir) };
        if ent.is_null() {
            break;
        }
        // SAFETY: `readdir` returned a valid dirent whose `d_name` is NUL-terminated and
        // stays valid until the next readdir/closedir on `dir`; we copy it out at once.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) };
        let name = name.to_string_lossy();
        if name != "." && name != ".." {
            names.push(name.into_owned());
        }
    }
    // SAFETY: `dir` came from `opendir` and is closed exactly once.
    unsafe {
        libc::closedir(dir);
    }
    names.sort();
    Ok(names)
}

/// Whether ibsim's umad2sim preload is loaded into this process.
pub(crate) fn umad2sim_preloaded() -> bool {
    // SAFETY: dlsym with RTLD_DEFAULT and a static NUL-terminated name only looks the
    // symbol up; the returned pointer is compared with null and never called.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"sim_client_init".as_ptr()) };
    !p.is_null()
}

/// The last stop signal caught (0 = none), written only by [`on_stop_signal`].
pub(crate) static STOP_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The handler: one atomic store, which is async-signal-safe.
extern "C" fn on_stop_signal(sig: libc::c_int) {
    STOP_SIGNAL.store(sig, std::sync::atomic::Ordering::SeqCst);
}

/// Set by [`on_hangup`] when SIGHUP arrives, cleared by whoever takes the request.
pub(crate) static HANGUP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The SIGHUP handler: one atomic store, which is async-signal-safe.
extern "C" fn on_hangup(_sig: libc::c_int) {
    HANGUP.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Set by [`on_user1`] when SIGUSR1 arrives, cleared by whoever takes the request.
pub(crate) static USER1: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The SIGUSR1 handler: one atomic store, which is async-signal-safe.
extern "C" fn on_user1(_sig: libc::c_int) {
    USER1.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Installs [`on_user1`] for SIGUSR1, the same way as [`catch_stop_signal`].
pub(crate) fn catch_user1() -> io::Result<()> {
    install_handler(libc::SIGUSR1, on_user1)
}

/// Installs [`on_stop_signal`] for `sig` with `sigaction` (no `SA_RESTART`, so a blocking
/// `poll` returns `EINTR` and the caller notices the signal at once).
pub(crate) fn catch_stop_signal(sig: libc::c_int) -> io::Result<()> {
    install_handler(sig, on_stop_signal)
}

/// Installs [`on_hangup`] for SIGHUP, the same way as [`catch_stop_signal`].
pub(crate) fn catch_hangup() -> io::Result<()> {
    install_handler(libc::SIGHUP, on_hangup)
}

/// `handler` must be async-signal-safe (both of ours only store to an atomic).
fn install_handler(sig: libc::c_int, handler: extern "C" fn(libc::c_int)) -> io::Result<()> {
    // SAFETY: `sigaction` is a plain C struct for which all-zero bytes are a valid value
    // (empty mask, no flags, default handler); we fill the fields we need below.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler as libc::sighandler_t;
    act.sa_flags = 0;
    // SAFETY: `act.sa_mask` is a valid, owned sigset_t; sigemptyset only writes to it.
    unsafe {
        libc::sigemptyset(&raw mut act.sa_mask);
    }
    // SAFETY: `act` is fully initialised and outlives the call; the handler only does an
    // atomic store (async-signal-safe); a null `oldact` is allowed.
    let r = unsafe { libc::sigaction(sig, &raw const act, std::ptr::null_mut()) };
    check(r as isize).map(|_| ())
}

/// `_exit(code)`: ends the process without running `atexit` handlers.
pub(crate) fn exit_immediately(code: i32) -> ! {
    // SAFETY: `_exit` takes a plain integer and never returns; skipping Rust destructors
    // is sound (they are not required for memory safety) and the caller flushed its output.
    unsafe { libc::_exit(code) }
}
