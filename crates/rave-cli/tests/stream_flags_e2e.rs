//! A copied stream's flags (default, comment, forced, hearing impaired, original) where the
//! output's container cannot keep them: said, once, on stderr and in the report (.mov kept
//! only `default`, .mp4 all but `original`, without a word).

mod common;

use common::*;

#[test]
fn flags_the_output_cannot_keep_are_said() {
    let dir = scratch();
    let input = dir.path().join("flags.mkv");
    lavfi_clip(
        &input,
        &[
            "testsrc2=size=64x48:rate=25:duration=1",
            "sine=duration=1",
            "sine=frequency=600:duration=1",
        ],
        &[
            "-map",
            "0",
            "-map",
            "1",
            "-map",
            "2",
            "-c:v",
            "libx264",
            "-c:a",
            "aac",
            "-disposition:a:0",
            "default+original",
            "-disposition:a:1",
            "comment+forced",
        ],
    );
    let model = fixture("nearest_x2.onnx");
    let said = |ext: &str| {
        let output = dir.path().join(format!("out.{ext}"));
        let o = upscale(&input, &output, &model, &["--json"]);
        let report = json_report(&o)["mux"]["warnings"].to_string();
        let err = stderr(&o);
        let flagged: Vec<String> = err
            .lines()
            .filter(|l| l.contains("is flagged"))
            .map(str::to_owned)
            .collect();
        for line in &flagged {
            let text = line.trim_start_matches("rave: warning: ");
            assert!(report.contains(text), "{ext}: {text} not in {report}");
        }
        flagged
    };
    let mov = said("mov");
    assert_eq!(mov.len(), 2, "{mov:?}");
    assert!(mov[0].contains("stream #1 (audio aac) is flagged original, which .mov"));
    assert!(mov[1].contains("is flagged comment, forced, which .mov cannot store"));
    assert!(mov[1].ends_with(".mp4 or .mkv keep them"), "{mov:?}");
    let mp4 = said("mp4");
    assert_eq!(mp4.len(), 1, "{mp4:?}");
    assert!(mp4[0].contains("stream #1 (audio aac) is flagged original, which .mp4"));
    assert!(said("mkv").is_empty());
}
