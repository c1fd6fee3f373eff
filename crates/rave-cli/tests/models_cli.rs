//! `rave models`: the installed models with their scale, precision, batch axis, side
//! multiple and fixed input size, a model
//! that cannot run with its problem, and the engine each would run on (recognised from the
//! graph, never the name).

mod common;

use common::*;

#[test]
fn models_lists_installed_models_with_their_scale() {
    let dir = scratch();
    std::fs::copy(fixture("nearest_x2.onnx"), dir.path().join("tiny-x2.onnx")).unwrap();
    std::fs::copy(fixture("rank3.onnx"), dir.path().join("broken.onnx")).unwrap();
    std::fs::copy(
        fixture("blocks4_x2.onnx"),
        dir.path().join("unshuffle.onnx"),
    )
    .unwrap();
    std::fs::copy(
        fixture("fixed_64x48_x2.onnx"),
        dir.path().join("fixed.onnx"),
    )
    .unwrap();
    std::fs::copy(
        fixture("arch/compact_x2.onnx"),
        dir.path().join("compact-x2.onnx"),
    )
    .unwrap();
    let o = run(&[
        "models",
        "--models-dir",
        dir.path().to_str().unwrap(),
        "--json",
    ]);
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let models = v["models"].as_array().unwrap();
    let tiny = models
        .iter()
        .find(|m| m["name"] == "tiny-x2")
        .expect("listed");
    assert_eq!(tiny["scale"], 2);
    assert_eq!(tiny["side_multiple"], 1);
    // A model whose sides must be multiples of 4 says so (its frames are padded to them).
    let unshuffle = models
        .iter()
        .find(|m| m["name"] == "unshuffle")
        .expect("listed");
    assert_eq!(unshuffle["side_multiple"], 4, "{unshuffle}");
    assert_eq!(unshuffle["fixed_width"], serde_json::Value::Null);
    // A fixed-size model gives its one size, as width and height.
    let fixed = models
        .iter()
        .find(|m| m["name"] == "fixed")
        .expect("listed");
    assert_eq!(
        (&fixed["fixed_width"], &fixed["fixed_height"]),
        (&64.into(), &48.into()),
        "{fixed}"
    );
    assert_eq!(tiny["fixed_width"], serde_json::Value::Null);
    let broken = models
        .iter()
        .find(|m| m["name"] == "broken")
        .expect("listed");
    assert!(broken["problem"].as_str().unwrap().contains("rank 3"));
    // The engine each would get: recognised from the graph, not the name.
    assert_eq!(tiny["engine"]["engine"], "onnxruntime", "{tiny}");
    assert!(
        tiny["engine"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("not SRVGGNetCompact: the input is read by 0 Conv nodes"),
        "{tiny}"
    );
    let compact = models
        .iter()
        .find(|m| m["name"] == "compact-x2")
        .expect("listed");
    // Recognised, but its 8 features are not what the native kernels take: ONNX Runtime,
    // saying so.
    assert_eq!(compact["engine"]["engine"], "onnxruntime", "{compact}");
    assert_eq!(compact["engine"]["architecture"], "SRVGGNetCompact");
    assert!(
        compact["engine"]["reason"]
            .as_str()
            .unwrap()
            .ends_with("is recognised, but 8 features: the native kernels take 64"),
        "{compact}"
    );
    let o = run(&["models", "--models-dir", dir.path().to_str().unwrap()]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    // The sizes a model takes, where not any, under its line.
    assert!(
        text.contains("    input: sides that are multiples of 4 (frames are padded to them)"),
        "{text}"
    );
    assert!(
        text.contains("    input: 64x48 only (frames are cut into tiles of that size"),
        "{text}"
    );
    assert_eq!(
        text.matches("    input: ").count(),
        2,
        "only the two: {text}"
    );
    assert!(
        text.contains("    engine: ONNX Runtime: SRVGGNetCompact x2 (8 features, 1 body convs, residual tail, fp32) is recognised, but 8 features"),
        "{text}"
    );
    assert!(
        text.contains("    engine: ONNX Runtime: not SRVGGNetCompact: "),
        "{text}"
    );
    // A model that cannot run at all gets its problem, not an engine it would run on.
    let lines: Vec<&str> = text.lines().collect();
    let rank3 = lines
        .iter()
        .position(|l| l.contains("rank 3"))
        .expect("problem line");
    assert!(
        lines
            .get(rank3 + 1)
            .is_none_or(|l| !l.trim_start().starts_with("engine:")),
        "{text}"
    );
}

/// The native recogniser describes the models the native engine runs, so they are listed
/// with their scale and engine where ONNX Runtime is not installed; only the others need it.
#[test]
fn models_the_native_engine_runs_are_described_without_onnx_runtime() {
    let dir = scratch();
    let models = dir.path().join("models");
    std::fs::create_dir(&models).unwrap();
    std::fs::copy(fixture("nearest_x2.onnx"), models.join("tiny-x2.onnx")).unwrap();
    std::fs::copy(
        fixture("arch/rrdb_x4_nf32_fp16.onnx"),
        models.join("rrdb-x4.onnx"),
    )
    .unwrap();
    let o = rave()
        .args(["models", "--models-dir", models.to_str().unwrap(), "--json"])
        .env("RAVE_HOME", dir.path())
        .env_remove("ORT_DYLIB_PATH")
        .output()
        .unwrap();
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let listed = v["models"].as_array().unwrap();
    let find = |name: &str| listed.iter().find(|m| m["name"] == name).expect(name);
    let rrdb = find("rrdb-x4");
    assert_eq!(rrdb["engine"]["engine"], "native", "{rrdb}");
    assert_eq!(rrdb["scale"], 4, "{rrdb}");
    assert_eq!(rrdb["precision"], "fp16", "{rrdb}");
    assert!(rrdb["problem"].is_null(), "{rrdb}");
    let tiny = find("tiny-x2");
    assert!(tiny["scale"].is_null(), "{tiny}");
    assert_eq!(tiny["problem"], "ONNX Runtime not found: scale unknown");
}
