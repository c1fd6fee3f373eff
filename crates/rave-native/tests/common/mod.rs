//! Shared helpers of the rave-native tests: fixtures, installed models, ONNX Runtime.
#![allow(dead_code)]

use std::path::PathBuf;

use rave_tensorrt::{OrtRuntime, RuntimeCandidate};

/// A file of tests/fixtures: under the working directory's tests/fixtures where that
/// exists (a test binary run from a copy of the repository on the GPU machine), else the
/// source tree's.
pub fn fixture(name: &str) -> PathBuf {
    let local = PathBuf::from("tests/fixtures").join(name);
    if local.exists() {
        return local;
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// PSNR in dB (peak 1) and the largest absolute difference between two equal-length
/// arrays.
pub fn psnr_and_max_abs(got: &[f32], want: &[f32]) -> (f64, f32) {
    assert_eq!(got.len(), want.len());
    let (mut max_abs, mut sq) = (0.0f32, 0.0f64);
    for (g, w) in got.iter().zip(want) {
        let d = if g.is_nan() {
            f32::INFINITY
        } else {
            (g - w).abs()
        };
        max_abs = max_abs.max(d);
        sq += f64::from(d) * f64::from(d);
    }
    let mse = sq / got.len().max(1) as f64;
    let psnr = if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (1.0 / mse).log10()
    };
    (psnr, max_abs)
}

fn rave_home() -> PathBuf {
    std::env::var_os("RAVE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".local/share/rave")
        })
}

/// The installed model `name` (scripts/setup.sh), or None with a message saying the test
/// that asked is skipped.
pub fn installed_model(name: &str) -> Option<PathBuf> {
    let p = rave_home().join("models").join(format!("{name}.onnx"));
    if p.is_file() {
        Some(p)
    } else {
        eprintln!(
            "skipped: {} missing (run scripts/setup.sh to install the models)",
            p.display()
        );
        None
    }
}

/// The ONNX Runtime library set up by scripts/setup.sh (or ORT_DYLIB_PATH).
pub fn runtime() -> &'static OrtRuntime {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH") {
        candidates.push(RuntimeCandidate::new(p, "ORT_DYLIB_PATH"));
    }
    candidates.push(RuntimeCandidate::new(
        rave_home().join("lib/libonnxruntime.so"),
        "RAVE_HOME",
    ));
    OrtRuntime::load(&candidates).expect("ONNX Runtime (run scripts/setup.sh)")
}

/// A fixed-seed xorshift generator for test data.
pub struct Rng(pub u64);
impl Rng {
    /// Uniform in [-1, 1).
    pub fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// `v` rounded through half precision, as the GPU stores it.
pub fn h(v: f32) -> f32 {
    half::f16::from_f32(v).to_f32()
}

/// A random 3x3 layer of `cin -> cout` channels, weights already half-exact.
pub fn layer(cin: usize, cout: usize, rng: &mut Rng) -> rave_native::network::Conv3x3 {
    let scale = 1.0 / (9.0 * cin as f32).sqrt();
    rave_native::network::Conv3x3 {
        out_channels: cout,
        in_channels: cin,
        weight: (0..cout * cin * 9).map(|_| h(rng.next() * scale)).collect(),
        bias: (0..cout).map(|_| rng.next() * 0.1).collect(),
        pad: 1,
        node: format!("test_{cin}_{cout}"),
    }
}

/// An RGB frame of uniform values in [0, 1) from a fixed-seed xorshift.
pub fn frame(width: usize, height: usize, seed: u64) -> rave_native::reference::FeatureMap {
    let mut s = seed | 1;
    let mut x = rave_native::reference::FeatureMap::zeros(3, height, width);
    for v in &mut x.data {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        *v = (s >> 40) as f32 / (1u64 << 24) as f32;
    }
    x
}

/// Run `engine` once on the RGB frame `x` (its output NaN-poisoned first) and return the
/// output, planar f32.
pub fn run_engine(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    engine: &mut rave_native::gpu::NativeEngine,
    x: &rave_native::reference::FeatureMap,
) -> Vec<f32> {
    let s = engine.scale();
    let input = stream.clone_htod(&x.data).unwrap();
    let mut output = stream
        .clone_htod(&vec![f32::NAN; x.data.len() * s * s])
        .unwrap();
    engine
        .run(&input.as_view(), &mut output.as_view_mut())
        .unwrap();
    stream.clone_dtoh(&output).unwrap()
}

/// PSNR results against the reference: the worst seen and the cases below 45 dB.
pub struct Tally {
    /// The lowest PSNR so far.
    pub worst: f64,
    /// The cases below 45 dB (or NaN).
    pub failures: Vec<String>,
}

impl Tally {
    /// Nothing yet.
    pub fn new() -> Self {
        Self {
            worst: f64::INFINITY,
            failures: Vec::new(),
        }
    }

    /// Print and record `got` against `want` for `case`; `extra` is appended to the line.
    pub fn record(&mut self, case: &str, got: &[f32], want: &[f32], extra: &str) {
        let (psnr, max_abs) = psnr_and_max_abs(got, want);
        println!("{case}: PSNR {psnr:.1} dB, max abs error {max_abs:.3e}{extra}");
        self.worst = self.worst.min(psnr);
        if psnr < 45.0 || psnr.is_nan() {
            self.failures.push(format!("{case}: {psnr:.1} dB"));
        }
    }

    /// Print the worst and fail with the cases below 45 dB.
    pub fn finish(self, what: &str) {
        println!(
            "worst PSNR over all {what}: {:.1} dB (limit 45)",
            self.worst
        );
        assert!(self.failures.is_empty(), "below 45 dB: {:?}", self.failures);
    }
}
