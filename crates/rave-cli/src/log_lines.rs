//! Log lines (tracing's warnings, `-v` output) on stderr's copy from start-up (`console`),
//! each in one write; with `--progress jsonl`, where every line on stderr is a JSON event,
//! as `log` events (a panic's message too: see `panics`).

use std::io::Write;

use tracing::Metadata;
use tracing_subscriber::fmt::MakeWriter;

use crate::console::errln;

/// Makes one [`LogLine`] a log line: a `log` event when `events` (`--progress jsonl`), else
/// the line as formatted.
pub struct LogLines {
    /// Print `log` events rather than plain lines.
    pub events: bool,
}

impl<'a> MakeWriter<'a> for LogLines {
    type Writer = LogLine;

    fn make_writer(&'a self) -> LogLine {
        LogLine::new(self.events.then_some("INFO"))
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> LogLine {
        LogLine::new(self.events.then_some(meta.level().as_str()))
    }
}

/// One log line, collected as it is formatted and printed whole when dropped: as a `log`
/// event at its level, or as it is (no level).
pub struct LogLine {
    level: Option<&'static str>,
    text: Vec<u8>,
}

impl LogLine {
    fn new(level: Option<&'static str>) -> Self {
        Self {
            level,
            text: Vec::new(),
        }
    }
}

impl Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        match self.level {
            Some(level) => {
                let text = String::from_utf8_lossy(&self.text);
                let message = text.trim_end();
                if !message.is_empty() {
                    errln!("{}", event(level, message));
                }
            }
            None if !self.text.is_empty() => crate::console::err_bytes(&self.text),
            None => {}
        }
    }
}

/// The `log` event of `message` at `level`.
fn event(level: &str, message: &str) -> serde_json::Value {
    serde_json::json!({"event": "log", "level": level, "message": message})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_is_one_event_with_its_level() {
        let e = event("WARN", "TensorRT unavailable; falling back");
        assert_eq!(e["event"], "log");
        assert_eq!(e["level"], "WARN");
        assert_eq!(e["message"], "TensorRT unavailable; falling back");
        assert!(!e.to_string().contains('\n'));
    }
}
