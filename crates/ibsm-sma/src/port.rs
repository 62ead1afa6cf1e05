//! The port state machine: logical state (Down, Init, Armed, Active) and physical state,
//! driven by link events from the host and by SubnSet(PortInfo).

/// Logical port state (PortInfo.PortState) of a port; never NoChange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogicalState {
    /// Link down (1).
    Down,
    /// Link up, waiting for the SM (2).
    Init,
    /// Configured, data traffic still blocked (3).
    Armed,
    /// Fully operational (4).
    Active,
}

impl LogicalState {
    /// The PortInfo.PortState code.
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            Self::Down => 1,
            Self::Init => 2,
            Self::Armed => 3,
            Self::Active => 4,
        }
    }
}

/// PortInfo.PortPhysicalState codes the agent uses.
pub mod phys {
    /// Sleep (1).
    pub const SLEEP: u8 = 1;
    /// Polling (2).
    pub const POLLING: u8 = 2;
    /// Disabled (3).
    pub const DISABLED: u8 = 3;
    /// LinkUp (5).
    pub const LINK_UP: u8 = 5;
}

/// What the host must do after a SubnSet changed a port's link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkRequest {
    /// PortState was set to Down: take the link down; it retrains (the host calls
    /// [`Sma::link_up`](crate::Sma::link_up) again once both ends are back).
    Retrain,
    /// PortPhysicalState was set to Disabled: the link stays down until enabled.
    Disable,
    /// PortPhysicalState was set to Polling on a disabled port: the link may train again.
    Enable,
    /// LinkWidthEnabled, LinkSpeedEnabled or LinkSpeedExtEnabled changed on a port whose
    /// state did not change otherwise. Width and speed are negotiated only while a link
    /// trains (Polling, then Configuration), never in LinkUp, so the host retrains the
    /// link (as [`Self::Retrain`]) if [`negotiate`] now gives other values than the active
    /// ones; ibsm-sim does so.
    Renegotiate,
}

/// What a trained link runs at: the PortInfo LinkWidthActive, LinkSpeedActive,
/// LinkSpeedExtActive and LinkSpeedExtActive2 both ends report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinkActive {
    /// LinkWidthActive.
    pub width: ibsm_wire::LinkWidth,
    /// LinkSpeedActive (`Extended` when an extended speed runs).
    pub speed: ibsm_wire::LinkSpeed,
    /// LinkSpeedExtActive (`None` unless an FDR..NDR speed runs).
    pub speed_ext: ibsm_wire::LinkSpeedExt,
    /// LinkSpeedExtActive2 (1: XDR).
    pub speed_ext2: u8,
}

impl LinkActive {
    /// The active values `pi` reports now.
    #[must_use]
    pub fn of(pi: &ibsm_wire::PortInfo) -> Self {
        Self {
            width: pi.link_width_active,
            speed: pi.link_speed_active,
            speed_ext: pi.link_speed_ext_active,
            speed_ext2: pi.link_speed_ext_active2,
        }
    }
}

/// Link training's outcome for two ports cabled together: the widest width and the
/// fastest lane speed both support and enable (extended speeds above the base ones,
/// XDR's LinkSpeedExt*2 above those). `None` when they share no width or no speed:
/// such a link does not train.
#[must_use]
pub fn negotiate(a: &ibsm_wire::PortInfo, b: &ibsm_wire::PortInfo) -> Option<LinkActive> {
    use ibsm_wire::{LinkSpeed, LinkSpeedExt, LinkSpeedExtMask, LinkSpeedMask, LinkWidthMask};
    let width = LinkWidthMask(
        a.link_width_enabled.bits()
            & a.link_width_supported.bits()
            & b.link_width_enabled.bits()
            & b.link_width_supported.bits(),
    )
    .widest()?;
    let mut out = LinkActive {
        width,
        speed: LinkSpeed::Extended,
        speed_ext: LinkSpeedExt::None,
        speed_ext2: 0,
    };
    let ext2 = a.link_speed_ext_enabled2
        & a.link_speed_ext_supported2
        & b.link_speed_ext_enabled2
        & b.link_speed_ext_supported2;
    if ext2 & 1 != 0 {
        out.speed_ext2 = 1;
        return Some(out);
    }
    if let Some(s) = LinkSpeedExtMask(
        a.link_speed_ext_enabled.bits()
            & a.link_speed_ext_supported.bits()
            & b.link_speed_ext_enabled.bits()
            & b.link_speed_ext_supported.bits(),
    )
    .fastest()
    {
        out.speed_ext = s;
        return Some(out);
    }
    out.speed = LinkSpeedMask(
        a.link_speed_enabled.bits()
            & a.link_speed_supported.bits()
            & b.link_speed_enabled.bits()
            & b.link_speed_supported.bits(),
    )
    .fastest()?;
    Some(out)
}

/// A rejected SubnSet field (the SMA answers with status 0x001C and changes nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InvalidSet;

/// One port's link: logical and physical state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PortLink {
    /// Logical state.
    pub state: LogicalState,
    /// Physical state code (see [`phys`]).
    pub phys: u8,
    /// LinkDownDefaultState (1 Sleep, 2 Polling): the physical state after a link loss.
    pub link_down_default: u8,
    /// Whether the host reports the physical link as trained (cable and peer present).
    pub connected: bool,
    /// A switch's management port 0: always up, never changes with link events.
    pub management: bool,
}

/// A logical state change caused by the link itself (not by a SubnSet), which sets a
/// switch's PortStateChange and may raise trap 128.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinkTransition {
    /// State before.
    pub from: LogicalState,
    /// State after.
    pub to: LogicalState,
}

impl PortLink {
    /// An external port after power-on: Down, Polling, nothing connected.
    #[must_use]
    pub const fn new_external() -> Self {
        Self {
            state: LogicalState::Down,
            phys: phys::POLLING,
            link_down_default: phys::POLLING,
            connected: false,
            management: false,
        }
    }

    /// A switch's port 0 after power-on: LinkUp, Init.
    #[must_use]
    pub const fn new_management() -> Self {
        Self {
            state: LogicalState::Init,
            phys: phys::LINK_UP,
            link_down_default: phys::POLLING,
            connected: true,
            management: true,
        }
    }

    /// The host reports the physical link trained. A Down port that is not disabled goes
    /// to Init.
    pub fn link_up(&mut self) -> Option<LinkTransition> {
        if self.management {
            return None;
        }
        self.connected = true;
        if self.phys == phys::DISABLED || self.state != LogicalState::Down {
            return None;
        }
        self.phys = phys::LINK_UP;
        self.state = LogicalState::Init;
        Some(LinkTransition {
            from: LogicalState::Down,
            to: LogicalState::Init,
        })
    }

    /// The host reports the physical link lost. The port goes Down.
    pub fn link_down(&mut self) -> Option<LinkTransition> {
        if self.management {
            return None;
        }
        self.connected = false;
        if self.phys != phys::DISABLED {
            self.phys = self.link_down_default;
        }
        let from = self.state;
        if from == LogicalState::Down {
            return None;
        }
        self.state = LogicalState::Down;
        Some(LinkTransition {
            from,
            to: LogicalState::Down,
        })
    }

    /// An Armed port received a data packet: it becomes Active.
    pub fn data_packet(&mut self) -> Option<LinkTransition> {
        if self.state == LogicalState::Armed {
            self.state = LogicalState::Active;
            return Some(LinkTransition {
                from: LogicalState::Armed,
                to: LogicalState::Active,
            });
        }
        None
    }

    /// Validates the link fields of a SubnSet(PortInfo) against the current state
    /// without changing anything: PortState 0 (no change), 1 (Down, any state),
    /// 3 (Armed, from Init or Armed), 4 (Active, from Armed or Active); physical state
    /// 0, 2 (Polling) or 3 (Disabled); LinkDownDefaultState 0, 1 or 2. A switch's port 0
    /// accepts only PortState changes other than Down, and ignores the physical fields.
    ///
    /// # Errors
    /// [`InvalidSet`] for any other value or transition.
    pub const fn validate(
        &self,
        state: u8,
        phys_req: u8,
        down_default: u8,
    ) -> Result<(), InvalidSet> {
        let state_ok = match state {
            0 => true,
            1 => !self.management,
            3 => matches!(self.state, LogicalState::Init | LogicalState::Armed),
            4 => matches!(self.state, LogicalState::Armed | LogicalState::Active),
            _ => false,
        };
        let phys_ok = self.management || matches!(phys_req, 0 | 2 | 3);
        let dd_ok = self.management || matches!(down_default, 0..=2);
        if state_ok && phys_ok && dd_ok {
            Ok(())
        } else {
            Err(InvalidSet)
        }
    }

    /// Applies fields that passed [`Self::validate`]. Returns what the host must do with
    /// the link, if anything.
    pub fn apply(&mut self, state: u8, phys_req: u8, down_default: u8) -> Option<LinkRequest> {
        if self.management {
            match state {
                3 => self.state = LogicalState::Armed,
                4 => self.state = LogicalState::Active,
                _ => {}
            }
            return None;
        }
        if down_default != 0 {
            self.link_down_default = down_default;
        }
        let mut req = None;
        match state {
            1 => {
                self.state = LogicalState::Down;
                if self.phys != phys::DISABLED {
                    self.phys = phys::POLLING;
                    req = Some(LinkRequest::Retrain);
                }
            }
            3 => self.state = LogicalState::Armed,
            4 => self.state = LogicalState::Active,
            _ => {}
        }
        match phys_req {
            3 => {
                self.state = LogicalState::Down;
                self.phys = phys::DISABLED;
                req = Some(LinkRequest::Disable);
            }
            2 if self.phys == phys::DISABLED => {
                self.phys = phys::POLLING;
                req = Some(LinkRequest::Enable);
            }
            _ => {}
        }
        req
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up() -> PortLink {
        let mut p = PortLink::new_external();
        assert!(p.link_up().is_some());
        p
    }

    #[test]
    fn link_events() {
        let mut p = PortLink::new_external();
        assert_eq!(p.state, LogicalState::Down);
        assert_eq!(
            p.link_up(),
            Some(LinkTransition {
                from: LogicalState::Down,
                to: LogicalState::Init
            })
        );
        assert_eq!(p.phys, phys::LINK_UP);
        assert_eq!(p.link_up(), None);
        assert!(p.link_down().is_some());
        assert_eq!((p.state, p.phys), (LogicalState::Down, phys::POLLING));
        assert_eq!(p.link_down(), None);
    }

    #[test]
    fn legal_and_illegal_sets() {
        let p = up();
        assert!(p.validate(0, 0, 0).is_ok());
        assert!(p.validate(3, 0, 0).is_ok());
        assert!(p.validate(4, 0, 0).is_err(), "Init -> Active skips Armed");
        assert!(p.validate(2, 0, 0).is_err(), "Init is never set");
        assert!(p.validate(5, 0, 0).is_err());
        assert!(p.validate(1, 0, 0).is_ok());
        let mut a = p;
        a.apply(3, 0, 0);
        assert!(a.validate(3, 0, 0).is_ok());
        assert!(a.validate(4, 0, 0).is_ok());
        a.apply(4, 0, 0);
        assert_eq!(a.state, LogicalState::Active);
        assert!(a.validate(3, 0, 0).is_err(), "Active -> Armed");
        assert!(a.validate(4, 0, 0).is_ok());
        let d = PortLink::new_external();
        assert!(d.validate(3, 0, 0).is_err());
        assert!(d.validate(4, 0, 0).is_err());
        assert!(p.validate(0, 1, 0).is_err());
        assert!(p.validate(0, 5, 0).is_err());
        assert!(p.validate(0, 0, 3).is_err());
    }

    #[test]
    fn set_down_retrains_and_disable_sticks() {
        let mut p = up();
        assert_eq!(p.apply(1, 0, 0), Some(LinkRequest::Retrain));
        assert_eq!(p.state, LogicalState::Down);
        assert!(p.link_up().is_some());
        assert_eq!(p.apply(0, 3, 0), Some(LinkRequest::Disable));
        assert_eq!((p.state, p.phys), (LogicalState::Down, phys::DISABLED));
        assert_eq!(p.link_up(), None, "disabled ports stay down");
        assert_eq!(p.apply(0, 2, 0), Some(LinkRequest::Enable));
        assert!(p.link_up().is_some());
    }

    #[test]
    fn link_down_default_state() {
        let mut p = up();
        p.apply(0, 0, 1);
        p.link_down();
        assert_eq!(p.phys, phys::SLEEP);
    }

    #[test]
    fn armed_goes_active_on_data() {
        let mut p = up();
        assert_eq!(p.data_packet(), None);
        p.apply(3, 0, 0);
        assert!(p.data_packet().is_some());
        assert_eq!(p.state, LogicalState::Active);
    }

    #[test]
    fn negotiation_takes_the_best_both_enable() {
        use ibsm_wire::{
            LinkSpeed, LinkSpeedExt, LinkSpeedExtMask as E, LinkSpeedMask as S, LinkWidth,
            LinkWidthMask as W, PortInfo,
        };
        let ndr = PortInfo {
            link_width_supported: W::X1 | W::X4,
            link_width_enabled: W::X1 | W::X4,
            link_speed_supported: S::SDR | S::DDR | S::QDR,
            link_speed_enabled: S::SDR | S::DDR | S::QDR,
            link_speed_ext_supported: E::FDR | E::EDR | E::HDR | E::NDR,
            link_speed_ext_enabled: E::FDR | E::EDR | E::HDR | E::NDR,
            ..PortInfo::default()
        };
        let got = |a: &PortInfo, b: &PortInfo| {
            negotiate(a, b).map(|x| (x.width, x.speed, x.speed_ext, x.speed_ext2))
        };
        assert_eq!(
            got(&ndr, &ndr),
            Some((LinkWidth::X4, LinkSpeed::Extended, LinkSpeedExt::Ndr, 0))
        );
        // One end enables less: the link trains to what both enable.
        let mut less = ndr;
        less.link_width_enabled = W::X1;
        less.link_speed_ext_enabled = E::FDR | E::EDR;
        assert_eq!(
            got(&ndr, &less),
            Some((LinkWidth::X1, LinkSpeed::Extended, LinkSpeedExt::Edr, 0))
        );
        // Enabled bits a port does not support do not count.
        let mut qdr = ndr;
        qdr.link_speed_ext_supported = E(0);
        qdr.link_speed_enabled = S::SDR | S::DDR;
        assert_eq!(
            got(&qdr, &ndr),
            Some((LinkWidth::X4, LinkSpeed::Ddr, LinkSpeedExt::None, 0))
        );
        // XDR (LinkSpeedExt*2) above everything, only where both enable it.
        let mut xdr = ndr;
        (xdr.link_speed_ext_supported2, xdr.link_speed_ext_enabled2) = (1, 1);
        assert_eq!(got(&xdr, &xdr).map(|x| x.3), Some(1));
        assert_eq!(got(&xdr, &ndr).map(|x| x.2), Some(LinkSpeedExt::Ndr));
        // Nothing in common: no training.
        let mut x4 = ndr;
        x4.link_width_enabled = W::X4;
        assert_eq!(got(&x4, &less), None);
        let mut sdr = qdr;
        sdr.link_speed_enabled = S::SDR;
        let mut ddr = qdr;
        ddr.link_speed_enabled = S::DDR;
        assert_eq!(got(&sdr, &ddr), None);
    }

    #[test]
    fn management_port() {
        let mut m = PortLink::new_management();
        assert_eq!(m.link_down(), None);
        assert!(m.validate(1, 0, 0).is_err());
        assert!(m.validate(3, 7, 9).is_ok());
        m.apply(3, 0, 0);
        m.apply(4, 0, 0);
        assert_eq!(m.state, LogicalState::Active);
    }
}
