//! The damage corpus (tests/corpus): every damaged clip, in every container, is either
//! refused with exit 3 and the counts, or — if RAVE says it succeeded — its output holds every
//! frame and every audio packet of the undamaged original. With --allow-corrupt a run either
//! succeeds with what could be read (counted) or, with no decodable frame, is refused. Never
//! a panic, a hang, or an output error for an input problem.
//!
//! Set RAVE_CORPUS_DIR to keep the clips and outputs there for inspection.

mod common;
mod corpus;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use corpus::{CONTAINERS, FRAMES};

/// Longest a run on a corpus clip may take before it counts as a hang.
const LIMIT: Duration = Duration::from_secs(60);

/// Timestamps of a clip: its video frames and its audio packets (durations are not compared:
/// Matroska stores the last packet's shortened duration as the default one).
#[derive(Debug, Clone)]
struct Reference {
    video: Vec<f64>,
    audio: Vec<f64>,
}

fn floats(path: &Path, select: &str, entries: &str) -> Vec<Vec<f64>> {
    ffprobe(
        path,
        &[
            "-select_streams",
            select,
            "-show_entries",
            entries,
            "-of",
            "csv=p=0",
        ],
    )
    .lines()
    .map(|l| {
        l.trim_end_matches(',')
            .split(',')
            .filter_map(|x| x.parse().ok())
            .collect::<Vec<f64>>()
    })
    .filter(|v| !v.is_empty())
    .collect()
}

fn reference(path: &Path) -> Reference {
    // AVI stores no presentation timestamps: FFmpeg's best effort is the decode time there,
    // and the presentation time everywhere else.
    let video: Vec<f64> = floats(path, "v:0", "frame=best_effort_timestamp_time")
        .into_iter()
        .map(|v| v[0])
        .collect();
    let audio: Vec<f64> = floats(path, "a:0", "packet=pts_time")
        .into_iter()
        .map(|v| v[0])
        .collect();
    // On the file's own timeline: an output starts at zero where its input started later
    // (MPEG-TS, FLV), each stream keeping its offset from the others.
    let start = video
        .iter()
        .chain(&audio)
        .copied()
        .fold(f64::INFINITY, f64::min);
    let from_start = |t: Vec<f64>| match start > 0.0 && start.is_finite() {
        true => t.into_iter().map(|x| x - start).collect(),
        false => t,
    };
    Reference {
        video: from_start(video),
        audio: from_start(audio),
    }
}

/// One damaged input and the original it came from.
struct Case {
    name: String,
    input: PathBuf,
    original: Reference,
    /// Also run with --allow-corrupt.
    allowed_run: bool,
}

/// How a run ended.
struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

fn run_bounded(args: &[&str]) -> Outcome {
    let started = Instant::now();
    let mut child = rave()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rave starts");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).ok();
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).ok();
        s
    });
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > LIMIT {
            child.kill().ok();
            child.wait().ok();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Outcome {
        code,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
        took: started.elapsed(),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.0015
}

/// `rave upscale` of `case` into `output` with the fast fixture model, bounded in time.
fn upscale_case(case: &Case, output: &Path, extra: &[&str]) -> Outcome {
    let model = fixture("nearest_x2.onnx");
    let mut args = vec![
        "upscale",
        "-i",
        case.input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
        "-m",
        model.to_str().unwrap(),
        "--json",
        "--threads",
        "1",
        "--overwrite",
    ];
    args.extend_from_slice(extra);
    run_bounded(&args)
}

/// What is wrong with a strict (no --allow-corrupt) run of `case`, if anything.
fn check_strict(case: &Case, out_dir: &Path) -> (String, Vec<String>) {
    let output = out_dir.join(format!("{}.out.mkv", case.name));
    let o = upscale_case(case, &output, &[]);
    let mut problems = common_problems(case, &o);
    let verdict = match o.code {
        Some(0) => {
            // Every frame and audio packet of the original, with the timestamps the input
            // carries (a header can be damaged into other, self-consistent timestamps).
            let (got, input) = (reference(&output), reference(&case.input));
            let same = |a: &[f64], b: &[f64]| {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| close(*x, *y))
            };
            let complete = got.video.len() == case.original.video.len()
                && packet_count(&output, "a:0") == case.original.audio.len();
            if !complete || !same(&got.video, &input.video) || !same(&got.audio, &input.audio) {
                problems.push(format!(
                    "{}: exit 0 but the output lost data: video {}/{} frames, audio {}/{} packets",
                    case.name,
                    got.video.len(),
                    case.original.video.len(),
                    packet_count(&output, "a:0"),
                    case.original.audio.len()
                ));
            }
            "complete".to_string()
        }
        Some(3) => {
            let kind = refusal_kind(case, &o, &mut problems);
            if output.exists() {
                problems.push(format!(
                    "{}: refused but {} exists",
                    case.name,
                    output.display()
                ));
            }
            format!("exit 3 {kind}")
        }
        other => format!("exit {other:?}"),
    };
    (verdict, problems)
}

/// What is wrong with an --allow-corrupt run of `case`, if anything.
fn check_allowed(case: &Case, out_dir: &Path) -> (String, Vec<String>) {
    let output = out_dir.join(format!("{}.allowed.mkv", case.name));
    let o = upscale_case(case, &output, &["--allow-corrupt"]);
    let mut problems = common_problems(case, &o);
    let verdict = match o.code {
        Some(0) => {
            let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap_or_default();
            let frames_out = v["frames_out"].as_u64().unwrap_or(u64::MAX);
            let got = reference(&output);
            let increasing = got.video.windows(2).all(|w| w[0] < w[1]);
            if got.video.len() as u64 != frames_out || !increasing {
                problems.push(format!(
                    "{}: --allow-corrupt output plays {} frames (increasing: {increasing}), the report says {frames_out}",
                    case.name,
                    got.video.len()
                ));
            }
            if frames_out > u64::from(FRAMES) {
                problems.push(format!(
                    "{}: {frames_out} frames out of a {FRAMES}-frame clip",
                    case.name
                ));
            }
            let copied = v["mux"]["copied_packets"].as_u64().unwrap_or(0);
            let audio_out = packet_count(&output, "a:0") as u64;
            if audio_out != copied {
                problems.push(format!(
                    "{}: the report copied {copied} packets, the output holds {audio_out} audio packets",
                    case.name
                ));
            }
            let d = &v["input_damage"];
            format!(
                "complete: {frames_out} out, {} missing, {} damaged",
                d["frames_missing"], d["frames_damaged"]
            )
        }
        Some(3) => {
            let kind = refusal_kind(case, &o, &mut problems);
            let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap_or_default();
            let decoded = v["error"]["damage"]["frames_decoded"].as_u64();
            if kind == "corrupt_stream" && decoded != Some(0) {
                problems.push(format!(
                    "{}: --allow-corrupt refused a run that decoded {decoded:?} frames: {}",
                    case.name, o.stdout
                ));
            }
            format!("exit 3 {kind}")
        }
        other => format!("exit {other:?}"),
    };
    (verdict, problems)
}

/// Problems any run can have: a hang, a panic, an exit code other than 0 and 3.
fn common_problems(case: &Case, o: &Outcome) -> Vec<String> {
    let mut p = Vec::new();
    match o.code {
        None => p.push(format!("{}: no exit within {LIMIT:?} (hang)", case.name)),
        Some(0) | Some(3) => {}
        Some(c) => p.push(format!(
            "{}: exit {c}: {}{}",
            case.name,
            o.stdout.trim(),
            o.stderr.trim()
        )),
    }
    if o.stderr.contains("panicked") || o.stderr.contains("backtrace") {
        p.push(format!("{}: panic: {}", case.name, o.stderr));
    }
    if o.took > Duration::from_secs(20) {
        p.push(format!("{}: took {:?}", case.name, o.took));
    }
    p
}

/// The kind of a refusal; a damage refusal must carry its counts.
fn refusal_kind(case: &Case, o: &Outcome, problems: &mut Vec<String>) -> String {
    let v: serde_json::Value = match serde_json::from_str(&o.stdout) {
        Ok(v) => v,
        Err(_) => {
            problems.push(format!(
                "{}: exit 3 without a JSON error: {}",
                case.name, o.stdout
            ));
            return "?".into();
        }
    };
    let kind = v["error"]["kind"].as_str().unwrap_or("?").to_string();
    let known = [
        "corrupt_stream",
        "not_a_video",
        "input_unreadable",
        "unsupported_codec",
    ];
    if !known.contains(&kind.as_str()) {
        problems.push(format!(
            "{}: exit 3 of kind {kind}: {}",
            case.name, o.stdout
        ));
    }
    if kind == "corrupt_stream" && !v["error"]["damage"].is_object() {
        problems.push(format!(
            "{}: a damage refusal without counts: {}",
            case.name, o.stdout
        ));
    }
    kind
}

/// The clean clips and every damaged variant, written to `dir`.
fn build_cases(dir: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    for c in &CONTAINERS {
        let clean = corpus::make_clean(dir, c);
        let original = reference(&clean);
        assert_eq!(original.video.len(), FRAMES as usize, "{}", clean.display());
        let data = std::fs::read(&clean).unwrap();
        let mut add = |label: String, bytes: Vec<u8>, allowed_run: bool| {
            let name = format!("{}-{label}", c.name);
            let input = dir.join(format!("{name}.{}", c.ext));
            std::fs::write(&input, bytes).unwrap();
            cases.push(Case {
                name,
                input,
                original: original.clone(),
                allowed_run,
            });
        };
        add("clean".into(), data.clone(), false);
        for (seed, m) in corpus::mutations().iter().enumerate() {
            add(m.label(), m.apply(&data, seed as u32 + 1), true);
        }
        match c.name {
            "mp4" | "faststart" => {
                add(
                    "nosamples".into(),
                    corpus::with_sample_count(&data, 0, 0),
                    true,
                );
                add(
                    "absurdsamples".into(),
                    corpus::with_sample_count(&data, 0, 0x7fff_ffff),
                    true,
                );
                add(
                    "audiochunks".into(),
                    corpus::with_shifted_chunks(&data, 1, 3000),
                    true,
                );
                add(
                    "audiochunkseof".into(),
                    corpus::with_shifted_chunks(&data, 1, 10 << 20),
                    true,
                );
                add(
                    "audiomap".into(),
                    corpus::with_fewer_samples_per_chunk(&data, 1),
                    true,
                );
            }
            "fragmented" => {
                add("initonly".into(), corpus::init_segment_only(&data), true);
                // A fragment lost in the middle (its number skipped), or at either end
                // (only the index at the end of the file still lists it).
                let last = corpus::find_boxes(&data, b"moof").len() - 1;
                for (label, nth) in [
                    ("fragment", 1),
                    ("firstfragment", 0),
                    ("lastfragment", last),
                ] {
                    add(
                        format!("{label}lost"),
                        corpus::without_fragment(&data, nth),
                        true,
                    );
                }
            }
            "ts" => add(
                "adtsheader".into(),
                corpus::with_broken_adts_header(&data),
                true,
            ),
            _ => {}
        }
    }
    cases
}

#[test]
fn every_damaged_clip_is_refused_with_counts_or_complete() {
    let keep = std::env::var_os("RAVE_CORPUS_DIR").map(PathBuf::from);
    let scratch = scratch();
    let dir = keep.clone().unwrap_or_else(|| scratch.path().to_path_buf());
    std::fs::create_dir_all(&dir).unwrap();
    let cases = build_cases(&dir);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(case) = cases.get(i) else { break };
                    let (strict, mut problems) = check_strict(case, &dir);
                    let allowed = if case.allowed_run {
                        let (v, p) = check_allowed(case, &dir);
                        problems.extend(p);
                        v
                    } else {
                        "-".into()
                    };
                    results
                        .lock()
                        .unwrap()
                        .push((i, case.name.clone(), strict, allowed, problems));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|r| r.0);
    let mut failures = Vec::new();
    println!("{:<28} {:<32} with --allow-corrupt", "case", "strict");
    for (_, name, strict, allowed, problems) in results {
        println!("{name:<28} {strict:<32} {allowed}");
        failures.extend(problems);
    }
    assert!(
        temp_files_left(&dir).is_empty(),
        "temp files left: {:?}",
        temp_files_left(&dir)
    );
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The clean clips must go through untouched.
    for c in &CONTAINERS {
        let out = dir.join(format!("{}-clean.out.mkv", c.name));
        assert!(out.exists(), "clean {} was refused", c.name);
    }
}
