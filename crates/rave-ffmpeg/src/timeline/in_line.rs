//! Which of a few frames in presentation order are in line: the longest run of them whose
//! timestamps rise after the last frame placed. A frame outside every such run has a
//! damaged timestamp; the run's first frame says where the timeline goes on.

use super::on_grid;

/// Where the frame at `p`, after the last frame placed at `last`, is out of line with the
/// frames `later` (in presentation order, a few): the timestamp at which the timeline comes
/// back in line (the first frame of the longest rising run of them after `last`). `None`
/// where it is in line: no run without it is longer than the longest with it, or of the
/// same length and starting closer after `last` (on the grid of frames `exact_step` apart,
/// where the stream claims `constant_rate`) or at `p` itself with a place free before it
/// (of two frames on one time, the first goes there). A frame at or before `last` is never
/// in line; with no frame of `later` after `last` either, it is no outlier (the timeline
/// went back as a whole, or the frame is a duplicate at the end) and `None` is returned
/// too.
pub fn comes_back_at(
    p: i64,
    last: i64,
    later: &[i64],
    exact_step: f64,
    constant_rate: bool,
) -> Option<i64> {
    // Every frame rising after the last placed (nearly always): the run with `p` is the
    // longest, without allocating to find it.
    let rising = later.first().is_none_or(|&n| n > p) && later.windows(2).all(|w| w[0] < w[1]);
    if p > last && rising {
        return None;
    }
    let window: Vec<i64> = std::iter::once(p).chain(later.iter().copied()).collect();
    let runs = rising_runs(last, &window);
    let with = runs[0];
    // The longest run without `p`, the closest start among those as long: on the grid
    // first, then fewer frames after `last`, then nearer the grid's slot (a frame damaged
    // back by a frame and a seventh lands 0.85 frames after the last, within the grid's
    // fifth of a frame: the frame on its own slot is the one in line).
    let nearer = |a: i64, b: i64| {
        let key = |t: i64| {
            let delta = t - last;
            if !constant_rate {
                return (false, delta, 0);
            }
            let frames = delta as f64 / exact_step;
            let off_slot = ((frames - frames.round()).abs() * exact_step).round() as i64;
            let whole = frames.round() as i64;
            (!on_grid(delta, exact_step), whole, off_slot)
        };
        key(a) < key(b)
    };
    let (without, start) = (1..window.len())
        .filter(|&i| runs[i] > 0)
        .map(|i| (runs[i], window[i]))
        .fold(
            (0, None),
            |best: (usize, Option<i64>), (len, t)| match best.1 {
                Some(s) if len < best.0 || (len == best.0 && !nearer(t, s)) => best,
                _ => (len, Some(t)),
            },
        );
    let start = start?;
    let free_before = || slot_between(last, start, exact_step, constant_rate).is_some();
    let tie = without == with && (nearer(start, p) || (start == p && free_before()));
    (without > with || tie).then_some(start)
}

/// The place for one frame between frames at `last` and `next`: a frame after `last` where
/// the gap holds one on the grid of frames `exact_step` apart (a `constant_rate` stream),
/// else midway; `None` where the gap is too narrow.
pub fn slot_between(last: i64, next: i64, exact_step: f64, constant_rate: bool) -> Option<i64> {
    let room = next - last;
    match constant_rate {
        true => {
            (room as f64 >= 1.5 * exact_step).then(|| last + (exact_step.round() as i64).max(1))
        }
        false => (room >= 2).then(|| last + room / 2),
    }
}

/// For each frame of `window`, the length of the longest strictly rising run of frames
/// starting with it (itself and later ones), every one after `last`; 0 for a frame at or
/// before `last`.
fn rising_runs(last: i64, window: &[i64]) -> Vec<usize> {
    let mut runs = vec![0; window.len()];
    for i in (0..window.len()).rev() {
        if window[i] > last {
            let after = (i + 1..window.len())
                .filter(|&j| window[j] > window[i])
                .map(|j| runs[j])
                .max()
                .unwrap_or(0);
            runs[i] = 1 + after;
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn back(p: i64, last: i64, later: &[i64]) -> Option<i64> {
        comes_back_at(p, last, later, 40.0, true)
    }

    #[test]
    fn the_longest_rising_run_says_which_frame_is_out_of_line() {
        // Ahead of the frames after it, alone or two in a row.
        assert_eq!(back(760, 80, &[160, 200, 240, 280]), Some(160));
        assert_eq!(back(840, 120, &[880, 240, 280, 320]), Some(240));
        // In line, whatever a later frame does: one behind comes on the time of this one.
        assert_eq!(back(80, 40, &[120, 80, 200, 240]), None);
        assert_eq!(back(120, 80, &[90, 160, 200, 240]), None);
        // Behind the last placed, with the timeline going on after it.
        assert_eq!(back(0, 40, &[120, 160, 200, 240]), Some(120));
        // A pause and a restart are no outliers; nor is a frame with nothing after it.
        assert_eq!(back(4000, 40, &[4040, 4080, 4120, 4160]), None);
        assert_eq!(back(20, 4120, &[60, 100, 140, 180]), None);
        assert_eq!(back(600, 80, &[]), None);
        // At the end, one frame left: the one that follows on closer is in line.
        assert_eq!(back(600, 80, &[120]), Some(120));
        assert_eq!(back(120, 80, &[600]), None);
        // On the time of the next frame: the first of the two goes to a place free before
        // them; with none, it stays and the second is judged in its turn.
        assert_eq!(back(360, 280, &[360, 400, 440, 480]), Some(360));
        assert_eq!(back(360, 320, &[400, 360, 400, 440]), None);
        // Of two one frame after the last, the one on its slot (the other is damaged by
        // a frame and a seventh, 0.85 of a frame after the last).
        assert_eq!(back(1560, 1520, &[1554, 1640, 1680, 1720]), None);
        assert_eq!(back(1554, 1560, &[1640, 1680, 1720, 1760]), Some(1640));
        // Off the grid is farther than on it (a constant-rate stream).
        assert_eq!(back(120, 80, &[90]), None);
        assert_eq!(comes_back_at(120, 80, &[90], 40.0, false), Some(90));
    }

    #[test]
    fn runs_rise_strictly_after_the_last_frame() {
        assert_eq!(rising_runs(0, &[10, 5, 20, 20, 30]), [3, 3, 2, 2, 1]);
        assert_eq!(rising_runs(15, &[10, 20, 16]), [0, 1, 1]);
    }
}
