//! The work folder's tests: claims, locks, leftovers, and what is and is not RAVE's.

use super::*;

#[test]
fn the_default_work_folder_is_hidden_beside_the_output() {
    let w = WorkFolder::beside(Path::new("/videos/film.mkv"));
    assert_eq!(w.path(), Path::new("/videos/.film.mkv.rave-work"));
    let here = WorkFolder::beside(Path::new("film.mp4"));
    assert_eq!(here.path(), Path::new("./.film.mp4.rave-work"));
}

#[test]
fn leftovers_of_dead_workers_are_swept_and_live_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let w = WorkFolder::at(dir.path());
    let live = w.segment_temp(3);
    std::fs::write(&live, b"x").unwrap();
    let dead = dir.path().join(".seg-00004.999999999-0.tmp.mp4");
    std::fs::write(&dead, b"x").unwrap();
    let partial = w.segment_partial(5);
    std::fs::write(&partial, b"x").unwrap();
    let done = w.file(&WorkFolder::segment_name(1));
    std::fs::write(&done, b"x").unwrap();
    w.sweep_leftovers();
    assert!(live.exists() && done.exists());
    assert!(!dead.exists() && !partial.exists());
}

#[test]
fn a_job_being_worked_on_cannot_be_claimed_for_discarding() {
    let dir = tempfile::tempdir().unwrap();
    let w = WorkFolder::at(dir.path());
    let worker = w.claim(false).unwrap();
    let other_worker = w.claim(false).unwrap();
    let refused = w.claim(true).unwrap_err().to_string();
    assert!(
        refused.contains("another RAVE process is working on this job"),
        "{refused}"
    );
    drop((worker, other_worker));
    let discarding = w.claim(true).unwrap();
    let refused = w.claim(false).unwrap_err().to_string();
    assert!(refused.contains("being discarded"), "{refused}");
    drop(discarding);
    w.claim(false).unwrap();
}

#[test]
fn someone_elses_manifest_is_not_a_work_folder_and_is_never_removed_as_ours() {
    let dir = tempfile::tempdir().unwrap();
    let w = WorkFolder::at(dir.path());
    std::fs::write(
        w.manifest_path(),
        br#"{"name": "webapp", "version": "1.0"}"#,
    )
    .unwrap();
    assert!(!w.holds_rave_manifest());
    let e = w.read().unwrap_err().to_string();
    assert!(e.contains("not written by RAVE"), "{e}");
    assert!(!e.contains("plan it again with --restart"), "{e}");
    std::fs::write(
        w.manifest_path(),
        br#"{"planned_by": "rave 0.1.0", "version": 1}"#,
    )
    .unwrap();
    assert!(w.holds_rave_manifest());
}

/// A planned job's manifest for input `input`.
pub(crate) fn manifest_of(input: &str) -> Manifest {
    serde_json::from_value(serde_json::json!({
        "version": 1, "planned_by": "rave 0.1.0", "input": input, "output": "/o.mkv",
        "model": "/m.onnx",
        "fingerprint": {"bytes": 1, "modified_ns": 1, "ends_sha256": "00"},
        "settings": {"model_sha256": "00", "device": "cpu", "precision": "auto",
            "codec": "h264", "crf": 18, "preset": "medium", "bit_depth": 8,
            "container": "matroska", "max_frames": null, "segment_frames": 10,
            "tiling": "off"},
        "options": [], "invocation_dir": "/", "overwrite": false, "frames_total": 10,
        "ends_early": false, "segment_frames": 10, "single_reason": null,
        "input_damage": {}, "segments": [{"index": 0, "first_frame": 0, "frames": 10,
            "start_pts": null, "end_pts": null, "seek_pts": null, "state": "pending",
            "file": null, "sha256": null, "bytes": null, "frames_written": null,
            "first_pts": null, "worker": null, "decode": null, "whole_file_damage": null}]
    }))
    .unwrap()
}

#[test]
fn a_damaged_manifest_beside_raves_segments_is_raves_to_discard() {
    let dir = tempfile::tempdir().unwrap();
    let w = WorkFolder::at(dir.path());
    std::fs::write(w.manifest_path(), b"// my notes").unwrap();
    drop(w.claim(false).unwrap());
    assert!(!w.holds_rave_manifest(), "a lock alone proves nothing");
    std::fs::write(w.file("seg-intro.mp4"), b"mine").unwrap();
    assert!(!w.holds_rave_manifest(), "not a name RAVE gives");
    let cut = br#"{"planned_by": "rave 0.1.0", "vers"#;
    std::fs::write(w.manifest_path(), cut).unwrap();
    std::fs::write(w.file("seg-00000.mp4"), b"segment").unwrap();
    std::fs::create_dir(w.file("slurm-logs")).unwrap();
    assert!(
        w.holds_rave_manifest(),
        "cut short, beside a segment (and logs)"
    );
    std::fs::write(w.manifest_path(), b"").unwrap();
    assert!(w.holds_rave_manifest(), "emptied by a power cut");
}

#[test]
fn a_folder_with_segment_names_but_no_job_is_refused_for_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let w = WorkFolder::at(dir.path());
    let output = dir.path().join("out.mkv");
    std::fs::write(w.file("notes.txt"), b"mine").unwrap();
    std::fs::write(w.file("job.lock"), b"").unwrap();
    w.check_unclaimed(&output).unwrap();
    let inside = dir.path().join("seg-00003.mp4");
    let err = w.check_unclaimed(&inside).unwrap_err().to_string();
    assert!(err.contains("would be one of RAVE's work files"), "{err}");
    std::fs::write(w.file("seg-00002.mp4"), b"the user's video").unwrap();
    let err = w.check_unclaimed(&output).unwrap_err().to_string();
    assert!(
        err.contains("holds 1 file(s) named as RAVE names its segments (seg-00002.mp4)"),
        "{err}"
    );
    // On a case-insensitive file system this name is RAVE's segment 2's.
    std::fs::remove_file(w.file("seg-00002.mp4")).unwrap();
    std::fs::write(w.file("SEG-00002.MP4"), b"the user's video").unwrap();
    assert!(w.check_unclaimed(&output).is_err());
    // RAVE's own default folder: such files are what a killed removal left.
    std::fs::write(w.file("seg-00004.mp4"), b"a segment").unwrap();
    w.discard_orphan_segments();
    assert!(!w.file("seg-00004.mp4").exists());
    assert!(w.file("notes.txt").exists() && w.file("SEG-00002.MP4").exists());
    // A job of RAVE's planned there meanwhile is for the caller to resume.
    assert!(w.write_first(&manifest_of("/a.mp4")).unwrap());
    w.check_unclaimed(&output).unwrap();
}

#[test]
fn the_manifest_and_locks_are_removed_last() {
    let names = [
        "job.lock",
        "manifest.lock",
        "manifest.json",
        "seg-00001.mp4",
        "seg-00000.partial.mp4",
    ];
    let order = in_removal_order(names.map(String::from).to_vec());
    let want = [
        "seg-00001.mp4",
        "seg-00000.partial.mp4",
        "manifest.json",
        "manifest.lock",
        "job.lock",
    ];
    assert_eq!(order, want);
}

#[test]
fn the_manifest_is_removed_after_the_segments() {
    let dir = tempfile::tempdir().unwrap();
    let w = WorkFolder::at(&dir.path().join("work"));
    w.create().unwrap();
    assert!(w.write_first(&manifest_of("/a.mp4")).unwrap());
    for i in 0..40 {
        std::fs::write(w.file(&WorkFolder::segment_name(i)), b"s").unwrap();
    }
    // A segment that cannot be removed (a folder of that name) stops the removal: the
    // manifest must still be there, so the folder is still a job of RAVE's.
    std::fs::remove_file(w.file("seg-00039.mp4")).unwrap();
    std::fs::create_dir(w.file("seg-00039.mp4")).unwrap();
    std::fs::write(w.file("seg-00039.mp4/x"), b"x").unwrap();
    assert!(w.remove(None).is_err());
    assert!(w.has_manifest() && w.holds_rave_manifest());
}

#[test]
fn files_of_the_users_with_names_like_raves_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let w = WorkFolder::at(&dir.path().join("work"));
    w.create().unwrap();
    assert!(w.write_first(&manifest_of("/a.mp4")).unwrap());
    let theirs = [
        "seg-intro.mp4",
        "film.partial.mp4",
        ".seg-keep.mp4",
        "notes.txt",
    ];
    for name in theirs {
        std::fs::write(w.file(name), b"mine").unwrap();
    }
    std::fs::write(w.file("seg-00000.mp4"), b"a segment").unwrap();
    std::fs::write(w.file("seg-00001.partial.mp4"), b"a partial one").unwrap();
    w.sweep_leftovers();
    assert!(!w.file("seg-00001.partial.mp4").exists());
    w.remove(None).unwrap();
    assert!(!w.file("seg-00000.mp4").exists() && !w.has_manifest());
    for name in theirs {
        assert!(w.file(name).exists(), "{name}");
    }
}

#[test]
fn a_second_run_planning_in_the_same_folder_does_not_write_over_the_first_ones_job() {
    let dir = tempfile::tempdir().unwrap();
    let w = WorkFolder::at(dir.path());
    assert!(w.write_first(&manifest_of("/a.mp4")).unwrap());
    assert!(!w.write_first(&manifest_of("/b.mp4")).unwrap());
    assert_eq!(w.read().unwrap().input, Path::new("/a.mp4"));
}

#[test]
fn a_folder_another_process_works_in_is_not_removed() {
    let dir = tempfile::tempdir().unwrap();
    let w = WorkFolder::at(&dir.path().join("work"));
    w.create().unwrap();
    assert!(w.write_first(&manifest_of("/a.mp4")).unwrap());
    let ours = w.claim(false).unwrap();
    let theirs = w.claim(false).unwrap();
    let refused = w.remove(Some(&ours)).unwrap_err().to_string();
    assert!(refused.contains("another RAVE process"), "{refused}");
    assert!(w.has_manifest());
    // The failed attempt kept this process's own claim: a discard is still refused.
    drop(theirs);
    assert!(w.claim(true).is_err(), "the shared claim is held again");
    w.remove(Some(&ours)).unwrap();
    assert!(!w.path().exists());
    // Without a claim of its own, the removal takes one.
    w.create().unwrap();
    let theirs = w.claim(false).unwrap();
    assert!(w.remove(None).is_err());
    drop(theirs);
    w.remove(None).unwrap();
    assert!(!w.path().exists());
}
