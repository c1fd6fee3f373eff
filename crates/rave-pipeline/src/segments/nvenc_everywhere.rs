//! With `--encoder auto` on several GPUs, a job encodes with NVENC only where a session
//! opens on every GPU of `--gpus`: the segments are joined without re-encoding, so one job's
//! segments must all come from one encoder. The first worker to ask decides for the job
//! (`JobSpec::nvenc_everywhere`).

/// Whether an NVENC session opens: first on the worker's own GPU (`open_own`), then on
/// each other GPU of `gpus` (`open_on`). The first refusal, naming the other GPU it came
/// from and why that stops NVENC on every GPU.
pub fn open_on_every_gpu(
    own: usize,
    gpus: &[usize],
    open_own: impl FnOnce() -> Result<(), String>,
    mut open_on: impl FnMut(usize) -> Result<(), String>,
) -> Result<(), String> {
    open_own()?;
    for &gpu in gpus.iter().filter(|&&g| g != own) {
        open_on(gpu).map_err(|why| {
            format!(
                "GPU {gpu} of --gpus cannot ({why}), and the segments of one job must come from one encoder to be joined"
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvenc_needs_every_gpu_of_the_job() {
        let asked = std::cell::RefCell::new(Vec::new());
        let open_on = |gpu: usize| {
            asked.borrow_mut().push(gpu);
            match gpu {
                2 => Err("no NVENC on this GPU".to_string()),
                _ => Ok(()),
            }
        };
        assert_eq!(open_on_every_gpu(0, &[0, 1], || Ok(()), open_on), Ok(()));
        assert_eq!(*asked.borrow(), [1], "its own GPU is not asked twice");
        let refused = open_on_every_gpu(1, &[0, 1, 2, 3], || Ok(()), open_on).unwrap_err();
        assert!(
            refused.starts_with("GPU 2 of --gpus cannot (no NVENC on this GPU)"),
            "{refused}"
        );
        assert_eq!(*asked.borrow(), [1, 0, 2], "stops at the first refusal");
        // Its own GPU's refusal is passed on as it is, and no other is asked.
        let own = open_on_every_gpu(0, &[0, 1], || Err("busy".into()), open_on);
        assert_eq!(own, Err("busy".into()));
        assert_eq!(asked.borrow().len(), 3);
    }
}
