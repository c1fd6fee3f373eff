//! A read-only view of an ONNX graph for matching: nodes in file order, who produces and who
//! reads each value, constants (initializers and `Constant` nodes) and the one image input.

use std::collections::HashMap;

use prost::Message;

use crate::proto::{AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto, data_type};
use crate::refusal::Refusal;

/// Element type of the model's image tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Storage {
    /// float32 input and output.
    F32,
    /// float16 input and output.
    F16,
}

/// A decoded ONNX graph with its value links.
#[derive(Debug)]
pub struct Graph {
    graph: GraphProto,
    initializers: HashMap<String, usize>,
    producers: HashMap<String, usize>,
    consumers: HashMap<String, Vec<usize>>,
    input: String,
    output: String,
    storage: Storage,
}

impl Graph {
    /// Decode a serialized `ModelProto` and check it has one rank-4 float image input and one
    /// output in the default ONNX domain.
    pub fn parse(bytes: &[u8]) -> Result<Self, Refusal> {
        let unreadable = |why: String| Refusal::Unreadable(why);
        let model = ModelProto::decode(bytes)
            .map_err(|e| unreadable(format!("not an ONNX model (protobuf: {e})")))?;
        let graph = model
            .graph
            .ok_or_else(|| unreadable("the ONNX model has no graph".into()))?;
        if !graph.sparse_initializer.is_empty() {
            return Err(unreadable("the graph has sparse initializers".into()));
        }
        let initializers: HashMap<String, usize> = graph
            .initializer
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        let mut producers = HashMap::new();
        let mut consumers: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, n) in graph.node.iter().enumerate() {
            for o in n.output.iter().filter(|o| !o.is_empty()) {
                producers.insert(o.clone(), i);
            }
            for v in n.input.iter().filter(|v| !v.is_empty()) {
                consumers.entry(v.clone()).or_default().push(i);
            }
        }
        // Older files also list the initializers among the inputs.
        let inputs: Vec<_> = graph
            .input
            .iter()
            .filter(|v| !initializers.contains_key(&v.name))
            .collect();
        let [input] = inputs[..] else {
            return Err(unreadable(format!(
                "the graph has {} inputs, expected one image",
                inputs.len()
            )));
        };
        let [output] = &graph.output[..] else {
            return Err(unreadable(format!(
                "the graph has {} outputs, expected one image",
                graph.output.len()
            )));
        };
        let tensor = input.r#type.as_ref().and_then(|t| t.tensor_type.as_ref());
        let storage = match tensor.map(|t| t.elem_type) {
            Some(data_type::FLOAT) => Storage::F32,
            Some(data_type::FLOAT16) => Storage::F16,
            other => {
                return Err(unreadable(format!(
                    "input {} has element type {other:?}, expected float32 or float16",
                    input.name
                )));
            }
        };
        let dims = tensor.and_then(|t| t.shape.as_ref()).map(|s| &s.dim[..]);
        match dims {
            Some(d) if d.len() == 4 && d[1].dim_value.is_none_or(|c| c == 3) => {}
            _ => {
                return Err(unreadable(format!(
                    "input {} is not an NCHW image with 3 channels",
                    input.name
                )));
            }
        }
        let input = input.name.clone();
        let output = output.name.clone();
        Ok(Self {
            graph,
            initializers,
            producers,
            consumers,
            input,
            output,
            storage,
        })
    }

    /// All nodes, in file (topological) order.
    pub fn nodes(&self) -> &[NodeProto] {
        &self.graph.node
    }

    /// Node `i`.
    pub fn node(&self, i: usize) -> &NodeProto {
        &self.graph.node[i]
    }

    /// "node 14 (Relu_14)": how messages name node `i`.
    pub fn label(&self, i: usize) -> String {
        let n = self.node(i);
        if n.name.is_empty() {
            format!("node {i}")
        } else {
            format!("node {i} ({})", n.name)
        }
    }

    /// The nodes reading `value`, in file order.
    pub fn consumers(&self, value: &str) -> &[usize] {
        self.consumers.get(value).map_or(&[], |v| &v[..])
    }

    /// The node writing `value`, if a node does (not for the input or constants).
    pub fn producer(&self, value: &str) -> Option<usize> {
        self.producers.get(value).copied()
    }

    /// The initializer called `name`.
    pub fn initializer(&self, name: &str) -> Option<&TensorProto> {
        self.initializers
            .get(name)
            .map(|&i| &self.graph.initializer[i])
    }

    /// The constant `value`: an initializer, or the tensor of the `Constant` node writing it,
    /// seen through any `Identity` nodes on the way (PyTorch's exporter writes one per use
    /// when parameters are equal, sharing one initializer), with the indices of the nodes
    /// passed, so a matcher can account for them.
    pub fn constant(&self, value: &str) -> Option<(&TensorProto, Vec<usize>)> {
        let mut nodes = Vec::new();
        let mut value = value;
        // A chain longer than the graph would be a cycle: never a constant.
        for _ in 0..=self.graph.node.len() {
            if let Some(t) = self.initializer(value) {
                return Some((t, nodes));
            }
            let i = self.producer(value)?;
            let n = self.node(i);
            if !n.domain.is_empty() {
                return None;
            }
            nodes.push(i);
            match (n.op_type.as_str(), &n.input[..], &n.attribute[..]) {
                ("Identity", [from], []) => value = from,
                ("Constant", [], [a]) if a.name == "value" => {
                    return a.t.as_ref().map(|t| (t, nodes));
                }
                _ => return None,
            }
        }
        None
    }

    /// The image input's name.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// The image output's name.
    pub fn output(&self) -> &str {
        &self.output
    }

    /// The input's element type.
    pub fn storage(&self) -> Storage {
        self.storage
    }
}

/// The attribute `name` of `node`.
pub fn attribute<'n>(node: &'n NodeProto, name: &str) -> Option<&'n AttributeProto> {
    node.attribute.iter().find(|a| a.name == name)
}
