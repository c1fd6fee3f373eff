//! SRVGGNetCompact on the CPU: the conv + PReLU body, the last conv, and the tail.

use super::FeatureMap;
use super::ops::{
    activate, add_scaled, concat, conv3x3, cubic_resize, depth_to_space, edge_pad,
    nearest_upsample, remapped_edges,
};
use crate::network::{CompactNet, CompactTail};

/// Run `net` on the RGB map `x`.
pub fn run(net: &CompactNet, x: &FeatureMap) -> FeatureMap {
    let mut f = x.clone();
    for layer in &net.body {
        f = conv3x3(&f, &layer.conv);
        activate(&mut f, &layer.activation);
    }
    let c = conv3x3(&f, &net.last);
    let u = net.shuffle as usize;
    let residual = || {
        let mut out = depth_to_space(&c, u);
        add_scaled(&mut out, &nearest_upsample(x, u), 1.0);
        out
    };
    match &net.tail {
        CompactTail::Residual => residual(),
        CompactTail::CubicResize { factor } => cubic_resize(&residual(), *factor),
        CompactTail::Folded(t) => {
            let rows = remapped_edges(&c, true, &t.top, &t.bottom);
            let padded = remapped_edges(&rows, false, &t.left, &t.right);
            let joined = concat(&[&padded, &edge_pad(x)]);
            depth_to_space(&conv3x3(&joined, &t.conv), t.block as usize)
        }
    }
}
