//! SMInfo (0x0020): state exchanged between SMs for election, polling and handover.

code_enum! {
    /// SMInfo.SMState.
    pub enum SmState: u8 {
        /// Not active.
        NotActive = 0,
        /// Discovering the subnet.
        Discovering = 1,
        /// Standby (polling the master).
        Standby = 2,
        /// Master.
        Master = 3,
    }
}

code_enum! {
    /// The control code carried in the AttributeModifier of SubnSet(SMInfo).
    pub enum SmInfoControl: u32 {
        /// Master -> standby: take over mastership.
        Handover = 1,
        /// Receiver of a HANDOVER -> its sender: acknowledgement.
        Acknowledge = 2,
        /// Master -> other SM: go to NotActive.
        Disable = 3,
        /// Master -> other SM: go to Standby.
        Standby = 4,
        /// Master -> other SM: go to Discovering.
        Discover = 5,
    }
}

impl SmInfoControl {
    /// The SM state the sender of this control must be in for OpenSM to accept it
    /// (Master for all codes except ACKNOWLEDGE, which comes from a Standby SM).
    #[must_use]
    pub fn required_sender_state(self) -> Option<SmState> {
        match self {
            Self::Handover | Self::Disable | Self::Standby | Self::Discover => {
                Some(SmState::Master)
            }
            Self::Acknowledge => Some(SmState::Standby),
            Self::Unknown(_) => None,
        }
    }
}

wire_struct! {
    /// SMInfo (0x0020), 21 bytes. See IBA Vol. 1 §14.2.5.13.
    pub struct SmInfo, view SmInfoView, size 21, label "SMInfo";
    fields {
        /// Port GUID of the SM.
        guid, set_guid: u64 = (0, 0, 64), "IB_SMINFO_GUID_F";
        /// The SM's secret key (0 when withheld).
        sm_key, set_sm_key: u64 = (8, 0, 64), "IB_SMINFO_KEY_F";
        /// Activity counter (a master keeps it moving).
        act_count, set_act_count: u32 = (16, 0, 32), "IB_SMINFO_ACT_F";
        /// Election priority 0..15 (higher wins).
        priority, set_priority: u8 = (20, 0, 4), "IB_SMINFO_PRIO_F";
        /// State of the SM.
        sm_state, set_sm_state: SmState = (20, 4, 4), "IB_SMINFO_STATE_F";
    }
}

impl SmInfo {
    /// Whether `self` wins the election against `other`: higher priority wins, on equal
    /// priority the numerically lower GUID.
    #[must_use]
    pub fn wins_over(&self, other: &Self) -> bool {
        (self.priority, core::cmp::Reverse(self.guid))
            > (other.priority, core::cmp::Reverse(other.guid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: [u8; 21] = [
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x12, 0x34, // GUID
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // SM_Key
        0x00, 0x01, 0x00, 0x00, // ActCount
        0xe3, // priority 14, Master
    ];

    #[test]
    fn decode_and_reencode() {
        let s = SmInfo::parse(&SAMPLE).unwrap();
        assert_eq!(s.guid, 0x0002_c903_0000_1234);
        assert_eq!(s.sm_key, 1);
        assert_eq!(s.act_count, 0x10000);
        assert_eq!(s.priority, 14);
        assert_eq!(s.sm_state, SmState::Master);
        assert_eq!(s.to_bytes(), SAMPLE);
        assert!(SmInfo::parse(&SAMPLE[..20]).is_err());
        let mut v = SmInfoView::new_checked([0u8; 64]).unwrap();
        v.set_sm_state(SmState::Standby);
        v.set_priority(0x1f); // masked to 4 bits
        assert_eq!(v.as_bytes()[20], 0xf2);
    }

    #[test]
    fn election_order() {
        let a = SmInfo {
            guid: 10,
            priority: 5,
            ..SmInfo::default()
        };
        let b = SmInfo {
            guid: 2,
            priority: 5,
            ..SmInfo::default()
        };
        let c = SmInfo {
            guid: 1,
            priority: 4,
            ..SmInfo::default()
        };
        assert!(b.wins_over(&a) && !a.wins_over(&b));
        assert!(a.wins_over(&c) && b.wins_over(&c));
        assert!(!a.wins_over(&a));
    }

    #[test]
    fn control_codes() {
        assert_eq!(SmInfoControl::from(1), SmInfoControl::Handover);
        assert_eq!(u32::from(SmInfoControl::Discover), 5);
        assert_eq!(SmInfoControl::from(9), SmInfoControl::Unknown(9));
        assert_eq!(
            SmInfoControl::Acknowledge.required_sender_state(),
            Some(SmState::Standby)
        );
        assert_eq!(
            SmInfoControl::Disable.required_sender_state(),
            Some(SmState::Master)
        );
    }

    #[test]
    fn generic_properties() {
        crate::attr::testutil::check::<SmInfo>();
    }
}
