//! The 128-bit Global Identifier (IBA Vol. 1 §4.1.1).

use core::fmt;

/// Link-local default subnet prefix.
pub const DEFAULT_SUBNET_PREFIX: u64 = 0xFE80_0000_0000_0000;

/// A GID: 64-bit subnet prefix followed by the 64-bit interface ID, big-endian.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// A GID from prefix and interface ID (for a port GID, the port GUID).
    #[must_use]
    pub fn new(prefix: u64, interface_id: u64) -> Self {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&prefix.to_be_bytes());
        b[8..].copy_from_slice(&interface_id.to_be_bytes());
        Self(b)
    }

    /// The subnet prefix (first 8 bytes).
    #[must_use]
    pub fn prefix(&self) -> u64 {
        u64::from_be_bytes([
            self.0[0], self.0[1], self.0[2], self.0[3], self.0[4], self.0[5], self.0[6], self.0[7],
        ])
    }

    /// The interface ID (last 8 bytes).
    #[must_use]
    pub fn interface_id(&self) -> u64 {
        u64::from_be_bytes([
            self.0[8], self.0[9], self.0[10], self.0[11], self.0[12], self.0[13], self.0[14],
            self.0[15],
        ])
    }

    /// Whether this is a multicast GID (first byte 0xFF).
    #[must_use]
    pub fn is_multicast(&self) -> bool {
        self.0[0] == 0xFF
    }
}

impl fmt::Display for Gid {
    /// IPv6-style text, as the diagnostics print GIDs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, pair) in self.0.chunks(2).enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{:04x}", u16::from_be_bytes([pair[0], pair[1]]))?;
        }
        Ok(())
    }
}

impl fmt::Debug for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gid({self})")
    }
}

bytes_field!(Gid, 16);

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    #[test]
    fn parts_and_text() {
        let g = Gid::new(DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_1234);
        assert_eq!(g.prefix(), DEFAULT_SUBNET_PREFIX);
        assert_eq!(g.interface_id(), 0x0002_c903_0000_1234);
        assert_eq!(g.to_string(), "fe80:0000:0000:0000:0002:c903:0000:1234");
        assert!(!g.is_multicast());
    }
}
