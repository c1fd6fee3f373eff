//! `decide`'s cases: whole frames, tiles of a fixed-size model, padding to a side multiple
//! or a fixed size, `--tile` rounding and refusals, overlaps.

use super::*;
use rave_core::types::PixelFormat;

fn meta(fixed: Option<(u32, u32)>) -> ModelMetadata {
    let (min, max) = match fixed {
        Some((w, h)) => ((h, w), (h, w)),
        None => ((1, 1), (u32::MAX, u32::MAX)),
    };
    ModelMetadata {
        name: "m".into(),
        scale: 2,
        input_name: "input".into(),
        output_name: "output".into(),
        input_channels: 3,
        min_input_hw: min,
        max_input_hw: max,
        tensor_format: PixelFormat::RgbPlanarF32,
        fixed_batch: Some(1),
        side_multiple: 1,
    }
}

#[test]
fn a_block_model_gets_the_frame_padded_or_tiles_of_its_multiple() {
    let blocks = ModelMetadata {
        side_multiple: 8,
        ..meta(None)
    };
    let frame = (1366, 766);
    let auto = request(TileMode::Auto);
    let t = decide(&auto, Path::new(M), &blocks, frame).unwrap();
    assert_eq!(t.tiles, Some(((1368, 768), 0)), "one tile shares nothing");
    assert_eq!(t.report.grid, Some([1, 1]));
    assert!(
        t.report
            .describe()
            .starts_with("one 1368x768 tile: the model takes")
    );
    assert!(
        t.report.reason.ends_with(
            "multiples of 8: the 1366x766 frame is padded to 1368x768 (mirrored at its right and bottom borders) and the padding cut from the output"
        ),
        "{}",
        t.report.reason
    );
    // A frame of multiples runs whole.
    let t = decide(&auto, Path::new(M), &blocks, (1920, 1080)).unwrap();
    assert_eq!(t.tiles, None);
    // A tile size is rounded down to a multiple.
    let sized = request(TileMode::Size {
        width: 100,
        height: 100,
    });
    let t = decide(&sized, Path::new(M), &blocks, (1920, 1080)).unwrap();
    assert_eq!(t.tiles.map(|(tile, _)| tile), Some((96, 96)));
    assert_eq!(
        t.report.reason,
        "--tile 100x100, rounded to 96x96: the model takes inputs whose sides are multiples of 8"
    );
    // A model 64 wide whose height is any multiple of 8, in words.
    let one_fixed = ModelMetadata {
        min_input_hw: (1, 64),
        max_input_hw: (u32::MAX, 64),
        ..blocks.clone()
    };
    assert_eq!(
        accepted(&one_fixed),
        "inputs 64 wide and a multiple of 8 high"
    );
    let off = request(TileMode::Off);
    let e = decide(&off, Path::new(M), &blocks, frame).unwrap_err();
    assert!(
        e.to_string()
            .contains("takes inputs whose sides are multiples of 8, the video is 1366x766; --tile off gives it whole frames (--tile auto pads it)"),
        "{e}"
    );
}

fn request(mode: TileMode) -> TileRequest {
    TileRequest {
        mode,
        overlap: DEFAULT_OVERLAP,
        overlap_given: false,
    }
}

const M: &str = "/models/m.onnx";

#[test]
fn auto_tiles_a_fixed_size_model_at_its_size_and_nothing_else() {
    let auto = request(TileMode::Auto);
    let t = decide(&auto, Path::new(M), &meta(Some((64, 64))), (150, 90)).unwrap();
    assert_eq!(t.tiles, Some(((64, 64), 16)));
    assert_eq!(
        t.report.describe(),
        "tiles 64x64, overlap 16, 3x2 per frame: the model takes fixed 64x64 inputs"
    );
    let t = decide(&auto, Path::new(M), &meta(None), (150, 90)).unwrap();
    assert_eq!(t.tiles, None);
    assert_eq!(t.report.describe(), "off: the model takes the whole frame");
    let t = decide(&auto, Path::new(M), &meta(Some((150, 90))), (150, 90)).unwrap();
    assert_eq!(t.tiles, None, "a fixed size that is the frame's");
}

#[test]
fn a_frame_smaller_than_a_fixed_size_model_is_padded_to_it() {
    let t = decide(
        &request(TileMode::Auto),
        Path::new(M),
        &meta(Some((64, 48))),
        (32, 32),
    )
    .unwrap();
    assert_eq!(t.tiles, Some(((64, 48), 0)));
    assert_eq!(
        t.report.reason,
        "the model takes fixed 64x48 inputs: the 32x32 frame is padded to 64x48 (mirrored at its right and bottom borders) and the padding cut from the output"
    );
    // Wider than the model but not as tall: cut across, padded down.
    let t = decide(
        &request(TileMode::Auto),
        Path::new(M),
        &meta(Some((64, 64))),
        (150, 40),
    )
    .unwrap();
    assert_eq!(
        (t.tiles, t.report.grid),
        (Some(((64, 64), 16)), Some([3, 1]))
    );
    assert!(
        t.report
            .reason
            .contains("padded to 150x64 (mirrored at its bottom border)"),
        "{}",
        t.report.reason
    );
    // --tile off still gives it the frame as it is: refused, saying auto pads it.
    let e = decide(
        &request(TileMode::Off),
        Path::new(M),
        &meta(Some((64, 48))),
        (32, 32),
    )
    .unwrap_err();
    assert_eq!(e.family().exit_code(), 5);
    assert!(e.to_string().ends_with("(--tile auto pads it)"), "{e}");
}

#[test]
fn a_tile_size_runs_where_the_model_takes_it() {
    let size = request(TileMode::Size {
        width: 48,
        height: 40,
    });
    let t = decide(&size, Path::new(M), &meta(None), (150, 90)).unwrap();
    assert_eq!(t.tiles, Some(((48, 40), 16)));
    assert_eq!(
        t.report.describe(),
        "tiles 48x40, overlap 16, 5x4 per frame: --tile 48x40"
    );
    let e = decide(&size, Path::new(M), &meta(Some((64, 64))), (150, 90)).unwrap_err();
    assert_eq!(e.family().exit_code(), 2);
    assert!(e.to_string().contains("takes fixed 64x64 inputs"), "{e}");
    let big = request(TileMode::Size {
        width: 512,
        height: 512,
    });
    let t = decide(&big, Path::new(M), &meta(None), (150, 90)).unwrap();
    assert_eq!(t.tiles, None);
    assert!(t.report.reason.contains("one tile"), "{}", t.report.reason);
    let off = decide(
        &request(TileMode::Off),
        Path::new(M),
        &meta(None),
        (150, 90),
    );
    assert_eq!(off.unwrap().report.describe(), "off: --tile off");
    // Whole frames to a fixed-size model of another size: a model problem, found here;
    // a --tile of the frame's size, a tile the model does not take (exit 2).
    let whole = |mode| {
        decide(
            &request(mode),
            Path::new(M),
            &meta(Some((64, 48))),
            (150, 90),
        )
    };
    let e = whole(TileMode::Off).unwrap_err();
    assert_eq!(e.family().exit_code(), 5, "{e}");
    assert!(e.to_string().contains("gives it whole frames"), "{e}");
    let e = whole(TileMode::Size {
        width: 200,
        height: 200,
    })
    .unwrap_err();
    assert_eq!(e.family().exit_code(), 2, "{e}");
    assert!(e.to_string().contains("not tiles of 150x90"), "{e}");
}

#[test]
fn bad_requests_are_option_errors_before_anything_runs() {
    let r = |width, height, overlap| TileRequest {
        mode: TileMode::Size { width, height },
        overlap,
        overlap_given: true,
    };
    assert!(r(64, 64, 16).validate().is_ok());
    assert!(TileRequest::default().validate().is_ok());
    assert_eq!(r(0, 5, 0).validate().unwrap_err().family().exit_code(), 2);
    // The overlap against the tiles that run: only the sides they cut count.
    for bad in [r(20, 40, 10), r(64, 64, 32)] {
        let e = decide(&bad, Path::new(M), &meta(None), (150, 90)).unwrap_err();
        assert_eq!(e.family().exit_code(), 2, "{e}");
    }
    let e = decide(&r(20, 40, 10), Path::new(M), &meta(None), (150, 90));
    let e = e.unwrap_err().to_string();
    assert!(e.starts_with("--tile-overlap 10: tiles of 20x40"), "{e}");
    assert!(e.contains("at most 9"), "{e}");
    // 100x30 tiles over a 300x30 frame cut only across, where 30 is under half of 100.
    let t = decide(&r(100, 30, 30), Path::new(M), &meta(None), (300, 30)).unwrap();
    assert_eq!(t.tiles, Some(((100, 30), 30)));
    // An overlap too large for the model's own size, found once the model is read.
    let wide = TileRequest {
        mode: TileMode::Auto,
        overlap: 40,
        overlap_given: true,
    };
    let e = decide(&wide, Path::new(M), &meta(Some((64, 64))), (150, 90)).unwrap_err();
    assert_eq!(e.family().exit_code(), 2);
    assert!(e.to_string().starts_with("--tile-overlap 40: "), "{e}");
}

#[test]
fn the_default_overlap_is_lowered_for_tiles_too_small_for_it_and_a_given_one_is_not() {
    let auto = request(TileMode::Auto);
    let t = decide(&auto, Path::new(M), &meta(Some((32, 32))), (160, 90)).unwrap();
    assert_eq!(t.tiles, Some(((32, 32), 15)));
    assert!(
        t.report.reason.ends_with(
            "overlap lowered from 16 to 15 px for tiles of 32x32 (--tile-overlap sets it)"
        ),
        "{}",
        t.report.reason
    );
    let t = decide(&auto, Path::new(M), &meta(Some((1, 1))), (4, 3)).unwrap();
    assert_eq!(t.tiles, Some(((1, 1), 0)));
    // A side the tile covers whole does not count: tiles 36 tall on a 36-tall frame.
    let t = decide(&auto, Path::new(M), &meta(Some((40, 36))), (160, 36)).unwrap();
    assert_eq!(t.tiles, Some(((40, 36), 16)));
    // Tiles of the user's size without --tile-overlap are lowered too.
    let small = request(TileMode::Size {
        width: 20,
        height: 24,
    });
    assert!(small.validate().is_ok());
    let t = decide(&small, Path::new(M), &meta(None), (160, 90)).unwrap();
    assert_eq!(t.tiles, Some(((20, 24), 9)));
    let given = TileRequest {
        overlap_given: true,
        ..request(TileMode::Auto)
    };
    let e = decide(&given, Path::new(M), &meta(Some((32, 32))), (160, 90)).unwrap_err();
    assert!(e.to_string().starts_with("--tile-overlap 16: "), "{e}");
}

#[test]
fn the_manifest_records_the_request() {
    assert_eq!(TileRequest::default().describe(), "auto, overlap 16");
    assert_eq!(request(TileMode::Off).describe(), "off");
    let r = request(TileMode::Size {
        width: 64,
        height: 48,
    });
    assert_eq!(r.describe(), "64x48, overlap 16");
}
