//! Which GPUs a run uses (`--gpus LIST|all`, issue 14): one, as `--gpu` always chose, or
//! several, each running its own segment workers. A list of several is checked against the
//! GPUs the driver sees before any work, so a GPU that is not there is one clear error
//! rather than a worker failing later; a list of one is `--gpu` (checked where it is today).

use rave_core::error::{EngineError, Result};

/// Highest GPU index accepted (as for `--gpu`).
pub const MAX_GPU_INDEX: usize = 63;

/// What `--gpus` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuSelection {
    /// These GPUs, in this order (no repeats).
    List(Vec<usize>),
    /// Every GPU the driver sees.
    All,
}

/// `--gpus`: `all`, or GPU indices separated by commas (`0,1`), each 0 to 63, none twice.
pub fn parse_gpus(text: &str) -> std::result::Result<GpuSelection, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("all") {
        return Ok(GpuSelection::All);
    }
    let mut list = Vec::new();
    for part in t.split(',') {
        let i: usize = part.trim().parse().map_err(|_| {
            format!("'{part}' is not a GPU index; use all, or indices like 0,1 as rave devices lists them")
        })?;
        if i > MAX_GPU_INDEX {
            return Err(format!("GPU {i} is out of range; use 0 to {MAX_GPU_INDEX}"));
        }
        if list.contains(&i) {
            return Err(format!("GPU {i} is listed twice"));
        }
        list.push(i);
    }
    Ok(GpuSelection::List(list))
}

/// The GPUs to run on for `selection` (`None`: `--gpu`'s `single`), where `visible` asks
/// the driver how many GPUs it sees (not for `--gpus 0`, which is today's default run).
/// `all` without a usable GPU is `single`, so `--device auto` still falls back to the CPU;
/// a list naming a GPU the driver does not show (any GPU where it shows none) is refused.
pub fn resolve(
    selection: Option<&GpuSelection>,
    single: usize,
    visible: impl FnOnce() -> Result<usize>,
) -> Result<Vec<usize>> {
    match selection {
        None => Ok(vec![single]),
        Some(GpuSelection::List(list)) if list == &[0] => Ok(list.clone()),
        Some(GpuSelection::All) => Ok(match visible() {
            Ok(n) if n > 0 => (0..n).collect(),
            _ => vec![single],
        }),
        Some(GpuSelection::List(list)) => {
            let asked = list
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(",");
            let n = visible().map_err(|e| {
                EngineError::Config(format!(
                    "--gpus {asked}: no GPU can be used ({e}); drop --gpus, or see rave devices"
                ))
            })?;
            if let Some(missing) = list.iter().find(|&&i| i >= n) {
                return Err(EngineError::Config(format!(
                    "--gpus {asked}: GPU {missing} does not exist: this machine has {n} GPU{} (0{}); see rave devices",
                    if n == 1 { "" } else { "s" },
                    if n > 1 {
                        format!(" to {}", n - 1)
                    } else {
                        String::new()
                    }
                )));
            }
            Ok(list.clone())
        }
    }
}

/// The GPU of each of `workers` segment workers over `gpus`, in turn (worker k on
/// `gpus[k % gpus.len()]`), and how many share each worker's GPU.
pub fn assign(gpus: &[usize], workers: usize) -> Vec<(usize, usize)> {
    let n = gpus.len().max(1);
    let on = |g: usize| (0..workers).filter(|k| k % n == g).count();
    (0..workers)
        .map(|k| (gpus.get(k % n).copied().unwrap_or(0), on(k % n)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_all_parse_and_bad_ones_say_why() {
        assert_eq!(parse_gpus("0,1"), Ok(GpuSelection::List(vec![0, 1])));
        assert_eq!(parse_gpus(" 3 "), Ok(GpuSelection::List(vec![3])));
        assert_eq!(parse_gpus("ALL"), Ok(GpuSelection::All));
        assert!(parse_gpus("0,0").unwrap_err().contains("listed twice"));
        assert!(parse_gpus("64").unwrap_err().contains("out of range"));
        assert!(
            parse_gpus("0,x")
                .unwrap_err()
                .contains("'x' is not a GPU index")
        );
        assert!(parse_gpus("").is_err());
    }

    #[test]
    fn several_gpus_are_checked_before_any_work_and_one_is_as_before() {
        let one_gpu = || Ok(1);
        // --gpus 0 is today's run: not even the driver is asked.
        let r = resolve(Some(&GpuSelection::List(vec![0])), 0, || {
            panic!("not asked")
        });
        assert_eq!(r.unwrap(), vec![0]);
        // Another GPU alone is checked like a list.
        let e = resolve(Some(&GpuSelection::List(vec![1])), 0, one_gpu).unwrap_err();
        assert_eq!(e.family().exit_code(), 2);
        assert!(e.to_string().contains("GPU 1 does not exist"), "{e}");
        let no_driver = || Err(EngineError::NoGpu("no driver".into()));
        let e = resolve(Some(&GpuSelection::List(vec![1])), 0, no_driver).unwrap_err();
        assert_eq!(e.family().exit_code(), 2);
        assert_eq!(
            resolve(Some(&GpuSelection::List(vec![1])), 0, || Ok(2)).unwrap(),
            vec![1]
        );
        assert_eq!(resolve(None, 2, || panic!("not asked")).unwrap(), vec![2]);
        let e = resolve(Some(&GpuSelection::List(vec![0, 1])), 0, one_gpu).unwrap_err();
        assert_eq!(e.family().exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "--gpus 0,1: GPU 1 does not exist: this machine has 1 GPU (0); see rave devices"
        );
        let e = resolve(Some(&GpuSelection::List(vec![0, 1])), 0, || {
            Err(EngineError::NoGpu("no driver".into()))
        })
        .unwrap_err();
        assert!(
            e.to_string().contains("--gpus 0,1: no GPU can be used"),
            "{e}"
        );
        let two = resolve(Some(&GpuSelection::List(vec![1, 0])), 0, || Ok(2));
        assert_eq!(two.unwrap(), vec![1, 0]);
        assert_eq!(
            resolve(Some(&GpuSelection::All), 0, || Ok(3)).unwrap(),
            vec![0, 1, 2]
        );
        let none = resolve(Some(&GpuSelection::All), 0, || {
            Err(EngineError::NoGpu("no driver".into()))
        });
        assert_eq!(none.unwrap(), vec![0], "all of none is today's default");
    }

    #[test]
    fn workers_take_the_gpus_in_turn() {
        assert_eq!(assign(&[0], 2), vec![(0, 2), (0, 2)]);
        assert_eq!(assign(&[0, 1], 4), vec![(0, 2), (1, 2), (0, 2), (1, 2)]);
        assert_eq!(assign(&[1, 0], 3), vec![(1, 2), (0, 1), (1, 2)]);
    }
}
