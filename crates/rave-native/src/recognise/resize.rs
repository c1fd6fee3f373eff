//! Matching the two Resize forms the architectures use: nearest integer upsampling
//! (asymmetric coordinates, floor) and Real-ESRGAN's bicubic resize (half_pixel, a = -0.75).

use super::matcher::{Matcher, Step};

const ATTRIBUTES: &[&str] = &[
    "mode",
    "coordinate_transformation_mode",
    "nearest_mode",
    "cubic_coeff_a",
    "exclude_outside",
    "extrapolation_value",
    "antialias",
];

/// The spatial factor of Resize node `i` (already taken), from its constant `scales`
/// `[1, 1, f, f]`.
fn factor(m: &mut Matcher, i: usize) -> Step<f32> {
    m.only_attributes(i, ATTRIBUTES)?;
    if m.int(i, "antialias", 0)? != 0 {
        return Err(format!("{}: Resize with antialias", m.label(i)));
    }
    let n = m.node(i);
    let scales = match &n.input[..] {
        [_, _, s] if !s.is_empty() => s.clone(),
        [_, _, s, sizes] if !s.is_empty() && sizes.is_empty() => s.clone(),
        _ => {
            return Err(format!(
                "{}: Resize by output sizes, expected constant scales",
                m.label(i)
            ));
        }
    };
    let s = m.floats(&scales, "the Resize scales")?;
    match s.values[..] {
        [1.0, 1.0, h, w] if h == w => Ok(h),
        _ => Err(format!(
            "{}: Resize scales {:?}, expected [1, 1, f, f]",
            m.label(i),
            s.values
        )),
    }
}

/// Check Resize node `i` (already taken) upsamples by nearest `expected` (an integer).
pub fn nearest(m: &mut Matcher, i: usize, expected: u32) -> Step<()> {
    let f = factor(m, i)?;
    let label = m.label(i);
    let mode = m.string(i, "mode", "nearest")?;
    let coords = m.string(i, "coordinate_transformation_mode", "half_pixel")?;
    let rounding = m.string(i, "nearest_mode", "round_prefer_floor")?;
    if mode != "nearest" {
        return Err(format!("{label}: Resize mode {mode}, expected nearest"));
    }
    if coords != "asymmetric" || rounding != "floor" {
        return Err(format!(
            "{label}: nearest Resize with {coords}/{rounding}, expected asymmetric/floor"
        ));
    }
    if f != expected as f32 {
        return Err(format!(
            "{label}: nearest Resize by {f}, expected {expected}"
        ));
    }
    Ok(())
}

/// Take Resize node `i` as a bicubic resize (half_pixel, a = -0.75, exclude_outside 0) and
/// return its factor.
pub fn cubic(m: &mut Matcher, i: usize) -> Step<f32> {
    m.take(i, "Resize", "after the residual Add")?;
    let f = factor(m, i)?;
    let label = m.label(i);
    let mode = m.string(i, "mode", "nearest")?;
    let coords = m.string(i, "coordinate_transformation_mode", "half_pixel")?;
    let a = m.float(i, "cubic_coeff_a", -0.75)?;
    let exclude = m.int(i, "exclude_outside", 0)?;
    if mode != "cubic" {
        return Err(format!(
            "{label}: Resize mode {mode} after the residual, expected cubic"
        ));
    }
    if coords != "half_pixel" || a != -0.75 || exclude != 0 {
        return Err(format!(
            "{label}: cubic Resize {coords}, a = {a}, exclude_outside {exclude}; expected half_pixel, -0.75, 0"
        ));
    }
    if !(f > 0.0 && f < 1.0) {
        return Err(format!(
            "{label}: cubic Resize by {f}, expected a downscale"
        ));
    }
    Ok(f)
}

/// Take node `i` as a Cast to element type `to`.
pub fn cast_to(m: &mut Matcher, i: usize, to: i32, context: &str) -> Step<()> {
    m.take(i, "Cast", context)?;
    m.only_attributes(i, &["to", "saturate"])?;
    if m.int(i, "to", 0)? != i64::from(to) {
        return Err(format!(
            "{}: Cast to type {}, expected {to}",
            m.label(i),
            m.int(i, "to", 0)?
        ));
    }
    Ok(())
}
