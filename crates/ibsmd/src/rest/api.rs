//! The partition API's requests, sans-IO: which of UFM's routes a method and target
//! name ([`route`]), and the JSON bodies of its two changes read into a checked
//! [`Change`] ([`parse_add`], [`parse_remove`]), as Mellanox/ib-kubernetes's UFM plugin
//! sends them:
//!
//! ```text
//! POST /ufmRest/resources/pkeys                  {"pkey": "0x000A", "index0": true, "ip_over_ib": true,
//!                                                  "membership": "full", "guids": ["0002c90300001001"]}
//! POST /ufmRest/actions/remove_guids_from_pkey   {"pkey": "0x000A", "guids": ["0002c90300001001"]}
//! ```
//!
//! A P_Key is a hex string (`0x` optional, at most four digits) in 0x0001..=0xFFFE whose
//! low 15 bits name the partition (the membership bit comes from `membership`); the
//! default partition (0x7FFF, 0xFFFF) and the invalid P_Key (0x0000, 0x8000) are
//! refused. A GUID is 16 hex digits (`0x` optional), not zero. `membership` is `full`
//! (UFM's default) or `limited`; `index0` and `ip_over_ib` are JSON booleans. Unknown
//! fields are refused, so a UFM option ibsmd does not carry out is not ignored
//! silently. serde and the standard library only: the fuzz crate builds this file as
//! a module of its own.

use ibsm::manager::partition::Membership;
use serde::Deserialize;

/// The default partition's 15-bit P_Key.
pub(crate) const DEFAULT_PARTITION: u16 = 0x7FFF;

/// A checked change of the partition policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// `POST /ufmRest/resources/pkeys`: the GUIDs become members of the partition
    /// (created if no statement has its P_Key).
    Add {
        /// The partition's 15-bit P_Key.
        pkey: u16,
        /// Port GUIDs, each once, in request order.
        guids: Vec<u64>,
        /// Their membership (`Full` or `Limited`: an add does not ask for both).
        membership: Membership,
        /// `index0`, when given: the partition's `indx0` flag.
        index0: Option<bool>,
        /// `ip_over_ib`, when given: the partition's `ipoib` flag.
        ip_over_ib: Option<bool>,
    },
    /// `POST /ufmRest/actions/remove_guids_from_pkey`: the GUIDs stop being members.
    Remove {
        /// The partition's 15-bit P_Key.
        pkey: u16,
        /// Port GUIDs, each once, in request order.
        guids: Vec<u64>,
    },
}

impl Change {
    /// The partition it changes.
    pub(crate) fn pkey(&self) -> u16 {
        match self {
            Self::Add { pkey, .. } | Self::Remove { pkey, .. } => *pkey,
        }
    }

    /// The GUIDs it names.
    pub(crate) fn guids(&self) -> &[u64] {
        match self {
            Self::Add { guids, .. } | Self::Remove { guids, .. } => guids,
        }
    }

    /// The request body that reads back to this change, spelled as the plugin spells
    /// it (`"0x%04X"` P_Keys, 16 lower-case hex digits per GUID): the tests' and the
    /// fuzz target's requests.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn to_json(&self) -> String {
        let guids: Vec<String> = self
            .guids()
            .iter()
            .map(|g| format!("\"{}\"", guid_text(*g)))
            .collect();
        let guids = guids.join(",");
        match self {
            Self::Add {
                pkey,
                membership,
                index0,
                ip_over_ib,
                ..
            } => {
                let mut s = format!("{{\"pkey\": \"0x{pkey:04X}\"");
                if let Some(v) = index0 {
                    s.push_str(&format!(", \"index0\": {v}"));
                }
                if let Some(v) = ip_over_ib {
                    s.push_str(&format!(", \"ip_over_ib\": {v}"));
                }
                s.push_str(&format!(
                    ", \"membership\": \"{}\", \"guids\": [{guids}]}}",
                    membership.word()
                ));
                s
            }
            Self::Remove { pkey, .. } => {
                format!("{{\"pkey\": \"0x{pkey:04X}\", \"guids\": [{guids}]}}")
            }
        }
    }
}

/// A GUID as UFM writes it: 16 lower-case hex digits, no prefix.
pub(crate) fn guid_text(g: u64) -> String {
    format!("{g:016x}")
}

/// What the API answers, by route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// `GET /ufmRest/app/ufm_version`.
    Version,
    /// `POST /ufmRest/resources/pkeys`.
    Add,
    /// `POST /ufmRest/actions/remove_guids_from_pkey`.
    Remove,
    /// `GET /ufmRest/resources/pkeys` (`guids_data=true`: with each one's GUIDs).
    List {
        /// Whether the GUIDs are listed.
        guids: bool,
    },
    /// `GET /ufmRest/resources/pkeys/<pkey>`.
    One {
        /// The 15-bit P_Key.
        pkey: u16,
    },
}

/// A request the API refuses; [`ApiError::status`] is its HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ApiError {
    /// No such route.
    #[error("no such resource {0:?}")]
    NotFound(String),
    /// The route exists for other methods.
    #[error("{method} is not allowed on {path} (allowed: {allowed})")]
    Method {
        /// The method sent.
        method: String,
        /// The path.
        path: String,
        /// The methods it takes.
        allowed: &'static str,
    },
    /// The body is not the JSON object the route takes (serde's words: the field, the
    /// line and column).
    #[error("body: {0}")]
    Json(String),
    /// A P_Key that is not 1 to 4 hex digits.
    #[error("pkey {0:?} is not a hex P_Key (0x0001..0xFFFE)")]
    PKeySyntax(String),
    /// P_Key 0x0000 or 0x8000.
    #[error("pkey {0:?} is the invalid P_Key")]
    PKeyInvalid(String),
    /// The default partition, which the API does not change.
    #[error("pkey {0:?} is the default partition (0x7FFF), which the API does not change")]
    PKeyDefault(String),
    /// A GUID that is not 16 hex digits, or zero.
    #[error("guid {0:?} is not a port GUID (16 hex digits, not zero)")]
    Guid(String),
    /// `membership` neither `full` nor `limited`.
    #[error("membership {0:?} is neither \"full\" nor \"limited\"")]
    Membership(String),
    /// A P_Key no statement of the partitions file has (`GET .../pkeys/<pkey>`).
    #[error("P_Key {0:#06x} is not in the partitions file")]
    UnknownPKey(u16),
}

impl ApiError {
    /// The status it is answered with.
    pub(crate) fn status(&self) -> u16 {
        match self {
            Self::NotFound(_) | Self::UnknownPKey(_) => 404,
            Self::Method { .. } => 405,
            _ => 400,
        }
    }

    /// The JSON error body: `{"error": "..."}`.
    pub(crate) fn body(&self) -> String {
        error_body(&self.to_string())
    }
}

/// `{"error": message}`.
pub(crate) fn error_body(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// The value of `key` in a query string, if given.
fn query_value<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// The route `method` on `target` (path and query) asks for.
///
/// # Errors
/// [`ApiError::NotFound`], [`ApiError::Method`], or a P_Key in the path that does not
/// read ([`parse_pkey`]'s errors, and the default partition is readable here).
pub(crate) fn route(method: &str, target: &str) -> Result<Route, ApiError> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    // UFM takes its collection paths with and without the trailing slash (the plugin's
    // GET of every P_Key has it).
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    let want = |allowed: &'static str, r: Route| {
        if method == allowed {
            Ok(r)
        } else {
            Err(ApiError::Method {
                method: method.chars().take(16).collect(),
                path: path.chars().take(80).collect(),
                allowed,
            })
        }
    };
    match trimmed {
        "/ufmRest/app/ufm_version" => want("GET", Route::Version),
        "/ufmRest/actions/remove_guids_from_pkey" => want("POST", Route::Remove),
        "/ufmRest/resources/pkeys" => match method {
            "POST" => Ok(Route::Add),
            "GET" => Ok(Route::List {
                guids: query_value(query, "guids_data").is_some_and(|v| v == "true"),
            }),
            _ => want("GET, POST", Route::Add),
        },
        p => match p.strip_prefix("/ufmRest/resources/pkeys/") {
            Some(k) if !k.contains('/') => {
                let pkey = pkey_bits(k)?;
                want("GET", Route::One { pkey })
            }
            _ => Err(ApiError::NotFound(path.chars().take(80).collect())),
        },
    }
}

/// The 15 bits of a P_Key string, any but the invalid P_Key.
fn pkey_bits(s: &str) -> Result<u16, ApiError> {
    let short = || s.chars().take(24).collect::<String>();
    let hex = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if hex.is_empty() || hex.len() > 4 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::PKeySyntax(short()));
    }
    let v = u16::from_str_radix(hex, 16).map_err(|_| ApiError::PKeySyntax(short()))?;
    match v & 0x7FFF {
        0 => Err(ApiError::PKeyInvalid(short())),
        k => Ok(k),
    }
}

/// A P_Key the API may change: its 15 bits, neither the invalid nor the default
/// partition.
///
/// # Errors
/// [`ApiError::PKeySyntax`], [`ApiError::PKeyInvalid`], [`ApiError::PKeyDefault`].
pub(crate) fn parse_pkey(s: &str) -> Result<u16, ApiError> {
    match pkey_bits(s)? {
        DEFAULT_PARTITION => Err(ApiError::PKeyDefault(s.chars().take(24).collect())),
        k => Ok(k),
    }
}

/// A port GUID: 16 hex digits, `0x` optional, not zero.
///
/// # Errors
/// [`ApiError::Guid`].
pub(crate) fn parse_guid(s: &str) -> Result<u64, ApiError> {
    let hex = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    let bad = || ApiError::Guid(s.chars().take(40).collect());
    if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    match u64::from_str_radix(hex, 16) {
        Ok(0) | Err(_) => Err(bad()),
        Ok(g) => Ok(g),
    }
}

/// GUIDs read, each once, in order.
fn parse_guids(list: &[String]) -> Result<Vec<u64>, ApiError> {
    let mut out: Vec<u64> = Vec::with_capacity(list.len());
    for s in list {
        let g = parse_guid(s)?;
        if !out.contains(&g) {
            out.push(g);
        }
    }
    Ok(out)
}

/// The add body as sent.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddBody {
    pkey: String,
    guids: Vec<String>,
    #[serde(default)]
    membership: Option<String>,
    #[serde(default)]
    index0: Option<bool>,
    #[serde(default)]
    ip_over_ib: Option<bool>,
}

/// The remove body as sent.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoveBody {
    pkey: String,
    guids: Vec<String>,
}

/// What each field of the bodies must be, for errors that name the field (serde's
/// type errors name only the line and column).
const FIELD_TYPES: [(&str, &str); 5] = [
    ("pkey", "a string"),
    ("guids", "an array of strings"),
    ("membership", "a string"),
    ("index0", "true or false"),
    ("ip_over_ib", "true or false"),
];

fn json<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        // A field of the wrong type: say which.
        if let Ok(serde_json::Value::Object(o)) = serde_json::from_slice(body) {
            for (name, want) in FIELD_TYPES {
                let ok = match (o.get(name), want) {
                    (None, _) => true,
                    (Some(v), "a string") => v.is_string(),
                    (Some(v), "true or false") => v.is_boolean(),
                    (Some(v), _) => v
                        .as_array()
                        .is_some_and(|a| a.iter().all(serde_json::Value::is_string)),
                };
                if !ok {
                    return ApiError::Json(format!("field `{name}` must be {want}: {e}"));
                }
            }
        }
        ApiError::Json(e.to_string())
    })
}

/// The body of `POST /ufmRest/resources/pkeys`.
///
/// # Errors
/// [`ApiError::Json`] (not the object, a field missing, unknown or of the wrong
/// type), or the P_Key's, a GUID's or the membership's error.
pub(crate) fn parse_add(body: &[u8]) -> Result<Change, ApiError> {
    let b: AddBody = json(body)?;
    let pkey = parse_pkey(&b.pkey)?;
    let membership = match b.membership.as_deref() {
        None | Some("full") => Membership::Full,
        Some("limited") => Membership::Limited,
        Some(m) => return Err(ApiError::Membership(m.chars().take(24).collect())),
    };
    Ok(Change::Add {
        pkey,
        guids: parse_guids(&b.guids)?,
        membership,
        index0: b.index0,
        ip_over_ib: b.ip_over_ib,
    })
}

/// The body of `POST /ufmRest/actions/remove_guids_from_pkey`.
///
/// # Errors
/// [`ApiError::Json`], or the P_Key's or a GUID's error.
pub(crate) fn parse_remove(body: &[u8]) -> Result<Change, ApiError> {
    let b: RemoveBody = json(body)?;
    Ok(Change::Remove {
        pkey: parse_pkey(&b.pkey)?,
        guids: parse_guids(&b.guids)?,
    })
}
