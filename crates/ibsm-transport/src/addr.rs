//! Where a MAD goes and where a received one came from.

use ibsm_wire::{DrPath, MadHeaderView, MgmtClass, PERMISSIVE_LID};

use crate::clock::Instant;
use crate::error::TransportError;

/// Q_Key of QP1 (the general services interface).
pub const QP1_QKEY: u32 = 0x8001_0000;

/// A LID-routed destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LidAddress {
    /// Destination LID (LRH DLID); 0xFFFF (permissive) only for SMPs.
    pub dlid: u16,
    /// Service level.
    pub sl: u8,
    /// Destination QP: 0 for SMPs, 1 for GSI classes (SA, PerfMgt, ...).
    pub qpn: u32,
    /// Q_Key (0 for QP0, [`QP1_QKEY`] for QP1).
    pub qkey: u32,
    /// Index into the local P_Key table.
    pub pkey_index: u16,
}

impl LidAddress {
    /// A LID-routed SMP (QP0, SL 0) to `dlid`.
    #[must_use]
    pub const fn smp(dlid: u16) -> Self {
        Self {
            dlid,
            sl: 0,
            qpn: 0,
            qkey: 0,
            pkey_index: 0,
        }
    }

    /// A GSI MAD (QP1, well-known Q_Key) to `dlid` on `sl`.
    #[must_use]
    pub const fn gsi(dlid: u16, sl: u8) -> Self {
        Self {
            dlid,
            sl,
            qpn: 1,
            qkey: QP1_QKEY,
            pkey_index: 0,
        }
    }
}

/// A directed-route destination (IBA Vol. 1 §14.2.2).
///
/// The usual SM form is [`DrAddress::direct`]: DrSLID = DrDLID = permissive, the
/// requester's node is N0. With a LID in `dr_slid` the SMP first travels LID-routed to
/// `n0_lid`; with a LID in `dr_dlid` the last switch on the path forwards it
/// LID-routed to that LID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DrAddress {
    /// Outbound port of each directed hop.
    pub path: DrPath,
    /// Directed-route source LID: permissive, or the requester's own LID.
    pub dr_slid: u16,
    /// Directed-route destination LID: permissive, or the final LID-routed target.
    pub dr_dlid: u16,
    /// LRH DLID of the first leg: permissive when `dr_slid` is, else the LID of N0.
    pub n0_lid: u16,
}

impl DrAddress {
    /// The purely directed form along `path`.
    #[must_use]
    pub const fn direct(path: DrPath) -> Self {
        Self {
            path,
            dr_slid: PERMISSIVE_LID,
            dr_dlid: PERMISSIVE_LID,
            n0_lid: PERMISSIVE_LID,
        }
    }

    /// Whether the route starts with a LID-routed leg.
    #[must_use]
    pub const fn starts_by_lid(&self) -> bool {
        self.dr_slid != PERMISSIVE_LID
    }

    /// Writes HopCount, HopPointer = 0, InitialPath, a cleared ReturnPath, DrSLID and
    /// DrDLID into a 256-byte directed-route request.
    ///
    /// # Errors
    /// [`TransportError::InvalidMad`] when the buffer is not a directed-route SMP.
    pub fn write_to(&self, mad: &mut [u8]) -> Result<(), TransportError> {
        let mut v =
            ibsm_wire::DrSmpView::new_checked(mad).map_err(|_| TransportError::InvalidMad {
                reason: "directed-route SMP shorter than 256 bytes",
            })?;
        if v.mgmt_class() != ibsm_wire::MgmtClass::SubnDirected {
            return Err(TransportError::InvalidMad {
                reason: "directed-route address on a MAD that is not class 0x81",
            });
        }
        self.path.write_to(&mut v);
        v.set_dr_slid(self.dr_slid);
        v.set_dr_dlid(self.dr_dlid);
        Ok(())
    }
}

/// Where to send a MAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Address {
    /// LID-routed (any class).
    Lid(LidAddress),
    /// A directed-route request: the transport writes the address's path fields into
    /// the MAD (see [`DrAddress::write_to`]) before sending.
    Directed(DrAddress),
    /// A directed-route response (D = 1) turned around from a received request: the
    /// path fields already in the MAD are authoritative. `lrh_dlid` is permissive
    /// unless the request arrived over a final LID-routed leg, in which case it is the
    /// request's SLID (see [`Received::reply_address`]).
    DirectedResponse {
        /// LRH DLID of the first leg of the response.
        lrh_dlid: u16,
    },
}

impl Address {
    /// Checks that `mad` can be sent to this address.
    ///
    /// # Errors
    /// [`TransportError::InvalidMad`] for a MAD shorter than its header, an SMP that is
    /// not 256 bytes, a directed address on a non-0x81 MAD or the reverse.
    pub fn check(&self, mad: &[u8]) -> Result<(), TransportError> {
        let Ok(h) = MadHeaderView::new_checked(mad) else {
            return Err(TransportError::InvalidMad {
                reason: "shorter than the 24-byte MAD header",
            });
        };
        let class = h.mgmt_class();
        let directed = matches!(self, Self::Directed(_) | Self::DirectedResponse { .. });
        if directed != (class == MgmtClass::SubnDirected) {
            return Err(TransportError::InvalidMad {
                reason: "directed-route addressing needs class 0x81 and only it",
            });
        }
        if matches!(class, MgmtClass::SubnDirected | MgmtClass::SubnLid)
            && mad.len() != ibsm_wire::MAD_SIZE
        {
            return Err(TransportError::InvalidMad {
                reason: "an SMP must be exactly 256 bytes",
            });
        }
        Ok(())
    }
}

/// A MAD that arrived, with what the transport knows about its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The whole MAD.
    pub mad: Vec<u8>,
    /// LRH SLID (permissive for a directed-route SMP on its directed leg).
    pub slid: u16,
    /// Service level it arrived on.
    pub sl: u8,
    /// Source QP.
    pub qpn: u32,
    /// P_Key index it arrived with.
    pub pkey_index: u16,
    /// When it arrived (the transport's clock).
    pub at: Instant,
}

impl Received {
    /// The address to answer this MAD at: for a directed-route request the turned-around
    /// form, otherwise LID-routed back to the sender.
    #[must_use]
    pub fn reply_address(&self) -> Address {
        let directed = MadHeaderView::new_checked(&self.mad[..])
            .is_ok_and(|h| h.mgmt_class() == MgmtClass::SubnDirected);
        if directed {
            Address::DirectedResponse {
                lrh_dlid: self.slid,
            }
        } else {
            Address::Lid(LidAddress {
                dlid: self.slid,
                sl: self.sl,
                qpn: self.qpn,
                qkey: if self.qpn == 0 { 0 } else { QP1_QKEY },
                pkey_index: self.pkey_index,
            })
        }
    }

    /// Whether the R (response) bit is set.
    #[must_use]
    pub fn is_response(&self) -> bool {
        MadHeaderView::new_checked(&self.mad[..]).is_ok_and(|h| h.response())
    }
}

/// What `recv` hands back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// A MAD arrived.
    Mad(Received),
    /// The transport reports that an earlier send failed (e.g. umad status 110 for an
    /// unroutable request).
    SendFailed {
        /// Full TID of the MAD that failed.
        tid: u64,
        /// Its management class.
        class: u8,
        /// Why.
        error: TransportError,
    },
}

/// The local port a transport handle is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LocalPort {
    /// GUID of the node the port belongs to.
    pub node_guid: u64,
    /// GUID of the port.
    pub port_guid: u64,
    /// Port number on its node (InitialPath\[1\] of a purely directed SMP).
    pub port_num: u8,
    /// Current base LID of the port (0 until the SM assigns one).
    pub lid: u16,
}
