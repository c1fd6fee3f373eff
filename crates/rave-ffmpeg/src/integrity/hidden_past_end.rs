//! Video frames an MP4 edit list hides past the end of what it shows, after a gap: the
//! demuxer discards a frame whose timestamp was damaged past the edit's end, and the place
//! it leaves among the frames shown is the only trace of it (the run said "complete" one
//! frame short). A cut made by stream copy hides its last frames too, right after the last
//! one shown, and leaves no place free among those shown (the frames it hides after a gap,
//! as an open GOP's next keyframe, are no sign of damage there).

/// The timestamps of `hidden` past the last of `shown`, ascending (none where nothing is
/// shown).
pub fn past_last(shown: &[i64], hidden: &[i64]) -> Vec<i64> {
    let Some(&last) = shown.iter().max() else {
        return Vec::new();
    };
    let mut tail: Vec<i64> = hidden.iter().copied().filter(|&h| h > last).collect();
    tail.sort_unstable();
    tail
}

/// Of `past_end` (the hidden frames past the last of `shown`: `past_last`), those that do
/// not follow on from it (after a spacing of more than a frame and a half, frames
/// `exact_step` apart, from it or the hidden frames that follow on from it), where `shown`
/// leaves a place free on that grid for one.
pub fn stray(shown: &[i64], past_end: &[i64], exact_step: f64) -> Vec<i64> {
    let Some(&last) = shown.iter().max() else {
        return Vec::new();
    };
    let mut sorted = shown.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if crate::timeline::gaps(&sorted, exact_step).next().is_none() {
        return Vec::new();
    }
    let mut previous = last;
    let follow_on = past_end
        .iter()
        .take_while(|&&h| {
            let next = (h - previous) as f64 <= 1.5 * exact_step;
            previous = h;
            next
        })
        .count();
    past_end[follow_on..].to_vec()
}

/// `all` without one occurrence of each of `some`.
pub fn without(all: &[i64], some: &[i64]) -> Vec<i64> {
    let mut rest = all.to_vec();
    for s in some {
        if let Some(i) = rest.iter().rposition(|a| a == s) {
            rest.swap_remove(i);
        }
    }
    rest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hidden_frames_past_a_gap_are_stray() {
        let shown: Vec<i64> = (0..10).map(|i| i * 40).filter(|&t| t != 320).collect();
        let stray_of =
            |shown: &[i64], hidden: &[i64]| stray(shown, &past_last(shown, hidden), 40.0);
        // A frame damaged to 0.48 s past the last shown: stray (its place, 320, is free).
        assert_eq!(stray_of(&shown, &[840]), [840]);
        // A stream-copy cut: the hidden frames follow on from the last shown.
        assert_eq!(stray_of(&shown, &[400, 440]), Vec::<i64>::new());
        assert_eq!(stray_of(&shown, &[1040, 400, 1000, 440]), [1000, 1040]);
        // Hidden before the start (an edit list's pre-roll): none past the end.
        assert_eq!(stray_of(&shown, &[-80, -40]), Vec::<i64>::new());
        // The frames shown leave no place free: a trim that hides an open GOP's next
        // keyframe after its leading pictures.
        let whole: Vec<i64> = (0..10).map(|i| i * 40).collect();
        assert_eq!(stray_of(&whole, &[400, 440, 600]), Vec::<i64>::new());
        assert_eq!(stray_of(&[], &[40]), Vec::<i64>::new());
        assert_eq!(without(&[0, 40, 40, 80], &[40, 120]), [0, 40, 80]);
        assert_eq!(past_last(&whole, &[-40, 400, 600]), [400, 600]);
        assert_eq!(past_last(&[], &[40]), Vec::<i64>::new());
    }
}
