//! Matching RRDBNet: conv_first, residual-in-residual dense blocks (five convs over growing
//! concatenations, LeakyReLU 0.2, residual scaling 0.2), the trunk conv added to conv_first's
//! output, nearest x2 upsampling convs, conv_hr and conv_last.

use super::matcher::{Matcher, Step};
use super::resize;
use crate::network::{Conv3x3, DenseBlock, Rrdb, RrdbNet};
use crate::proto::data_type as proto_type;

/// RRDBNet's LeakyReLU slope and residual scaling.
const ALPHA: f32 = 0.2;
const RESIDUAL_SCALE: f32 = 0.2;

/// Match the whole graph; returns the network and its scale.
pub fn match_graph(m: &mut Matcher) -> Step<(RrdbNet, u32)> {
    let input = m.graph().input().to_string();
    let convs = m.readers_of_type(&input, "Conv");
    let ([first], 1) = (&convs[..], m.graph().consumers(&input).len()) else {
        return Err("the input is not read by exactly one Conv".into());
    };
    let conv_first = m.conv3x3(*first, 3, 1, "reading the input")?;
    let nf = conv_first.out_channels;
    let feat = m.node(*first).output[0].clone();
    let mut blocks = Vec::new();
    let mut x = feat.clone();
    let trunk = loop {
        let convs = m.readers_of_type(&x, "Conv");
        let [ci] = convs[..] else {
            return Err(format!(
                "{x} is read by {} Conv nodes, expected 1",
                convs.len()
            ));
        };
        let out = &m.node(ci).output[0];
        let dense = m
            .graph()
            .consumers(out)
            .iter()
            .any(|&r| m.node(r).op_type == "LeakyRelu");
        if !dense {
            break ci;
        }
        let (block, y) = rrdb(m, &x, nf)?;
        blocks.push(block);
        x = y;
    };
    if blocks.is_empty() {
        return Err("no residual dense block after the first Conv".into());
    }
    let trunk_conv = m.conv3x3(trunk, nf, 1, "closing the trunk")?;
    let body = m.node(trunk).output[0].clone();
    let (scale, mut v) = residual_sum(m, &body, &feat, None, "the trunk Conv")?;
    debug_assert_eq!(scale, 1.0);
    let mut upsample = Vec::new();
    loop {
        let mut r = m.sole_reader(&v, "after the trunk")?;
        // onnxconverter-common's fp16 conversion runs Resize in float32, between Casts
        // (exact for nearest sampling: the half values come back unchanged).
        let cast = m.node(r).op_type == "Cast";
        if cast {
            resize::cast_to(m, r, proto_type::FLOAT, "around an upsampling Resize")?;
            let out = m.node(r).output[0].clone();
            r = m.sole_reader(&out, "after a Cast to float32")?;
        } else if m.node(r).op_type != "Resize" {
            break;
        }
        m.take(r, "Resize", "after the trunk")?;
        resize::nearest(m, r, 2)?;
        let mut up = m.node(r).output[0].clone();
        if cast {
            let c = m.sole_reader(&up, "after a float32 Resize")?;
            resize::cast_to(m, c, proto_type::FLOAT16, "around an upsampling Resize")?;
            up = m.node(c).output[0].clone();
        }
        let ci = m.sole_reader(&up, "after a nearest x2 Resize")?;
        let (conv, out) = conv_lrelu(m, ci, nf, "after a nearest x2 Resize")?;
        upsample.push(conv);
        v = out;
    }
    if upsample.is_empty() {
        return Err(format!(
            "{}: expected a nearest x2 Resize after the trunk, found {}",
            m.label(m.sole_reader(&v, "")?),
            m.node(m.sole_reader(&v, "")?).op_type
        ));
    }
    let ci = m.sole_reader(&v, "after the upsampling")?;
    let (conv_hr, v) = conv_lrelu(m, ci, nf, "after the upsampling (conv_hr)")?;
    let li = m.sole_reader(&v, "after conv_hr")?;
    let conv_last = m.conv3x3(li, nf, 1, "after conv_hr (conv_last)")?;
    if conv_last.out_channels != 3 {
        return Err(format!(
            "{}: the last Conv writes {} channels, expected 3",
            m.label(li),
            conv_last.out_channels
        ));
    }
    m.finish(m.node(li).output[0].clone())?;
    let scale = 1u32 << upsample.len();
    Ok((
        RrdbNet {
            conv_first,
            blocks,
            trunk_conv,
            upsample,
            conv_hr,
            conv_last,
            alpha: ALPHA,
            residual_scale: RESIDUAL_SCALE,
        },
        scale,
    ))
}

/// One RRDB reading `x`: three dense blocks and the scaled residual.
fn rrdb(m: &mut Matcher, x: &str, nf: usize) -> Step<(Rrdb, String)> {
    let (d1, y1) = dense_block(m, x, nf)?;
    let (d2, y2) = dense_block(m, &y1, nf)?;
    let (d3, y3) = dense_block(m, &y2, nf)?;
    let (_, out) = residual_sum(m, &y3, x, Some(RESIDUAL_SCALE), "the third dense block")?;
    Ok((
        Rrdb {
            dense: [d1, d2, d3],
        },
        out,
    ))
}

/// One residual dense block reading `x`.
fn dense_block(m: &mut Matcher, x: &str, nf: usize) -> Step<(DenseBlock, String)> {
    let mut convs: Vec<Conv3x3> = Vec::with_capacity(5);
    let mut joined: Vec<String> = vec![x.to_string()];
    let mut cat = x.to_string();
    let mut channels = nf;
    for k in 0..4 {
        let ci = if k == 0 {
            match m.readers_of_type(x, "Conv")[..] {
                [ci] => ci,
                _ => return Err(format!("{x} is not read by one dense-block Conv")),
            }
        } else {
            m.sole_reader(&cat, "after a dense-block Concat")?
        };
        let (conv, y) = conv_lrelu(m, ci, channels, "in a dense block")?;
        channels += conv.out_channels;
        convs.push(conv);
        joined.push(y.clone());
        let concat = m
            .readers_of_type(&y, "Concat")
            .into_iter()
            .find(|&c| m.node(c).input == joined)
            .ok_or_else(|| {
                format!(
                    "{}: its output {y} is not concatenated with the block's input and earlier outputs",
                    m.label(ci)
                )
            })?;
        m.take(concat, "Concat", "in a dense block")?;
        m.only_attributes(concat, &["axis"])?;
        if m.int(concat, "axis", 0)? != 1 {
            return Err(format!(
                "{}: Concat not on the channel axis",
                m.label(concat)
            ));
        }
        cat = m.node(concat).output[0].clone();
    }
    let ci = m.sole_reader(&cat, "after a dense-block Concat")?;
    let conv5 = m.conv3x3(ci, channels, 1, "closing a dense block")?;
    if conv5.out_channels != nf {
        return Err(format!(
            "{}: a dense block's last Conv writes {} channels, expected {nf}",
            m.label(ci),
            conv5.out_channels
        ));
    }
    convs.push(conv5);
    let x5 = m.node(ci).output[0].clone();
    let (_, out) = residual_sum(m, &x5, x, Some(RESIDUAL_SCALE), "a dense block's last Conv")?;
    let convs: [Conv3x3; 5] = convs
        .try_into()
        .map_err(|_| "a dense block without five convolutions".to_string())?;
    Ok((DenseBlock { convs }, out))
}

/// Take Conv node `ci` and the LeakyReLU (slope 0.2) after it.
fn conv_lrelu(
    m: &mut Matcher,
    ci: usize,
    channels: usize,
    context: &str,
) -> Step<(Conv3x3, String)> {
    let conv = m.conv3x3(ci, channels, 1, context)?;
    let out = m.node(ci).output[0].clone();
    let (li, l) = m.sole_consumer(&out, "LeakyRelu", "after Conv")?;
    m.only_attributes(li, &["alpha"])?;
    let alpha = m.float(li, "alpha", 0.01)?;
    if alpha != ALPHA {
        return Err(format!(
            "{}: LeakyRelu alpha {alpha}, RRDBNet uses {ALPHA}",
            m.label(li)
        ));
    }
    Ok((conv, l.output[0].clone()))
}

/// `skip + scale * value` (`Mul` by a constant, then `Add` or `Sum`), or `skip + value`
/// when `scale` is None; returns the scale and the sum.
fn residual_sum(
    m: &mut Matcher,
    value: &str,
    skip: &str,
    scale: Option<f32>,
    after: &str,
) -> Step<(f32, String)> {
    let context = format!("after {after}");
    let (scaled, factor) = match scale {
        None => (value.to_string(), 1.0),
        Some(want) => {
            let (mi, mul) =
                m.sole_consumer(value, "Mul", &format!("(residual scaling) {context}"))?;
            m.only_attributes(mi, &[])?;
            let [a, b] = &mul.input[..] else {
                return Err(format!(
                    "{}: Mul with {} inputs",
                    m.label(mi),
                    mul.input.len()
                ));
            };
            let k = if a == value { b } else { a };
            let got = m.scalar(k, "the residual scale")?;
            // A float16 file stores 0.2 as 0.19995117: the same constant.
            let as_half = |v: f32| half::f16::from_f32(v).to_bits();
            if got != want && as_half(got) != as_half(want) {
                return Err(format!(
                    "{}: residual scaling {got}, RRDBNet uses {want}",
                    m.label(mi)
                ));
            }
            (mul.output[0].clone(), got)
        }
    };
    let si = m.sole_reader(&scaled, &format!("(residual add) {context}"))?;
    let op = if m.node(si).op_type == "Sum" {
        "Sum"
    } else {
        "Add"
    };
    let sum = m.take(si, op, &format!("(residual add) {context}"))?;
    m.only_attributes(si, &[])?;
    let mut inputs = sum.input.clone();
    inputs.sort();
    let mut want = vec![scaled, skip.to_string()];
    want.sort();
    if inputs != want {
        return Err(format!(
            "{}: the residual adds {:?}, expected {skip} and the scaled branch",
            m.label(si),
            sum.input
        ));
    }
    Ok((factor, sum.output[0].clone()))
}
