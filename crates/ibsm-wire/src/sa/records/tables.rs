//! Table records: a record identifier followed by one block of an SMP table
//! (IBA Vol. 1 §15.2.5, the table records). The block is the SMP attribute's own type,
//! nested.

use crate::attr::{
    LinearForwardingTable, MulticastForwardingTable, PKeyTable, RandomForwardingTable,
    SlToVlMappingTable, VlArbitrationTable,
};

wire_struct! {
    /// P_KeyTableRecord (72 bytes): one 32-entry P_Key block of a port.
    pub struct PKeyTableRecord, view PKeyTableRecordView, size 72, label "P_KeyTableRecord";
    fields {
        /// CA port LID / switch port 0 LID.
        lid, set_lid: u16 = (0, 0, 16);
        /// P_Key block number.
        block_num, set_block_num: u16 = (2, 0, 16);
        /// Switch port (reserved for CAs).
        port_num, set_port_num: u8 = (4, 0, 8);
        /// The P_Key block: 32 big-endian 16-bit entries (IBA Vol. 1 §14.2.5.7).
        pkey_table, set_pkey_table: PKeyTable = (8, 0, 512);
    }
}

sa_record! {
    PKeyTableRecord, PKeyTableRecord;
    CM_LID = 0, "lid";
    CM_BLOCK_NUM = 1, "block_num";
    CM_PORT_NUM = 2, "port_num";
}

wire_struct! {
    /// SLtoVLMappingTableRecord (16 bytes): the SL-to-VL table of one (input, output)
    /// port pair.
    pub struct SlToVlMappingTableRecord, view SlToVlMappingTableRecordView, size 16,
        label "SLtoVLMappingTableRecord";
    fields {
        /// Port LID.
        lid, set_lid: u16 = (0, 0, 16);
        /// Input port (switches only).
        input_port_num, set_input_port_num: u8 = (2, 0, 8);
        /// Output port (switches only).
        output_port_num, set_output_port_num: u8 = (3, 0, 8);
        /// The table: 16 four-bit VLs, SL 0 in the high nibble of byte 0
        /// (IBA Vol. 1 §14.2.5.8).
        sl_to_vl_table, set_sl_to_vl_table: SlToVlMappingTable = (8, 0, 64);
    }
}

sa_record! {
    SlToVlMappingTableRecord, SlToVlMappingTableRecord;
    CM_LID = 0, "lid";
    CM_INPUT_PORT_NUM = 1, "input_port_num";
    CM_OUTPUT_PORT_NUM = 2, "output_port_num";
}

wire_struct! {
    /// VLArbitrationTableRecord (72 bytes): one 32-entry block of a port's VL
    /// arbitration table.
    pub struct VlArbitrationTableRecord, view VlArbitrationTableRecordView, size 72,
        label "VLArbitrationTableRecord";
    fields {
        /// Port LID.
        lid, set_lid: u16 = (0, 0, 16);
        /// Output port.
        output_port_num, set_output_port_num: u8 = (2, 0, 8);
        /// Table part 1..4, as in the SMP AttributeModifier.
        block_num, set_block_num: u8 = (3, 0, 8);
        /// 32 entries of (4 reserved bits, 4-bit VL, 8-bit weight), IBA Vol. 1 §14.2.5.9.
        vl_arbitration_table, set_vl_arbitration_table: VlArbitrationTable = (8, 0, 512);
    }
}

sa_record! {
    VlArbitrationTableRecord, VlArbitrationTableRecord;
    CM_LID = 0, "lid";
    CM_OUTPUT_PORT_NUM = 1, "output_port_num";
    CM_BLOCK_NUM = 2, "block_num";
}

wire_struct! {
    /// LinearForwardingTableRecord (72 bytes): one 64-LID block of a switch's LFT.
    pub struct LinearForwardingTableRecord, view LinearForwardingTableRecordView, size 72,
        label "LinearForwardingTableRecord";
    fields {
        /// Switch LID.
        lid, set_lid: u16 = (0, 0, 16);
        /// LFT block: LIDs 64 * block_num ..= 64 * block_num + 63.
        block_num, set_block_num: u16 = (2, 0, 16);
        /// Output port of each LID of the block (IBA Vol. 1 §14.2.5.10).
        lft, set_lft: LinearForwardingTable = (8, 0, 512);
    }
}

sa_record! {
    LinearForwardingTableRecord, LinearForwardingTableRecord;
    CM_LID = 0, "lid";
    CM_BLOCK_NUM = 1, "block_num";
}

wire_struct! {
    /// RandomForwardingTableRecord (72 bytes): one 16-entry block of a switch's
    /// random forwarding table (IBA Vol. 1 §15.2.5, RandomForwardingTableRecord). The
    /// layout follows the other table records (LID, BlockNum, 32 reserved bits, the
    /// block).
    pub struct RandomForwardingTableRecord, view RandomForwardingTableRecordView, size 72,
        label "RandomForwardingTableRecord";
    fields {
        /// Switch LID.
        lid, set_lid: u16 = (0, 0, 16);
        /// RFT block number.
        block_num, set_block_num: u16 = (2, 0, 16);
        /// 16 entries of 4 bytes (IBA Vol. 1 §14.2.5.11).
        rft, set_rft: RandomForwardingTable = (8, 0, 512);
    }
}

sa_record! {
    RandomForwardingTableRecord, RandomForwardingTableRecord;
    CM_LID = 0, "lid";
    CM_BLOCK_NUM = 1, "block_num";
}

wire_struct! {
    /// MulticastForwardingTableRecord (72 bytes): port masks of 32 MLIDs for 16 ports
    /// of a switch.
    pub struct MulticastForwardingTableRecord, view MulticastForwardingTableRecordView,
        size 72, label "MulticastForwardingTableRecord";
    fields {
        /// Switch LID.
        lid, set_lid: u16 = (0, 0, 16);
        /// Port group: ports 16 * position ..= 16 * position + 15.
        position, set_position: u8 = (2, 0, 4);
        /// MFT block: MLIDs 0xC000 + 32 * block_num ..
        block_num, set_block_num: u16 = (2, 7, 9);
        /// 32 big-endian 16-bit port masks (IBA Vol. 1 §14.2.5.12).
        mft, set_mft: MulticastForwardingTable = (8, 0, 512);
    }
}

sa_record! {
    MulticastForwardingTableRecord, MulticastForwardingTableRecord;
    CM_LID = 0, "lid";
    CM_POSITION = 1, "position";
    CM_RESERVED2 = 2, "reserved", (2, 4, 3);
    CM_BLOCK_NUM = 3, "block_num";
    CM_RESERVED4 = 4, "reserved", (4, 0, 32);
}
