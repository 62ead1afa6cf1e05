//! Which AttributeID each SMP attribute travels under, so clients can ask for a type
//! (`get::<PortInfo>()`) instead of pairing numbers with layouts by hand.

use super::{
    GuidInfo, LedInfo, LinearForwardingTable, LinkSpeedWidthPairsTable, MlnxExtPortInfo,
    MulticastForwardingTable, NodeDescription, NodeInfo, PKeyTable, PortInfo, PortInfoExtended,
    RandomForwardingTable, SlToVlMappingTable, SmAttributeId, SmInfo, SwitchInfo, VendorDiag,
    VlArbitrationTable,
};
use crate::field::WireStruct;

/// An attribute carried in the 64-byte data area of an SMP.
pub trait SmpAttribute: WireStruct {
    /// Its AttributeID.
    const ID: SmAttributeId;
}

macro_rules! smp_attributes {
    ($($ty:ty => $id:ident),* $(,)?) => {
        $(impl SmpAttribute for $ty {
            const ID: SmAttributeId = SmAttributeId::$id;
        })*

        impl SmAttributeId {
            /// The name of the attribute's layout ([`WireStruct::LABEL`], the IBA's
            /// spelling: `"P_KeyTable"`, `"SLtoVLMappingTable"`), for the attributes
            /// this crate lays out; `None` for the others.
            #[must_use]
            pub fn label(self) -> Option<&'static str> {
                match self {
                    $(SmAttributeId::$id => Some(<$ty as WireStruct>::LABEL),)*
                    _ => None,
                }
            }

            /// Runs `v` with the type of the attribute this ID carries, for the
            /// attributes this crate lays out; `None` for the others.
            pub fn visit<V: $crate::field::LayoutVisitor>(self, v: V) -> Option<V::Output> {
                match self {
                    $(SmAttributeId::$id => Some(v.visit::<$ty>()),)*
                    _ => None,
                }
            }
        }
    };
}

smp_attributes! {
    NodeDescription => NodeDescription,
    NodeInfo => NodeInfo,
    SwitchInfo => SwitchInfo,
    GuidInfo => GuidInfo,
    PortInfo => PortInfo,
    PKeyTable => PKeyTable,
    SlToVlMappingTable => SlToVlMappingTable,
    VlArbitrationTable => VlArbitrationTable,
    LinearForwardingTable => LinearForwardingTable,
    RandomForwardingTable => RandomForwardingTable,
    MulticastForwardingTable => MulticastForwardingTable,
    LinkSpeedWidthPairsTable => LinkSpeedWidthPairsTable,
    SmInfo => SmInfo,
    VendorDiag => VendorDiag,
    LedInfo => LedInfo,
    PortInfoExtended => PortInfoExtended,
    MlnxExtPortInfo => MlnxExtPortInfo,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_attribute_fits_the_smp_data_area() {
        fn fits<A: SmpAttribute>() -> bool {
            A::SIZE <= 64
        }
        assert!(fits::<NodeInfo>() && fits::<PortInfo>() && fits::<SwitchInfo>());
        assert!(fits::<LinearForwardingTable>() && fits::<MulticastForwardingTable>());
        assert!(fits::<NodeDescription>() && fits::<SmInfo>() && fits::<PKeyTable>());
        assert_eq!(<PortInfo as SmpAttribute>::ID, SmAttributeId::PortInfo);
        assert_eq!(SmAttributeId::PKeyTable.label(), Some("P_KeyTable"));
        assert_eq!(
            SmAttributeId::SlToVlMappingTable.label(),
            Some("SLtoVLMappingTable")
        );
        assert_eq!(SmAttributeId::Notice.label(), None);
        assert_eq!(
            <NodeDescription as SmpAttribute>::ID,
            SmAttributeId::NodeDescription
        );
    }
}
