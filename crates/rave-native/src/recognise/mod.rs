//! Recognising an architecture from the ONNX graph alone: each matcher walks the graph from
//! the input and must account for every node; the closest failure is the refusal reason.

mod compact;
mod folded_tail;
mod matcher;
mod resize;
mod rrdb;

use std::path::Path;

use crate::graph::Graph;
use crate::network::{Architecture, Network};
use crate::refusal::Refusal;
use matcher::Matcher;

/// Describe the model in `bytes` (a serialized ONNX `ModelProto`) if its graph is exactly
/// SRVGGNetCompact or RRDBNet; otherwise say what did not match.
pub fn recognise(bytes: &[u8]) -> Result<Network, Refusal> {
    let graph = Graph::parse(bytes)?;
    let storage = graph.storage();
    let mut m = Matcher::new(&graph);
    let compact = match compact::match_graph(&mut m) {
        Ok((net, scale)) => {
            return Ok(Network {
                architecture: Architecture::Compact(net),
                scale,
                storage,
            });
        }
        Err(reason) => m.mismatch("SRVGGNetCompact", reason),
    };
    let mut m = Matcher::new(&graph);
    let rrdb = match rrdb::match_graph(&mut m) {
        Ok((net, scale)) => {
            return Ok(Network {
                architecture: Architecture::Rrdb(net),
                scale,
                storage,
            });
        }
        Err(reason) => m.mismatch("RRDBNet", reason),
    };
    Err(Refusal::NoMatch(
        if rrdb.matched_nodes > compact.matched_nodes {
            rrdb
        } else {
            compact
        },
    ))
}

/// [`recognise`] the `.onnx` file at `path`.
pub fn recognise_file(path: &Path) -> Result<Network, Refusal> {
    let bytes = std::fs::read(path)
        .map_err(|e| Refusal::Unreadable(format!("cannot read {}: {e}", path.display())))?;
    recognise(&bytes)
}
