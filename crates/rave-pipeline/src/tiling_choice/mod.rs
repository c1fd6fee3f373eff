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
    /// Whether frames were cut into more than one tile. A frame only padded to a size the
    /// model takes is one tile, not cut (`tile` is then the padded size, `grid` 1x1).
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
            tiled: !plan.is_padded_whole(),
            tile: Some([plan.tile.0, plan.tile.1]),
            overlap: Some(overlap),
            grid: Some([columns, rows]),
            reason,
        },
    })
}

#[cfg(test)]
mod tests;
