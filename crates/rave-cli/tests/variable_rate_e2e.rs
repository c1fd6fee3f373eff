//! Matroska claims a constant frame rate for any video (FFmpeg reads its default duration
//! as the rate): a variable-rate recording is told apart by spacings off the frame grid,
//! and its long spacings are not said to be missing frames. Its frames keep their times.

mod common;

use common::*;

/// A 30 fps Matroska clip, timestamps in milliseconds, whose frames are placed by the
/// setpts expression `times` (in seconds, of the frame number N).
fn timed_mkv(path: &std::path::Path, times: &str) {
    lavfi_clip(
        path,
        &[
            "testsrc2=size=96x64:rate=30:duration=3",
            "sine=sample_rate=48000:duration=3",
        ],
        &[
            "-vf",
            &format!("settb=1/1000,setpts='({times})/TB'"),
            "-fps_mode",
            "passthrough",
            "-enc_time_base",
            "1:1000",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-shortest",
        ],
    );
}

#[test]
fn a_variable_rate_matroska_is_not_said_to_miss_frames() {
    let dir = scratch();
    let d = dir.path();
    let m = fixture("nearest_x2.onnx");
    // A second at 24 fps, then 30 fps with a 0.4 s pause: the container says 30 fps.
    let vfr = d.join("vfr.mkv");
    timed_mkv(&vfr, "if(lt(N,24),N/24,1+(N-24)/30+0.4*gte(N,50))");
    assert_eq!(video_field(&vfr, "r_frame_rate"), "30/1");
    let out = d.join("vfr_out.mkv");
    let o = upscale(&vfr, &out, &m, &["--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_damage"]["timeline_gaps"], 0, "{v}");
    assert!(!stderr(&o).contains("frame slot"), "{}", stderr(&o));
    assert_eq!(frame_times(&out), frame_times(&vfr));

    // The same pause in a clip that is 30 fps throughout is twelve frames the recorder
    // dropped (or lost): said, as before.
    let paused = d.join("paused.mkv");
    timed_mkv(&paused, "N/30+0.4*gte(N,50)");
    let o = upscale(&paused, &d.join("paused_out.mkv"), &m, &["--json"]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["input_damage"]["timeline_gaps"], 12, "{v}");
    assert!(
        stderr(&o).contains("12 missing frame slots"),
        "{}",
        stderr(&o)
    );
}
