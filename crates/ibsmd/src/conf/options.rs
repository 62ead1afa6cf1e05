// Over 800 lines: one table of 86 options, each written once, in opensm.conf section order.
//! The one table of ibsmd's options: [`OPTIONS`], each option written once with its
//! typed name ([`Key`]), its opensm.conf key and section, the comment `-c` writes, its
//! command-line flags, whether a SIGHUP applies it ([`Apply`]), and how its value is
//! read and spelled ([`Access`]).
//!
//! Everything else is built from it: the clap flags and `--help` (`cli.rs`), reading
//! and `-c` writing of opensm.conf (`file.rs`), where a refused value came from
//! (`conf.rs`), the SIGHUP split (`daemon.rs`) and the run-time list in `--help`.
//! A flag's value is read by the same [`Access::set`] as the file's, so the two
//! cannot disagree on what a token means.

use ibsm::manager::ConfigField;
use ibsm::routing::EngineListError;

use super::Settings;

/// Why a value (a token of the file or of a flag) does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ValueError {
    /// Neither decimal nor `0x` hex.
    #[error("{0:?} is not a number")]
    NotANumber(String),
    /// A number wider than the setting (its width, not a range of meaning: that is
    /// `SmConfig::validate`'s).
    #[error("{value} does not fit in {bits} bits")]
    TooWide {
        /// The number read.
        value: u64,
        /// The setting's width.
        bits: usize,
    },
    /// A boolean that is not OpenSM's spelling of one.
    #[error("is neither TRUE nor FALSE")]
    NotBool,
    /// A word outside the option's list.
    #[error("is not {0}")]
    NotOneOf(&'static str),
    /// A routing engine list that does not read.
    #[error(transparent)]
    Engines(#[from] EngineListError),
    /// A `perfmgr_error_thresholds` item without `=`.
    #[error("{0}: not Counter=max")]
    NotThreshold(String),
    /// A counter name perfquery does not print.
    #[error("{0}: not a counter perfquery names")]
    UnknownCounter(String),
    /// A threshold whose number does not read.
    #[error("{item}: {source}")]
    Threshold {
        /// The `Counter=max` item.
        item: String,
        /// Why its number does not read.
        source: Box<ValueError>,
    },
}

/// A section of `opensm -c`'s output (and a heading of `--help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    /// `DEVICE ATTRIBUTES OPTIONS`.
    Device,
    /// `PARTITIONING OPTIONS`.
    Partitioning,
    /// `SWEEP OPTIONS`.
    Sweep,
    /// `ROUTING OPTIONS`.
    Routing,
    /// `HANDOVER - MULTIPLE SMs OPTIONS`.
    Handover,
    /// `TIMING AND THREADING OPTIONS`.
    Timing,
    /// `MISC OPTIONS`.
    Misc,
    /// `PERFORMANCE MANAGER OPTIONS`.
    PerfMgr,
    /// `DEBUG FEATURES`.
    Debug,
    /// ibsmd's own options of the file.
    Ibsmd,
    /// RouteOptions of the command line only (the port, the daemon's endpoints, the run's
    /// mode): not in the file, not written by `-c`.
    CommandLine,
}

impl Section {
    /// The title `-c` writes (OpenSM's), or none for the command line's.
    pub(crate) const fn title(self) -> Option<&'static str> {
        Some(match self {
            Self::Device => "DEVICE ATTRIBUTES OPTIONS",
            Self::Partitioning => "PARTITIONING OPTIONS",
            Self::Sweep => "SWEEP OPTIONS",
            Self::Routing => "ROUTING OPTIONS",
            Self::Handover => "HANDOVER - MULTIPLE SMs OPTIONS",
            Self::Timing => "TIMING AND THREADING OPTIONS",
            Self::Misc => "MISC OPTIONS",
            Self::PerfMgr => "PERFORMANCE MANAGER OPTIONS",
            Self::Debug => "DEBUG FEATURES",
            Self::Ibsmd => "IBSMD OPTIONS (not OpenSM's)",
            Self::CommandLine => return None,
        })
    }

    /// The `--help` heading of its flags.
    pub(crate) const fn heading(self) -> &'static str {
        match self {
            Self::Device => "Port and subnet",
            Self::Partitioning => "Partitions",
            Self::Sweep | Self::Handover | Self::Timing => "Sweeping and election",
            Self::Routing => "Routing",
            Self::Misc | Self::Ibsmd => "Routes and port health",
            Self::PerfMgr => "Performance manager",
            Self::Debug => "Log",
            Self::CommandLine => "Daemon",
        }
    }
}

/// What the running daemon does when a SIGHUP re-read changes a run-time option: one
/// setter each, which may cover several options (the partition policy's three).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Setter {
    /// `Log::set_flags`.
    LogFlags,
    /// `SubnetManager::set_sweep_interval`.
    SweepInterval,
    /// `SubnetManager::set_priority`.
    Priority,
    /// `SubnetManager::set_max_wire_smps`.
    MaxWireSmps,
    /// `SubnetManager::set_partitions` with the re-read policy.
    Partitions,
    /// `SubnetManager::set_topology_ref` with the re-read reference.
    TopologyRef,
}

/// When a changed value takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Apply {
    /// At the next start: a SIGHUP reports the change and keeps the value in force.
    Restart,
    /// At a SIGHUP, through this setter.
    Live(Setter),
}

/// What a flag takes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Takes {
    /// A value (its name in `--help`), read as the file reads the option's value.
    Value(&'static str),
    /// Nothing: the flag sets the option as if the file said this token.
    Switch(&'static str),
    /// Nothing, and may be repeated: each time applies this step (`-v`).
    Count(fn(&mut Settings)),
}

/// One command-line flag of an option.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flag {
    /// The long name (also the clap id: unique in the table).
    pub(crate) long: &'static str,
    /// The short letter, if any.
    pub(crate) short: Option<char>,
    /// Other long names, shown in `--help`.
    pub(crate) aliases: &'static [&'static str],
    /// What it takes.
    pub(crate) takes: Takes,
    /// Its `--help` line.
    pub(crate) doc: &'static str,
    /// Also accepted after a client command (`ibsmd status --control-socket P`).
    pub(crate) global: bool,
}

impl Flag {
    /// `--long VALUE`.
    const fn value(long: &'static str, name: &'static str, doc: &'static str) -> Self {
        Self {
            long,
            short: None,
            aliases: &[],
            takes: Takes::Value(name),
            doc,
            global: false,
        }
    }
    /// `--long`, as if the file said `token`.
    const fn switch(long: &'static str, token: &'static str, doc: &'static str) -> Self {
        Self {
            takes: Takes::Switch(token),
            ..Self::value(long, "", doc)
        }
    }
    /// `--long`, repeatable.
    const fn count(long: &'static str, step: fn(&mut Settings), doc: &'static str) -> Self {
        Self {
            takes: Takes::Count(step),
            ..Self::value(long, "", doc)
        }
    }
    /// With a short letter.
    const fn short(self, c: char) -> Self {
        Self {
            short: Some(c),
            ..self
        }
    }
    /// With other long names.
    const fn aliases(self, aliases: &'static [&'static str]) -> Self {
        Self { aliases, ..self }
    }
    /// Accepted after a client command too.
    const fn global(self) -> Self {
        Self {
            global: true,
            ..self
        }
    }
}

/// How an option's value is read into the settings and spelled out of them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Access {
    /// Its value in the settings, spelled as OpenSM writes it.
    pub(crate) get: fn(&Settings) -> String,
    /// Sets it from a token (the file's value or a flag's).
    pub(crate) set: fn(&mut Settings, &str) -> Result<(), ValueError>,
}

/// One option.
#[derive(Debug)]
pub(crate) struct Spec {
    /// Its typed name.
    pub(crate) key: Key,
    /// Its opensm.conf key (OpenSM's name where OpenSM has the option); also its name
    /// in messages.
    pub(crate) name: &'static str,
    /// Where `-c` writes it ([`Section::CommandLine`]: nowhere).
    pub(crate) section: Section,
    /// The comment `-c` writes above it (lines separated by `\n`).
    pub(crate) help: &'static str,
    /// Its flags, applied in this order (a later one over an earlier one).
    pub(crate) flags: &'static [Flag],
    /// Whether a SIGHUP applies a change.
    pub(crate) apply: Apply,
    /// Reading and spelling its value.
    pub(crate) access: Access,
    /// The `SmConfig` field `SmConfig::validate` names when it refuses this option.
    pub(crate) engine_field: Option<ConfigField>,
}

impl Spec {
    /// What every entry of [`OPTIONS`] starts from (its `key`, `name`, `section` and
    /// `access` are always given).
    const BASE: Self = Self {
        key: Key::Guid,
        name: "",
        section: Section::CommandLine,
        help: "",
        flags: &[],
        apply: Apply::Restart,
        access: Access {
            get: |_| String::new(),
            set: |_, _| Ok(()),
        },
        engine_field: None,
    };

    /// Whether the file has it (and `-c` writes it).
    pub(crate) fn in_file(&self) -> bool {
        self.section.title().is_some()
    }
}

/// `options! { Key "name" { field: value, ... } ... }`: the [`Key`] enum and the
/// [`OPTIONS`] table from one list, so an option's name and its entry are written once
/// and a key's index in the table is its discriminant.
macro_rules! options {
    ($( $key:ident $name:literal { $($field:ident : $value:expr),* $(,)? } )*) => {
        /// An option's typed name; [`Key::spec`] is its entry in [`OPTIONS`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        // The options' own names: `m_key` and `sm_key` end in "key".
        #[allow(clippy::enum_variant_names)]
        pub(crate) enum Key {
            $(
                #[doc = concat!("`", $name, "`")]
                $key,
            )*
        }

        /// Every option, in `-c` order (sections in OpenSM's order, the command line's
        /// last).
        // The defaults of `Spec::BASE` fill what an entry leaves out; some give all.
        #[allow(clippy::needless_update)]
        pub(crate) static OPTIONS: &[Spec] = &[
            $( Spec { key: Key::$key, name: $name, $($field: $value,)* ..Spec::BASE }, )*
        ];
    };
}

/// `at!(s => place, show, parse)`: an [`Access`] to the place expression `place` on
/// `s: Settings`, spelled by `show` and read by `parse`.
macro_rules! at {
    ($s:ident => $place:expr, $show:path, $parse:path) => {
        Access {
            get: |$s: &Settings| $show(&$place),
            set: |$s: &mut Settings, v: &str| {
                $place = $parse(v)?;
                Ok(())
            },
        }
    };
}

impl Key {
    /// Its entry in [`OPTIONS`].
    pub(crate) fn spec(self) -> &'static Spec {
        &OPTIONS[self as usize]
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.spec().name)
    }
}

/// The option a file key names.
pub(crate) fn by_name(name: &str) -> Option<&'static Spec> {
    OPTIONS.iter().find(|o| o.name == name && o.in_file())
}

/// The options a SIGHUP applies, by name, in table order (for `--help` and the docs).
pub(crate) fn runtime_names() -> Vec<&'static str> {
    OPTIONS
        .iter()
        .filter(|o| matches!(o.apply, Apply::Live(_)))
        .map(|o| o.name)
        .collect()
}

mod spell;

use spell::{
    action, boolean, dec, enforcement, engines, hex8, hex64, log_format, log_target, m_key, millis,
    not, num, opt_num, opt_secs, parse_action, parse_bool, parse_enforcement, parse_engines,
    parse_log_format, parse_log_target, parse_m_key, parse_millis, parse_not, parse_opt_num,
    parse_opt_secs, parse_path, parse_secs, parse_text, parse_topo_policy, path, secs, text,
    topo_policy,
};

/// OpenSM's `-v`: turns on the next level above those on.
fn more_log(s: &mut Settings) {
    s.log_flags |= (s.log_flags << 1) | 1;
}

options! {
    // ---- DEVICE ATTRIBUTES OPTIONS ----
    Guid "guid" {
        section: Section::Device,
        help: "The port GUID on which ibsmd runs (0: the first port whose link is up)",
        flags: &[Flag::value("guid", "GUID", "Local port GUID to bind to (0: the first port whose link is up)").short('g')],
        access: at!(s => s.guid, hex64, num),
    }
    MKey "m_key" {
        section: Section::Device,
        help: "M_Key value sent to all ports qualifying all Set(PortInfo) (0: leave M_Keys alone)",
        flags: &[Flag::value("m-key", "KEY", "One M_Key for every port (0: leave M_Keys alone)")],
        access: at!(s => s.sm.m_key, m_key, parse_m_key),
    }
    MKeyLeasePeriod "m_key_lease_period" {
        section: Section::Device,
        help: "The lease period used for the M_Key on this subnet in [sec]",
        flags: &[Flag::value("m-key-lease", "SECS", "M_KeyLeasePeriod in seconds, 0 = never expires")],
        access: at!(s => s.sm.m_key_lease, dec, num),
    }
    MKeyProtectionLevel "m_key_protection_level" {
        section: Section::Device,
        help: "The protection level used for the M_Key on this subnet",
        flags: &[Flag::value("m-key-protect", "BITS", "M_KeyProtectBits written with the key, 0..3")],
        access: at!(s => s.sm.m_key_protect, dec, num),
        engine_field: Some(ConfigField::MKeyProtect),
    }
    SmKey "sm_key" {
        section: Section::Device,
        help: "SM_Key value of the SM used for SM authentication",
        flags: &[Flag::value("smkey", "KEY", "SM_Key guarding SMInfo exchanges").short('k').aliases(&["sm-key"])],
        access: at!(s => s.sm.sm_key, hex64, num),
    }
    SubnetPrefix "subnet_prefix" {
        section: Section::Device,
        help: "Subnet prefix used on this subnet",
        flags: &[Flag::value("subnet_prefix", "PREFIX", "Subnet prefix written to every port")],
        access: at!(s => s.sm.subnet_prefix, hex64, num),
    }
    Lmc "lmc" {
        section: Section::Device,
        help: "The LMC value used on this subnet",
        flags: &[Flag::value("lmc", "LMC", "LID mask control, 0..7: 2^LMC LIDs per CA port").short('l')],
        access: at!(s => s.sm.lmc, dec, num),
        engine_field: Some(ConfigField::Lmc),
    }
    SmSl "sm_sl" {
        section: Section::Device,
        help: "sm_sl determines SMSL used for SM/SA communication",
        flags: &[Flag::value("sm_sl", "SL", "SL of SM/SA traffic")],
        access: at!(s => s.sm.sm_sl, dec, num),
        engine_field: Some(ConfigField::SmSl),
    }
    PacketLifeTime "packet_life_time" {
        section: Section::Device,
        help: "The code of maximal time a packet can live in a switch\nThe actual time is 4.096usec * 2^<packet_life_time>\nThe value 0x14 disables this mechanism",
        access: at!(s => s.sm.packet_life_time, hex8, num),
        engine_field: Some(ConfigField::PacketLifeTime),
    }
    SubnetTimeout "subnet_timeout" {
        section: Section::Device,
        help: "The subnet_timeout code that will be set for all the ports\nThe actual timeout is 4.096usec * 2^<subnet_timeout>",
        access: at!(s => s.sm.subnet_timeout, dec, num),
        engine_field: Some(ConfigField::SubnetTimeout),
    }
    ForceLinkSpeed "force_link_speed" {
        section: Section::Device,
        help: "Force PortInfo:LinkSpeedEnabled on every linked port\nIf 0, don't modify PortInfo:LinkSpeedEnabled\nOtherwise, use value for PortInfo:LinkSpeedEnabled (bits the port does not support are dropped)\n   1: 2.5 Gbps, 3: 2.5 or 5.0 Gbps, 5: 2.5 or 10.0 Gbps, 7: 2.5 or 5.0 or 10.0 Gbps\n   Default 15: set to PortInfo:LinkSpeedSupported",
        flags: &[Flag::value("force_link_speed", "N", "PortInfo.LinkSpeedEnabled written to every port: 0 leave it, 1..=14 those speed bits, 15 the port's LinkSpeedSupported").aliases(&["force-link-speed"])],
        access: at!(s => s.sm.force_link_speed, dec, num),
        engine_field: Some(ConfigField::ForceLinkSpeed),
    }
    ForceLinkSpeedExt "force_link_speed_ext" {
        section: Section::Device,
        help: "Force PortInfo:LinkSpeedExtEnabled on ports where both ends support extended speeds\nIf 0, don't modify PortInfo:LinkSpeedExtEnabled\nOtherwise, use value for PortInfo:LinkSpeedExtEnabled\n   1: 14.0625 Gbps, 2: 25.78125 Gbps, 4: 53.125 Gbps, 8: 106.25 Gbps (sums: either)\n   30: Disable extended link speeds\n   Default 31: set to PortInfo:LinkSpeedExtSupported",
        flags: &[Flag::value("force_link_speed_ext", "N", "PortInfo.LinkSpeedExtEnabled written where both ends support extended speeds: 0 leave it, 1..=29 those speed bits, 30 extended speeds off, 31 the port's LinkSpeedExtSupported").aliases(&["force-link-speed-ext"])],
        access: at!(s => s.sm.force_link_speed_ext, dec, num),
        engine_field: Some(ConfigField::ForceLinkSpeedExt),
    }
    ForceLinkWidth "force_link_width" {
        section: Section::Device,
        help: "Force PortInfo:LinkWidthEnabled on every linked port\nIf 0, don't modify PortInfo:LinkWidthEnabled\nOtherwise, use value for PortInfo:LinkWidthEnabled\n   1: 1x, 2: 4x, 4: 8x, 8: 12x, 16: 2x (sums: either), 32-254 reserved\n   Default 255: set to PortInfo:LinkWidthSupported",
        flags: &[Flag::value("force_link_width", "N", "PortInfo.LinkWidthEnabled written to every port: 0 leave it, 1..=31 those width bits (1x 4x 8x 12x 2x), 255 the port's LinkWidthSupported").aliases(&["force-link-width"])],
        access: at!(s => s.sm.force_link_width, dec, num),
        engine_field: Some(ConfigField::ForceLinkWidth),
    }
    UseMfttop "use_mfttop" {
        section: Section::Device,
        help: "Use SwitchInfo:MulticastFDBTop if advertised in PortInfo:CapabilityMask",
        access: at!(s => s.sm.use_mfttop, boolean, parse_bool),
    }

    // ---- PARTITIONING OPTIONS ----
    PartitionConfigFile "partition_config_file" {
        section: Section::Partitioning,
        help: "Partition configuration file to be used (re-read on SIGHUP)",
        flags: &[Flag::value("Pconfig", "FILE", "Partition policy in OpenSM's partitions.conf syntax").short('P').aliases(&["partitions"])],
        apply: Apply::Live(Setter::Partitions),
        access: at!(s => s.partition_file, path, parse_path),
    }
    PartEnforce "part_enforce" {
        section: Section::Partitioning,
        help: "Partition enforcement type (for switches)\nValues are both, out, in and off\nDefault is both.",
        flags: &[Flag::value("part_enforce", "MODE", "Directions switch ports cabled to end ports filter P_Keys in: both, in, out, off").short('Z').aliases(&["part-enforce"])],
        apply: Apply::Live(Setter::Partitions),
        access: at!(s => s.part_enforce, enforcement, parse_enforcement),
    }
    AllowBothPkeys "allow_both_pkeys" {
        section: Section::Partitioning,
        help: "Allow both full and limited membership on the same partition",
        flags: &[Flag::switch("allow_both_pkeys", "TRUE", "A `both` member holds the full and the limited P_Key").short('W').aliases(&["allow-both-pkeys"])],
        apply: Apply::Live(Setter::Partitions),
        access: at!(s => s.allow_both_pkeys, boolean, parse_bool),
    }

    // ---- SWEEP OPTIONS ----
    SweepInterval "sweep_interval" {
        section: Section::Sweep,
        help: "The number of seconds between subnet sweeps (0 disables it)",
        flags: &[Flag::value("sweep", "SECS", "Seconds between light sweeps, 0 = none").short('s').aliases(&["sweep-interval"])],
        apply: Apply::Live(Setter::SweepInterval),
        access: at!(s => s.sm.sweep_interval, secs, parse_secs),
    }

    // ---- ROUTING OPTIONS ----
    RoutingEngine "routing_engine" {
        section: Section::Routing,
        help: "Routing engine\nMultiple routing engines can be specified separated by\ncommas so that specific ordering of routing algorithms will\nbe tried if earlier routing engines fail.\nSupported engines: minhop, updn, dnup, ftree, dor, lash, dfsssp;\nno_fallback: do not try minhop when the listed engines fail",
        flags: &[Flag::value("routing_engine", "ENGINES", "Routing engine(s), comma-separated: the first that succeeds is used (minhop, updn, dnup, ftree, dor, lash, dfsssp)").short('R').aliases(&["routing"])],
        access: at!(s => s.sm.routing, engines, parse_engines),
    }
    RootGuidFile "root_guid_file" {
        section: Section::Routing,
        help: "The file holding the root node guids (for fat-tree, Up/Down, Down/Up and dfsssp)\nOne guid in each line",
        flags: &[Flag::value("root_guid_file", "FILE", "Root switches of updn, dnup, ftree and dfsssp's up-first pass: switch GUIDs, or CA port GUIDs naming their switch, one a line").short('a').aliases(&["root-guid-file"])],
        access: at!(s => s.routing_files.roots, path, parse_path),
    }
    CnGuidFile "cn_guid_file" {
        section: Section::Routing,
        help: "The file holding the fat-tree compute node guids\nOne guid in each line",
        flags: &[Flag::value("cn_guid_file", "FILE", "Compute-node port GUIDs for ftree, one a line").short('u').aliases(&["cn-guid-file"])],
        access: at!(s => s.routing_files.compute_nodes, path, parse_path),
    }
    IoGuidFile "io_guid_file" {
        section: Section::Routing,
        help: "The file holding the fat-tree I/O node guids\nOne guid in each line.\nIf only io_guid file is provided, the rest of nodes\nare considered as compute nodes.",
        flags: &[Flag::value("io_guid_file", "FILE", "I/O-node port GUIDs for ftree (not compute nodes), one a line").short('G').aliases(&["io-guid-file"])],
        access: at!(s => s.routing_files.io_nodes, path, parse_path),
    }
    MaxReverseHops "max_reverse_hops" {
        section: Section::Routing,
        help: "Number of reverse hops (a switch used the wrong way round) allowed\nfor the I/O nodes' traffic where fat-tree routing has no up/down path,\ne.g. between storage on two top switches (0: none)",
        flags: &[Flag::value("max_reverse_hops", "N", "Reverse hops (a switch used the wrong way round) ftree allows the I/O nodes' traffic where no up/down path exists (default 0)").short('H').aliases(&["max-reverse-hops"])],
        access: at!(s => s.sm.routing_inputs.max_reverse_hops, dec, num),
    }
    GuidRoutingOrderFile "guid_routing_order_file" {
        section: Section::Routing,
        help: "The file holding guid routing order guids (for MinHop, Up/Down, Down/Up and dfsssp)",
        flags: &[Flag::value("guid_routing_order_file", "FILE", "Port GUIDs routed first, in this order, by minhop, updn, dnup and dfsssp, one a line").short('X').aliases(&["guid-routing-order-file"])],
        access: at!(s => s.routing_files.order, path, parse_path),
    }

    // ---- HANDOVER - MULTIPLE SMs OPTIONS ----
    SmPriority "sm_priority" {
        section: Section::Handover,
        help: "SM priority used for deciding who is the master\nRange goes from 0 (lowest priority) to 15 (highest).",
        flags: &[Flag::value("priority", "PRIORITY", "SM priority, 0 (lowest) to 15").short('p')],
        apply: Apply::Live(Setter::Priority),
        access: at!(s => s.sm.priority, dec, num),
        engine_field: Some(ConfigField::Priority),
    }
    SminfoPollingTimeout "sminfo_polling_timeout" {
        section: Section::Handover,
        help: "Timeout in [msec] between two polls of active master SM",
        flags: &[Flag::value("polling-timeout", "MS", "Standby: milliseconds between polls of the master")],
        access: at!(s => s.sm.polling_timeout, millis, parse_millis),
        engine_field: Some(ConfigField::PollingTimeout),
    }
    PollingRetryNumber "polling_retry_number" {
        section: Section::Handover,
        help: "Number of failing polls of remote SM that declares it dead",
        flags: &[Flag::value("polling-retries", "N", "Standby: the master is dead after N + 1 unanswered polls in a row, OpenSM 3.3's count; an unanswered poll is re-probed at once, after the transaction timeout, not a polling period later")],
        access: at!(s => s.sm.polling_retries, dec, num),
    }

    // ---- TIMING AND THREADING OPTIONS ----
    MaxWireSmps "max_wire_smps" {
        section: Section::Timing,
        help: "Maximum number of SMPs sent in parallel at the start of a sweep\n(ibsmd widens the window from there up to max_wire_smps_limit)",
        flags: &[Flag::value("maxsmps", "N", "SMPs in flight at the start of a sweep; ibsmd widens the window from there").short('n')],
        apply: Apply::Live(Setter::MaxWireSmps),
        access: at!(s => s.sm.max_wire_smps, dec, num),
        engine_field: Some(ConfigField::MaxWireSmps),
    }
    TransactionTimeout "transaction_timeout" {
        section: Section::Timing,
        help: "The maximum time in [msec] allowed for a transaction to complete",
        flags: &[Flag::value("timeout", "MS", "SMP transaction timeout in milliseconds").short('t')],
        access: at!(s => s.sm.transaction_timeout, millis, parse_millis),
        engine_field: Some(ConfigField::TransactionTimeout),
    }
    TransactionRetries "transaction_retries" {
        section: Section::Timing,
        help: "The maximum number of retries allowed for a transaction to complete",
        flags: &[Flag::value("retries", "N", "SMP re-sends before giving up")],
        access: at!(s => s.sm.transaction_retries, dec, num),
    }

    // ---- MISC OPTIONS ----
    NoClientsRereg "no_clients_rereg" {
        section: Section::Misc,
        help: "Do not ask ports to re-register with the SA (PortInfo.ClientReregister)",
        access: at!(s => s.sm.client_reregister, not, parse_not),
    }
    BabblingPortPolicy "babbling_port_policy" {
        section: Section::Misc,
        help: "Babbling Port Policy: disable the link of a port marked unhealthy for flapping\nor for a trap flood, and enable it again after the quiet period",
        flags: &[Flag::switch("babbling-port-policy", "TRUE", "Disable the link of a port marked unhealthy for flapping or a trap flood, and enable it again after the quiet period")],
        access: at!(s => s.sm.health.babbling_port_policy, boolean, parse_bool),
    }

    // ---- PERFORMANCE MANAGER OPTIONS ----
    Perfmgr "perfmgr" {
        section: Section::PerfMgr,
        help: "Run the performance manager (as Master, after SUBNET UP)",
        flags: &[Flag::switch("perfmgr", "TRUE", "Run the performance manager: as Master, read every port's counters each perfmgr_sweep_time_s, shown by the metrics endpoint")],
        access: at!(s => s.perfmgr, boolean, parse_bool),
    }
    PerfmgrSweepTimeS "perfmgr_sweep_time_s" {
        section: Section::PerfMgr,
        help: "Time in seconds between the starts of two counter sweeps",
        flags: &[Flag::value("perfmgr_sweep_time_s", "SECS", "Seconds between counter sweeps (default 180)")],
        access: at!(s => s.perf.sweep_time, secs, parse_secs),
        engine_field: Some(ConfigField::PerfmgrSweepTime),
    }
    PerfmgrMaxOutstandingQueries "perfmgr_max_outstanding_queries" {
        section: Section::PerfMgr,
        help: "Most PerfMgt queries in flight at once",
        access: at!(s => s.perf.max_outstanding_queries, dec, num),
        engine_field: Some(ConfigField::PerfmgrMaxOutstandingQueries),
    }
    PerfmgrIgnoreCas "perfmgr_ignore_cas" {
        section: Section::PerfMgr,
        help: "Read switch ports only, not channel adapters",
        access: at!(s => s.perf.ignore_cas, boolean, parse_bool),
    }
    PerfmgrXmitWaitLog "perfmgr_xmit_wait_log" {
        section: Section::PerfMgr,
        help: "Report ports whose PortXmitWait grows by more than perfmgr_xmit_wait_threshold in one sweep",
        access: at!(s => s.perfmgr_xmit_wait_log, boolean, parse_bool),
    }
    PerfmgrXmitWaitThreshold "perfmgr_xmit_wait_threshold" {
        section: Section::PerfMgr,
        help: "PortXmitWait growth per sweep above which a port is reported",
        access: at!(s => s.perfmgr_xmit_wait_threshold, dec, num),
    }

    // ---- DEBUG FEATURES ----
    LogFlags "log_flags" {
        section: Section::Debug,
        help: "The log flags used: 0x01 errors, 0x02 info, 0x04 verbose (debug),\n0x08 and up trace; 0 disables the log",
        flags: &[
            Flag::value("D", "FLAGS", "OpenSM log flags: 0x01 errors, 0x02 info, 0x04 verbose (debug), 0x08 and up trace; 0 none").short('D'),
            Flag::switch("max-verbose", "0xFF", "Most log (OpenSM's -V: log_flags 0xFF)").short('V'),
            Flag::count("verbose", more_log, "More log: -v debug (events, light sweeps), -vv trace").short('v'),
        ],
        apply: Apply::Live(Setter::LogFlags),
        access: at!(s => s.log_flags, hex8, num),
    }
    LogFile "log_file" {
        section: Section::Debug,
        help: "Log file to be used (stderr, stdout: those streams; reopened on SIGUSR1)",
        flags: &[Flag::value("log_file", "FILE", "Log to FILE instead of stderr (`stdout`, `stderr`: those streams)").short('f').aliases(&["log-file"])],
        access: at!(s => s.log_file, log_target, parse_log_target),
    }
    AccumLogFile "accum_log_file" {
        section: Section::Debug,
        help: "If TRUE will accumulate the log over multiple OpenSM sessions",
        flags: &[Flag::switch("erase_log_file", "FALSE", "Empty the log file when opening it instead of appending").short('e')],
        access: at!(s => s.accum_log_file, boolean, parse_bool),
    }
    DumpFilesDir "dump_files_dir" {
        section: Section::Debug,
        help: "The directory to hold the file ibsmd dumps ((null): no dumps)",
        flags: &[Flag::value("dump-dir", "DIR", "Write OpenSM's dumps (opensm-lfts.dump, opensm-subnet.lst, opensm-mfts.dump, opensm-sl2vl.dump, guid2lid) into DIR after every heavy sweep")],
        access: at!(s => s.dump_dir, path, parse_path),
    }

    // ---- IBSMD OPTIONS (not OpenSM's) ----
    MaxWireSmpsLimit "max_wire_smps_limit" {
        section: Section::Ibsmd,
        help: "Most SMPs in flight (0: 256, or 128 under ibsim)",
        flags: &[Flag::value("max-wire-smps-limit", "N", "Most SMPs in flight (0: 256, or 128 under ibsim whose preload can deadlock on long send bursts)").aliases(&["max-wire-smps"])],
        access: at!(s => s.max_wire_smps_limit, dec, num),
    }
    RoutingThreads "routing_threads" {
        section: Section::Ibsmd,
        help: "Worker threads for routing (0: one per CPU)",
        flags: &[Flag::value("routing-threads", "N", "Worker threads for routing (0: one per CPU)")],
        access: at!(s => s.routing_threads, dec, num),
        engine_field: Some(ConfigField::RoutingThreads),
    }
    RerouteOnLoss "reroute_on_loss" {
        section: Section::Ibsmd,
        help: "After a lost cable or node repair only the broken routes (FALSE: recompute all)",
        flags: &[Flag::switch("no-reroute-on-loss", "FALSE", "After a lost cable or node, recompute every route (OpenSM's behaviour) instead of repairing only the broken ones")],
        access: at!(s => s.sm.reroute_on_loss, boolean, parse_bool),
    }
    RebalanceAfter "rebalance_after" {
        section: Section::Ibsmd,
        help: "Recompute repaired routes once the fabric has been quiet this many seconds (0: never)",
        flags: &[Flag::value("rebalance-after", "SECS", "Recompute repaired routes once no topology change has been seen for SECS (0: never on its own)")],
        access: at!(s => s.sm.rebalance_after, opt_secs, parse_opt_secs),
    }
    Guid2lidFile "guid2lid_file" {
        section: Section::Ibsmd,
        help: "Keep LIDs across restarts in this file (OpenSM's guid2lid format)",
        flags: &[Flag::value("guid2lid", "FILE", "Keep LIDs across restarts in FILE (OpenSM's guid2lid format)")],
        access: at!(s => s.guid2lid, path, parse_path),
    }
    HealthFlapCount "health_flap_count" {
        section: Section::Ibsmd,
        help: "A port whose link goes down more than this many times in health_flap_window\nis unhealthy: routed around until quiet (0: off)",
        flags: &[Flag::value("flap-count", "N", "A port whose link goes down more than N times in --flap-window is unhealthy and routed around until quiet (0: off; default 5)")],
        access: at!(s => s.sm.health.flap_count, dec, num),
    }
    HealthFlapWindow "health_flap_window" {
        section: Section::Ibsmd,
        help: "The flap window in [sec]",
        flags: &[Flag::value("flap-window", "SECS", "The flap window (default 60)")],
        access: at!(s => s.sm.health.flap_window, secs, parse_secs),
        engine_field: Some(ConfigField::HealthFlapWindow),
    }
    HealthTrapLimit "health_trap_limit" {
        section: Section::Ibsmd,
        help: "A port sending more than this many traps in health_trap_window is unhealthy:\nits traps are ignored, its link routed around (0: off)",
        flags: &[Flag::value("trap-limit", "N", "A port sending more than N traps in --trap-window is unhealthy: its traps are ignored (0: off; default 100)")],
        access: at!(s => s.sm.health.trap_limit, dec, num),
    }
    HealthTrapWindow "health_trap_window" {
        section: Section::Ibsmd,
        help: "The trap window in [sec]",
        flags: &[Flag::value("trap-window", "SECS", "The trap window (default 10)")],
        access: at!(s => s.sm.health.trap_window, secs, parse_secs),
        engine_field: Some(ConfigField::HealthTrapWindow),
    }
    HealthNoAnswerSweeps "health_no_answer_sweeps" {
        section: Section::Ibsmd,
        help: "A port about or across which SMPs are lost in this many heavy sweeps in a row\nis unhealthy: no longer explored (0: off)",
        flags: &[Flag::value("no-answer-sweeps", "N", "A port about or across which SMPs are lost in N heavy sweeps in a row is unhealthy and no longer explored (0: off; default 3)")],
        access: at!(s => s.sm.health.no_answer_sweeps, dec, num),
    }
    HealthQuietPeriod "health_quiet_period" {
        section: Section::Ibsmd,
        help: "An unhealthy port is taken back after this many [sec] without trouble",
        flags: &[Flag::value("unhealthy-quiet-period", "SECS", "An unhealthy port is taken back after SECS without trouble (default 60)")],
        access: at!(s => s.sm.health.quiet_period, secs, parse_secs),
        engine_field: Some(ConfigField::HealthQuietPeriod),
    }
    HealthRebootCount "health_reboot_count" {
        section: Section::Ibsmd,
        help: "A node seen rebooting this many times in health_reboot_window (an end port\nthat held a LID read back with LID 0) is unhealthy (0: off)",
        flags: &[Flag::value("reboot-count", "N", "A node seen rebooting N times in --reboot-window is unhealthy (0: off; default 3)")],
        access: at!(s => s.sm.health.reboot_count, dec, num),
    }
    HealthRebootWindow "health_reboot_window" {
        section: Section::Ibsmd,
        help: "The reboot window in [sec]",
        flags: &[Flag::value("reboot-window", "SECS", "The reboot window (default 600)")],
        access: at!(s => s.sm.health.reboot_window, secs, parse_secs),
        engine_field: Some(ConfigField::HealthRebootWindow),
    }
    HealthSetErrCount "health_set_err_count" {
        section: Section::Ibsmd,
        help: "A port to which this many SMP Sets are refused or lost in\nhealth_set_err_window is unhealthy (0: off)",
        flags: &[Flag::value("set-err-count", "N", "A port to which N Sets are refused or lost in --set-err-window is unhealthy (0: off; default 5)")],
        access: at!(s => s.sm.health.set_err_count, dec, num),
    }
    HealthSetErrWindow "health_set_err_window" {
        section: Section::Ibsmd,
        help: "The SetErr window in [sec]",
        flags: &[Flag::value("set-err-window", "SECS", "The SetErr window (default 60)")],
        access: at!(s => s.sm.health.set_err_window, secs, parse_secs),
        engine_field: Some(ConfigField::HealthSetErrWindow),
    }
    HealthActionReboot "health_action_reboot" {
        section: Section::Ibsmd,
        help: "What to do with a node rebooting health_reboot_count times:\nignore, report, isolate, disable or no_discover (default report)",
        flags: &[Flag::value("action-reboot", "ACTION", "What to do with a node rebooting health_reboot_count times: ignore, report, isolate, disable, no_discover (default report)")],
        access: at!(s => s.sm.health.actions.reboot, action, parse_action),
    }
    HealthActionFlapping "health_action_flapping" {
        section: Section::Ibsmd,
        help: "What to do with a flapping link:\nignore, report, isolate, disable or no_discover (default isolate)",
        flags: &[Flag::value("action-flapping", "ACTION", "What to do with a flapping link: ignore, report, isolate, disable, no_discover (default isolate)")],
        access: at!(s => s.sm.health.actions.flapping, action, parse_action),
    }
    HealthActionUnresponsive "health_action_unresponsive" {
        section: Section::Ibsmd,
        help: "What to do with a port that stops answering:\nignore, report, isolate, disable or no_discover (default no_discover)",
        flags: &[Flag::value("action-unresponsive", "ACTION", "What to do with a port that stops answering: ignore, report, isolate, disable, no_discover (default no_discover)")],
        access: at!(s => s.sm.health.actions.unresponsive, action, parse_action),
    }
    HealthActionNoisyTraps "health_action_noisy_traps" {
        section: Section::Ibsmd,
        help: "What to do with a port flooding traps:\nignore, report, isolate, disable or no_discover (default isolate)",
        flags: &[Flag::value("action-noisy-traps", "ACTION", "What to do with a port flooding traps: ignore, report, isolate, disable, no_discover (default isolate)")],
        access: at!(s => s.sm.health.actions.noisy_traps, action, parse_action),
    }
    HealthActionSetErr "health_action_set_err" {
        section: Section::Ibsmd,
        help: "What to do with a port whose Sets fail:\nignore, report, isolate, disable or no_discover (default report)",
        flags: &[Flag::value("action-set-err", "ACTION", "What to do with a port whose Sets fail: ignore, report, isolate, disable, no_discover (default report)")],
        access: at!(s => s.sm.health.actions.set_err, action, parse_action),
    }
    HealthActionManual "health_action_manual" {
        section: Section::Ibsmd,
        help: "What to do with a port isolated with `ibsmd port isolate`:\nignore, report, isolate, disable or no_discover (default isolate)",
        flags: &[Flag::value("action-manual", "ACTION", "What to do with a port isolated with `ibsmd port isolate`: ignore, report, isolate, disable, no_discover (default isolate)")],
        access: at!(s => s.sm.health.actions.manual, action, parse_action),
    }
    HealthActionHighBer "health_action_high_ber" {
        section: Section::Ibsmd,
        help: "What to do with a port whose error counters pass perfmgr_error_thresholds:\nignore, report, isolate, disable or no_discover (default isolate)",
        flags: &[Flag::value("action-high-ber", "ACTION", "What to do with a port whose error counters pass perfmgr_error_thresholds: ignore, report, isolate, disable, no_discover (default isolate)")],
        access: at!(s => s.sm.health.actions.high_ber, action, parse_action),
    }
    HealthIsolationCapMin "health_isolation_cap_min" {
        section: Section::Ibsmd,
        help: "Automatic isolations are capped at the larger of this many ports and\nhealth_isolation_cap_permille of the fabric's ports; beyond, only reported",
        flags: &[Flag::value("isolation-cap-min", "N", "Automatic isolations are capped at max(N, --isolation-cap-permille of the ports); beyond, ports are only reported (default 10)")],
        access: at!(s => s.sm.health.isolation_cap.min_ports, dec, num),
    }
    HealthIsolationCapPermille "health_isolation_cap_permille" {
        section: Section::Ibsmd,
        help: "The isolation cap on a large fabric, in thousandths of its ports (5: 0.5 %)",
        flags: &[Flag::value("isolation-cap-permille", "N", "The isolation cap in thousandths of the fabric's ports (default 5: 0.5 %)")],
        access: at!(s => s.sm.health.isolation_cap.per_mille, dec, num),
    }
    IsolatedPortsFile "isolated_ports_file" {
        section: Section::Ibsmd,
        help: "Keep isolated ports across restarts and failovers in this file ((null):\nibsm-isolated-ports beside guid2lid_file, else in dump_files_dir, else nowhere)",
        flags: &[Flag::value("isolated-ports", "FILE", "Keep isolated ports across restarts and failovers in FILE (default: ibsm-isolated-ports beside --guid2lid, else in --dump-dir)")],
        access: at!(s => s.isolated_ports, path, parse_path),
    }
    Sa "sa" {
        section: Section::Ibsmd,
        help: "Serve Subnet Administration (FALSE: SA requests get \"unsupported class\")",
        flags: &[
            Flag::switch("no-sa", "FALSE", "Do not serve Subnet Administration: SA requests get \"unsupported class\""),
            Flag::switch("sa", "TRUE", "Serve Subnet Administration (the default; kept for old command lines)"),
        ],
        access: at!(s => s.sm.sa, boolean, parse_bool),
    }
    PollingRetriesAsFailures "polling_retries_as_failures" {
        section: Section::Ibsmd,
        help: "Read polling_retry_number N as the failed polls that declare the master dead\n(N, 0 counting as 1); FALSE: OpenSM 3.3's count, N + 1 unanswered polls",
        flags: &[Flag::switch("polling-retries-as-failures", "TRUE", "Read --polling-retries / polling_retry_number N as opensm.conf words it: N failed polls declare the master dead (0 counts as 1), one fewer than OpenSM 3.3 waits for")],
        access: at!(s => s.polling_retries_as_failures, boolean, parse_bool),
    }
    TopologyRefFile "topology_ref_file" {
        section: Section::Ibsmd,
        help: "Reference topology (ibnetdiscover's output of the fabric as planned): every heavy\nsweep compares the fabric with it by GUID and port and reports missing, unexpected,\nmiswired and degraded nodes and cables once per change ((null): no comparison); re-read at SIGHUP",
        flags: &[Flag::value("topology-ref", "FILE", "Compare the fabric at every heavy sweep with FILE (ibnetdiscover's format, as ibsm-netdiscover prints it) by GUID and port; differences go to the log, events, status and metrics once per change")],
        access: at!(s => s.topology_ref, path, parse_path),
        apply: Apply::Live(Setter::TopologyRef),
    }
    TopologyRefPolicy "topology_ref_policy" {
        section: Section::Ibsmd,
        help: "What a difference from topology_ref_file leads to: report, or isolate\n(report, and route nothing over a miswired or extra cable)",
        flags: &[Flag::value("topology-ref-policy", "POLICY", "report (default): differences are reported; isolate: reported, and a miswired or extra cable carries no routes")],
        access: at!(s => s.topology_ref_policy, topo_policy, parse_topo_policy),
        apply: Apply::Live(Setter::TopologyRef),
    }
    PerfmgrErrorThresholds "perfmgr_error_thresholds" {
        section: Section::Ibsmd,
        help: "Counter growth per counter sweep above which PerfMgr reports a port, as\nperfquery's names: SymbolErrorCounter=10,LinkDownedCounter=0 ((null): none)",
        access: at!(s => s.perf.thresholds, spell::thresholds, spell::parse_thresholds),
    }
    RestAddress "rest_address" {
        section: Section::Ibsmd,
        help: "Serve the partition API (UFM's REST routes for P_Key members, as\nMellanox/ib-kubernetes's UFM plugin sends them) on this HOST:PORT ((null): off);\nneeds partition_config_file, rest_credentials_file and a certificate\n(or rest_insecure)",
        flags: &[Flag::value("rest", "ADDR", "Serve the partition API (UFM's /ufmRest routes that add and remove port GUIDs from P_Keys) on ADDR (HOST:PORT; port 0 picks one, logged); changes are written to the partitions file and applied at the next sweep")],
        access: at!(s => s.rest.address, text, parse_text),
    }
    RestCredentialsFile "rest_credentials_file" {
        section: Section::Ibsmd,
        help: "The partition API's users: user:password lines; must be readable by its owner only",
        flags: &[Flag::value("rest-credentials", "FILE", "The partition API's users for HTTP basic auth: user:password lines (ibsmd refuses a file group or others can read)")],
        access: at!(s => s.rest.credentials, path, parse_path),
    }
    RestTlsCertFile "rest_tls_cert_file" {
        section: Section::Ibsmd,
        help: "The partition API's TLS certificate chain (PEM)",
        flags: &[Flag::value("rest-cert", "FILE", "The partition API's TLS certificate chain (PEM); with --rest-key the API is HTTPS")],
        access: at!(s => s.rest.cert, path, parse_path),
    }
    RestTlsKeyFile "rest_tls_key_file" {
        section: Section::Ibsmd,
        help: "The partition API's TLS private key (PEM); must be readable by its owner only",
        flags: &[Flag::value("rest-key", "FILE", "The private key of --rest-cert (PEM: PKCS#8, PKCS#1 or SEC1; owner-only)")],
        access: at!(s => s.rest.key, path, parse_path),
    }
    RestInsecure "rest_insecure" {
        section: Section::Ibsmd,
        help: "Serve the partition API over plain HTTP (passwords in clear) when no\ncertificate is given",
        flags: &[Flag::switch("rest-insecure", "TRUE", "Serve the partition API over plain HTTP without a certificate (passwords cross the network in clear; the UFM plugin then needs UFM_HTTP_SCHEMA=http)")],
        access: at!(s => s.rest.insecure, boolean, parse_bool),
    }

    // ---- the command line only ----
    Ca "ca" {
        flags: &[Flag::value("ca", "NAME", "RDMA device to run on (default: any)")],
        access: at!(s => s.run.ca, text, parse_text),
    }
    Port "port" {
        flags: &[Flag::value("port", "N", "Port number on the device (default: the first whose link is up)")],
        access: at!(s => s.run.port, opt_num, parse_opt_num),
    }
    Once "once" {
        flags: &[Flag::switch("once", "TRUE", "Configure the subnet once, print the summary, exit 0 when it came up").short('o')],
        access: at!(s => s.run.once, boolean, parse_bool),
    }
    TimeLimit "time_limit" {
        flags: &[Flag::value("time-limit", "SECS", "Stop after SECS (--once: give up, exit 1); default 60 with --once, none otherwise")],
        access: at!(s => s.run.time_limit, opt_num, parse_opt_num),
    }
    ControlSocket "control_socket" {
        flags: &[Flag::value("control-socket", "PATH", "Control socket: the daemon listens on it, client commands connect to it (default: $XDG_RUNTIME_DIR/ibsmd.sock, else /run/ibsmd.sock; owner-only)").global()],
        access: at!(s => s.run.control_socket, path, parse_path),
    }
    Metrics "metrics" {
        flags: &[Flag::value("metrics", "ADDR", "Serve Prometheus metrics at http://ADDR/metrics and the JSON status at /status (ADDR as HOST:PORT; port 0 picks one, logged)")],
        access: at!(s => s.run.metrics, text, parse_text),
    }
    PidFile "pid_file" {
        flags: &[Flag::value("pid-file", "FILE", "Write the daemon's PID to FILE (removed when it stops)")],
        access: at!(s => s.run.pid_file, path, parse_path),
    }
    Json "json" {
        flags: &[Flag::switch("json", "TRUE", "One JSON object, the run's summary, as the last line on stdout")],
        access: at!(s => s.run.json, boolean, parse_bool),
    }
    LogFormat "log_format" {
        flags: &[Flag::value("log-format", "FORMAT", "Log line format: text (default) or json")],
        access: at!(s => s.run.log_format, log_format, parse_log_format),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_is_its_own_entry_and_names_and_flags_are_unique() {
        let mut names = std::collections::HashSet::new();
        let mut longs = std::collections::HashSet::new();
        let mut shorts = std::collections::HashSet::new();
        for (i, o) in OPTIONS.iter().enumerate() {
            assert_eq!(o.key as usize, i, "{}", o.name);
            assert_eq!(o.key.spec().name, o.name);
            assert!(names.insert(o.name), "{} twice", o.name);
            for f in o.flags {
                assert!(longs.insert(f.long), "--{} twice", f.long);
                if let Some(c) = f.short {
                    assert!(shorts.insert(c), "-{c} twice");
                }
            }
            // A run-time option must have a file key: a SIGHUP re-reads the file.
            if matches!(o.apply, Apply::Live(_)) {
                assert!(o.in_file(), "{}", o.name);
            }
        }
    }

    #[test]
    fn every_default_reads_back_through_its_own_spelling() {
        let d = Settings::default();
        for o in OPTIONS {
            let mut s = Settings::default();
            (o.access.set)(&mut s, &(o.access.get)(&d)).unwrap();
            assert_eq!(s, d, "{}", o.name);
        }
    }
}
