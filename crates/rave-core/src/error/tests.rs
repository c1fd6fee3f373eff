//! The error codes, families and messages.

use super::*;

#[test]
fn codes_are_unique_and_families_map_to_documented_exit_codes() {
    let samples = vec![
        EngineError::Cuda(String::new()),
        EngineError::NoGpu(String::new()),
        EngineError::Inference(String::new()),
        EngineError::ModelMetadata(String::new()),
        EngineError::NotInitialized,
        EngineError::ModelNotFound(String::new()),
        EngineError::RuntimeLibrary(String::new()),
        EngineError::Decode(String::new()),
        EngineError::Encode(String::new()),
        EngineError::Demux(String::new()),
        EngineError::Mux(String::new()),
        EngineError::StreamUnstorable(String::new()),
        EngineError::DimensionMismatch(String::new()),
        EngineError::InvariantViolation(String::new()),
        EngineError::OutputExists(PathBuf::new()),
        EngineError::Config(String::new()),
        EngineError::Cancelled,
        EngineError::OutputInUse(PathBuf::new()),
        EngineError::OutputNameUnusable {
            path: PathBuf::new(),
            reason: String::new(),
        },
        EngineError::CancelledBeforeOutput,
        EngineError::OutputSizeUnsupported {
            encoder: String::new(),
            input: [0, 0],
            scale: 1,
            output: [0, 0],
            needs: String::new(),
            advice: String::new(),
        },
        EngineError::PacketRefused(String::new()),
        EngineError::SeekMissed {
            path: PathBuf::new(),
            wanted: 0,
            got: 1,
        },
        EngineError::WorkFolderMismatch {
            work: PathBuf::new(),
            reason: String::new(),
        },
        EngineError::SegmentsMissing {
            work: PathBuf::new(),
            missing: vec![1],
            total: 2,
            changed: Vec::new(),
            gone: Vec::new(),
        },
        EngineError::SegmentsFailed {
            missing: vec![1],
            total: 2,
            reasons: Vec::new(),
            advice: String::new(),
        },
    ];
    let mut codes: Vec<u16> = samples.iter().map(EngineError::code).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), samples.len(), "duplicate error code");
    assert_eq!(EngineError::Config(String::new()).family().exit_code(), 2);
    assert_eq!(
        EngineError::OutputExists(PathBuf::new())
            .family()
            .exit_code(),
        4
    );
    assert_eq!(
        EngineError::ModelNotFound(String::new())
            .family()
            .exit_code(),
        5
    );
    assert_eq!(EngineError::Cancelled.family().exit_code(), 130);
    assert_eq!(EngineError::CancelledBeforeOutput.family().exit_code(), 130);
    assert_eq!(
        EngineError::OutputInUse(PathBuf::new())
            .family()
            .exit_code(),
        4
    );
    let corrupt = EngineError::CorruptStream {
        path: "a.mkv".into(),
        damage: Box::new(InputDamage {
            frames_read: 7,
            frames_decoded: 7,
            frames_damaged: 3,
            ..Default::default()
        }),
        hint: String::new(),
    };
    assert_eq!(corrupt.family().exit_code(), 3);
    let missing = EngineError::SegmentsMissing {
        work: "w".into(),
        missing: (0..10).collect(),
        total: 12,
        changed: vec!["seg-00003.mp4".into()],
        gone: (4..10).map(|i| format!("seg-{i:05}.mp4")).collect(),
    };
    let text = missing.to_string();
    assert!(
        text.contains("; seg-00003.mp4 was done but no longer matches its checksum")
            && text.contains("; seg-00004.mp4, seg-00005.mp4, seg-00006.mp4, seg-00007.mp4, and 2 more were done but are gone"),
        "{text}"
    );
    assert_eq!(missing.family().exit_code(), 7);
    let failed = EngineError::SegmentsFailed {
        missing: vec![3],
        total: 12,
        reasons: vec!["segment 3 failed on GPU 1 (x) and on GPU 0 (y)".into()],
        advice: "run it again".into(),
    };
    assert_eq!(failed.family().exit_code(), 7);
    assert_eq!(
        failed.to_string(),
        "1 of 12 segments were not upscaled: segment 3 failed on GPU 1 (x) and on GPU 0 (y); run it again"
    );
    assert!(
        missing.to_string().starts_with(
            "w: 10 of 12 segments are not done (segments 0, 1, 2, 3, 4, 5, 6, 7, and 2 more)"
        ),
        "{missing}"
    );
    assert!(
        corrupt
            .to_string()
            .starts_with("a.mkv: damaged input: 3 of 7 decoded frames damaged"),
        "{corrupt}"
    );
}
