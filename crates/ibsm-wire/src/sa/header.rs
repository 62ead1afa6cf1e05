//! The 256-byte SA MAD (IBA Vol. 1 §15.2.1): common header, RMPP header, SM_Key,
//! AttributeOffset, ComponentMask and 200 data bytes; plus record access at
//! `56 + k * AttributeOffset * 8`.

use core::marker::PhantomData;

use crate::error::{Error, Result};
use crate::field::WireStruct;
use crate::mad::{MadHeader, Method, MgmtClass, RmppHeader, RmppType, Status, mad_form};

use super::codes::SaAttributeId;
use super::component::{ComponentMask, SaRecord};

/// ClassVersion of the SA class.
pub const SA_CLASS_VERSION: u8 = 2;
/// Size of the SA header (common MAD header + RMPP header + SA fields); the data
/// starts here.
pub const SA_HEADER_SIZE: usize = 56;
/// Offset of the SA data area.
pub const SA_DATA_OFFSET: usize = 56;
/// Size of the SA data area of one MAD.
pub const SA_DATA_SIZE: usize = 200;

wire_struct! {
    /// An SA MAD (management class 0x03), all 256 bytes.
    ///
    /// libibmad names bytes 28..31 twice (`IB_SA_RMPP_D1_F`, `IB_SA_RMPP_SEGNUM_F`) and
    /// bytes 32..35 three times (`IB_SA_RMPP_D2_F`, `IB_SA_RMPP_LEN_F`,
    /// `IB_SA_RMPP_NEWWIN_F`): the owned value holds them once, as `rmpp_data1` and
    /// `rmpp_data2`, with the aliases as methods ([`Self::segment_number`],
    /// [`Self::payload_length`], [`Self::new_window_last`]) and listed in
    /// [`Self::LIBIBMAD_ALIASES`].
    pub struct SaMad, view SaMadView, size 256, label "SA MAD";
    fields {
        /// The common MAD header (its attribute ID an [`SaAttributeId`]: [`SaMad::attribute`]).
        header, set_header: MadHeader = (0, 0, 192);
        /// The RMPP header.
        rmpp, set_rmpp: RmppHeader = (24, 0, 96);
        /// SM_Key (0 for ordinary clients).
        sm_key, set_sm_key: u64 = (36, 0, 64), "IB_SA_MKEY_F";
        /// Record spacing in 8-byte words (responses); 0 in requests.
        attribute_offset, set_attribute_offset: u16 = (44, 0, 16), "IB_SA_ATTROFFS_F";
        /// Which template components must match.
        component_mask, set_component_mask: ComponentMask = (48, 0, 64), "IB_SA_COMPMASK_F";
        /// The 200 data bytes: a record, or part of a record table.
        data, set_data: [u8; 200] = (56, 0, 1600), "IB_SA_DATA_F";
    }
}

mad_form!(SaMad, SaMadView, SaAttributeId);

impl SaMad {
    /// Other libibmad names of fields held once here: `(field, libibmad name)`.
    pub const LIBIBMAD_ALIASES: &'static [(&'static str, &'static str)] = &[
        ("rmpp.data1", "IB_SA_RMPP_SEGNUM_F"),
        ("rmpp.data2", "IB_SA_RMPP_LEN_F"),
        ("rmpp.data2", "IB_SA_RMPP_NEWWIN_F"),
    ];

    /// An SA request (class 0x03, version 2, RMPP off, AttributeOffset 0) carrying
    /// `template` in the data area.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the record does not fit the 200 data bytes (no record
    /// of this crate is that large).
    pub fn request<R: SaRecord>(
        method: Method,
        transaction_id: u64,
        component_mask: ComponentMask,
        template: &R,
    ) -> Result<Self> {
        let mut m = Self {
            header: MadHeader {
                base_version: 1,
                mgmt_class: MgmtClass::SubnAdm,
                class_version: SA_CLASS_VERSION,
                method,
                transaction_id,
                attribute_id: R::ATTRIBUTE_ID.into(),
                ..MadHeader::default()
            },
            component_mask,
            ..Self::default()
        };
        template.emit_into(&mut m.data)?;
        Ok(m)
    }

    /// The header of the response to this request: R bit set, method kept (a Set is
    /// answered by GetResp), `status`, SM_Key 0 (a response never carries the key, IBA
    /// Vol. 1 C15-0.1.5), RMPP and data cleared, `attribute_offset`.
    #[must_use]
    pub fn reply(&self, status: Status, attribute_offset: u16) -> Self {
        let method = if self.method == Method::Set {
            Method::Get
        } else {
            self.method
        };
        Self {
            header: MadHeader {
                response: true,
                method,
                status,
                ..self.header
            },
            rmpp: RmppHeader::default(),
            sm_key: 0,
            attribute_offset,
            data: [0; SA_DATA_SIZE],
            ..*self
        }
    }

    /// [`Self::reply`] with status 0 and the AttributeOffset of `R`.
    #[must_use]
    pub fn response_header<R: SaRecord>(&self) -> Self {
        self.reply(Status::OK, R::ATTRIBUTE_OFFSET)
    }

    /// The attribute ID as the SA's code.
    #[must_use]
    pub fn attribute(&self) -> SaAttributeId {
        SaAttributeId::from(self.header.attribute_id)
    }

    /// SegmentNumber (DATA and ACK segments): alias of `rmpp.data1`.
    #[must_use]
    pub const fn segment_number(&self) -> u32 {
        self.rmpp.data1
    }

    /// PayloadLength (DATA segments): alias of `rmpp.data2`.
    #[must_use]
    pub const fn payload_length(&self) -> u32 {
        self.rmpp.data2
    }

    /// NewWindowLast (ACK segments): alias of `rmpp.data2`.
    #[must_use]
    pub const fn new_window_last(&self) -> u32 {
        self.rmpp.data2
    }

    /// The record spacing in bytes (`AttributeOffset * 8`).
    #[must_use]
    pub const fn record_stride(&self) -> usize {
        self.attribute_offset as usize * 8
    }

    /// Decodes the `k`-th record of the data area (`k = 0` for the single record of a
    /// request or a Get response, whatever the AttributeOffset).
    ///
    /// # Errors
    /// [`Error::Truncated`] when the record does not lie inside the 200 data bytes.
    pub fn record<R: WireStruct>(&self, k: usize) -> Result<R> {
        let at = k.saturating_mul(self.record_stride());
        R::parse(self.data.get(at..).unwrap_or(&[]))
    }

    /// Encodes `record` as the `k`-th record of the data area.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the record does not fit.
    pub fn set_record<R: WireStruct>(&mut self, k: usize, record: &R) -> Result<()> {
        let at = k.saturating_mul(self.record_stride());
        let need = at.saturating_add(R::SIZE);
        let got = self.data.len();
        match self.data.get_mut(at..) {
            Some(buf) => record.emit_into(buf),
            None => Err(Error::Truncated {
                what: R::LABEL,
                need,
                got,
            }),
        }
    }

    /// The SA data bytes this single MAD holds: for an RMPP DATA MAD that is both
    /// first and last, `PayloadLength - 20` (capped at 200); otherwise all 200.
    #[must_use]
    pub fn payload(&self) -> &[u8] {
        let f = self.rmpp.flags;
        if self.rmpp.rmpp_type == RmppType::Data && f.active() && f.first() && f.last() {
            let len = (self.rmpp.data2 as usize)
                .saturating_sub(20)
                .min(SA_DATA_SIZE);
            &self.data[..len]
        } else {
            &self.data
        }
    }
}

impl<T: AsRef<[u8]>> SaMadView<T> {
    /// The 200 data bytes.
    #[must_use]
    pub fn data_bytes(&self) -> &[u8] {
        &self.as_bytes()[SA_DATA_OFFSET..]
    }

    /// The bytes of the `k`-th record (`stride = AttributeOffset * 8` bytes from
    /// `56 + k * stride`), or `None` when they do not lie inside the MAD or the
    /// AttributeOffset is 0.
    #[must_use]
    pub fn record_bytes(&self, k: usize) -> Option<&[u8]> {
        let stride = usize::from(self.attribute_offset()) * 8;
        if stride == 0 {
            return None;
        }
        let at = k.checked_mul(stride)?;
        self.data_bytes().get(at..at.checked_add(stride)?)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SaMadView<T> {
    /// The 200 data bytes, writable.
    pub fn data_bytes_mut(&mut self) -> &mut [u8] {
        &mut self.as_bytes_mut()[SA_DATA_OFFSET..]
    }
}

/// Iterates over the records of a table (`data` = the SA data of a whole answer, as a
/// umad read of a reassembled GetTableResp returns after its 56-byte header, or the
/// output of [`super::rmpp::Reassembler`]).
///
/// The number of records is `data.len() / (attribute_offset * 8)`: records are
/// AttributeOffset * 8 bytes apart (IBA Vol. 1 §15.2.1, AttributeOffset), and kernel
/// RMPP joins all segments' data into one read (the Linux kernel's
/// `Documentation/infiniband/user_mad.rst`).
///
/// # Errors
/// [`Error::InvalidValue`] when `attribute_offset * 8` is smaller than `R::SIZE`
/// (0 included): the table cannot hold records of that type.
pub fn records<R: WireStruct>(data: &[u8], attribute_offset: u16) -> Result<RecordIter<'_, R>> {
    let stride = usize::from(attribute_offset) * 8;
    if stride < R::SIZE || stride == 0 {
        return Err(Error::InvalidValue {
            what: R::LABEL,
            field: "AttributeOffset",
            value: u64::from(attribute_offset),
        });
    }
    Ok(RecordIter {
        data,
        stride,
        next: 0,
        count: data.len() / stride,
        _r: PhantomData,
    })
}

/// Iterator over the records of a table, see [`records`].
#[derive(Debug, Clone)]
pub struct RecordIter<'a, R> {
    data: &'a [u8],
    stride: usize,
    next: usize,
    count: usize,
    _r: PhantomData<fn() -> R>,
}

impl<R: WireStruct> Iterator for RecordIter<'_, R> {
    type Item = R;

    fn next(&mut self) -> Option<R> {
        if self.next >= self.count {
            return None;
        }
        let at = self.next * self.stride;
        self.next += 1;
        // `records` checked stride >= SIZE and count * stride <= len, so this parses.
        R::parse(self.data.get(at..at + self.stride)?).ok()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.count - self.next;
        (n, Some(n))
    }
}

impl<R: WireStruct> ExactSizeIterator for RecordIter<'_, R> {}
