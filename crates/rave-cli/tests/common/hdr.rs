//! HDR10 side data as ffprobe shows it, for the tests of what the output keeps.

use std::path::Path;

use super::ffprobe;

/// The fields of HDR10 mastering display and content light level metadata.
pub const HDR10_FIELDS: &str = "red_x,red_y,green_x,green_y,blue_x,blue_y,white_point_x,white_point_y,min_luminance,max_luminance,max_content,max_average";

/// HDR10 metadata of `path`'s first video stream as ffprobe prints `entries`
/// (`stream_side_data=...` or `frame_side_data=...`, of the first frame), parsed to numbers.
pub fn hdr_side_data(path: &Path, entries: &str) -> Vec<(String, f64)> {
    ffprobe(
        path,
        &[
            "-select_streams",
            "v:0",
            "-read_intervals",
            "%+#1",
            "-show_entries",
            entries,
            "-of",
            "flat",
        ],
    )
    .lines()
    .filter_map(|l| {
        let (key, value) = l.split_once('=')?;
        let key = key.rsplit('.').next()?.to_string();
        let value = value.trim_matches('"');
        let number = match value.split_once('/') {
            Some((n, d)) => n.parse::<f64>().ok()? / d.parse::<f64>().ok()?,
            None => value.parse().ok()?,
        };
        Some((key, number))
    })
    .collect()
}

/// Assert that `got` holds the fields of `want` with the same values.
pub fn assert_same_hdr(got: &[(String, f64)], want: &[(String, f64)], what: &str) {
    let mut got = got.to_vec();
    let mut want = want.to_vec();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        got.iter().map(|g| &g.0).collect::<Vec<_>>(),
        want.iter().map(|w| &w.0).collect::<Vec<_>>(),
        "{what}"
    );
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g.1 - w.1).abs() <= 1e-4 * w.1.abs().max(1.0),
            "{what}: {} is {} instead of {}",
            g.0,
            g.1,
            w.1
        );
    }
}
