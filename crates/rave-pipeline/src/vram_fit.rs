//! Fitting the model into a VRAM budget (`--vram-limit`, else the GPU's free memory when
//! the run starts): the GPU backend is built and warmed up at a size (the whole frame, or a
//! tile), and what the device then holds is counted against the budget. Under `--tile auto`
//! a whole frame that does not fit is tried again in smaller tiles, largest first, until
//! one fits; the smallest failing too is a refusal with the numbers. Measured, not modelled:
//! ONNX Runtime's arena, cuDNN's workspaces and the native engine's maps are what they are
//! on this GPU and driver.

use rave_core::error::{EngineError, Result};

/// The device memory a run (one segment worker of it) may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Bytes.
    pub bytes: usize,
    /// Whether it is `--vram-limit` (else the GPU's free memory).
    pub given: bool,
    /// Segment workers sharing the GPU, each with `bytes` (1: the run alone).
    pub shared_by: usize,
}

/// Bytes in GiB, for the report and messages.
pub fn gib(bytes: usize) -> f64 {
    bytes as f64 / f64::from(1u32 << 30)
}

/// "1.35 GiB", or "640 MiB" under a GiB.
pub fn human(bytes: usize) -> String {
    if bytes >= 1 << 30 {
        format!("{:.2} GiB", gib(bytes))
    } else {
        format!("{:.0} MiB", bytes as f64 / 1048576.0)
    }
}

impl Budget {
    /// `--vram-limit` if given, shared evenly by `workers` segment workers on the GPU at
    /// once; else what the GPU has free (`free`; unknown: no budget at all) shared by the
    /// `to_start` workers still to load, this one included (they load one at a time).
    pub fn for_run(
        limit: Option<usize>,
        free: Option<usize>,
        workers: usize,
        to_start: usize,
    ) -> Option<Self> {
        let (total, given, shared_by) = match (limit, free) {
            (Some(bytes), _) => (bytes, true, workers.max(1)),
            (None, Some(bytes)) => (bytes, false, to_start.max(1)),
            (None, None) => return None,
        };
        Some(Self {
            bytes: total / shared_by,
            given,
            shared_by,
        })
    }

    /// "the 4.00 GiB budget (--vram-limit)", "the GPU's 139.10 GiB free", "the 2.00 GiB
    /// budget (--vram-limit 4.00 GiB shared by 2 segment workers)".
    pub fn describe(&self) -> String {
        let total = self.bytes * self.shared_by;
        match (self.given, self.shared_by) {
            (true, 1) => format!("the {} budget (--vram-limit)", human(self.bytes)),
            (false, 1) => format!("the GPU's {} free", human(self.bytes)),
            (true, n) => format!(
                "the {} budget (--vram-limit {} shared by {n} segment workers)",
                human(self.bytes),
                human(total)
            ),
            (false, n) => format!(
                "the {} budget (the GPU's {} free, shared by the {n} segment workers still to load)",
                human(self.bytes),
                human(total)
            ),
        }
    }
}

/// Whether `e` says the device (or a budget) had no room: RAVE's account refused, or a
/// runtime's allocation failed (ONNX Runtime's arena at its limit, CUDA out of memory).
pub fn is_out_of_memory(e: &EngineError) -> bool {
    if matches!(e, EngineError::VramLimit { .. }) {
        return true;
    }
    let text = e.to_string().to_ascii_lowercase();
    [
        "out of memory",
        "out_of_memory",
        "failed to allocate memory",
        "exceeds the memory limit",
        "memory limit",
        "bfcarena",
        "alloc_failed",
        "memoryallocation",
        "memory allocation",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}

/// How much a size needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Measured: the backend built, and this is what it and the frames in flight hold.
    Bytes(usize),
    /// More than this: an allocation was refused there, before the backend was built.
    MoreThan(usize),
    /// A runtime's allocation failed (no amount known).
    Unknown,
}

impl Need {
    /// "1.35 GiB", "more than 380 MiB", "more".
    fn describe(&self) -> String {
        match self {
            Need::Bytes(n) => human(*n),
            Need::MoreThan(n) => format!("more than {}", human(*n)),
            Need::Unknown => "more".into(),
        }
    }
}

/// What building at one size found.
pub enum Attempt<T> {
    /// It fits: the built value and the device bytes it holds with the frames in flight.
    Fits(T, usize),
    /// It does not.
    TooBig(Need),
}

/// A size tried (`None`: the whole frame) and what it needed.
pub type Tried = (Option<(u32, u32)>, Need);

/// The size that fitted: `None` the whole frame, else a tile.
pub struct Fitted<T> {
    /// What was built.
    pub value: T,
    /// The tile (width, height), or `None` for the whole frame.
    pub tile: Option<(u32, u32)>,
    /// Device bytes it held at most once built.
    pub peak: usize,
    /// The sizes tried before that did not fit, largest first, with what each needed
    /// where known.
    pub too_big: Vec<Tried>,
}

/// The smallest tile side `auto` goes down to (smaller tiles spend most of their pixels on
/// the overlap).
pub const MIN_AUTO_TILE: u32 = 64;

/// Tile sizes `auto` tries after the whole frame of `frame` (width, height), largest first:
/// tiles of about 1/k of each side plus the overlap, k = 2, 3, 4, 6, 8, ... (each step
/// about half the pixels of the one before: every try builds and warms up the backend) down
/// to [`MIN_AUTO_TILE`] (and over twice the overlap) along every side they cut; each side
/// a multiple of `multiple` (width, height: the model's tile multiples), rounded down where
/// it cuts the frame, and the frame's side padded to one where a multiple covers it.
pub fn smaller_tiles(frame: (u32, u32), overlap: u32, multiple: (u32, u32)) -> Vec<(u32, u32)> {
    let (fw, fh) = frame;
    let floor = MIN_AUTO_TILE.max(2 * overlap + 1);
    let (mw, mh) = (multiple.0.max(1), multiple.1.max(1));
    let cover = |len: u32, m: u32| len.div_ceil(m) * m;
    let whole = (cover(fw, mw), cover(fh, mh));
    let mut out: Vec<(u32, u32)> = Vec::new();
    for k in [2u32, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64] {
        let side = |len: u32, m: u32| {
            let t = (len.div_ceil(k) + overlap).min(len);
            let cut = (t / m * m).max(m);
            if t >= len || cut >= len {
                cover(len, m)
            } else {
                cut
            }
        };
        let tile = (side(fw, mw), side(fh, mh));
        // A side that cuts the frame shorter than the floor: its tiles would be mostly
        // overlap (or could not share it at all).
        let too_small = |t: u32, len: u32| t < len && t < floor;
        if too_small(tile.0, fw) || too_small(tile.1, fh) || tile == frame || tile == whole {
            break;
        }
        if out.last() != Some(&tile) {
            out.push(tile);
        }
    }
    out
}

/// Try `sizes` in order (`None`: the whole frame) until `attempt` fits one. Errors that are
/// not about memory end the search at once. Where none fits: with one size asked for, the
/// VRAM error; with several (auto), a refusal naming the budget and what each needed.
pub fn fit<T>(
    sizes: &[Option<(u32, u32)>],
    budget: &Budget,
    what: &str,
    mut attempt: impl FnMut(Option<(u32, u32)>) -> Result<Attempt<T>>,
) -> Result<Fitted<T>> {
    let mut too_big = Vec::new();
    let mut last_error = None;
    for &size in sizes {
        let outcome = match attempt(size) {
            Ok(outcome) => outcome,
            Err(e) if is_out_of_memory(&e) => {
                let needed = match &e {
                    EngineError::VramLimit { would_be, .. } => Need::MoreThan(*would_be),
                    _ => Need::Unknown,
                };
                last_error = Some(e);
                Attempt::TooBig(needed)
            }
            Err(e) => return Err(e),
        };
        match outcome {
            Attempt::Fits(value, peak) => {
                return Ok(Fitted {
                    value,
                    tile: size,
                    peak,
                    too_big,
                });
            }
            Attempt::TooBig(needed) => too_big.push((size, needed)),
        }
    }
    if let [(_, need)] = too_big.as_slice() {
        // One size asked for: the VRAM error, with what it needed where known.
        return Err(match (need, last_error) {
            (Need::Bytes(n) | Need::MoreThan(n), _) => EngineError::VramLimit {
                requested: *n,
                would_be: *n,
                limit: budget.bytes,
            },
            (Need::Unknown, e) => EngineError::Cuda(format!(
                "{what} ran out of GPU memory within {}{}; use smaller --tile or raise --vram-limit",
                budget.describe(),
                e.map_or(String::new(), |e| format!(" ({e})"))
            )),
        });
    }
    // "more than 1.02 GiB for the whole frame", "3.53 GiB for tiles of 136x84".
    let needed = |(size, needed): &Tried, smallest: &str| {
        let at = match size {
            None => "the whole frame".to_string(),
            Some((w, h)) => format!("{smallest}tiles of {w}x{h}"),
        };
        format!("{} for {at}", needed.describe())
    };
    let tried = match (too_big.first(), too_big.last()) {
        (Some(first), Some(last)) if too_big.len() > 1 => {
            format!("{}, {}", needed(first, ""), needed(last, "the smallest "))
        }
        (Some(only), _) => needed(only, ""),
        _ => "nothing was tried".into(),
    };
    Err(EngineError::Config(format!(
        "{what} does not fit {} even in the smallest tiles (it needs {tried}); raise --vram-limit{}",
        budget.describe(),
        if budget.given {
            ""
        } else {
            ", or free the GPU's memory"
        }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model that holds `base + per_pixel * w * h` bytes at a size.
    fn memory(size: (u32, u32)) -> usize {
        (200 << 20) + 600 * size.0 as usize * size.1 as usize
    }

    fn sizes(frame: (u32, u32), overlap: u32) -> Vec<Option<(u32, u32)>> {
        std::iter::once(None)
            .chain(smaller_tiles(frame, overlap, (1, 1)).into_iter().map(Some))
            .collect()
    }

    #[test]
    fn auto_takes_the_largest_size_that_fits_and_says_what_did_not() {
        let frame = (1920, 1080);
        let budget = Budget {
            bytes: 512 << 20,
            given: true,
            shared_by: 1,
        };
        let mut tried = Vec::new();
        let fitted = fit(&sizes(frame, 16), &budget, "model m", |size| {
            tried.push(size);
            let need = memory(size.unwrap_or(frame));
            Ok(if need <= budget.bytes {
                Attempt::Fits(size, need)
            } else {
                Attempt::TooBig(Need::Bytes(need))
            })
        })
        .unwrap();
        let tile = fitted.tile.expect("the whole frame is 1.4 GiB");
        assert!(memory(tile) <= budget.bytes);
        // The size tried before it (the next larger) did not fit.
        let (before, needed) = *fitted.too_big.last().unwrap();
        assert!(memory(before.unwrap_or(frame)) > budget.bytes);
        assert_eq!(needed, Need::Bytes(memory(before.unwrap_or(frame))));
        assert_eq!(tried.first(), Some(&None), "the whole frame first");
        assert_eq!(tried.last(), Some(&fitted.tile));
    }

    #[test]
    fn a_budget_too_small_for_the_smallest_tile_is_refused_with_the_numbers() {
        let budget = Budget {
            bytes: 64 << 20,
            given: true,
            shared_by: 1,
        };
        let e = fit(
            &sizes((1920, 1080), 16),
            &budget,
            "model m on 1920x1080 frames",
            |size| match size {
                // The whole frame: an allocation refused on the way.
                None => Err(EngineError::VramLimit {
                    requested: 1 << 20,
                    would_be: 380 << 20,
                    limit: 64 << 20,
                }),
                Some(tile) => Ok(Attempt::<()>::TooBig(Need::Bytes(memory(tile)))),
            },
        )
        .err()
        .expect("nothing fits");
        assert_eq!(e.family().exit_code(), 2, "{e}");
        let text = e.to_string();
        assert!(
            text.starts_with(
                "model m on 1920x1080 frames does not fit the 64 MiB budget (--vram-limit) even in the smallest tiles (it needs more than 380 MiB for the whole frame, 207 MiB for the smallest tiles of 136x84); raise --vram-limit"
            ),
            "{text}"
        );
        assert!(text.ends_with("; raise --vram-limit"), "{text}");
    }

    #[test]
    fn one_size_asked_for_fails_as_the_vram_error_and_other_errors_stop_the_search() {
        let budget = Budget {
            bytes: 1 << 30,
            given: false,
            shared_by: 1,
        };
        let e = fit(&[Some((512, 512))], &budget, "m", |_| {
            Err::<Attempt<()>, _>(EngineError::VramLimit {
                requested: 10,
                would_be: 2 << 30,
                limit: 1 << 30,
            })
        })
        .err()
        .unwrap();
        assert_eq!(e.kind(), "vram_limit");
        assert_eq!(e.family().exit_code(), 6);
        assert!(
            e.to_string().contains(
                "2048.0 MiB more would bring the run to 2048.0 MiB of its 1024.0 MiB budget"
            ),
            "{e}"
        );
        // A runtime's own out-of-memory at the one size: a GPU error (exit 6) saying so.
        let e = fit(&[None], &budget, "model m", |_| {
            Err::<Attempt<()>, _>(EngineError::Inference(
                "Failed to allocate memory for requested buffer of size 123".into(),
            ))
        })
        .err()
        .unwrap();
        assert_eq!(e.family().exit_code(), 6, "{e}");
        assert!(
            e.to_string()
                .contains("model m ran out of GPU memory within the GPU's"),
            "{e}"
        );
        let mut calls = 0;
        let e = fit(&sizes((640, 480), 16), &budget, "m", |_| {
            calls += 1;
            Err::<Attempt<()>, _>(EngineError::ModelInvalid {
                path: "m.onnx".into(),
                reason: "broken".into(),
            })
        })
        .err()
        .unwrap();
        assert_eq!((e.kind(), calls), ("model_invalid", 1));
        // An ONNX Runtime arena at its limit reads as out of memory.
        let ort = EngineError::Inference(
            "Failed to allocate memory for requested buffer of size 123".into(),
        );
        assert!(is_out_of_memory(&ort));
        assert!(!is_out_of_memory(&EngineError::Inference(
            "shape mismatch".into()
        )));
    }

    #[test]
    fn smaller_tiles_shrink_to_the_floor_and_never_repeat() {
        let t = smaller_tiles((1920, 1080), 16, (1, 1));
        assert_eq!(t[0], (976, 556));
        assert!(
            t.windows(2).all(|p| p[0].0 * p[0].1 > p[1].0 * p[1].1),
            "{t:?}"
        );
        assert!(t.iter().all(|&(w, h)| w.min(h) >= MIN_AUTO_TILE), "{t:?}");
        assert!(smaller_tiles((64, 64), 16, (1, 1)).is_empty());
        // A model of sides that are multiples of 8 (a 1366x766 frame is not).
        let eights = smaller_tiles((1366, 766), 16, (8, 8));
        assert_eq!(eights[0], (696, 392));
        assert!(
            eights.iter().all(|&(w, h)| w % 8 == 0 && h % 8 == 0),
            "{eights:?}"
        );
        // A frame thinner than the floor: the thin side is never cut, the other side never
        // below twice the overlap (a 16x28 tile refused the run).
        let thin = smaller_tiles((16, 277), 16, (1, 1));
        assert!(
            !thin.is_empty() && thin.iter().all(|&(w, h)| w == 16 && h > 32),
            "{thin:?}"
        );
        // A side shorter than the multiple: padded to one, the other side cut.
        let flat = smaller_tiles((1366, 40), 16, (64, 64));
        assert_eq!(flat[0], (640, 64), "{flat:?}");
        assert_eq!(
            Budget::for_run(None, Some(3 << 30), 1, 1)
                .unwrap()
                .describe(),
            "the GPU's 3.00 GiB free"
        );
        assert_eq!(Budget::for_run(None, None, 2, 2), None);
        // The second of two workers loads last: what is free then is all its own.
        assert_eq!(
            Budget::for_run(None, Some(3 << 30), 2, 1).unwrap().bytes,
            3 << 30
        );
        let shared = Budget::for_run(Some(8 << 30), Some(100 << 30), 2, 1).unwrap();
        assert_eq!(shared.bytes, 4 << 30);
        assert_eq!(
            shared.describe(),
            "the 4.00 GiB budget (--vram-limit 8.00 GiB shared by 2 segment workers)"
        );
    }
}
