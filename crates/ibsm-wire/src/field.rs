//! Bit-exact field positions and the value types that can live in them.
//!
//! A [`Field`] is the `(Byte, Bit, Len)` triple of the IBA specification's field tables: the byte holding the
//! field's most significant bit, that bit's position counted from the byte's MSB
//! (0 = 0x80), and the length in bits. Every structure of this crate names its fields
//! exactly once, as `Field` constants in one table (see the `wire_struct!` invocations);
//! accessors never contain a literal offset.

use crate::error::{Error, Result};

/// Position of a field: `(byte, bit, len)` with `bit` counted from the MSB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Field {
    /// Byte holding the field's most significant bit.
    pub byte: u16,
    /// Bit inside that byte, 0 = most significant.
    pub bit: u8,
    /// Length in bits.
    pub len: u16,
}

impl Field {
    /// A field at `(byte, bit, len)`.
    #[must_use]
    pub const fn new(byte: u16, bit: u8, len: u16) -> Self {
        Self { byte, bit, len }
    }

    /// Bit offset from the start of the structure (the IBA "bit offset").
    #[must_use]
    pub const fn abs_bit(self) -> usize {
        self.byte as usize * 8 + self.bit as usize
    }

    /// One past the last byte the field touches.
    #[must_use]
    pub const fn end_byte(self) -> usize {
        (self.abs_bit() + self.len as usize).div_ceil(8)
    }

    /// The field moved `bytes` further (for records nested in larger structures).
    #[must_use]
    pub const fn shifted(self, bytes: u16) -> Self {
        Self {
            byte: self.byte + bytes,
            ..self
        }
    }

    /// Mask of the field's width as a `u64` (fields wider than 64 bits are arrays).
    #[must_use]
    pub const fn mask(self) -> u64 {
        if self.len >= 64 {
            u64::MAX
        } else {
            (1u64 << self.len) - 1
        }
    }
}

/// Where the 8-byte window holding a field starts, if the buffer has one: preferably the
/// aligned 8-byte word holding the field (fields of one word then share one load), else
/// the field's first byte when 8 bytes fit there, else the last 8 bytes of the buffer.
/// `None` for fields spanning more than 8 bytes or buffers shorter than 8 bytes.
#[inline(always)]
fn window(len: usize, f: Field) -> Option<usize> {
    let first = f.byte as usize;
    let span = f.bit as usize + f.len as usize;
    let aligned = first & !7;
    if span > 64 || len < 8 {
        None
    } else if aligned + 8 <= len && f.abs_bit() + f.len as usize <= (aligned + 8) * 8 {
        Some(aligned)
    } else if first + 8 <= len {
        Some(first)
    } else {
        Some(len - 8)
    }
}

/// Reads an unsigned field of at most 64 bits.
///
/// The caller guarantees `buf.len() >= f.end_byte()` (views check that once, at
/// construction). Fields are read through one big-endian 8-byte load around them, so
/// with a constant `f` and a buffer of known length this folds to a load, a byte swap,
/// a shift and a mask.
#[inline(always)]
#[must_use]
pub fn get_uint(buf: &[u8], f: Field) -> u64 {
    if let Some(w) = window(buf.len(), f) {
        let mut word = [0u8; 8];
        word.copy_from_slice(&buf[w..w + 8]);
        let shift = 64 - (f.abs_bit() - w * 8) - f.len as usize;
        return (u64::from_be_bytes(word) >> shift) & f.mask();
    }
    let first = f.byte as usize;
    let nbytes = (f.bit as usize + f.len as usize).div_ceil(8);
    let shift = nbytes * 8 - f.bit as usize - f.len as usize;
    let mut acc: u128 = 0;
    for &b in &buf[first..first + nbytes] {
        acc = (acc << 8) | u128::from(b);
    }
    ((acc >> shift) as u64) & f.mask()
}

/// Writes an unsigned field of at most 64 bits; bits of `v` above the field width are
/// dropped so neighbouring fields are never touched (unlike libibmad's setters).
#[inline(always)]
pub fn set_uint(buf: &mut [u8], f: Field, v: u64) {
    if let Some(w) = window(buf.len(), f) {
        let shift = 64 - (f.abs_bit() - w * 8) - f.len as usize;
        let mask = f.mask() << shift;
        let mut word = [0u8; 8];
        word.copy_from_slice(&buf[w..w + 8]);
        let x = (u64::from_be_bytes(word) & !mask) | ((v << shift) & mask);
        buf[w..w + 8].copy_from_slice(&x.to_be_bytes());
        return;
    }
    let first = f.byte as usize;
    let nbytes = (f.bit as usize + f.len as usize).div_ceil(8);
    let shift = nbytes * 8 - f.bit as usize - f.len as usize;
    let mask = u128::from(f.mask()) << shift;
    let mut acc: u128 = 0;
    for &b in &buf[first..first + nbytes] {
        acc = (acc << 8) | u128::from(b);
    }
    acc = (acc & !mask) | ((u128::from(v) << shift) & mask);
    for (i, b) in buf[first..first + nbytes].iter_mut().enumerate() {
        *b = (acc >> ((nbytes - 1 - i) * 8)) as u8;
    }
}

/// A field value seen without its Rust type: an unsigned number, raw bytes, or a nested
/// structure.
///
/// Used by reflective access (`for_each_field`/`get_field`/`set_field` on every owned
/// structure), by the example decoder and by the libibmad oracle test.
#[derive(Clone, Copy)]
pub enum FieldValue<'a> {
    /// Fields of at most 64 bits.
    Uint(u64),
    /// Byte-aligned fields wider than 64 bits (GIDs, strings, tables, paths).
    Bytes(&'a [u8]),
    /// A structure embedded in another (an attribute inside an SA record).
    Struct(&'a dyn Reflect),
}

impl core::fmt::Debug for FieldValue<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Uint(v) => write!(f, "Uint({v:#x})"),
            Self::Bytes(b) => write!(f, "Bytes({b:02x?})"),
            Self::Struct(r) => write!(f, "Struct({})", r.label()),
        }
    }
}

impl PartialEq for FieldValue<'_> {
    /// Nested structures compare equal when their encodings are equal.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Uint(a), Self::Uint(b)) => a == b,
            (Self::Bytes(a), Self::Bytes(b)) => a == b,
            (Self::Struct(a), Self::Struct(b)) => {
                let (mut x, mut y) = ([0u8; 256], [0u8; 256]);
                a.encode(&mut x);
                b.encode(&mut y);
                a.label() == b.label() && x == y
            }
            _ => false,
        }
    }
}

impl Eq for FieldValue<'_> {}

/// Object-safe reflective access to a structure built from a field table.
///
/// Field names may be dotted (`node_info.node_type`) to reach into nested structures.
pub trait Reflect {
    /// Human-readable name of the structure.
    fn label(&self) -> &'static str;
    /// Every field, in table order.
    fn fields(&self) -> &'static [FieldDesc];
    /// The value of a field by (possibly dotted) name.
    fn get(&self, name: &str) -> Option<FieldValue<'_>>;
    /// Sets a field by (possibly dotted) name.
    ///
    /// # Errors
    /// [`Error::NoSuchField`] or [`Error::Overflow`].
    fn set(&mut self, name: &str, value: FieldValue<'_>) -> Result<()>;
    /// Visits every top-level field with its value.
    fn visit(&self, f: &mut dyn FnMut(&'static FieldDesc, FieldValue<'_>));
    /// Encodes into the first `size` bytes of `out` (at most 256 bytes are written).
    fn encode(&self, out: &mut [u8; 256]);
}

/// Static description of one field: its Rust name, position and libibmad name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldDesc {
    /// Name of the field in the owned Rust structure.
    pub name: &'static str,
    /// Position relative to the structure's first byte.
    pub field: Field,
    /// The `enum MAD_FIELDS` name libibmad uses for the same bits, if any.
    pub libibmad: Option<&'static str>,
    /// When the field holds a structure built from a field table (an attribute inside an
    /// SA record), that structure's `FIELDS`, positions relative to its own first byte;
    /// empty for every other field. [`find_field`] walks it to resolve dotted names.
    pub nested: &'static [FieldDesc],
}

/// The position of the field `name` of the table `fields`, relative to the first byte of
/// the structure the table describes; `None` if there is no such field.
///
/// Dotted names (`node_info.node_type`) descend into nested structures through
/// [`FieldDesc::nested`], adding the byte offset of each enclosing field. A `const fn`, so
/// tables derived from field names (an SA record's ComponentMask positions) are resolved,
/// and a wrong name rejected, when the crate compiles.
#[must_use]
pub const fn find_field(fields: &[FieldDesc], name: &str) -> Option<Field> {
    let name = name.as_bytes();
    let mut table = fields;
    let mut base = 0u16;
    let mut start = 0;
    loop {
        let mut end = start;
        while end < name.len() && name[end] != b'.' {
            end += 1;
        }
        let mut i = 0;
        let desc = loop {
            if i == table.len() {
                return None;
            }
            if segment_is(name, start, end, table[i].name.as_bytes()) {
                break table[i];
            }
            i += 1;
        };
        let at = desc.field.shifted(base);
        if end == name.len() {
            return Some(at);
        }
        table = desc.nested;
        base = at.byte;
        start = end + 1;
    }
}

/// Whether `name[start..end]` is `want` (slicing by range is not `const`).
pub(crate) const fn segment_is(name: &[u8], start: usize, end: usize, want: &[u8]) -> bool {
    if end - start != want.len() {
        return false;
    }
    let mut i = 0;
    while i < want.len() {
        if name[start + i] != want[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Types that can be stored in a [`Field`].
///
/// Implemented for unsigned integers, `bool` (one-bit flags), byte arrays (byte-aligned
/// fields) and the code-point enums of this crate.
pub trait FieldType: Sized + Copy {
    /// Reads the value; `buf` covers the field (checked by the view).
    fn read(buf: &[u8], f: Field) -> Self;
    /// Writes the value into `buf` at `f`, masking to the field width.
    fn write(self, buf: &mut [u8], f: Field);
    /// The value as a [`FieldValue`].
    fn to_value(&self) -> FieldValue<'_>;
    /// Builds the value from a [`FieldValue`]; `None` if the kind or width is wrong.
    fn from_value(v: FieldValue<'_>, f: Field) -> Option<Self>;
    /// The field table of a structure type (what [`FieldDesc::nested`] holds for a field
    /// of this type); empty for values that are not structures.
    const NESTED: &'static [FieldDesc] = &[];
    /// Nested structures expose themselves for dotted-name access.
    fn reflect_mut(&mut self) -> Option<&mut dyn Reflect> {
        None
    }
}

macro_rules! uint_field_type {
    ($($t:ty),*) => {$(
        impl FieldType for $t {
            #[inline(always)]
            fn read(buf: &[u8], f: Field) -> Self {
                get_uint(buf, f) as $t
            }
            #[inline(always)]
            fn write(self, buf: &mut [u8], f: Field) {
                set_uint(buf, f, u64::from(self));
            }
            fn to_value(&self) -> FieldValue<'_> {
                FieldValue::Uint(u64::from(*self))
            }
            fn from_value(v: FieldValue<'_>, f: Field) -> Option<Self> {
                match v {
                    FieldValue::Uint(x) if x & !f.mask() == 0 => <$t>::try_from(x).ok(),
                    _ => None,
                }
            }
        }
    )*};
}
uint_field_type!(u8, u16, u32, u64);

impl FieldType for bool {
    #[inline(always)]
    fn read(buf: &[u8], f: Field) -> Self {
        get_uint(buf, f) != 0
    }
    #[inline(always)]
    fn write(self, buf: &mut [u8], f: Field) {
        set_uint(buf, f, u64::from(self));
    }
    fn to_value(&self) -> FieldValue<'_> {
        FieldValue::Uint(u64::from(*self))
    }
    fn from_value(v: FieldValue<'_>, _f: Field) -> Option<Self> {
        match v {
            FieldValue::Uint(x @ (0 | 1)) => Some(x == 1),
            _ => None,
        }
    }
}

impl<const N: usize> FieldType for [u8; N] {
    #[inline(always)]
    fn read(buf: &[u8], f: Field) -> Self {
        let mut out = [0u8; N];
        let s = f.byte as usize;
        out.copy_from_slice(&buf[s..s + N]);
        out
    }
    #[inline(always)]
    fn write(self, buf: &mut [u8], f: Field) {
        let s = f.byte as usize;
        buf[s..s + N].copy_from_slice(&self);
    }
    fn to_value(&self) -> FieldValue<'_> {
        FieldValue::Bytes(self)
    }
    fn from_value(v: FieldValue<'_>, _f: Field) -> Option<Self> {
        match v {
            FieldValue::Bytes(b) => b.try_into().ok(),
            FieldValue::Uint(_) | FieldValue::Struct(_) => None,
        }
    }
}

/// What every owned structure built from a field table offers, for generic code
/// (decoders that print any attribute, the libibmad oracle test, fuzz targets).
pub trait WireStruct: Sized + Copy + Default + PartialEq + core::fmt::Debug {
    /// Size on the wire in bytes.
    const SIZE: usize;
    /// Human-readable name of the structure.
    const LABEL: &'static str;
    /// Every field, in table order.
    const FIELDS: &'static [FieldDesc];
    /// Decodes from the first `SIZE` bytes.
    ///
    /// # Errors
    /// [`Error::Truncated`] when `bytes` is too short.
    fn parse(bytes: &[u8]) -> Result<Self>;
    /// Encodes into the first `SIZE` bytes.
    ///
    /// # Errors
    /// [`Error::Truncated`] when `buf` is too short.
    fn emit_into(&self, buf: &mut [u8]) -> Result<()>;
    /// Reflective read by field name.
    fn get_field(&self, name: &str) -> Option<FieldValue<'_>>;
    /// Reflective write by field name.
    ///
    /// # Errors
    /// [`Error::NoSuchField`] or [`Error::Overflow`].
    fn set_field(&mut self, name: &str, value: FieldValue<'_>) -> Result<()>;
    /// Visits every field with its value.
    fn for_each_field(&self, f: &mut dyn FnMut(&'static FieldDesc, FieldValue<'_>));
}

/// Work on a layout chosen at run time by an AttributeID, such as decoding it:
/// [`SmAttributeId::visit`](crate::SmAttributeId::visit) calls [`Self::visit`] with the
/// attribute's type, so a table of which type an ID carries is written once.
///
/// ```
/// use ibsm_wire::{LayoutVisitor, Reflect, SmAttributeId, WireStruct};
///
/// struct Size;
/// impl LayoutVisitor for Size {
///     type Output = usize;
///     fn visit<A: WireStruct + Reflect + 'static>(self) -> usize {
///         A::SIZE
///     }
/// }
/// assert_eq!(SmAttributeId::NodeInfo.visit(Size), Some(40));
/// ```
pub trait LayoutVisitor {
    /// What the work gives.
    type Output;
    /// Does the work for layout `A`.
    fn visit<A: WireStruct + Reflect + 'static>(self) -> Self::Output;
}

/// Checks that `buf` holds at least `need` bytes.
#[inline]
pub(crate) fn check_len(what: &'static str, buf: &[u8], need: usize) -> Result<()> {
    if buf.len() < need {
        Err(Error::Truncated {
            what,
            need,
            got: buf.len(),
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples() {
        // PortInfo.LMC is (34, 5, 3); PortState (32, 4, 4); NoticeCount (8, 1, 15).
        let mut b = [0u8; 64];
        b[34] = 0xAD;
        assert_eq!(get_uint(&b, Field::new(34, 5, 3)), 0x5);
        b[32] = 0x3C;
        assert_eq!(get_uint(&b, Field::new(32, 4, 4)), 0xC);
        b[8] = 0xFF;
        b[9] = 0x12;
        assert_eq!(get_uint(&b, Field::new(8, 1, 15)), 0x7F12);
    }

    #[test]
    fn set_masks_and_keeps_neighbours() {
        let mut b = [0xFFu8; 16];
        set_uint(&mut b, Field::new(4, 1, 15), 0xFFFF_0000);
        assert_eq!(b[4], 0x80);
        assert_eq!(b[5], 0x00);
        assert_eq!(b[3], 0xFF);
        assert_eq!(b[6], 0xFF);
        set_uint(&mut b, Field::new(1, 3, 64), 0x0123_4567_89AB_CDEF);
        assert_eq!(get_uint(&b, Field::new(1, 3, 64)), 0x0123_4567_89AB_CDEF);
        assert_eq!(b[1] >> 5, 0b111);
    }

    const fn leaf(name: &'static str, field: Field) -> FieldDesc {
        FieldDesc {
            name,
            field,
            libibmad: None,
            nested: &[],
        }
    }

    // An inner structure of two fields, and an outer one holding it at byte 4.
    const INNER: &[FieldDesc] = &[
        leaf("kind", Field::new(0, 0, 4)),
        leaf("kin", Field::new(1, 2, 6)),
    ];
    const OUTER: &[FieldDesc] = &[
        leaf("lid", Field::new(0, 0, 16)),
        FieldDesc {
            nested: INNER,
            ..leaf("inner", Field::new(4, 0, 16))
        },
    ];

    #[test]
    fn find_field_by_name() {
        assert_eq!(find_field(OUTER, "lid"), Some(Field::new(0, 0, 16)));
        assert_eq!(find_field(OUTER, "inner"), Some(Field::new(4, 0, 16)));
        // Dotted: the inner position moved by the enclosing field's byte offset.
        assert_eq!(find_field(OUTER, "inner.kind"), Some(Field::new(4, 0, 4)));
        assert_eq!(find_field(OUTER, "inner.kin"), Some(Field::new(5, 2, 6)));
        // Usable where a constant is needed.
        const KIN: Option<Field> = find_field(OUTER, "inner.kin");
        assert_eq!(KIN, Some(Field::new(5, 2, 6)));
    }

    #[test]
    fn find_field_rejects_what_is_not_a_field() {
        for name in [
            "",
            "li",
            "lidx",
            "kind",
            "inner.",
            "inner.kinds",
            "inner.kind.x",
            "lid.kind",
            ".lid",
            "inner..kind",
        ] {
            assert_eq!(find_field(OUTER, name), None, "{name:?}");
        }
    }

    #[test]
    fn wire_structs_fill_in_nested_tables() {
        use crate::attr::NodeInfo;
        use crate::sa::NodeRecord;
        let node_info = NodeRecord::FIELDS.iter().find(|d| d.name == "node_info");
        assert_eq!(node_info.map(|d| d.nested), Some(NodeInfo::FIELDS));
        assert!(NodeRecord::FIELDS[0].nested.is_empty());
        // NodeInfo.NodeType is (2, 0, 8); NodeRecord holds NodeInfo at byte 4.
        assert_eq!(
            find_field(NodeRecord::FIELDS, "node_info.node_type"),
            Some(Field::new(6, 0, 8))
        );
    }

    proptest::proptest! {
        #[test]
        fn uint_roundtrip(byte in 0u16..8, bit in 0u8..8, len in 1u16..=64, v: u64, fill: u8) {
            let f = Field::new(byte, bit, len);
            let mut b = [fill; 24];
            let before = b;
            set_uint(&mut b, f, v);
            proptest::prop_assert_eq!(get_uint(&b, f), v & f.mask());
            // Bits outside the field are untouched.
            for i in 0..b.len() * 8 {
                let inside = i >= f.abs_bit() && i < f.abs_bit() + len as usize;
                if !inside {
                    let m = 0x80u8 >> (i % 8);
                    proptest::prop_assert_eq!(b[i / 8] & m, before[i / 8] & m);
                }
            }
        }
    }
}
