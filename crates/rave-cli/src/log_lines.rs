//! Log lines (tracing's warnings, `-v` output) on stderr's copy from start-up (`console`),
//! each in one write; with `--progress jsonl`, where every line on stderr is a JSON event,
//! as `log` events, and a panic's message one too.

use std::io::Write;

use tracing::Metadata;
use tracing_subscriber::fmt::MakeWriter;

use crate::console::errln;

/// Makes one [`LogEvent`] a log line.
pub struct JsonLog;

/// Makes one [`PlainLine`] a log line (without `--progress jsonl`).
pub struct PlainLog;

impl<'a> MakeWriter<'a> for PlainLog {
    type Writer = PlainLine;

    fn make_writer(&'a self) -> PlainLine {
        PlainLine(Vec::new())
    }
}

/// One log line as formatted, printed whole when dropped.
pub struct PlainLine(Vec<u8>);

impl Write for PlainLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for PlainLine {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            crate::console::err_bytes(&self.0);
        }
    }
}

impl<'a> MakeWriter<'a> for JsonLog {
    type Writer = LogEvent;

    fn make_writer(&'a self) -> LogEvent {
        LogEvent::new("INFO")
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> LogEvent {
        LogEvent::new(meta.level().as_str())
    }
}

/// One log line, collected as it is formatted and printed as a `log` event when dropped.
pub struct LogEvent {
    level: &'static str,
    text: Vec<u8>,
}

impl LogEvent {
    fn new(level: &'static str) -> Self {
        Self {
            level,
            text: Vec::new(),
        }
    }
}

impl Write for LogEvent {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogEvent {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.text);
        let message = text.trim_end();
        if !message.is_empty() {
            errln!("{}", event(self.level, message));
        }
    }
}

/// The `log` event of `message` at `level`.
fn event(level: &str, message: &str) -> serde_json::Value {
    serde_json::json!({"event": "log", "level": level, "message": message})
}

/// Print a panic's message as a `log` event (at ERROR) instead of plain text.
pub fn panics_as_events() {
    std::panic::set_hook(Box::new(|info| {
        errln!("{}", event("ERROR", &format!("panic: {info}")));
    }));
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
