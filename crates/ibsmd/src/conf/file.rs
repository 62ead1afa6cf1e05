//! The configuration file in OpenSM's `opensm.conf` format: `key value` lines and `#`
//! comments. [`SECTIONS`] is the table of every option ibsmd reads and `-c` writes;
//! OpenSM's options ibsmd does not implement are in [`crate::opensm_keys`].

use std::path::PathBuf;

use ibsm::manager::partition::Enforcement;
use ibsm::manager::{MKeyMode, SmConfig};

use super::{Error, LogTarget, Settings, parse_engines};

/// One option of the configuration file: its OpenSM key, how it reads and writes the
/// settings, and what `-c` says about it.
pub(crate) struct Opt {
    /// The key (OpenSM's name where OpenSM has the option).
    pub(crate) key: &'static str,
    /// The `SmConfig` field `SmConfig::validate` names when it refuses this option
    /// ("" for the daemon's own options).
    pub(crate) field: &'static str,
    /// Whether a SIGHUP re-read applies a change of it to the running daemon.
    pub(crate) runtime: bool,
    /// The comment `-c` writes above it (lines separated by `\n`).
    pub(crate) help: &'static str,
    /// Its value in the settings, spelled as OpenSM writes it.
    pub(crate) get: fn(&Settings) -> String,
    /// Sets it from a value of the file; the error says why the token is wrong.
    pub(crate) set: fn(&mut Settings, &str) -> Result<(), String>,
}

/// Spellings of values as OpenSM writes and reads them.
mod spell {
    use std::path::PathBuf;
    use std::time::Duration;

    use ibsm::manager::perfmgr::{Counter, Threshold};

    pub(super) fn dec<T: std::fmt::Display>(v: &T) -> String {
        v.to_string()
    }
    pub(super) fn num<T: TryFrom<u64>>(s: &str) -> Result<T, String> {
        crate::cli::parse_num(s)
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
    pub(super) fn parse_bool(s: &str) -> Result<bool, String> {
        match s {
            "TRUE" | "true" => Ok(true),
            "FALSE" | "false" => Ok(false),
            _ => Err("is neither TRUE nor FALSE".into()),
        }
    }
    pub(super) fn secs(v: &Duration) -> String {
        v.as_secs().to_string()
    }
    pub(super) fn parse_secs(s: &str) -> Result<Duration, String> {
        num(s).map(Duration::from_secs)
    }
    pub(super) fn millis(v: &Duration) -> String {
        v.as_millis().to_string()
    }
    pub(super) fn parse_millis(s: &str) -> Result<Duration, String> {
        num(s).map(Duration::from_millis)
    }
    /// OpenSM writes an unset file name as `(null)`.
    pub(super) fn path(v: &Option<PathBuf>) -> String {
        v.as_ref()
            .map_or_else(|| "(null)".to_owned(), |p| p.display().to_string())
    }
    pub(super) fn parse_path(s: &str) -> Result<Option<PathBuf>, String> {
        Ok((s != "(null)").then(|| PathBuf::from(s)))
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
    pub(super) fn parse_thresholds(s: &str) -> Result<Vec<Threshold>, String> {
        if s == "(null)" {
            return Ok(Vec::new());
        }
        let mut cfg = ibsm::manager::perfmgr::PerfMgrConfig::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, max) = item
                .split_once('=')
                .ok_or_else(|| format!("{item}: not Counter=max"))?;
            let counter = Counter::ALL
                .iter()
                .copied()
                .find(|c| c.perfquery_name() == name.trim())
                .ok_or_else(|| format!("{name}: not a counter perfquery names"))?;
            let max: u64 = num(max.trim()).map_err(|e| format!("{item}: {e}"))?;
            cfg.set_threshold(counter, Some(max));
        }
        Ok(cfg.thresholds)
    }

    /// Seconds, 0 for "never".
    pub(super) fn opt_secs(v: &Option<Duration>) -> String {
        v.map_or(0, |d| d.as_secs()).to_string()
    }
    pub(super) fn parse_opt_secs(s: &str) -> Result<Option<Duration>, String> {
        let secs: u64 = num(s)?;
        Ok((secs > 0).then(|| Duration::from_secs(secs)))
    }
}

/// `opt!(key, field, runtime, help, s => place, show, parse)`: an option stored in
/// `place` (a place expression on `s: Settings`).
macro_rules! opt {
    ($key:literal, $field:literal, $rt:literal, $help:literal,
     $s:ident => $place:expr, $show:path, $parse:path) => {
        Opt {
            key: $key,
            field: $field,
            runtime: $rt,
            help: $help,
            get: |$s: &Settings| $show(&$place),
            set: |$s: &mut Settings, v: &str| {
                $place = $parse(v)?;
                Ok(())
            },
        }
    };
}

use spell::{
    boolean, dec, hex8, hex64, millis, num, opt_secs, parse_bool, parse_millis, parse_opt_secs,
    parse_path, parse_secs, path, secs,
};

/// Every option of the file, by section, in `-c` order. A new option is one line here.
pub(crate) static SECTIONS: &[(&str, &[Opt])] = &[
    (
        "DEVICE ATTRIBUTES OPTIONS",
        &[
            opt!("guid", "", false, "The port GUID on which ibsmd runs (0: the first port whose link is up)",
             s => s.guid, hex64, num),
            Opt {
                key: "m_key",
                field: "",
                runtime: false,
                help: "M_Key value sent to all ports qualifying all Set(PortInfo) (0: leave M_Keys alone)",
                get: |s| {
                    hex64(&match s.sm.m_key {
                        MKeyMode::Single(k) => k,
                        _ => 0,
                    })
                },
                set: |s, v| {
                    s.sm.m_key = match num(v)? {
                        0 => MKeyMode::Off,
                        k => MKeyMode::Single(k),
                    };
                    Ok(())
                },
            },
            opt!("m_key_lease_period", "", false, "The lease period used for the M_Key on this subnet in [sec]",
             s => s.sm.m_key_lease, dec, num),
            opt!("m_key_protection_level", "m_key_protect", false, "The protection level used for the M_Key on this subnet",
             s => s.sm.m_key_protect, dec, num),
            opt!("sm_key", "", false, "SM_Key value of the SM used for SM authentication",
             s => s.sm.sm_key, hex64, num),
            opt!("subnet_prefix", "", false, "Subnet prefix used on this subnet",
             s => s.sm.subnet_prefix, hex64, num),
            opt!("lmc", "lmc", false, "The LMC value used on this subnet",
             s => s.sm.lmc, dec, num),
            opt!("sm_sl", "sm_sl", false, "sm_sl determines SMSL used for SM/SA communication",
             s => s.sm.sm_sl, dec, num),
            opt!("packet_life_time", "packet_life_time", false,
             "The code of maximal time a packet can live in a switch\nThe actual time is 4.096usec * 2^<packet_life_time>\nThe value 0x14 disables this mechanism",
             s => s.sm.packet_life_time, hex8, num),
            opt!("subnet_timeout", "subnet_timeout", false,
             "The subnet_timeout code that will be set for all the ports\nThe actual timeout is 4.096usec * 2^<subnet_timeout>",
             s => s.sm.subnet_timeout, dec, num),
            opt!("force_link_speed", "force_link_speed", false,
             "Force PortInfo:LinkSpeedEnabled on every linked port\nIf 0, don't modify PortInfo:LinkSpeedEnabled\nOtherwise, use value for PortInfo:LinkSpeedEnabled (bits the port does not support are dropped)\n   1: 2.5 Gbps, 3: 2.5 or 5.0 Gbps, 5: 2.5 or 10.0 Gbps, 7: 2.5 or 5.0 or 10.0 Gbps\n   Default 15: set to PortInfo:LinkSpeedSupported",
             s => s.sm.force_link_speed, dec, num),
            opt!("force_link_speed_ext", "force_link_speed_ext", false,
             "Force PortInfo:LinkSpeedExtEnabled on ports where both ends support extended speeds\nIf 0, don't modify PortInfo:LinkSpeedExtEnabled\nOtherwise, use value for PortInfo:LinkSpeedExtEnabled\n   1: 14.0625 Gbps, 2: 25.78125 Gbps, 4: 53.125 Gbps, 8: 106.25 Gbps (sums: either)\n   30: Disable extended link speeds\n   Default 31: set to PortInfo:LinkSpeedExtSupported",
             s => s.sm.force_link_speed_ext, dec, num),
            opt!("force_link_width", "force_link_width", false,
             "Force PortInfo:LinkWidthEnabled on every linked port\nIf 0, don't modify PortInfo:LinkWidthEnabled\nOtherwise, use value for PortInfo:LinkWidthEnabled\n   1: 1x, 2: 4x, 4: 8x, 8: 12x, 16: 2x (sums: either), 32-254 reserved\n   Default 255: set to PortInfo:LinkWidthSupported",
             s => s.sm.force_link_width, dec, num),
            opt!("use_mfttop", "", false,
             "Use SwitchInfo:MulticastFDBTop if advertised in PortInfo:CapabilityMask",
             s => s.sm.use_mfttop, boolean, parse_bool),
        ],
    ),
    (
        "PARTITIONING OPTIONS",
        &[
            opt!("partition_config_file", "", true, "Partition configuration file to be used (re-read on SIGHUP)",
             s => s.partition_file, path, parse_path),
            Opt {
                key: "part_enforce",
                field: "",
                runtime: true,
                help: "Partition enforcement type (for switches)\nValues are both, out, in and off\nDefault is both.",
                get: |s| {
                    match s.part_enforce {
                        Enforcement::In => "in",
                        Enforcement::Out => "out",
                        Enforcement::Off => "off",
                        _ => "both",
                    }
                    .to_owned()
                },
                set: |s, v| {
                    s.part_enforce = match v {
                        "both" => Enforcement::Both,
                        "in" => Enforcement::In,
                        "out" => Enforcement::Out,
                        "off" => Enforcement::Off,
                        _ => return Err("is not both, in, out or off".into()),
                    };
                    Ok(())
                },
            },
            opt!("allow_both_pkeys", "", true, "Allow both full and limited membership on the same partition",
             s => s.allow_both_pkeys, boolean, parse_bool),
        ],
    ),
    (
        "SWEEP OPTIONS",
        &[
            opt!("sweep_interval", "", true, "The number of seconds between subnet sweeps (0 disables it)",
             s => s.sm.sweep_interval, secs, parse_secs),
        ],
    ),
    (
        "ROUTING OPTIONS",
        &[
            Opt {
                key: "routing_engine",
                field: "",
                runtime: false,
                help: "Routing engine\nMultiple routing engines can be specified separated by\ncommas so that specific ordering of routing algorithms will\nbe tried if earlier routing engines fail.\nSupported engines: minhop, updn, dnup, ftree, dor, lash, dfsssp;\nno_fallback: do not try minhop when the listed engines fail",
                get: |s| {
                    // OpenSM spells its default list (minhop) `(null)`.
                    if s.sm.routing == SmConfig::default().routing {
                        "(null)".to_owned()
                    } else {
                        s.sm.routing.to_string()
                    }
                },
                set: |s, v| {
                    s.sm.routing = if v == "(null)" {
                        SmConfig::default().routing
                    } else {
                        parse_engines(v)?
                    };
                    Ok(())
                },
            },
            opt!("root_guid_file", "", false,
         "The file holding the root node guids (for fat-tree, Up/Down, Down/Up and dfsssp)\nOne guid in each line",
         s => s.routing_files.roots, path, parse_path),
            opt!("cn_guid_file", "", false,
         "The file holding the fat-tree compute node guids\nOne guid in each line",
         s => s.routing_files.compute_nodes, path, parse_path),
            opt!("io_guid_file", "", false,
         "The file holding the fat-tree I/O node guids\nOne guid in each line.\nIf only io_guid file is provided, the rest of nodes\nare considered as compute nodes.",
         s => s.routing_files.io_nodes, path, parse_path),
            opt!("max_reverse_hops", "", false,
         "Number of reverse hops (a switch used the wrong way round) allowed\nfor the I/O nodes' traffic where fat-tree routing has no up/down path,\ne.g. between storage on two top switches (0: none)",
         s => s.sm.routing_inputs.max_reverse_hops, dec, num),
            opt!("guid_routing_order_file", "", false,
         "The file holding guid routing order guids (for MinHop, Up/Down, Down/Up and dfsssp)",
         s => s.routing_files.order, path, parse_path),
        ],
    ),
    (
        "HANDOVER - MULTIPLE SMs OPTIONS",
        &[
            opt!("sm_priority", "priority", true,
             "SM priority used for deciding who is the master\nRange goes from 0 (lowest priority) to 15 (highest).",
             s => s.sm.priority, dec, num),
            opt!("sminfo_polling_timeout", "polling_timeout", false,
             "Timeout in [msec] between two polls of active master SM",
             s => s.sm.polling_timeout, millis, parse_millis),
            opt!("polling_retry_number", "", false,
             "Number of failing polls of remote SM that declares it dead",
             s => s.sm.polling_retries, dec, num),
        ],
    ),
    (
        "TIMING AND THREADING OPTIONS",
        &[
            opt!("max_wire_smps", "max_wire_smps", true,
             "Maximum number of SMPs sent in parallel at the start of a sweep\n(ibsmd widens the window from there up to max_wire_smps_limit)",
             s => s.sm.max_wire_smps, dec, num),
            opt!("transaction_timeout", "transaction_timeout", false,
             "The maximum time in [msec] allowed for a transaction to complete",
             s => s.sm.transaction_timeout, millis, parse_millis),
            opt!("transaction_retries", "", false,
             "The maximum number of retries allowed for a transaction to complete",
             s => s.sm.transaction_retries, dec, num),
        ],
    ),
    (
        "MISC OPTIONS",
        &[
            Opt {
                key: "no_clients_rereg",
                field: "",
                runtime: false,
                help: "Do not ask ports to re-register with the SA (PortInfo.ClientReregister)",
                get: |s| boolean(&!s.sm.client_reregister),
                set: |s, v| {
                    s.sm.client_reregister = !parse_bool(v)?;
                    Ok(())
                },
            },
            opt!("babbling_port_policy", "", false,
             "Babbling Port Policy: disable the link of a port marked unhealthy for flapping\nor for a trap flood, and enable it again after the quiet period",
             s => s.sm.health.babbling_port_policy, boolean, parse_bool),
        ],
    ),
    (
        "PERFORMANCE MANAGER OPTIONS",
        &[
            opt!("perfmgr", "", false, "Run the performance manager (as Master, after SUBNET UP)",
             s => s.perfmgr, boolean, parse_bool),
            opt!("perfmgr_sweep_time_s", "perfmgr.sweep_time", false,
             "Time in seconds between the starts of two counter sweeps",
             s => s.perf.sweep_time, secs, parse_secs),
            opt!("perfmgr_max_outstanding_queries", "perfmgr.max_outstanding_queries", false,
             "Most PerfMgt queries in flight at once",
             s => s.perf.max_outstanding_queries, dec, num),
            opt!("perfmgr_ignore_cas", "", false,
             "Read switch ports only, not channel adapters",
             s => s.perf.ignore_cas, boolean, parse_bool),
            opt!("perfmgr_xmit_wait_log", "", false,
             "Report ports whose PortXmitWait grows by more than perfmgr_xmit_wait_threshold in one sweep",
             s => s.perfmgr_xmit_wait_log, boolean, parse_bool),
            opt!("perfmgr_xmit_wait_threshold", "", false,
             "PortXmitWait growth per sweep above which a port is reported",
             s => s.perfmgr_xmit_wait_threshold, dec, num),
        ],
    ),
    (
        "DEBUG FEATURES",
        &[
            opt!("log_flags", "", true,
             "The log flags used: 0x01 errors, 0x02 info, 0x04 verbose (debug),\n0x08 and up trace; 0 disables the log",
             s => s.log_flags, hex8, num),
            Opt {
                key: "log_file",
                field: "",
                runtime: false,
                help: "Log file to be used (stderr, stdout: those streams; reopened on SIGUSR1)",
                get: |s| match &s.log_file {
                    LogTarget::Stderr => "stderr".to_owned(),
                    LogTarget::Stdout => "stdout".to_owned(),
                    LogTarget::File(p) => p.display().to_string(),
                },
                set: |s, v| {
                    s.log_file = match v {
                        "stderr" | "(null)" => LogTarget::Stderr,
                        "stdout" => LogTarget::Stdout,
                        p => LogTarget::File(PathBuf::from(p)),
                    };
                    Ok(())
                },
            },
            opt!("accum_log_file", "", false,
             "If TRUE will accumulate the log over multiple OpenSM sessions",
             s => s.accum_log_file, boolean, parse_bool),
            opt!("dump_files_dir", "", false,
             "The directory to hold the file ibsmd dumps ((null): no dumps)",
             s => s.dump_dir, path, parse_path),
        ],
    ),
    (
        "IBSMD OPTIONS (not OpenSM's)",
        &[
            opt!("max_wire_smps_limit", "", false,
             "Most SMPs in flight (0: 256, or 128 under ibsim)",
             s => s.max_wire_smps_limit, dec, num),
            opt!("routing_threads", "routing_threads", false,
             "Worker threads for routing (0: one per CPU)",
             s => s.routing_threads, dec, num),
            opt!("reroute_on_loss", "", false,
             "After a lost cable or node repair only the broken routes (FALSE: recompute all)",
             s => s.sm.reroute_on_loss, boolean, parse_bool),
            opt!("rebalance_after", "", false,
             "Recompute repaired routes once the fabric has been quiet this many seconds (0: never)",
             s => s.sm.rebalance_after, opt_secs, parse_opt_secs),
            opt!("guid2lid_file", "", false,
             "Keep LIDs across restarts in this file (OpenSM's guid2lid format)",
             s => s.guid2lid, path, parse_path),
            opt!("health_flap_count", "", false,
             "A port whose link goes down more than this many times in health_flap_window\nis unhealthy: routed around until quiet (0: off)",
             s => s.sm.health.flap_count, dec, num),
            opt!("health_flap_window", "health.flap_window", false,
             "The flap window in [sec]",
             s => s.sm.health.flap_window, secs, parse_secs),
            opt!("health_trap_limit", "", false,
             "A port sending more than this many traps in health_trap_window is unhealthy:\nits traps are ignored, its link routed around (0: off)",
             s => s.sm.health.trap_limit, dec, num),
            opt!("health_trap_window", "health.trap_window", false,
             "The trap window in [sec]",
             s => s.sm.health.trap_window, secs, parse_secs),
            opt!("health_no_answer_sweeps", "", false,
             "A port about or across which SMPs are lost in this many heavy sweeps in a row\nis unhealthy: no longer explored (0: off)",
             s => s.sm.health.no_answer_sweeps, dec, num),
            opt!("health_quiet_period", "health.quiet_period", false,
             "An unhealthy port is taken back after this many [sec] without trouble",
             s => s.sm.health.quiet_period, secs, parse_secs),
            opt!("sa", "", false,
             "Serve Subnet Administration (FALSE: SA requests get \"unsupported class\")",
             s => s.sm.sa, boolean, parse_bool),
            opt!("polling_retries_as_failures", "", false,
             "Read polling_retry_number N as the failed polls that declare the master dead\n(N, 0 counting as 1); FALSE: OpenSM 3.3's count, N + 1 unanswered polls",
             s => s.polling_retries_as_failures, boolean, parse_bool),
            opt!("perfmgr_error_thresholds", "", false,
             "Counter growth per counter sweep above which PerfMgr reports a port, as\nperfquery's names: SymbolErrorCounter=10,LinkDownedCounter=0 ((null): none)",
             s => s.perf.thresholds, spell::thresholds, spell::parse_thresholds),
        ],
    ),
];

/// Every option, in file order.
pub(crate) fn options() -> impl Iterator<Item = &'static Opt> {
    SECTIONS.iter().flat_map(|(_, opts)| opts.iter())
}

/// The option with `key`.
pub(crate) fn option(key: &str) -> Option<&'static Opt> {
    options().find(|o| o.key == key)
}

/// What reading a file found besides the settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FileReport {
    /// Options ibsmd does not implement, set to something else than OpenSM's default,
    /// and unknown keys: `file:line: ...`.
    pub(crate) warnings: Vec<String>,
    /// Options ibsmd does not implement left at OpenSM's default (harmless).
    pub(crate) ignored: Vec<String>,
    /// The line each option was last set on (a later line wins, as in OpenSM).
    pub(crate) lines: Vec<(&'static str, usize, String)>,
}

impl FileReport {
    /// The line and token that set `key`, if the file did.
    pub(crate) fn line_of(&self, key: &str) -> Option<(usize, &str)> {
        self.lines
            .iter()
            .rev()
            .find(|(k, _, _)| *k == key)
            .map(|(_, l, t)| (*l, t.as_str()))
    }
}

/// Applies the text of a configuration file (`name` for messages) over `s`.
///
/// # Errors
/// The first value that does not read: `name:line: key token: why`.
pub(crate) fn parse(text: &str, name: &str, s: &mut Settings) -> Result<FileReport, Error> {
    let mut report = FileReport::default();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once(char::is_whitespace)
            .map_or((line, ""), |(k, v)| (k, v.trim()));
        if let Some(o) = option(key) {
            if value.is_empty() {
                return Err(Error::new(format!("{name}:{n}: {key}: no value")));
            }
            (o.set)(s, value)
                .map_err(|why| Error::new(format!("{name}:{n}: {key} {value}: {why}")))?;
            report.lines.push((o.key, n, value.to_owned()));
        } else if let Some((_, default)) = crate::opensm_keys::UNIMPLEMENTED
            .iter()
            .find(|(k, _)| *k == key)
        {
            let msg = format!(
                "{name}:{n}: {key} {value}: an OpenSM option ibsmd does not implement; ignored"
            );
            if value == *default {
                report.ignored.push(msg);
            } else {
                report.warnings.push(msg);
            }
        } else {
            report
                .warnings
                .push(format!("{name}:{n}: {key}: unknown option; ignored"));
        }
    }
    Ok(report)
}

/// The settings in OpenSM's configuration format, every option with its comment.
pub(crate) fn write(s: &Settings) -> String {
    let mut out = String::from(
        "# ibsmd configuration (OpenSM's opensm.conf format, read with ibsmd -F FILE)\n\n",
    );
    for (section, opts) in SECTIONS {
        out.push_str(&format!("#\n# {section}\n#\n"));
        for o in *opts {
            for l in o.help.lines() {
                out.push_str(&format!("# {l}\n"));
            }
            out.push_str(&format!("{} {}\n\n", o.key, (o.get)(s)));
        }
    }
    out
}
