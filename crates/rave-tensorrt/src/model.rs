//! Loading an ONNX super-resolution model into a session and describing it: tensor names,
//! channels, static or dynamic H/W, and the scale (from the shapes, or one probe run).

use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::{TensorElementType, TensorRef, ValueType};
use rave_core::backend::ModelMetadata;
use rave_core::error::{EngineError, Result};
use rave_core::types::PixelFormat;

use crate::ort_message::first_line;
use crate::runtime::OrtRuntime;

/// Side lengths of the probe input used to measure the scale of dynamic-shape models, in
/// the order tried (256 for a model of a block over 64, 240 = 16 x 15 for one of a block
/// of 3, 5, 6, 10, 12 or 15: each to refuse it saying why, not as a failed run).
const PROBE_SIDES: [usize; 4] = [16, 64, 256, 240];
/// The side multiples a dynamic-shape model is probed for, smallest first: frames are
/// padded to the one it takes (a model that takes none of them is refused).
const SIDE_MULTIPLES: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Largest upscale factor RAVE accepts.
const MAX_SCALE: u32 = 16;

/// How to build the session.
#[derive(Debug, Clone)]
pub struct ModelOptions {
    /// Intra-op threads (0 lets ONNX Runtime choose).
    pub threads: usize,
}

/// An ONNX model loaded into a session, with its description.
#[derive(Debug)]
pub struct LoadedModel {
    /// The session running the model.
    pub session: Session,
    /// What the model is.
    pub metadata: ModelMetadata,
    /// Where it was loaded from.
    pub path: PathBuf,
}

/// The static shape of a 4-D image tensor: `None` where an axis is dynamic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ImageShape {
    batch: Option<u32>,
    channels: Option<u32>,
    height: Option<u32>,
    width: Option<u32>,
}

impl LoadedModel {
    /// Load `path` on the CPU execution provider and describe it (float32 models only: the
    /// CPU backend feeds float32 images).
    pub fn load_cpu(runtime: &OrtRuntime, path: &Path, options: &ModelOptions) -> Result<Self> {
        Self::open_cpu(runtime, path, options.threads, false)
    }

    /// Describe any model RAVE can run (float32 or float16 tensors) through a CPU session,
    /// without running it beyond the probe a dynamic-shape model needs.
    pub fn inspect(runtime: &OrtRuntime, path: &Path) -> Result<ModelMetadata> {
        Self::open_cpu(runtime, path, 1, true).map(|m| m.metadata)
    }

    fn open_cpu(runtime: &OrtRuntime, path: &Path, threads: usize, fp16_ok: bool) -> Result<Self> {
        check_model_file(path)?;
        let invalid = |e: String| EngineError::ModelInvalid {
            path: path.to_path_buf(),
            reason: first_line(&e),
        };
        let mut builder = Session::builder(runtime.environment())
            .map_err(|e| invalid(e.to_string()))?
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(|e| invalid(e.to_string()))?
            .with_intra_threads(threads)
            .map_err(|e| invalid(e.to_string()))?;
        let session = builder
            .commit_from_file(path)
            .map_err(|e| invalid(e.to_string()))?;
        Self::describe(session, path, fp16_ok)
    }

    /// A session built by any backend, described by `metadata` measured on a CPU session of
    /// the same file ([`LoadedModel::inspect`]): no probe frame runs on the backend's own
    /// session, where ONNX Runtime counts the first runs toward its CUDA graph capture and
    /// searches cuDNN's algorithms anew for every probe size.
    pub fn with_metadata(session: Session, path: &Path, metadata: ModelMetadata) -> Self {
        Self {
            session,
            metadata,
            path: path.to_path_buf(),
        }
    }

    /// Read the metadata of a session built by any backend, running its probe frames on it;
    /// `fp16_ok` when the backend can feed half-precision inputs.
    pub fn describe(mut session: Session, path: &Path, fp16_ok: bool) -> Result<Self> {
        let metadata = extract_metadata(&mut session, path, fp16_ok)?;
        Ok(Self {
            session,
            metadata,
            path: path.to_path_buf(),
        })
    }
}

/// Refuse a model path that is missing or is not a regular file (a folder, a pipe, a device)
/// before the runtime, or a hash of it, reads it: a pipe would wait and a device read on.
pub fn check_model_file(path: &Path) -> Result<()> {
    let kind = match std::fs::metadata(path) {
        Ok(meta) => meta.file_type(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(EngineError::ModelNotFound(format!(
                "{}: no such file; `rave models` lists the installed models",
                path.display()
            )));
        }
        Err(e) => {
            return Err(EngineError::ModelInvalid {
                path: path.to_path_buf(),
                reason: format!("cannot be read: {e}"),
            });
        }
    };
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a folder"
    } else {
        rave_core::file_kind::special_file(path, kind).unwrap_or("not a regular file")
    };
    Err(EngineError::ModelInvalid {
        path: path.to_path_buf(),
        reason: format!("is {what}, not an .onnx file; give the path of the model's file"),
    })
}

/// A name a model file gives itself, as RAVE prints it: control characters (a line break,
/// a terminal escape that could forge a line of RAVE's), bidirectional overrides and line
/// separators, and surrounding spaces are left out, and it is cut at 64 characters; `None`
/// where nothing is left.
fn printable_name(name: &str) -> Option<String> {
    // Bidirectional overrides and line separators rearrange or break a line as surely.
    let shown = |c: &char| {
        !c.is_control()
            && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    let kept: String = name.chars().filter(shown).take(64).collect();
    let kept = kept.trim();
    (!kept.is_empty()).then(|| kept.to_owned())
}

fn not_image_model(path: &Path, why: impl std::fmt::Display) -> EngineError {
    EngineError::ModelMetadata(format!(
        "{}: not an image-to-image super-resolution model: {why} (RAVE needs one NCHW float RGB input and output, [N,3,H,W] -> [N,3,H*s,W*s])",
        path.display()
    ))
}

fn image_shape(path: &Path, what: &str, ty: &ValueType) -> Result<(ImageShape, TensorElementType)> {
    let ValueType::Tensor { ty, shape, .. } = ty else {
        return Err(not_image_model(path, format!("the {what} is not a tensor")));
    };
    if shape.len() != 4 {
        return Err(not_image_model(
            path,
            format!(
                "the {what} has rank {} ({:?}), not 4",
                shape.len(),
                &shape[..]
            ),
        ));
    }
    let dim = |d: i64| u32::try_from(d).ok().filter(|v| *v > 0);
    Ok((
        ImageShape {
            batch: dim(shape[0]),
            channels: dim(shape[1]),
            height: dim(shape[2]),
            width: dim(shape[3]),
        },
        *ty,
    ))
}

fn extract_metadata(session: &mut Session, path: &Path, fp16_ok: bool) -> Result<ModelMetadata> {
    // One output: with several, which one is the picture is a guess (the first of a model
    // whose first output is not the upscaled image gave a wrong result without a word).
    if session.inputs().len() != 1 || session.outputs().len() != 1 {
        return Err(not_image_model(
            path,
            format!(
                "it has {} inputs and {} outputs",
                session.inputs().len(),
                session.outputs().len()
            ),
        ));
    }
    let input_name = session.inputs()[0].name().to_string();
    let output_name = session.outputs()[0].name().to_string();
    let (input, in_ty) = image_shape(path, "input", session.inputs()[0].dtype())?;
    let (output, out_ty) = image_shape(path, "output", session.outputs()[0].dtype())?;
    for (what, ty) in [("input", in_ty), ("output", out_ty)] {
        if !matches!(ty, TensorElementType::Float32 | TensorElementType::Float16) {
            return Err(not_image_model(
                path,
                format!("the {what} is {ty:?}, not float"),
            ));
        }
    }
    if in_ty != out_ty {
        return Err(not_image_model(
            path,
            format!("the input is {in_ty:?} but the output is {out_ty:?}"),
        ));
    }
    if in_ty != TensorElementType::Float32 && !fp16_ok {
        return Err(EngineError::ModelMetadata(format!(
            "{}: the CPU backend runs models with float32 inputs; this one takes float16 (use the float32 model, or the GPU)",
            path.display()
        )));
    }
    let tensor_format = if in_ty == TensorElementType::Float16 {
        PixelFormat::RgbPlanarF16
    } else {
        PixelFormat::RgbPlanarF32
    };
    for (what, shape) in [("input", input), ("output", output)] {
        if let Some(c) = shape.channels.filter(|c| *c != 3) {
            return Err(not_image_model(
                path,
                format!("the {what} has {c} channels, not 3"),
            ));
        }
    }
    let (scale, side_multiple) = match (input.height, input.width, output.height, output.width) {
        (Some(ih), Some(iw), Some(oh), Some(ow)) => (scale_from(path, (ih, iw), (oh, ow))?, 1),
        _ => probe_scale(session, path, &input_name, input, tensor_format)?,
    };
    let name = session
        .metadata()
        .ok()
        .and_then(|m| m.custom("rave.model_name"))
        .and_then(|n| printable_name(&n))
        .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "model".into());
    Ok(ModelMetadata {
        name,
        scale,
        input_name,
        output_name,
        input_channels: 3,
        min_input_hw: (input.height.unwrap_or(1), input.width.unwrap_or(1)),
        max_input_hw: (
            input.height.unwrap_or(u32::MAX),
            input.width.unwrap_or(u32::MAX),
        ),
        tensor_format,
        fixed_batch: input.batch,
        side_multiple: side_multiple as u32,
    })
}

/// The integer factor between input and output sizes; both axes must agree.
fn scale_from(path: &Path, input_hw: (u32, u32), output_hw: (u32, u32)) -> Result<u32> {
    let (ih, iw) = input_hw;
    let (oh, ow) = output_hw;
    let exact = oh % ih == 0 && ow % iw == 0 && oh / ih == ow / iw;
    let scale = oh / ih;
    if !exact || scale == 0 {
        return Err(not_image_model(
            path,
            format!(
                "input {iw}x{ih} gives output {ow}x{oh}, not a whole upscale factor of 1..={MAX_SCALE}"
            ),
        ));
    }
    if scale > MAX_SCALE {
        return Err(not_image_model(
            path,
            format!(
                "input {iw}x{ih} gives output {ow}x{oh}, an upscale factor of {scale}; RAVE runs factors up to {MAX_SCALE}"
            ),
        ));
    }
    Ok(scale)
}

/// Run one small grey frame through a dynamic-shape model and measure the scale: 16x16
/// first (cheap for any model), then 64x64, 256x256 and 240x240 where the run fails, for a
/// model that needs sides of 20 px or more (a pooling stage) or of a large or odd block.
/// Then the sides it takes: the smallest of [`SIDE_MULTIPLES`] whose next odd multiple past the probe's side runs with
/// the same scale (1 for most models; 2 or 4 for a pixel-unshuffle stage or a strided
/// layer, 8 to 64 for window attention); a size that fails or gives another size is one
/// the model does not take. Returns (scale, side multiple).
fn probe_scale(
    session: &mut Session,
    path: &Path,
    input_name: &str,
    input: ImageShape,
    format: PixelFormat,
) -> Result<(u32, usize)> {
    // The probe sizes this model's fixed sides leave: (width, height) asked for.
    let size = |(w, h): (usize, usize)| {
        (
            input.width.map_or(w, |v| v as usize),
            input.height.map_or(h, |v| v as usize),
        )
    };
    // Each size that failed, with ONNX Runtime's first line.
    let mut failures: Vec<(String, String)> = Vec::new();
    for side in PROBE_SIDES {
        let (w, h) = size((side, side));
        match probe_output(session, input_name, input.batch, (w, h), format) {
            Ok(out_shape) => {
                let scale = scale_of_probe(path, input.batch, (w, h), &out_shape)?;
                let mut tried = failures;
                // The first size that ran with another factor: the refusal where none fits.
                let mut other_factor = None;
                for multiple in SIDE_MULTIPLES {
                    let odd = multiple * odd_factor_past(side / multiple, !side.is_power_of_two());
                    let (ow, oh) = size((odd, odd));
                    let why = match probe_output(session, input_name, input.batch, (ow, oh), format)
                    {
                        Ok(out_shape) => {
                            match same_scale(
                                path,
                                input.batch,
                                (ow, oh),
                                &out_shape,
                                (scale, (w, h)),
                            ) {
                                Ok(()) => return Ok((scale, multiple)),
                                Err(e) => {
                                    let why = format!("output {out_shape:?}");
                                    other_factor.get_or_insert(e);
                                    why
                                }
                            }
                        }
                        Err(e) => first_line(&e.to_string()),
                    };
                    tried.push((format!("{ow}x{oh}"), why));
                }
                if let Some(e) = other_factor {
                    return Err(e);
                }
                return Err(EngineError::ModelMetadata(format!(
                    "{}: the model runs on a {w}x{h} frame but not on {} ({}): it takes only some frame sizes (sides that are multiples of a block over {} or not a power of two, say), and RAVE pads frames to blocks of 2, 4, 8 ... {} pixels only; export it so that it pads its input to the size it needs",
                    path.display(),
                    tried
                        .iter()
                        .map(|(size, _)| size.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    tried.last().map_or("", |(_, why)| why.as_str()),
                    SIDE_MULTIPLES[SIDE_MULTIPLES.len() - 1],
                    SIDE_MULTIPLES[SIDE_MULTIPLES.len() - 1],
                )));
            }
            Err(e) => failures.push((format!("{w}x{h}"), first_line(&e.to_string()))),
        }
        if input.height.is_some() && input.width.is_some() {
            break;
        }
    }
    // A failing run is the runtime's or the provider's problem, not proof of a bad model.
    Err(EngineError::Inference(format!(
        "{}: measuring the scale with a probe frame failed ({})",
        path.display(),
        failures
            .iter()
            .map(|(size, why)| format!("{size}: {why}"))
            .collect::<Vec<_>>()
            .join("; ")
    )))
}

/// The multiplier of a side multiple's probe size: the smallest odd number over `k` (the
/// size is then no multiple of twice the side multiple), one that 3 and 5 do not divide
/// either where `odd_blocks` (a model that ran on a probe side that is no power of two,
/// 240, may have a block of 3 or 5 times a power of two: the size must be no multiple of
/// it). A power-of-two side only runs models of power-of-two blocks.
fn odd_factor_past(k: usize, odd_blocks: bool) -> usize {
    (k + 1..)
        .find(|f| f % 2 == 1 && (!odd_blocks || (f % 3 != 0 && f % 5 != 0)))
        .unwrap_or(k + 1)
}

/// An error unless a probe of `(w, h)` whose output shape is `out_shape` has the scale
/// `scale` measured on the probe of `first` (a model that pads its output by a fixed
/// amount has another factor at every size).
fn same_scale(
    path: &Path,
    batch: Option<u32>,
    (w, h): (usize, usize),
    out_shape: &[i64],
    (scale, first): (u32, (usize, usize)),
) -> Result<()> {
    let n = batch.map_or(1, |b| b as i64);
    let s = scale as usize;
    let expected = [n, 3, (h * s) as i64, (w * s) as i64];
    if out_shape == expected {
        return Ok(());
    }
    Err(EngineError::ModelMetadata(format!(
        "{}: its output is {out_shape:?} for an input of [{n}, 3, {h}, {w}], not {expected:?} (x{scale}, as measured on a {}x{} probe frame); RAVE needs a model whose output is its input scaled by one whole factor at every size",
        path.display(),
        first.0,
        first.1
    )))
}

/// The output shape of one grey frame of `(w, h)` (a batch of the model's fixed size).
fn probe_output(
    session: &mut Session,
    input_name: &str,
    batch: Option<u32>,
    (w, h): (usize, usize),
    format: PixelFormat,
) -> std::result::Result<Vec<i64>, ort::Error> {
    let n = batch.map_or(1, |b| b as usize);
    let shape = [n, 3, h, w];
    let len = n * 3 * h * w;
    let outputs = if format == PixelFormat::RgbPlanarF16 {
        let data = vec![half::f16::from_f32(0.5); len];
        let t = TensorRef::from_array_view((shape, &data[..]))?;
        session.run(ort::inputs![input_name => t])?
    } else {
        let data = vec![0.5f32; len];
        let t = TensorRef::from_array_view((shape, &data[..]))?;
        session.run(ort::inputs![input_name => t])?
    };
    Ok(outputs[0]
        .dtype()
        .tensor_shape()
        .map(|s| s.to_vec())
        .unwrap_or_default())
}

/// The scale a probe of `(w, h)` measured from its output shape `out_shape`.
fn scale_of_probe(
    path: &Path,
    batch: Option<u32>,
    (w, h): (usize, usize),
    out_shape: &[i64],
) -> Result<u32> {
    let n = batch.map_or(1, |b| b as usize);
    if out_shape.len() != 4 || out_shape[0] != n as i64 || out_shape[1] != 3 {
        return Err(not_image_model(
            path,
            format!("a {w}x{h} probe gave output shape {out_shape:?}"),
        ));
    }
    let out_hw = (
        u32::try_from(out_shape[2]).unwrap_or(0),
        u32::try_from(out_shape[3]).unwrap_or(0),
    );
    scale_from(path, (h as u32, w as u32), out_hw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_must_be_whole_and_equal_on_both_axes() {
        let p = Path::new("m.onnx");
        assert_eq!(scale_from(p, (16, 16), (32, 32)).unwrap(), 2);
        assert_eq!(scale_from(p, (10, 20), (30, 60)).unwrap(), 3);
        assert!(scale_from(p, (16, 16), (24, 24)).is_err());
        assert!(scale_from(p, (16, 16), (32, 64)).is_err());
        assert!(scale_from(p, (16, 16), (8, 8)).is_err());
        let big = scale_from(p, (4, 4), (68, 68)).unwrap_err().to_string();
        assert!(
            big.contains("an upscale factor of 17; RAVE runs factors up to"),
            "{big}"
        );
    }

    #[test]
    fn a_models_own_name_is_printed_without_control_characters() {
        assert_eq!(
            printable_name("x2\n\u{1b}[31mrave: error: fake").as_deref(),
            Some("x2[31mrave: error: fake")
        );
        assert_eq!(printable_name(" \t\r\n"), None);
        assert_eq!(
            printable_name("x2\u{202E}gnp.exe\u{2028}").as_deref(),
            Some("x2gnp.exe")
        );
        assert_eq!(printable_name(&"n".repeat(100)).map(|n| n.len()), Some(64));
    }

    #[test]
    fn side_multiple_probes_are_odd_multiples_and_after_240_no_multiple_of_3_or_5() {
        // Past 16 (a power of two): 17 for 1, 18 = 2 x 9 for 2, 20 = 4 x 5 for 4.
        assert_eq!(odd_factor_past(16, false), 17);
        assert_eq!(odd_factor_past(8, false), 9);
        assert_eq!(odd_factor_past(4, false), 5);
        // Past 240: 32 x 9 = 288 would run a block of 3 (or 96): 32 x 11; 64 x 5 = 320 a
        // block of 5: 64 x 7.
        assert_eq!(odd_factor_past(240 / 32, true), 11);
        assert_eq!(odd_factor_past(240 / 64, true), 7);
        assert_eq!(odd_factor_past(240, true), 241);
    }

    #[test]
    fn missing_model_is_model_not_found() {
        let err = check_model_file(Path::new("/nonexistent/x.onnx")).unwrap_err();
        assert_eq!(err.kind(), "model_not_found");
    }
}
