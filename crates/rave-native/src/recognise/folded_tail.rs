//! Matching RAVE's folded x2 tail (tools/fold_tail.py): the last Conv's output padded by one
//! row and column on each side with channel-remapped edge copies (Slice, Gather, Concat),
//! joined to the edge-padded input, one valid 3x3 Conv and DepthToSpace.

use super::compact::depth_to_space;
use super::matcher::{Matcher, Step};
use crate::network::FoldedTail;

/// Match the tail reading `c` (the last Conv's output, `channels` wide) to the output.
pub fn match_tail(m: &mut Matcher, c: &str, channels: usize) -> Step<FoldedTail> {
    let (top, bottom, rows) = edge_pad(m, c, 2, channels)?;
    let (left, right, padded) = edge_pad(m, &rows, 3, channels)?;
    let input = m.graph().input().to_string();
    let pads = m.readers_of_type(&input, "Pad");
    let [pi] = pads[..] else {
        return Err("the input is not edge-padded for the folded tail (no single Pad)".into());
    };
    if m.graph().consumers(&input).len() != 2 {
        return Err(format!(
            "the input is read by {} nodes, expected the first Conv and the tail's Pad",
            m.graph().consumers(&input).len()
        ));
    }
    let pad = m.take(pi, "Pad", "on the input")?;
    m.only_attributes(pi, &["mode"])?;
    let mode = m.string(pi, "mode", "constant")?;
    let [_, amounts] = &pad.input[..] else {
        return Err(format!(
            "{}: Pad with {} inputs, expected 2",
            m.label(pi),
            pad.input.len()
        ));
    };
    let amounts = m.int64s(amounts, "the Pad amounts")?;
    if mode != "edge" || amounts != [0, 0, 1, 1, 0, 0, 1, 1] {
        return Err(format!(
            "{}: Pad {mode} {amounts:?}, expected edge [0,0,1,1,0,0,1,1]",
            m.label(pi)
        ));
    }
    let (ci, cat) = m.sole_consumer(&padded, "Concat", "joining the padded features and input")?;
    m.only_attributes(ci, &["axis"])?;
    if m.int(ci, "axis", 0)? != 1 || cat.input != [padded.clone(), pad.output[0].clone()] {
        return Err(format!(
            "{}: expected Concat(axis 1) of the padded features then the padded input",
            m.label(ci)
        ));
    }
    let cat_out = cat.output[0].clone();
    let ki = m.sole_reader(&cat_out, "after the tail's Concat")?;
    let conv = m.conv3x3(ki, channels + 3, 0, "after the tail's Concat")?;
    let block = (1..=8u32)
        .find(|b| 3 * (b * b) as usize == conv.out_channels)
        .ok_or_else(|| {
            format!(
                "{}: the tail Conv writes {} channels, not 3 x a square",
                m.label(ki),
                conv.out_channels
            )
        })?;
    let k_out = m.node(ki).output[0].clone();
    let (di, d2s) = m.sole_consumer(&k_out, "DepthToSpace", "after the tail Conv")?;
    depth_to_space(m, di, block)?;
    m.finish(d2s.output[0].clone())?;
    Ok(FoldedTail {
        top,
        bottom,
        left,
        right,
        conv,
        block,
    })
}

/// Match `Concat([Gather(Slice(x, first), a), x, Gather(Slice(x, last), b)], axis)`:
/// returns the two channel maps and the Concat's output.
fn edge_pad(
    m: &mut Matcher,
    x: &str,
    axis: i64,
    channels: usize,
) -> Step<(Vec<usize>, Vec<usize>, String)> {
    let slices = m.readers_of_type(x, "Slice");
    let [s1, s2] = slices[..] else {
        return Err(format!(
            "{x} is read by {} Slice nodes, expected 2 (the folded tail's edges on axis {axis})",
            slices.len()
        ));
    };
    let mut first = None;
    let mut last = None;
    for s in [s1, s2] {
        let (start, end) = slice(m, s, axis)?;
        match (start, end) {
            (0, 1) => first = Some(s),
            (-1, e) if e >= i32::MAX as i64 => last = Some(s),
            _ => {
                return Err(format!(
                    "{}: Slice {start}..{end} on axis {axis}, expected the first or last row",
                    m.label(s)
                ));
            }
        }
    }
    let (Some(first), Some(last)) = (first, last) else {
        return Err(format!(
            "{x}: the two Slices do not take the first and last rows"
        ));
    };
    let before = gather(m, first, channels)?;
    let after = gather(m, last, channels)?;
    let concats = m.readers_of_type(x, "Concat");
    let [ci] = concats[..] else {
        return Err(format!("{x} is not padded by one Concat on axis {axis}"));
    };
    if m.graph().consumers(x).len() != 3 {
        return Err(format!(
            "{x} is read outside the folded tail's edge padding"
        ));
    }
    let cat = m.take(ci, "Concat", "padding the edges")?;
    m.only_attributes(ci, &["axis"])?;
    if m.int(ci, "axis", 0)? != axis
        || cat.input != [before.1.clone(), x.to_string(), after.1.clone()]
    {
        return Err(format!(
            "{}: expected Concat(axis {axis}) of the first edge, {x} and the last edge",
            m.label(ci)
        ));
    }
    Ok((before.0, after.0, cat.output[0].clone()))
}

/// Take Slice node `s` (one axis, step 1) and return its start and end.
fn slice(m: &mut Matcher, s: usize, axis: i64) -> Step<(i64, i64)> {
    let n = m.take(s, "Slice", "taking an edge")?;
    m.only_attributes(s, &[])?;
    let (starts, ends, axes) = match &n.input[..] {
        [_, a, b, c] => (a, b, c),
        [_, a, b, c, steps] if m.int64s(steps, "the Slice steps")? == [1] => (a, b, c),
        _ => {
            return Err(format!(
                "{}: Slice inputs are not data, starts, ends, axes",
                m.label(s)
            ));
        }
    };
    let (starts, ends, axes) = (
        m.int64s(starts, "the Slice starts")?,
        m.int64s(ends, "the Slice ends")?,
        m.int64s(axes, "the Slice axes")?,
    );
    match (&starts[..], &ends[..], &axes[..]) {
        ([a], [b], [x]) if *x == axis => Ok((*a, *b)),
        _ => Err(format!(
            "{}: Slice {starts:?}..{ends:?} on axes {axes:?}, expected one range on axis {axis}",
            m.label(s)
        )),
    }
}

/// The Gather (axis 1, `channels` indices) reading Slice `s`'s output: its indices and output.
fn gather(m: &mut Matcher, s: usize, channels: usize) -> Step<(Vec<usize>, String)> {
    let edge = m.node(s).output[0].clone();
    let (gi, g) = m.sole_consumer(&edge, "Gather", "after an edge Slice")?;
    m.only_attributes(gi, &["axis"])?;
    let [_, idx] = &g.input[..] else {
        return Err(format!(
            "{}: Gather with {} inputs",
            m.label(gi),
            g.input.len()
        ));
    };
    let idx = m.int64s(idx, "the Gather indices")?;
    let valid = idx.len() == channels && idx.iter().all(|&v| (0..channels as i64).contains(&v));
    if m.int(gi, "axis", 0)? != 1 || !valid {
        return Err(format!(
            "{}: expected Gather on axis 1 of {channels} channel indices",
            m.label(gi)
        ));
    }
    Ok((
        idx.iter().map(|&v| v as usize).collect(),
        g.output[0].clone(),
    ))
}
