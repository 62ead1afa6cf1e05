//! `ibsm-umad`: the Linux user-space MAD transport for ibsm, pure Rust over `libc`.
//!
//! It finds InfiniBand ports through sysfs, opens `/dev/infiniband/umadN`, registers
//! agents for the SMP classes (0x81, 0x01) and optionally the SA (0x03), advertises the
//! SM with `issmN`, and writes/reads MADs with the kernel's `ib_user_mad_hdr`. It runs
//! unchanged under ibsim's `libumad2sim.so` preload, which is how the project tests it
//! without hardware: every system call is a plain libc symbol the preload interposes
//! (never `std::fs`, which calls `open64`), reads are preceded by `poll`, and the 56-byte
//! header is chosen automatically when the preload is present.
//!
//! All `unsafe` code sits in one private module of thin syscall wrappers, each block
//! with a `// SAFETY:` comment; the rest of the crate is safe.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use ibsm_umad::{OpenOptions, SendTo, UmadPort};
//! use ibsm_wire::{DrPath, DrSmp, Method, SmAttributeId};
//!
//! let port = UmadPort::open(&OpenOptions::default())?;
//! let path = DrPath::parse_str(&format!("0,{}", port.desc().port.max(1)))?;
//! let req = DrSmp::request(Method::Get, SmAttributeId::NodeInfo.into(), 0, 1, 0, &path);
//! port.send(&SendTo::DIRECTED, &req.to_bytes(), Some(Duration::from_millis(200)))?;
//! if let Some(rx) = port.recv(Duration::from_millis(200))? {
//!     println!("{} bytes from LID {:#x}", rx.mad.len(), rx.hdr.lid);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
pub mod hdr;
mod port;
pub mod signal;
mod sys;
pub mod sysfs;
mod transport;

pub use error::{Error, Result};
pub use hdr::{HeaderLen, UmadHdr};
pub use port::{HeaderMode, OpenOptions, Received, SendTo, UmadPort};
pub use signal::{RequestSignal, StopSignals};
pub use sysfs::{PortDesc, Selector};
pub use transport::UmadTransport;
