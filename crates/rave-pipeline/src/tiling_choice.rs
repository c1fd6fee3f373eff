//! Whether a run cuts its frames into tiles (`--tile auto|off|WxH`, `--tile-overlap N`),
//! decided once the model and the frame size are known, and the report's account of what
//! ran and why; the same on the CPU and the GPU path (where a VRAM budget may shrink the
//! tiles further: `vram_fit`).

use std::path::Path;

use rave_core::backend::ModelMetadata;
use rave_core::error::{EngineError, Result};
use rave_core::tiling::{DEFAULT_OVERLAP, TilePlan};
use serde::Serialize;

/// What `--tile` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TileMode {
    /// Tiles only where the model cannot take the whole frame (a fixed-size model smaller
    /// than the frame gets tiles of its size).
    Auto,
    /// Never tile.
    Off,
    /// Tiles of this many input pixels.
    Size {
        /// Tile width.
        width: u32,
        /// Tile height.
        height: u32,
    },
}

/// `--tile` and `--tile-overlap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TileRequest {
    /// Whether and how to tile.
    pub mode: TileMode,
    /// Input pixels neighbouring tiles share at least.
    pub overlap: u32,
    /// The overlap was given (`--tile-overlap`); the default one is lowered where tiles
    /// are too small for it (a small fixed-size model's), a given one is refused there.
    pub overlap_given: bool,
}

impl Default for TileRequest {
    fn default() -> Self {
        Self {
            mode: TileMode::Auto,
            overlap: DEFAULT_OVERLAP,
            overlap_given: false,
        }
    }
}

impl TileRequest {
    /// Check what can be checked before the model is read: a tile size is not empty. (The
    /// overlap is checked against the tiles that run, once the frame and the model are
    /// known: only a side the tiles cut must be over twice the overlap.)
    pub fn validate(&self) -> Result<()> {
        if let TileMode::Size { width, height } = self.mode
            && (width == 0 || height == 0)
        {
            return Err(EngineError::Config(format!(
                "--tile {width}x{height}: a tile is at least 1x1 pixels"
            )));
        }
        Ok(())
    }

    /// The request as the job's manifest records it ("auto, overlap 16", "off",
    /// "64x48, overlap 16").
    pub fn describe(&self) -> String {
        match self.mode {
            TileMode::Auto => format!("auto, overlap {}", self.overlap),
            TileMode::Off => "off".into(),
            TileMode::Size { width, height } => {
                format!("{width}x{height}, overlap {}", self.overlap)
            }
        }
    }
}

/// What tiling ran and why, for the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TilingReport {
    /// Whether frames were cut into tiles.
    pub tiled: bool,
    /// Tile [width, height] in input pixels, when tiled.
    pub tile: Option<[u32; 2]>,
    /// Input pixels neighbouring tiles share at least, when tiled.
    pub overlap: Option<u32>,
    /// Tiles per frame [across, down], when tiled.
    pub grid: Option<[u32; 2]>,
    /// Why.
    pub reason: String,
}

impl TilingReport {
    /// No tiling, for `reason`.
    pub fn off(reason: impl Into<String>) -> Self {
        Self {
            tiled: false,
            tile: None,
            overlap: None,
            grid: None,
            reason: reason.into(),
        }
    }

    /// One line: "tiles 64x64, overlap 16, 3x2 per frame: the model takes fixed 64x64
    /// inputs", "one 72x40 tile: the model takes inputs whose sides are multiples of 4: the
    /// 70x38 frame is padded ...", or "off: the model takes the whole frame".
    pub fn describe(&self) -> String {
        match (self.tile, self.overlap, self.grid) {
            (Some([w, h]), _, Some([1, 1])) => format!("one {w}x{h} tile: {}", self.reason),
            (Some([w, h]), Some(o), Some([x, y])) => format!(
                "tiles {w}x{h}, overlap {o}, {x}x{y} per frame: {}",
                self.reason
            ),
            _ => format!("off: {}", self.reason),
        }
    }
}

/// The tiling a run uses: tile and overlap where frames are cut, and the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tiling {
    /// Tile (width, height) and overlap, where frames are cut.
    pub tiles: Option<((u32, u32), u32)>,
    /// What the report says.
    pub report: TilingReport,
}

/// The inputs the model takes, in words ("fixed 64x48 inputs", "inputs whose sides are
/// multiples of 4", "inputs 64 wide and of any height").
fn accepted(meta: &ModelMetadata) -> String {
    let ((min_h, min_w), (max_h, max_w)) = (meta.min_input_hw, meta.max_input_hw);
    let m = meta.side_multiple.max(1);
    if (min_h, min_w) == (max_h, max_w) {
        return format!("fixed {max_w}x{max_h} inputs");
    }
    if (min_h, min_w) == (1, 1) && (max_h, max_w) == (u32::MAX, u32::MAX) {
        return match m {
            1 => "inputs of any size".into(),
            m => format!("inputs whose sides are multiples of {m}"),
        };
    }
    // "64 wide", "of any width", "a multiple of 8 wide", "10 to 20 wide".
    let side = |min: u32, max: u32, (measure, long): (&str, &str)| match (min == max, m) {
        (true, _) => format!("{min} {long}"),
        (false, 1) if (min, max) == (1, u32::MAX) => format!("of any {measure}"),
        (false, 1) => format!("{min} to {max} {long}"),
        (false, m) => format!("a multiple of {m} {long}"),
    };
    format!(
        "inputs {} and {}",
        side(min_w, max_w, ("width", "wide")),
        side(min_h, max_h, ("height", "high"))
    )
}

/// `--tile`'s side `asked` for a frame side of `len`, along an axis whose tiles are
/// multiples of `multiple` (`fixed`: the model's one size there): a tile as long as the
/// frame or longer covers it (padded to the next multiple, or to the fixed size where the
/// frame is shorter; the frame's own where it is longer, which the model cannot take); a
/// shorter one is rounded down to a multiple on a dynamic axis (up to one multiple where it
/// is shorter than that) and kept as asked on a fixed one (where a size other than the
/// model's is refused).
fn tile_side(asked: u32, len: u32, multiple: u32, fixed: bool) -> u32 {
    let m = multiple.max(1);
    match (asked >= len, fixed) {
        (true, true) if len > m => len,
        (true, _) => len.div_ceil(m).saturating_mul(m),
        (false, true) => asked,
        (false, false) => (asked / m).max(1) * m,
    }
}

/// The reason's words for a plan that pads the frame (`tile` past `frame`), if it does.
fn padding_note(meta: &ModelMetadata, tile: (u32, u32), frame: (u32, u32)) -> Option<String> {
    let (pw, ph) = (
        if tile.0 > frame.0 { tile.0 } else { frame.0 },
        if tile.1 > frame.1 { tile.1 } else { frame.1 },
    );
    let border = match (pw > frame.0, ph > frame.1) {
        (true, true) => "right and bottom borders",
        (true, false) => "right border",
        (false, true) => "bottom border",
        (false, false) => return None,
    };
    Some(format!(
        "the model takes {}: the {}x{} frame is padded to {pw}x{ph} (mirrored at its {border}) and the padding cut from the output",
        accepted(meta),
        frame.0,
        frame.1
    ))
}

/// The shorter of the sides along which tiles of `tile` cut `frame` (`None`: one tile
/// covers it).
fn cut_side(tile: (u32, u32), frame: (u32, u32)) -> Option<u32> {
    [(tile.0, frame.0), (tile.1, frame.1)]
        .into_iter()
        .filter(|&(t, f)| t < f)
        .map(|(t, _)| t)
        .min()
}

/// The overlap tiles of `tile` over `frame` share: the one asked for, or, where it was not
/// given and a side cut into several tiles is too short for it (tiles of a small fixed-size
/// model), the largest under half that side.
fn overlap_for(request: &TileRequest, tile: (u32, u32), frame: (u32, u32)) -> u32 {
    match cut_side(tile, frame) {
        Some(side) if !request.overlap_given && 2 * request.overlap >= side => {
            side.saturating_sub(1) / 2
        }
        _ => request.overlap,
    }
}

/// The tiling for `request`, model `meta` (from `model`) and frames of `frame` (width,
/// height), before any memory budget.
pub fn decide(
    request: &TileRequest,
    model: &Path,
    meta: &ModelMetadata,
    frame: (u32, u32),
) -> Result<Tiling> {
    let (fw, fh) = frame;
    let off = |reason: &str| Tiling {
        tiles: None,
        report: TilingReport::off(reason),
    };
    // The whole frame goes to the model as it is: a fixed-size model of another size, or
    // one whose sides must be multiples of a block the frame's are not, cannot take it
    // (refused here, where `rave plan` and `rave benchmark` ask too).
    // One input of the model covers the frame: auto pads it (else cuts it into tiles).
    let one_input = meta.padded_size(meta.max_input_hw.1.min(fw), meta.max_input_hw.0.min(fh));
    let covered = one_input.0 >= fw && one_input.1 >= fh;
    let whole_frame_refused = |given: &str| {
        EngineError::ModelMetadata(format!(
            "{}: model {} takes {}, the video is {fw}x{fh}; {given} gives it whole frames (--tile auto {} it)",
            model.display(),
            meta.name,
            accepted(meta),
            if covered { "pads" } else { "tiles" }
        ))
    };
    let multiple = meta.tile_multiples();
    let fixed = (
        meta.min_input_hw.1 == meta.max_input_hw.1,
        meta.min_input_hw.0 == meta.max_input_hw.0,
    );
    let (tile, reason) = match request.mode {
        TileMode::Off if !meta.accepts(fw, fh) => return Err(whole_frame_refused("--tile off")),
        TileMode::Off => return Ok(off("--tile off")),
        TileMode::Auto if meta.accepts(fw, fh) => {
            return Ok(off("the model takes the whole frame"));
        }
        TileMode::Auto => {
            let tile = one_input;
            if !meta.accepts(tile.0, tile.1) {
                return Err(EngineError::ModelMetadata(format!(
                    "{}: model {} takes {}, the video is {fw}x{fh}: smaller than one input, so tiles cannot help (scale or pad the video to the model's size)",
                    model.display(),
                    meta.name,
                    accepted(meta)
                )));
            }
            let reason = padding_note(meta, tile, frame)
                .unwrap_or_else(|| format!("the model takes {}", accepted(meta)));
            (tile, reason)
        }
        TileMode::Size { width, height } => {
            let tile = (
                tile_side(width, fw, multiple.0, fixed.0),
                tile_side(height, fh, multiple.1, fixed.1),
            );
            // A tile of the frame's size the model does not take is a --tile the model's
            // shapes exclude, as any other (exit 2, below).
            if tile == frame && meta.accepts(fw, fh) {
                return Ok(off(&format!(
                    "--tile {width}x{height} covers the {fw}x{fh} frame in one tile"
                )));
            }
            if !meta.accepts(tile.0, tile.1) {
                return Err(EngineError::Config(format!(
                    "--tile {width}x{height}: model {} takes {}, not tiles of {}x{} (--tile auto picks its size)",
                    meta.name,
                    accepted(meta),
                    tile.0,
                    tile.1
                )));
            }
            // A side shorter than the frame's that is no multiple was rounded down (a longer
            // one covers the frame, padded where the padding note says).
            let rounded = (width < fw && tile.0 != width && !fixed.0)
                || (height < fh && tile.1 != height && !fixed.1);
            let mut reason = format!("--tile {width}x{height}");
            if rounded {
                reason += &format!(", rounded to {}x{}", tile.0, tile.1);
            }
            match padding_note(meta, tile, frame) {
                Some(note) => reason += &format!("; {note}"),
                None if rounded => reason += &format!(": the model takes {}", accepted(meta)),
                None => {}
            }
            (tile, reason)
        }
    };
    let overlap = overlap_for(request, tile, frame);
    // A side the tiles cut must be over twice the overlap (a given one is not lowered).
    if let Some(side) = cut_side(tile, frame)
        && 2 * u64::from(overlap) >= u64::from(side)
    {
        return Err(EngineError::Config(format!(
            "--tile-overlap {overlap}: tiles of {}x{} take an overlap under half a tile (at most {}); lower --tile-overlap or use larger tiles",
            tile.0,
            tile.1,
            side.saturating_sub(1) / 2
        )));
    }
    let reason = match overlap < request.overlap {
        true => format!(
            "{reason}; overlap lowered from {} to {overlap} px for tiles of {}x{} (--tile-overlap sets it)",
            request.overlap, tile.0, tile.1
        ),
        false => reason,
    };
    let plan = TilePlan::padded(frame, tile, overlap, multiple)
        .map_err(|why| EngineError::Config(format!("--tile-overlap {overlap}: {why}")))?;
    if plan.is_whole() {
        return Ok(off(&reason));
    }
    // One tile, the frame padded: no neighbour to share pixels with.
    let overlap = if plan.is_padded_whole() { 0 } else { overlap };
    let (columns, rows) = plan.grid();
    Ok(Tiling {
        tiles: Some((plan.tile, overlap)),
        report: TilingReport {
            tiled: true,
            tile: Some([plan.tile.0, plan.tile.1]),
            overlap: Some(overlap),
            grid: Some([columns, rows]),
            reason,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rave_core::types::PixelFormat;

    fn meta(fixed: Option<(u32, u32)>) -> ModelMetadata {
        let (min, max) = match fixed {
            Some((w, h)) => ((h, w), (h, w)),
            None => ((1, 1), (u32::MAX, u32::MAX)),
        };
        ModelMetadata {
            name: "m".into(),
            scale: 2,
            input_name: "input".into(),
            output_name: "output".into(),
            input_channels: 3,
            min_input_hw: min,
            max_input_hw: max,
            tensor_format: PixelFormat::RgbPlanarF32,
            fixed_batch: Some(1),
            side_multiple: 1,
        }
    }

    #[test]
    fn a_block_model_gets_the_frame_padded_or_tiles_of_its_multiple() {
        let blocks = ModelMetadata {
            side_multiple: 8,
            ..meta(None)
        };
        let frame = (1366, 766);
        let auto = request(TileMode::Auto);
        let t = decide(&auto, Path::new(M), &blocks, frame).unwrap();
        assert_eq!(t.tiles, Some(((1368, 768), 0)), "one tile shares nothing");
        assert_eq!(t.report.grid, Some([1, 1]));
        assert!(
            t.report
                .describe()
                .starts_with("one 1368x768 tile: the model takes")
        );
        assert!(
            t.report.reason.ends_with(
                "multiples of 8: the 1366x766 frame is padded to 1368x768 (mirrored at its right and bottom borders) and the padding cut from the output"
            ),
            "{}",
            t.report.reason
        );
        // A frame of multiples runs whole.
        let t = decide(&auto, Path::new(M), &blocks, (1920, 1080)).unwrap();
        assert_eq!(t.tiles, None);
        // A tile size is rounded down to a multiple.
        let sized = request(TileMode::Size {
            width: 100,
            height: 100,
        });
        let t = decide(&sized, Path::new(M), &blocks, (1920, 1080)).unwrap();
        assert_eq!(t.tiles.map(|(tile, _)| tile), Some((96, 96)));
        assert_eq!(
            t.report.reason,
            "--tile 100x100, rounded to 96x96: the model takes inputs whose sides are multiples of 8"
        );
        // A model 64 wide whose height is any multiple of 8, in words.
        let one_fixed = ModelMetadata {
            min_input_hw: (1, 64),
            max_input_hw: (u32::MAX, 64),
            ..blocks.clone()
        };
        assert_eq!(
            accepted(&one_fixed),
            "inputs 64 wide and a multiple of 8 high"
        );
        let off = request(TileMode::Off);
        let e = decide(&off, Path::new(M), &blocks, frame).unwrap_err();
        assert!(
            e.to_string()
                .contains("takes inputs whose sides are multiples of 8, the video is 1366x766; --tile off gives it whole frames (--tile auto pads it)"),
            "{e}"
        );
    }

    fn request(mode: TileMode) -> TileRequest {
        TileRequest {
            mode,
            overlap: DEFAULT_OVERLAP,
            overlap_given: false,
        }
    }

    const M: &str = "/models/m.onnx";

    #[test]
    fn auto_tiles_a_fixed_size_model_at_its_size_and_nothing_else() {
        let auto = request(TileMode::Auto);
        let t = decide(&auto, Path::new(M), &meta(Some((64, 64))), (150, 90)).unwrap();
        assert_eq!(t.tiles, Some(((64, 64), 16)));
        assert_eq!(
            t.report.describe(),
            "tiles 64x64, overlap 16, 3x2 per frame: the model takes fixed 64x64 inputs"
        );
        let t = decide(&auto, Path::new(M), &meta(None), (150, 90)).unwrap();
        assert_eq!(t.tiles, None);
        assert_eq!(t.report.describe(), "off: the model takes the whole frame");
        let t = decide(&auto, Path::new(M), &meta(Some((150, 90))), (150, 90)).unwrap();
        assert_eq!(t.tiles, None, "a fixed size that is the frame's");
    }

    #[test]
    fn a_frame_smaller_than_a_fixed_size_model_is_padded_to_it() {
        let t = decide(
            &request(TileMode::Auto),
            Path::new(M),
            &meta(Some((64, 48))),
            (32, 32),
        )
        .unwrap();
        assert_eq!(t.tiles, Some(((64, 48), 0)));
        assert_eq!(
            t.report.reason,
            "the model takes fixed 64x48 inputs: the 32x32 frame is padded to 64x48 (mirrored at its right and bottom borders) and the padding cut from the output"
        );
        // Wider than the model but not as tall: cut across, padded down.
        let t = decide(
            &request(TileMode::Auto),
            Path::new(M),
            &meta(Some((64, 64))),
            (150, 40),
        )
        .unwrap();
        assert_eq!(
            (t.tiles, t.report.grid),
            (Some(((64, 64), 16)), Some([3, 1]))
        );
        assert!(
            t.report
                .reason
                .contains("padded to 150x64 (mirrored at its bottom border)"),
            "{}",
            t.report.reason
        );
        // --tile off still gives it the frame as it is: refused, saying auto pads it.
        let e = decide(
            &request(TileMode::Off),
            Path::new(M),
            &meta(Some((64, 48))),
            (32, 32),
        )
        .unwrap_err();
        assert_eq!(e.family().exit_code(), 5);
        assert!(e.to_string().ends_with("(--tile auto pads it)"), "{e}");
    }

    #[test]
    fn a_tile_size_runs_where_the_model_takes_it() {
        let size = request(TileMode::Size {
            width: 48,
            height: 40,
        });
        let t = decide(&size, Path::new(M), &meta(None), (150, 90)).unwrap();
        assert_eq!(t.tiles, Some(((48, 40), 16)));
        assert_eq!(
            t.report.describe(),
            "tiles 48x40, overlap 16, 5x4 per frame: --tile 48x40"
        );
        let e = decide(&size, Path::new(M), &meta(Some((64, 64))), (150, 90)).unwrap_err();
        assert_eq!(e.family().exit_code(), 2);
        assert!(e.to_string().contains("takes fixed 64x64 inputs"), "{e}");
        let big = request(TileMode::Size {
            width: 512,
            height: 512,
        });
        let t = decide(&big, Path::new(M), &meta(None), (150, 90)).unwrap();
        assert_eq!(t.tiles, None);
        assert!(t.report.reason.contains("one tile"), "{}", t.report.reason);
        let off = decide(
            &request(TileMode::Off),
            Path::new(M),
            &meta(None),
            (150, 90),
        );
        assert_eq!(off.unwrap().report.describe(), "off: --tile off");
        // Whole frames to a fixed-size model of another size: a model problem, found here;
        // a --tile of the frame's size, a tile the model does not take (exit 2).
        let whole = |mode| {
            decide(
                &request(mode),
                Path::new(M),
                &meta(Some((64, 48))),
                (150, 90),
            )
        };
        let e = whole(TileMode::Off).unwrap_err();
        assert_eq!(e.family().exit_code(), 5, "{e}");
        assert!(e.to_string().contains("gives it whole frames"), "{e}");
        let e = whole(TileMode::Size {
            width: 200,
            height: 200,
        })
        .unwrap_err();
        assert_eq!(e.family().exit_code(), 2, "{e}");
        assert!(e.to_string().contains("not tiles of 150x90"), "{e}");
    }

    #[test]
    fn bad_requests_are_option_errors_before_anything_runs() {
        let r = |width, height, overlap| TileRequest {
            mode: TileMode::Size { width, height },
            overlap,
            overlap_given: true,
        };
        assert!(r(64, 64, 16).validate().is_ok());
        assert!(TileRequest::default().validate().is_ok());
        assert_eq!(r(0, 5, 0).validate().unwrap_err().family().exit_code(), 2);
        // The overlap against the tiles that run: only the sides they cut count.
        for bad in [r(20, 40, 10), r(64, 64, 32)] {
            let e = decide(&bad, Path::new(M), &meta(None), (150, 90)).unwrap_err();
            assert_eq!(e.family().exit_code(), 2, "{e}");
        }
        let e = decide(&r(20, 40, 10), Path::new(M), &meta(None), (150, 90));
        let e = e.unwrap_err().to_string();
        assert!(e.starts_with("--tile-overlap 10: tiles of 20x40"), "{e}");
        assert!(e.contains("at most 9"), "{e}");
        // 100x30 tiles over a 300x30 frame cut only across, where 30 is under half of 100.
        let t = decide(&r(100, 30, 30), Path::new(M), &meta(None), (300, 30)).unwrap();
        assert_eq!(t.tiles, Some(((100, 30), 30)));
        // An overlap too large for the model's own size, found once the model is read.
        let wide = TileRequest {
            mode: TileMode::Auto,
            overlap: 40,
            overlap_given: true,
        };
        let e = decide(&wide, Path::new(M), &meta(Some((64, 64))), (150, 90)).unwrap_err();
        assert_eq!(e.family().exit_code(), 2);
        assert!(e.to_string().starts_with("--tile-overlap 40: "), "{e}");
    }

    #[test]
    fn the_default_overlap_is_lowered_for_tiles_too_small_for_it_and_a_given_one_is_not() {
        let auto = request(TileMode::Auto);
        let t = decide(&auto, Path::new(M), &meta(Some((32, 32))), (160, 90)).unwrap();
        assert_eq!(t.tiles, Some(((32, 32), 15)));
        assert!(
            t.report.reason.ends_with(
                "overlap lowered from 16 to 15 px for tiles of 32x32 (--tile-overlap sets it)"
            ),
            "{}",
            t.report.reason
        );
        let t = decide(&auto, Path::new(M), &meta(Some((1, 1))), (4, 3)).unwrap();
        assert_eq!(t.tiles, Some(((1, 1), 0)));
        // A side the tile covers whole does not count: tiles 36 tall on a 36-tall frame.
        let t = decide(&auto, Path::new(M), &meta(Some((40, 36))), (160, 36)).unwrap();
        assert_eq!(t.tiles, Some(((40, 36), 16)));
        // Tiles of the user's size without --tile-overlap are lowered too.
        let small = request(TileMode::Size {
            width: 20,
            height: 24,
        });
        assert!(small.validate().is_ok());
        let t = decide(&small, Path::new(M), &meta(None), (160, 90)).unwrap();
        assert_eq!(t.tiles, Some(((20, 24), 9)));
        let given = TileRequest {
            overlap_given: true,
            ..request(TileMode::Auto)
        };
        let e = decide(&given, Path::new(M), &meta(Some((32, 32))), (160, 90)).unwrap_err();
        assert!(e.to_string().starts_with("--tile-overlap 16: "), "{e}");
    }

    #[test]
    fn the_manifest_records_the_request() {
        assert_eq!(TileRequest::default().describe(), "auto, overlap 16");
        assert_eq!(request(TileMode::Off).describe(), "off");
        let r = request(TileMode::Size {
            width: 64,
            height: 48,
        });
        assert_eq!(r.describe(), "64x48, overlap 16");
    }
}
