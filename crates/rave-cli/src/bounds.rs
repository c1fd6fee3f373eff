//! The accepted range of every numeric option, as clap value parsers: a value outside it is
//! a usage error (exit 2) that names the value and the range (clap adds the option's name).
//! Negative numbers are parsed too (the options set `allow_negative_numbers`), so `-5` is
//! "out of range", not an unknown argument.

use std::num::IntErrorKind;

use rave_pipeline::TileMode;

/// Inference threads: 0 (one per core) up to this.
pub const MAX_THREADS: i64 = 1024;
/// Frames one channel between stages may hold.
pub const MAX_CHANNEL: usize = 64;
/// Frame counts (`--max-frames`, `benchmark --frames`): about 190 days at 60 fps.
pub const MAX_FRAMES: i64 = 1_000_000_000;
/// Highest `--gpu` ordinal.
pub const MAX_GPU: i64 = 63;
/// Largest TensorRT workspace, in MiB (1 TiB).
pub const MAX_WORKSPACE_MIB: i64 = 1 << 20;
/// Longest batch deadline, in milliseconds.
pub const MAX_DEADLINE_MS: f64 = 10_000.0;
/// Largest tile side, in input pixels.
pub const MAX_TILE: u32 = 16_384;
/// Largest tile overlap, in input pixels.
pub const MAX_TILE_OVERLAP: i64 = 4_096;

/// A whole number in `lo..=hi`.
pub fn whole<T: TryFrom<i64>>(
    lo: i64,
    hi: i64,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
    whole_in(lo, hi, None)
}

/// A whole number in `lo..=hi`; `accepted` replaces "lo to hi" in the message.
pub fn whole_in<T: TryFrom<i64>>(
    lo: i64,
    hi: i64,
    accepted: Option<&'static str>,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let range = accepted.map_or_else(|| format!("{lo} to {hi}"), str::to_string);
        let v = match s.trim().parse::<i64>() {
            Ok(v) => v,
            Err(e)
                if matches!(
                    e.kind(),
                    IntErrorKind::PosOverflow | IntErrorKind::NegOverflow
                ) =>
            {
                return Err(format!("out of range; use {range}"));
            }
            Err(_) => return Err(format!("not a whole number; use {range}")),
        };
        if !(lo..=hi).contains(&v) {
            return Err(format!("out of range; use {range}"));
        }
        T::try_from(v).map_err(|_| format!("out of range; use {range}"))
    }
}

/// A finite decimal number in `lo..=hi`.
pub fn decimal(
    lo: f64,
    hi: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("not a number; use {lo} to {hi}"))?;
        if !v.is_finite() || !(lo..=hi).contains(&v) {
            return Err(format!("out of range; use {lo} to {hi}"));
        }
        Ok(v)
    }
}

/// An option where a value belongs (`--tile --json`): the options whose values may start
/// with a hyphen (so `-4x4` is "out of range", not an unknown argument) say so rather than
/// read the option as a malformed value.
fn option_for_value(s: &str) -> Result<(), String> {
    match s.starts_with("--") {
        true => Err(format!(
            "a value is required, and '{s}' is the next option, not a value"
        )),
        false => Ok(()),
    }
}

/// `--channels D,P,I`: three capacities of 1 to [`MAX_CHANNEL`].
pub fn capacities(s: &str) -> Result<[usize; 3], String> {
    option_for_value(s)?;
    let shape = || format!("use three capacities of 1 to {MAX_CHANNEL}, like 4,2,4");
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let [d, p, i] = parts.as_slice() else {
        return Err(format!("not three numbers; {}", shape()));
    };
    let one = |v: &str| -> Result<usize, String> {
        match v.parse::<i128>() {
            Ok(n) if (1..=MAX_CHANNEL as i128).contains(&n) => Ok(n as usize),
            Ok(n) => Err(format!("{n} is out of range; {}", shape())),
            Err(_) => Err(format!("'{v}' is not a whole number; {}", shape())),
        }
    };
    Ok([one(d)?, one(p)?, one(i)?])
}

/// `--tile auto|off|WxH`, W and H 1 to [`MAX_TILE`].
pub fn tile(s: &str) -> Result<TileMode, String> {
    option_for_value(s)?;
    let use_ = || format!("use auto, off or WxH with W and H 1 to {MAX_TILE}, like 256x256");
    match s.trim().to_ascii_lowercase().as_str() {
        "auto" => return Ok(TileMode::Auto),
        "off" => return Ok(TileMode::Off),
        _ => {}
    }
    let Some((w, h)) = s.trim().split_once(['x', 'X']) else {
        return Err(format!("not a tile size; {}", use_()));
    };
    let side = |v: &str| -> Result<u32, String> {
        match v.trim().parse::<i128>() {
            Ok(n) if (1..=i128::from(MAX_TILE)).contains(&n) => Ok(n as u32),
            Ok(n) => Err(format!("{n} is out of range; {}", use_())),
            Err(_) => Err(format!("'{v}' is not a whole number; {}", use_())),
        }
    };
    Ok(TileMode::Size {
        width: side(w)?,
        height: side(h)?,
    })
}

/// Smallest `--vram-limit`: 16 MiB (no model runs in less; smaller is a typo).
pub const MIN_VRAM_LIMIT: u64 = 16 << 20;

/// `--vram-limit`: a size such as 6GiB, at least [`MIN_VRAM_LIMIT`].
pub fn vram_size(s: &str) -> Result<usize, String> {
    let bytes = rave_core::byte_size::parse_size(s)?;
    if bytes < MIN_VRAM_LIMIT {
        return Err(format!(
            "'{s}' is below the smallest budget, 16MiB (a number without a unit counts bytes: write 6GiB or 512MiB)"
        ));
    }
    usize::try_from(bytes).map_err(|_| format!("'{s}' is larger than this machine can address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vram_budgets_are_sizes_with_units_and_not_tiny() {
        assert_eq!(vram_size("6GiB"), Ok(6 << 30));
        assert_eq!(vram_size("512MiB"), Ok(512 << 20));
        assert_eq!(vram_size("8GB"), Ok(8_000_000_000));
        let e = vram_size("4096").unwrap_err();
        assert!(e.contains("below the smallest budget, 16MiB"), "{e}");
        let e = vram_size("lots").unwrap_err();
        assert!(e.contains("is not a size"), "{e}");
    }

    #[test]
    fn whole_numbers_outside_the_range_say_so_with_the_range() {
        let threads = whole::<usize>(0, MAX_THREADS);
        assert_eq!(threads("8"), Ok(8));
        assert_eq!(threads("0"), Ok(0));
        assert_eq!(threads("99999"), Err("out of range; use 0 to 1024".into()));
        assert_eq!(threads("-1"), Err("out of range; use 0 to 1024".into()));
        assert_eq!(
            threads("99999999999999999999999"),
            Err("out of range; use 0 to 1024".into())
        );
        assert_eq!(
            threads("many"),
            Err("not a whole number; use 0 to 1024".into())
        );
        let crf = whole_in::<u32>(0, 63, Some("0 to 63"));
        assert_eq!(crf("-5"), Err("out of range; use 0 to 63".into()));
    }

    #[test]
    fn decimals_must_be_finite_and_in_range() {
        let ms = decimal(0.0, MAX_DEADLINE_MS);
        assert_eq!(ms("8.5"), Ok(8.5));
        for bad in ["-1", "20000", "NaN", "inf"] {
            assert!(ms(bad).unwrap_err().contains("out of range"), "{bad}");
        }
        assert!(ms("soon").unwrap_err().contains("not a number"));
    }

    #[test]
    fn capacities_are_three_bounded_numbers() {
        assert_eq!(capacities("4,2,4"), Ok([4, 2, 4]));
        assert_eq!(capacities(" 1, 64 ,1"), Ok([1, 64, 1]));
        let err = capacities("99999999999,1,1").unwrap_err();
        assert!(
            err.contains("99999999999 is out of range") && err.contains("1 to 64"),
            "{err}"
        );
        assert!(capacities("0,1,1").unwrap_err().contains("out of range"));
        assert!(capacities("4,2").unwrap_err().contains("not three numbers"));
        assert!(
            capacities("a,b,c")
                .unwrap_err()
                .contains("'a' is not a whole number")
        );
    }

    #[test]
    fn tiles_are_auto_off_or_a_bounded_size() {
        assert_eq!(tile("auto"), Ok(TileMode::Auto));
        assert_eq!(tile("OFF"), Ok(TileMode::Off));
        assert_eq!(
            tile("64x48"),
            Ok(TileMode::Size {
                width: 64,
                height: 48
            })
        );
        assert!(
            tile("0x5")
                .unwrap_err()
                .starts_with("0 is out of range; use auto, off or WxH")
        );
        assert!(tile("abc").unwrap_err().starts_with("not a tile size"));
        assert!(
            tile("64x")
                .unwrap_err()
                .contains("'' is not a whole number")
        );
        assert!(tile("99999x64").unwrap_err().contains("out of range"));
        assert!(tile("-4x4").unwrap_err().contains("out of range"));
        let next_option = "a value is required, and '--json' is the next option, not a value";
        assert_eq!(tile("--json"), Err(next_option.into()));
        assert_eq!(capacities("--json"), Err(next_option.into()));
    }
}
