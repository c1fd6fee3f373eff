//! ONNX Runtime's error text made readable for a user: its first line, without the C++
//! source location and function signature its checks put before their condition.

/// The first line of `s`, with each `/…/file.h:123 type ns::Class::fn(args) const ` that an
/// ONNX Runtime check puts before its words left out ("… Status Message: out_size >= 0 was
/// false."). Text that does not have that shape is kept as it is.
pub(crate) fn first_line(s: &str) -> String {
    let mut line = s.lines().next().unwrap_or(s).trim().to_string();
    while let Some(tidied) = without_one_location(&line) {
        line = tidied;
    }
    line
}

/// `line` without its first source location and the signature after it, or `None` where it
/// has none (or an unbalanced signature).
fn without_one_location(line: &str) -> Option<String> {
    let start = line.find("/onnxruntime_src/")?;
    let rest = &line[start..];
    // "path/file.ext:LINE" up to the first space.
    let path_end = rest.find(' ')?;
    let (_, line_number) = rest[..path_end].rsplit_once(':')?;
    if line_number.is_empty() || !line_number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let signature = &rest[path_end + 1..];
    // The signature ends at the parenthesis that closes its first one.
    let open = signature.find('(')?;
    let mut depth = 0usize;
    let mut close = None;
    for (i, c) in signature.char_indices().skip_while(|(i, _)| *i < open) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let after = signature[close? + 1..].trim_start();
    let after = after.strip_prefix("const ").unwrap_or(after);
    Some(format!("{}{}", &line[..start], after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checks_source_location_and_signature_are_left_out() {
        let ort = "Non-zero status code returned while running AveragePool node. Name:'' Status Message: /onnxruntime_src/onnxruntime/core/providers/cpu/nn/pool_attributes.h:236 int64_t onnxruntime::PoolAttributes::ComputeOutputSize(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t) const out_size >= 0 was false.\nsecond line";
        assert_eq!(
            first_line(ort),
            "Non-zero status code returned while running AveragePool node. Name:'' Status Message: out_size >= 0 was false."
        );
        let load = "Failed: /onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:2043 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library x.so";
        assert_eq!(
            first_line(load),
            "Failed: [ONNXRuntimeError] : 1 : FAIL : Failed to load library x.so"
        );
    }

    #[test]
    fn other_text_is_kept_as_it_is() {
        for s in [
            "SpaceToDepth requires input height to be a multiple of block_size",
            "see /onnxruntime_src/readme (no line number) here",
            "/onnxruntime_src/a.h:12 f(unbalanced",
            "",
        ] {
            assert_eq!(first_line(s), s.trim());
        }
    }
}
