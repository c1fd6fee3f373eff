//! Which GPU execution provider the backend asks ONNX Runtime for: `auto` tries TensorRT and
//! falls back to CUDA (saying why); `tensorrt` and `cuda` force one. Chosen by `--backend` or,
//! when that is absent, by `RAVE_ORT_TENSORRT` (read by the CLI and passed in).

use rave_core::error::{EngineError, Result};

/// The execution-provider policy of the GPU backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EpPolicy {
    /// TensorRT, falling back to CUDA with a logged reason.
    Auto,
    /// TensorRT only; its failure is the error.
    TensorRt,
    /// CUDA only.
    Cuda,
}

impl EpPolicy {
    /// Parse a `--backend` value.
    pub fn from_flag(value: &str) -> Result<Self> {
        match value.to_ascii_lowercase().as_str() {
            "auto" => Ok(EpPolicy::Auto),
            "tensorrt" | "trt" => Ok(EpPolicy::TensorRt),
            "cuda" => Ok(EpPolicy::Cuda),
            other => Err(EngineError::Config(format!(
                "--backend {other}: use auto, tensorrt or cuda"
            ))),
        }
    }

    /// Parse `RAVE_ORT_TENSORRT` with the seed's vocabulary (`0/off/false/cuda/cuda-only`
    /// force CUDA, `1/on/true/trt/trt-only` force TensorRT, `auto` or unset is auto). An
    /// unknown value is an error rather than a silent `auto`.
    pub fn from_env_value(value: Option<&str>) -> Result<Self> {
        let Some(v) = value else {
            return Ok(EpPolicy::Auto);
        };
        match v.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(EpPolicy::Auto),
            "0" | "off" | "false" | "cuda" | "cuda-only" => Ok(EpPolicy::Cuda),
            "1" | "on" | "true" | "trt" | "trt-only" => Ok(EpPolicy::TensorRt),
            other => Err(EngineError::Config(format!(
                "RAVE_ORT_TENSORRT={other}: use auto, cuda (or 0/off/false/cuda-only) or trt (or 1/on/true/trt-only)"
            ))),
        }
    }

    /// The policy in force: the flag when given, else the environment value.
    pub fn resolve(flag: Option<&str>, env_value: Option<&str>) -> Result<Self> {
        match flag {
            Some(f) => Self::from_flag(f),
            None => Self::from_env_value(env_value),
        }
    }

    /// Providers to try, in order.
    pub fn attempts(self) -> &'static [crate::provider_paths::ProviderKind] {
        use crate::provider_paths::ProviderKind::{Cuda, TensorRt};
        match self {
            EpPolicy::Auto => &[TensorRt, Cuda],
            EpPolicy::TensorRt => &[TensorRt],
            EpPolicy::Cuda => &[Cuda],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider_paths::ProviderKind;

    #[test]
    fn env_vocabulary_matches_the_seed_and_rejects_unknown_values() {
        for v in ["0", "off", "FALSE", "cuda", "cuda-only"] {
            assert_eq!(
                EpPolicy::from_env_value(Some(v)).unwrap(),
                EpPolicy::Cuda,
                "{v}"
            );
        }
        for v in ["1", "on", "true", "trt", "TRT-ONLY"] {
            assert_eq!(
                EpPolicy::from_env_value(Some(v)).unwrap(),
                EpPolicy::TensorRt,
                "{v}"
            );
        }
        assert_eq!(EpPolicy::from_env_value(None).unwrap(), EpPolicy::Auto);
        assert_eq!(
            EpPolicy::from_env_value(Some("auto")).unwrap(),
            EpPolicy::Auto
        );
        let err = EpPolicy::from_env_value(Some("maybe")).unwrap_err();
        assert!(err.to_string().contains("RAVE_ORT_TENSORRT=maybe"), "{err}");
        assert_eq!(err.family().exit_code(), 2);
    }

    #[test]
    fn flag_wins_over_environment_and_auto_tries_tensorrt_first() {
        assert_eq!(
            EpPolicy::resolve(Some("cuda"), Some("trt")).unwrap(),
            EpPolicy::Cuda
        );
        assert_eq!(
            EpPolicy::resolve(None, Some("trt")).unwrap(),
            EpPolicy::TensorRt
        );
        assert!(EpPolicy::resolve(Some("vulkan"), None).is_err());
        assert_eq!(
            EpPolicy::Auto.attempts(),
            &[ProviderKind::TensorRt, ProviderKind::Cuda]
        );
        assert_eq!(EpPolicy::Cuda.attempts(), &[ProviderKind::Cuda]);
    }
}
