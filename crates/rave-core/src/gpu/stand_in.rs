//! One GPU standing in for several, for testing the several-GPU path (`--gpus 0,1`) where
//! the machine has one: the CLI sets it from `RAVE_TEST_GPU_COPIES`. The driver's GPU 0 is
//! then shown as GPUs 0 to N-1, each opening GPU 0 (its primary context), so every worker
//! of every "GPU" is real, but their speed is that of one GPU shared.

use std::sync::OnceLock;

/// How many GPUs the driver's GPU 0 is shown as (set once, before any GPU is opened).
static COPIES: OnceLock<usize> = OnceLock::new();

/// Most copies accepted.
pub const MAX_COPIES: usize = 8;

/// Show the driver's GPU 0 as `copies` GPUs for the rest of the process (2 to 8). Call it
/// before anything asks the driver; a second call is refused.
pub fn show_gpu0_as(copies: usize) -> Result<(), String> {
    if !(2..=MAX_COPIES).contains(&copies) {
        return Err(format!("GPU 0 can be shown as 2 to {MAX_COPIES} GPUs"));
    }
    COPIES
        .set(copies)
        .map_err(|_| "GPU 0 is already shown as several GPUs".to_string())
}

/// Whether GPU 0 is being shown as several GPUs (runs say so, since their speeds are not
/// those of several GPUs).
pub fn active() -> Option<usize> {
    COPIES.get().copied()
}

/// How many GPUs RAVE sees where the driver sees `driver_count`.
pub(crate) fn visible(driver_count: usize) -> usize {
    shown(active(), driver_count)
}

/// The driver's ordinal of RAVE's GPU `gpu` (itself, unless GPU 0 stands in for it).
pub fn driver_ordinal(gpu: usize) -> usize {
    ordinal(active(), gpu)
}

fn shown(copies: Option<usize>, driver_count: usize) -> usize {
    match copies {
        Some(n) if driver_count > 0 => n,
        _ => driver_count,
    }
}

fn ordinal(copies: Option<usize>, gpu: usize) -> usize {
    match copies {
        Some(n) if gpu < n => 0,
        _ => gpu,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_0_stands_in_for_the_copies_and_nothing_changes_without_them() {
        assert_eq!((shown(None, 1), shown(None, 3)), (1, 3));
        assert_eq!(shown(Some(2), 1), 2);
        assert_eq!(shown(Some(2), 0), 0, "no GPU stays no GPU");
        assert_eq!((ordinal(None, 1), ordinal(Some(2), 1)), (1, 0));
        assert_eq!(ordinal(Some(2), 0), 0);
        // Beyond the copies an index is left as it is (and refused as one the driver lacks).
        assert_eq!(ordinal(Some(2), 5), 5);
    }

    #[test]
    fn only_two_to_eight_copies_are_accepted() {
        assert!(show_gpu0_as(1).unwrap_err().contains("2 to 8 GPUs"));
        assert!(show_gpu0_as(9).is_err());
    }
}
