//! Picture-quality measures used by tests and benchmarks to compare outputs.

/// Peak signal-to-noise ratio in dB between two equally long sample planes with the given
/// peak value. Identical planes give `f64::INFINITY`.
pub fn psnr<T: Copy + Into<f64>>(a: &[T], b: &[T], peak: f64) -> f64 {
    assert_eq!(a.len(), b.len(), "psnr needs equally sized planes");
    let mse = a
        .iter()
        .zip(b)
        .map(|(x, y)| {
            let d = (*x).into() - (*y).into();
            d * d
        })
        .sum::<f64>()
        / a.len().max(1) as f64;
    if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (peak * peak / mse).log10()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psnr_of_known_error() {
        let a = [0u16, 0, 0, 0];
        let b = [1u16, 1, 1, 1];
        assert!((psnr(&a, &b, 255.0) - 48.1308).abs() < 1e-3);
        assert!(psnr(&a, &a, 255.0).is_infinite());
    }
}
