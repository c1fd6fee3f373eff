//! Decoding an ONNX `TensorProto` into plain values: f32 (from float, float16 or double
//! storage) or i64, from the typed fields or little-endian `raw_data`.

use crate::proto::{TensorProto, data_type};

/// Shape and values of a constant tensor, converted to f32.
#[derive(Debug, Clone, PartialEq)]
pub struct FloatTensor {
    /// The dimensions.
    pub dims: Vec<usize>,
    /// The values in row-major order.
    pub values: Vec<f32>,
    /// The tensor was stored as float16.
    pub from_f16: bool,
}

/// The number of elements `dims` hold, or an error for a negative dimension.
fn element_count(t: &TensorProto) -> Result<usize, String> {
    t.dims.iter().try_fold(1usize, |n, &d| {
        usize::try_from(d)
            .ok()
            .and_then(|d| n.checked_mul(d))
            .ok_or_else(|| format!("tensor {} has a bad shape {:?}", t.name, t.dims))
    })
}

fn check_inline(t: &TensorProto) -> Result<(), String> {
    if t.data_location == 1 {
        return Err(format!(
            "tensor {} is stored outside the .onnx file (external data)",
            t.name
        ));
    }
    Ok(())
}

fn check_len(t: &TensorProto, got: usize, want: usize) -> Result<(), String> {
    if got != want {
        return Err(format!(
            "tensor {} holds {got} values for shape {:?}",
            t.name, t.dims
        ));
    }
    Ok(())
}

/// Decode a float, float16 or double tensor as f32.
pub fn floats(t: &TensorProto) -> Result<FloatTensor, String> {
    check_inline(t)?;
    let n = element_count(t)?;
    let raw = &t.raw_data;
    let values: Vec<f32> = match t.data_type {
        data_type::FLOAT if !raw.is_empty() => {
            check_len(t, raw.len(), n * 4)?;
            raw.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        }
        data_type::FLOAT => t.float_data.clone(),
        // float16 lives in raw_data or, one value per element, in the low bits of int32_data.
        data_type::FLOAT16 if !raw.is_empty() => {
            check_len(t, raw.len(), n * 2)?;
            raw.chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect()
        }
        data_type::FLOAT16 => t
            .int32_data
            .iter()
            .map(|&v| half::f16::from_bits(v as u16).to_f32())
            .collect(),
        data_type::DOUBLE if !raw.is_empty() => {
            check_len(t, raw.len(), n * 8)?;
            raw.chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as f32)
                .collect()
        }
        data_type::DOUBLE => t.double_data.iter().map(|&v| v as f32).collect(),
        other => {
            return Err(format!(
                "tensor {} has element type {other}, expected a float type",
                t.name
            ));
        }
    };
    check_len(t, values.len(), n)?;
    Ok(FloatTensor {
        dims: t.dims.iter().map(|&d| d as usize).collect(),
        values,
        from_f16: t.data_type == data_type::FLOAT16,
    })
}

/// Decode an int64 tensor.
pub fn int64s(t: &TensorProto) -> Result<Vec<i64>, String> {
    check_inline(t)?;
    let n = element_count(t)?;
    if t.data_type != data_type::INT64 {
        return Err(format!(
            "tensor {} has element type {}, expected int64",
            t.name, t.data_type
        ));
    }
    let values: Vec<i64> = if t.raw_data.is_empty() {
        t.int64_data.clone()
    } else {
        check_len(t, t.raw_data.len(), n * 8)?;
        t.raw_data
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .collect()
    };
    check_len(t, values.len(), n)?;
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(data_type: i32, dims: Vec<i64>) -> TensorProto {
        TensorProto {
            name: "t".into(),
            data_type,
            dims,
            ..Default::default()
        }
    }

    #[test]
    fn raw_and_typed_floats_decode_alike() {
        let mut a = tensor(data_type::FLOAT, vec![2]);
        a.float_data = vec![1.5, -2.0];
        let mut b = tensor(data_type::FLOAT, vec![2]);
        b.raw_data = [1.5f32, -2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(floats(&a).unwrap().values, vec![1.5, -2.0]);
        assert_eq!(floats(&b).unwrap().values, vec![1.5, -2.0]);
    }

    #[test]
    fn float16_converts_to_f32() {
        let mut t = tensor(data_type::FLOAT16, vec![3]);
        t.raw_data = [0.5f32, -3.0, 0.1]
            .iter()
            .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
            .collect();
        let got = floats(&t).unwrap();
        assert!(got.from_f16);
        assert_eq!(got.values[..2], [0.5, -3.0]);
        assert_eq!(got.values[2], half::f16::from_f32(0.1).to_f32());
        let mut typed = tensor(data_type::FLOAT16, vec![1]);
        typed.int32_data = vec![half::f16::from_f32(2.25).to_bits() as i32];
        assert_eq!(floats(&typed).unwrap().values, vec![2.25]);
    }

    #[test]
    fn wrong_length_and_external_data_are_errors() {
        let mut t = tensor(data_type::FLOAT, vec![3]);
        t.float_data = vec![1.0];
        assert!(floats(&t).unwrap_err().contains("holds 1 values"));
        t.data_location = 1;
        assert!(floats(&t).unwrap_err().contains("external data"));
        let mut i = tensor(data_type::INT64, vec![2]);
        i.raw_data = [7i64, -1].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(int64s(&i).unwrap(), vec![7, -1]);
    }
}
