//! Decoding any MAD into a printable tree: the logic behind `ibsm-mad-decode`.
//!
//! [`decode_mad`] splits a MAD into the common header, the class-specific header (SMP
//! directed-route or LID-routed, SA, general-services, vendor range 2) and the attribute
//! or records, chosen by class and AttributeID among every structure `ibsm-wire` knows
//! (trap DataDetails by trap number, SA tables record by record); [`Decoded::to_text`] renders an smpquery-like
//! listing and [`Decoded::to_json`] one JSON object.

use std::fmt::Write as _;

use ibsm_wire::perf::{
    CounterSelect, ExtCounterSelect, ExtCounterSelect2, PerfAttributeId, PmCapabilityMask,
    PmCapabilityMask2,
};
use ibsm_wire::sa::{
    Component, GuidInfoRecord, InformInfo, InformInfoRecord, LinearForwardingTableRecord,
    LinkRecord, McMemberRecord, MultiPathRecord, MulticastForwardingTableRecord, NodeRecord,
    PKeyTableRecord, PathRecord, PortInfoRecord, RandomForwardingTableRecord, Rate, SaAttributeId,
    SaMad, SaRecord, Selector, ServiceRecord, SlToVlMappingTableRecord, SmInfoRecord,
    SwitchInfoRecord, VlArbitrationTableRecord,
};
use ibsm_wire::{
    CapabilityMask, CapabilityMask2, DrPath, DrSmp, FecMode, FieldValue, LayoutVisitor, LidSmp,
    LinkDownDefaultState, LinkSpeed, LinkSpeedExt, LinkWidth, MAD_HEADER_SIZE, MadHeader, Method,
    MgmtClass, Mtu, NodeType, Notice, NoticeType, PhysPortState, PortState, Reflect, SmAttributeId,
    SmState, TrapData, VlCap, WireStruct,
};
use ibsm_wire::{ClassPortInfo, GsMad, SaNotice, Vendor2Mad};

mod hex;
mod render;

pub use hex::{HexError, parse_hex, strip_comments};

/// A decoded value, detached from the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// An unsigned field, with its width in bits and an optional symbolic name.
    Uint {
        /// The value.
        value: u64,
        /// Width in bits (decides decimal or hex display).
        bits: u16,
        /// Name of the code point, when the field is an enum that knows it.
        name: Option<String>,
    },
    /// Raw bytes (GIDs, tables, paths), with text when they hold a NUL-padded string.
    Bytes {
        /// The bytes.
        bytes: Vec<u8>,
        /// Printable text, for string fields.
        text: Option<String>,
    },
    /// A directed route in the diagnostics' syntax (`0,1,3`).
    Route(String),
    /// A nested structure.
    Struct(Section),
}

/// One named field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Field name (the Rust field name).
    pub name: String,
    /// Its value.
    pub value: Value,
}

/// A titled list of fields: one header or one attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// What the section is (`MAD header`, `NodeInfo`, ...).
    pub title: String,
    /// The fields, in wire order.
    pub items: Vec<Item>,
}

/// A decoded MAD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Header, class-specific header, then attributes (several for SA tables).
    pub sections: Vec<Section>,
    /// Things worth telling that are not errors (unknown attribute, short table, ...).
    pub notes: Vec<String>,
}

/// Why a MAD could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

fn err(e: impl std::fmt::Display) -> DecodeError {
    DecodeError(e.to_string())
}

/// Symbolic name of a code point, for the fields whose type is an enum.
fn code_name(section: &str, field: &str, v: u64) -> Option<String> {
    let known = |s: String| (!s.starts_with("Unknown")).then_some(s);
    match (section, field) {
        (_, "mgmt_class") => known(format!("{:?}", MgmtClass::from(v as u8))),
        (_, "method") => known(format!("{:?}", Method::from(v as u8))),
        ("NodeInfo", "node_type") => known(format!("{:?}", NodeType::from(v as u8))),
        ("SA MAD", "attribute_id") => known(format!("{:?}", SaAttributeId::from(v as u16))),
        ("PerfMgt", "attribute_id") => known(format!("{:?}", PerfAttributeId::from(v as u16))),
        ("PerfMgt ClassPortInfo", "capability_mask") => flag_names(PmCapabilityMask::NAMED, |f| {
            PmCapabilityMask(v as u16).contains(f)
        }),
        ("PerfMgt ClassPortInfo", "capability_mask2") => {
            flag_names(PmCapabilityMask2::NAMED, |f| {
                PmCapabilityMask2(v as u32).contains(f)
            })
        }
        // The select words also name groups (ERRORS, DATA, ALL): list single counters.
        ("PortCounters", "counter_select") => flag_names(CounterSelect::NAMED, |f| {
            f.0.count_ones() == 1 && CounterSelect(v as u16).contains(f)
        }),
        ("PortCountersExtended", "counter_select") => flag_names(ExtCounterSelect::NAMED, |f| {
            f.0.count_ones() == 1 && ExtCounterSelect(v as u16).contains(f)
        }),
        ("PortCountersExtended", "counter_select2") => flag_names(ExtCounterSelect2::NAMED, |f| {
            f.0.count_ones() == 1 && ExtCounterSelect2(v as u32).contains(f)
        }),
        (_, "attribute_id") => known(format!("{:?}", SmAttributeId::from(v as u16))),
        ("PortInfo", "port_state") => known(format!("{:?}", PortState::from(v as u8))),
        ("PortInfo", "port_phys_state") => known(format!("{:?}", PhysPortState::from(v as u8))),
        ("PortInfo", "link_down_default_state") => {
            known(format!("{:?}", LinkDownDefaultState::from(v as u8)))
        }
        ("PortInfo", "link_width_active") => known(format!("{:?}", LinkWidth::from(v as u8))),
        ("PortInfo", "link_speed_active") => known(format!("{:?}", LinkSpeed::from(v as u8))),
        ("PortInfo", "link_speed_ext_active") => {
            known(format!("{:?}", LinkSpeedExt::from(v as u8)))
        }
        ("Notice", "notice_type") => known(format!("{:?}", NoticeType::from(v as u8))),
        ("PortInfoExtended", "fec_mode_active") => known(format!("{:?}", FecMode::from(v as u16))),
        ("PortInfo", "neighbor_mtu" | "mtu_cap") => known(format!("{:?}", Mtu::from(v as u8))),
        ("PortInfo", "vl_cap" | "operational_vls") => known(format!("{:?}", VlCap::from(v as u8))),
        ("PortInfo", "capability_mask") => flag_names(CapabilityMask::NAMED, |f| {
            CapabilityMask(v as u32).contains(f)
        }),
        ("PortInfo", "capability_mask2") => flag_names(CapabilityMask2::NAMED, |f| {
            CapabilityMask2(v as u16).contains(f)
        }),
        ("SMInfo", "sm_state") => known(format!("{:?}", SmState::from(v as u8))),
        (_, "mtu") => known(format!("{:?}", Mtu::from(v as u8))),
        (_, "rate") => known(format!("{:?}", Rate::from(v as u8))),
        (_, f) if f.ends_with("_selector") => known(format!("{:?}", Selector::from(v as u8))),
        _ => None,
    }
}

/// Names of the flags set in a flag word, `|`-joined (`None` when none is named).
fn flag_names<F: Copy>(named: &[(&str, F)], set: impl Fn(F) -> bool) -> Option<String> {
    let names: Vec<&str> = named
        .iter()
        .filter(|(_, f)| set(*f))
        .map(|(n, _)| *n)
        .collect();
    (!names.is_empty()).then(|| names.join("|"))
}

/// NUL-padded printable ASCII, as NodeDescription and ServiceName hold.
fn as_text(name: &str, b: &[u8]) -> Option<String> {
    let stringy = ["string", "name", "description"]
        .iter()
        .any(|k| name.contains(k));
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    let printable = b[..end].iter().all(|c| (0x20..0x7f).contains(c));
    (stringy && printable && b[end..].iter().all(|&c| c == 0))
        .then(|| String::from_utf8_lossy(&b[..end]).into_owned())
}

/// Converts any structure with a field table, recursing into nested structures.
pub fn section_of(r: &dyn Reflect) -> Section {
    let title = r.label();
    let mut items = Vec::new();
    r.visit(&mut |d, v| {
        let value = match v {
            FieldValue::Uint(value) => Value::Uint {
                value,
                bits: d.field.len,
                name: code_name(title, d.name, value),
            },
            FieldValue::Bytes(b) => Value::Bytes {
                bytes: b.to_vec(),
                text: as_text(d.name, b),
            },
            FieldValue::Struct(s) => Value::Struct(section_of(s)),
        };
        items.push(Item {
            name: d.name.to_string(),
            value,
        });
    });
    Section {
        title: title.to_string(),
        items,
    }
}

/// Parses bytes as `T` and returns it as a trait object for printing.
fn boxed<T: WireStruct + Reflect + 'static>(b: &[u8]) -> Result<Box<dyn Reflect>, DecodeError> {
    Ok(Box::new(T::parse(b).map_err(err)?))
}

type Parser = fn(&[u8]) -> Result<Box<dyn Reflect>, DecodeError>;

/// [`boxed`] for the layout an AttributeID names.
struct Boxed;

impl LayoutVisitor for Boxed {
    type Output = Parser;
    fn visit<A: WireStruct + Reflect + 'static>(self) -> Parser {
        boxed::<A>
    }
}

/// The structure carried by an SMP (classes 0x01 and 0x81) with this AttributeID.
#[must_use]
pub fn smp_attribute(id: u16) -> Option<Parser> {
    match SmAttributeId::from(id) {
        // Notice travels in traps, not in a Get/Set of the SMA.
        SmAttributeId::Notice => Some(boxed::<Notice>),
        id => id.visit(Boxed),
    }
}

/// The structure carried by a PerfMgt MAD (class 0x04) with this AttributeID, besides
/// ClassPortInfo.
#[must_use]
pub fn perf_attribute(id: u16) -> Option<Parser> {
    ibsm_query::perf::visit_attribute(PerfAttributeId::from(id), Boxed)
}

/// The typed DataDetails of a Notice, when its trap number has a layout.
#[must_use]
pub fn trap_details(n: &Notice) -> Option<Section> {
    Some(match n.trap_data() {
        TrapData::Gid(d) => section_of(&d),
        TrapData::LinkStateChange(d) => section_of(&d),
        TrapData::PortThreshold(d) => section_of(&d),
        TrapData::LocalChanges(d) => section_of(&d),
        TrapData::SystemImageGuidChange(d) => section_of(&d),
        TrapData::BadMKey(d) => section_of(&d),
        TrapData::BadKey(d) => section_of(&d),
        TrapData::BadPKeySwitchExternalPort(d) => section_of(&d),
        TrapData::Raw(_) => return None,
    })
}

/// How to print one kind of SA record.
#[derive(Clone, Copy)]
pub struct SaKind {
    /// Decoder.
    pub parse: Parser,
    /// ComponentMask bits, to name the ones a request selects.
    pub components: &'static [Component],
    /// Size of one record on the wire.
    pub size: usize,
}

fn sa_kind<R: SaRecord + Reflect + 'static>() -> SaKind {
    SaKind {
        parse: boxed::<R>,
        components: R::COMPONENTS,
        size: R::SIZE,
    }
}

/// The record or attribute carried by an SA MAD (class 0x03) with this AttributeID.
#[must_use]
pub fn sa_record(id: u16) -> Option<SaKind> {
    Some(match SaAttributeId::from(id) {
        SaAttributeId::ClassPortInfo => sa_kind::<ClassPortInfo>(),
        SaAttributeId::Notice => sa_kind::<SaNotice>(),
        SaAttributeId::InformInfo => sa_kind::<InformInfo>(),
        SaAttributeId::NodeRecord => sa_kind::<NodeRecord>(),
        SaAttributeId::PortInfoRecord => sa_kind::<PortInfoRecord>(),
        SaAttributeId::SlToVlMappingTableRecord => sa_kind::<SlToVlMappingTableRecord>(),
        SaAttributeId::SwitchInfoRecord => sa_kind::<SwitchInfoRecord>(),
        SaAttributeId::LinearForwardingTableRecord => sa_kind::<LinearForwardingTableRecord>(),
        SaAttributeId::RandomForwardingTableRecord => sa_kind::<RandomForwardingTableRecord>(),
        SaAttributeId::MulticastForwardingTableRecord => {
            sa_kind::<MulticastForwardingTableRecord>()
        }
        SaAttributeId::SmInfoRecord => sa_kind::<SmInfoRecord>(),
        SaAttributeId::LinkRecord => sa_kind::<LinkRecord>(),
        SaAttributeId::GuidInfoRecord => sa_kind::<GuidInfoRecord>(),
        SaAttributeId::ServiceRecord => sa_kind::<ServiceRecord>(),
        SaAttributeId::PKeyTableRecord => sa_kind::<PKeyTableRecord>(),
        SaAttributeId::PathRecord => sa_kind::<PathRecord>(),
        SaAttributeId::VlArbitrationTableRecord => sa_kind::<VlArbitrationTableRecord>(),
        SaAttributeId::McMemberRecord => sa_kind::<McMemberRecord>(),
        SaAttributeId::MultiPathRecord => sa_kind::<MultiPathRecord>(),
        SaAttributeId::InformInfoRecord => sa_kind::<InformInfoRecord>(),
        _ => return None,
    })
}

/// Decodes the SA part of a class 0x03 MAD: the SA header (RMPP, SM_Key,
/// AttributeOffset, ComponentMask with the selected components named) and the record,
/// or every record of a GetTable/GetMulti/GetTraceTable response.
fn decode_sa(bytes: &[u8], d: &mut Decoded) -> Result<(), DecodeError> {
    let sa = SaMad::parse(bytes).map_err(err)?;
    let id = sa.attribute_id;
    let kind = sa_record(id);
    let mut s = without_header(&sa, "SA header", &["data"]);
    if let Some(k) = kind {
        for item in &mut s.items {
            if let ("component_mask", Value::Uint { value, name, .. }) =
                (item.name.as_str(), &mut item.value)
            {
                let names: Vec<&str> = k
                    .components
                    .iter()
                    .filter(|c| *value >> c.bit & 1 == 1)
                    .map(|c| c.name)
                    .collect();
                *name = (!names.is_empty()).then(|| names.join("|"));
            }
        }
    }
    d.sections.push(s);
    let Some(kind) = kind else {
        d.notes.push(format!(
            "SA attribute {id:#06x} has no decoder; data shown raw"
        ));
        d.sections.push(raw_section("SA data", &sa.data));
        return Ok(());
    };
    let table = sa.response
        && matches!(
            sa.method,
            Method::GetTable | Method::GetMulti | Method::GetTraceTable
        );
    if !table {
        d.sections
            .push(section_of((kind.parse)(&sa.data)?.as_ref()));
        return Ok(());
    }
    let stride = usize::from(sa.attribute_offset) * 8;
    if stride < kind.size {
        return Err(DecodeError(format!(
            "SA table: AttributeOffset {} ({stride} bytes) is smaller than one record ({} bytes)",
            sa.attribute_offset, kind.size
        )));
    }
    let payload = sa.payload();
    let count = payload.len() / stride;
    for k in 0..count {
        let mut r = section_of((kind.parse)(&payload[k * stride..])?.as_ref());
        r.title = format!("{} [{k}]", r.title);
        d.sections.push(r);
    }
    if count == 0 {
        d.notes.push("SA table holds no record".into());
    }
    let rest = payload.len() - count * stride;
    if rest > 0 && (sa.rmpp.flags.active() || rest >= kind.size) {
        d.notes.push(format!(
            "{rest} trailing bytes: part of a record continued in the next RMPP segment"
        ));
    }
    Ok(())
}

fn raw_section(title: &str, bytes: &[u8]) -> Section {
    Section {
        title: title.into(),
        items: vec![Item {
            name: "data".into(),
            value: Value::Bytes {
                bytes: bytes.to_vec(),
                text: None,
            },
        }],
    }
}

/// Fields of `full` that are not in the common header, as their own section.
fn without_header(full: &dyn Reflect, title: &str, skip: &[&str]) -> Section {
    let mut s = section_of(full);
    let header: Vec<&str> = MadHeader::FIELDS.iter().map(|d| d.name).collect();
    s.items
        .retain(|i| !header.contains(&i.name.as_str()) && !skip.contains(&i.name.as_str()));
    s.title = title.to_string();
    s
}

/// Decodes a whole MAD (at least the 24-byte header; the SMP and SA forms need 256).
///
/// # Errors
/// A one-line message naming the structure that did not fit.
pub fn decode_mad(bytes: &[u8]) -> Result<Decoded, DecodeError> {
    if bytes.len() < MAD_HEADER_SIZE {
        return Err(DecodeError(format!(
            "MAD truncated: {} bytes, the common header alone needs {MAD_HEADER_SIZE}",
            bytes.len()
        )));
    }
    if bytes.len() > 256 {
        return Err(DecodeError(format!(
            "{} bytes is longer than a MAD (256)",
            bytes.len()
        )));
    }
    let header = MadHeader::parse(bytes).map_err(err)?;
    let mut first = section_of(&header);
    // AttributeIDs are per class: name them in the class's own list.
    for item in &mut first.items {
        if let (
            "attribute_id",
            Value::Uint {
                name, value: id, ..
            },
        ) = (item.name.as_str(), &mut item.value)
        {
            *name = match header.mgmt_class {
                MgmtClass::SubnLid | MgmtClass::SubnDirected => code_name("", "attribute_id", *id),
                MgmtClass::SubnAdm => code_name("SA MAD", "attribute_id", *id),
                MgmtClass::PerfMgt => code_name("PerfMgt", "attribute_id", *id),
                _ => None,
            };
        }
    }
    let mut d = Decoded {
        sections: vec![first],
        notes: Vec::new(),
    };
    let data: &[u8] = match header.mgmt_class {
        MgmtClass::SubnDirected => {
            let smp = DrSmp::parse(bytes).map_err(err)?;
            let mut s = without_header(&smp, "Directed-route SMP", &["data"]);
            // The paths are shown as routes, the way the diagnostics write them.
            for item in &mut s.items {
                let path = match item.name.as_str() {
                    "initial_path" => smp.initial_path,
                    "return_path" => smp.return_path,
                    _ => continue,
                };
                item.value = Value::Route(route_text(&path, smp.hop_count));
            }
            if DrPath::parse_str(&route_text(&smp.initial_path, smp.hop_count)).is_err() {
                d.notes
                    .push("InitialPath is not a valid route (port 0 or HopCount > 63)".into());
            }
            d.sections.push(s);
            &bytes[64..128]
        }
        MgmtClass::SubnLid => {
            let smp = LidSmp::parse(bytes).map_err(err)?;
            d.sections
                .push(without_header(&smp, "LID-routed SMP", &["data"]));
            &bytes[64..128]
        }
        MgmtClass::SubnAdm => {
            decode_sa(bytes, &mut d)?;
            return Ok(d);
        }
        other if (0x30..=0x4F).contains(&u8::from(other)) => {
            let v = Vendor2Mad::parse(bytes).map_err(err)?;
            d.sections
                .push(without_header(&v, "Vendor range-2 header", &["data"]));
            d.sections.push(raw_section("Vendor data", &v.data));
            return Ok(d);
        }
        MgmtClass::PerfMgt
        | MgmtClass::BoardMgt
        | MgmtClass::DevMgt
        | MgmtClass::ComMgt
        | MgmtClass::Snmp
        | MgmtClass::CongestionControl => {
            let g = GsMad::parse(bytes).map_err(err)?;
            d.sections
                .push(without_header(&g, "GS class header", &["data"]));
            // ClassPortInfo (0x0001) is common to every GS class; the rest is per class.
            let perf = header.mgmt_class == MgmtClass::PerfMgt;
            if header.attribute_id == 0x0001 {
                let cpi = ClassPortInfo::parse(&g.data).map_err(err)?;
                let mut s = section_of(&cpi);
                if perf {
                    // The class-specific capability bits are named by the class.
                    for item in &mut s.items {
                        if let Value::Uint { value, name, .. } = &mut item.value {
                            let n = code_name("PerfMgt ClassPortInfo", &item.name, *value);
                            if n.is_some() {
                                *name = n;
                            }
                        }
                    }
                }
                s.title = "ClassPortInfo".into();
                d.sections.push(s);
            } else if let Some(parse) = perf.then(|| perf_attribute(header.attribute_id)).flatten()
            {
                d.sections.push(section_of(parse(&g.data)?.as_ref()));
            } else {
                d.notes.push(format!(
                    "class {:#04x} ({:?}) attribute {:#06x} has no decoder; data shown raw",
                    u8::from(header.mgmt_class),
                    header.mgmt_class,
                    header.attribute_id
                ));
                d.sections.push(raw_section("GS data", &g.data));
            }
            return Ok(d);
        }
        other => {
            d.notes.push(format!(
                "class {:#04x} ({other:?}): no class-specific decoding; data shown raw",
                u8::from(other)
            ));
            d.sections
                .push(raw_section("Data", &bytes[MAD_HEADER_SIZE..]));
            return Ok(d);
        }
    };
    match smp_attribute(header.attribute_id) {
        Some(parse) => {
            d.sections.push(section_of(parse(data)?.as_ref()));
            if header.attribute_id == u16::from(SmAttributeId::Notice) {
                let n = Notice::parse(data).map_err(err)?;
                d.sections.extend(trap_details(&n));
            }
        }
        None => {
            d.notes.push(format!(
                "attribute {:#06x} has no decoder; data shown raw",
                header.attribute_id
            ));
            d.sections.push(Section {
                title: "Attribute data".into(),
                items: vec![Item {
                    name: "data".into(),
                    value: Value::Bytes {
                        bytes: data.to_vec(),
                        text: None,
                    },
                }],
            });
        }
    }
    Ok(d)
}

fn route_text(path: &[u8; 64], hops: u8) -> String {
    let n = usize::from(hops).min(63);
    let mut s = String::from("0");
    for p in &path[1..=n] {
        let _ = write!(s, ",{p}");
    }
    if hops > 63 {
        s.push_str(",?");
    }
    s
}

#[cfg(test)]
mod tests;
