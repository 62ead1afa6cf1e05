//! Error types: [`FabricError`] for model mutations, [`ParseError`] for files.

use crate::types::{Guid, LinkId, NodeId, PortNum};

/// A mutation of a [`Fabric`](crate::Fabric) that was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FabricError {
    /// No node with this ID.
    #[error("no node {0:?} in this fabric")]
    UnknownNode(NodeId),
    /// No link with this ID.
    #[error("no link {0:?} in this fabric")]
    UnknownLink(LinkId),
    /// A node with this GUID exists already.
    #[error("node GUID {0} is already in the fabric")]
    DuplicateGuid(Guid),
    /// Port count 0, above 254, or a port GUID list of the wrong length.
    #[error("node {guid}: bad port count {num_ports} (must be 1..=254)")]
    BadPortCount {
        /// Node GUID.
        guid: Guid,
        /// The count given.
        num_ports: usize,
    },
    /// Port 0 or above the node's port count.
    #[error("node {guid}: port {port} out of range 1..={num_ports}")]
    PortOutOfRange {
        /// Node GUID.
        guid: Guid,
        /// The port asked for.
        port: PortNum,
        /// The node's port count.
        num_ports: PortNum,
    },
    /// The port already has a link.
    #[error("node {guid}: port {port} is already connected")]
    PortInUse {
        /// Node GUID.
        guid: Guid,
        /// The port.
        port: PortNum,
    },
    /// Both ends on the same node.
    #[error("node {guid}: a link from a node to itself is not allowed")]
    SelfLoop {
        /// Node GUID.
        guid: Guid,
    },
    /// Nothing cabled to this port.
    #[error("node {guid}: port {port} is not connected")]
    NotConnected {
        /// Node GUID.
        guid: Guid,
        /// The port.
        port: PortNum,
    },
    /// A generator was given parameters that describe no valid topology.
    #[error("invalid topology parameters: {0}")]
    BadParameters(String),
}

/// What is wrong with a line of a topology file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The node header names a type other than Switch/Ca/Hca/Rt.
    #[error("unknown node type {0:?} (expected Switch, Ca, Hca or Rt)")]
    UnknownNodeType(String),
    /// Two node records with the same quoted name.
    #[error("duplicate node name {name:?} (first declared on line {first_line})")]
    DuplicateName {
        /// The name.
        name: String,
        /// Where it was first declared.
        first_line: usize,
    },
    /// Two nodes with the same GUID.
    #[error("duplicate node GUID {guid} (first declared on line {first_line})")]
    DuplicateGuid {
        /// The GUID.
        guid: Guid,
        /// Where it was first declared.
        first_line: usize,
    },
    /// A port number outside 1..=port count (of this node or of the remote node).
    #[error("port {port} out of range 1..={num_ports} of node {node:?}")]
    PortOutOfRange {
        /// Node name.
        node: String,
        /// The port number.
        port: u32,
        /// That node's port count.
        num_ports: u32,
    },
    /// Bad port count in a node header.
    #[error("bad port count {0:?} (expected 1..=254)")]
    BadPortCount(String),
    /// The same local port listed twice in one record.
    #[error("port {0} listed twice in this node record")]
    DuplicatePort(u32),
    /// A link whose two ends disagree (A says its port 1 goes to port 2 of B, B says otherwise).
    #[error("link {this} conflicts with line {other_line}: {other}")]
    LinkMismatch {
        /// This line's view of the link.
        this: String,
        /// The conflicting declaration.
        other: String,
        /// Where that was declared.
        other_line: usize,
    },
    /// A link to a node name that no record declares.
    #[error("link to undeclared node {0:?}")]
    UnknownRemote(String),
    /// A node cabled to itself.
    #[error("link from node {0:?} to itself")]
    SelfLoop(String),
    /// A line that stops before its record is complete (missing quote, bracket, ...).
    #[error("truncated record: {0}")]
    Truncated(String),
    /// A port line before any node header.
    #[error("port line outside a node record")]
    PortOutsideNode,
    /// A number or GUID that does not parse.
    #[error("bad number {0:?}")]
    BadNumber(String),
    /// A line that matches nothing in the format.
    #[error("unrecognised line {0:?}")]
    Unrecognised(String),
}

/// A topology file that could not be read: where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}line {line}: {kind}", .file.as_deref().map(|f| format!("{f}: ")).unwrap_or_default())]
pub struct ParseError {
    /// The file name, when read from a file.
    pub file: Option<String>,
    /// 1-based line number.
    pub line: usize,
    /// The reason.
    pub kind: ParseErrorKind,
}
