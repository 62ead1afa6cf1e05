//! Property checks every wire structure must pass; call [`check`] from each type's tests.
//!
//! * The field table is sane: every row lies inside the structure and no two rows share
//!   a bit (so the owned value is a faithful, non-redundant image of the bytes).
//! * Random values for every field (uints masked to the width, enums through raw
//!   integers, byte arrays and nested structures from random bytes), set through the
//!   reflective `set_field`, read back unchanged, encode exactly at the positions the
//!   table names, leave every other bit zero, and decode to the same value.
//! * Arbitrary buffers: `parse` of any length never panics (and fails exactly when the
//!   buffer is short), every field decodes to the bits the table names, re-encoding over
//!   the same buffer keeps reserved bits and parses back to the same value.

extern crate std;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::vec;
use std::vec::Vec;

use crate::field::{Field, FieldValue, WireStruct, get_uint};

/// Cases per property and type; kept small because every attribute type runs it.
const CASES: u32 = 48;

fn bit(buf: &[u8], i: usize) -> bool {
    buf[i / 8] & (0x80 >> (i % 8)) != 0
}

fn covered<T: WireStruct>() -> Vec<bool> {
    let mut cov = vec![false; T::SIZE * 8];
    for d in T::FIELDS {
        cov[d.field.abs_bit()..d.field.abs_bit() + usize::from(d.field.len)].fill(true);
    }
    cov
}

fn check_layout<T: WireStruct>() {
    let mut owner: Vec<Option<&str>> = vec![None; T::SIZE * 8];
    for d in T::FIELDS {
        let f = d.field;
        assert!(f.len > 0, "{}: empty field {}", T::LABEL, d.name);
        assert!(
            f.end_byte() <= T::SIZE,
            "{}: {} ends past the structure",
            T::LABEL,
            d.name
        );
        for (i, o) in owner
            .iter_mut()
            .enumerate()
            .skip(f.abs_bit())
            .take(usize::from(f.len))
        {
            assert!(
                o.is_none(),
                "{}: {} and {} share bit {i}",
                T::LABEL,
                o.unwrap_or(""),
                d.name
            );
            *o = Some(d.name);
        }
        if f.len > 64 {
            assert!(
                f.bit == 0 && f.len % 8 == 0,
                "{}: wide field {} is not byte aligned",
                T::LABEL,
                d.name
            );
        }
    }
    let mut names: Vec<&str> = T::FIELDS.iter().map(|d| d.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(
        names.len(),
        T::FIELDS.len(),
        "{}: duplicate names",
        T::LABEL
    );
}

/// The encoding of `value` as `f` would hold it, for comparison with the buffer.
fn value_matches(buf: &[u8], f: Field, v: FieldValue<'_>) -> bool {
    match v {
        FieldValue::Uint(x) => get_uint(buf, f) == x,
        FieldValue::Bytes(b) => {
            let s = usize::from(f.byte);
            buf[s..s + b.len()] == *b
        }
        FieldValue::Struct(r) => {
            // A nested structure decoded from `buf` re-encodes to the same field bits;
            // compare what it encodes against the buffer on its own fields.
            let mut enc = [0u8; 256];
            r.encode(&mut enc);
            let base = usize::from(f.byte);
            r.fields().iter().all(|d| {
                let inner = d.field;
                let outer = inner.shifted(f.byte);
                if inner.len <= 64 {
                    get_uint(&enc, inner) == get_uint(buf, outer)
                } else {
                    let (s, n) = (usize::from(inner.byte), usize::from(inner.len / 8));
                    enc[s..s + n] == buf[base + s..base + s + n]
                }
            })
        }
    }
}

#[derive(PartialEq, Eq)]
enum Kind {
    Uint,
    Bytes,
    Struct,
}

fn random_value<T: WireStruct>(pool: &[u8]) -> Result<T, TestCaseError> {
    let mut x = T::default();
    let mut pos = 0usize;
    let mut next = |n: usize, out: &mut [u8]| {
        for b in out.iter_mut().take(n) {
            *b = pool[pos % pool.len()];
            pos += 1;
        }
    };
    for d in T::FIELDS {
        let f = d.field;
        // Only the kind is kept, so `x` is free to change below.
        let kind = match x.get_field(d.name).expect("every FIELDS name is reachable") {
            FieldValue::Uint(_) => Kind::Uint,
            FieldValue::Bytes(_) => Kind::Bytes,
            FieldValue::Struct(_) => Kind::Struct,
        };
        let mut bytes = [0u8; 256];
        match kind {
            Kind::Uint => {
                next(8, &mut bytes);
                let v = u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes")) & f.mask();
                x.set_field(d.name, FieldValue::Uint(v))
                    .map_err(|e| TestCaseError::fail(std::format!("{}: {e}", d.name)))?;
                prop_assert_eq!(x.get_field(d.name), Some(FieldValue::Uint(v)), "{}", d.name);
            }
            Kind::Bytes | Kind::Struct => {
                let n = usize::from(f.len / 8);
                next(n, &mut bytes);
                x.set_field(d.name, FieldValue::Bytes(&bytes[..n]))
                    .map_err(|e| TestCaseError::fail(std::format!("{}: {e}", d.name)))?;
                if kind == Kind::Bytes {
                    prop_assert_eq!(
                        x.get_field(d.name),
                        Some(FieldValue::Bytes(&bytes[..n])),
                        "{}",
                        d.name
                    );
                }
            }
        }
    }
    Ok(x)
}

fn roundtrip<T: WireStruct>(pool: &[u8]) -> Result<(), TestCaseError> {
    let x: T = random_value(pool)?;
    let mut enc = [0u8; 256];
    x.emit_into(&mut enc[..T::SIZE])
        .map_err(|e| TestCaseError::fail(std::format!("{e}")))?;
    // Every field sits exactly where the table says.
    let mut failed = None;
    x.for_each_field(&mut |d, v| {
        if failed.is_none() && !value_matches(&enc, d.field, v) {
            failed = Some(d.name);
        }
    });
    prop_assert!(failed.is_none(), "{}: {:?} misplaced", T::LABEL, failed);
    // Nothing outside the fields is written.
    let cov = covered::<T>();
    for (i, c) in cov.iter().enumerate() {
        prop_assert!(*c || !bit(&enc, i), "{}: stray bit {}", T::LABEL, i);
    }
    prop_assert!(enc[T::SIZE..].iter().all(|&b| b == 0));
    prop_assert_eq!(T::parse(&enc[..T::SIZE]), Ok(x));
    Ok(())
}

fn arbitrary_bytes<T: WireStruct>(buf: &[u8], cut: usize) -> Result<(), TestCaseError> {
    let short = &buf[..cut.min(buf.len())];
    prop_assert_eq!(T::parse(short).is_ok(), short.len() >= T::SIZE);
    let x = T::parse(buf).map_err(|e| TestCaseError::fail(std::format!("{e}")))?;
    let mut failed = None;
    x.for_each_field(&mut |d, v| {
        if failed.is_none() && !value_matches(buf, d.field, v) {
            failed = Some(d.name);
        }
    });
    prop_assert!(
        failed.is_none(),
        "{}: {:?} decoded wrongly",
        T::LABEL,
        failed
    );
    // Reflection sees the typed values, and setting each field to what it reads back
    // (nested structures included) changes nothing.
    let mut c = x;
    let mut set_failed = None;
    x.for_each_field(&mut |d, v| {
        if x.get_field(d.name) != Some(v) || c.set_field(d.name, v).is_err() {
            set_failed = set_failed.or(Some(d.name));
        }
    });
    prop_assert!(set_failed.is_none(), "{}: {:?}", T::LABEL, set_failed);
    prop_assert_eq!(c, x);
    // Emitting over the original bytes changes nothing: reserved bits are kept and
    // every field already holds its value.
    let mut again = buf.to_vec();
    x.emit_into(&mut again)
        .map_err(|e| TestCaseError::fail(std::format!("{e}")))?;
    prop_assert_eq!(&again[..], buf);
    prop_assert_eq!(T::parse(&again), Ok(x));
    Ok(())
}

/// Runs every property on `T`; panics with the failing case.
pub(crate) fn check<T: WireStruct>() {
    check_layout::<T>();
    assert!(T::SIZE <= 256, "{}: larger than a MAD", T::LABEL);
    let config = Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config.clone());
    runner
        .run(&proptest::collection::vec(any::<u8>(), 512), |pool| {
            roundtrip::<T>(&pool)
        })
        .unwrap_or_else(|e| panic!("{}: {e}", T::LABEL));
    let mut runner = TestRunner::new(config);
    runner
        .run(
            &(proptest::collection::vec(any::<u8>(), 256), 0usize..=256),
            |(buf, cut)| arbitrary_bytes::<T>(&buf, cut),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", T::LABEL));
}

#[cfg(test)]
mod tests {
    #![allow(dead_code, unreachable_pub)]

    wire_struct! {
        /// Two rows sharing bit 7: the layout check must refuse it.
        pub struct Overlap, view OverlapView, size 2, label "Overlap";
        fields {
            /// High bits.
            a, set_a: u8 = (0, 0, 8);
            /// Overlaps `a`.
            b, set_b: u8 = (0, 7, 4);
        }
    }

    wire_struct! {
        /// A sane structure with a reserved gap and a nested one.
        pub struct Sane, view SaneView, size 8, label "Sane";
        fields {
            /// 3 bits.
            a, set_a: u8 = (0, 1, 3);
            /// Nested.
            inner, set_inner: crate::attr::LedInfo = (4, 0, 32);
        }
    }

    #[test]
    #[should_panic(expected = "share bit")]
    fn overlap_detected() {
        super::check::<Overlap>();
    }

    #[test]
    fn sane_passes() {
        super::check::<Sane>();
    }
}
