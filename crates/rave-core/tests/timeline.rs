//! The diagnostic timeline (`RAVE_TIMELINE`): marks land in the file by section, counted per
//! kind, in time order. Its own test binary: the recorder reads the variable once a process.

use rave_core::gpu::timeline;

#[test]
fn marks_are_written_by_section_counted_per_kind() {
    let path = std::env::temp_dir().join(format!("rave-timeline-{}.csv", std::process::id()));
    // SAFETY: set before any thread of this test binary reads the environment (the only
    // test here).
    unsafe { std::env::set_var("RAVE_TIMELINE", &path) };
    assert!(timeline::enabled());
    timeline::host("a");
    timeline::host("b");
    timeline::host("a");
    timeline::section("second");
    timeline::host("a");
    timeline::write().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0], ["section", "what", "seq", "ms"]);
    let keys: Vec<(&str, &str, &str)> = rows[1..].iter().map(|r| (r[0], r[1], r[2])).collect();
    assert_eq!(
        keys,
        [
            ("run", "a", "0"),
            ("run", "b", "0"),
            ("run", "a", "1"),
            ("second", "a", "0")
        ]
    );
    let ms: Vec<f64> = rows[1..].iter().map(|r| r[3].parse().unwrap()).collect();
    assert!(ms.windows(2).all(|w| w[0] <= w[1]), "{ms:?}");
}
