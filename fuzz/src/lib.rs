//! Checks shared by the fuzz targets: the panic contract and lossless round trips of
//! every structure built from an `ibsm-wire` field table.
#![forbid(unsafe_code)]

use ibsm_wire::WireStruct;

/// Decodes `data` as `T` and holds the codec to its promises:
/// * `parse` fails exactly when `data` is shorter than `T::SIZE`, and never panics;
/// * decode -> encode -> decode gives the same value and the same bytes;
/// * encoding over the original bytes reproduces them (decoding loses no field bit);
/// * reflective access sees the same values as the typed fields, and setting a field to
///   its own value changes nothing.
pub fn check_struct<T: WireStruct>(data: &[u8]) {
    let a = match T::parse(data) {
        Ok(a) => a,
        Err(_) => {
            assert!(
                data.len() < T::SIZE,
                "{}: parse failed on a long buffer",
                T::LABEL
            );
            return;
        }
    };
    assert!(data.len() >= T::SIZE);
    let mut enc = vec![0u8; T::SIZE];
    a.emit_into(&mut enc)
        .expect("SIZE bytes hold the structure");
    let b = T::parse(&enc).expect("re-parse");
    assert_eq!(
        a,
        b,
        "{}: decode -> encode -> decode changed the value",
        T::LABEL
    );
    let mut enc2 = vec![0u8; T::SIZE];
    b.emit_into(&mut enc2).expect("encode");
    assert_eq!(enc, enc2, "{}: encoding is not stable", T::LABEL);

    let mut over = data[..T::SIZE].to_vec();
    a.emit_into(&mut over).expect("encode");
    assert_eq!(over, &data[..T::SIZE], "{}: decoding lost bits", T::LABEL);

    let mut c = a;
    a.for_each_field(&mut |d, v| {
        assert_eq!(a.get_field(d.name), Some(v), "{}.{}", T::LABEL, d.name);
        c.set_field(d.name, v)
            .unwrap_or_else(|e| panic!("{}.{}: set to its own value: {e}", T::LABEL, d.name));
    });
    assert_eq!(
        a,
        c,
        "{}: setting fields to their own values changed it",
        T::LABEL
    );
}

/// Runs [`check_struct`] for the type picked by the first byte of `data` among `$t`.
#[macro_export]
macro_rules! dispatch {
    ($data:expr; $($t:ty),+ $(,)?) => {{
        let data: &[u8] = $data;
        if let Some((&sel, rest)) = data.split_first() {
            let checks: &[fn(&[u8])] = &[$($crate::check_struct::<$t>),+];
            checks[usize::from(sel) % checks.len()](rest);
        }
    }};
}
