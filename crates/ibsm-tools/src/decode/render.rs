//! A [`Decoded`] as text (an smpquery-like listing) or as one JSON object.

use std::fmt::Write as _;

use ibsm_wire::Gid;

use super::{Decoded, Item, Section, Value};

/// Identifiers, masks and status words read better in hex, counts and LIDs in decimal.
fn prefers_hex(field: &str) -> bool {
    [
        "_id",
        "status",
        "mask",
        "class",
        "class_specific",
        "code",
        "method",
        "pkey",
        "p_key",
    ]
    .iter()
    .any(|k| field.ends_with(k))
}

fn uint_text(value: u64, bits: u16) -> String {
    if bits <= 16 {
        format!("{value}")
    } else {
        format!("{value:#0w$x}", w = usize::from(bits).div_ceil(4) + 2)
    }
}

fn bytes_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl Decoded {
    /// An smpquery-like listing: one `name:....value` line per field, nested structures
    /// indented, long byte fields as hex rows of 16 bytes.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for s in &self.sections {
            let _ = writeln!(out, "# {}", s.title);
            text_items(&mut out, &s.items, 0);
        }
        for n in &self.notes {
            let _ = writeln!(out, "# note: {n}");
        }
        out
    }

    /// One JSON object: `{"sections":[{"title":..,"fields":{..}}, ..],"notes":[..]}`.
    /// Fields wider than 32 bits and byte fields are hex strings (`"0x.."`), so no
    /// precision is lost; code points are `{"value":2,"name":"Switch"}`.
    #[must_use]
    pub fn to_json(&self) -> String {
        let doc = JsonDecoded {
            sections: self.sections.iter().map(JsonSection).collect(),
            notes: &self.notes,
        };
        // Serialising borrowed strings and numbers cannot fail.
        serde_json::to_string(&doc).unwrap_or_default()
    }
}

/// The JSON shape of a [`Decoded`].
#[derive(serde::Serialize)]
struct JsonDecoded<'a> {
    sections: Vec<JsonSection<'a>>,
    notes: &'a [String],
}

/// A [`Section`] as `{"title":..,"fields":{..}}`, fields in wire order.
struct JsonSection<'a>(&'a Section);

impl serde::Serialize for JsonSection<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        /// The fields as one object, in wire order.
        struct Fields<'a>(&'a [Item]);
        impl serde::Serialize for Fields<'_> {
            fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut m = ser.serialize_map(Some(self.0.len()))?;
                for it in self.0 {
                    m.serialize_entry(&it.name, &JsonValue::of(&it.value))?;
                }
                m.end()
            }
        }
        use serde::ser::SerializeStruct;
        let mut st = ser.serialize_struct("Section", 2)?;
        st.serialize_field("title", &self.0.title)?;
        st.serialize_field("fields", &Fields(&self.0.items))?;
        st.end()
    }
}

/// A field's JSON value.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum JsonValue<'a> {
    /// Up to 32 bits: a number.
    Number(u64),
    /// Wider numbers and bytes: a hex string; text and routes: the text.
    Text(String),
    /// A code point with its name.
    Named {
        value: Box<JsonValue<'a>>,
        name: &'a str,
    },
    /// A nested structure.
    Section(JsonSection<'a>),
}

impl<'a> JsonValue<'a> {
    fn of(v: &'a Value) -> Self {
        match v {
            Value::Uint { value, bits, name } => {
                let n = json_number(*value, *bits);
                match name {
                    Some(name) => JsonValue::Named {
                        value: Box::new(n),
                        name,
                    },
                    None => n,
                }
            }
            Value::Bytes { text: Some(t), .. } | Value::Route(t) => JsonValue::Text(t.clone()),
            Value::Bytes { bytes, text: None } => {
                JsonValue::Text(format!("0x{}", bytes_hex(bytes)))
            }
            Value::Struct(s) => JsonValue::Section(JsonSection(s)),
        }
    }
}

/// Fields up to 32 bits are JSON numbers; wider ones (GUIDs, keys, TIDs) are hex
/// strings, exact in every JSON reader and the same type whatever the value.
fn json_number(v: u64, bits: u16) -> JsonValue<'static> {
    if bits <= 32 {
        JsonValue::Number(v)
    } else {
        JsonValue::Text(uint_text(v, bits))
    }
}

fn text_items(out: &mut String, items: &[Item], depth: usize) {
    let indent = "  ".repeat(depth);
    for it in items {
        let label = format!("{indent}{}:", it.name);
        match &it.value {
            Value::Uint { value, bits, name } => {
                let shown = if prefers_hex(&it.name) && *bits > 1 {
                    format!("{value:#0w$x}", w = usize::from(*bits).div_ceil(4) + 2)
                } else {
                    uint_text(*value, *bits)
                };
                let _ = write!(out, "{label:.<40}{shown}");
                if let Some(n) = name {
                    let _ = write!(out, " ({n})");
                }
                out.push('\n');
            }
            Value::Route(r) => {
                let _ = writeln!(out, "{label:.<40}{r}");
            }
            Value::Bytes { text: Some(t), .. } => {
                let _ = writeln!(out, "{label:.<40}\"{t}\"");
            }
            Value::Bytes { bytes, text: None } if bytes.len() == 16 && it.name.contains("gid") => {
                let g = Gid(bytes[..].try_into().unwrap_or([0; 16]));
                let _ = writeln!(out, "{label:.<40}{g}");
            }
            Value::Bytes { bytes, text: None } if bytes.len() <= 16 => {
                let _ = writeln!(out, "{label:.<40}0x{}", bytes_hex(bytes));
            }
            Value::Bytes { bytes, text: None } => {
                if bytes.iter().all(|&b| b == 0) {
                    let _ = writeln!(out, "{label:.<40}({} zero bytes)", bytes.len());
                    continue;
                }
                let _ = writeln!(out, "{label}");
                for chunk in bytes.chunks(16) {
                    let row: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
                    let _ = writeln!(out, "{indent}    {}", row.join(" "));
                }
            }
            Value::Struct(s) => {
                let _ = writeln!(out, "{label} ({})", s.title);
                text_items(out, &s.items, depth + 1);
            }
        }
    }
}
