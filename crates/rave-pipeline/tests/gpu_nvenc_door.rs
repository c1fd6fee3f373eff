//! NVENC up to the encoder's door (issue 12), on a GPU: the CUDA surfaces are made on RAVE's
//! own context, come from their pool, and hold exactly what the software path downloads once
//! the postprocess kernel has written them; the NVENC configuration is built and the encoder
//! opened, which on a GPU without NVENC (H200) must fail with NVENC's answer that the device
//! has no encoder and nothing else. Ignored without a GPU; run by scripts/gpu_tests.sh.

use std::ffi::c_void;
use std::sync::Arc;

use ffmpeg_next::Rational;
use rave_core::color::{ColorInfo, ColorMatrix, ColorRange};
use rave_core::frame::{FrameMeta, HostYuvFrame, YuvFrame};
use rave_core::gpu::GpuContext;
use rave_core::types::PixelFormat;
use rave_ffmpeg::RawColor;
use rave_ffmpeg::VideoCodec;
use rave_ffmpeg::cuda_surfaces::CudaSurfacePool;
use rave_ffmpeg::encoder::EncoderGeometry;
use rave_ffmpeg::encoder_choice::SessionAsk;
use rave_ffmpeg::hw_caps::{nvenc_session, nvenc_session_on, says_no_encoder};
use rave_ffmpeg::nvenc_encoder::NvencEncoder;
use rave_ffmpeg::nvenc_settings::NvencConfig;
use rave_pipeline::gpu_convert::{GpuConverter, GpuFrame, HostCopies};
use rave_pipeline::gpu_stages::{nvdec_device, nvenc_device};

/// A frame with gradients, edges and noise over the whole code range of `bits`.
fn pattern(w: u32, h: u32, bits: u8) -> YuvFrame {
    let mut f = YuvFrame::zeroed(w, h, bits);
    let max = (1u32 << bits) - 1;
    let mut seed = 0x9e37_79b9u32 ^ (w * 31 + h);
    let mut noise = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed % 37
    };
    let (cw, _) = f.chroma_size();
    for (i, v) in f.y.iter_mut().enumerate() {
        let (x, y) = (i as u32 % w, i as u32 / w);
        let edge = if (x / 16 + y / 16) % 2 == 0 {
            max / 5
        } else {
            0
        };
        *v = (x * max / w.max(1) + edge + noise()).min(max) as u16;
    }
    for (i, (u, v)) in f.u.iter_mut().zip(f.v.iter_mut()).enumerate() {
        let x = i % cw;
        *u = ((x as u32 * max / cw.max(1) as u32 + noise()).min(max)) as u16;
        *v = ((max - x as u32 * max / cw.max(1) as u32 + noise()).min(max)) as u16;
    }
    f
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn nvenc_surfaces_on_raves_context_hold_what_the_software_path_downloads() {
    let ctx = GpuContext::new(0).expect("a CUDA device");
    // Surfaces of FFmpeg's device on the decode stream (NVDEC's) and on the encode stream
    // (the one the pipeline gives NVENC): the kernel's writes must be seen either way.
    let devices = [
        (
            "decode stream",
            nvdec_device(&ctx).expect("FFmpeg's CUDA device on RAVE's context"),
        ),
        (
            "encode stream",
            nvenc_device(&ctx).expect("FFmpeg's CUDA device on RAVE's context"),
        ),
    ];
    let mut failures = Vec::new();
    for (stream, device) in &devices {
        let cases = [
            (VideoCodec::H264, 8u8),
            (VideoCodec::Hevc, 8),
            (VideoCodec::Hevc, 10),
            (VideoCodec::H264, 10),
        ];
        for (codec, input_bits) in cases {
            for (w, h) in [(1920u32, 1080u32), (330, 186)] {
                let config =
                    NvencConfig::new(codec, Some(20), Some("slow"), input_bits, 48).unwrap();
                let bits = config.output_bits;
                let case = format!(
                    "{} {w}x{h} {input_bits}-bit in, {:?}, device on the {stream}",
                    config.encoder, config.surface
                );
                let pool = CudaSurfacePool::new(device, config.surface, (w, h), 2).unwrap();
                let on_raves = pool.cuda_context() == ctx.cuda().cu_ctx() as *mut c_void;
                let color = ColorInfo {
                    matrix: ColorMatrix::Bt709,
                    range: ColorRange::Limited,
                    bit_depth: bits,
                };
                let converter = GpuConverter::new(
                    ctx.clone(),
                    color,
                    PixelFormat::RgbPlanarF32,
                    Arc::new(HostCopies::default()),
                )
                .unwrap();
                let meta = FrameMeta {
                    index: 0,
                    pts: 0,
                    keyframe: true,
                };
                let rgb = converter
                    .upload(HostYuvFrame {
                        meta,
                        image: pattern(w, h, bits),
                    })
                    .unwrap();
                // The software path: postprocess into RAVE's buffer, one download.
                let copy = GpuFrame {
                    meta,
                    texture: rgb.texture.clone(),
                };
                let (soft, _) = converter.download(copy, bits).unwrap();
                // The NVENC path: postprocess into a surface of the pool, FFmpeg's own transfer.
                let mut surface = pool.take().unwrap();
                let from_pool = surface.is_from(&pool);
                converter.to_surface(&rgb, &mut surface).unwrap();
                let hard = surface.download().unwrap();
                let same = hard == soft.image;
                let differing = hard
                    .y
                    .iter()
                    .chain(&hard.u)
                    .chain(&hard.v)
                    .zip(
                        soft.image
                            .y
                            .iter()
                            .chain(&soft.image.u)
                            .chain(&soft.image.v),
                    )
                    .filter(|(a, b)| a != b)
                    .count();
                let geometry = EncoderGeometry {
                    width: w,
                    height: h,
                    bit_depth: bits,
                    time_base: Rational::new(1, 24),
                    frame_rate: Rational::new(24, 1),
                    sample_aspect: Rational::new(1, 1),
                };
                let door =
                    match NvencEncoder::open(&config, geometry, &RawColor::bt709(), &pool, false) {
                        Ok(_) => "opened (this GPU has NVENC)".to_string(),
                        Err(e) => e.to_string(),
                    };
                // NVENC's answers of a GPU without it: NV_ENC_ERR_NO_ENCODE_DEVICE ("No capable
                // devices found", FFmpeg's own session) and NV_ENC_ERR_UNSUPPORTED_DEVICE (a
                // session on RAVE's context, as measured on the H200).
                let no_nvenc = door.contains("No capable devices")
                    || door.contains("unsupported device")
                    || door.starts_with("opened");
                println!(
                    "{case}: surfaces on RAVE's context {on_raves}, from the pool {from_pool}, surface == software download {same} ({differing} samples differ), options {:?}; open: {door}",
                    config.options
                );
                if !(on_raves && from_pool && same && no_nvenc) {
                    failures.push(case);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The answer NVENC gives on a GPU without it (or the session it opens where there is one).
fn says_no_nvenc(answer: &Result<(), String>) -> bool {
    answer.as_ref().err().is_none_or(|why| says_no_encoder(why))
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn the_session_probe_on_raves_device_answers_like_ffmpegs_own_and_costs_no_context() {
    let ctx = GpuContext::new(0).expect("a CUDA device");
    let device = nvenc_device(&ctx).expect("FFmpeg's CUDA device on RAVE's context");
    let mut failures = Vec::new();
    for (encoder, size, bits) in [
        ("h264_nvenc", (3840, 2160), 8),
        ("hevc_nvenc", (3840, 2160), 10),
        ("hevc_nvenc", (1920, 1080), 8),
    ] {
        let ask = SessionAsk {
            encoder,
            size: Some(size),
            bits,
        };
        let t = std::time::Instant::now();
        let on_raves = nvenc_session_on(ask, Some(&device));
        let raves_s = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let own = nvenc_session(ask);
        let own_s = t.elapsed().as_secs_f64();
        println!(
            "{encoder} {}x{} {bits}-bit: on RAVE's context {raves_s:.3} s {on_raves:?}; FFmpeg's own context {own_s:.3} s {own:?}",
            size.0, size.1
        );
        if !(says_no_nvenc(&on_raves) && says_no_nvenc(&own) && on_raves.is_ok() == own.is_ok()) {
            failures.push(encoder);
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}
