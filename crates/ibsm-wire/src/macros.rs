//! The declarative macros every structure of the crate is built from.
//!
//! `code_enum!` makes a code-point enum that keeps unknown values. `wire_struct!` turns one
//! field table (the single place where a structure's offsets are written) into a
//! zero-copy view, an owned value with `parse`/`emit`, a `FIELDS` table and reflective
//! by-name access. `bytes_field!` makes a newtype over a byte array a field type (GIDs),
//! `byte_block!` declares such a newtype (tables read through accessor methods).

/// A code-point enum over an unsigned integer that keeps unknown values as `Unknown(_)`.
///
/// Conversion from the integer always yields the named variant for a known value, so two
/// values compare equal exactly when their wire encodings are equal.
macro_rules! code_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $repr:ty {
            $( $(#[$vmeta:meta])* $var:ident = $val:expr, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        $vis enum $name {
            $( $(#[$vmeta])* $var, )*
            /// A value without a name in this crate, kept as it was on the wire.
            Unknown($repr),
        }

        impl From<$repr> for $name {
            #[inline]
            fn from(v: $repr) -> Self {
                match v {
                    $( $val => Self::$var, )*
                    other => Self::Unknown(other),
                }
            }
        }

        impl From<$name> for $repr {
            #[inline]
            fn from(v: $name) -> $repr {
                match v {
                    $( $name::$var => $val, )*
                    $name::Unknown(other) => other,
                }
            }
        }

        impl $name {
            /// Whether the value has a name in this crate.
            #[must_use]
            pub fn is_known(self) -> bool {
                !matches!(<$name>::from(<$repr>::from(self)), Self::Unknown(_))
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::from(0 as $repr)
            }
        }

        impl $crate::field::FieldType for $name {
            #[inline(always)]
            fn read(buf: &[u8], f: $crate::field::Field) -> Self {
                Self::from($crate::field::get_uint(buf, f) as $repr)
            }
            #[inline(always)]
            fn write(self, buf: &mut [u8], f: $crate::field::Field) {
                $crate::field::set_uint(buf, f, u64::from(<$repr>::from(self)));
            }
            fn to_value(&self) -> $crate::field::FieldValue<'_> {
                $crate::field::FieldValue::Uint(u64::from(<$repr>::from(*self)))
            }
            fn from_value(v: $crate::field::FieldValue<'_>, f: $crate::field::Field) -> Option<Self> {
                <$repr as $crate::field::FieldType>::from_value(v, f).map(Self::from)
            }
        }
    };
}

/// One field table -> view + owned value + `FIELDS` + reflective access.
///
/// Syntax (one row per field; the optional string is libibmad's `enum MAD_FIELDS` name):
///
/// ```text
/// wire_struct! {
///     /// docs of the owned value
///     pub struct NodeInfo, view NodeInfoView, size 40, label "NodeInfo";
///     fields {
///         /// docs of the field
///         node_type, set_node_type: NodeType = (2, 0, 8), "IB_NODE_TYPE_F";
///     }
/// }
/// ```
macro_rules! wire_struct {
    (@opt) => { None };
    (@opt $x:literal) => { Some($x) };
    (
        $(#[$meta:meta])*
        pub struct $name:ident, view $view:ident, size $size:expr, label $label:literal;
        fields {
            $(
                $(#[$fmeta:meta])*
                $field:ident, $setter:ident : $ty:ty = ($byte:expr, $bit:expr, $len:expr) $(, $ib:literal)? ;
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        #[doc = concat!("Zero-copy view of a ", $label, ": reads on `AsRef<[u8]>`, writes on `AsMut<[u8]>`.")]
        ///
        /// After [`Self::new_checked`] no accessor panics (see the crate docs).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $view<T> {
            buffer: T,
        }

        // Every field must lie inside the structure: a wrong table row fails to compile.
        const _: () = {
            $( assert!(($byte) * 8 + ($bit) + ($len) <= ($size) * 8); )*
        };

        impl $name {
            #[doc = concat!("Size of a ", $label, " on the wire, in bytes.")]
            pub const SIZE: usize = $size;
            /// Every field with its position and libibmad name (and, for a nested
            /// structure, that structure's table), in table order.
            pub const FIELDS: &'static [$crate::field::FieldDesc] = &[
                $( $crate::field::FieldDesc {
                    name: stringify!($field),
                    field: $crate::field::Field::new($byte, $bit, $len),
                    libibmad: wire_struct!(@opt $($ib)?),
                    nested: <$ty as $crate::field::FieldType>::NESTED,
                }, )*
            ];

            /// Reads every field from a checked view.
            #[inline]
            #[must_use]
            pub fn from_view<T: AsRef<[u8]>>(view: &$view<T>) -> Self {
                // Through a fixed-size array every offset is a constant the compiler can
                // check once, so the field reads compile to plain loads and shifts.
                let bytes: &[u8; $size] = match view.as_bytes().try_into() {
                    Ok(b) => b,
                    Err(_) => return Self::from_slice_slow(view.as_bytes()),
                };
                Self {
                    $( $field: <$ty as $crate::field::FieldType>::read(&bytes[..], $crate::field::Field::new($byte, $bit, $len)), )*
                }
            }

            // Unreachable in practice (views hold at least SIZE bytes); kept so that
            // `from_view` has no panic path.
            #[cold]
            fn from_slice_slow(bytes: &[u8]) -> Self {
                let mut tmp = [0u8; $size];
                let n = bytes.len().min($size);
                tmp[..n].copy_from_slice(&bytes[..n]);
                Self { $( $field: <$ty as $crate::field::FieldType>::read(&tmp[..], $crate::field::Field::new($byte, $bit, $len)), )* }
            }

            #[doc = concat!("Decodes a ", $label, " from the first `SIZE` bytes of `bytes`.")]
            ///
            /// # Errors
            /// [`Error::Truncated`](crate::Error::Truncated) if `bytes` is too short.
            #[inline]
            pub fn parse(bytes: &[u8]) -> $crate::Result<Self> {
                Ok(Self::from_view(&$view::new_checked(bytes)?))
            }

            /// Writes every field into a view.
            #[inline]
            pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut $view<T>) {
                if let Ok(out) = <&mut [u8; $size]>::try_from(view.as_bytes_mut()) {
                    $( <$ty as $crate::field::FieldType>::write(self.$field, &mut out[..], $crate::field::Field::new($byte, $bit, $len)); )*
                }
            }

            /// Writes every field into the first `SIZE` bytes of `buf`.
            ///
            /// # Errors
            /// [`Error::Truncated`](crate::Error::Truncated) if `buf` is too short.
            #[inline]
            pub fn emit_into(&self, buf: &mut [u8]) -> $crate::Result<()> {
                self.emit(&mut $view::new_checked(buf)?);
                Ok(())
            }

            /// The encoded bytes (reserved bits zero).
            #[must_use]
            // By reference: some structures are 256 bytes.
            #[allow(clippy::wrong_self_convention)]
            pub fn to_bytes(&self) -> [u8; $size] {
                let mut out = [0u8; $size];
                self.emit(&mut $view::new_unchecked(&mut out[..]));
                out
            }

            /// Calls `f` for every field, in table order, with its description and value.
            pub fn for_each_field(&self, mut f: impl FnMut(&'static $crate::field::FieldDesc, $crate::field::FieldValue<'_>)) {
                let mut _i = 0;
                $(
                    f(&Self::FIELDS[_i], $crate::field::FieldType::to_value(&self.$field));
                    _i += 1;
                )*
            }

            /// The value of the field named `name` (the Rust field name; dotted names such as
            /// `node_info.node_type` reach into nested structures).
            #[must_use]
            pub fn get_field(&self, name: &str) -> Option<$crate::field::FieldValue<'_>> {
                let (head, rest) = match name.split_once('.') {
                    Some((h, r)) => (h, Some(r)),
                    None => (name, None),
                };
                let v = match head {
                    $( stringify!($field) => $crate::field::FieldType::to_value(&self.$field), )*
                    _ => return None,
                };
                match (rest, v) {
                    (None, v) => Some(v),
                    (Some(r), $crate::field::FieldValue::Struct(s)) => s.get(r),
                    (Some(_), _) => None,
                }
            }

            /// Sets the field named `name` (dotted names reach into nested structures).
            ///
            /// # Errors
            /// [`Error::NoSuchField`](crate::Error::NoSuchField) for an unknown name,
            /// [`Error::Overflow`](crate::Error::Overflow) when the value has the wrong kind
            /// or does not fit the field.
            pub fn set_field(&mut self, name: &str, value: $crate::field::FieldValue<'_>) -> $crate::Result<()> {
                let (head, rest) = match name.split_once('.') {
                    Some((h, r)) => (h, Some(r)),
                    None => (name, None),
                };
                match head {
                    $( stringify!($field) => {
                        if let Some(r) = rest {
                            return $crate::field::FieldType::reflect_mut(&mut self.$field)
                                .ok_or($crate::Error::NoSuchField { what: $label })?
                                .set(r, value);
                        }
                        self.$field = $crate::field::FieldType::from_value(value, $crate::field::Field::new($byte, $bit, $len))
                            .ok_or($crate::Error::Overflow {
                                what: $label,
                                field: stringify!($field),
                                value: match value {
                                    $crate::field::FieldValue::Uint(v) => v,
                                    $crate::field::FieldValue::Bytes(b) => b.len() as u64,
                                    $crate::field::FieldValue::Struct(_) => 0,
                                },
                            })?;
                        Ok(())
                    } )*
                    _ => Err($crate::Error::NoSuchField { what: $label }),
                }
            }
        }

        impl $crate::field::Reflect for $name {
            fn label(&self) -> &'static str {
                $label
            }
            fn fields(&self) -> &'static [$crate::field::FieldDesc] {
                Self::FIELDS
            }
            fn get(&self, name: &str) -> Option<$crate::field::FieldValue<'_>> {
                self.get_field(name)
            }
            fn set(&mut self, name: &str, value: $crate::field::FieldValue<'_>) -> $crate::Result<()> {
                self.set_field(name, value)
            }
            fn visit(&self, f: &mut dyn FnMut(&'static $crate::field::FieldDesc, $crate::field::FieldValue<'_>)) {
                self.for_each_field(f);
            }
            fn encode(&self, out: &mut [u8; 256]) {
                self.emit(&mut $view::new_unchecked(&mut out[..]));
            }
        }

        // A structure can be a field of another (records embed attributes); it must start
        // on a byte boundary.
        impl $crate::field::FieldType for $name {
            const NESTED: &'static [$crate::field::FieldDesc] = <$name>::FIELDS;
            #[inline]
            fn read(buf: &[u8], f: $crate::field::Field) -> Self {
                Self::from_view(&$view::new_unchecked(&buf[f.byte as usize..]))
            }
            #[inline]
            fn write(self, buf: &mut [u8], f: $crate::field::Field) {
                self.emit(&mut $view::new_unchecked(&mut buf[f.byte as usize..]));
            }
            fn to_value(&self) -> $crate::field::FieldValue<'_> {
                $crate::field::FieldValue::Struct(self)
            }
            fn from_value(v: $crate::field::FieldValue<'_>, _f: $crate::field::Field) -> Option<Self> {
                match v {
                    $crate::field::FieldValue::Bytes(b) => Self::parse(b).ok(),
                    // What `get_field` returns for a nested structure can be set back.
                    $crate::field::FieldValue::Struct(s) if s.label() == $label => {
                        let mut buf = [0u8; 256];
                        s.encode(&mut buf);
                        Self::parse(&buf).ok()
                    }
                    _ => None,
                }
            }
            fn reflect_mut(&mut self) -> Option<&mut dyn $crate::field::Reflect> {
                Some(self)
            }
        }

        impl Default for $name {
            /// All fields zero (the value of an all-zero encoding).
            fn default() -> Self {
                Self::from_view(&$view::new_unchecked(&[0u8; $size][..]))
            }
        }

        impl $crate::field::WireStruct for $name {
            const SIZE: usize = $size;
            const LABEL: &'static str = $label;
            const FIELDS: &'static [$crate::field::FieldDesc] = <$name>::FIELDS;
            fn parse(bytes: &[u8]) -> $crate::Result<Self> {
                <$name>::parse(bytes)
            }
            fn emit_into(&self, buf: &mut [u8]) -> $crate::Result<()> {
                <$name>::emit_into(self, buf)
            }
            fn get_field(&self, name: &str) -> Option<$crate::field::FieldValue<'_>> {
                <$name>::get_field(self, name)
            }
            fn set_field(&mut self, name: &str, value: $crate::field::FieldValue<'_>) -> $crate::Result<()> {
                <$name>::set_field(self, name, value)
            }
            fn for_each_field(&self, f: &mut dyn FnMut(&'static $crate::field::FieldDesc, $crate::field::FieldValue<'_>)) {
                <$name>::for_each_field(self, f);
            }
        }

        impl<T> $view<T> {
            /// Wraps a buffer without checking its length.
            ///
            /// Accessors panic if the buffer is shorter than `SIZE`; use
            /// [`Self::new_checked`] for bytes from outside.
            #[inline]
            pub const fn new_unchecked(buffer: T) -> Self {
                Self { buffer }
            }

            /// Returns the wrapped buffer.
            #[inline]
            pub fn into_inner(self) -> T {
                self.buffer
            }
        }

        impl<T: AsRef<[u8]>> $view<T> {
            /// Wraps a buffer after checking it holds at least `SIZE` bytes.
            ///
            /// # Errors
            /// [`Error::Truncated`](crate::Error::Truncated) if it is shorter.
            #[inline]
            pub fn new_checked(buffer: T) -> $crate::Result<Self> {
                $crate::field::check_len($label, buffer.as_ref(), $size)?;
                Ok(Self { buffer })
            }

            /// The bytes of the structure (exactly `SIZE`).
            #[inline]
            #[must_use]
            pub fn as_bytes(&self) -> &[u8] {
                &self.buffer.as_ref()[..$size]
            }

            $(
                $(#[$fmeta])*
                #[inline]
                #[must_use]
                pub fn $field(&self) -> $ty {
                    <$ty as $crate::field::FieldType>::read(self.buffer.as_ref(), $crate::field::Field::new($byte, $bit, $len))
                }
            )*
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
            /// The bytes of the structure, writable.
            #[inline]
            pub fn as_bytes_mut(&mut self) -> &mut [u8] {
                &mut self.buffer.as_mut()[..$size]
            }

            $(
                #[doc = concat!("Sets `", stringify!($field), "` (masked to the field width).")]
                #[inline]
                pub fn $setter(&mut self, value: $ty) {
                    <$ty as $crate::field::FieldType>::write(value, self.buffer.as_mut(), $crate::field::Field::new($byte, $bit, $len));
                }
            )*
        }
    };
}

/// A newtype over `[u8; N]` as a [`FieldType`](crate::field::FieldType) that reflects as
/// `Bytes`: GIDs, byte blocks, GID lists.
macro_rules! bytes_field {
    ($name:ident, $n:expr) => {
        impl $crate::field::FieldType for $name {
            #[inline(always)]
            fn read(buf: &[u8], f: $crate::field::Field) -> Self {
                Self(<[u8; $n] as $crate::field::FieldType>::read(buf, f))
            }
            #[inline(always)]
            fn write(self, buf: &mut [u8], f: $crate::field::Field) {
                $crate::field::FieldType::write(self.0, buf, f);
            }
            fn to_value(&self) -> $crate::field::FieldValue<'_> {
                $crate::field::FieldValue::Bytes(&self.0)
            }
            fn from_value(
                v: $crate::field::FieldValue<'_>,
                f: $crate::field::Field,
            ) -> Option<Self> {
                <[u8; $n] as $crate::field::FieldType>::from_value(v, f).map(Self)
            }
        }
    };
}

/// A block of raw bytes with a meaning given by accessor methods (tables whose entries
/// are smaller than a byte or span two): a [`FieldType`](crate::field::FieldType) that
/// reflects as `Bytes`, so the whole block keeps its single libibmad name.
macro_rules! byte_block {
    (
        $(#[$meta:meta])*
        pub struct $name:ident([u8; $n:expr]);
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name(pub [u8; $n]);

        impl Default for $name {
            fn default() -> Self {
                Self([0u8; $n])
            }
        }

        impl AsRef<[u8]> for $name {
            fn as_ref(&self) -> &[u8] {
                &self.0
            }
        }

        bytes_field!($name, $n);
    };
}
