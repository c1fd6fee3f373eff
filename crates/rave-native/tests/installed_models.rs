//! The models scripts/setup.sh installs are recognised as the architecture they are (each
//! test is skipped, saying so, where the model is not installed).

mod common;

use rave_native::network::CompactTail;
use rave_native::{Architecture, Storage, recognise_file};

fn check(name: &str, arch: &str, scale: u32, storage: Storage) -> Option<rave_native::Network> {
    let path = common::installed_model(name)?;
    let net = recognise_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    println!("{name}: {net}");
    assert_eq!(net.architecture.name(), arch, "{name}");
    assert_eq!(net.scale, scale, "{name}");
    assert_eq!(net.storage, storage, "{name}");
    Some(net)
}

fn compact_tail(net: &rave_native::Network) -> &CompactTail {
    match &net.architecture {
        Architecture::Compact(c) => {
            assert_eq!(c.body.len(), 17, "conv_first + 16 body convs");
            assert_eq!(c.body[0].conv.out_channels, 64);
            &c.tail
        }
        Architecture::Rrdb(_) => panic!("not compact"),
    }
}

#[test]
fn animevideov3_x2_is_compact_with_the_folded_tail() {
    for (name, storage) in [
        ("realesr-animevideov3-x2", Storage::F32),
        ("realesr-animevideov3-x2-fp16", Storage::F16),
    ] {
        if let Some(net) = check(name, "SRVGGNetCompact", 2, storage) {
            assert!(matches!(compact_tail(&net), CompactTail::Folded(t) if t.block == 2));
        }
    }
}

#[test]
fn animevideov3_x3_and_x4_are_compact() {
    if let Some(net) = check(
        "realesr-animevideov3-x3",
        "SRVGGNetCompact",
        3,
        Storage::F32,
    ) {
        assert_eq!(
            compact_tail(&net),
            &CompactTail::CubicResize { factor: 0.75 }
        );
    }
    if let Some(net) = check(
        "realesr-animevideov3-x4",
        "SRVGGNetCompact",
        4,
        Storage::F32,
    ) {
        assert_eq!(compact_tail(&net), &CompactTail::Residual);
    }
}

#[test]
fn x4plus_models_are_rrdbnet() {
    for (name, blocks) in [("realesrgan-x4plus", 23), ("realesrgan-x4plus-anime", 6)] {
        if let Some(net) = check(name, "RRDBNet", 4, Storage::F32) {
            let Architecture::Rrdb(r) = &net.architecture else {
                unreachable!()
            };
            assert_eq!(r.blocks.len(), blocks, "{name}");
            assert_eq!(r.conv_first.out_channels, 64);
            assert_eq!(r.blocks[0].dense[0].convs[0].out_channels, 32);
            assert_eq!(r.upsample.len(), 2);
        }
    }
}
