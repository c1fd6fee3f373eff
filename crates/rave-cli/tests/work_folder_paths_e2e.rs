//! End-to-end tests of a kept job resumed under other paths: the same files spelled
//! otherwise (`..`, a link), a project folder moved; someone else's folder with a
//! manifest.json is left alone.

mod common;

use common::*;

#[test]
fn a_kept_job_is_the_same_job_under_another_spelling_and_foreign_folders_are_left_alone() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 40);
    let model = fixture("nearest_x2.onnx");
    let output = d.join("out.mp4");
    let work = d.join(".out.mp4.rave-work");
    let opts = ["--segment-frames", "10", "--keep-work"];
    let v = upscale_ok(&input, &output, &model, &opts);
    assert_eq!(segment_counts(&v), (4, 4, 0, 1));
    assert!(work.join("manifest.json").is_file());

    // The same input through `..` and a symbolic link: the same job, every segment reused.
    std::fs::create_dir(d.join("sub")).unwrap();
    std::os::unix::fs::symlink(&input, d.join("link.mp4")).unwrap();
    for spelled in [
        d.join("sub/../").join(input.file_name().unwrap()),
        d.join("link.mp4"),
    ] {
        let again = [&opts[..], &["--overwrite"]].concat();
        let v = upscale_ok(&spelled, &output, &model, &again);
        assert_eq!(segment_counts(&v), (4, 0, 4, 1), "{}", spelled.display());
    }

    // A folder made by `rave upscale` is finished by `rave upscale`, and `assemble` says so.
    let o = rave()
        .args(["assemble", "--work", work.to_str().unwrap()])
        .output()
        .unwrap();
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("started by `rave upscale`"),
        "{}",
        stderr(&o)
    );

    // Someone else's folder with a manifest.json: refused, --restart too, and untouched.
    let foreign = d.join("webapp");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("manifest.json"), br#"{"name": "webapp"}"#).unwrap();
    for extra in [&[][..], &["--restart"][..]] {
        let args = [
            &["--work", foreign.to_str().unwrap(), "--overwrite"][..],
            extra,
        ]
        .concat();
        let o = upscale(&input, &output, &model, &[CPU, &args].concat());
        assert_exit(&o, 2);
        let message = report(&o)["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.contains("not written by RAVE"), "{message}");
    }
    assert_eq!(
        std::fs::read(foreign.join("manifest.json")).unwrap(),
        br#"{"name": "webapp"}"#
    );
}

/// A project folder moved (or a disk mounted elsewhere) with its kept job: the same input
/// file under another path resumes with every segment reused, saying so; a copy of the
/// input (another modification time) under the new path is refused as another input.
#[test]
fn a_moved_project_folder_resumes_its_job() {
    let dir = scratch();
    let before = dir.path().join("project");
    std::fs::create_dir(&before).unwrap();
    let input = photo_clip_gop10(&before, 40);
    let name = input.file_name().unwrap().to_owned();
    let model = fixture("nearest_x2.onnx");
    let opts = ["--segment-frames", "10", "--keep-work"];
    let v = upscale_ok(&input, &before.join("out.mp4"), &model, &opts);
    assert_eq!(segment_counts(&v), (4, 4, 0, 1));
    let after = dir.path().join("moved");
    std::fs::rename(&before, &after).unwrap();
    let again = [&opts[..], &["--overwrite"]].concat();
    // Moved and with another setting: refused, and the job's manifest is left as it was.
    let manifest = after.join(".out.mp4.rave-work/manifest.json");
    let planned = std::fs::read(&manifest).unwrap();
    let other = [&again[..], &["--crf", "30"]].concat();
    let o = upscale(
        &after.join(&name),
        &after.join("out.mp4"),
        &model,
        &[CPU, &other].concat(),
    );
    assert_exit(&o, 2);
    assert_eq!(
        std::fs::read(&manifest).unwrap(),
        planned,
        "a refused run changes nothing"
    );
    let o = upscale(
        &after.join(&name),
        &after.join("out.mp4"),
        &model,
        &[CPU, &again].concat(),
    );
    assert_exit(&o, 0);
    assert_eq!(segment_counts(&report(&o)), (4, 0, 4, 1));
    assert!(
        stderr(&o).contains("resuming the job planned with other paths (its input was ")
            && stderr(&o).contains("so its finished segments are kept"),
        "{}",
        stderr(&o)
    );
    // Another file in its place: refused as before.
    let copy = dir.path().join("copy.mp4");
    std::fs::copy(after.join(&name), &copy).unwrap();
    std::fs::remove_file(after.join(&name)).unwrap();
    std::fs::rename(&copy, after.join(&name)).unwrap();
    let o = upscale(
        &after.join(&name),
        &after.join("out.mp4"),
        &model,
        &[CPU, &again].concat(),
    );
    assert_exit(&o, 2);
    let message = report(&o)["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains("changed since it was planned"),
        "{message}"
    );
}
