//! ComponentMask: which template fields of an SA query must match. IBA Vol. 1 §15.2.1
//! (ComponentMask); the query semantics: §15.2.4.

use core::marker::PhantomData;
use core::ops::Not;

use crate::attr::bit_flags;
use crate::field::{Field, WireStruct, get_uint};

use super::codes::SaAttributeId;

bit_flags! {
    /// The 64-bit ComponentMask of an SA MAD: bit `i` (value `1 << i`) selects the `i`-th
    /// component of the record, reserved fields included.
    ///
    /// The bits mean something only per record, so they are named there: each record
    /// names its bits as associated constants (`PathRecord::CM_SGID`) and lists them with
    /// their positions in [`SaRecord::COMPONENTS`].
    pub struct ComponentMask: u64 {}
}

impl ComponentMask {
    /// No component: everything matches.
    pub const NONE: Self = Self::EMPTY;

    /// The mask with only bit `bit` set (`bit` is taken modulo 64).
    #[must_use]
    pub const fn bit(bit: u8) -> Self {
        Self(1u64 << (bit & 63))
    }

    /// Whether bit `bit` is set.
    #[must_use]
    pub const fn has(self, bit: u8) -> bool {
        self.0 & (1u64 << (bit & 63)) != 0
    }

    /// The mask of the components of `R` whose field is named in `names` (dotted names
    /// for nested attributes, as in [`SaRecord::COMPONENTS`]). `None` if a name is not a
    /// component of `R`.
    #[must_use]
    pub fn of<R: SaRecord>(names: &[&str]) -> Option<Self> {
        let mut m = Self::NONE;
        for n in names {
            m |= Self::bit(R::COMPONENTS.iter().find(|c| c.name == *n)?.bit);
        }
        Some(m)
    }

    /// The numbers of the set bits, lowest first.
    pub fn bit_numbers(self) -> impl Iterator<Item = u8> {
        (0u8..64).filter(move |&b| self.has(b))
    }
}

impl Not for ComponentMask {
    type Output = Self;
    fn not(self) -> Self {
        Self(!self.0)
    }
}

/// One ComponentMask bit of a record: its number, the field it selects and where the
/// selected bits lie in the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Component {
    /// ComponentMask bit number.
    pub bit: u8,
    /// The (possibly dotted) field name; `reserved` for reserved components, and for
    /// components that cover part of a field (PathRecord's two ServiceID halves,
    /// ServiceRecord's ServiceData pieces) the field name with a `[..]` suffix.
    pub name: &'static str,
    /// Bits compared when the component is selected, relative to the record's start:
    /// the named field's position from the record's field table, or for reserved and
    /// partial components (which have no field of their own) the position the record's
    /// ComponentMask table gives.
    pub field: Field,
}

/// Whether a component named `name` has no field of its own and so states its position:
/// `reserved`, or part of a field (`field[..]`).
pub(crate) const fn has_own_position(name: &str) -> bool {
    let b = name.as_bytes();
    if crate::field::segment_is(b, 0, b.len(), b"reserved") {
        return true;
    }
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'[' {
            return true;
        }
        i += 1;
    }
    false
}

/// An SA record: a wire structure with an SA AttributeID and ComponentMask bits.
pub trait SaRecord: WireStruct {
    /// The SA AttributeID.
    const ATTRIBUTE_ID: SaAttributeId;
    /// Record spacing in a table, in 8-byte words (`SIZE` rounded up).
    const ATTRIBUTE_OFFSET: u16 = Self::SIZE.div_ceil(8) as u16;
    /// Every ComponentMask bit of the record, in bit order.
    const COMPONENTS: &'static [Component];

    /// Whether `self` equals `template` in every component selected by `mask`
    /// (exact-equality matching; bits of the mask beyond the record's components are
    /// ignored).
    /// To test many records against one template, build a [`Template`] once.
    fn matches(&self, template: &Self, mask: ComponentMask) -> bool {
        Template::new(template, mask).matches(self)
    }

    /// The mask of every component of the record.
    fn all_components() -> ComponentMask {
        Self::COMPONENTS
            .iter()
            .fold(ComponentMask::NONE, |m, c| m | ComponentMask::bit(c.bit))
    }
}

/// A query template encoded once, for testing many records (an SA answering GetTable
/// walks its whole database with one).
#[derive(Debug, Clone)]
pub struct Template<R> {
    bytes: [u8; 256],
    mask: ComponentMask,
    // The positions the mask selects, found once.
    selected: [Field; 64],
    n: usize,
    _r: PhantomData<fn(R)>,
}

impl<R: SaRecord> Template<R> {
    /// The template `template` with the components selected by `mask`.
    #[must_use]
    pub fn new(template: &R, mask: ComponentMask) -> Self {
        let mut bytes = [0u8; 256];
        // SIZE <= 256 for every SA record.
        let _ = template.emit_into(&mut bytes);
        Self::with_bytes(bytes, mask)
    }

    fn with_bytes(bytes: [u8; 256], mask: ComponentMask) -> Self {
        let mut selected = [Field::new(0, 0, 0); 64];
        let mut n = 0;
        for c in R::COMPONENTS.iter().filter(|c| mask.has(c.bit)).take(64) {
            selected[n] = c.field;
            n += 1;
        }
        Self {
            bytes,
            mask,
            selected,
            n,
            _r: PhantomData,
        }
    }

    /// The template taken from the data area of a request (its first `R::SIZE` bytes).
    ///
    /// # Errors
    /// [`crate::Error::Truncated`] when `data` is shorter than a record.
    pub fn from_bytes(data: &[u8], mask: ComponentMask) -> crate::Result<Self> {
        crate::field::check_len(R::LABEL, data, R::SIZE)?;
        let mut bytes = [0u8; 256];
        bytes[..R::SIZE].copy_from_slice(&data[..R::SIZE]);
        Ok(Self::with_bytes(bytes, mask))
    }

    /// The ComponentMask.
    #[must_use]
    pub const fn mask(&self) -> ComponentMask {
        self.mask
    }

    /// Whether the encoded record `bytes` equals the template in every selected
    /// component (`false` if `bytes` is shorter than a record).
    #[must_use]
    pub fn matches_bytes(&self, bytes: &[u8]) -> bool {
        bytes.len() >= R::SIZE
            && self.selected[..self.n]
                .iter()
                .all(|&f| bits_equal(bytes, &self.bytes, f))
    }

    /// Whether `record` equals the template in every selected component.
    #[must_use]
    pub fn matches(&self, record: &R) -> bool {
        if self.n == 0 {
            return true;
        }
        let mut a = [0u8; 256];
        record.emit_into(&mut a).is_ok() && self.matches_bytes(&a)
    }
}

/// Whether `a` and `b` hold the same bits at `f` (any width). `false` when either
/// buffer is too short.
#[must_use]
pub fn bits_equal(a: &[u8], b: &[u8], f: Field) -> bool {
    if a.len() < f.end_byte() || b.len() < f.end_byte() {
        return false;
    }
    let start = f.abs_bit();
    let len = usize::from(f.len);
    let mut off = 0;
    while off < len {
        let n = (len - off).min(64);
        let at = start + off;
        let piece = Field::new((at / 8) as u16, (at % 8) as u8, n as u16);
        if get_uint(a, piece) != get_uint(b, piece) {
            return false;
        }
        off += n;
    }
    true
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn mask_ops() {
        let m = ComponentMask::bit(3) | ComponentMask::bit(2) | ComponentMask::bit(12);
        assert_eq!(m, ComponentMask(0x100C));
        assert!(m.has(12) && !m.has(11));
        assert!(m.contains(ComponentMask::bit(2)));
        assert_eq!((m & ComponentMask::bit(3)).0, 8);
        assert_eq!(m.bit_numbers().collect::<std::vec::Vec<_>>(), [2, 3, 12]);
        assert!(ComponentMask::NONE.is_empty());
        assert_eq!(ComponentMask::bit(63).0, 1 << 63);
    }

    #[test]
    fn wide_and_unaligned_bits() {
        let a = [0xAAu8; 80];
        let mut b = a;
        let wide = Field::new(4, 0, 512);
        assert!(bits_equal(&a, &b, wide));
        b[67] ^= 1;
        assert!(!bits_equal(&a, &b, wide));
        assert!(bits_equal(&a, &b, Field::new(4, 0, 504)));
        // 20-bit field starting mid-byte; flip a bit just outside it.
        let fl = Field::new(1, 4, 20);
        let mut c = a;
        c[1] ^= 0x10; // bit 3 of byte 1: outside
        assert!(!bits_equal(&a, &c, Field::new(1, 3, 1)));
        assert!(bits_equal(&a, &c, fl));
        c[3] ^= 0x01;
        assert!(!bits_equal(&a, &c, fl));
        assert!(!bits_equal(&a[..3], &c, fl));
    }
}
