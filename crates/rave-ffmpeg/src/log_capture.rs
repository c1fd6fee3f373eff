//! FFmpeg's log, kept off the terminal: RAVE reports errors itself, one line each. While a
//! capture is active, error-level messages are collected so a failure can say what FFmpeg
//! said (e.g. NVENC's "No capable devices found"); damage messages of watched inputs are
//! counted (`log_watch`).

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_int, c_void};

use ffmpeg_next::ffi;

/// An error message FFmpeg logged, and whether a decoder logged it (a codec context: when
/// a file opens, the decoders that probe its first packets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedError {
    /// The message, as FFmpeg worded it.
    pub text: String,
    /// Whether a codec context logged it.
    pub by_decoder: bool,
    /// Whether a video codec context logged it.
    pub by_video_decoder: bool,
}

thread_local! {
    /// The error messages logged on this thread while it captures. Per thread: other
    /// threads' decoders and muxers keep logging while one opens a file or an encoder, and
    /// their messages are not about it.
    static CAPTURED: RefCell<Option<Vec<LoggedError>>> = const { RefCell::new(None) };
}

fn capturing() -> bool {
    CAPTURED
        .try_with(|c| c.try_borrow().is_ok_and(|c| c.is_some()))
        .unwrap_or(false)
}

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
    let capture = level <= ffi::AV_LOG_ERROR as c_int && capturing();
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
    if capture && let Some(text) = text {
        // SAFETY: FFmpeg logs with null or a pointer to a struct whose first field is its
        // AVClass pointer.
        let by_decoder = !class.is_null()
            && unsafe { *(class as *const *const ffi::AVClass) == ffi::avcodec_get_class() };
        // SAFETY: a struct whose class is the codec-context class is an AVCodecContext.
        let by_video_decoder = by_decoder
            && unsafe {
                (*(class as *const ffi::AVCodecContext)).codec_type
                    == ffi::AVMediaType::AVMEDIA_TYPE_VIDEO
            };
        let _ = CAPTURED.try_with(|c| {
            if let Ok(mut c) = c.try_borrow_mut()
                && let Some(lines) = c.as_mut()
            {
                lines.push(LoggedError {
                    text,
                    by_decoder,
                    by_video_decoder,
                });
            }
        });
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

/// Run `f`, returning its result and the error messages FFmpeg logged meanwhile on this
/// thread.
pub fn capture_errors<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    let (result, logged) = capture_logged_errors(f);
    (result, logged.into_iter().map(|e| e.text).collect())
}

/// Run `f`, returning its result and the error messages FFmpeg logged meanwhile on this
/// thread, each with whether a decoder logged it.
pub fn capture_logged_errors<R>(f: impl FnOnce() -> R) -> (R, Vec<LoggedError>) {
    crate::init();
    CAPTURED.with(|c| *c.borrow_mut() = Some(Vec::new()));
    let result = f();
    let lines = CAPTURED.with(|c| c.borrow_mut().take().unwrap_or_default());
    (result, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_error(message: &'static CStr) {
        // SAFETY: a NUL-terminated format string without conversions, and no arguments.
        unsafe {
            ffi::av_log(
                std::ptr::null_mut(),
                ffi::AV_LOG_ERROR as c_int,
                message.as_ptr(),
            )
        };
    }

    #[test]
    fn a_capture_takes_only_its_own_threads_messages() {
        crate::init();
        let ((), lines) = capture_errors(|| {
            std::thread::spawn(|| log_error(c"said by another thread"))
                .join()
                .unwrap();
            log_error(c"said while opening");
        });
        assert_eq!(lines, vec!["said while opening".to_owned()]);
        let ((), after) = capture_errors(|| {});
        assert!(after.is_empty());
    }
}
