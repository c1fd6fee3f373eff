//! Damage reports in FFmpeg's log. The demuxer and the video decoder of an input are
//! watched: every error they log, and the few damage warnings FFmpeg logs below error level
//! (MPEG-TS continuity and PES size errors), is counted with the first one kept as text.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ffmpeg_next::ffi;

/// Messages below error level that still mean the input is damaged (the start of FFmpeg's
/// format string): MPEG-TS continuity and PES size errors, and the H.264 decoder's
/// "Frame num gap" (a reference picture is missing: it conceals the pictures that use it
/// without an error).
const DAMAGE_WARNINGS: [&[u8]; 3] = [
    b"Continuity check failed",
    b"PES packet size mismatch",
    b"Frame num gap",
];

/// Error-level decoder messages about hardware acceleration setup, not about the data: NVDEC
/// refuses a codec, profile or size (VP9 below 128 pixels, say) and the decoder falls back to
/// software. Matched anywhere in FFmpeg's format string.
const NOT_DAMAGE: [&[u8]; 9] = [
    b"Failed setup for format",
    b"hwaccel",
    b"Hardware is lacking required capabilities",
    b"not within range from",
    b"Video macroblock count",
    b"Error creating a NVDEC decoder",
    b"Failed loading nvcuvid",
    b"Unsupported chroma format",
    b"Error initializing internal frames context",
];

/// The H.264 decoder's words for references it does not hold: a reference-marking command
/// (MMCO) that drops a picture it never had, and a gap in the frame numbers (a reference
/// picture missing). Expected where decoding starts after those pictures (a capture cut
/// inside an open GOP, whose leading reference pictures are skipped): counted apart, see
/// [`LogTally::stale_drops`].
const STALE_REFERENCES: [&str; 2] = ["mmco: unref short failure", "Frame num gap"];

/// Messages of one kind: how many, and the first as FFmpeg worded it.
#[derive(Debug, Default)]
struct Counted {
    count: AtomicU64,
    first: Mutex<Option<String>>,
}

impl Counted {
    fn record(&self, text: Option<&str>) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let mut first = self.first.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none()
            && let Some(t) = text
        {
            *first = Some(t.to_owned());
        }
    }

    fn reset(&self) {
        self.count.store(0, Ordering::Relaxed);
        *self.first.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    fn first(&self) -> Option<String> {
        self.first.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// How FFmpeg's MPEG-TS demuxer words a transport packet counter that skipped: damage, unless
/// at the seam of joined streams (see `continuity`).
const CONTINUITY: &str = "Continuity check failed";

/// What a watched context logged.
#[derive(Debug, Default)]
pub struct LogTally {
    damage: Counted,
    stale_drops: Counted,
    continuity: Mutex<Vec<String>>,
}

impl LogTally {
    /// Damage messages seen, except the stale reference drops.
    pub fn count(&self) -> u64 {
        self.damage.count()
    }

    /// The first of them, as FFmpeg worded it.
    pub fn first(&self) -> Option<String> {
        self.damage.first()
    }

    /// Messages about references the decoder does not hold ("mmco: unref short failure",
    /// "Frame num gap"): damage, unless decoding started after those pictures.
    pub fn stale_drops(&self) -> u64 {
        self.stale_drops.count()
    }

    /// The first of them, as FFmpeg worded it.
    pub fn first_stale_drop(&self) -> Option<String> {
        self.stale_drops.first()
    }

    /// The continuity errors logged since the last call, as FFmpeg worded them (not in
    /// `count`: the reader decides which are damage).
    pub fn take_continuity(&self) -> Vec<String> {
        std::mem::take(&mut *self.continuity.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Forget what was counted so far.
    pub fn reset(&self) {
        self.damage.reset();
        self.stale_drops.reset();
        self.take_continuity();
    }

    fn record(&self, text: Option<&str>) {
        match text {
            Some(t) if STALE_REFERENCES.iter().any(|s| t.starts_with(s)) => {
                self.stale_drops.record(text)
            }
            Some(t) if t.starts_with(CONTINUITY) => self
                .continuity
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(t.to_owned()),
            _ => self.damage.record(text),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subject {
    /// A demuxer: the AVFormatContext's address.
    Demuxer(usize),
    /// A decoder and its frame-thread copies: the token stored in their `opaque`.
    Decoder(usize),
}

struct Watched {
    subject: Subject,
    tally: Arc<LogTally>,
}

static WATCHES: Mutex<Vec<Watched>> = Mutex::new(Vec::new());

/// Counting is active while this lives.
#[derive(Debug)]
pub struct LogWatch {
    subject: Subject,
    tally: Arc<LogTally>,
}

impl LogWatch {
    fn start(subject: Subject, tally: Arc<LogTally>) -> Self {
        WATCHES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Watched {
                subject,
                tally: tally.clone(),
            });
        Self { subject, tally }
    }

    /// Watch the demuxer `ctx` (the address identifies it in the log).
    pub fn demuxer(ctx: *const ffi::AVFormatContext) -> Self {
        Self::start(Subject::Demuxer(ctx as usize), Arc::default())
    }

    /// Watch the decoder `ctx`, which must not be opened yet: its `opaque` field is set to
    /// a token that FFmpeg copies into the frame-thread contexts, so their messages count
    /// too.
    ///
    /// # Safety
    /// `ctx` must point to a valid codec context whose `opaque` field nothing else uses.
    pub unsafe fn decoder(ctx: *mut ffi::AVCodecContext) -> Self {
        let tally = Arc::<LogTally>::default();
        let token = Arc::as_ptr(&tally) as usize;
        // SAFETY: the caller guarantees `ctx` is valid and that `opaque` is ours to set.
        unsafe { (*ctx).opaque = token as *mut c_void };
        Self::start(Subject::Decoder(token), tally)
    }

    /// What was counted so far.
    pub fn tally(&self) -> &LogTally {
        &self.tally
    }
}

impl Drop for LogWatch {
    fn drop(&mut self) {
        let mut watches = WATCHES.lock().unwrap_or_else(|e| e.into_inner());
        watches.retain(|w| !(w.subject == self.subject && Arc::ptr_eq(&w.tally, &self.tally)));
    }
}

/// Whether a message at `level` with format `fmt` reports damage.
fn is_damage(level: c_int, fmt: &[u8]) -> bool {
    let contains = |needle: &[u8]| fmt.windows(needle.len()).any(|w| w == needle);
    if level <= ffi::AV_LOG_ERROR as c_int {
        !NOT_DAMAGE.iter().any(|n| contains(n))
    } else {
        DAMAGE_WARNINGS.iter().any(|w| fmt.starts_with(w))
    }
}

/// The tally a log message belongs to, if it reports damage in a watched context.
///
/// # Safety
/// `class` and `fmt` must be the arguments FFmpeg passed to its log callback.
pub(crate) unsafe fn tally_for(
    class: *mut c_void,
    level: c_int,
    fmt: *const c_char,
) -> Option<Arc<LogTally>> {
    if class.is_null() || fmt.is_null() {
        return None;
    }
    // SAFETY: FFmpeg's format strings are NUL-terminated literals.
    let text = unsafe { CStr::from_ptr(fmt) }.to_bytes();
    if !is_damage(level, text) {
        return None;
    }
    let watches = WATCHES.lock().ok()?;
    if watches.is_empty() {
        return None;
    }
    let address = class as usize;
    // SAFETY: FFmpeg logs with a pointer to a struct whose first field is its AVClass
    // pointer; when that class is the codec-context class, the struct is an AVCodecContext.
    let token = unsafe {
        let is_codec = *(class as *const *const ffi::AVClass) == ffi::avcodec_get_class();
        is_codec.then(|| (*(class as *const ffi::AVCodecContext)).opaque as usize)
    };
    watches
        .iter()
        .find(|w| match w.subject {
            Subject::Demuxer(a) => a == address,
            Subject::Decoder(t) => token == Some(t),
        })
        .map(|w| w.tally.clone())
}

/// Count a message for `tally`, keeping its text if it is the first.
pub(crate) fn record(tally: &LogTally, text: Option<&str>) {
    tally.record(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_count_except_hwaccel_setup_and_some_warnings_count() {
        let error = ffi::AV_LOG_ERROR as c_int;
        let warning = ffi::AV_LOG_WARNING as c_int;
        let debug = ffi::AV_LOG_DEBUG as c_int;
        assert!(is_damage(error, b"File ended prematurely\n"));
        assert!(is_damage(error, b"Could not find ref with POC %d\n"));
        assert!(!is_damage(
            error,
            b"Failed setup for format %s: hwaccel initialisation returned error.\n"
        ));
        // NVDEC's capability check (FFmpeg's nvdec.c) before it falls back to software.
        for setup in [
            &b"Hardware is lacking required capabilities\n"[..],
            b"Video width %d not within range from %d to %d\n",
            b"Video height %d not within range from %d to %d\n",
            b"Video macroblock count %d exceeds maximum of %d\n",
        ] {
            assert!(!is_damage(error, setup));
        }
        assert!(is_damage(
            error,
            b"hardware accelerator failed to decode picture\n"
        ));
        assert!(is_damage(
            debug,
            b"Continuity check failed for pid %d expected %d got %d\n"
        ));
        assert!(is_damage(warning, b"PES packet size mismatch\n"));
        assert!(is_damage(debug, b"Frame num gap %d %d\n"));
        assert!(!is_damage(warning, b"Estimating duration from bitrate\n"));
    }

    #[test]
    fn a_watch_counts_only_its_own_context_until_dropped() {
        crate::init();
        let mut fake = [0u8; 64];
        let ctx = fake.as_mut_ptr() as *const ffi::AVFormatContext;
        let watch = LogWatch::demuxer(ctx);
        let fmt = c"File ended prematurely\n";
        // SAFETY: a fake context whose first field is a null class pointer; tally_for
        // only compares its address and reads that field.
        let t = unsafe { tally_for(ctx as *mut c_void, ffi::AV_LOG_ERROR as c_int, fmt.as_ptr()) };
        record(&t.expect("watched"), Some("File ended prematurely"));
        let mut other = [0u8; 64];
        // SAFETY: as above.
        let none = unsafe {
            tally_for(
                other.as_mut_ptr() as *mut c_void,
                ffi::AV_LOG_ERROR as c_int,
                fmt.as_ptr(),
            )
        };
        assert!(none.is_none());
        assert_eq!(watch.tally().count(), 1);
        assert_eq!(
            watch.tally().first().as_deref(),
            Some("File ended prematurely")
        );
        record(&watch.tally, Some("mmco: unref short failure"));
        assert_eq!(watch.tally().count(), 1, "a stale drop is counted apart");
        assert_eq!(watch.tally().stale_drops(), 1);
        record(&watch.tally, Some("Frame num gap 3 1"));
        assert_eq!(watch.tally().stale_drops(), 2);
        watch.tally().reset();
        assert_eq!((watch.tally().count(), watch.tally().stale_drops()), (0, 0));
        drop(watch);
        // SAFETY: as above.
        let gone =
            unsafe { tally_for(ctx as *mut c_void, ffi::AV_LOG_ERROR as c_int, fmt.as_ptr()) };
        assert!(gone.is_none());
    }
}
