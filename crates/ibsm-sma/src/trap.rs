//! Traps: building the Notice of trap 128 and 256, the queue of traps waiting for a
//! SubnTrapRepress, and the LID-routed SubnTrap MAD.

use alloc::collections::VecDeque;
use core::time::Duration;

use ibsm_wire::{
    DrSmpView, Instant, LidSmp, MAD_SIZE, Method, NodeType, Notice, ProducerType, SmAttributeId,
    Trap128Details, Trap144ChangeFlags, Trap144Details, Trap256Details, smp_data,
};

/// A SubnTrap ready to send: LID-routed (class 0x01) from `slid` to `dlid` on SL `sl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trap {
    /// Issuing port (0 for a switch).
    pub port: u8,
    /// LRH source LID: the issuing port's LID.
    pub slid: u16,
    /// LRH destination LID: PortInfo.MasterSMLID at send time.
    pub dlid: u16,
    /// Service level: PortInfo.MasterSMSL.
    pub sl: u8,
    /// Transaction ID (the same for every retransmission).
    pub transaction_id: u64,
    /// The 256-byte SubnTrap(Notice).
    pub mad: [u8; MAD_SIZE],
}

impl Trap {
    /// The Notice the trap carries.
    #[must_use]
    pub fn notice(&self) -> Notice {
        // 64 bytes are always there.
        Notice::parse(smp_data(&self.mad).unwrap_or_default()).unwrap_or_default()
    }
}

/// A trap waiting for its SubnTrapRepress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PendingTrap {
    pub(crate) port: u8,
    pub(crate) notice: Notice,
    pub(crate) next_send: Instant,
    pub(crate) tid: u64,
}

impl PendingTrap {
    pub(crate) fn new(port: u8, notice: Notice, now: Instant) -> Self {
        Self {
            port,
            notice,
            next_send: now,
            tid: 0,
        }
    }
}

/// Traps in the order they were raised.
#[derive(Debug, Clone)]
pub(crate) struct TrapQueue {
    pending: VecDeque<PendingTrap>,
    max: usize,
    next_tid: u64,
}

impl TrapQueue {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            pending: VecDeque::new(),
            max,
            next_tid: 1,
        }
    }

    pub(crate) fn clear(&mut self) {
        self.pending.clear();
    }

    pub(crate) fn len(&self) -> usize {
        self.pending.len()
    }

    /// Queues a trap with a fresh TransactionID; drops the oldest when full.
    pub(crate) fn push(&mut self, mut t: PendingTrap, overflowed: &mut u64) {
        if self.pending.len() >= self.max {
            self.pending.pop_front();
            *overflowed += 1;
        }
        t.tid = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1);
        self.pending.push_back(t);
    }

    /// Removes the trap with `tid`; whether there was one.
    pub(crate) fn repress(&mut self, tid: u64) -> bool {
        let before = self.pending.len();
        self.pending.retain(|t| t.tid != tid);
        self.pending.len() != before
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.pending.capacity() * core::mem::size_of::<PendingTrap>()
    }

    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.pending.iter().map(|t| t.next_send).min()
    }

    /// The first trap due at `now`, scheduled again `interval` later. `addr(port)` gives
    /// the issuing port's (LID, MasterSMLID, MasterSMSL, M_Key) at send time.
    pub(crate) fn poll(
        &mut self,
        now: Instant,
        interval: Duration,
        addr: impl Fn(u8) -> (u16, u16, u8, u64),
    ) -> Option<Trap> {
        let t = self.pending.iter_mut().find(|t| t.next_send <= now)?;
        t.next_send = now + interval;
        let (slid, dlid, sl, m_key) = addr(t.port);
        let mut smp = LidSmp::request(Method::Trap, SmAttributeId::Notice.into(), 0, t.tid, m_key);
        smp.data = t.notice.to_bytes();
        Some(Trap {
            port: t.port,
            slid,
            dlid,
            sl,
            transaction_id: t.tid,
            mad: smp.to_bytes(),
        })
    }
}

pub(crate) fn producer(node_type: NodeType) -> ProducerType {
    match node_type {
        NodeType::Switch => ProducerType::Switch,
        NodeType::Router => ProducerType::Router,
        _ => ProducerType::Ca,
    }
}

/// Trap 128 (link state change) of a switch with LID `lid`.
pub(crate) fn link_state_notice(lid: u16) -> Notice {
    Notice::generic_with(ProducerType::Switch, lid, &Trap128Details { lid })
}

/// Trap 256 (bad M_Key) for the offending SMP in `smp`, received with LRH SLID `slid`
/// by a port whose LID is `lid`.
pub(crate) fn bad_mkey_notice(
    node_type: NodeType,
    lid: u16,
    slid: u16,
    smp: &[u8; MAD_SIZE],
    directed: bool,
) -> Notice {
    let v = DrSmpView::new_unchecked(&smp[..]);
    let mut d = Trap256Details {
        lid: slid,
        method: smp[3],
        attribute_id: v.attribute_id(),
        attribute_modifier: v.attribute_modifier(),
        m_key: v.m_key(),
        ..Trap256Details::default()
    };
    if directed {
        let n = v.hop_count();
        d.dr_slid = v.dr_slid();
        d.dr_notice = true;
        d.dr_path_truncated = n > 30;
        d.dr_hop_count = n & 0x3F;
        let mut rp = [0u8; 30];
        rp.copy_from_slice(&v.return_path()[..30]);
        d.dr_notice_return_path = rp;
    }
    Notice::generic_with(producer(node_type), lid, &d)
}

/// Trap 144 (local changes) of a port with LID `lid`.
pub(crate) fn local_changes_notice(
    node_type: NodeType,
    lid: u16,
    capability_mask: ibsm_wire::CapabilityMask,
    capability_mask2: ibsm_wire::CapabilityMask2,
    flags: Trap144ChangeFlags,
) -> Notice {
    let d = Trap144Details {
        lid,
        other_local_changes: !flags.is_empty(),
        capability_mask,
        change_flags: flags,
        capability_mask2,
    };
    Notice::generic_with(producer(node_type), lid, &d)
}
