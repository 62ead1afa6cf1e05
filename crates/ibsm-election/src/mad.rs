//! SMInfo SMPs on the wire: addresses, outgoing requests, parsing of what comes back,
//! and turning a received request into its response.

use ibsm_wire::{
    DrPath, DrSmp, DrSmpView, LidSmp, LidSmpView, MAD_SIZE, MadHeaderView, Method, MgmtClass,
    SmAttributeId, Status, dr_turn_around, smp_data,
};

use crate::error::Error;
use ibsm_wire::SmInfo;

/// Where another SM's port is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SmAddr {
    /// LID-routed SMP (class 0x01) to this LID.
    Lid(u16),
    /// Directed-route SMP (class 0x81, DrSLID = DrDLID = permissive) along this path.
    Directed(DrPath),
}

/// An SMInfo SMP to send: the complete 256-byte MAD and where it goes.
///
/// For [`SmAddr::Directed`] the path is already in the MAD; for [`SmAddr::Lid`] the
/// transport puts the LID into the LRH.
#[derive(Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Destination.
    pub to: SmAddr,
    /// The MAD bytes.
    pub mad: [u8; MAD_SIZE],
}

impl Transmit {
    /// The TransactionID of the MAD.
    #[must_use]
    pub fn tid(&self) -> u64 {
        self.header().transaction_id()
    }

    fn header(&self) -> MadHeaderView<&[u8]> {
        MadHeaderView::new_unchecked(&self.mad[..])
    }

    /// AttributeModifier (the control code of a Set, 0 for a Get).
    #[must_use]
    pub fn attribute_modifier(&self) -> u32 {
        self.header().attribute_modifier()
    }

    /// Whether this is a SubnSet (else a SubnGet).
    #[must_use]
    pub fn is_set(&self) -> bool {
        self.header().method() == Method::Set
    }

    /// The SMInfo carried in the data area (the sender's own for a Set).
    ///
    /// # Errors
    /// Never for MADs built by this crate.
    pub fn sm_info(&self) -> Result<SmInfo, Error> {
        Ok(SmInfo::parse(smp_data(&self.mad).unwrap_or_default())?)
    }
}

impl core::fmt::Debug for Transmit {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Transmit")
            .field("to", &self.to)
            .field("set", &self.is_set())
            .field("modifier", &self.attribute_modifier())
            .field("tid", &format_args!("{:#x}", self.tid()))
            .field("sm_info", &self.sm_info().ok())
            .finish()
    }
}

/// Builds a SubnGet/SubnSet(SMInfo) request carrying `payload` in its data area.
pub(crate) fn build_request(
    to: SmAddr,
    method: Method,
    modifier: u32,
    tid: u64,
    m_key: u64,
    payload: &SmInfo,
) -> Transmit {
    let attr = u16::from(SmAttributeId::SmInfo);
    let mut data = [0u8; 64];
    // The 64-byte buffer always holds an SMInfo; the error arm cannot occur.
    let _ = payload.emit_into(&mut data);
    let mad = match to {
        SmAddr::Lid(_) => {
            let mut s = LidSmp::request(method, attr, modifier, tid, m_key);
            s.data = data;
            s.to_bytes()
        }
        SmAddr::Directed(path) => {
            DrSmp::request_bytes(method, attr, modifier, tid, m_key, &path, &data)
        }
    };
    Transmit { to, mad }
}

/// The header fields of a received SMInfo SMP that the election reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parsed {
    pub(crate) response: bool,
    pub(crate) method: Method,
    pub(crate) status: u16,
    pub(crate) tid: u64,
    pub(crate) modifier: u32,
    pub(crate) info: SmInfo,
}

/// Decodes an SMInfo SMP of either class.
pub(crate) fn parse(mad: &[u8]) -> Result<Parsed, Error> {
    let class = MadHeaderView::new_checked(mad).map_or(MgmtClass::from(0), |h| h.mgmt_class());
    let p = match class {
        MgmtClass::SubnLid => {
            let v = LidSmpView::new_checked(mad)?;
            Parsed {
                response: v.response(),
                method: v.method(),
                status: v.status().0,
                tid: v.transaction_id(),
                modifier: v.attribute_modifier(),
                info: check_attr(v.attribute_id(), v.attr_data())?,
            }
        }
        MgmtClass::SubnDirected => {
            let v = DrSmpView::new_checked(mad)?;
            Parsed {
                response: v.response(),
                method: v.method(),
                status: v.status(),
                tid: v.transaction_id(),
                modifier: v.attribute_modifier(),
                info: check_attr(v.attribute_id(), v.attr_data())?,
            }
        }
        _ => {
            return Err(Error::NotSmp {
                class: class.into(),
            });
        }
    };
    Ok(p)
}

fn check_attr(attribute_id: u16, data: &[u8]) -> Result<SmInfo, Error> {
    if attribute_id != u16::from(SmAttributeId::SmInfo) {
        return Err(Error::NotSmInfo { attribute_id });
    }
    Ok(SmInfo::parse(data)?)
}

/// Turns a received request (already checked by [`parse`]) into its GetResp carrying
/// `payload`, with `status`. Directed-route requests get the D bit (the host's SMA has
/// already applied the forwarding rules); LID-routed ones keep their header.
pub(crate) fn build_response(
    request: &[u8],
    status: Status,
    payload: &SmInfo,
) -> Result<[u8; MAD_SIZE], Error> {
    let mut out = [0u8; MAD_SIZE];
    let src = request.get(..MAD_SIZE).ok_or(ibsm_wire::Error::Truncated {
        what: "SMInfo SMP",
        need: MAD_SIZE,
        got: request.len(),
    })?;
    out.copy_from_slice(src);
    let mut data = [0u8; 64];
    let _ = payload.emit_into(&mut data);
    if MadHeaderView::new_unchecked(&out[..]).mgmt_class() == MgmtClass::SubnDirected {
        let mut v = DrSmpView::new_checked(&mut out[..])?;
        dr_turn_around(&mut v, status.0);
        v.attr_data_mut().copy_from_slice(&data);
    } else {
        let mut v = LidSmpView::new_checked(&mut out[..])?;
        v.set_response(true);
        v.set_method(Method::Get);
        v.set_status(status);
        v.attr_data_mut().copy_from_slice(&data);
    }
    Ok(out)
}
