//! Human-readable summaries of a run, a benchmark and a probe, printed on stdout.

use rave_ffmpeg::MediaInfo;
use rave_pipeline::RunReport;
use rave_pipeline::benchmark::BenchmarkReport;
use rave_pipeline::report::RunStatus;

/// After `rave upscale`.
pub fn print_run(r: &RunReport) {
    let what = match r.status {
        RunStatus::Complete => "upscaled",
        RunStatus::Partial => "interrupted; partial output",
    };
    println!(
        "{what}: {} -> {}\n  {} frames in, {} out, {}x{} -> {}x{} with {} (x{}) on {}\n  {} crf {} preset {}; {:.1} s, {:.2} fps",
        r.input.display(),
        r.output.display(),
        r.frames_in,
        r.frames_out,
        r.input_size[0],
        r.input_size[1],
        r.output_size[0],
        r.output_size[1],
        r.model.metadata.name,
        r.model.metadata.scale,
        r.backend.name,
        r.mux.encoder,
        r.encoder.crf,
        r.encoder.preset,
        r.elapsed_s,
        r.fps,
    );
    if r.mux.copied_streams.len() + r.mux.skipped_streams.len() > 0 {
        println!(
            "  copied {} stream(s) untouched ({} packets)",
            r.mux.copied_streams.len(),
            r.mux.copied_packets
        );
    }
    for s in &r.mux.skipped_streams {
        println!("  skipped {s}");
    }
    if r.decode.bad_frames > 0 {
        println!(
            "  warning: {} corrupt frame(s) in the input were concealed by the decoder",
            r.decode.bad_frames
        );
    }
}

/// After `rave benchmark`.
pub fn print_benchmark(r: &BenchmarkReport) {
    println!(
        "benchmark: {} on {}, {}x{} -> {}x{}, {} frames",
        r.model,
        r.backend,
        r.input_size[0],
        r.input_size[1],
        r.output_size[0],
        r.output_size[1],
        r.frames
    );
    println!(
        "  {:<12} {:>8} {:>10} {:>10} {:>12}",
        "stage", "frames", "avg ms", "peak ms", "capacity fps"
    );
    for s in &r.stages {
        println!(
            "  {:<12} {:>8} {:>10.2} {:>10.2} {:>12.2}",
            s.name, s.frames, s.avg_ms, s.peak_ms, s.capacity_fps
        );
    }
    println!(
        "  overall: {:.2} fps over {:.2} s; bottleneck: {}",
        r.fps, r.elapsed_s, r.bottleneck
    );
}

/// After `rave probe`.
pub fn print_probe(i: &MediaInfo) {
    let v = &i.video;
    println!("{}: {}", i.path.display(), i.container);
    if let Some(d) = i.duration_s {
        println!("  duration   {d:.3} s");
    }
    println!(
        "  video      #{} {} {}x{} {} ({}-bit), {:.3} fps{}",
        v.stream_index,
        v.codec,
        v.width,
        v.height,
        v.pixel_format,
        v.bit_depth,
        v.frame_rate,
        if v.variable_frame_rate {
            " (variable)"
        } else {
            ""
        }
    );
    if let Some(n) = v.frame_count {
        println!(
            "  frames     {n}{}",
            if v.frame_count_estimated {
                " (estimated)"
            } else {
                ""
            }
        );
    }
    println!(
        "  colour     primaries {}, transfer {}, matrix {}, range {}",
        v.color_primaries, v.color_transfer, v.color_matrix, v.color_range
    );
    if v.rotation_deg != 0.0 {
        println!("  rotation   {} degrees", v.rotation_deg);
    }
    for s in &i.streams {
        if s.index == v.stream_index {
            continue;
        }
        let lang = s
            .language
            .as_deref()
            .map(|l| format!(" [{l}]"))
            .unwrap_or_default();
        let pic = if s.attached_picture {
            " (cover art)"
        } else {
            ""
        };
        println!("  {:<10} #{} {}{lang}{pic}", s.kind, s.index, s.codec);
    }
    if i.chapters > 0 {
        println!("  chapters   {}", i.chapters);
    }
}
