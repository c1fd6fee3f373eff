//! A segment worker whose inference fails mid-job, as a GPU that breaks would fail (the
//! failure is injected with RAVE_INJECT_FAILURE): the job stops with that error, keeps the
//! segments finished before it and leaves no output; the same command afterwards resumes to
//! what one uninterrupted run gives. With several GPUs the segment runs again on another
//! GPU instead: that needs a machine with two (scripts/gpu_multi.sh); the scheduling itself
//! is tested in rave-pipeline's `segments::pool`.

mod common;

use common::*;

#[test]
fn a_worker_that_fails_mid_job_keeps_the_finished_segments_for_the_resume() {
    let dir = scratch();
    let d = dir.path();
    let input = photo_clip_gop10(d, 40);
    let model = installed_model("realesr-animevideov3-x2");
    let opts = ["--segment-frames", "10", "--threads", "1", "--jobs", "1"];
    let one = d.join("one.mp4");
    upscale_ok(&input, &one, &model, &opts);

    // A failure at the first frame of a segment keeps every segment before it: their
    // frames had all passed the model, and the stages after it finish what they hold.
    for (after, kept) in [(10, 1), (20, 2)] {
        let out = d.join(format!("at{after}.mp4"));
        let work = d.join(format!(".at{after}.mp4.rave-work"));
        let args = upscale_args(&input, &out, &model, &[CPU, &opts[..]].concat());
        let o = rave()
            .args(&args)
            .env("RAVE_INJECT_FAILURE", after.to_string())
            .output()
            .expect("rave runs");
        assert_exit(&o, 6);
        let e = &report(&o)["error"];
        assert_eq!(e["kind"], "cuda", "{e}");
        assert_eq!(
            e["message"],
            format!(
                "CUDA error: a failure injected for testing, after {after} frames (RAVE_INJECT_FAILURE)"
            )
        );
        let err = stderr(&o);
        assert!(
            err.contains(&format!(
                "rave: warning: the work folder {} keeps the {kept} segment(s) finished before the error",
                work.display()
            )) && err.contains("run the same command again to resume"),
            "{err}"
        );
        assert!(!out.exists(), "no output that looks complete");
        assert_eq!(temp_files_left(d), Vec::<String>::new());
        assert_eq!(manifest_done(&work), Some((kept, 4)));
    }

    let out = d.join("at20.mp4");
    let work = d.join(".at20.mp4.rave-work");
    let done = 2;
    let args = upscale_args(&input, &out, &model, &[CPU, &opts[..]].concat());
    let o = run(&args);
    assert_exit(&o, 0);
    let v = report(&o);
    assert_eq!(v["status"], "complete");
    assert_eq!(segment_counts(&v), (4, 4 - done as u64, done as u64, 1));
    assert_eq!(v["frames_out"], 40);
    assert!(!work.exists(), "removed after the resumed run's success");
    assert_eq!(framemd5(&out), framemd5(&one), "decoded frames identical");
    assert_eq!(audio_packets(&out), audio_packets(&one), "audio identical");
}

#[test]
fn a_malformed_injection_is_refused_before_any_work() {
    let dir = scratch();
    let d = dir.path();
    let input = make_clip(d, "in.mp4", "64x48", 5);
    let model = installed_model("realesr-animevideov3-x2");
    let out = d.join("out.mp4");
    for (bad, says) in [
        ("x", "'x' is not a number of frames"),
        ("4@gpu1", "'gpu1' is not a GPU index"),
    ] {
        let args = upscale_args(&input, &out, &model, CPU);
        let o = rave()
            .args(&args)
            .env("RAVE_INJECT_FAILURE", bad)
            .output()
            .expect("rave runs");
        assert_exit(&o, 2);
        let message = report(&o)["error"]["message"].to_string();
        assert!(
            message.starts_with(&format!("\"RAVE_INJECT_FAILURE={bad}: {says}")),
            "{message}"
        );
        assert!(!out.exists());
        assert_eq!(sorted_names(d), ["in.mp4"], "nothing written");
    }
}
