//! Building a GPU backend within the run's VRAM budget ([`crate::vram_fit`]): each try gets
//! a fresh GPU context whose account is limited to the budget, builds and warms up the
//! backend at one size (so ONNX Runtime's arena, cuDNN's workspaces and the native engine's
//! maps are all allocated), then counts what the device holds beyond RAVE's own buffers
//! into the account and adds the frames the stages will hold in flight. A try that does not
//! fit is dropped (its memory with it) before the next.

use std::sync::Arc;

use rave_core::error::{EngineError, Result};
use rave_core::gpu::GpuContext;
use rave_core::types::PixelFormat;
use rave_tensorrt::gpu_inference::GpuInference;

use rave_core::tiling::TilePlan;

use crate::config::ChannelCapacities;
use crate::device_tiles::DeviceTiles;
use crate::tiled_gpu::TiledGpu;
use crate::tiling_choice::{TileMode, TileRequest, Tiling, TilingReport};
use crate::vram_fit::{Attempt, Budget, Need, fit, human, is_out_of_memory, smaller_tiles};

/// A built backend with the context it runs on.
pub type Built = (Arc<GpuContext>, Box<dyn GpuInference>);

/// The sizes to try, in order, for `request` where the tiling decided without memory is
/// `tiles` (tile, overlap), for a model of tile sides that are multiples of `multiple`
/// (width, height): under
/// `auto` with the whole frame in one piece (as it is, or padded to the multiple), that and
/// then smaller tiles; otherwise just what was decided.
pub fn sizes_to_try(
    request: &TileRequest,
    tiles: Option<((u32, u32), u32)>,
    frame: (u32, u32),
    multiple: (u32, u32),
) -> Vec<Option<(u32, u32)>> {
    let smaller = || {
        smaller_tiles(frame, request.overlap, multiple)
            .into_iter()
            .map(Some)
    };
    match (request.mode, tiles) {
        (TileMode::Auto, None) => std::iter::once(None).chain(smaller()).collect(),
        (TileMode::Auto, Some((tile, _))) if tile.0 >= frame.0 && tile.1 >= frame.1 => {
            std::iter::once(Some(tile)).chain(smaller()).collect()
        }
        (_, None) => vec![None],
        (_, Some((tile, _))) => vec![Some(tile)],
    }
}

/// Device bytes the stages hold in flight beyond the backend, for frames of `frame` upscaled
/// by `scale` in `format`: the preprocessed frames (their channel, plus one being made and
/// one in the backend) and the encoder's YUV surfaces (up to 3 bytes an output pixel, for
/// the upscaled channel plus two). Whole frames come out of the backend's output ring,
/// which the warm-up already allocated; tiled frames are blended into buffers of their own
/// (as many again), through the blend's sums (16 bytes an output pixel, for each of the
/// `batch` frames of one call).
pub fn in_flight_bytes(
    frame: (u32, u32),
    scale: u32,
    format: PixelFormat,
    channels: &ChannelCapacities,
    tiled: Option<usize>,
) -> usize {
    let pixels = frame.0 as usize * frame.1 as usize;
    let out_pixels = pixels * (scale * scale) as usize;
    let e = format.element_bytes();
    let frames_in = (channels.preprocessed + 2) * 3 * pixels * e;
    let yuv = (channels.inferred + 2) * 3 * out_pixels;
    let blended = match tiled {
        Some(batch) => (channels.inferred + 2) * 3 * out_pixels * e + 16 * out_pixels * batch,
        None => 0,
    };
    frames_in + yuv + blended
}

/// One try: a fresh context on `device` limited to `budget`, `build` at the size being
/// tried, then the device's peak beyond RAVE's account counted into it and `in_flight`
/// more held back for the stages. Returns the device bytes the try would hold at most.
pub fn build_within(
    device: usize,
    budget: &Budget,
    in_flight: usize,
    build: impl FnOnce(&Arc<GpuContext>, Option<usize>) -> Result<Box<dyn GpuInference>>,
) -> Result<Attempt<Built>> {
    let ctx = GpuContext::with_vram_limit(device, Some(budget.bytes))?;
    // ONNX Runtime's arena gets what the frames in flight leave.
    let arena = budget.bytes.saturating_sub(in_flight);
    let backend = match build(&ctx, Some(arena)) {
        Ok(backend) => backend,
        // Refused by RAVE's account on the way: more than that, with the frames in flight.
        Err(EngineError::VramLimit { would_be, .. }) => {
            return Ok(Attempt::TooBig(Need::MoreThan(would_be + in_flight)));
        }
        Err(e) if is_out_of_memory(&e) => {
            tracing::info!(error = %e, "VRAM fit: the build ran out of memory");
            return Ok(Attempt::TooBig(Need::Unknown));
        }
        Err(e) => return Err(e),
    };
    let peak = ctx.device_peak().unwrap_or(0);
    let (held, _) = ctx.vram_usage();
    let outside = peak.saturating_sub(held);
    let needed = held + outside + in_flight;
    tracing::info!(
        model_mib = (held + outside) >> 20,
        in_flight_mib = in_flight >> 20,
        budget_mib = budget.bytes >> 20,
        fits = needed <= budget.bytes,
        "VRAM fit: the backend built and warmed up"
    );
    if needed > budget.bytes {
        return Ok(Attempt::TooBig(Need::Bytes(needed)));
    }
    match ctx.reserve_external(outside) {
        Ok(()) => Ok(Attempt::Fits((ctx, backend), needed)),
        Err(EngineError::VramLimit { would_be, .. }) => {
            Ok(Attempt::TooBig(Need::Bytes(would_be + in_flight)))
        }
        Err(e) => Err(e),
    }
}

/// What a fitted build gave: the backend (behind device tiles where it runs tiles), its
/// context, and the report's account of the tiling.
pub struct FittedBackend {
    /// The context the backend runs on (its account holds the budget).
    pub ctx: Arc<GpuContext>,
    /// The backend, tiled where the fit or the request says so.
    pub backend: Box<dyn GpuInference>,
    /// What tiling ran and why.
    pub tiling: TilingReport,
}

/// What the fit is about, for its messages and the report.
pub struct FitRequest<'a> {
    /// The GPU.
    pub device: usize,
    /// `--tile`/`--tile-overlap`.
    pub request: &'a TileRequest,
    /// The tiling decided without memory ([`crate::tiling_choice::decide`]).
    pub decided: Tiling,
    /// The clip's frame size.
    pub frame: (u32, u32),
    /// The model's scale.
    pub scale: u32,
    /// What the model's tile sides must be multiples of (width, height): the side multiple,
    /// or a fixed-size model's size ([`rave_core::backend::ModelMetadata::tile_multiples`]).
    pub tile_multiples: (u32, u32),
    /// The tensor format of the model that runs.
    pub format: PixelFormat,
    /// Frames one backend call takes (each tiled one holds a blend at once).
    pub batch: usize,
    /// The stages' channel capacities.
    pub channels: &'a ChannelCapacities,
    /// The budget (none where the GPU's free memory is unknown and none was given).
    pub budget: Option<Budget>,
    /// "model NAME on WxH frames".
    pub what: String,
}

/// Build through `build` (a backend for inputs of a size, on a context, with ONNX Runtime's
/// arena capped where given) at the largest size that fits the budget, and wrap it in
/// device tiles where that is a tile. A size the user chose (`--tile WxH`, `--tile off`, a
/// fixed-size model's) without `--vram-limit` is built as asked, unbudgeted, as before.
pub fn build_fitted(
    fit_request: FitRequest<'_>,
    build: impl Fn(&Arc<GpuContext>, (u32, u32), Option<usize>) -> Result<Box<dyn GpuInference>>,
) -> Result<FittedBackend> {
    let FitRequest {
        device,
        request,
        decided,
        frame,
        scale,
        tile_multiples,
        format,
        channels,
        batch,
        budget,
        what,
    } = fit_request;
    let sizes = sizes_to_try(request, decided.tiles, frame, tile_multiples);
    // The decided tiles' own overlap for the decided tiles (lowered for a small fixed-size
    // model's tiles where none was given, 0 for one padded frame), else the one asked for.
    let overlap_of = |tile: Option<(u32, u32)>| match decided.tiles {
        Some((t, o)) if Some(t) == tile => o,
        _ => request.overlap,
    };
    let budget = budget.filter(|b| b.given || sizes.len() > 1);
    let Some(budget) = budget else {
        let ctx = GpuContext::new(device)?;
        let backend = build(&ctx, sizes[0].unwrap_or(frame), None)?;
        let backend = tiled(&ctx, backend, decided.tiles)?;
        return Ok(FittedBackend {
            ctx,
            backend,
            tiling: decided.report,
        });
    };
    let fitted = fit(&sizes, &budget, &what, |size| {
        let in_flight = in_flight_bytes(frame, scale, format, channels, size.map(|_| batch.max(1)));
        build_within(device, &budget, in_flight, |ctx, arena| {
            build(ctx, size.unwrap_or(frame), arena)
        })
    })?;
    let in_flight = in_flight_bytes(
        frame,
        scale,
        format,
        channels,
        fitted.tile.map(|_| batch.max(1)),
    );
    let needs = format!(
        "needs {} of {}: {} for the model at this size, {} kept for frames in flight (--channels sets how many)",
        human(fitted.peak),
        budget.describe(),
        human(fitted.peak.saturating_sub(in_flight)),
        human(in_flight)
    );
    let overlap = overlap_of(fitted.tile);
    let tiling = match (fitted.tile, decided.tiles) {
        // Shrunk by the fit: the whole frame (and maybe larger tiles) did not fit.
        (Some(tile), decided_tiles) if decided_tiles.map(|(t, _)| t) != Some(tile) => {
            let plan = TilePlan::padded(frame, tile, overlap, tile_multiples)
                .map_err(EngineError::Config)?;
            let (across, down) = plan.grid();
            let whole = match fitted.too_big.first() {
                Some((None, Need::Bytes(n))) => format!(" ({})", human(*n)),
                Some((None, Need::MoreThan(n))) => format!(" (more than {})", human(*n)),
                _ => String::new(),
            };
            TilingReport {
                tiled: !plan.is_padded_whole(),
                tile: Some([tile.0, tile.1]),
                overlap: Some(overlap),
                grid: Some([across, down]),
                reason: format!(
                    "the whole frame{whole} does not fit {}; these are the largest tiles that do ({needs})",
                    budget.describe()
                ),
            }
        }
        _ => TilingReport {
            reason: format!("{} ({needs})", decided.report.reason),
            ..decided.report
        },
    };
    let tiles = fitted.tile.map(|t| (t, overlap));
    let (ctx, backend) = fitted.value;
    let backend = tiled(&ctx, backend, tiles)?;
    Ok(FittedBackend {
        ctx,
        backend,
        tiling,
    })
}

/// `backend` behind the device's tiling where `tiles` (tile size, overlap) says so.
fn tiled(
    ctx: &Arc<GpuContext>,
    backend: Box<dyn GpuInference>,
    tiles: Option<((u32, u32), u32)>,
) -> Result<Box<dyn GpuInference>> {
    Ok(match tiles {
        Some((tile, overlap)) => Box::new(TiledGpu::new(
            backend,
            DeviceTiles::new(ctx.clone())?,
            tile,
            overlap,
        )?),
        None => backend,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_tries_the_whole_frame_then_smaller_tiles_and_anything_else_one_size() {
        let auto = TileRequest::default();
        let sizes = sizes_to_try(&auto, None, (1920, 1080), (1, 1));
        assert_eq!(sizes[0], None);
        assert_eq!(sizes[1], Some((976, 556)));
        let fixed = sizes_to_try(&auto, Some(((64, 64), 16)), (1920, 1080), (64, 64));
        assert_eq!(fixed, vec![Some((64, 64))]);
        let off = TileRequest {
            mode: TileMode::Off,
            ..auto
        };
        assert_eq!(sizes_to_try(&off, None, (1920, 1080), (1, 1)), vec![None]);
        // A frame padded to a model's multiple of 8, then tiles of multiples of 8.
        let padded = sizes_to_try(&auto, Some(((1368, 768), 16)), (1366, 766), (8, 8));
        assert_eq!(padded[..2], [Some((1368, 768)), Some((696, 392))]);
    }

    #[test]
    fn frames_in_flight_grow_with_the_output_and_the_blend() {
        let ch = ChannelCapacities {
            decoded: 4,
            preprocessed: 2,
            inferred: 4,
        };
        let whole = in_flight_bytes((1920, 1080), 2, PixelFormat::RgbPlanarF32, &ch, None);
        // 4 input frames of 24.9 MB and 6 YUV surfaces of 24.9 MB.
        assert_eq!(whole, 4 * 12 * 2_073_600 + 6 * 3 * 8_294_400);
        let tiled = in_flight_bytes((1920, 1080), 2, PixelFormat::RgbPlanarF32, &ch, Some(1));
        // 6 blended frames of 99.5 MB and the sums.
        assert_eq!(tiled - whole, (6 * 12 + 16) * 8_294_400);
        let batched = in_flight_bytes((1920, 1080), 2, PixelFormat::RgbPlanarF32, &ch, Some(4));
        assert_eq!(
            batched - tiled,
            3 * 16 * 8_294_400,
            "a blend per frame of a call"
        );
        let half = in_flight_bytes((1920, 1080), 2, PixelFormat::RgbPlanarF16, &ch, None);
        assert_eq!(
            whole - half,
            4 * 6 * 2_073_600,
            "half the input frames' bytes"
        );
    }
}
