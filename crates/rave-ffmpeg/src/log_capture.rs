//! FFmpeg's log, kept off the terminal: RAVE reports errors itself, one line each. While a
//! capture is active, error-level messages are collected so a failure can say what FFmpeg
//! said (e.g. NVENC's "No capable devices found"); damage messages of watched inputs are
//! counted (`log_watch`).

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
    class: *mut c_void,
    level: c_int,
    fmt: *const c_char,
    args: *mut ffi::__va_list_tag,
) {
    if fmt.is_null() {
        return;
    }
    // SAFETY: `class` and `fmt` are what FFmpeg passed to its log callback.
    let tally = unsafe { crate::log_watch::tally_for(class, level, fmt) };
    let mut guard = match CAPTURED.lock() {
        Ok(g) => g,
        Err(_) => return,
    };
    let capture = level <= ffi::AV_LOG_ERROR as c_int && guard.is_some();
    if tally.is_none() && !capture {
        return;
    }
    let mut buf = [0 as c_char; 512];
    // SAFETY: `fmt` and `args` are the format string and argument list FFmpeg passes to log
    // callbacks (consumed once, here); vsnprintf writes at most buf.len() bytes including the
    // terminator.
    let n = unsafe { vsnprintf(buf.as_mut_ptr(), buf.len(), fmt, args) };
    let text = if n > 0 {
        // SAFETY: vsnprintf NUL-terminated the buffer.
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
        Some(text.trim().to_owned()).filter(|t| !t.is_empty())
    } else {
        None
    };
    if let Some(t) = &tally {
        crate::log_watch::record(t, text.as_deref());
    }
    if capture && let (Some(lines), Some(text)) = (guard.as_mut(), text) {
        lines.push(text);
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
