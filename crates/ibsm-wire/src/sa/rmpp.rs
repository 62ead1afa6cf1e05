// Over 800 lines: Segmenter, Sender and Reassembler share the RMPP header rules and windows.
//! Sans-IO RMPP for multi-MAD messages (IBA Vol. 1 §13.6): a [`Segmenter`] that cuts a
//! payload (raw bytes or a table of records) into 256-byte DATA segments, and a
//! [`Reassembler`] that checks incoming DATA segments and joins their data.
//!
//! Neither touches a socket or a clock: the caller sends the segments and feeds what it
//! receives. [`Sender`] adds the sending side's protocol on top of a [`Segmenter`]: the
//! window from ACKs, retransmission after a time-out (`now` an [`Instant`], as every
//! sans-IO state machine of the workspace takes it), STOP and ABORT. On Linux the kernel
//! does RMPP for umad agents registered with `rmpp_version = 1` (the Linux kernel's
//! `Documentation/infiniband/user_mad.rst`); these types serve the simulator, tests,
//! tools that read raw MADs, and transports without kernel RMPP.
//!
//! Payload accounting follows Linux: each segment counts as 220 bytes (the 256-byte
//! MAD minus the 36-byte common + RMPP header), so with a class header of `H` bytes
//! (56 for SA, 40 for vendor range 2), `D` data bytes and `S` segments,
//! the first segment's PayloadLength is `D + (H - 36) * S` and the last one's is
//! `220 - pad` with `pad = S * (256 - H) - D`.
//!
//! ```
//! use ibsm_wire::sa::rmpp::{RecordTable, Reassembler, Segmenter, SliceBuffer, Progress};
//! use ibsm_wire::sa::{LinkRecord, SaMad, SaRecord};
//! use ibsm_wire::Method;
//!
//! let links: Vec<LinkRecord> = (1..=40u16)
//!     .map(|l| LinkRecord { from_lid: l, from_port: 1, to_port: 2, to_lid: l + 1 })
//!     .collect();
//! let req = SaMad::request(Method::GetTable, 7, Default::default(), &LinkRecord::default())?;
//! let header = req.response_header::<LinkRecord>();
//! let seg = Segmenter::sa(&header, RecordTable::new(&links))?;
//! assert_eq!(seg.segment_count(), 2); // 40 * 8 bytes = 320 > 200
//!
//! let mut store = [0u8; 1024];
//! let mut rx = Reassembler::sa(SliceBuffer::new(&mut store));
//! for mad in seg.iter() {
//!     let _ = rx.push(&mad).unwrap();
//! }
//! assert!(rx.is_complete());
//! let back: Vec<LinkRecord> = rx.records::<LinkRecord>()?.collect();
//! assert_eq!(back, links);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::time::Duration;

use crate::error::Error;
use crate::field::WireStruct;
use crate::mad::{
    MAD_SIZE, RMPP_HEADER_OFFSET, RMPP_HEADER_SIZE, RmppFlags, RmppHeader, RmppHeaderView,
    RmppStatus, RmppType, VENDOR2_DATA_OFFSET,
};

use crate::time::Instant;

use super::header::{RecordIter, SA_HEADER_SIZE, SaMad, records};

/// RMPPVersion written into segments.
pub const RMPP_VERSION: u8 = 1;
/// Bytes one segment counts for in PayloadLength (256 - 36).
pub const SEGMENT_PAYLOAD_UNIT: usize = MAD_SIZE - RMPP_HEADER_OFFSET - RMPP_HEADER_SIZE;
/// RRespTime value meaning "no time given".
pub const NO_RESP_TIME: u8 = 0x1F;

/// Where the data of a segment starts: the class header length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RmppLayout {
    header_len: usize,
}

impl RmppLayout {
    /// Subnet Administration: 56-byte header, 200 data bytes per segment.
    pub const SA: Self = Self {
        header_len: SA_HEADER_SIZE,
    };
    /// Vendor range 2: 40-byte header, 216 data bytes per segment.
    pub const VENDOR2: Self = Self {
        header_len: VENDOR2_DATA_OFFSET,
    };

    /// Class header length (offset of the data in every segment).
    #[must_use]
    pub const fn header_len(self) -> usize {
        self.header_len
    }

    /// Data bytes per segment.
    #[must_use]
    pub const fn data_per_segment(self) -> usize {
        MAD_SIZE - self.header_len
    }

    /// Header bytes after the RMPP header that every segment repeats and PayloadLength
    /// counts (20 for SA).
    const fn extra(self) -> usize {
        self.header_len - RMPP_HEADER_OFFSET - RMPP_HEADER_SIZE
    }

    /// Segments needed for `len` data bytes (at least one, even for no data).
    #[must_use]
    pub const fn segments_for(self, len: usize) -> usize {
        if len == 0 {
            1
        } else {
            len.div_ceil(self.data_per_segment())
        }
    }

    /// PayloadLength of the first segment of a `len`-byte message.
    #[must_use]
    pub const fn first_payload_length(self, len: usize) -> usize {
        len + self.extra() * self.segments_for(len)
    }

    /// PayloadLength of the last segment of a `len`-byte message.
    #[must_use]
    pub const fn last_payload_length(self, len: usize) -> usize {
        let pad = self.segments_for(len) * self.data_per_segment() - len;
        SEGMENT_PAYLOAD_UNIT - pad
    }
}

/// What went wrong in RMPP segmentation or reassembly.
///
/// After any error the [`Reassembler`] is unchanged, so duplicates and out-of-order
/// segments (normal on a lossy fabric: answer them with an ACK of
/// [`Reassembler::last_segment`]) can simply be dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RmppError {
    /// The MAD itself could not be read or written.
    #[error(transparent)]
    Wire(#[from] Error),
    /// Not a DATA segment (ACK, STOP, ABORT or no RMPP): the caller handles those.
    #[error("RMPP: expected a DATA segment, got type {0:?}")]
    NotData(RmppType),
    /// DATA without the Active flag.
    #[error("RMPP: DATA segment {segment} without the Active flag")]
    NotActive {
        /// Its SegmentNumber.
        segment: u32,
    },
    /// The First flag is set on a segment other than 1, or missing on segment 1.
    #[error("RMPP: First flag {first} on segment {segment}")]
    FirstFlag {
        /// Its SegmentNumber.
        segment: u32,
        /// The First flag found.
        first: bool,
    },
    /// A segment already received (a retransmission).
    #[error("RMPP: duplicate segment {segment} (next expected {expected})")]
    Duplicate {
        /// Its SegmentNumber.
        segment: u32,
        /// The segment the reassembler waits for.
        expected: u32,
    },
    /// A segment beyond the next expected one (one was lost).
    #[error("RMPP: segment {got} out of order, expected {expected}")]
    OutOfOrder {
        /// The segment the reassembler waits for.
        expected: u32,
        /// The SegmentNumber received.
        got: u32,
    },
    /// A segment after the first's PayloadLength said the message was over, or after
    /// the Last one.
    #[error("RMPP: segment {segment} beyond the last ({last})")]
    TooManySegments {
        /// Its SegmentNumber.
        segment: u32,
        /// The last segment number of the message.
        last: u32,
    },
    /// The Last flag disagrees with the segment count the first segment announced.
    #[error("RMPP: Last flag {last} on segment {segment}, {expected} segments announced")]
    LastFlag {
        /// Its SegmentNumber.
        segment: u32,
        /// The Last flag found.
        last: bool,
        /// Segments announced by the first segment's PayloadLength.
        expected: u32,
    },
    /// A PayloadLength outside what the layout allows, or a last segment whose
    /// PayloadLength disagrees with the first's.
    #[error("RMPP: segment {segment}: bad PayloadLength {value}")]
    PayloadLength {
        /// Its SegmentNumber.
        segment: u32,
        /// The PayloadLength found.
        value: u32,
    },
    /// A segment of another transaction (TransactionID, class or AttributeID differ
    /// from segment 1).
    #[error("RMPP: segment {segment} belongs to another message ({field} differs)")]
    Foreign {
        /// Its SegmentNumber.
        segment: u32,
        /// The header field that differs.
        field: &'static str,
    },
    /// The reassembly buffer cannot hold the data.
    #[error("RMPP: {need} data bytes do not fit the buffer ({capacity})")]
    Overflow {
        /// Bytes needed.
        need: usize,
        /// Bytes the buffer can hold.
        capacity: usize,
    },
    /// Asked for a segment outside `1..=segment_count`.
    #[error("RMPP: no segment {segment} (message has {count})")]
    NoSuchSegment {
        /// The segment asked for.
        segment: u32,
        /// Segments of the message.
        count: u32,
    },
    /// The message is too large for 32-bit PayloadLength / SegmentNumber.
    #[error("RMPP: message of {len} bytes is too large")]
    TooLarge {
        /// Its data length.
        len: usize,
    },
    /// The message is not complete yet.
    #[error("RMPP: message not complete")]
    Incomplete,
}

impl RmppError {
    /// The RMPPStatus an ABORT for this error carries; `None` for errors that are not
    /// a reason to abort (duplicates and out-of-order segments are re-ACKed, the others
    /// concern the local side).
    #[must_use]
    pub fn abort_status(&self) -> Option<RmppStatus> {
        match self {
            Self::NotData(_) | Self::NotActive { .. } => Some(RmppStatus::BadRmppType),
            Self::FirstFlag { .. } => Some(RmppStatus::InconsistentFirstAndSegment),
            Self::TooManySegments { .. } => Some(RmppStatus::SegmentNumberTooBig),
            Self::LastFlag { .. } | Self::PayloadLength { .. } => {
                Some(RmppStatus::InconsistentLastAndLength)
            }
            Self::Overflow { .. } => Some(RmppStatus::ResourcesExhausted),
            _ => None,
        }
    }
}

/// A message payload the [`Segmenter`] can cut into segments.
pub trait RmppPayload {
    /// Total length in bytes.
    fn payload_len(&self) -> usize;
    /// Copies bytes `offset .. offset + out.len()` (always inside the payload) into
    /// `out`.
    fn copy_to(&self, offset: usize, out: &mut [u8]);
}

impl RmppPayload for [u8] {
    fn payload_len(&self) -> usize {
        self.len()
    }
    fn copy_to(&self, offset: usize, out: &mut [u8]) {
        out.copy_from_slice(&self[offset..offset + out.len()]);
    }
}

impl<P: RmppPayload + ?Sized> RmppPayload for &P {
    fn payload_len(&self) -> usize {
        (**self).payload_len()
    }
    fn copy_to(&self, offset: usize, out: &mut [u8]) {
        (**self).copy_to(offset, out);
    }
}

/// Records laid out as a table, `stride = SIZE` rounded up to 8 bytes apart (the
/// AttributeOffset of an SA response), encoded on the fly: no buffer is allocated.
#[derive(Debug, Clone, Copy)]
pub struct RecordTable<'a, R> {
    records: &'a [R],
}

impl<'a, R: WireStruct> RecordTable<'a, R> {
    /// A table over `records`.
    #[must_use]
    pub const fn new(records: &'a [R]) -> Self {
        Self { records }
    }

    /// Record spacing in bytes.
    #[must_use]
    pub const fn stride() -> usize {
        R::SIZE.div_ceil(8) * 8
    }

    /// AttributeOffset of the table (stride in 8-byte words).
    #[must_use]
    pub const fn attribute_offset() -> u16 {
        (R::SIZE.div_ceil(8)) as u16
    }
}

impl<R: WireStruct> RmppPayload for RecordTable<'_, R> {
    fn payload_len(&self) -> usize {
        self.records.len() * Self::stride()
    }

    fn copy_to(&self, offset: usize, out: &mut [u8]) {
        let stride = Self::stride();
        let mut done = 0;
        while done < out.len() {
            let at = offset + done;
            let (k, within) = (at / stride, at % stride);
            let mut rec = [0u8; 264];
            if let Some(r) = self.records.get(k) {
                // Records are at most 256 bytes; a longer one would fail here and leave
                // zeros, never panic.
                let _ = r.emit_into(&mut rec);
            }
            let n = (stride - within).min(out.len() - done);
            out[done..done + n].copy_from_slice(&rec[within..within + n]);
            done += n;
        }
    }
}

/// Cuts a payload into 256-byte RMPP DATA segments behind a copy of a class header.
///
/// Segments are produced on demand and in any order ([`Self::segment`]), so a sender
/// driving the RMPP window can retransmit from NewWindowLast without storing MADs.
#[derive(Debug, Clone)]
pub struct Segmenter<P> {
    layout: RmppLayout,
    header: [u8; SA_HEADER_SIZE],
    payload: P,
    count: u32,
}

impl<P: RmppPayload> Segmenter<P> {
    /// A segmenter copying the first `layout.header_len()` bytes of `header` (the
    /// common MAD header and class header; the RMPP header part is overwritten).
    ///
    /// # Errors
    /// [`RmppError::Wire`] if `header` is shorter than the layout's header,
    /// [`RmppError::TooLarge`] if the payload needs a PayloadLength above `u32::MAX`.
    pub fn new(layout: RmppLayout, header: &[u8], payload: P) -> Result<Self, RmppError> {
        crate::field::check_len("RMPP class header", header, layout.header_len)?;
        let len = payload.payload_len();
        if u32::try_from(layout.first_payload_length(len)).is_err() {
            return Err(RmppError::TooLarge { len });
        }
        let mut h = [0u8; SA_HEADER_SIZE];
        h[..layout.header_len].copy_from_slice(&header[..layout.header_len]);
        Ok(Self {
            layout,
            header: h,
            payload,
            count: layout.segments_for(len) as u32,
        })
    }

    /// An SA segmenter behind `header` (typically [`SaMad::response_header`]).
    ///
    /// # Errors
    /// [`RmppError::TooLarge`] if the payload needs a PayloadLength above `u32::MAX`.
    pub fn sa(header: &SaMad, payload: P) -> Result<Self, RmppError> {
        Self::new(RmppLayout::SA, &header.to_bytes(), payload)
    }

    /// Number of segments.
    #[must_use]
    pub const fn segment_count(&self) -> u32 {
        self.count
    }

    /// Data bytes of the message.
    #[must_use]
    pub fn data_len(&self) -> usize {
        self.payload.payload_len()
    }

    /// Writes segment `segment` (1-based) into `out[..256]`.
    ///
    /// # Errors
    /// [`RmppError::NoSuchSegment`] outside `1..=segment_count`, [`RmppError::Wire`]
    /// if `out` is shorter than 256 bytes.
    pub fn write_segment(&self, segment: u32, out: &mut [u8]) -> Result<(), RmppError> {
        if segment == 0 || segment > self.count {
            return Err(RmppError::NoSuchSegment {
                segment,
                count: self.count,
            });
        }
        crate::field::check_len("RMPP segment", out, MAD_SIZE)?;
        let hl = self.layout.header_len;
        let dps = self.layout.data_per_segment();
        let len = self.payload.payload_len();
        out[..hl].copy_from_slice(&self.header[..hl]);
        let first = segment == 1;
        let last = segment == self.count;
        let mut flags = RmppFlags::ACTIVE;
        let mut paylen = 0;
        if first {
            flags |= RmppFlags::FIRST;
            paylen = self.layout.first_payload_length(len);
        }
        if last {
            flags |= RmppFlags::LAST;
            paylen = self.layout.last_payload_length(len);
        }
        let mut rmpp = RmppHeaderView::new_unchecked(&mut out[RMPP_HEADER_OFFSET..]);
        let resp_time = rmpp.resp_time();
        RmppHeader {
            version: RMPP_VERSION,
            rmpp_type: RmppType::Data,
            resp_time,
            flags,
            status: RmppStatus::Normal,
            data1: segment,
            data2: paylen as u32,
        }
        .emit(&mut rmpp);
        let start = (segment as usize - 1) * dps;
        let n = len.saturating_sub(start).min(dps);
        let data = &mut out[hl..MAD_SIZE];
        self.payload.copy_to(start, &mut data[..n]);
        data[n..].fill(0);
        Ok(())
    }

    /// Segment `segment` (1-based) as a new 256-byte MAD.
    ///
    /// # Errors
    /// [`RmppError::NoSuchSegment`] outside `1..=segment_count`.
    pub fn segment(&self, segment: u32) -> Result<[u8; MAD_SIZE], RmppError> {
        let mut out = [0u8; MAD_SIZE];
        self.write_segment(segment, &mut out)?;
        Ok(out)
    }

    /// Every segment in order.
    pub fn iter(&self) -> impl Iterator<Item = [u8; MAD_SIZE]> + '_ {
        (1..=self.count).filter_map(|s| self.segment(s).ok())
    }
}

/// Storage for reassembled data.
pub trait ReassemblyBuffer {
    /// Bytes stored.
    fn len(&self) -> usize;
    /// Whether nothing is stored.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Most bytes the buffer can ever hold.
    fn capacity(&self) -> usize;
    /// Appends `data`; the caller has checked it fits `capacity`.
    fn append(&mut self, data: &[u8]);
    /// The stored bytes.
    fn as_slice(&self) -> &[u8];
    /// Forgets everything.
    fn clear(&mut self);
}

/// A [`ReassemblyBuffer`] over a caller-provided slice (no allocation).
#[derive(Debug)]
pub struct SliceBuffer<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> SliceBuffer<'a> {
    /// An empty buffer storing into `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, len: 0 }
    }
}

impl ReassemblyBuffer for SliceBuffer<'_> {
    fn len(&self) -> usize {
        self.len
    }
    fn capacity(&self) -> usize {
        self.buf.len()
    }
    fn append(&mut self, data: &[u8]) {
        let end = (self.len + data.len()).min(self.buf.len());
        let n = end - self.len;
        self.buf[self.len..end].copy_from_slice(&data[..n]);
        self.len = end;
    }
    fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len]
    }
    fn clear(&mut self) {
        self.len = 0;
    }
}

/// A growable [`ReassemblyBuffer`] with a size limit, so a peer cannot make it grow
/// without bound.
#[cfg(feature = "alloc")]
#[derive(Debug, Clone, Default)]
pub struct VecBuffer {
    data: alloc::vec::Vec<u8>,
    limit: usize,
}

#[cfg(feature = "alloc")]
impl VecBuffer {
    /// An empty buffer accepting at most `limit` bytes.
    #[must_use]
    pub const fn with_limit(limit: usize) -> Self {
        Self {
            data: alloc::vec::Vec::new(),
            limit,
        }
    }

    /// The stored bytes, taken out.
    #[must_use]
    pub fn into_vec(self) -> alloc::vec::Vec<u8> {
        self.data
    }
}

#[cfg(feature = "alloc")]
impl ReassemblyBuffer for VecBuffer {
    fn len(&self) -> usize {
        self.data.len()
    }
    fn capacity(&self) -> usize {
        self.limit
    }
    fn append(&mut self, data: &[u8]) {
        self.data.extend_from_slice(data);
    }
    fn as_slice(&self) -> &[u8] {
        &self.data
    }
    fn clear(&mut self) {
        self.data.clear();
    }
}

/// What a successful [`Reassembler::push`] means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The segment was taken; more are needed. `last` is the segment to acknowledge.
    NeedMore {
        /// Highest segment received in order.
        last: u32,
    },
    /// The Last segment arrived: the message is complete.
    Complete,
}

/// Joins RMPP DATA segments of one message, checking numbering, flags, PayloadLength
/// and that every segment belongs to the same transaction.
#[derive(Debug)]
pub struct Reassembler<B> {
    layout: RmppLayout,
    buf: B,
    header: [u8; SA_HEADER_SIZE],
    next: u32,
    expected: Option<u32>,
    first_data_len: Option<usize>,
    complete: bool,
}

impl<B: ReassemblyBuffer> Reassembler<B> {
    /// An empty reassembler for `layout`, storing into `buf` (cleared).
    pub fn new(layout: RmppLayout, mut buf: B) -> Self {
        buf.clear();
        Self {
            layout,
            buf,
            header: [0; SA_HEADER_SIZE],
            next: 1,
            expected: None,
            first_data_len: None,
            complete: false,
        }
    }

    /// An SA reassembler.
    pub fn sa(buf: B) -> Self {
        Self::new(RmppLayout::SA, buf)
    }

    /// Starts over with an empty buffer.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.header = [0; SA_HEADER_SIZE];
        self.next = 1;
        self.expected = None;
        self.first_data_len = None;
        self.complete = false;
    }

    /// Takes one received MAD.
    ///
    /// # Errors
    /// Any [`RmppError`]; the reassembler is then unchanged.
    pub fn push(&mut self, mad: &[u8]) -> Result<Progress, RmppError> {
        crate::field::check_len("RMPP segment", mad, MAD_SIZE)?;
        let h = RmppHeader::parse(&mad[RMPP_HEADER_OFFSET..])?;
        let segment = h.data1;
        if h.rmpp_type != RmppType::Data {
            return Err(RmppError::NotData(h.rmpp_type));
        }
        if !h.flags.active() {
            return Err(RmppError::NotActive { segment });
        }
        if segment < self.next {
            return Err(RmppError::Duplicate {
                segment,
                expected: self.next,
            });
        }
        if self.complete {
            return Err(RmppError::TooManySegments {
                segment,
                last: self.next - 1,
            });
        }
        if segment > self.next {
            return Err(RmppError::OutOfOrder {
                expected: self.next,
                got: segment,
            });
        }
        let first = segment == 1;
        if h.flags.first() != first {
            return Err(RmppError::FirstFlag {
                segment,
                first: h.flags.first(),
            });
        }
        let extra = self.layout.extra();
        let dps = self.layout.data_per_segment();
        let bad_len = RmppError::PayloadLength {
            segment,
            value: h.data2,
        };
        let mut expected = self.expected;
        let mut first_data_len = self.first_data_len;
        if first {
            // PayloadLength = D + extra * S with D in (dps * (S - 1), dps * S], so S is
            // PayloadLength / 220 rounded up; 0 means the sender did not say.
            let p = h.data2 as usize;
            if p != 0 {
                let s = p.div_ceil(SEGMENT_PAYLOAD_UNIT);
                let d = p.checked_sub(extra * s).ok_or(bad_len)?;
                expected = Some(u32::try_from(s).map_err(|_| bad_len)?);
                first_data_len = Some(d);
            }
        } else {
            self.check_same(mad, segment)?;
        }
        if let Some(t) = expected {
            if segment > t {
                return Err(RmppError::TooManySegments { segment, last: t });
            }
            if h.flags.last() != (segment == t) {
                return Err(RmppError::LastFlag {
                    segment,
                    last: h.flags.last(),
                    expected: t,
                });
            }
        }
        let n = if h.flags.last() {
            let p = h.data2 as usize;
            if p < extra || p > SEGMENT_PAYLOAD_UNIT {
                return Err(bad_len);
            }
            p - extra
        } else {
            dps
        };
        let need = self.buf.len() + n;
        if h.flags.last() && first_data_len.is_some_and(|d| d != need) {
            return Err(bad_len);
        }
        if need > self.buf.capacity() {
            return Err(RmppError::Overflow {
                need,
                capacity: self.buf.capacity(),
            });
        }
        // Every check passed: commit.
        if first {
            let hl = self.layout.header_len;
            self.header[..hl].copy_from_slice(&mad[..hl]);
        }
        self.expected = expected;
        self.first_data_len = first_data_len;
        let hl = self.layout.header_len;
        self.buf.append(&mad[hl..hl + n]);
        self.next += 1;
        if h.flags.last() {
            self.complete = true;
            Ok(Progress::Complete)
        } else {
            Ok(Progress::NeedMore { last: segment })
        }
    }

    fn check_same(&self, mad: &[u8], segment: u32) -> Result<(), RmppError> {
        // Bytes 1 (class), 8..16 (TransactionID), 16..18 (AttributeID).
        for (range, field) in [
            (1..2, "MgmtClass"),
            (8..16, "TransactionID"),
            (16..18, "AttributeID"),
        ] {
            if mad[range.clone()] != self.header[range] {
                return Err(RmppError::Foreign { segment, field });
            }
        }
        Ok(())
    }

    /// Whether the Last segment has arrived.
    #[must_use]
    pub const fn is_complete(&self) -> bool {
        self.complete
    }

    /// Highest segment received in order (0 before the first).
    #[must_use]
    pub const fn last_segment(&self) -> u32 {
        self.next - 1
    }

    /// Segments announced by the first segment's PayloadLength, if it gave one.
    #[must_use]
    pub const fn expected_segments(&self) -> Option<u32> {
        self.expected
    }

    /// The data received so far (all of it once complete).
    #[must_use]
    pub fn data(&self) -> &[u8] {
        self.buf.as_slice()
    }

    /// The class header of segment 1 (its first `header_len` bytes); zeros before it.
    #[must_use]
    pub fn header(&self) -> &[u8] {
        &self.header[..self.layout.header_len]
    }

    /// The records of a complete SA message, spaced by its AttributeOffset.
    ///
    /// # Errors
    /// [`RmppError::Incomplete`] before the Last segment; [`RmppError::Wire`] when the
    /// AttributeOffset cannot hold an `R`.
    pub fn records<R: WireStruct>(&self) -> Result<RecordIter<'_, R>, RmppError> {
        if !self.complete {
            return Err(RmppError::Incomplete);
        }
        // AttributeOffset lives at bytes 44..46 of the SA header.
        let ao = u16::from_be_bytes([self.header[44], self.header[45]]);
        Ok(records::<R>(self.data(), ao)?)
    }

    /// Gives the storage back.
    pub fn into_buffer(self) -> B {
        self.buf
    }

    /// An ACK for what has arrived: segment 1's header with the R bit flipped,
    /// RMPPType ACK, SegmentNumber = [`Self::last_segment`], NewWindowLast =
    /// `last_segment + window`, no data.
    #[must_use]
    pub fn ack(&self, window: u32) -> [u8; MAD_SIZE] {
        let mut out = [0u8; MAD_SIZE];
        let hl = self.layout.header_len;
        out[..hl].copy_from_slice(&self.header[..hl]);
        out[3] ^= 0x80;
        let last = self.last_segment();
        RmppHeader {
            version: RMPP_VERSION,
            rmpp_type: RmppType::Ack,
            resp_time: NO_RESP_TIME,
            flags: RmppFlags::ACTIVE,
            status: RmppStatus::Normal,
            data1: last,
            data2: last.saturating_add(window),
        }
        .emit(&mut RmppHeaderView::new_unchecked(
            &mut out[RMPP_HEADER_OFFSET..],
        ));
        out
    }
}

/// How a [`Sender`] transfer stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SenderState {
    /// Segments remain to be sent or acknowledged.
    Sending,
    /// The receiver acknowledged the last segment.
    Complete,
    /// The receiver sent STOP with this status.
    Stopped(RmppStatus),
    /// The transfer was aborted with this status (by the receiver, or by us after a bad
    /// ACK or too many retries; our ABORT MAD is then waiting in `poll_transmit`).
    Aborted(RmppStatus),
}

/// The sending side of an RMPP transfer over a [`Segmenter`], sans IO.
///
/// Run loop: after any input, drain [`Self::poll_transmit`], then wait for a MAD (feed
/// it to [`Self::handle`]) or until [`Self::poll_timeout`] (call
/// [`Self::handle_timeout`]). The window starts at one segment, as Linux does, and then
/// follows the receiver's NewWindowLast; a time-out without progress resends from the
/// first unacknowledged segment (go-back-N), at most `max_retries` times in a row.
/// With [`Self::with_total_timeout`], the whole transfer also has a time limit (the
/// total transaction timer): a receiver that keeps ACKing just often enough to dodge
/// every single time-out is cut off with ABORT status 118 (total time too long).
#[derive(Debug, Clone)]
pub struct Sender<P> {
    seg: Segmenter<P>,
    acked: u32,
    next: u32,
    sent_max: u32,
    window_last: u32,
    timeout: Duration,
    deadline: Option<Instant>,
    retries: u32,
    max_retries: u32,
    /// Limit on the whole transfer, from the first segment sent.
    total: Option<Duration>,
    /// When the total timer runs out (set when the first segment leaves).
    total_deadline: Option<Instant>,
    state: SenderState,
    abort_pending: bool,
}

impl<P: RmppPayload> Sender<P> {
    /// A sender of `seg`'s segments; `timeout` is how long to wait for an ACK that
    /// moves the transfer forward.
    pub fn new(seg: Segmenter<P>, timeout: Duration, max_retries: u32) -> Self {
        Self {
            seg,
            acked: 0,
            next: 1,
            sent_max: 0,
            window_last: 1,
            timeout,
            deadline: None,
            retries: 0,
            max_retries,
            total: None,
            total_deadline: None,
            state: SenderState::Sending,
            abort_pending: false,
        }
    }

    /// Limits the whole transfer to `total` from its first segment: when it runs out
    /// before the receiver acknowledged the last segment, the transfer is aborted with
    /// [`RmppStatus::TotalTimeTooLong`] (118), however regularly ACKs were coming.
    #[must_use]
    pub const fn with_total_timeout(mut self, total: Duration) -> Self {
        self.total = Some(total);
        self
    }

    /// The transfer's state.
    #[must_use]
    pub const fn state(&self) -> SenderState {
        self.state
    }

    /// Highest segment the receiver acknowledged.
    #[must_use]
    pub const fn acked(&self) -> u32 {
        self.acked
    }

    /// The segmenter.
    #[must_use]
    pub const fn segmenter(&self) -> &Segmenter<P> {
        &self.seg
    }

    /// The next MAD to send now, if any: a segment inside the window, or our ABORT.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<[u8; MAD_SIZE]> {
        if self.abort_pending {
            self.abort_pending = false;
            if let SenderState::Aborted(status) = self.state {
                return Some(self.control(RmppType::Abort, status));
            }
        }
        if self.state != SenderState::Sending || self.next > self.window_last {
            return None;
        }
        let mad = self.seg.segment(self.next).ok()?;
        self.sent_max = self.sent_max.max(self.next);
        self.next += 1;
        if self.deadline.is_none() {
            self.deadline = Some(now + self.timeout);
        }
        if self.total_deadline.is_none() {
            self.total_deadline = self.total.map(|t| now + t);
        }
        Some(mad)
    }

    /// When [`Self::handle_timeout`] is due, if anything is outstanding: the ACK
    /// time-out or the total timer, whichever comes first.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            SenderState::Sending => match (self.deadline, self.total_deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (Some(a), None) | (None, Some(a)) => Some(a),
                (None, None) => None,
            },
            _ => None,
        }
    }

    /// Time passes: past the total timer, abort (TotalTimeTooLong); without an ACK
    /// since the deadline, resend from the first unacknowledged segment, or abort
    /// (TooManyRetries) after `max_retries`.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.state != SenderState::Sending {
            return;
        }
        if self.total_deadline.is_some_and(|t| now >= t) {
            self.abort(RmppStatus::TotalTimeTooLong);
            return;
        }
        if self.deadline.is_none_or(|d| now < d) {
            return;
        }
        self.deadline = None;
        if self.retries >= self.max_retries {
            self.abort(RmppStatus::TooManyRetries);
            return;
        }
        self.retries += 1;
        self.next = self.acked + 1;
    }

    /// Takes a MAD from the receiver: ACK, STOP or ABORT of this transfer.
    ///
    /// A bad ACK (for a segment never sent, or a window ending before it) is not an
    /// error of the call: it aborts the transfer, the state says why and the ABORT MAD
    /// waits in [`Self::poll_transmit`]. Stale ACKs are ignored.
    ///
    /// # Errors
    /// [`RmppError::Wire`] for a short MAD, [`RmppError::Foreign`] for another
    /// transaction's MAD, [`RmppError::NotData`] (with the type found) for a MAD that
    /// is not ACK, STOP or ABORT.
    pub fn handle(&mut self, mad: &[u8], now: Instant) -> Result<SenderState, RmppError> {
        crate::field::check_len("RMPP ACK", mad, MAD_SIZE)?;
        let h = RmppHeader::parse(&mad[RMPP_HEADER_OFFSET..])?;
        for (range, field) in [
            (1..2, "MgmtClass"),
            (8..16, "TransactionID"),
            (16..18, "AttributeID"),
        ] {
            if mad[range.clone()] != self.seg.header[range] {
                return Err(RmppError::Foreign {
                    segment: h.data1,
                    field,
                });
            }
        }
        if self.state != SenderState::Sending {
            return Ok(self.state);
        }
        match h.rmpp_type {
            RmppType::Ack => {
                let (seg, nwl) = (h.data1, h.data2);
                let count = self.seg.count;
                if seg > count || seg > self.sent_max {
                    // Acknowledges something never sent.
                    self.abort(RmppStatus::SegmentNumberTooBig);
                } else if nwl < seg {
                    self.abort(RmppStatus::NewWindowLastTooSmall);
                } else if seg >= self.acked {
                    if seg > self.acked {
                        self.retries = 0;
                        self.deadline = None;
                    }
                    self.acked = seg;
                    self.window_last = self.window_last.max(nwl.min(count));
                    if seg == count {
                        self.state = SenderState::Complete;
                    } else if self.acked < self.sent_max && self.deadline.is_none() {
                        // Segments still in flight: keep a timer on them.
                        self.deadline = Some(now + self.timeout);
                    }
                }
            }
            RmppType::Stop => self.state = SenderState::Stopped(h.status),
            RmppType::Abort => self.state = SenderState::Aborted(h.status),
            other => return Err(RmppError::NotData(other)),
        }
        Ok(self.state)
    }

    fn abort(&mut self, status: RmppStatus) {
        self.state = SenderState::Aborted(status);
        self.abort_pending = true;
        self.deadline = None;
    }

    /// A STOP or ABORT MAD for this transfer with `status`.
    #[must_use]
    pub fn control(&self, kind: RmppType, status: RmppStatus) -> [u8; MAD_SIZE] {
        let mut out = [0u8; MAD_SIZE];
        let hl = self.seg.layout.header_len;
        out[..hl].copy_from_slice(&self.seg.header[..hl]);
        RmppHeader {
            version: RMPP_VERSION,
            rmpp_type: kind,
            resp_time: NO_RESP_TIME,
            flags: RmppFlags::ACTIVE,
            status,
            data1: 0,
            data2: 0,
        }
        .emit(&mut RmppHeaderView::new_unchecked(
            &mut out[RMPP_HEADER_OFFSET..],
        ));
        out
    }
}
