//! Subnet Management Packets: the LID-routed form (class 0x01), the directed-route form
//! (class 0x81), [`DrPath`], and the directed-route forwarding rules of
//! IBA Vol. 1 §14.2.2 for requesters, switches and responders.

use core::fmt;

use crate::error::{Error, Result};
use crate::mad::{MadHeader, Method, MgmtClass, mad_form};

/// The permissive LID: "whoever receives this", and the unused value of DrSLID/DrDLID.
pub const PERMISSIVE_LID: u16 = 0xFFFF;
/// Maximum number of directed hops.
pub const MAX_HOPS: usize = 63;
/// Offset of the 64-byte attribute data inside an SMP.
pub const SMP_DATA_OFFSET: usize = 64;
/// Size of the SMP attribute data area.
pub const SMP_DATA_SIZE: usize = 64;

/// The 64 attribute data bytes of an SMP of either form (LID-routed or directed-route
/// alike), or `None` if `mad` is too short to hold them.
#[must_use]
pub fn smp_data(mad: &[u8]) -> Option<&[u8]> {
    mad.get(SMP_DATA_OFFSET..SMP_DATA_OFFSET + SMP_DATA_SIZE)
}

/// [`smp_data`], writable.
#[must_use]
pub fn smp_data_mut(mad: &mut [u8]) -> Option<&mut [u8]> {
    mad.get_mut(SMP_DATA_OFFSET..SMP_DATA_OFFSET + SMP_DATA_SIZE)
}

wire_struct! {
    /// A LID-routed SMP (management class 0x01), all 256 bytes.
    pub struct LidSmp, view LidSmpView, size 256, label "LID-routed SMP";
    fields {
        /// The common MAD header (bytes 6..8 reserved in a LID-routed SMP).
        header, set_header: MadHeader = (0, 0, 192);
        /// M_Key presented by the sender.
        m_key, set_m_key: u64 = (24, 0, 64), "IB_MAD_MKEY_F";
        /// The 64 bytes of attribute data.
        data, set_data: [u8; 64] = (64, 0, 512);
    }
}

wire_struct! {
    /// A directed-route SMP (management class 0x81), all 256 bytes.
    pub struct DrSmp, view DrSmpView, size 256, label "directed-route SMP";
    fields {
        /// Base version (1).
        base_version, set_base_version: u8 = (0, 0, 8), "IB_MAD_BASEVER_F";
        /// Management class (0x81).
        mgmt_class, set_mgmt_class: MgmtClass = (1, 0, 8), "IB_MAD_MGMTCLASS_F";
        /// Class version (1).
        class_version, set_class_version: u8 = (2, 0, 8), "IB_MAD_CLASSVER_F";
        /// R bit.
        response, set_response: bool = (3, 0, 1), "IB_MAD_RESPONSE_F";
        /// Method without the R bit.
        method, set_method: Method = (3, 1, 7), "IB_MAD_METHOD_F";
        /// D bit: false = outbound, true = returning.
        direction, set_direction: bool = (4, 0, 1), "IB_DRSMP_DIRECTION_F";
        /// 15-bit status (the MAD status without the D bit).
        status, set_status: u16 = (4, 1, 15), "IB_DRSMP_STATUS_F";
        /// Hop pointer.
        hop_pointer, set_hop_pointer: u8 = (6, 0, 8), "IB_DRSMP_HOPPTR_F";
        /// Hop count (0..=63).
        hop_count, set_hop_count: u8 = (7, 0, 8), "IB_DRSMP_HOPCNT_F";
        /// Transaction ID.
        transaction_id, set_transaction_id: u64 = (8, 0, 64), "IB_MAD_TRID_F";
        /// Attribute ID (see [`SmAttributeId`](crate::attr::SmAttributeId)).
        attribute_id, set_attribute_id: u16 = (16, 0, 16), "IB_MAD_ATTRID_F";
        /// Attribute modifier.
        attribute_modifier, set_attribute_modifier: u32 = (20, 0, 32), "IB_MAD_ATTRMOD_F";
        /// M_Key presented by the sender.
        m_key, set_m_key: u64 = (24, 0, 64), "IB_MAD_MKEY_F";
        /// Directed-route source LID (0xFFFF: the requester is N0).
        dr_slid, set_dr_slid: u16 = (32, 0, 16), "IB_DRSMP_DRSLID_F";
        /// Directed-route destination LID (0xFFFF: Nn is the destination).
        dr_dlid, set_dr_dlid: u16 = (34, 0, 16), "IB_DRSMP_DRDLID_F";
        /// The 64 bytes of attribute data.
        data, set_data: [u8; 64] = (64, 0, 512);
        /// InitialPath: entry i is the port node N(i-1) sends through; entry 0 unused.
        initial_path, set_initial_path: [u8; 64] = (128, 0, 512), "IB_DRSMP_PATH_F";
        /// ReturnPath: entry i is the port node Ni received on; entry 0 unused.
        return_path, set_return_path: [u8; 64] = (192, 0, 512), "IB_DRSMP_RPATH_F";
    }
}

const INITIAL_PATH: usize = 128;
const RETURN_PATH: usize = 192;

macro_rules! smp_data_accessors {
    ($view:ident) => {
        impl<T: AsRef<[u8]>> $view<T> {
            /// The 64-byte attribute data, borrowed.
            #[inline]
            #[must_use]
            pub fn attr_data(&self) -> &[u8] {
                &self.as_bytes()[SMP_DATA_OFFSET..SMP_DATA_OFFSET + SMP_DATA_SIZE]
            }
        }
        impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
            /// The 64-byte attribute data, writable.
            #[inline]
            pub fn attr_data_mut(&mut self) -> &mut [u8] {
                &mut self.as_bytes_mut()[SMP_DATA_OFFSET..SMP_DATA_OFFSET + SMP_DATA_SIZE]
            }
        }
    };
}
smp_data_accessors!(LidSmpView);
smp_data_accessors!(DrSmpView);

/// A directed route: the outbound port of each hop, at most [`MAX_HOPS`] hops.
///
/// Displayed and parsed in the diagnostics' syntax, `0,1,5,3` (the leading 0 is the
/// local node); the empty path (`0`) addresses the local node.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DrPath {
    len: u8,
    /// Entry 0 unused, as in the SMP's InitialPath.
    ports: [u8; 64],
}

impl Default for DrPath {
    fn default() -> Self {
        Self::local()
    }
}

impl DrPath {
    /// The empty route: the local node.
    #[must_use]
    pub const fn local() -> Self {
        Self {
            len: 0,
            ports: [0; 64],
        }
    }

    /// A route from the outbound ports of hops 1..=n.
    ///
    /// # Errors
    /// [`Error::InvalidValue`] for more than 63 hops or a port 0 in the route.
    pub fn from_ports(ports: &[u8]) -> Result<Self> {
        let mut p = Self::local();
        for &port in ports {
            p.push(port)?;
        }
        Ok(p)
    }

    /// Number of hops.
    #[must_use]
    pub const fn hops(&self) -> usize {
        self.len as usize
    }

    /// Whether the route addresses the local node.
    #[must_use]
    pub const fn is_local(&self) -> bool {
        self.len == 0
    }

    /// Outbound port of each hop, hop 1 first.
    #[must_use]
    pub fn ports(&self) -> &[u8] {
        &self.ports[1..=self.len as usize]
    }

    /// Appends a hop.
    ///
    /// # Errors
    /// [`Error::InvalidValue`] when the route already has 63 hops or `port` is 0.
    pub fn push(&mut self, port: u8) -> Result<()> {
        if self.len as usize >= MAX_HOPS {
            return Err(Error::InvalidValue {
                what: "DrPath",
                field: "hops",
                value: 64,
            });
        }
        if port == 0 {
            return Err(Error::InvalidValue {
                what: "DrPath",
                field: "port",
                value: 0,
            });
        }
        self.len += 1;
        self.ports[self.len as usize] = port;
        Ok(())
    }

    /// This route extended by one hop.
    ///
    /// # Errors
    /// As [`Self::push`].
    pub fn child(&self, port: u8) -> Result<Self> {
        let mut c = *self;
        c.push(port)?;
        Ok(c)
    }

    /// The route without its last hop (`None` for the local route).
    #[must_use]
    pub fn parent(&self) -> Option<Self> {
        if self.len == 0 {
            return None;
        }
        let mut p = *self;
        p.ports[p.len as usize] = 0;
        p.len -= 1;
        Some(p)
    }

    /// Parses `0,1,5,3` (leading `0` optional, whitespace around numbers allowed).
    ///
    /// # Errors
    /// [`Error::InvalidValue`] for a non-number, a port above 255, a port 0 after the
    /// first position, or more than 63 hops.
    pub fn parse_str(s: &str) -> Result<Self> {
        let mut p = Self::local();
        for (i, part) in s.split(',').enumerate() {
            let part = part.trim();
            let port: u8 = part.parse().map_err(|_| Error::InvalidValue {
                what: "DrPath",
                field: "port",
                value: i as u64,
            })?;
            if i == 0 && port == 0 {
                continue;
            }
            p.push(port)?;
        }
        Ok(p)
    }

    /// Writes the route into a request: HopCount, HopPointer 0, InitialPath, cleared
    /// ReturnPath.
    pub fn write_to<T: AsRef<[u8]> + AsMut<[u8]>>(&self, smp: &mut DrSmpView<T>) {
        smp.set_hop_count(self.len);
        smp.set_hop_pointer(0);
        smp.set_initial_path(self.ports);
        smp.set_return_path([0; 64]);
    }

    /// Reads InitialPath[1..=HopCount] of an SMP.
    ///
    /// # Errors
    /// [`Error::InvalidValue`] if HopCount exceeds 63 or a path entry is 0.
    pub fn from_smp<T: AsRef<[u8]>>(smp: &DrSmpView<T>) -> Result<Self> {
        let n = smp.hop_count() as usize;
        if n > MAX_HOPS {
            return Err(Error::InvalidValue {
                what: "DrPath",
                field: "hop_count",
                value: n as u64,
            });
        }
        let b = smp.as_bytes();
        Self::from_ports(&b[INITIAL_PATH + 1..=INITIAL_PATH + n])
    }
}

impl fmt::Display for DrPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("0")?;
        for p in self.ports() {
            write!(f, ",{p}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for DrPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DrPath({self})")
    }
}

impl DrSmp {
    /// A purely directed request (DrSLID = DrDLID = permissive) along `path`.
    #[must_use]
    pub fn request(
        method: Method,
        attribute_id: u16,
        attribute_modifier: u32,
        transaction_id: u64,
        m_key: u64,
        path: &DrPath,
    ) -> Self {
        let mut s = Self {
            base_version: 1,
            mgmt_class: MgmtClass::SubnDirected,
            class_version: 1,
            method,
            transaction_id,
            attribute_id,
            attribute_modifier,
            m_key,
            dr_slid: PERMISSIVE_LID,
            dr_dlid: PERMISSIVE_LID,
            hop_count: path.len,
            initial_path: path.ports,
            ..Self::default()
        };
        s.hop_pointer = 0;
        s
    }

    /// The bytes of [`DrSmp::request`] with `data` as its attribute data, written
    /// straight into the 256 bytes rather than through the struct (an SM sends millions
    /// of requests in a large bring-up): the same bytes as `to_bytes()` of that request.
    #[must_use]
    pub fn request_bytes(
        method: Method,
        attribute_id: u16,
        attribute_modifier: u32,
        transaction_id: u64,
        m_key: u64,
        path: &DrPath,
        data: &[u8; SMP_DATA_SIZE],
    ) -> [u8; 256] {
        let mut bytes = [0u8; 256];
        let mut v = DrSmpView::new_unchecked(&mut bytes[..]);
        v.set_base_version(1);
        v.set_mgmt_class(MgmtClass::SubnDirected);
        v.set_class_version(1);
        v.set_method(method);
        v.set_transaction_id(transaction_id);
        v.set_attribute_id(attribute_id);
        v.set_attribute_modifier(attribute_modifier);
        v.set_m_key(m_key);
        v.set_dr_slid(PERMISSIVE_LID);
        v.set_dr_dlid(PERMISSIVE_LID);
        path.write_to(&mut v);
        v.attr_data_mut().copy_from_slice(data);
        bytes
    }
}

mad_form!(LidSmp, LidSmpView, u16);

impl LidSmp {
    /// A LID-routed request.
    #[must_use]
    pub fn request(
        method: Method,
        attribute_id: u16,
        attribute_modifier: u32,
        transaction_id: u64,
        m_key: u64,
    ) -> Self {
        Self {
            header: MadHeader {
                base_version: 1,
                mgmt_class: MgmtClass::SubnLid,
                class_version: 1,
                method,
                transaction_id,
                attribute_id,
                attribute_modifier,
                ..MadHeader::default()
            },
            m_key,
            ..Self::default()
        }
    }
}

/// What a node does with a directed-route SMP after applying one forwarding rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrAction {
    /// Transmit through this port (LRH DLID permissive).
    Forward {
        /// Outbound port.
        port: u8,
    },
    /// Transmit LID-routed to this LID (DrDLID outbound, DrSLID returning).
    ForwardLid {
        /// Destination LID.
        dlid: u16,
    },
    /// Hand the SMP to the local SMA (outbound) or to the requester (returning).
    Deliver,
    /// Discard the SMP.
    Discard(DrDiscard),
}

/// Why a directed-route SMP is discarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrDiscard {
    /// HopPointer/HopCount match no rule (O5/R5), or HopCount > 63.
    BadHopPointer,
    /// A CA or router was asked to forward.
    NotASwitch,
    /// The next port does not exist on this node.
    NoSuchPort,
}

/// The node applying a forwarding rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrNode {
    /// Switches forward; CAs and routers only start, end or deliver.
    pub is_switch: bool,
    /// Number of physical ports (valid transit ports are `1..=num_ports`).
    pub num_ports: u8,
    /// Port the SMP arrived on; `None` when the node originates it.
    pub in_port: Option<u8>,
    /// Whether the SMP arrived LID-routed (rules O4/R4).
    pub via_lid: bool,
}

impl DrNode {
    fn port_ok(&self, port: u8) -> bool {
        port >= 1 && port <= self.num_ports
    }
}

/// Applies the outbound rules O1..O5 (D = 0) at `node`, updating HopPointer and
/// ReturnPath in place.
pub fn dr_outbound<T: AsRef<[u8]> + AsMut<[u8]>>(smp: &mut DrSmpView<T>, node: DrNode) -> DrAction {
    let n = smp.hop_count();
    let hp = smp.hop_pointer();
    if n as usize > MAX_HOPS {
        return DrAction::Discard(DrDiscard::BadHopPointer);
    }
    let in_port = node.in_port.unwrap_or(0);
    if n != 0 && hp == 0 {
        // O1: start of the directed part.
        let port = smp.as_bytes()[INITIAL_PATH + 1];
        if !node.port_ok(port) {
            return DrAction::Discard(DrDiscard::NoSuchPort);
        }
        smp.set_hop_pointer(1);
        DrAction::Forward { port }
    } else if hp >= 1 && hp < n {
        // O2: intermediate hop, switches only.
        if !node.is_switch {
            return DrAction::Discard(DrDiscard::NotASwitch);
        }
        let next = smp.as_bytes()[INITIAL_PATH + hp as usize + 1];
        if !node.port_ok(next) {
            return DrAction::Discard(DrDiscard::NoSuchPort);
        }
        smp.as_bytes_mut()[RETURN_PATH + hp as usize] = in_port;
        smp.set_hop_pointer(hp + 1);
        DrAction::Forward { port: next }
    } else if hp == n {
        // O3: end of the directed part.
        if n != 0 {
            smp.as_bytes_mut()[RETURN_PATH + n as usize] = in_port;
        }
        smp.set_hop_pointer(n + 1);
        let dlid = smp.dr_dlid();
        if dlid == PERMISSIVE_LID {
            DrAction::Deliver
        } else if node.is_switch {
            DrAction::ForwardLid { dlid }
        } else {
            DrAction::Discard(DrDiscard::NotASwitch)
        }
    } else if hp == n + 1 && node.via_lid {
        // O4: end of the final LID-routed part.
        DrAction::Deliver
    } else {
        DrAction::Discard(DrDiscard::BadHopPointer)
    }
}

/// Applies the returning rules R1..R5 (D = 1) at `node`, updating HopPointer in place.
pub fn dr_returning<T: AsRef<[u8]> + AsMut<[u8]>>(
    smp: &mut DrSmpView<T>,
    node: DrNode,
) -> DrAction {
    let n = smp.hop_count();
    let hp = smp.hop_pointer();
    if n as usize > MAX_HOPS {
        return DrAction::Discard(DrDiscard::BadHopPointer);
    }
    if n != 0 && hp == n + 1 {
        // R1: start of the returning directed part.
        let port = smp.as_bytes()[RETURN_PATH + n as usize];
        if !node.port_ok(port) {
            return DrAction::Discard(DrDiscard::NoSuchPort);
        }
        smp.set_hop_pointer(n);
        DrAction::Forward { port }
    } else if hp >= 2 && hp <= n {
        // R2: intermediate hop, switches only.
        if !node.is_switch {
            return DrAction::Discard(DrDiscard::NotASwitch);
        }
        let port = smp.as_bytes()[RETURN_PATH + hp as usize - 1];
        if !node.port_ok(port) {
            return DrAction::Discard(DrDiscard::NoSuchPort);
        }
        smp.set_hop_pointer(hp - 1);
        DrAction::Forward { port }
    } else if hp == 1 {
        // R3: end of the returning directed part.
        smp.set_hop_pointer(0);
        let slid = smp.dr_slid();
        if slid == PERMISSIVE_LID {
            DrAction::Deliver
        } else if node.is_switch {
            DrAction::ForwardLid { dlid: slid }
        } else {
            DrAction::Discard(DrDiscard::NotASwitch)
        }
    } else if hp == 0 && node.via_lid {
        // R4: end of the initial LID-routed part.
        DrAction::Deliver
    } else {
        DrAction::Discard(DrDiscard::BadHopPointer)
    }
}

/// Turns a processed request into its response in place (IBA Vol. 1 §14.2.2, the
/// responder's rules): GetResp, D = 1, the given 15-bit status; everything else is kept.
pub fn dr_turn_around<T: AsRef<[u8]> + AsMut<[u8]>>(smp: &mut DrSmpView<T>, status: u16) {
    smp.set_response(true);
    smp.set_method(Method::Get);
    smp.set_direction(true);
    smp.set_status(status & 0x7FFF);
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    fn sw(in_port: u8) -> DrNode {
        DrNode {
            is_switch: true,
            num_ports: 36,
            in_port: Some(in_port),
            via_lid: false,
        }
    }

    /// A two-hop, purely directed route through the rules of IBA Vol. 1 §14.2.2, step by
    /// step.
    #[test]
    fn worked_example() {
        let path = DrPath::from_ports(&[1, 9]).unwrap();
        let req = DrSmp::request(Method::Get, 0x11, 0, 7, 0, &path);
        let mut buf = req.to_bytes();
        let mut v = DrSmpView::new_checked(&mut buf[..]).unwrap();
        let ca = DrNode {
            is_switch: false,
            num_ports: 1,
            in_port: None,
            via_lid: false,
        };
        assert_eq!(dr_outbound(&mut v, ca), DrAction::Forward { port: 1 });
        assert_eq!(v.hop_pointer(), 1);
        assert_eq!(dr_outbound(&mut v, sw(5)), DrAction::Forward { port: 9 });
        assert_eq!(v.hop_pointer(), 2);
        assert_eq!(dr_outbound(&mut v, sw(3)), DrAction::Deliver);
        assert_eq!(v.hop_pointer(), 3);
        dr_turn_around(&mut v, 0);
        assert_eq!(dr_returning(&mut v, sw(3)), DrAction::Forward { port: 3 });
        assert_eq!(v.hop_pointer(), 2);
        assert_eq!(dr_returning(&mut v, sw(9)), DrAction::Forward { port: 5 });
        assert_eq!(v.hop_pointer(), 1);
        let ca_rx = DrNode {
            in_port: Some(1),
            ..ca
        };
        assert_eq!(dr_returning(&mut v, ca_rx), DrAction::Deliver);
        let resp = DrSmp::from_view(&v);
        assert!(resp.direction && resp.response);
        assert_eq!((resp.hop_pointer, resp.hop_count), (0, 2));
        assert_eq!(&resp.return_path[1..3], &[5, 3]);
        assert_eq!(buf[4], 0x80);
        assert_eq!(buf[3], 0x81);
    }

    #[test]
    fn local_node_request() {
        let req = DrSmp::request(Method::Get, 0x11, 0, 1, 0, &DrPath::local());
        let mut buf = req.to_bytes();
        let mut v = DrSmpView::new_checked(&mut buf[..]).unwrap();
        let ca = DrNode {
            is_switch: false,
            num_ports: 2,
            in_port: None,
            via_lid: false,
        };
        assert_eq!(dr_outbound(&mut v, ca), DrAction::Deliver);
        assert_eq!(v.hop_pointer(), 1);
        dr_turn_around(&mut v, 0);
        assert_eq!(dr_returning(&mut v, ca), DrAction::Deliver);
        assert_eq!(v.hop_pointer(), 0);
    }

    #[test]
    fn ca_never_transits() {
        let path = DrPath::from_ports(&[1, 3, 3]).unwrap();
        let mut buf = DrSmp::request(Method::Get, 0x11, 0, 1, 0, &path).to_bytes();
        let mut v = DrSmpView::new_checked(&mut buf[..]).unwrap();
        v.set_hop_pointer(1);
        let ca = DrNode {
            is_switch: false,
            num_ports: 2,
            in_port: Some(1),
            via_lid: false,
        };
        assert_eq!(
            dr_outbound(&mut v, ca),
            DrAction::Discard(DrDiscard::NotASwitch)
        );
        let mut short = sw(1);
        short.num_ports = 2;
        assert_eq!(
            dr_outbound(&mut v, short),
            DrAction::Discard(DrDiscard::NoSuchPort)
        );
        v.set_hop_pointer(9);
        assert_eq!(
            dr_outbound(&mut v, sw(1)),
            DrAction::Discard(DrDiscard::BadHopPointer)
        );
    }

    #[test]
    fn lid_routed_segments() {
        let path = DrPath::from_ports(&[4]).unwrap();
        let mut req = DrSmp::request(Method::Get, 0x11, 0, 1, 0, &path);
        req.dr_slid = 0x10;
        req.dr_dlid = 0x20;
        let mut buf = req.to_bytes();
        let mut v = DrSmpView::new_checked(&mut buf[..]).unwrap();
        let first = DrNode {
            in_port: Some(1),
            via_lid: true,
            ..sw(1)
        };
        assert_eq!(dr_outbound(&mut v, first), DrAction::Forward { port: 4 });
        assert_eq!(
            dr_outbound(&mut v, sw(7)),
            DrAction::ForwardLid { dlid: 0x20 }
        );
        // The destination and the requester: CAs reached by LID.
        let ca = DrNode {
            is_switch: false,
            num_ports: 1,
            in_port: Some(1),
            via_lid: true,
        };
        assert_eq!(dr_outbound(&mut v, ca), DrAction::Deliver);
        dr_turn_around(&mut v, 0);
        // The response is LID-routed back to Nn, which starts the directed return.
        assert_eq!(dr_returning(&mut v, sw(2)), DrAction::Forward { port: 7 });
        assert_eq!(
            dr_returning(&mut v, sw(4)),
            DrAction::ForwardLid { dlid: 0x10 }
        );
        assert_eq!(dr_returning(&mut v, ca), DrAction::Deliver);
    }

    #[test]
    fn path_text() {
        let p = DrPath::parse_str("0,1,5,3").unwrap();
        assert_eq!(p.ports(), &[1, 5, 3]);
        assert_eq!(p.to_string(), "0,1,5,3");
        assert_eq!(DrPath::parse_str("0").unwrap(), DrPath::local());
        assert_eq!(p.parent().unwrap().to_string(), "0,1,5");
        assert!(DrPath::parse_str("0,x").is_err());
        assert!(DrPath::parse_str("0,1,0").is_err());
        let long = [1u8; 63];
        let p = DrPath::from_ports(&long).unwrap();
        assert!(p.child(1).is_err());
    }

    proptest::proptest! {
        #[test]
        fn forwarding_never_panics(buf in proptest::collection::vec(proptest::num::u8::ANY, 256),
                                   sw_: bool, np: u8, inp: Option<u8>, via: bool) {
            let mut b = buf;
            let mut v = DrSmpView::new_checked(&mut b[..]).unwrap();
            let node = DrNode { is_switch: sw_, num_ports: np, in_port: inp, via_lid: via };
            let _ = dr_outbound(&mut v, node);
            let _ = dr_returning(&mut v, node);
            let _ = DrPath::from_smp(&v);
        }

        /// The bytes written straight are those of the request built as a struct.
        #[test]
        fn request_bytes_are_those_of_the_request(
            set: bool, attr: u16, modifier: u32, tid: u64, key: u64,
            ports in proptest::collection::vec(1u8..=254, 0..=MAX_HOPS),
            data in proptest::array::uniform32(proptest::num::u8::ANY),
        ) {
            let method = if set { Method::Set } else { Method::Get };
            let path = DrPath::from_ports(&ports).unwrap();
            let mut d = [0u8; SMP_DATA_SIZE];
            d[..32].copy_from_slice(&data);
            d[32..].copy_from_slice(&data);
            let mut smp = DrSmp::request(method, attr, modifier, tid, key, &path);
            smp.data = d;
            let fast = DrSmp::request_bytes(method, attr, modifier, tid, key, &path, &d);
            proptest::prop_assert_eq!(&fast[..], &smp.to_bytes()[..]);
        }
    }
}
