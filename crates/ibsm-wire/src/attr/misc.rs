//! VendorDiag (0x0030), LedInfo (0x0031), PortInfoExtended (0x0033) and the Mellanox
//! MlnxExtPortInfo (0xFF90).

wire_struct! {
    /// VendorDiag (0x0030), as the Wireshark dissector decodes it (single source).
    pub struct VendorDiag, view VendorDiagView, size 64, label "VendorDiag";
    fields {
        /// Index of the next diagnostic block, 0 = none.
        next_index, set_next_index: u16 = (0, 0, 16);
        /// Vendor diagnostic data.
        diag_data, set_diag_data: [u8; 62] = (2, 0, 496);
    }
}

wire_struct! {
    /// LedInfo (0x0031; AttributeModifier = port; needs CapabilityMask IsLedInfoSupported).
    pub struct LedInfo, view LedInfoView, size 4, label "LedInfo";
    fields {
        /// LED on / blinking for identification (false = normal).
        led_mask, set_led_mask: bool = (0, 0, 1);
    }
}

bit_flags! {
    /// MlnxExtPortInfo LinkSpeedSupported / Enabled / Active.
    pub struct MlnxLinkSpeed: u8 {
        /// FDR10 (10.3125 Gb/s per lane).
        const FDR10 = 1;
    }
}

wire_struct! {
    /// MlnxExtPortInfo (0xFF90, Mellanox vendor attribute; AttributeModifier = port).
    pub struct MlnxExtPortInfo, view MlnxExtPortInfoView, size 64, label "MlnxExtPortInfo";
    fields {
        /// State change enable.
        state_change_enable, set_state_change_enable: u8 = (3, 0, 8), "IB_MLNX_EXT_PORT_STATE_CHG_ENABLE_F";
        /// Vendor speeds supported.
        link_speed_supported, set_link_speed_supported: MlnxLinkSpeed = (7, 0, 8), "IB_MLNX_EXT_PORT_LINK_SPEED_SUPPORTED_F";
        /// Vendor speeds enabled.
        link_speed_enabled, set_link_speed_enabled: MlnxLinkSpeed = (11, 0, 8), "IB_MLNX_EXT_PORT_LINK_SPEED_ENABLED_F";
        /// Vendor speed active.
        link_speed_active, set_link_speed_active: MlnxLinkSpeed = (15, 0, 8), "IB_MLNX_EXT_PORT_LINK_SPEED_ACTIVE_F";
    }
}

bit_flags! {
    /// PortInfoExtended.CapabilityMask.
    pub struct PortInfoExtCapabilityMask: u32 {
        /// The FEC mode fields are supported.
        const IS_FEC_MODE_SUPPORTED = 1;
    }
}

code_enum! {
    /// A forward-error-correction mode (PortInfoExtended.FECModeActive).
    pub enum FecMode: u16 {
        /// No FEC.
        NoFec = 0,
        /// Fire-code FEC.
        FireCode = 1,
        /// Reed-Solomon FEC.
        Rs = 2,
        /// Low-latency Reed-Solomon FEC.
        LowLatencyRs = 3,
    }
}

bit_flags! {
    /// A set of FEC modes: bit m set = mode m (see [`FecMode`]).
    pub struct FecModeMask: u16 {
        /// No FEC.
        const NO_FEC = 1 << 0;
        /// Fire-code FEC.
        const FIRE_CODE = 1 << 1;
        /// Reed-Solomon FEC.
        const RS = 1 << 2;
        /// Low-latency Reed-Solomon FEC.
        const LOW_LATENCY_RS = 1 << 3;
    }
}

impl FecModeMask {
    /// Whether `mode` is in the set.
    #[must_use]
    pub fn contains_mode(self, mode: FecMode) -> bool {
        let m = u16::from(mode);
        m < 16 && self.0 & (1 << m) != 0
    }
}

wire_struct! {
    /// PortInfoExtended (0x0033; needs CapabilityMask2 IsPortInfoExtendedSupported):
    /// forward error correction. OpenSM's layout: consecutive 16-bit fields.
    ///
    /// libibmad 44.0 misplaces its four HDR/NDR FEC fields, so those rows carry no
    /// libibmad name here (see `tests/fixtures/libibmad_fields.tsv`).
    pub struct PortInfoExtended, view PortInfoExtendedView, size 64, label "PortInfoExtended";
    fields {
        /// Capability bits.
        capability_mask, set_capability_mask: PortInfoExtCapabilityMask = (0, 0, 32), "IB_PORT_EXT_CAPMASK_F";
        /// FEC mode in use.
        fec_mode_active, set_fec_mode_active: FecMode = (4, 0, 16), "IB_PORT_EXT_FEC_MODE_ACTIVE_F";
        /// FEC modes supported at FDR.
        fdr_fec_mode_supported, set_fdr_fec_mode_supported: FecModeMask = (6, 0, 16), "IB_PORT_EXT_FDR_FEC_MODE_SUPPORTED_F";
        /// FEC modes allowed at FDR.
        fdr_fec_mode_enabled, set_fdr_fec_mode_enabled: FecModeMask = (8, 0, 16), "IB_PORT_EXT_FDR_FEC_MODE_ENABLED_F";
        /// FEC modes supported at EDR.
        edr_fec_mode_supported, set_edr_fec_mode_supported: FecModeMask = (10, 0, 16), "IB_PORT_EXT_EDR_FEC_MODE_SUPPORTED_F";
        /// FEC modes allowed at EDR.
        edr_fec_mode_enabled, set_edr_fec_mode_enabled: FecModeMask = (12, 0, 16), "IB_PORT_EXT_EDR_FEC_MODE_ENABLED_F";
        /// FEC modes supported at HDR (libibmad's IB_PORT_EXT_HDR_FEC_MODE_SUPPORTED_F
        /// sits elsewhere).
        hdr_fec_mode_supported, set_hdr_fec_mode_supported: FecModeMask = (14, 0, 16);
        /// FEC modes allowed at HDR.
        hdr_fec_mode_enabled, set_hdr_fec_mode_enabled: FecModeMask = (16, 0, 16);
        /// FEC modes supported at NDR.
        ndr_fec_mode_supported, set_ndr_fec_mode_supported: FecModeMask = (18, 0, 16);
        /// FEC modes allowed at NDR.
        ndr_fec_mode_enabled, set_ndr_fec_mode_enabled: FecModeMask = (20, 0, 16);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::testutil::check;

    #[test]
    fn fixed_bytes() {
        let mut b = [0u8; 64];
        b[3] = 1;
        b[7] = 1;
        b[11] = 1;
        b[15] = 1;
        let m = MlnxExtPortInfo::parse(&b).unwrap();
        assert_eq!(m.link_speed_active, MlnxLinkSpeed::FDR10);
        assert_eq!(m.to_bytes(), b);

        let mut b = [0u8; 64];
        b[3] = 1;
        b[5] = 2;
        b[14..16].copy_from_slice(&[0, 0x0d]);
        b[20..22].copy_from_slice(&[0, 0x04]);
        let p = PortInfoExtended::parse(&b).unwrap();
        assert!(
            p.capability_mask
                .contains(PortInfoExtCapabilityMask::IS_FEC_MODE_SUPPORTED)
        );
        assert_eq!(p.fec_mode_active, FecMode::Rs);
        assert!(p.hdr_fec_mode_supported.contains_mode(FecMode::NoFec));
        assert!(
            p.hdr_fec_mode_supported
                .contains_mode(FecMode::LowLatencyRs)
        );
        assert!(!p.hdr_fec_mode_supported.contains_mode(FecMode::FireCode));
        assert_eq!(p.ndr_fec_mode_enabled, FecModeMask::RS);
        assert_eq!(p.to_bytes(), b);

        let l = LedInfo::parse(&[0x80, 0, 0, 0]).unwrap();
        assert!(l.led_mask);
        assert_eq!(
            LedInfo::parse(&[0x7f, 0xff, 0xff, 0xff]),
            Ok(LedInfo::default())
        );

        let mut b = [0u8; 64];
        b[1] = 3;
        b[63] = 0xaa;
        let v = VendorDiag::parse(&b).unwrap();
        assert_eq!(v.next_index, 3);
        assert_eq!(v.diag_data[61], 0xaa);
    }

    #[test]
    fn generic_properties() {
        check::<VendorDiag>();
        check::<LedInfo>();
        check::<MlnxExtPortInfo>();
        check::<PortInfoExtended>();
    }
}
