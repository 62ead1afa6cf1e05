//! An open umad port: agents registered, MADs written and read with the right header.

use std::time::Duration;

use ibsm_wire::{MadHeaderView, MgmtClass};

use crate::error::{Error, Result};
use crate::hdr::{
    HeaderLen, IOCTL_ENABLE_PKEY, IOCTL_REGISTER_AGENT, RegReq, UmadHdr, method_mask,
};
use crate::sys::{self, Fd};
use crate::sysfs::{self, PortDesc, Selector};

/// Which header form to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeaderMode {
    /// 56 bytes when the umad2sim preload is loaded; otherwise 64 via `ENABLE_PKEY`,
    /// falling back to 56 if the kernel refuses.
    #[default]
    Auto,
    /// Force the given form.
    Fixed(HeaderLen),
}

/// How to open a port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Which port.
    pub selector: Selector,
    /// Header form.
    pub header: HeaderMode,
    /// Register a class 0x03 (SA) agent with kernel RMPP, to serve or query the SA.
    pub sa_agent: bool,
    /// Open `issmN` (sets IsSM on the port) and keep it open while the port is open.
    pub issm: bool,
    /// Register a class 0x04 (PerfMgt) client agent, to query performance agents.
    pub perf_agent: bool,
}

/// Where a MAD goes, as the umad header expresses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendTo {
    /// LRH DLID: 0xFFFF for directed-route SMPs (and SMPs to the local port).
    pub lid: u16,
    /// Destination QP: 0 for SMPs, 1 for GMPs.
    pub qpn: u32,
    /// Q_Key: 0 for QP0, 0x80010000 for QP1.
    pub qkey: u32,
    /// Service level.
    pub sl: u8,
    /// P_Key index (64-byte header only).
    pub pkey_index: u16,
}

impl SendTo {
    /// A directed-route SMP.
    pub const DIRECTED: Self = Self {
        lid: 0xFFFF,
        qpn: 0,
        qkey: 0,
        sl: 0,
        pkey_index: 0,
    };

    /// A LID-routed SMP to `lid`.
    #[must_use]
    pub const fn smp(lid: u16) -> Self {
        Self {
            lid,
            qpn: 0,
            qkey: 0,
            sl: 0,
            pkey_index: 0,
        }
    }

    /// A GMP (SA, ...) to QP1 of `lid` on `sl`.
    #[must_use]
    pub const fn gmp(lid: u16, sl: u8) -> Self {
        Self {
            lid,
            qpn: 1,
            qkey: ibsm_wire::mad::QP1_QKEY,
            sl,
            pkey_index: 0,
        }
    }
}

/// A MAD read from the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The header (source LID/QP/SL, status 110 for timed-out requests).
    pub hdr: UmadHdr,
    /// The MAD bytes (24 bytes only for a timed-out request; more than 256 for a
    /// reassembled RMPP message).
    pub mad: Vec<u8>,
}

impl Received {
    /// Whether this is the kernel's "request timed out" notification.
    #[must_use]
    pub fn timed_out(&self) -> bool {
        self.hdr.status == 110
    }
}

/// SMP methods an SM wants unsolicited: Get, Set (SMInfo from other SMs), Trap,
/// TrapRepress.
const SMP_METHODS: [u8; 4] = [0x01, 0x02, 0x05, 0x07];
/// SA methods a server receives: Get, Set, Report, GetTable, GetTraceTable, GetMulti,
/// Delete.
const SA_METHODS: [u8; 7] = [0x01, 0x02, 0x06, 0x12, 0x13, 0x14, 0x15];

/// Calls `op` again while it fails with `EINTR` (at most 16 times in a row).
///
/// A signal (SIGTERM to a daemon: its handler has no `SA_RESTART`, so that a waiting
/// `poll` ends at once) can also interrupt a `write` that blocks: the umad2sim preload
/// writes to a blocking socket, which waits while ibsim's queue is full. Nothing was
/// sent then. Treating it as an error made a daemon stopped mid-sweep fail with
/// "write failed: errno 4".
fn retry_interrupted<T>(mut op: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    let mut left = 16;
    loop {
        match op() {
            Err(e) if e.raw_os_error() == Some(libc::EINTR) && left > 0 => left -= 1,
            r => return r,
        }
    }
}

/// An open umad port with its agents.
///
/// Dropping it closes the device files, except the umad fd under ibsim's preload, which
/// stays open until the process exits (closing it there crashes the process when MADs
/// are still arriving; see the `Drop` impl).
#[derive(Debug)]
pub struct UmadPort {
    fd: Fd,
    issm: Option<Fd>,
    desc: PortDesc,
    path: String,
    hdr_len: HeaderLen,
    preload: bool,
    agent_dr: u32,
    agent_lid: u32,
    agent_sa: Option<u32>,
    agent_perf: Option<u32>,
}

impl UmadPort {
    /// Finds the port in sysfs, opens it, picks the header form and registers agents
    /// for classes 0x81 and 0x01 (and 0x03 when asked).
    ///
    /// # Errors
    /// Every failure names the file and errno: missing sysfs (no `ib_umad` or no
    /// preload), no matching port, `open` or `ioctl` refused.
    pub fn open(opts: &OpenOptions) -> Result<Self> {
        let ports = sysfs::list_ports()?;
        let desc = sysfs::select(&ports, &opts.selector)?;
        Self::open_desc(desc, opts)
    }

    /// Opens a port already described (see [`sysfs::list_ports`]).
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_desc(desc: PortDesc, opts: &OpenOptions) -> Result<Self> {
        let path = desc.umad_path();
        let fd = sys::open(&path, libc::O_RDWR | libc::O_NONBLOCK)
            .map_err(|e| Error::io("open", &path, &e))?;
        let preload = sys::umad2sim_preloaded();
        let hdr_len = match opts.header {
            HeaderMode::Fixed(l) => {
                if l == HeaderLen::New64 {
                    sys::ioctl_none(&fd, IOCTL_ENABLE_PKEY)
                        .map_err(|e| Error::io("ioctl ENABLE_PKEY", &path, &e))?;
                }
                l
            }
            HeaderMode::Auto if preload => HeaderLen::Old56,
            HeaderMode::Auto => {
                if sys::ioctl_none(&fd, IOCTL_ENABLE_PKEY).is_ok() {
                    HeaderLen::New64
                } else {
                    HeaderLen::Old56
                }
            }
        };
        let register = |class: u8, version: u8, qpn: u8, methods: &[u8], rmpp: u8| -> Result<u32> {
            let req = RegReq {
                qpn,
                mgmt_class: class,
                class_version: version,
                methods: method_mask(methods),
                oui: [0; 3],
                rmpp_version: rmpp,
            };
            let mut arg = req.encode();
            sys::ioctl_buf(&fd, IOCTL_REGISTER_AGENT, &mut arg)
                .map_err(|e| Error::io("ioctl REGISTER_AGENT", &path, &e))?;
            Ok(u32::from_ne_bytes([arg[0], arg[1], arg[2], arg[3]]))
        };
        // Every class that can arrive must have an agent: the preload dereferences a
        // NULL agent otherwise and kills the process.
        let agent_dr = register(0x81, 1, 0, &SMP_METHODS, 0)?;
        let agent_lid = register(0x01, 1, 0, &SMP_METHODS, 0)?;
        let agent_sa = if opts.sa_agent {
            Some(register(0x03, 2, 1, &SA_METHODS, 1)?)
        } else {
            None
        };
        // A client: answers to its requests reach it whatever methods it registers.
        let agent_perf = if opts.perf_agent {
            Some(register(0x04, 1, 1, &[], 0)?)
        } else {
            None
        };
        let issm = if opts.issm {
            let p = desc.issm_path();
            Some(
                sys::open(&p, libc::O_RDWR | libc::O_NONBLOCK)
                    .map_err(|e| Error::io("open", &p, &e))?,
            )
        } else {
            None
        };
        Ok(Self {
            fd,
            issm,
            desc,
            path,
            hdr_len,
            preload,
            agent_dr,
            agent_lid,
            agent_sa,
            agent_perf,
        })
    }

    /// Opens (`on`) or closes `/dev/infiniband/issmN`, which sets or clears the port's
    /// IsSM capability bit.
    ///
    /// # Errors
    /// [`Error::Io`] when `open` fails (EAGAIN: another SM holds it).
    pub fn set_issm(&mut self, on: bool) -> Result<()> {
        match (on, self.issm.is_some()) {
            (true, false) => {
                let p = self.desc.issm_path();
                self.issm = Some(
                    sys::open(&p, libc::O_RDWR | libc::O_NONBLOCK)
                        .map_err(|e| Error::io("open", &p, &e))?,
                );
            }
            (false, true) => self.issm = None,
            _ => {}
        }
        Ok(())
    }

    /// The port as sysfs described it when opened.
    #[must_use]
    pub fn desc(&self) -> &PortDesc {
        &self.desc
    }

    /// Header form in use.
    #[must_use]
    pub fn header_len(&self) -> HeaderLen {
        self.hdr_len
    }

    /// Whether the umad2sim preload (ibsim) is in use.
    #[must_use]
    pub fn under_ibsim(&self) -> bool {
        self.preload
    }

    /// Sends one MAD. `track` is how long the kernel should keep a request outstanding
    /// so its response is delivered (use `None` for responses, TrapRepress and other
    /// MADs that get no answer). Deadlines and retries are the caller's: the kernel is
    /// asked for no retries (and the preload ignores both anyway).
    ///
    /// # Errors
    /// [`Error::BadMad`] for a MAD shorter than 24 bytes or of a class without an agent;
    /// [`Error::Io`] when `write` fails.
    pub fn send(&self, to: &SendTo, mad: &[u8], track: Option<Duration>) -> Result<()> {
        let Ok(h) = MadHeaderView::new_checked(mad) else {
            return Err(Error::BadMad(format!(
                "{} bytes, a MAD header needs 24",
                mad.len()
            )));
        };
        let agent_id = match u8::from(h.mgmt_class()) {
            0x81 => self.agent_dr,
            0x01 => self.agent_lid,
            0x03 => self.agent_sa.ok_or_else(|| {
                Error::BadMad("class 0x03 without an SA agent (OpenOptions::sa_agent)".into())
            })?,
            0x04 => self.agent_perf.ok_or_else(|| {
                Error::BadMad("class 0x04 without a PerfMgt agent (OpenOptions::perf_agent)".into())
            })?,
            c => return Err(Error::BadMad(format!("no agent for class {c:#04x}"))),
        };
        let timeout_ms = track.map_or(0, |d| {
            u32::try_from(d.as_millis().max(1)).unwrap_or(u32::MAX)
        });
        let hdr = UmadHdr {
            agent_id,
            timeout_ms,
            qpn: to.qpn,
            qkey: to.qkey,
            lid: to.lid,
            sl: to.sl,
            pkey_index: to.pkey_index,
            ..UmadHdr::default()
        };
        let hl = self.hdr_len.bytes();
        let mut buf = vec![0u8; hl + mad.len()];
        hdr.encode(&mut buf, self.hdr_len);
        buf[hl..].copy_from_slice(mad);
        // Under ibsim this write blocks while ibsim's socket queue is full (10 datagrams,
        // `net.unix.max_dgram_qlen`), and the preload holds its global lock meanwhile,
        // which its reader thread needs to queue every answer: a long burst of sends
        // with no pause can fill both queues and block both sides for ever (512 sends
        // in a row did; ibsmd's bursts of up to one window, 256, have not hung in 250
        // runs on a 2,048-CA tree, but nothing here rules it out).
        let n = retry_interrupted(|| sys::write(&self.fd, &buf))
            .map_err(|e| Error::io("write", &self.path, &e))?;
        if n != buf.len() {
            return Err(Error::BadMad(format!(
                "short write: {n} of {} bytes",
                buf.len()
            )));
        }
        Ok(())
    }

    /// Waits up to `timeout` for one MAD. `Ok(None)` when nothing arrived in time.
    ///
    /// # Errors
    /// [`Error::Io`] when `poll` or `read` fail (other than "nothing yet").
    pub fn recv(&self, timeout: Duration) -> Result<Option<Received>> {
        // Rounded up: a wait under a millisecond must not become a busy loop of zero-ms
        // polls until its deadline.
        let ms = i32::try_from(timeout.as_micros().div_ceil(1000)).unwrap_or(i32::MAX);
        // The preload's read never blocks: always poll first.
        if !sys::poll_in(&self.fd, ms).map_err(|e| Error::io("poll", &self.path, &e))? {
            return Ok(None);
        }
        let hl = self.hdr_len.bytes();
        let mut size = hl + 256;
        loop {
            let mut buf = vec![0u8; size];
            match sys::read(&self.fd, &mut buf) {
                Ok(n) if n >= hl => {
                    let Some(hdr) = UmadHdr::decode(&buf, self.hdr_len) else {
                        return Ok(None);
                    };
                    let mut mad = buf[hl..n].to_vec();
                    let sa = MadHeaderView::new_checked(&mad[..])
                        .is_ok_and(|h| h.mgmt_class() == MgmtClass::SubnAdm);
                    if self.preload && mad.len() >= 256 && !sa {
                        // umad2sim leaves garbage in the last 24 bytes of a received MAD.
                        mad[232..256].fill(0);
                    }
                    return Ok(Some(Received { hdr, mad }));
                }
                Ok(_) => return Ok(None),
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => return Ok(None),
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) && size < (1 << 20) => {
                    // A reassembled RMPP message: hdr.length in the copied part tells the size.
                    let need = UmadHdr::decode(&buf, self.hdr_len).map_or(0, |h| h.length as usize);
                    size = need.max(size * 2);
                }
                Err(e) => return Err(Error::io("read", &self.path, &e)),
            }
        }
    }
}

/// Under ibsim the umad fd is left open (the process exit releases it); on a kernel it
/// is closed. libumad2sim's `close` frees the fd's receive queue and clears the routing
/// of one class only, while its reader thread keeps routing the other classes' MADs to
/// the freed queue: the next MAD still on its way (an answer to a request in flight, a
/// trap, another SM's poll) crashes the process with a NULL mutex in the preload's
/// reader thread (seen: ibsmd stopped by SIGTERM mid-sweep, the port dropped on the
/// error path, SIGSEGV in `pthread_mutex_lock(0x30)`). The issm fd is still closed: that
/// only clears IsSM in ibsim.
impl Drop for UmadPort {
    fn drop(&mut self) {
        if self.preload {
            self.fd.keep_open_on_drop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupted_calls_are_repeated_other_errors_are_not() {
        let eintr = || std::io::Error::from_raw_os_error(libc::EINTR);
        let mut calls = 0;
        let r = retry_interrupted(|| {
            calls += 1;
            if calls < 4 { Err(eintr()) } else { Ok(calls) }
        });
        assert_eq!(r.unwrap(), 4);
        // Any other error ends it at once.
        let mut calls = 0;
        let r: std::io::Result<()> = retry_interrupted(|| {
            calls += 1;
            Err(std::io::Error::from_raw_os_error(libc::EBADF))
        });
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EBADF));
        assert_eq!(calls, 1);
        // A signal storm does not spin for ever: the 17th EINTR is returned.
        let mut calls = 0;
        let r: std::io::Result<()> = retry_interrupted(|| {
            calls += 1;
            Err(eintr())
        });
        assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::EINTR));
        assert_eq!(calls, 17);
    }
}
