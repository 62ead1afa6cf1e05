//! The one error type of the crate.

/// What went wrong building or driving a simulation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// A node index or GUID that is not in the simulation.
    #[error("no such node: {0}")]
    NoSuchNode(String),
    /// A port that the node does not have.
    #[error("node {node}: no port {port}")]
    NoSuchPort {
        /// Node (GUID in hex).
        node: String,
        /// Port number.
        port: u8,
    },
    /// A port already cabled, or a cable to itself.
    #[error("cannot connect {what}")]
    BadLink {
        /// Which ends.
        what: String,
    },
    /// Two nodes with one GUID.
    #[error("duplicate node GUID {0:#018x}")]
    DuplicateGuid(u64),
    /// An SM is already attached there.
    #[error("an SM is already attached at node {node} port {port}")]
    AlreadyAttached {
        /// Node (GUID in hex).
        node: String,
        /// Port number.
        port: u8,
    },
    /// A fault script line that does not parse.
    #[error("fault script line {line}: {msg}")]
    Script {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// The fabric given to the simulator cannot be simulated.
    #[error("fabric: {0}")]
    Fabric(String),
}
