//! TEMPORARY stand-in for ibsm-wire's SMInfo until it lands there; replaced on rebase.

/// SMInfo.SMState.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum SmState {
    /// 0.
    #[default]
    NotActive,
    /// 1.
    Discovering,
    /// 2.
    Standby,
    /// 3.
    Master,
    /// Other.
    Unknown(u8),
}

impl From<u8> for SmState {
    fn from(v: u8) -> Self {
        match v {
            0 => Self::NotActive,
            1 => Self::Discovering,
            2 => Self::Standby,
            3 => Self::Master,
            o => Self::Unknown(o),
        }
    }
}
impl From<SmState> for u8 {
    fn from(v: SmState) -> u8 {
        match v {
            SmState::NotActive => 0,
            SmState::Discovering => 1,
            SmState::Standby => 2,
            SmState::Master => 3,
            SmState::Unknown(o) => o,
        }
    }
}

/// SubnSet(SMInfo) control codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SmInfoControl {
    /// 1.
    Handover,
    /// 2.
    Acknowledge,
    /// 3.
    Disable,
    /// 4.
    Standby,
    /// 5.
    Discover,
    /// Other.
    Unknown(u32),
}
impl From<u32> for SmInfoControl {
    fn from(v: u32) -> Self {
        match v {
            1 => Self::Handover,
            2 => Self::Acknowledge,
            3 => Self::Disable,
            4 => Self::Standby,
            5 => Self::Discover,
            o => Self::Unknown(o),
        }
    }
}
impl From<SmInfoControl> for u32 {
    fn from(v: SmInfoControl) -> u32 {
        match v {
            SmInfoControl::Handover => 1,
            SmInfoControl::Acknowledge => 2,
            SmInfoControl::Disable => 3,
            SmInfoControl::Standby => 4,
            SmInfoControl::Discover => 5,
            SmInfoControl::Unknown(o) => o,
        }
    }
}

/// SMInfo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SmInfo {
    /// GUID.
    pub guid: u64,
    /// SM_Key.
    pub sm_key: u64,
    /// ActCount.
    pub act_count: u32,
    /// Priority.
    pub priority: u8,
    /// SMState.
    pub sm_state: SmState,
}

impl SmInfo {
    /// Parse.
    pub fn parse(b: &[u8]) -> ibsm_wire::Result<Self> {
        if b.len() < 21 {
            return Err(ibsm_wire::Error::Truncated { what: "SMInfo", need: 21, got: b.len() });
        }
        Ok(Self {
            guid: u64::from_be_bytes(b[0..8].try_into().unwrap()),
            sm_key: u64::from_be_bytes(b[8..16].try_into().unwrap()),
            act_count: u32::from_be_bytes(b[16..20].try_into().unwrap()),
            priority: b[20] >> 4,
            sm_state: SmState::from(b[20] & 0xF),
        })
    }
    /// Bytes.
    pub fn to_bytes(&self) -> [u8; 21] {
        let mut b = [0u8; 21];
        let _ = self.emit_into(&mut b);
        b
    }
    /// Emit.
    pub fn emit_into(&self, b: &mut [u8]) -> ibsm_wire::Result<()> {
        b[0..8].copy_from_slice(&self.guid.to_be_bytes());
        b[8..16].copy_from_slice(&self.sm_key.to_be_bytes());
        b[16..20].copy_from_slice(&self.act_count.to_be_bytes());
        b[20] = (self.priority << 4) | (u8::from(self.sm_state) & 0xF);
        Ok(())
    }
}
