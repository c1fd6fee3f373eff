//! ONNX Runtime, the library the CPU path and the CUDA provider run on: a missing one is
//! exit 6 with the places looked at, the GPU path does not look for it before the GPU, a
//! library named by the user must load, and its log lines stay out of RAVE's errors.

mod common;

use std::path::Path;

use common::*;

/// `rave upscale ARGS` of a 2-frame clip with an install folder (`RAVE_HOME`) that has no
/// ONNX Runtime and no `ORT_DYLIB_PATH`; the folder is kept while the result is read.
fn upscale_without_ort(args: &[&str]) -> (tempfile::TempDir, std::process::Output) {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 2);
    let o = rave()
        .args(upscale_args(
            &clip,
            &dir.path().join("o.mp4"),
            &fixture("nearest_x2.onnx"),
            args,
        ))
        .env("RAVE_HOME", dir.path())
        .env_remove("ORT_DYLIB_PATH")
        .output()
        .unwrap();
    (dir, o)
}

#[test]
fn missing_runtime_library_exits_6_and_lists_candidates() {
    let (dir, o) = upscale_without_ort(&[]);
    assert_exit(&o, 6);
    let err = stderr(&o);
    assert!(err.contains("Checked, in order:"), "{err}");
    assert!(
        err.contains(&format!(
            "{}/lib/libonnxruntime.so (RAVE install folder): not found",
            dir.path().display()
        )),
        "{err}"
    );
}

#[test]
fn the_gpu_path_does_not_look_for_onnx_runtime_before_the_gpu() {
    if Path::new("/dev/nvidiactl").exists() {
        eprintln!("skipped: this machine has an NVIDIA GPU");
        return;
    }
    let (_dir, o) = upscale_without_ort(&["--device", "gpu"]);
    assert_exit(&o, 6);
    let err = stderr(&o);
    assert!(err.contains("--device cpu runs on the CPU"), "{err}");
    assert!(!err.contains("ONNX Runtime library"), "{err}");
}

#[test]
fn an_ort_library_named_by_the_user_must_load() {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 2);
    let out = dir.path().join("o.mp4");
    let upscale_with = |flag: Option<&str>, env: Option<&str>| {
        let mut c = rave();
        c.args(["upscale", "-i", clip.to_str().unwrap(), "-o"])
            .arg(&out)
            .args(["-m", fixture("nearest_x2.onnx").to_str().unwrap()])
            .env_remove("ORT_DYLIB_PATH");
        if let Some(f) = flag {
            c.args(["--ort-lib", f]);
        }
        if let Some(e) = env {
            c.env("ORT_DYLIB_PATH", e);
        }
        c.output().unwrap()
    };
    for (flag, env, needle) in [
        (Some("/nope.so"), None, "/nope.so (from --ort-lib)"),
        (Some("/etc/passwd"), None, "/etc/passwd (from --ort-lib)"),
        (None, Some("/nope.so"), "/nope.so (from ORT_DYLIB_PATH)"),
        (
            Some("/nope.so"),
            Some("/also-nope.so"),
            "/nope.so (from --ort-lib)",
        ),
    ] {
        let o = upscale_with(flag, env);
        assert_exit(&o, 6);
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{flag:?} {env:?}: {err}");
        assert!(!err.contains("RAVE install folder"), "no fallback: {err}");
        assert!(!out.exists());
    }
    let err = stderr(&upscale_with(Some("/nope.so"), None));
    assert!(err.contains("no such file"), "{err}");
    let err = stderr(&upscale_with(Some("/etc/passwd"), None));
    assert!(err.contains("invalid ELF header"), "{err}");
}

#[test]
fn onnx_runtime_log_lines_stay_out_of_the_error() {
    // A model that parses but fails while ONNX Runtime initializes it (an unknown Resize
    // mode): the runtime logs an error of its own, which must not reach the user.
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 2);
    let mut bytes = std::fs::read(fixture("nearest_x2.onnx")).unwrap();
    let at = bytes
        .windows(5)
        .position(|w| w == b"floor")
        .expect("nearest_mode attribute");
    bytes[at..at + 5].copy_from_slice(b"flxor");
    let bad = dir.path().join("bad_mode.onnx");
    std::fs::write(&bad, bytes).unwrap();
    let o = upscale(&clip, &dir.path().join("o.mp4"), &bad, &[]);
    assert_exit(&o, 5);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "only RAVE's line: {err}");
    assert!(
        err.starts_with("rave: error: ") && err.contains("flxor"),
        "{err}"
    );
    assert!(!err.contains('\u{1b}'), "no colour codes: {err:?}");
}

#[test]
fn an_unset_home_never_makes_the_working_directory_the_install_folder() {
    // A service's bare environment (no HOME, RAVE_HOME or XDG_DATA_HOME) run in a folder
    // that holds `.local/share/rave`: its library and models are not RAVE's install.
    let dir = scratch();
    let planted = dir.path().join(".local/share/rave");
    std::fs::create_dir_all(planted.join("lib")).unwrap();
    std::fs::create_dir_all(planted.join("models")).unwrap();
    std::fs::write(planted.join("lib/libonnxruntime.so"), b"not a library").unwrap();
    std::fs::copy(
        fixture("nearest_x2.onnx"),
        planted.join("models/planted.onnx"),
    )
    .unwrap();
    make_clip(dir.path(), "in.mp4", "32x32", 2);
    let bare = |args: &[&str]| {
        rave()
            .args(args)
            .current_dir(dir.path())
            .env_remove("HOME")
            .env_remove("RAVE_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("RAVE_MODELS_DIR")
            .env_remove("ORT_DYLIB_PATH")
            .output()
            .unwrap()
    };
    let o = bare(&["models", "--json"]);
    assert!(!stdout(&o).contains("planted"), "{}", stdout(&o));
    // A relative XDG_DATA_HOME is the working directory too: ignored.
    let o = rave()
        .args(["models", "--json"])
        .current_dir(dir.path())
        .env_remove("RAVE_HOME")
        .env("XDG_DATA_HOME", ".local/share")
        .output()
        .unwrap();
    assert!(!stdout(&o).contains("planted"), "{}", stdout(&o));
    let o = bare(&["upscale", "-i", "in.mp4", "-o", "o.mp4", "-m", "planted"]);
    assert_exit(&o, 5);
    assert!(
        stderr(&o).contains("model not found: planted"),
        "{}",
        stderr(&o)
    );
    let o = bare(&[
        "upscale",
        "-i",
        "in.mp4",
        "-o",
        "o.mp4",
        "-m",
        fixture("nearest_x2.onnx").to_str().unwrap(),
    ]);
    let err = stderr(&o);
    let lib = planted.join("lib");
    assert!(!err.contains(lib.to_str().unwrap()), "{err}");
}

/// `rave segment` on a cluster node takes that node's own `--ort-lib` (relative to where it
/// was started) in place of the planning machine's, and it must load there too; `rave
/// models` likewise refuses a named library that does not load instead of listing every
/// model as "ONNX Runtime not found". Before: both ignored the option and exited 0.
#[test]
fn segment_and_models_take_their_own_ort_library_and_it_must_load() {
    let dir = scratch();
    let clip = make_clip(dir.path(), "in.mp4", "32x32", 2);
    let work = dir.path().join("job");
    let o = run(&[
        "plan",
        "-i",
        clip.to_str().unwrap(),
        "-o",
        dir.path().join("o.mp4").to_str().unwrap(),
        "-m",
        fixture("nearest_x2.onnx").to_str().unwrap(),
        "--work",
        work.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let segment = |ort: &str| {
        rave()
            .current_dir(dir.path())
            .args(["segment", "--work", "job", "--index", "0", "--ort-lib", ort])
            .env_remove("ORT_DYLIB_PATH")
            .output()
            .unwrap()
    };
    let o = segment("nope.so");
    assert_exit(&o, 6);
    let named = format!("{} (from --ort-lib)", dir.path().join("nope.so").display());
    assert!(stderr(&o).contains(&named), "{}", stderr(&o));
    let installed = rave_home().join("lib/libonnxruntime.so");
    assert_exit(&segment(installed.to_str().unwrap()), 0);
    // Planned with a library this node does not have, run without --ort-lib: it says the
    // path came from the plan and which option gives this node's.
    let copy = dir.path().join("planned.so");
    std::fs::copy(&installed, &copy).unwrap();
    let work2 = dir.path().join("job2");
    let o = run(&[
        "plan",
        "-i",
        clip.to_str().unwrap(),
        "-o",
        dir.path().join("o2.mp4").to_str().unwrap(),
        "-m",
        fixture("nearest_x2.onnx").to_str().unwrap(),
        "--ort-lib",
        copy.to_str().unwrap(),
        "--work",
        work2.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    std::fs::remove_file(&copy).unwrap();
    let o = run(&["segment", "--work", work2.to_str().unwrap(), "--index", "0"]);
    assert_exit(&o, 2);
    let said = format!(
        "the job was planned with --ort-lib {}, which this machine does not have: give this machine's with `rave segment ... --ort-lib PATH`",
        copy.display()
    );
    assert!(stderr(&o).contains(&said), "{}", stderr(&o));
    let o = rave()
        .args(["models", "--ort-lib", "/nope.so"])
        .output()
        .unwrap();
    assert_exit(&o, 6);
    assert!(
        stderr(&o).contains("/nope.so (from --ort-lib)"),
        "{}",
        stderr(&o)
    );
}
