//! Spellings of values as OpenSM writes and reads them.

use std::path::PathBuf;
use std::time::Duration;

use ibsm::manager::health::Action;
use ibsm::manager::partition::Enforcement;
use ibsm::manager::perfmgr::{Counter, PerfMgrConfig, Threshold};
use ibsm::manager::topo_ref::TopoPolicy;
use ibsm::manager::{MKeyMode, SmConfig};
use ibsm::routing::EngineList;

use super::ValueError;
use crate::conf::{LogFormat, LogTarget};

/// A number in decimal or `0x` hex, as OpenSM reads them.
///
/// # Errors
/// [`ValueError::NotANumber`].
pub(crate) fn u64(text: &str) -> Result<u64, ValueError> {
    let t = text.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse(),
    }
    .map_err(|_| ValueError::NotANumber(text.to_owned()))
}
/// A number that must fit `T`.
///
/// # Errors
/// Not a number, or [`ValueError::TooWide`].
pub(crate) fn num<T: TryFrom<u64>>(s: &str) -> Result<T, ValueError> {
    let value = u64(s)?;
    T::try_from(value).map_err(|_| ValueError::TooWide {
        value,
        bits: 8 * size_of::<T>(),
    })
}
pub(super) fn dec<T: std::fmt::Display>(v: &T) -> String {
    v.to_string()
}
pub(super) fn hex64(v: &u64) -> String {
    format!("{v:#018x}")
}
pub(super) fn hex8(v: &u8) -> String {
    format!("0x{v:02x}")
}
pub(super) fn boolean(v: &bool) -> String {
    (if *v { "TRUE" } else { "FALSE" }).to_owned()
}
pub(super) fn parse_bool(s: &str) -> Result<bool, ValueError> {
    match s {
        "TRUE" | "true" => Ok(true),
        "FALSE" | "false" => Ok(false),
        _ => Err(ValueError::NotBool),
    }
}
pub(super) fn secs(v: &Duration) -> String {
    v.as_secs().to_string()
}
pub(super) fn parse_secs(s: &str) -> Result<Duration, ValueError> {
    num(s).map(Duration::from_secs)
}
pub(super) fn millis(v: &Duration) -> String {
    v.as_millis().to_string()
}
pub(super) fn parse_millis(s: &str) -> Result<Duration, ValueError> {
    num(s).map(Duration::from_millis)
}
/// OpenSM writes an unset file name as `(null)`.
pub(super) fn path(v: &Option<PathBuf>) -> String {
    v.as_ref()
        .map_or_else(|| "(null)".to_owned(), |p| p.display().to_string())
}
pub(super) fn parse_path(s: &str) -> Result<Option<PathBuf>, ValueError> {
    Ok((s != "(null)").then(|| PathBuf::from(s)))
}
/// Unset text as `(null)`, as a path.
pub(super) fn text(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "(null)".to_owned())
}
pub(super) fn parse_text(s: &str) -> Result<Option<String>, ValueError> {
    Ok((s != "(null)").then(|| s.to_owned()))
}
/// An unset number as `(null)`.
pub(super) fn opt_num<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "(null)".to_owned(), ToString::to_string)
}
pub(super) fn parse_opt_num<T: TryFrom<u64>>(s: &str) -> Result<Option<T>, ValueError> {
    if s == "(null)" {
        return Ok(None);
    }
    num(s).map(Some)
}
/// `Name=max,...` in perfquery's counter names; `(null)` for none.
pub(super) fn thresholds(v: &[Threshold]) -> String {
    if v.is_empty() {
        return "(null)".to_owned();
    }
    v.iter()
        .map(|t| format!("{}={}", t.counter.perfquery_name(), t.max_per_sweep))
        .collect::<Vec<_>>()
        .join(",")
}
pub(super) fn parse_thresholds(s: &str) -> Result<Vec<Threshold>, ValueError> {
    if s == "(null)" {
        return Ok(Vec::new());
    }
    let mut cfg = PerfMgrConfig::default();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, max) = item
            .split_once('=')
            .ok_or_else(|| ValueError::NotThreshold(item.to_owned()))?;
        let counter = Counter::ALL
            .iter()
            .copied()
            .find(|c| c.perfquery_name() == name.trim())
            .ok_or_else(|| ValueError::UnknownCounter(name.to_owned()))?;
        let max: u64 = num(max.trim()).map_err(|e| ValueError::Threshold {
            item: item.to_owned(),
            source: Box::new(e),
        })?;
        cfg.set_threshold(counter, Some(max));
    }
    Ok(cfg.thresholds)
}
/// A health action by its name (`isolate`, ...).
pub(super) fn action(v: &Action) -> String {
    v.name().to_owned()
}
pub(super) fn parse_action(s: &str) -> Result<Action, ValueError> {
    Action::from_name(s).ok_or(ValueError::NotOneOf(
        "ignore, report, isolate, disable or no_discover",
    ))
}
/// Seconds, 0 for "never".
pub(super) fn opt_secs(v: &Option<Duration>) -> String {
    v.map_or(0, |d| d.as_secs()).to_string()
}
pub(super) fn parse_opt_secs(s: &str) -> Result<Option<Duration>, ValueError> {
    let secs: u64 = num(s)?;
    Ok((secs > 0).then(|| Duration::from_secs(secs)))
}

pub(super) fn m_key(v: &MKeyMode) -> String {
    hex64(&match v {
        MKeyMode::Single(k) => *k,
        _ => 0,
    })
}
pub(super) fn parse_m_key(v: &str) -> Result<MKeyMode, ValueError> {
    Ok(match num(v)? {
        0 => MKeyMode::Off,
        k => MKeyMode::Single(k),
    })
}
pub(super) fn enforcement(v: &Enforcement) -> String {
    match v {
        Enforcement::In => "in",
        Enforcement::Out => "out",
        Enforcement::Off => "off",
        _ => "both",
    }
    .to_owned()
}
pub(super) fn parse_enforcement(v: &str) -> Result<Enforcement, ValueError> {
    Ok(match v {
        "both" => Enforcement::Both,
        "in" => Enforcement::In,
        "out" => Enforcement::Out,
        "off" => Enforcement::Off,
        _ => return Err(ValueError::NotOneOf("both, in, out or off")),
    })
}
pub(super) fn topo_policy(v: &TopoPolicy) -> String {
    v.name().to_owned()
}
pub(super) fn parse_topo_policy(v: &str) -> Result<TopoPolicy, ValueError> {
    TopoPolicy::from_name(v).ok_or(ValueError::NotOneOf("report or isolate"))
}
/// OpenSM spells its default list (minhop) `(null)`.
pub(super) fn engines(v: &EngineList) -> String {
    if *v == SmConfig::default().routing {
        "(null)".to_owned()
    } else {
        v.to_string()
    }
}
pub(super) fn parse_engines(v: &str) -> Result<EngineList, ValueError> {
    if v == "(null)" {
        return Ok(SmConfig::default().routing);
    }
    Ok(v.parse::<EngineList>()?)
}
pub(super) fn not(v: &bool) -> String {
    boolean(&!v)
}
pub(super) fn parse_not(v: &str) -> Result<bool, ValueError> {
    parse_bool(v).map(|b| !b)
}
pub(super) fn log_target(v: &LogTarget) -> String {
    match v {
        LogTarget::Stderr => "stderr".to_owned(),
        LogTarget::Stdout => "stdout".to_owned(),
        LogTarget::File(p) => p.display().to_string(),
    }
}
pub(super) fn parse_log_target(v: &str) -> Result<LogTarget, ValueError> {
    Ok(match v {
        "stderr" | "(null)" => LogTarget::Stderr,
        "stdout" => LogTarget::Stdout,
        p => LogTarget::File(PathBuf::from(p)),
    })
}
pub(super) fn log_format(v: &LogFormat) -> String {
    match v {
        LogFormat::Text => "text",
        LogFormat::Json => "json",
    }
    .to_owned()
}
pub(super) fn parse_log_format(v: &str) -> Result<LogFormat, ValueError> {
    match v {
        "text" => Ok(LogFormat::Text),
        "json" => Ok(LogFormat::Json),
        _ => Err(ValueError::NotOneOf("text or json")),
    }
}
