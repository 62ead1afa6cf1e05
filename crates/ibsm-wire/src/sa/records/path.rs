//! PathRecord (0x0035) and MultiPathRecord (0x003A), IBA Vol. 1 §15.2.5 (PathRecord,
//! MultiPathRecord).

use crate::attr::Mtu;
use crate::error::{Error, Result};
use crate::gid::Gid;
use crate::sa::codes::{Rate, Selector};

wire_struct! {
    /// PathRecord (64 bytes): everything a client needs to talk from SGID/SLID to
    /// DGID/DLID.
    pub struct PathRecord, view PathRecordView, size 64, label "PathRecord";
    fields {
        /// Service ID the path is for (QoS); 0 if unused.
        service_id, set_service_id: u64 = (0, 0, 64);
        /// Destination GID.
        dgid, set_dgid: Gid = (8, 0, 128), "IB_SA_PR_DGID_F";
        /// Source GID.
        sgid, set_sgid: Gid = (24, 0, 128), "IB_SA_PR_SGID_F";
        /// Destination LID.
        dlid, set_dlid: u16 = (40, 0, 16), "IB_SA_PR_DLID_F";
        /// Source LID.
        slid, set_slid: u16 = (42, 0, 16), "IB_SA_PR_SLID_F";
        /// Raw packets instead of IBA transport.
        raw_traffic, set_raw_traffic: bool = (44, 0, 1);
        /// GRH flow label.
        flow_label, set_flow_label: u32 = (44, 4, 20);
        /// GRH hop limit.
        hop_limit, set_hop_limit: u8 = (47, 0, 8);
        /// GRH traffic class.
        tclass, set_tclass: u8 = (48, 0, 8);
        /// The path is usable in both directions.
        reversible, set_reversible: bool = (49, 0, 1);
        /// Request: maximum number of paths wanted.
        numb_path, set_numb_path: u8 = (49, 1, 7), "IB_SA_PR_NPATH_F";
        /// P_Key to use.
        pkey, set_pkey: u16 = (50, 0, 16);
        /// QoS class.
        qos_class, set_qos_class: u16 = (52, 0, 12);
        /// Service level.
        sl, set_sl: u8 = (53, 4, 4), "IB_SA_PR_SL_F";
        /// Selector of `mtu`.
        mtu_selector, set_mtu_selector: Selector = (54, 0, 2);
        /// MTU code.
        mtu, set_mtu: Mtu = (54, 2, 6);
        /// Selector of `rate`.
        rate_selector, set_rate_selector: Selector = (55, 0, 2);
        /// Rate code.
        rate, set_rate: Rate = (55, 2, 6);
        /// Selector of `packet_life_time`.
        packet_life_time_selector, set_packet_life_time_selector: Selector = (56, 0, 2);
        /// Packet lifetime: 4.096 us * 2^value.
        packet_life_time, set_packet_life_time: u8 = (56, 2, 6);
        /// Lower is better among the returned paths.
        preference, set_preference: u8 = (57, 0, 8);
    }
}

sa_record! {
    PathRecord, PathRecord;
    CM_SERVICE_ID_MSB = 0, "service_id[63:32]", (0, 0, 32);
    CM_SERVICE_ID_LSB = 1, "service_id[31:0]", (4, 0, 32);
    CM_DGID = 2, "dgid";
    CM_SGID = 3, "sgid";
    CM_DLID = 4, "dlid";
    CM_SLID = 5, "slid";
    CM_RAW_TRAFFIC = 6, "raw_traffic";
    CM_RESERVED1 = 7, "reserved", (44, 1, 3);
    CM_FLOW_LABEL = 8, "flow_label";
    CM_HOP_LIMIT = 9, "hop_limit";
    CM_TCLASS = 10, "tclass";
    CM_REVERSIBLE = 11, "reversible";
    CM_NUMB_PATH = 12, "numb_path";
    CM_PKEY = 13, "pkey";
    CM_QOS_CLASS = 14, "qos_class";
    CM_SL = 15, "sl";
    CM_MTU_SELECTOR = 16, "mtu_selector";
    CM_MTU = 17, "mtu";
    CM_RATE_SELECTOR = 18, "rate_selector";
    CM_RATE = 19, "rate";
    CM_PACKET_LIFE_TIME_SELECTOR = 20, "packet_life_time_selector";
    CM_PACKET_LIFE_TIME = 21, "packet_life_time";
    CM_PREFERENCE = 22, "preference";
}

impl PathRecord {
    /// Both ServiceID components (bits 0 and 1).
    pub const CM_SERVICE_ID: crate::sa::ComponentMask =
        crate::sa::ComponentMask(Self::CM_SERVICE_ID_MSB.0 | Self::CM_SERVICE_ID_LSB.0);
}

/// Offset of the GID list of a MultiPathRecord.
pub const MULTI_PATH_GID_OFFSET: usize = 24;
/// Most GIDs a MultiPathRecord carries in one MAD (24 + 11 * 16 = 200 bytes).
pub const MULTI_PATH_MAX_GIDS: usize = 11;

byte_block! {
    /// SDGID\[1..11\] of a MultiPathRecord: ten 16-byte GIDs, reflected as one byte field.
    pub struct MultiPathGids([u8; 160]);
}

wire_struct! {
    /// MultiPathRecord (0x003A) as it fits one MAD: the 24-byte fixed part, then
    /// `sgid_count` source GIDs followed by `dgid_count` destination GIDs, 16 bytes each,
    /// up to [`MULTI_PATH_MAX_GIDS`] in all. The first GID is a field of its own
    /// (libibmad's `IB_SA_MP_GID0_F`); use [`MultiPathRecord::gid`],
    /// [`MultiPathRecord::set_gid`] and [`MultiPathRecord::with_gids`] for the list.
    pub struct MultiPathRecord, view MultiPathRecordView, size 200, label "MultiPathRecord";
    fields {
        /// Raw packets instead of IBA transport.
        raw_traffic, set_raw_traffic: bool = (0, 0, 1);
        /// GRH flow label.
        flow_label, set_flow_label: u32 = (0, 4, 20);
        /// GRH hop limit.
        hop_limit, set_hop_limit: u8 = (3, 0, 8);
        /// GRH traffic class.
        tclass, set_tclass: u8 = (4, 0, 8);
        /// Paths usable in both directions.
        reversible, set_reversible: bool = (5, 0, 1);
        /// Maximum number of paths wanted.
        numb_path, set_numb_path: u8 = (5, 1, 7), "IB_SA_MP_NPATH_F";
        /// P_Key.
        pkey, set_pkey: u16 = (6, 0, 16);
        /// QoS class.
        qos_class, set_qos_class: u16 = (8, 0, 12);
        /// Service level.
        sl, set_sl: u8 = (9, 4, 4);
        /// Selector of `mtu`.
        mtu_selector, set_mtu_selector: Selector = (10, 0, 2);
        /// MTU code.
        mtu, set_mtu: Mtu = (10, 2, 6);
        /// Selector of `rate`.
        rate_selector, set_rate_selector: Selector = (11, 0, 2);
        /// Rate code.
        rate, set_rate: Rate = (11, 2, 6);
        /// Selector of `packet_life_time`.
        packet_life_time_selector, set_packet_life_time_selector: Selector = (12, 0, 2);
        /// Packet lifetime: 4.096 us * 2^value.
        packet_life_time, set_packet_life_time: u8 = (12, 2, 6);
        /// ServiceID bits 63..56 (see [`MultiPathRecord::service_id`]).
        service_id_msb, set_service_id_msb: u8 = (13, 0, 8);
        /// How independent the returned paths must be.
        independence_selector, set_independence_selector: u8 = (14, 0, 2);
        /// Number of source GIDs in the list.
        sgid_count, set_sgid_count: u8 = (15, 0, 8), "IB_SA_MP_NSRC_F";
        /// Number of destination GIDs in the list.
        dgid_count, set_dgid_count: u8 = (16, 0, 8), "IB_SA_MP_NDEST_F";
        /// ServiceID bits 55..0.
        service_id_lsb, set_service_id_lsb: u64 = (17, 0, 56);
        /// SDGID\[0\]: the first GID of the list.
        sdgid0, set_sdgid0: Gid = (24, 0, 128), "IB_SA_MP_GID0_F";
        /// SDGID\[1..11\].
        sdgids, set_sdgids: MultiPathGids = (40, 0, 1280);
    }
}

sa_record! {
    MultiPathRecord, MultiPathRecord;
    CM_RAW_TRAFFIC = 0, "raw_traffic";
    CM_RESERVED1 = 1, "reserved", (0, 1, 3);
    CM_FLOW_LABEL = 2, "flow_label";
    CM_HOP_LIMIT = 3, "hop_limit";
    CM_TCLASS = 4, "tclass";
    CM_REVERSIBLE = 5, "reversible";
    CM_NUMB_PATH = 6, "numb_path";
    CM_PKEY = 7, "pkey";
    CM_QOS_CLASS = 8, "qos_class";
    CM_SL = 9, "sl";
    CM_MTU_SELECTOR = 10, "mtu_selector";
    CM_MTU = 11, "mtu";
    CM_RATE_SELECTOR = 12, "rate_selector";
    CM_RATE = 13, "rate";
    CM_PACKET_LIFE_TIME_SELECTOR = 14, "packet_life_time_selector";
    CM_PACKET_LIFE_TIME = 15, "packet_life_time";
    CM_SERVICE_ID_MSB = 16, "service_id_msb";
    CM_INDEPENDENCE_SELECTOR = 17, "independence_selector";
    CM_RESERVED2 = 18, "reserved", (14, 2, 6);
    CM_SGID_COUNT = 19, "sgid_count";
    CM_DGID_COUNT = 20, "dgid_count";
    CM_SERVICE_ID_LSB = 21, "service_id_lsb";
}

impl MultiPathRecord {
    /// The 64-bit ServiceID, joined from its two pieces.
    #[must_use]
    pub const fn service_id(&self) -> u64 {
        ((self.service_id_msb as u64) << 56) | (self.service_id_lsb & 0x00FF_FFFF_FFFF_FFFF)
    }

    /// Splits a 64-bit ServiceID into its two pieces.
    pub const fn set_service_id(&mut self, id: u64) {
        self.service_id_msb = (id >> 56) as u8;
        self.service_id_lsb = id & 0x00FF_FFFF_FFFF_FFFF;
    }

    /// Bytes the record occupies with its GID list (`24 + 16 * (sgid_count +
    /// dgid_count)`; the rest of the 200 bytes is padding).
    #[must_use]
    pub const fn wire_size(&self) -> usize {
        MULTI_PATH_GID_OFFSET + 16 * (self.sgid_count as usize + self.dgid_count as usize)
    }

    /// GID `i` of the list (0..11): source GIDs first, then destination GIDs. `None`
    /// beyond the list's capacity (the counts are not consulted).
    #[must_use]
    pub fn gid(&self, i: usize) -> Option<Gid> {
        match i {
            0 => Some(self.sdgid0),
            1..MULTI_PATH_MAX_GIDS => {
                let at = 16 * (i - 1);
                let mut g = [0u8; 16];
                g.copy_from_slice(&self.sdgids.0[at..at + 16]);
                Some(Gid(g))
            }
            _ => None,
        }
    }

    /// Sets GID `i` of the list (0..11).
    ///
    /// # Errors
    /// [`Error::InvalidValue`] beyond the list's capacity.
    pub fn set_gid(&mut self, i: usize, gid: Gid) -> Result<()> {
        match i {
            0 => self.sdgid0 = gid,
            1..MULTI_PATH_MAX_GIDS => {
                let at = 16 * (i - 1);
                self.sdgids.0[at..at + 16].copy_from_slice(&gid.0);
            }
            _ => {
                return Err(Error::InvalidValue {
                    what: "MultiPathRecord",
                    field: "GID index",
                    value: i as u64,
                });
            }
        }
        Ok(())
    }

    /// The source GIDs, then the destination GIDs, as the counts say (capped at the
    /// list's capacity).
    pub fn gids(&self) -> impl Iterator<Item = Gid> + '_ {
        let n = usize::from(self.sgid_count) + usize::from(self.dgid_count);
        (0..n.min(MULTI_PATH_MAX_GIDS)).filter_map(|i| self.gid(i))
    }

    /// This record with `sgids` then `dgids` as its list and the counts set.
    ///
    /// # Errors
    /// [`Error::Overflow`] with more than [`MULTI_PATH_MAX_GIDS`] GIDs in all.
    pub fn with_gids(&self, sgids: &[Gid], dgids: &[Gid]) -> Result<Self> {
        let n = sgids.len() + dgids.len();
        if n > MULTI_PATH_MAX_GIDS {
            return Err(Error::Overflow {
                what: "MultiPathRecord",
                field: "sgid_count + dgid_count",
                value: n as u64,
            });
        }
        let mut out = Self {
            sgid_count: sgids.len() as u8,
            dgid_count: dgids.len() as u8,
            sdgid0: Gid::default(),
            sdgids: MultiPathGids::default(),
            ..*self
        };
        for (i, g) in sgids.iter().chain(dgids).enumerate() {
            out.set_gid(i, *g)?;
        }
        Ok(out)
    }
}
