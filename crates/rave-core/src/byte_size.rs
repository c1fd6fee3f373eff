//! Sizes of memory as people write them on a command line (`6GiB`, `512M`, `8e9`), parsed
//! to bytes.
//!
//! Binary units (KiB, MiB, GiB, TiB, and the bare letters K, M, G, T as `free` and
//! `ulimit` use them) are powers of 1024; decimal units (kB, MB, GB, TB) powers of 1000; a
//! bare number is bytes. Case does not matter, a space before the unit is allowed, and a
//! fraction is fine where the result is a whole number of bytes or more (`1.5GiB`).

/// Bytes in `text`, or why it is not a size.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E'))
        .unwrap_or(t.len());
    // "8e9" is a number; "8EiB" would be exbibytes, which no GPU has: refuse as a unit.
    let (number, unit) = t.split_at(split);
    let unit = unit.trim();
    let what = || {
        format!(
            "'{text}' is not a size: write a number and a unit, e.g. 6GiB, 512MiB, 8GB (or bytes)"
        )
    };
    let value: f64 = number.parse().map_err(|_| what())?;
    let multiplier: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024f64.powi(2),
        "g" | "gib" => 1024f64.powi(3),
        "t" | "tib" => 1024f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        _ => return Err(what()),
    };
    let bytes = value * multiplier;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!(
            "'{text}' is not a usable size: it is larger than any memory (at most 16EiB)"
        ));
    }
    if bytes < 1.0 {
        return Err(format!(
            "'{text}' is not a usable size: it must be at least one byte"
        ));
    }
    Ok(bytes.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_the_usual_spellings() {
        for (text, bytes) in [
            ("6GiB", 6u64 << 30),
            ("6gib", 6 << 30),
            ("6G", 6 << 30),
            ("6 GiB", 6 << 30),
            ("1.5GiB", 3 << 29),
            ("512MiB", 512 << 20),
            ("512m", 512 << 20),
            ("8GB", 8_000_000_000),
            ("8e9", 8_000_000_000),
            ("4096", 4096),
            ("64KiB", 65536),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
    }

    #[test]
    fn what_is_not_a_size_is_refused_with_an_example() {
        for text in [
            "", "GiB", "6 gigs", "-1GiB", "0", "0.0001B", "6EiB", "1e30TiB",
        ] {
            let e = parse_size(text).unwrap_err();
            assert!(e.contains("size"), "{text}: {e}");
        }
        assert!(parse_size("abc").unwrap_err().contains("e.g. 6GiB"));
        assert!(
            parse_size("1e30TiB")
                .unwrap_err()
                .contains("larger than any memory")
        );
        assert!(parse_size("0").unwrap_err().contains("at least one byte"));
    }
}
