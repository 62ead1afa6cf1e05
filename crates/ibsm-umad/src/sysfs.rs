//! Finding HCAs, ports and their umad device numbers through sysfs (the Linux kernel's
//! `Documentation/ABI/stable/sysfs-class-infiniband`).
//!
//! Parsing is separated from reading so every format is unit-tested without a device.

use crate::error::{Error, Result};
use crate::sys;

/// Where the kernel (or the umad2sim preload) publishes umad devices.
pub const UMAD_CLASS_DIR: &str = "/sys/class/infiniband_mad";
/// Where RDMA devices are described.
pub const IB_CLASS_DIR: &str = "/sys/class/infiniband";
/// Where the device nodes live.
pub const DEV_DIR: &str = "/dev/infiniband";

/// One port of an RDMA device with its umad device, as found in sysfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortDesc {
    /// RDMA device name, e.g. `mlx5_0` (`ibsim0` under ibsim).
    pub ca: String,
    /// Port number (0 for a switch's management port).
    pub port: u8,
    /// N of `/dev/infiniband/umadN` and `issmN`.
    pub umad_index: u32,
    /// Node GUID of the device.
    pub node_guid: u64,
    /// Node type number (1 CA, 2 switch, 3 router).
    pub node_type: u8,
    /// Port GUID (interface ID of GID index 0), if readable.
    pub port_guid: Option<u64>,
    /// Base LID (PortInfo.LID).
    pub lid: u16,
    /// LID of the master SM as the port knows it.
    pub sm_lid: u16,
    /// LMC.
    pub lmc: u8,
    /// Logical port state (1 Down .. 4 Active).
    pub state: u8,
    /// Physical port state (5 LinkUp).
    pub phys_state: u8,
    /// `InfiniBand` or `Ethernet`; only InfiniBand ports are usable by an SM.
    pub link_layer: String,
}

impl PortDesc {
    /// Path of the umad device node.
    #[must_use]
    pub fn umad_path(&self) -> String {
        format!("{DEV_DIR}/umad{}", self.umad_index)
    }

    /// Path of the issm device node.
    #[must_use]
    pub fn issm_path(&self) -> String {
        format!("{DEV_DIR}/issm{}", self.umad_index)
    }

    /// Whether the link layer is InfiniBand (RoCE ports have no SM).
    #[must_use]
    pub fn is_infiniband(&self) -> bool {
        self.link_layer.trim().eq_ignore_ascii_case("infiniband")
    }

    /// Whether the port's physical link is up (it can reach a neighbour).
    #[must_use]
    pub fn link_up(&self) -> bool {
        self.phys_state == 5
    }
}

/// How to pick a port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    /// RDMA device name; `None` = any.
    pub ca: Option<String>,
    /// Port number; `None` = any.
    pub port: Option<u8>,
    /// Port GUID (or node GUID); `None` = any.
    pub guid: Option<u64>,
}

/// `0002:c903:00a1:b2c0` (or plain hex) -> number.
///
/// # Errors
/// [`Error::Sysfs`] naming the text when it is not 16 hex digits.
pub fn parse_guid(text: &str, what: &str) -> Result<u64> {
    let t = text.trim();
    let t = t.strip_prefix("0x").unwrap_or(t);
    let digits: String = t.chars().filter(|c| *c != ':').collect();
    if digits.is_empty() || digits.len() > 16 {
        return Err(Error::sysfs(what, format!("bad GUID {t:?}")));
    }
    u64::from_str_radix(&digits, 16).map_err(|_| Error::sysfs(what, format!("bad GUID {t:?}")))
}

/// `0x1a` -> 26.
///
/// # Errors
/// [`Error::Sysfs`] when it is not a hex number of at most 16 bits.
pub fn parse_hex_u16(text: &str, what: &str) -> Result<u16> {
    let t = text.trim();
    let t = t.strip_prefix("0x").unwrap_or(t);
    u16::from_str_radix(t, 16).map_err(|_| Error::sysfs(what, format!("bad hex value {t:?}")))
}

/// `4: ACTIVE` -> 4 (also accepts a bare number).
///
/// # Errors
/// [`Error::Sysfs`] when no leading number is found.
pub fn parse_numbered(text: &str, what: &str) -> Result<u8> {
    let t = text.trim();
    let num = t.split(':').next().unwrap_or("").trim();
    num.parse()
        .map_err(|_| Error::sysfs(what, format!("bad value {t:?}")))
}

/// `fe80:0000:...:b2c1` -> interface ID (last 64 bits).
///
/// # Errors
/// [`Error::Sysfs`] when the GID is not 8 groups of hex.
pub fn parse_gid_guid(text: &str, what: &str) -> Result<u64> {
    let groups: Vec<&str> = text.trim().split(':').collect();
    if groups.len() != 8 {
        return Err(Error::sysfs(what, format!("bad GID {:?}", text.trim())));
    }
    parse_guid(&groups[4..].join(""), what)
}

fn read_trimmed(path: &str) -> Result<String> {
    sys::read_file(path)
        .map(|s| s.trim().to_owned())
        .map_err(|e| Error::io("read", path, &e))
}

/// Lists every umad port the system (or the preload) offers, in umad-index order.
///
/// # Errors
/// [`Error::Io`] when the umad class directory is missing (no `ib_umad` module, or no
/// preload), [`Error::Abi`] for an ABI version below 5, [`Error::Sysfs`] for files in an
/// unexpected format.
pub fn list_ports() -> Result<Vec<PortDesc>> {
    let abi_path = format!("{UMAD_CLASS_DIR}/abi_version");
    let abi: u32 = read_trimmed(&abi_path)?
        .parse()
        .map_err(|_| Error::sysfs(&abi_path, "not a number".to_owned()))?;
    if abi < 5 {
        return Err(Error::Abi(abi));
    }
    let mut out = Vec::new();
    let names =
        sys::list_dir(UMAD_CLASS_DIR).map_err(|e| Error::io("opendir", UMAD_CLASS_DIR, &e))?;
    for name in names {
        let Some(idx) = name
            .strip_prefix("umad")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let base = format!("{UMAD_CLASS_DIR}/{name}");
        let ca = read_trimmed(&format!("{base}/ibdev"))?;
        let port_path = format!("{base}/port");
        let port = parse_numbered(&read_trimmed(&port_path)?, &port_path)?;
        out.push(describe(&ca, port, idx)?);
    }
    out.sort_by_key(|p| p.umad_index);
    Ok(out)
}

fn describe(ca: &str, port: u8, umad_index: u32) -> Result<PortDesc> {
    let dev = format!("{IB_CLASS_DIR}/{ca}");
    let pdir = format!("{dev}/ports/{port}");
    let f = |name: &str| read_trimmed(&format!("{pdir}/{name}"));
    let p = |name: &str| format!("{pdir}/{name}");
    let node_guid_path = format!("{dev}/node_guid");
    let node_type_path = format!("{dev}/node_type");
    Ok(PortDesc {
        ca: ca.to_owned(),
        port,
        umad_index,
        node_guid: parse_guid(&read_trimmed(&node_guid_path)?, &node_guid_path)?,
        node_type: parse_numbered(&read_trimmed(&node_type_path)?, &node_type_path)?,
        port_guid: f("gids/0")
            .ok()
            .and_then(|g| parse_gid_guid(&g, &p("gids/0")).ok()),
        lid: parse_hex_u16(&f("lid")?, &p("lid"))?,
        sm_lid: parse_hex_u16(&f("sm_lid")?, &p("sm_lid"))?,
        lmc: parse_numbered(&f("lid_mask_count")?, &p("lid_mask_count"))?,
        state: parse_numbered(&f("state")?, &p("state"))?,
        phys_state: parse_numbered(&f("phys_state")?, &p("phys_state"))?,
        // Older kernels and the preload may not publish link_layer: IB is the default.
        link_layer: f("link_layer").unwrap_or_else(|_| "InfiniBand".to_owned()),
    })
}

/// Picks a port: the first that matches every given criterion, preferring InfiniBand
/// ports whose link is up (so the default is "the first active IB port").
///
/// # Errors
/// [`Error::NoPort`] when nothing matches.
pub fn select(ports: &[PortDesc], sel: &Selector) -> Result<PortDesc> {
    let matches = |p: &&PortDesc| {
        p.is_infiniband()
            && sel.ca.as_ref().is_none_or(|c| *c == p.ca)
            && sel.port.is_none_or(|n| n == p.port)
            && sel
                .guid
                .is_none_or(|g| p.port_guid == Some(g) || p.node_guid == g)
    };
    ports
        .iter()
        .filter(matches)
        .find(|p| p.link_up())
        .or_else(|| ports.iter().find(matches))
        .cloned()
        .ok_or_else(|| Error::NoPort(what_was_asked(sel, ports)))
}

/// What was asked and what there is, in the diags' words: `CA "mlx5_9" (there are:
/// mlx5_0 port 1, mlx5_0 port 2)`.
fn what_was_asked(sel: &Selector, ports: &[PortDesc]) -> String {
    let mut asked = Vec::new();
    if let Some(c) = &sel.ca {
        asked.push(format!("CA {c:?}"));
    }
    if let Some(p) = sel.port {
        asked.push(format!("port {p}"));
    }
    if let Some(g) = sel.guid {
        asked.push(format!("GUID {g:#018x}"));
    }
    let asked = if asked.is_empty() {
        "any InfiniBand port".to_owned()
    } else {
        asked.join(", ")
    };
    let there: Vec<String> = ports
        .iter()
        .filter(|p| p.is_infiniband())
        .map(|p| format!("{} port {}", p.ca, p.port))
        .collect();
    if there.is_empty() {
        format!("{asked} (there is no InfiniBand umad port)")
    } else {
        format!("{asked} (there are: {})", there.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(
            parse_guid("0002:c903:00a1:b2c0\n", "x").unwrap(),
            0x0002_c903_00a1_b2c0
        );
        assert_eq!(parse_guid("0x200000", "x").unwrap(), 0x20_0000);
        assert!(parse_guid("zz", "x").is_err());
        assert_eq!(parse_hex_u16("0x1a\n", "x").unwrap(), 0x1a);
        assert!(parse_hex_u16("0x10000", "x").is_err());
        assert_eq!(parse_numbered("4: ACTIVE", "x").unwrap(), 4);
        assert_eq!(parse_numbered("5: LinkUp", "x").unwrap(), 5);
        assert_eq!(parse_numbered("1", "x").unwrap(), 1);
        assert!(parse_numbered("ACTIVE", "x").is_err());
        assert_eq!(
            parse_gid_guid("fe80:0000:0000:0000:0002:c903:00a1:b2c1", "x").unwrap(),
            0x0002_c903_00a1_b2c1
        );
        assert!(parse_gid_guid("fe80::1", "x").is_err());
    }

    fn port(ca: &str, n: u8, phys: u8, ll: &str) -> PortDesc {
        PortDesc {
            ca: ca.into(),
            port: n,
            umad_index: u32::from(n),
            node_guid: 1,
            node_type: 1,
            port_guid: Some(0x10 + u64::from(n)),
            lid: 0,
            sm_lid: 0,
            lmc: 0,
            state: 1,
            phys_state: phys,
            link_layer: ll.into(),
        }
    }

    #[test]
    fn selection() {
        let ports = [
            port("a", 1, 3, "InfiniBand"),
            port("a", 2, 5, "InfiniBand"),
            port("b", 1, 5, "Ethernet"),
        ];
        assert_eq!(select(&ports, &Selector::default()).unwrap().port, 2);
        let s = Selector {
            port: Some(1),
            ..Selector::default()
        };
        assert_eq!(select(&ports, &s).unwrap().ca, "a");
        let s = Selector {
            ca: Some("b".into()),
            ..Selector::default()
        };
        assert!(select(&ports, &s).is_err());
        let s = Selector {
            guid: Some(0x11),
            ..Selector::default()
        };
        assert_eq!(select(&ports, &s).unwrap().port, 1);
    }
}
