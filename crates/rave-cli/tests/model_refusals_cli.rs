//! A model RAVE cannot use is refused with exit 5 in one line that names it and says why
//! (not ONNX, wrong rank or channels, output size, fixed batch, tiles too small for it), and
//! a model path that is a pipe, device or folder is refused at once.

mod common;

use std::path::Path;

use common::*;

#[test]
fn model_problems_exit_5() {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 2);
    let out = dir.path().join("o.mp4");
    let cases = [
        ("/nonexistent/model.onnx", "no such file"),
        ("no-such-model-name", "not installed"),
        (
            fixture("not_onnx.onnx").to_str().unwrap(),
            "not a loadable ONNX model",
        ),
        (fixture("rank3.onnx").to_str().unwrap(), "rank 3"),
        (fixture("gray.onnx").to_str().unwrap(), "1 channels, not 3"),
        (
            fixture("half_scale.onnx").to_str().unwrap(),
            "not a whole upscale factor",
        ),
        (
            fixture("two_outputs.onnx").to_str().unwrap(),
            "it has 1 inputs and 2 outputs",
        ),
        (
            fixture("padded_x2.onnx").to_str().unwrap(),
            "padded_x2.onnx: its output is [1, 3, 50, 50] for an input of [1, 3, 17, 17], not [1, 3, 51, 51] (x3, as measured on a 16x16 probe frame)",
        ),
        (
            fixture("batch2_x2.onnx").to_str().unwrap(),
            "batch2_x2.onnx: the model's batch size is fixed at 2; the CPU backend runs one frame at a time",
        ),
    ]
    .map(|(m, why)| (m.to_string(), why));
    for (model, why) in cases {
        let o = upscale(&clip, &out, Path::new(&model), &[]);
        assert_exit(&o, 5);
        let err = stderr(&o);
        assert!(err.contains(why), "model {model}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!out.exists(), "no output for a failed run");
    }
    // A model that needs sides of 20 px, on 16x16 frames: the error names the model and
    // the frame size, not only ONNX Runtime's words.
    let tiny = make_clip(dir.path(), "tiny.mp4", "16x16", 2);
    let o = upscale(&tiny, &out, &fixture("min20_x2.onnx"), &[]);
    assert_exit(&o, 5);
    let err = stderr(&o);
    assert!(
        err.contains("frame 0: model min20_x2 on one 16x16 input: "),
        "{err}"
    );
    // ONNX Runtime's words without its C++ source location and signature.
    assert!(
        !err.contains("onnxruntime_src") && !err.contains("::"),
        "{err}"
    );
    // Tiles too small for it (--tile 10x10 on 32x32 frames): it says to give larger tiles.
    let o = upscale(&clip, &out, &fixture("min20_x2.onnx"), &["--tile", "10x10"]);
    assert_exit(&o, 5);
    let err = stderr(&o);
    assert!(
        err.contains("a batch of 4 10x10 inputs") || err.contains("one 10x10 input"),
        "{err}"
    );
    assert!(
        err.contains("(on tiles of 10x10: a model that downsamples inside needs larger tiles; give a larger --tile, or --tile auto)"),
        "{err}"
    );
}

/// A model path that is a pipe or a device was hashed before it was checked: the run waited
/// on the pipe for a writer, or read the device on, and Ctrl+C did not stop it.
#[test]
fn a_model_that_is_a_pipe_a_device_or_a_folder_is_refused_at_once() {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 2);
    let out = dir.path().join("o.mp4");
    let fifo = dir.path().join("model.onnx");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let folder = dir.path().join("folder.onnx");
    std::fs::create_dir(&folder).unwrap();
    let cases = [
        (fifo.as_path(), "is a pipe (FIFO), not an .onnx file"),
        (Path::new("/dev/zero"), "is a device, not an .onnx file"),
        (folder.as_path(), "is a folder, not an .onnx file"),
    ];
    for (model, why) in cases {
        for command in ["upscale", "plan"] {
            let mut child = rave()
                .args([command, "-i", clip.to_str().unwrap(), "-o"])
                .arg(&out)
                .arg("-m")
                .arg(model)
                .stderr(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while child.try_wait().unwrap().is_none() {
                if std::time::Instant::now() > deadline {
                    child.kill().unwrap();
                    panic!("{command} -m {model:?} still runs after 60 s");
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            let o = child.wait_with_output().unwrap();
            assert_exit(&o, 5);
            let err = stderr(&o);
            assert!(err.contains(why), "{command} -m {model:?}: {err}");
        }
    }
    assert_eq!(temp_files_left(dir.path()), Vec::<String>::new());
}
