//! The walk shared by the architecture matchers: following values from node to node, taking
//! each node once, checking operators, attributes and constants, and phrasing what differs.

use crate::graph::{Graph, attribute};
use crate::network::Conv3x3;
use crate::proto::{AttributeProto, NodeProto, attribute_type};
use crate::refusal::Mismatch;
use crate::tensor::{self, FloatTensor};

/// A step of a match: `Err` is the one-line reason.
pub type Step<T> = Result<T, String>;

/// Walks one graph against one architecture, remembering which nodes it accounted for.
pub struct Matcher<'g> {
    graph: &'g Graph,
    taken: Vec<bool>,
    /// Some weight was stored as float16.
    pub saw_f16: bool,
}

impl<'g> Matcher<'g> {
    /// Start on `graph` with no node taken.
    pub fn new(graph: &'g Graph) -> Self {
        Self {
            graph,
            taken: vec![false; graph.nodes().len()],
            saw_f16: false,
        }
    }

    /// The graph being matched.
    pub fn graph(&self) -> &'g Graph {
        self.graph
    }

    /// Turn a failed step into the mismatch report for `architecture`.
    pub fn mismatch(&self, architecture: &'static str, reason: String) -> Mismatch {
        Mismatch {
            architecture,
            matched_nodes: self.taken.iter().filter(|t| **t).count(),
            reason,
        }
    }

    /// Node `i`.
    pub fn node(&self, i: usize) -> &'g NodeProto {
        self.graph.node(i)
    }

    /// How messages name node `i`.
    pub fn label(&self, i: usize) -> String {
        self.graph.label(i)
    }

    /// Account for node `i`, checking it is `op` in the default domain with one output.
    pub fn take(&mut self, i: usize, op: &str, context: &str) -> Step<&'g NodeProto> {
        let n = self.node(i);
        if n.op_type != op || !n.domain.is_empty() {
            let domain = if n.domain.is_empty() {
                String::new()
            } else {
                format!("{}::", n.domain)
            };
            return Err(format!(
                "{}: expected {op} {context}, found {domain}{}",
                self.label(i),
                n.op_type
            ));
        }
        if self.taken[i] {
            return Err(format!("{}: reached twice", self.label(i)));
        }
        if n.output.len() != 1 {
            return Err(format!(
                "{}: {op} with {} outputs",
                self.label(i),
                n.output.len()
            ));
        }
        self.taken[i] = true;
        Ok(n)
    }

    /// The only node reading `value`, which must be `op`.
    pub fn sole_consumer(
        &mut self,
        value: &str,
        op: &str,
        context: &str,
    ) -> Step<(usize, &'g NodeProto)> {
        let i = self.sole_reader(value, context)?;
        Ok((i, self.take(i, op, context)?))
    }

    /// The index of the only node reading `value` (the graph output counts as a reader).
    pub fn sole_reader(&self, value: &str, context: &str) -> Step<usize> {
        let readers = self.graph.consumers(value);
        let output = usize::from(value == self.graph.output());
        match (readers, output) {
            ([i], 0) => Ok(*i),
            ([], 1) => Err(format!(
                "the graph ends at {value}, expected a node {context}"
            )),
            ([], _) => Err(format!("nothing reads {value}, expected a node {context}")),
            _ => Err(format!(
                "{value} is read by {} nodes{}, expected only the node {context} ({})",
                readers.len(),
                if output == 1 {
                    " and is the output"
                } else {
                    ""
                },
                readers
                    .iter()
                    .map(|&i| self.label(i))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// The readers of `value` that are `op` nodes and not yet taken.
    pub fn readers_of_type(&self, value: &str, op: &str) -> Vec<usize> {
        self.graph
            .consumers(value)
            .iter()
            .copied()
            .filter(|&i| !self.taken[i] && self.node(i).op_type == op)
            .collect()
    }

    /// Refuse any attribute of node `i` not in `allowed`.
    pub fn only_attributes(&self, i: usize, allowed: &[&str]) -> Step<()> {
        let n = self.node(i);
        match n
            .attribute
            .iter()
            .find(|a| !allowed.contains(&a.name.as_str()))
        {
            Some(a) => Err(format!(
                "{}: {} attribute {} is not part of the architecture",
                self.label(i),
                n.op_type,
                a.name
            )),
            None => Ok(()),
        }
    }

    /// Integer-list attribute `name` (an absent one is `default`).
    pub fn ints(&self, i: usize, name: &str, default: &[i64]) -> Step<Vec<i64>> {
        match attribute(self.node(i), name) {
            None => Ok(default.to_vec()),
            Some(a) if a.r#type == attribute_type::INTS || a.r#type == 0 => Ok(a.ints.clone()),
            Some(a) => Err(self.wrong_type(i, a, "a list of integers")),
        }
    }

    /// Integer attribute `name` (an absent one is `default`).
    pub fn int(&self, i: usize, name: &str, default: i64) -> Step<i64> {
        match attribute(self.node(i), name) {
            None => Ok(default),
            Some(a) if a.r#type == attribute_type::INT || a.r#type == 0 => Ok(a.i),
            Some(a) => Err(self.wrong_type(i, a, "an integer")),
        }
    }

    /// Float attribute `name` (an absent one is `default`).
    pub fn float(&self, i: usize, name: &str, default: f32) -> Step<f32> {
        match attribute(self.node(i), name) {
            None => Ok(default),
            Some(a) if a.r#type == attribute_type::FLOAT || a.r#type == 0 => Ok(a.f),
            Some(a) => Err(self.wrong_type(i, a, "a float")),
        }
    }

    /// String attribute `name` (an absent one is `default`).
    pub fn string(&self, i: usize, name: &str, default: &str) -> Step<String> {
        match attribute(self.node(i), name) {
            None => Ok(default.to_string()),
            Some(a) if a.r#type == attribute_type::STRING || a.r#type == 0 => {
                Ok(String::from_utf8_lossy(&a.s).into_owned())
            }
            Some(a) => Err(self.wrong_type(i, a, "a string")),
        }
    }

    fn wrong_type(&self, i: usize, a: &AttributeProto, want: &str) -> String {
        format!("{}: attribute {} is not {want}", self.label(i), a.name)
    }

    /// The constant float tensor `value` (initializer or `Constant` node, through any
    /// `Identity` nodes; the nodes are taken).
    pub fn floats(&mut self, value: &str, what: &str) -> Step<FloatTensor> {
        let (t, nodes) = self
            .graph
            .constant(value)
            .ok_or_else(|| format!("{what} {value} is not a constant"))?;
        let f = tensor::floats(t)?;
        self.saw_f16 |= f.from_f16;
        for i in nodes {
            self.taken[i] = true;
        }
        Ok(f)
    }

    /// The constant int64 tensor `value`.
    pub fn int64s(&mut self, value: &str, what: &str) -> Step<Vec<i64>> {
        let (t, nodes) = self
            .graph
            .constant(value)
            .ok_or_else(|| format!("{what} {value} is not a constant"))?;
        let v = tensor::int64s(t)?;
        for i in nodes {
            self.taken[i] = true;
        }
        Ok(v)
    }

    /// A constant holding one float (shape `[]` or `[1]`).
    pub fn scalar(&mut self, value: &str, what: &str) -> Step<f32> {
        let t = self.floats(value, what)?;
        match t.values[..] {
            [v] => Ok(v),
            _ => Err(format!(
                "{what} {value} has shape {:?}, expected a scalar",
                t.dims
            )),
        }
    }

    /// Take node `i` as a 3x3 convolution reading `in_channels` channels with zero padding
    /// `pad`, stride 1, dilation 1, one group; its bias may be absent (zeros).
    pub fn conv3x3(
        &mut self,
        i: usize,
        in_channels: usize,
        pad: usize,
        context: &str,
    ) -> Step<Conv3x3> {
        let n = self.take(i, "Conv", context)?;
        let label = self.label(i);
        self.only_attributes(
            i,
            &[
                "kernel_shape",
                "pads",
                "strides",
                "dilations",
                "group",
                "auto_pad",
            ],
        )?;
        let w_name = n
            .input
            .get(1)
            .ok_or_else(|| format!("{label}: Conv without weights"))?;
        let w = self.floats(w_name, "the weight")?;
        let &[o, c, kh, kw] = &w.dims[..] else {
            return Err(format!("{label}: weight shape {:?} is not 4-D", w.dims));
        };
        if (kh, kw) != (3, 3) {
            return Err(format!("{label}: a {kh}x{kw} convolution, expected 3x3"));
        }
        if c != in_channels {
            return Err(format!(
                "{label}: convolution reads {c} channels, its input has {in_channels}"
            ));
        }
        let p = pad as i64;
        let checks: [(&str, Vec<i64>, Vec<i64>); 4] = [
            (
                "kernel_shape",
                self.ints(i, "kernel_shape", &[3, 3])?,
                vec![3, 3],
            ),
            (
                "pads",
                self.ints(i, "pads", &[0, 0, 0, 0])?,
                vec![p, p, p, p],
            ),
            ("strides", self.ints(i, "strides", &[1, 1])?, vec![1, 1]),
            ("dilations", self.ints(i, "dilations", &[1, 1])?, vec![1, 1]),
        ];
        for (name, got, want) in checks {
            if got != want {
                return Err(format!("{label}: Conv {name} {got:?}, expected {want:?}"));
            }
        }
        if self.int(i, "group", 1)? != 1 {
            return Err(format!("{label}: grouped convolution"));
        }
        let auto_pad = self.string(i, "auto_pad", "NOTSET")?;
        if auto_pad != "NOTSET" {
            return Err(format!(
                "{label}: Conv auto_pad {auto_pad}, expected explicit pads"
            ));
        }
        let bias = match n.input.get(2).filter(|b| !b.is_empty()) {
            None => vec![0.0; o],
            Some(b) => {
                let b = self.floats(b, "the bias")?;
                if b.dims != [o] {
                    return Err(format!("{label}: bias shape {:?}, expected [{o}]", b.dims));
                }
                b.values
            }
        };
        if n.input.len() > 3 {
            return Err(format!("{label}: Conv with {} inputs", n.input.len()));
        }
        Ok(Conv3x3 {
            out_channels: o,
            in_channels: c,
            weight: w.values,
            bias,
            pad,
            node: n.name.clone(),
        })
    }

    /// Follow `Identity` nodes from `value` and check the walk ended at the graph output
    /// with every node accounted for.
    pub fn finish(&mut self, mut value: String) -> Step<()> {
        while value != self.graph.output() {
            let (_, n) = self.sole_consumer(&value, "Identity", "before the output")?;
            value = n.output[0].clone();
        }
        if !self.graph.consumers(&value).is_empty() {
            return Err(format!("the output {value} is also read by other nodes"));
        }
        match self.taken.iter().position(|t| !t) {
            Some(i) => Err(format!(
                "{}: {} is not part of the architecture",
                self.label(i),
                self.node(i).op_type
            )),
            None => Ok(()),
        }
    }
}
