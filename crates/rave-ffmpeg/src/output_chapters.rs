//! The input's chapters in the output: moved with the timeline (an output starts at zero),
//! cut where the output ends (`--max-frames`, an interrupted run), and those that end
//! before the picture starts left out, as ffmpeg leaves them, and said.

use ffmpeg_next::Rational;
use ffmpeg_next::Rescale;
use ffmpeg_next::ffi::AV_TIME_BASE_Q;
use ffmpeg_next::format::context::{Input, Output};

/// Add `input`'s chapters to `output`, moved `shift_us` microseconds earlier and cut at
/// `cut_at_s` seconds of the source's timeline where given. Returns the warning for the
/// chapters left out because they end before the picture starts, if any, with how many.
pub fn add(
    output: &mut Output,
    input: &Input,
    shift_us: i64,
    cut_at_s: Option<f64>,
) -> Result<(u64, Option<String>), String> {
    let mut before_picture = 0;
    for ch in input.chapters() {
        let title = ch.metadata().get("title").unwrap_or("").to_owned();
        let shift = shift_us.rescale(AV_TIME_BASE_Q, ch.time_base());
        if ch.end() - shift <= 0 && shift > 0 {
            before_picture += 1;
            continue;
        }
        let cut = cut_at_s.map(|s| seconds_in(s, ch.time_base()));
        if cut.is_some_and(|c| ch.start() >= c) {
            continue;
        }
        let end = cut.map_or(ch.end(), |c| ch.end().min(c));
        let (start, end) = ((ch.start() - shift).max(0), end - shift);
        output
            .add_chapter(ch.id(), ch.time_base(), start, end, &title)
            .map_err(|e| format!("chapter {}: {e}", ch.id()))?;
    }
    let warning = (before_picture > 0).then(|| {
        format!(
            "{before_picture} chapter(s) end before the picture starts ({:.3} s into the input's timeline, which the output starts at zero) and are left out",
            shift_us as f64 / 1e6
        )
    });
    Ok((before_picture, warning))
}

/// `seconds` as a timestamp in `time_base`, rounded to the nearest tick.
pub fn seconds_in(seconds: f64, time_base: Rational) -> i64 {
    (seconds / f64::from(time_base)).round() as i64
}
