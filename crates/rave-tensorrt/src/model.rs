//! Loading an ONNX super-resolution model into a session and describing it: tensor names,
//! channels, static or dynamic H/W, and the scale (from the shapes, or one probe run).

use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::{TensorElementType, TensorRef, ValueType};
use rave_core::backend::ModelMetadata;
use rave_core::error::{EngineError, Result};

use crate::runtime::OrtRuntime;

/// Side length of the probe input used to measure the scale of dynamic-shape models.
const PROBE_SIDE: usize = 16;
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
    channels: Option<u32>,
    height: Option<u32>,
    width: Option<u32>,
}

impl LoadedModel {
    /// Load `path` on the CPU execution provider and describe it.
    pub fn load_cpu(runtime: &OrtRuntime, path: &Path, options: &ModelOptions) -> Result<Self> {
        check_model_file(path)?;
        let invalid = |e: String| EngineError::ModelInvalid {
            path: path.to_path_buf(),
            reason: first_line(&e),
        };
        let mut builder = Session::builder(runtime.environment())
            .map_err(|e| invalid(e.to_string()))?
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(|e| invalid(e.to_string()))?
            .with_intra_threads(options.threads)
            .map_err(|e| invalid(e.to_string()))?;
        let session = builder
            .commit_from_file(path)
            .map_err(|e| invalid(e.to_string()))?;
        Self::describe(session, path, false)
    }

    /// Read the metadata of a session built by any backend; `fp16_ok` when the backend can
    /// feed half-precision inputs.
    pub fn describe(mut session: Session, path: &Path, fp16_ok: bool) -> Result<Self> {
        let metadata = extract_metadata(&mut session, path, fp16_ok)?;
        Ok(Self {
            session,
            metadata,
            path: path.to_path_buf(),
        })
    }
}

/// A missing path or a directory is reported before the runtime sees it.
fn check_model_file(path: &Path) -> Result<()> {
    if !path.exists() {
        return Err(EngineError::ModelNotFound(format!(
            "{}: no such file; `rave models` lists the installed models",
            path.display()
        )));
    }
    if !path.is_file() {
        return Err(EngineError::ModelInvalid {
            path: path.to_path_buf(),
            reason: "is a directory, not an .onnx file".into(),
        });
    }
    Ok(())
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or(s).trim().to_string()
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
            channels: dim(shape[1]),
            height: dim(shape[2]),
            width: dim(shape[3]),
        },
        *ty,
    ))
}

fn extract_metadata(session: &mut Session, path: &Path, fp16_ok: bool) -> Result<ModelMetadata> {
    if session.inputs().len() != 1 || session.outputs().is_empty() {
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
    if in_ty != TensorElementType::Float32 && !fp16_ok {
        return Err(EngineError::ModelMetadata(format!(
            "{}: this backend runs fp32 models; this one takes {in_ty:?}",
            path.display()
        )));
    }
    for (what, shape) in [("input", input), ("output", output)] {
        if let Some(c) = shape.channels.filter(|c| *c != 3) {
            return Err(not_image_model(
                path,
                format!("the {what} has {c} channels, not 3"),
            ));
        }
    }
    let scale = match (input.height, input.width, output.height, output.width) {
        (Some(ih), Some(iw), Some(oh), Some(ow)) => scale_from(path, (ih, iw), (oh, ow))?,
        _ => probe_scale(session, path, &input_name, input)?,
    };
    let name = session
        .metadata()
        .ok()
        .and_then(|m| m.custom("rave.model_name"))
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
    })
}

/// The integer factor between input and output sizes; both axes must agree.
fn scale_from(path: &Path, input_hw: (u32, u32), output_hw: (u32, u32)) -> Result<u32> {
    let (ih, iw) = input_hw;
    let (oh, ow) = output_hw;
    let exact = oh % ih == 0 && ow % iw == 0 && oh / ih == ow / iw;
    let scale = oh / ih;
    if !exact || scale == 0 || scale > MAX_SCALE {
        return Err(not_image_model(
            path,
            format!(
                "input {iw}x{ih} gives output {ow}x{oh}, not a whole upscale factor of 1..={MAX_SCALE}"
            ),
        ));
    }
    Ok(scale)
}

/// Run one small grey frame through a dynamic-shape model and measure the scale.
fn probe_scale(
    session: &mut Session,
    path: &Path,
    input_name: &str,
    input: ImageShape,
) -> Result<u32> {
    let h = input.height.map_or(PROBE_SIDE, |v| v as usize);
    let w = input.width.map_or(PROBE_SIDE, |v| v as usize);
    let data = vec![0.5f32; 3 * h * w];
    let tensor = TensorRef::from_array_view(([1usize, 3, h, w], &data[..]))
        .map_err(|e| EngineError::Inference(e.to_string()))?;
    let outputs = session
        .run(ort::inputs![input_name => tensor])
        .map_err(|e| {
            not_image_model(
                path,
                format!("a {w}x{h} probe run failed: {}", first_line(&e.to_string())),
            )
        })?;
    let (shape, _) = outputs[0]
        .try_extract_tensor::<f32>()
        .map_err(|e| not_image_model(path, format!("the probe output is not fp32: {e}")))?;
    if shape.len() != 4 || shape[0] != 1 || shape[1] != 3 {
        return Err(not_image_model(
            path,
            format!("a {w}x{h} probe gave output shape {:?}", &shape[..]),
        ));
    }
    let out_hw = (
        u32::try_from(shape[2]).unwrap_or(0),
        u32::try_from(shape[3]).unwrap_or(0),
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
    }

    #[test]
    fn missing_model_is_model_not_found() {
        let err = check_model_file(Path::new("/nonexistent/x.onnx")).unwrap_err();
        assert_eq!(err.kind(), "model_not_found");
    }
}
