//! RRDBNet on the CPU: conv_first, the RRDB trunk, the trunk residual, nearest x2
//! upsampling convs, conv_hr and conv_last.

use super::FeatureMap;
use super::ops::{activate, add_scaled, concat, conv3x3, nearest_upsample};
use crate::network::{Activation, Conv3x3, DenseBlock, RrdbNet};

/// Run `net` on the RGB map `x`.
pub fn run(net: &RrdbNet, x: &FeatureMap) -> FeatureMap {
    let lrelu = Activation::LeakyRelu(net.alpha);
    let conv_act = |f: &FeatureMap, conv: &Conv3x3| {
        let mut y = conv3x3(f, conv);
        activate(&mut y, &lrelu);
        y
    };
    let feat = conv3x3(x, &net.conv_first);
    let mut trunk = feat.clone();
    for block in &net.blocks {
        let mut y = trunk.clone();
        for dense in &block.dense {
            y = dense_block(dense, &y, net.residual_scale, &conv_act);
        }
        add_scaled(&mut trunk, &y, net.residual_scale);
    }
    let mut f = conv3x3(&trunk, &net.trunk_conv);
    add_scaled(&mut f, &feat, 1.0);
    for conv in &net.upsample {
        f = conv_act(&nearest_upsample(&f, 2), conv);
    }
    let f = conv_act(&f, &net.conv_hr);
    conv3x3(&f, &net.conv_last)
}

/// One residual dense block: `x + scale * conv5([x, x1, x2, x3, x4])`.
fn dense_block(
    block: &DenseBlock,
    x: &FeatureMap,
    scale: f32,
    conv_act: &impl Fn(&FeatureMap, &Conv3x3) -> FeatureMap,
) -> FeatureMap {
    let mut outs: Vec<FeatureMap> = Vec::with_capacity(4);
    for conv in &block.convs[..4] {
        let joined = {
            let mut all = vec![x];
            all.extend(outs.iter());
            concat(&all)
        };
        outs.push(conv_act(&joined, conv));
    }
    let mut all = vec![x];
    all.extend(outs.iter());
    let x5 = conv3x3(&concat(&all), &block.convs[4]);
    let mut out = x.clone();
    add_scaled(&mut out, &x5, scale);
    out
}
