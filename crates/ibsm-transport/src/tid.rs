//! Transaction IDs. Hosts and kernels overwrite the upper 32 bits of a TID on the way
//! out, so only the low 32 bits (together with the management class) can match a
//! response to its request.

use core::fmt;

/// What identifies a transaction on the wire: the TID's low 32 bits and the class.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TidKey {
    /// Low 32 bits of the TransactionID.
    pub low: u32,
    /// Management class (byte 1 of the MAD).
    pub class: u8,
}

impl TidKey {
    /// The key of a MAD; `None` if it is shorter than the common header.
    #[must_use]
    pub fn of(mad: &[u8]) -> Option<Self> {
        let h = ibsm_wire::MadHeaderView::new_checked(mad).ok()?;
        Some(Self {
            low: h.transaction_id() as u32,
            class: u8::from(h.mgmt_class()),
        })
    }
}

impl fmt::Debug for TidKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TidKey({:#010x}, class {:#04x})", self.low, self.class)
    }
}

/// Hands out TIDs whose low 32 bits are unique until they wrap (after 2^32 - 1 IDs).
///
/// The upper 32 bits carry a caller-chosen tag (useful in logs and captures, ignored by
/// matching). Low value 0 is never produced, so a zeroed TID is recognisably unset.
#[derive(Debug, Clone)]
pub struct TidAllocator {
    high: u32,
    next: u32,
}

impl TidAllocator {
    /// An allocator whose TIDs carry `high` in their upper 32 bits and start at low 1.
    #[must_use]
    pub fn new(high: u32) -> Self {
        Self { high, next: 1 }
    }

    /// An allocator starting at low value `start` (0 is skipped), e.g. seeded so that
    /// two runs of an SM do not reuse each other's TIDs.
    #[must_use]
    pub fn starting_at(high: u32, start: u32) -> Self {
        Self {
            high,
            next: start.max(1),
        }
    }

    /// The next TID.
    pub fn next_tid(&mut self) -> u64 {
        let low = self.next;
        self.next = match self.next.wrapping_add(1) {
            0 => 1,
            n => n,
        };
        (u64::from(self.high) << 32) | u64::from(low)
    }

    /// The next TID whose low 32 bits satisfy `free` (the caller's "not outstanding"
    /// test); gives up after 2^32 candidates, i.e. never in practice.
    pub fn next_free(&mut self, mut free: impl FnMut(u32) -> bool) -> Option<u64> {
        for _ in 0..u32::MAX {
            let tid = self.next_tid();
            if free(tid as u32) {
                return Some(tid);
            }
        }
        None
    }
}

impl Default for TidAllocator {
    fn default() -> Self {
        Self::new(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn low_bits_unique_and_nonzero() {
        let mut a = TidAllocator::starting_at(0xABCD, u32::MAX - 1);
        let t1 = a.next_tid();
        let t2 = a.next_tid();
        let t3 = a.next_tid();
        assert_eq!(t1, 0xABCD_FFFF_FFFE);
        assert_eq!(t2, 0xABCD_FFFF_FFFF);
        assert_eq!(t3, 0xABCD_0000_0001, "0 is skipped on wrap");
        let t = a.next_free(|low| low % 3 == 0).unwrap();
        assert_eq!(t as u32 % 3, 0);
    }

    #[test]
    fn key_ignores_upper_bits() {
        let mut m = [0u8; 256];
        m[1] = 0x81;
        m[8..16].copy_from_slice(&0x1111_2222_3333_4444u64.to_be_bytes());
        let k = TidKey::of(&m).unwrap();
        m[8..12].copy_from_slice(&[9, 9, 9, 9]);
        assert_eq!(TidKey::of(&m), Some(k));
        assert_eq!(k.low, 0x3333_4444);
        assert_eq!(TidKey::of(&m[..10]), None);
    }
}
