//! Matching SRVGGNetCompact: Conv 3x3 + PReLU chains from the input, a last Conv to
//! `3 * u²` channels, then the tail (pixel shuffle + nearest-upsampled input, optionally a
//! cubic resize, or RAVE's folded x2 tail, matched in `folded_tail`).

use super::folded_tail;
use super::matcher::{Matcher, Step};
use super::resize;
use crate::network::{Activation, CompactNet, CompactTail, Conv3x3, Layer};
use crate::proto::data_type as proto_type;

/// Match the whole graph; returns the network and its scale.
pub fn match_graph(m: &mut Matcher) -> Step<(CompactNet, u32)> {
    let input = m.graph().input().to_string();
    let convs = m.readers_of_type(&input, "Conv");
    let [mut i] = convs[..] else {
        return Err(format!(
            "the input is read by {} Conv nodes, expected 1",
            convs.len()
        ));
    };
    let mut body = Vec::new();
    let mut channels = 3;
    let mut context = "reading the input";
    let (last, c) = loop {
        let conv = m.conv3x3(i, channels, 1, context)?;
        let out = m.node(i).output[0].clone();
        let readers = m.graph().consumers(&out);
        let tail_op = |r: &usize| matches!(m.node(*r).op_type.as_str(), "DepthToSpace" | "Slice");
        if !body.is_empty() && readers.iter().any(tail_op) {
            break (conv, out);
        }
        let r = m.sole_reader(&out, "after Conv")?;
        let op = m.node(r).op_type.as_str();
        if op != "PRelu" {
            let what = if body.is_empty() {
                "PRelu"
            } else {
                "PRelu or the pixel-shuffle tail"
            };
            return Err(format!(
                "{}: expected {what} after Conv, found {op}",
                m.label(r)
            ));
        }
        let p = m.take(r, "PRelu", "after Conv")?;
        m.only_attributes(r, &[])?;
        let slopes = prelu_slopes(m, r, &p.input, conv.out_channels)?;
        channels = conv.out_channels;
        body.push(Layer {
            conv,
            activation: Activation::PRelu(slopes),
        });
        let value = p.output[0].clone();
        i = m.sole_reader(&value, "after PRelu")?;
        context = "after PRelu";
    };
    let shuffle = shuffle_factor(&last)?;
    let (tail, scale) = if m.readers_of_type(&c, "DepthToSpace").is_empty() {
        let t = folded_tail::match_tail(m, &c, last.out_channels)?;
        let block = t.block;
        (CompactTail::Folded(t), block)
    } else {
        residual_tail(m, &c, shuffle)?
    };
    Ok((
        CompactNet {
            body,
            last,
            shuffle,
            tail,
        },
        scale,
    ))
}

/// PReLU slopes, one per channel: shape `[C,1,1]` or `[1,C,1,1]` (a single slope, `[1]`,
/// applies to every channel).
fn prelu_slopes(m: &mut Matcher, i: usize, inputs: &[String], channels: usize) -> Step<Vec<f32>> {
    let [_, slope] = inputs else {
        return Err(format!(
            "{}: PRelu with {} inputs",
            m.label(i),
            inputs.len()
        ));
    };
    let s = m.floats(slope, "the PRelu slope")?;
    match &s.dims[..] {
        [c, 1, 1] | [1, c, 1, 1] if *c == channels => Ok(s.values),
        [1] | [1, 1, 1] | [1, 1, 1, 1] => Ok(vec![s.values[0]; channels]),
        d => Err(format!(
            "{}: PRelu slope shape {d:?}, expected [{channels},1,1] (one per channel)",
            m.label(i)
        )),
    }
}

/// `u` where the last conv writes `3 * u²` channels.
fn shuffle_factor(last: &Conv3x3) -> Step<u32> {
    (1..=8u32)
        .find(|u| 3 * (u * u) as usize == last.out_channels)
        .ok_or_else(|| {
            format!(
                "the last Conv ({}) writes {} channels, not 3 x a square",
                last.node, last.out_channels
            )
        })
}

/// `DepthToSpace(c) + Resize_nearest(input)`, then optionally a cubic Resize.
fn residual_tail(m: &mut Matcher, c: &str, shuffle: u32) -> Step<(CompactTail, u32)> {
    let (di, d2s) = m.sole_consumer(c, "DepthToSpace", "after the last Conv")?;
    depth_to_space(m, di, shuffle)?;
    let shuffled = d2s.output[0].clone();
    let (ai, add) = m.sole_consumer(&shuffled, "Add", "after DepthToSpace")?;
    m.only_attributes(ai, &[])?;
    let [a, b] = &add.input[..] else {
        return Err(format!(
            "{}: Add with {} inputs",
            m.label(ai),
            add.input.len()
        ));
    };
    let skip = if *a == shuffled { b } else { a };
    let ri = residual_resize(m, ai, skip)?;
    resize::nearest(m, ri, shuffle)?;
    let input = m.graph().input().to_string();
    if m.graph().consumers(&input).len() != 2 {
        return Err(format!(
            "the input is read by {} nodes, expected the first Conv and the residual Resize",
            m.graph().consumers(&input).len()
        ));
    }
    let sum = add.output[0].clone();
    let readers = m.readers_of_type(&sum, "Resize");
    let (tail, scale, end) = match readers[..] {
        [ci] if m.graph().consumers(&sum).len() == 1 => {
            let factor = resize::cubic(m, ci)?;
            let scale = factor * shuffle as f32;
            if (scale - scale.round()).abs() > 1e-4 || scale.round() < 1.0 {
                return Err(format!(
                    "{}: the cubic Resize makes the scale {scale}, not a whole number",
                    m.label(ci)
                ));
            }
            let out = m.node(ci).output[0].clone();
            (
                CompactTail::CubicResize { factor },
                scale.round() as u32,
                out,
            )
        }
        _ => (CompactTail::Residual, shuffle, sum),
    };
    m.finish(end)?;
    Ok((tail, scale))
}

/// Take the Resize making the residual `skip` from the input, seen through the float32 Casts
/// around it that onnxconverter-common's fp16 conversion adds (exact: nearest sampling of
/// half values in float32 casts back to the same values).
fn residual_resize(m: &mut Matcher, add: usize, skip: &str) -> Step<usize> {
    let input = m.graph().input().to_string();
    let why = format!(
        "{}: the residual {skip} is not a Resize of the input",
        m.label(add)
    );
    let mut r = m.graph().producer(skip).ok_or_else(|| why.clone())?;
    let cast = m.node(r).op_type == "Cast";
    if cast {
        resize::cast_to(m, r, proto_type::FLOAT16, "around the residual Resize")?;
        r = m
            .graph()
            .producer(&m.node(r).input[0])
            .ok_or_else(|| why.clone())?;
    }
    m.take(r, "Resize", "on the input (the residual)")?;
    let mut src = m.node(r).input.first().cloned().unwrap_or_default();
    if cast {
        let c = m.graph().producer(&src).ok_or_else(|| why.clone())?;
        resize::cast_to(m, c, proto_type::FLOAT, "around the residual Resize")?;
        src = m.node(c).input[0].clone();
    }
    if src != input {
        return Err(why);
    }
    Ok(r)
}

/// Check node `i` is DepthToSpace by `block` in CRD order (PyTorch's pixel shuffle).
pub fn depth_to_space(m: &Matcher, i: usize, block: u32) -> Step<()> {
    m.only_attributes(i, &["blocksize", "mode"])?;
    let got = m.int(i, "blocksize", 0)?;
    if got != block as i64 {
        return Err(format!(
            "{}: DepthToSpace blocksize {got}, expected {block}",
            m.label(i)
        ));
    }
    let mode = m.string(i, "mode", "DCR")?;
    if mode != "CRD" {
        return Err(format!(
            "{}: DepthToSpace mode {mode}, expected CRD (pixel shuffle)",
            m.label(i)
        ));
    }
    Ok(())
}
