//! What the GPU's video engines can do: NVDEC decode capabilities per codec and bit depth
//! (asked of the driver's libnvcuvid directly), and whether an NVENC session opens (asked
//! of FFmpeg's nvenc encoders).

use serde::Serialize;

use crate::encoder_choice::SessionAsk;
use crate::nvdec::CudaDevice;

/// One NVDEC capability answer.
#[derive(Debug, Clone, Serialize)]
pub struct NvdecCap {
    /// Codec name.
    pub codec: &'static str,
    /// Bits per sample asked about.
    pub bit_depth: u8,
    /// Whether NVDEC decodes it (4:2:0).
    pub supported: bool,
    /// Largest coded width.
    pub max_width: u32,
    /// Largest coded height.
    pub max_height: u32,
    /// Smallest coded width.
    pub min_width: u32,
    /// Smallest coded height.
    pub min_height: u32,
    /// Most 16x16 macroblocks in a picture (0: no limit given).
    pub max_macroblocks: u32,
}

/// Whether an encoder could open a session, and why not.
#[derive(Debug, Clone, Serialize)]
pub struct NvencStatus {
    /// FFmpeg encoder name.
    pub encoder: &'static str,
    /// Whether a session opened.
    pub available: bool,
    /// The failure, when it did not.
    pub reason: Option<String>,
}

/// CUVIDDECODECAPS from the NVIDIA Video Codec SDK (cuviddec.h).
#[repr(C)]
#[derive(Default)]
struct CuvidDecodeCaps {
    codec_type: i32,
    chroma_format: i32,
    bit_depth_minus8: u32,
    reserved1: [u32; 3],
    is_supported: u8,
    num_nvdecs: u8,
    output_format_mask: u16,
    max_width: u32,
    max_height: u32,
    max_mb_count: u32,
    min_width: u16,
    min_height: u16,
    histogram_supported: u8,
    counter_bit_depth: u8,
    max_histogram_bins: u16,
    reserved3: [u32; 10],
}

/// (name, cudaVideoCodec value, bit depths) asked about: every depth RAVE's GPU path reads
/// (NV12, P010 and P016 surfaces) that the codec has in 4:2:0.
const CODECS: [(&str, i32, &[u8]); 6] = [
    ("mpeg2", 1, &[8]),
    ("h264", 4, &[8, 10]),
    ("hevc", 8, &[8, 10, 12]),
    ("vp9", 10, &[8, 10, 12]),
    ("av1", 11, &[8, 10]),
    ("vp8", 9, &[8]),
];

/// Ask NVDEC what it decodes. The caller must have made a CUDA context current on this
/// thread (e.g. by creating a `GpuContext`).
pub fn nvdec_caps() -> Result<Vec<NvdecCap>, String> {
    // SAFETY: loading the driver's video decode library runs its initialisers only.
    let lib = unsafe { libloading::Library::new("libnvcuvid.so.1") }
        .map_err(|e| format!("libnvcuvid.so.1 (NVDEC) not available: {e}"))?;
    type GetCaps = unsafe extern "C" fn(*mut CuvidDecodeCaps) -> i32;
    // SAFETY: cuvidGetDecoderCaps has this signature in every Video Codec SDK release.
    let get: libloading::Symbol<GetCaps> = unsafe { lib.get(b"cuvidGetDecoderCaps\0") }
        .map_err(|e| format!("cuvidGetDecoderCaps missing: {e}"))?;
    let mut out = Vec::new();
    let mut refused = None;
    for (codec, id, depths) in CODECS {
        for &depth in depths {
            let mut caps = CuvidDecodeCaps {
                codec_type: id,
                chroma_format: 1,
                bit_depth_minus8: u32::from(depth - 8),
                ..Default::default()
            };
            // SAFETY: `caps` is a valid, zero-initialised CUVIDDECODECAPS with its inputs set;
            // the call only writes its output fields.
            let status = unsafe { get(&mut caps) };
            // A driver that does not know a codec refuses the question: that codec is not
            // decoded, the others' answers stand.
            if status != 0 {
                refused.get_or_insert(status);
                caps = CuvidDecodeCaps::default();
            }
            out.push(NvdecCap {
                codec,
                bit_depth: depth,
                supported: caps.is_supported != 0,
                max_width: caps.max_width,
                max_height: caps.max_height,
                min_width: u32::from(caps.min_width),
                min_height: u32::from(caps.min_height),
                max_macroblocks: caps.max_mb_count,
            });
        }
    }
    match refused {
        Some(status) if !out.iter().any(|c| c.supported) => Err(format!(
            "cuvidGetDecoderCaps failed with CUDA error {status} (is a CUDA context current?)"
        )),
        _ => Ok(out),
    }
}

/// Try to open a small session with each NVENC encoder FFmpeg has.
pub fn nvenc_status() -> Vec<NvencStatus> {
    ["h264_nvenc", "hevc_nvenc", "av1_nvenc"]
        .into_iter()
        .map(nvenc_status_of)
        .collect()
}

/// Try to open a small session with the NVENC encoder `encoder` (e.g. "h264_nvenc").
pub fn nvenc_status_of(encoder: &'static str) -> NvencStatus {
    let result = nvenc_session(SessionAsk {
        encoder,
        size: None,
        bits: 8,
    });
    NvencStatus {
        encoder,
        available: result.is_ok(),
        reason: result.err(),
    }
}

/// Try to open an NVENC session for `ask` (encoder, output size or 256x256, 8 or 10 bits); why not, in
/// FFmpeg's own words where it said any (e.g. "No capable devices found").
pub fn nvenc_session(ask: SessionAsk) -> Result<(), String> {
    nvenc_session_on(ask, None)
}

/// [`nvenc_session`] on `device` (RAVE's own CUDA context, on the GPU the run uses), or on a
/// context FFmpeg makes on the first GPU when `None` (0.43 s on the H200, against 0.26 s on
/// RAVE's: NVENC's own answer takes the rest).
pub fn nvenc_session_on(ask: SessionAsk, device: Option<&CudaDevice>) -> Result<(), String> {
    crate::init();
    let (result, said) = crate::capture_errors(|| open_session(ask, device));
    result.map_err(|e| {
        let why = match said.last() {
            Some(line) => format!("{line} ({e})"),
            None => e,
        };
        // The answer of a machine with no NVIDIA driver, or of a GPU that has no NVENC at
        // all (NV_ENC_ERR_NO_ENCODE_DEVICE, or NV_ENC_ERR_UNSUPPORTED_DEVICE on a context of
        // RAVE's), as against one that refuses this size or bit depth.
        if why.contains("libcuda") {
            format!("{why}; this machine has no NVIDIA driver, which NVENC needs")
        } else if says_no_encoder(&why) {
            format!("{why}; GPUs without NVENC (A100, H100, H200) answer this way")
        } else {
            why
        }
    })
}

/// Whether a refused session's reason is NVENC saying the GPU has no encoder at all
/// (NV_ENC_ERR_NO_ENCODE_DEVICE through FFmpeg's context, NV_ENC_ERR_UNSUPPORTED_DEVICE on
/// RAVE's), whatever the size or bit depth asked.
pub fn says_no_encoder(why: &str) -> bool {
    why.contains("No capable devices") || why.contains("unsupported device")
}

fn open_session(ask: SessionAsk, device: Option<&CudaDevice>) -> Result<(), String> {
    let codec = ffmpeg_next::encoder::find_by_name(ask.encoder)
        .ok_or_else(|| "not in this FFmpeg build".to_string())?;
    let mut enc = ffmpeg_next::codec::context::Context::new_with_codec(codec)
        .encoder()
        .video()
        .map_err(|e| e.to_string())?;
    if let Some(device) = device {
        // SAFETY: `enc` owns a fresh codec context; it takes a new reference to the live
        // device (freed with the context), which FFmpeg's nvenc then opens its session on.
        unsafe {
            let reference = ffmpeg_next::ffi::av_buffer_ref(device.raw());
            if reference.is_null() {
                return Err("out of memory referencing the CUDA device".into());
            }
            (*enc.as_mut_ptr()).hw_device_ctx = reference;
        }
    }
    let (w, h) = ask.size.unwrap_or((256, 256));
    enc.set_width(w);
    enc.set_height(h);
    enc.set_format(match ask.bits {
        8 => ffmpeg_next::format::Pixel::NV12,
        _ => ffmpeg_next::format::Pixel::P010LE,
    });
    enc.set_time_base(ffmpeg_next::Rational::new(1, 25));
    enc.open()
        .map(|_| ())
        .map_err(|e| format!("no session for {w}x{h} {}-bit: {e}", ask.bits))
}
