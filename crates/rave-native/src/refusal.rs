//! Why a model is not run natively: it could not be read, or its graph is not exactly one of
//! the recognised architectures. Either way the model still runs on ONNX Runtime.

use std::fmt;

/// Why `recognise` did not describe the model; `Display` is one line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// The file is not a readable ONNX model (I/O, protobuf, missing graph).
    #[error("{0}")]
    Unreadable(String),
    /// The graph is not exactly a recognised network.
    #[error("{0}")]
    NoMatch(Mismatch),
}

/// Where and how a graph departed from the closest recognised architecture.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// The architecture the graph was matched against (e.g. "SRVGGNetCompact").
    pub architecture: &'static str,
    /// How many nodes matched before the departure (the closer candidate is reported).
    pub matched_nodes: usize,
    /// What did not match, e.g. "node 14 (Relu_14): expected PRelu after Conv, found Relu".
    pub reason: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not {}: {}", self.architecture, self.reason)
    }
}
