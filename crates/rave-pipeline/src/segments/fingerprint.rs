//! What identifies a job's input and the settings that shape its output, so a resumed job
//! is the same job: the input's size, modification time and a hash of its first and last
//! mebibyte, and every output-affecting setting including the model file's hash.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use rave_core::error::{EngineError, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Bytes hashed at each end of the input.
const ENDS: u64 = 1 << 20;

/// The identity of an input file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFingerprint {
    /// Size in bytes.
    pub bytes: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub modified_ns: u128,
    /// SHA-256 of its first and last mebibyte.
    pub ends_sha256: String,
}

impl InputFingerprint {
    /// Fingerprint the file at `path`.
    pub fn of(path: &Path) -> Result<Self> {
        let io = |e: std::io::Error| EngineError::InputUnreadable {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let mut file = File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        let modified_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let bytes = meta.len();
        let mut hash = Sha256::new();
        let mut buf = vec![0u8; ENDS.min(bytes) as usize];
        file.read_exact(&mut buf).map_err(io)?;
        hash.update(&buf);
        if bytes > ENDS {
            let tail = ENDS.min(bytes - ENDS);
            file.seek(SeekFrom::End(-(tail as i64))).map_err(io)?;
            buf.resize(tail as usize, 0);
            file.read_exact(&mut buf).map_err(io)?;
            hash.update(&buf);
        }
        Ok(Self {
            bytes,
            modified_ns,
            ends_sha256: hex(&hash.finalize()),
        })
    }
}

/// SHA-256 of a whole file, in hex.
pub fn file_sha256(path: &Path) -> std::io::Result<String> {
    let mut file = File::open(path)?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
    }
    Ok(hex(&hash.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every setting that changes the output's video, as recorded in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputSettings {
    /// SHA-256 of the model file.
    pub model_sha256: String,
    /// Where inference runs as asked (auto, cpu, gpu).
    pub device: String,
    /// The precision asked for.
    pub precision: String,
    /// Video codec.
    pub codec: String,
    /// Constant rate factor.
    pub crf: u32,
    /// Encoder preset.
    pub preset: String,
    /// Output bits per sample.
    pub bit_depth: u8,
    /// Output container.
    pub container: String,
    /// Frames upscaled (`--max-frames`), when limited.
    pub max_frames: Option<u64>,
    /// Target segment length in frames.
    pub segment_frames: u64,
    /// `--tile` and `--tile-overlap` as asked ("auto, overlap 16" in manifests written
    /// before tiling existed, which ran no other way).
    #[serde(default = "tiling_before_it_was_recorded")]
    pub tiling: String,
}

/// The tiling of a job planned before the manifest recorded it: what `--tile auto` does,
/// as the only way such a job ran (fixed-size models were refused then).
fn tiling_before_it_was_recorded() -> String {
    crate::tiling_choice::TileRequest::default().describe()
}

/// `--max-frames` as a user wrote it ("not given" when absent).
fn frames_limit(limit: Option<u64>) -> String {
    limit.map_or_else(|| "not given".into(), |n| n.to_string())
}

impl OutputSettings {
    /// What differs between the settings a job was planned with (`self`) and `now`, one
    /// clause per setting ("crf was 18, now 20").
    pub fn differences(&self, now: &OutputSettings) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |name: &str, was: String, is: String| {
            if was != is {
                out.push(format!("{name} was {was}, now {is}"));
            }
        };
        cmp(
            "the model",
            short(&self.model_sha256),
            short(&now.model_sha256),
        );
        cmp("--device", self.device.clone(), now.device.clone());
        cmp("--precision", self.precision.clone(), now.precision.clone());
        cmp("--codec", self.codec.clone(), now.codec.clone());
        cmp("--crf", self.crf.to_string(), now.crf.to_string());
        cmp("--preset", self.preset.clone(), now.preset.clone());
        cmp(
            "the bit depth",
            self.bit_depth.to_string(),
            now.bit_depth.to_string(),
        );
        cmp(
            "the container",
            self.container.clone(),
            now.container.clone(),
        );
        cmp(
            "--max-frames",
            frames_limit(self.max_frames),
            frames_limit(now.max_frames),
        );
        // The first run may not have named it: its default depends on the workers.
        cmp(
            "the segment length (--segment-frames, or its default for the first run's workers)",
            self.segment_frames.to_string(),
            now.segment_frames.to_string(),
        );
        cmp("--tile", self.tiling.clone(), now.tiling.clone());
        out
    }
}

fn short(hash: &str) -> String {
    format!("sha256 {}", &hash[..hash.len().min(12)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_byte_at_either_end_changes_the_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.bin");
        let mut data = vec![7u8; 3 << 20];
        std::fs::write(&path, &data).unwrap();
        let a = InputFingerprint::of(&path).unwrap();
        let last = data.len() - 1;
        data[last] = 8;
        std::fs::write(&path, &data).unwrap();
        let b = InputFingerprint::of(&path).unwrap();
        assert_ne!(a.ends_sha256, b.ends_sha256);
        assert_eq!(a.bytes, b.bytes);
        std::fs::write(&path, b"tiny").unwrap();
        assert_eq!(InputFingerprint::of(&path).unwrap().bytes, 4);
    }

    #[test]
    fn differences_name_each_changed_setting() {
        let a = OutputSettings {
            model_sha256: "ab".repeat(32),
            device: "cpu".into(),
            precision: "auto".into(),
            codec: "h264".into(),
            crf: 18,
            preset: "medium".into(),
            bit_depth: 8,
            container: "matroska".into(),
            max_frames: None,
            segment_frames: 1500,
            tiling: "auto, overlap 16".into(),
        };
        let mut b = a.clone();
        assert!(a.differences(&b).is_empty());
        b.crf = 20;
        b.preset = "fast".into();
        b.tiling = "64x64, overlap 16".into();
        assert_eq!(
            a.differences(&b),
            [
                "--crf was 18, now 20",
                "--preset was medium, now fast",
                "--tile was auto, overlap 16, now 64x64, overlap 16"
            ]
        );
    }

    #[test]
    fn a_manifest_from_before_tiling_reads_as_the_tiling_it_ran_with() {
        let old = r#"{"model_sha256": "ab", "device": "cpu", "precision": "auto", "codec": "h264",
            "crf": 18, "preset": "medium", "bit_depth": 8, "container": "mp4",
            "max_frames": null, "segment_frames": 1500}"#;
        let settings: OutputSettings = serde_json::from_str(old).unwrap();
        assert_eq!(settings.tiling, "auto, overlap 16");
    }
}
