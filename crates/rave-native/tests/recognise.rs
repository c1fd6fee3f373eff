//! The recogniser on the fixtures of tools/make_arch_fixtures.py: what it matches, what it
//! refuses and why, and that the weights it reads are the file's initializers.

mod common;

use prost::Message;
use rave_native::network::{CompactTail, Conv3x3};
use rave_native::proto::ModelProto;
use rave_native::{Architecture, Network, Refusal, Storage, recognise_file, tensor};

fn arch(name: &str) -> std::path::PathBuf {
    common::fixture(&format!("arch/{name}.onnx"))
}

fn recognised(name: &str) -> Network {
    recognise_file(&arch(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn refusal(name: &str) -> String {
    match recognise_file(&arch(name)) {
        Ok(net) => panic!("{name} was recognised as {net}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn tiny_compact_models_are_recognised_with_their_tail() {
    let net = recognised("compact_x2");
    assert_eq!((net.scale, net.storage), (2, Storage::F32));
    let Architecture::Compact(c) = &net.architecture else {
        panic!("{net}")
    };
    assert_eq!(c.body.len(), 2);
    assert_eq!(
        (c.body[0].conv.in_channels, c.body[0].conv.out_channels),
        (3, 8)
    );
    assert_eq!(
        (c.last.out_channels, c.shuffle, &c.tail),
        (12, 2, &CompactTail::Residual)
    );

    let net = recognised("compact_x3_cubic");
    let Architecture::Compact(c) = &net.architecture else {
        panic!("{net}")
    };
    assert_eq!((net.scale, c.shuffle), (3, 4));
    assert_eq!(c.tail, CompactTail::CubicResize { factor: 0.75 });

    let net = recognised("compact_x2_folded");
    let Architecture::Compact(c) = &net.architecture else {
        panic!("{net}")
    };
    let CompactTail::Folded(t) = &c.tail else {
        panic!("{net}")
    };
    assert_eq!(
        (net.scale, t.block, t.conv.in_channels, t.conv.out_channels),
        (2, 2, 51, 12)
    );
    assert_eq!(t.top.len(), 48);
}

#[test]
fn pytorch_exports_with_shared_parameters_are_recognised() {
    // torch.onnx.export writes equal parameters once, each use through an Identity node,
    // and the residual's Resize scales as a Constant node: both are constants to the
    // matcher, and every such node is accounted for.
    let net = recognised("compact_torch_shared");
    let Architecture::Compact(c) = &net.architecture else {
        panic!("{net}")
    };
    assert_eq!(
        (net.scale, c.body.len(), &c.tail),
        (2, 3, &CompactTail::Residual)
    );
    let slopes: Vec<_> = c
        .body
        .iter()
        .map(|l| match &l.activation {
            rave_native::network::Activation::PRelu(s) => s.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(
        slopes.windows(2).all(|w| w[0] == w[1]),
        "one shared slope tensor"
    );
    assert_eq!(slopes[0].len(), 8);
}

#[test]
fn tiny_rrdb_models_are_recognised() {
    for (name, blocks, scale) in [("rrdb_x4", 1, 4), ("rrdb_x2", 2, 2)] {
        let net = recognised(name);
        let Architecture::Rrdb(r) = &net.architecture else {
            panic!("{net}")
        };
        assert_eq!((r.blocks.len(), net.scale), (blocks, scale), "{name}");
        assert_eq!((r.alpha, r.residual_scale), (0.2, 0.2));
        let convs = &r.blocks[0].dense[0].convs;
        let ins: Vec<_> = convs.iter().map(|c| c.in_channels).collect();
        assert_eq!(
            ins,
            [8, 12, 16, 20, 24],
            "{name}: the dense concatenation grows by 4"
        );
        assert_eq!(convs[4].out_channels, 8);
    }
}

#[test]
fn rrdb_in_float16_is_recognised_with_its_rounded_residual_scale() {
    for name in ["rrdb_x4_nf32", "rrdb_x4_nf32_fp16"] {
        let net = recognised(name);
        let Architecture::Rrdb(r) = &net.architecture else {
            panic!("{net}")
        };
        assert_eq!((r.blocks.len(), net.scale), (2, 4), "{name}");
        let ins: Vec<_> = r.blocks[1].dense[2]
            .convs
            .iter()
            .map(|c| c.in_channels)
            .collect();
        assert_eq!(ins, [32, 48, 64, 80, 96], "{name}");
        assert_eq!(rave_native::backend::why_not_native(&net), None, "{name}");
    }
    let tiny = recognised("rrdb_x4");
    let why = rave_native::backend::why_not_native(&tiny).expect("8 features refused");
    assert!(why.contains("8 features"), "{why}");
}

#[test]
fn near_misses_are_refused_saying_what_differs() {
    let cases = [
        (
            "compact_relu",
            "expected PRelu or the pixel-shuffle tail after Conv, found Relu",
        ),
        (
            "compact_no_residual",
            "expected Add after DepthToSpace, found Identity",
        ),
        ("compact_dcr", "DepthToSpace mode DCR, expected CRD"),
        ("compact_stride2", "Conv strides [2, 2], expected [1, 1]"),
        ("rrdb_alpha01", "LeakyRelu alpha 0.1, RRDBNet uses 0.2"),
        (
            "rrdb_no_trunk_residual",
            "expected Add (residual add) after the trunk Conv, found Resize",
        ),
        ("rrdb_scale05", "residual scaling 0.5, RRDBNet uses 0.2"),
    ];
    for (name, reason) in cases {
        let msg = refusal(name);
        println!("{name}: {msg}");
        assert!(msg.contains(reason), "{name}: {msg}");
        assert!(!msg.contains('\n'), "{name}: one line: {msg}");
        let arch = if name.starts_with("rrdb") {
            "not RRDBNet: node "
        } else {
            "not SRVGGNetCompact: "
        };
        assert!(msg.starts_with(arch), "{name}: {msg}");
    }
}

#[test]
fn other_models_and_non_models_are_refused() {
    let msg = recognise_file(&common::fixture("nearest_x2.onnx"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("the input is read by 0 Conv nodes"), "{msg}");
    let e = recognise_file(&common::fixture("not_onnx.onnx")).unwrap_err();
    assert!(matches!(e, Refusal::Unreadable(_)), "{e}");
    let e = recognise_file(&common::fixture("no_such.onnx")).unwrap_err();
    assert!(e.to_string().starts_with("cannot read"), "{e}");
}

/// The initializer behind `conv`'s weight, by the node name the network recorded.
fn initializer_weights(model: &ModelProto, conv: &Conv3x3) -> (Vec<f32>, Vec<f32>) {
    let g = model.graph.as_ref().unwrap();
    let node = g.node.iter().find(|n| n.name == conv.node).unwrap();
    let get = |name: &str| {
        let t = g.initializer.iter().find(|t| t.name == name).unwrap();
        tensor::floats(t).unwrap().values
    };
    (get(&node.input[1]), get(&node.input[2]))
}

fn compact_convs(net: &Network) -> Vec<&Conv3x3> {
    let Architecture::Compact(c) = &net.architecture else {
        panic!("{net}")
    };
    c.body.iter().map(|l| &l.conv).chain([&c.last]).collect()
}

#[test]
fn weights_are_the_initializers_in_graph_order() {
    let bytes = std::fs::read(arch("compact_x2")).unwrap();
    let model = ModelProto::decode(&bytes[..]).unwrap();
    let net = recognised("compact_x2");
    let convs = compact_convs(&net);
    // The recorded layers are the file's Conv nodes, in order.
    let conv_nodes: Vec<_> = model
        .graph
        .as_ref()
        .unwrap()
        .node
        .iter()
        .filter(|n| n.op_type == "Conv")
        .map(|n| n.name.clone())
        .collect();
    assert_eq!(
        convs.iter().map(|c| c.node.clone()).collect::<Vec<_>>(),
        conv_nodes
    );
    for conv in &convs {
        let (w, b) = initializer_weights(&model, conv);
        assert_eq!(conv.weight, w, "{}", conv.node);
        assert_eq!(conv.bias, b, "{}", conv.node);
    }
    let Architecture::Compact(c) = &net.architecture else {
        unreachable!()
    };
    let rave_native::network::Activation::PRelu(s) = &c.body[1].activation else {
        panic!("PReLU")
    };
    assert_eq!(s.len(), 8);
    assert!(s.iter().all(|v| (0.0..0.3).contains(v)), "{s:?}");
}

#[test]
fn fp16_weights_are_the_f32_weights_rounded_to_half() {
    let half = recognised("compact_x2_fp16");
    let full = recognised("compact_x2");
    assert_eq!(half.storage, Storage::F16);
    for (h, f) in compact_convs(&half).into_iter().zip(compact_convs(&full)) {
        let rounded: Vec<f32> = f
            .weight
            .iter()
            .map(|&v| half::f16::from_f32(v).to_f32())
            .collect();
        assert_eq!(h.weight, rounded, "{}", f.node);
        assert_ne!(
            h.weight, f.weight,
            "{}: the fp16 file really is rounded",
            f.node
        );
    }
}
