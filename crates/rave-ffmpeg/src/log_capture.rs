//! FFmpeg's log, kept off the terminal: RAVE reports errors itself, one line each. While a
//! capture is active, error-level messages are collected so a failure can say what FFmpeg
//! said (e.g. NVENC's "No capable devices found").

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;

use ffmpeg_next::ffi;

static CAPTURED: Mutex<Option<Vec<String>>> = Mutex::new(None);

unsafe extern "C" {
    fn vsnprintf(
        s: *mut c_char,
        n: usize,
        format: *const c_char,
        ap: *mut ffi::__va_list_tag,
    ) -> c_int;
}

unsafe extern "C" fn on_log(
    _class: *mut c_void,
    level: c_int,
    fmt: *const c_char,
    args: *mut ffi::__va_list_tag,
) {
    if level > ffi::AV_LOG_ERROR as c_int || fmt.is_null() {
        return;
    }
    let mut guard = match CAPTURED.lock() {
        Ok(g) => g,
        Err(_) => return,
    };
    let Some(lines) = guard.as_mut() else {
        return;
    };
    let mut buf = [0 as c_char; 512];
    // SAFETY: `fmt` and `args` are the format string and argument list FFmpeg passes to log
    // callbacks; vsnprintf writes at most buf.len() bytes including the terminator.
    let n = unsafe { vsnprintf(buf.as_mut_ptr(), buf.len(), fmt, args) };
    if n > 0 {
        // SAFETY: vsnprintf NUL-terminated the buffer.
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
        let text = text.trim();
        if !text.is_empty() {
            lines.push(text.to_owned());
        }
    }
}

/// Route FFmpeg's log through RAVE (silent unless capturing).
pub(crate) fn install() {
    // SAFETY: sets FFmpeg's process-wide log callback and level; `on_log` is a valid
    // callback for the whole process lifetime.
    unsafe {
        ffi::av_log_set_level(ffi::AV_LOG_ERROR as c_int);
        ffi::av_log_set_callback(Some(on_log));
    }
}

/// Run `f`, returning its result and the error messages FFmpeg logged meanwhile.
pub fn capture_errors<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    crate::init();
    *CAPTURED.lock().unwrap_or_else(|e| e.into_inner()) = Some(Vec::new());
    let result = f();
    let lines = CAPTURED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_default();
    (result, lines)
}
