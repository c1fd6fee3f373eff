//! The checks a streamed convolution launch must pass before any device address is taken:
//! the source, the target and the residuals as plain numbers (lengths, strides, offsets),
//! so that every bound the kernel relies on is tested without a GPU.

use super::streamed::Residual;

/// What the launch reads, as sizes.
#[derive(Debug, Clone, Copy)]
pub(super) enum SourceShape {
    /// A map of `len` halves, `stride` channels a pixel, at the output size or (upsampled)
    /// half of it.
    Map {
        len: usize,
        stride: usize,
        upsampled: bool,
    },
    /// The target map's own leading channels.
    TargetPrefix,
}

/// Where the launch writes, as sizes.
#[derive(Debug, Clone, Copy)]
pub(super) enum TargetShape {
    /// Channels `offset ..` of an NHWC map of `len` halves, `stride` channels a pixel.
    Nhwc {
        len: usize,
        stride: usize,
        offset: usize,
    },
    /// Planar f32 of `len` values.
    Planar { len: usize },
}

/// What the kernel is told once the shapes passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LaunchPlan {
    /// Channels a pixel of the map the kernel reads.
    pub(super) in_stride: usize,
    /// 1 where the source is read through nearest x2, else 0.
    pub(super) up_shift: i32,
}

/// Largest value the kernel's 32-bit sizes, strides and indices take.
const MOST: usize = i32::MAX as usize;

/// `a * b`, or the reason it does not fit the kernel's arithmetic.
fn product(a: usize, b: usize, what: &str) -> Result<usize, String> {
    a.checked_mul(b)
        .filter(|&v| v <= isize::MAX as usize)
        .ok_or_else(|| format!("{what} ({a} x {b}) is too large"))
}

/// Check a launch that reads the first `read` channels (its k-steps) and writes `cout`
/// for an output image of `height x width`; the reason when it may not run.
pub(super) fn plan(
    read: usize,
    cout: usize,
    source: SourceShape,
    target: TargetShape,
    residual: Residual,
    (height, width): (usize, usize),
) -> Result<LaunchPlan, String> {
    if height == 0 || width == 0 {
        return Err("an empty image".into());
    }
    // The kernels' walk releases the stage of the k-step before each one: it needs one.
    if read == 0 || cout == 0 {
        return Err(format!(
            "a layer of {read} input and {cout} output channels"
        ));
    }
    if height > MOST || width > MOST || read > MOST || cout > MOST {
        return Err(format!("{width}x{height} is too large"));
    }
    // The kernel counts pixels and tiles in 32 bits.
    let pixels = product(height, width, "the image")?;
    if pixels > MOST {
        return Err(format!("{width}x{height} is too large"));
    }
    match target {
        TargetShape::Nhwc {
            len,
            stride,
            offset,
        } => {
            // Pairs of channels are stored as one 4-byte word.
            if !cout.is_multiple_of(2)
                || !offset.is_multiple_of(2)
                || !stride.is_multiple_of(2)
                || stride > MOST
                || offset + cout > stride
            {
                return Err(format!(
                    "{cout} channels at channel {offset} of a map of {stride} (even counts, within the pixel)"
                ));
            }
            let need = product(pixels, stride, "the target")?;
            if len < need {
                return Err(format!("the target holds {len} values, needs {need}"));
            }
        }
        TargetShape::Planar { len } => {
            if residual.source.is_some() || residual.target.is_some() {
                return Err("residuals into a planar target".into());
            }
            let need = product(cout, pixels, "the planar target")?;
            if len < need {
                return Err(format!(
                    "the planar target holds {len} values, needs {need}"
                ));
            }
        }
    }
    let (in_stride, up_shift) = match source {
        SourceShape::Map {
            len,
            stride,
            upsampled,
        } => {
            let src_pixels = match upsampled {
                true if height % 2 != 0 || width % 2 != 0 => {
                    return Err("a nearest x2 source needs an even output size".into());
                }
                true => pixels / 4,
                false => pixels,
            };
            let need = product(src_pixels, stride, "the source")?;
            if stride < read || len < need {
                return Err(format!(
                    "the source ({len} values, {stride} channels a pixel) does not hold {read} channels of {src_pixels} pixels"
                ));
            }
            if upsampled && residual.source.is_some() {
                return Err("a residual from an upsampled source".into());
            }
            (stride, i32::from(upsampled))
        }
        SourceShape::TargetPrefix => match target {
            TargetShape::Nhwc { stride, offset, .. } if offset >= read => {
                // A residual from the source would read the target's channels 0 .. cout.
                if residual.source.is_some() && cout > offset {
                    return Err(format!(
                        "a residual of the target's channels 0..{cout} while writing from channel {offset}"
                    ));
                }
                (stride, 0)
            }
            TargetShape::Nhwc { offset, .. } => {
                return Err(format!(
                    "it reads the target's first {read} channels and writes from channel {offset}"
                ));
            }
            TargetShape::Planar { .. } => return Err("a planar target read as a source".into()),
        },
    };
    // 16-byte pieces of 8 channels are staged from each pixel.
    if !in_stride.is_multiple_of(8) || in_stride > MOST {
        return Err(format!(
            "a source of {in_stride} channels a pixel (the kernel reads pixels of a multiple of 8 channels)"
        ));
    }
    if residual.source.is_some() && in_stride < cout {
        return Err(format!(
            "a residual of {cout} channels from a source of {in_stride}"
        ));
    }
    Ok(LaunchPlan {
        in_stride,
        up_shift,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: (usize, usize) = (6, 10);
    const PIXELS: usize = 60;

    fn map(stride: usize) -> SourceShape {
        SourceShape::Map {
            len: PIXELS * stride,
            stride,
            upsampled: false,
        }
    }

    fn nhwc(stride: usize, offset: usize) -> TargetShape {
        TargetShape::Nhwc {
            len: PIXELS * stride,
            stride,
            offset,
        }
    }

    const NONE: Residual = Residual {
        source: None,
        target: None,
    };
    const BOTH: Residual = Residual {
        source: Some(0.2),
        target: Some(0.2),
    };

    #[test]
    fn the_launches_of_an_rrdb_pass() {
        // A dense conv reading the concatenation it writes to, the block's fifth conv with
        // both residuals, an upsampling conv, conv_last to planar output.
        let dense = plan(96, 32, SourceShape::TargetPrefix, nhwc(192, 96), NONE, SIZE);
        assert_eq!(
            dense,
            Ok(LaunchPlan {
                in_stride: 192,
                up_shift: 0
            })
        );
        assert!(plan(192, 64, map(192), nhwc(192, 0), BOTH, SIZE).is_ok());
        let up = SourceShape::Map {
            len: PIXELS / 4 * 64,
            stride: 64,
            upsampled: true,
        };
        assert_eq!(
            plan(64, 64, up, nhwc(64, 0), NONE, SIZE).unwrap().up_shift,
            1
        );
        let planar = TargetShape::Planar { len: 3 * PIXELS };
        assert!(plan(64, 3, map(64), planar, NONE, SIZE).is_ok());
    }

    #[test]
    fn out_of_bounds_or_overlapping_launches_are_refused() {
        let err = |r: Result<LaunchPlan, String>| r.expect_err("refused");
        // Reading the channels it writes.
        assert!(
            err(plan(
                96,
                32,
                SourceShape::TargetPrefix,
                nhwc(192, 64),
                NONE,
                SIZE
            ))
            .contains("writes from channel 64")
        );
        // The written slice past the pixel's channels, or at an odd channel.
        assert!(err(plan(64, 32, map(64), nhwc(192, 176), NONE, SIZE)).contains("of a map of 192"));
        assert!(err(plan(64, 32, map(64), nhwc(192, 33), NONE, SIZE)).contains("channel 33"));
        assert!(err(plan(64, 3, map(64), nhwc(64, 0), NONE, SIZE)).contains("3 channels"));
        // A layer with no input channels (no k-step to walk).
        assert!(err(plan(0, 32, map(64), nhwc(192, 64), NONE, SIZE)).contains("0 input"));
        // Buffers one pixel short.
        let short_source = SourceShape::Map {
            len: PIXELS * 64 - 1,
            stride: 64,
            upsampled: false,
        };
        assert!(err(plan(64, 64, short_source, nhwc(64, 0), NONE, SIZE)).contains("does not hold"));
        let short_target = TargetShape::Nhwc {
            len: PIXELS * 64 - 64,
            stride: 64,
            offset: 0,
        };
        assert!(err(plan(64, 64, map(64), short_target, NONE, SIZE)).contains("target holds"));
        let short_planar = TargetShape::Planar {
            len: 3 * PIXELS - 1,
        };
        assert!(err(plan(64, 3, map(64), short_planar, NONE, SIZE)).contains("planar target"));
        // A source narrower than the channels the k-steps read.
        assert!(
            err(plan(64, 64, map(48), nhwc(64, 0), NONE, SIZE)).contains("48 channels a pixel")
        );
        // Residuals the kernel cannot read.
        assert!(
            err(plan(
                64,
                3,
                map(64),
                TargetShape::Planar { len: 3 * PIXELS },
                BOTH,
                SIZE
            ))
            .contains("planar")
        );
        let up = SourceShape::Map {
            len: PIXELS / 4 * 64,
            stride: 64,
            upsampled: true,
        };
        assert!(err(plan(64, 64, up, nhwc(64, 0), BOTH, SIZE)).contains("upsampled"));
        assert!(err(plan(32, 64, map(32), nhwc(64, 0), BOTH, SIZE)).contains("residual of 64"));
        // Strides the kernel's 16-byte staging or 4-byte stores cannot take.
        assert!(err(plan(16, 16, map(20), nhwc(16, 0), NONE, SIZE)).contains("multiple of 8"));
        let odd_target = TargetShape::Nhwc {
            len: PIXELS * 65,
            stride: 65,
            offset: 0,
        };
        assert!(err(plan(64, 64, map(64), odd_target, NONE, SIZE)).contains("map of 65"));
        // A source residual while reading the target's own prefix would race with the write.
        let racing = Residual {
            source: Some(0.2),
            target: None,
        };
        assert!(
            err(plan(
                16,
                32,
                SourceShape::TargetPrefix,
                nhwc(64, 16),
                racing,
                SIZE
            ))
            .contains("channels 0..32")
        );
        // Sizes whose products overflow are refused, not wrapped.
        let huge = SourceShape::Map {
            len: usize::MAX,
            stride: 64,
            upsampled: false,
        };
        let everything = TargetShape::Nhwc {
            len: usize::MAX,
            stride: 64,
            offset: 0,
        };
        assert!(
            err(plan(64, 64, huge, everything, NONE, (1 << 31, 1 << 31))).contains("too large")
        );
        assert!(
            err(plan(64, 64, huge, everything, NONE, (1 << 20, 1 << 20))).contains("too large")
        );
        // Odd sizes with a nearest x2 source, and empty images.
        let big = TargetShape::Nhwc {
            len: 70 * 64,
            stride: 64,
            offset: 0,
        };
        assert!(err(plan(64, 64, up, big, NONE, (7, 10))).contains("even output size"));
        assert!(err(plan(64, 64, map(64), nhwc(64, 0), NONE, (0, 10))).contains("empty"));
    }
}
