//! Ctrl+C and SIGTERM: the first stops the run in progress (and, in a batch, every input
//! after it); the second removes the unfinished output and leaves at once. One sent twice
//! at once (GNU `timeout` signals the process, then its process group) is the first alone.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rave_core::error::{EngineError, Result};
use rave_pipeline::CancelToken;
use rave_pipeline::cancel::StopReason;

use crate::console::{self, errln, outln};
use crate::failure::{self, ErrorObject};

/// The first Ctrl+C of `rave upscale` of one file: the run ends as a partial output.
pub const ON_UPSCALE: &str = "stopping, finalizing the frames done so far";
/// The first Ctrl+C of a batch: the run in progress ends as a partial output.
pub const ON_BATCH: &str =
    "stopping, finalizing the frames done so far; the inputs after it will not be started";
/// The first Ctrl+C of `rave benchmark`: the pass in progress stops.
pub const ON_BENCHMARK: &str = "stopping: during the inference or null pass the benchmark ends, during the full pass it is measured on the frames done";
/// The first Ctrl+C of `rave plan`: nothing is planned.
pub const ON_PLAN: &str =
    "stopping: the input's reading ends and no job is planned (one planned before stays as it is)";
/// The first Ctrl+C of `rave segment`: the segment is not kept.
pub const ON_SEGMENT: &str = "stopping: this segment is not kept unless it has just finished (its frames so far are discarded; run the same command again to redo it)";
/// The first Ctrl+C of `rave assemble`: joining copies the segments, so it finishes.
pub const ON_ASSEMBLE: &str = "finishing the output: joining only copies the finished segments";

/// Set once the command's runs are over: Ctrl+C then has nothing left to stop.
static WORK_OVER: AtomicBool = AtomicBool::new(false);

/// The runs are a batch's (installed with [`ON_BATCH`]): finishing it takes --skip-existing.
static IN_BATCH: AtomicBool = AtomicBool::new(false);

/// The batch's `--json` document as far as it got (its inputs that ended, the exit code of
/// an interrupted batch): a second Ctrl+C's JSON error is this with its `error`.
static BATCH: Mutex<Option<serde_json::Value>> = Mutex::new(None);

/// Set by whoever prints the command's one `--json` document first: the result, or a
/// second Ctrl+C's error, never both.
static FINAL_DOCUMENT: AtomicBool = AtomicBool::new(false);

/// Claim the printing of the command's `--json` document: false where it was claimed
/// already (a second Ctrl+C's error and the result racing), and then nothing is printed.
pub fn claim_final_document() -> bool {
    !FINAL_DOCUMENT.swap(true, Ordering::SeqCst)
}

/// Folders a second Ctrl+C removes before leaving: scratch that no later run resumes.
static SCRATCH: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Have a second Ctrl+C remove `folder` (and all it holds) before leaving: a scratch work
/// folder, such as a benchmark's, that nobody would resume.
pub fn remove_on_abort(folder: &Path) {
    lock(&SCRATCH).push(folder.to_path_buf());
}

/// A batch starts with `report` (its inputs not run yet, the exit code of an interrupted
/// batch): with `--json`, a second Ctrl+C's JSON error is this document, the inputs that
/// ended added ([`input_ended`]), with its `error`: the one the batch prints, as far as it got.
pub fn batch_started(report: &crate::batch::BatchReport) {
    if console::json() {
        *lock(&BATCH) = serde_json::to_value(report).ok();
    }
}

/// A batch input ended as `result`: added to the batch document a second Ctrl+C prints (one
/// entry serialized, not the whole document again).
pub fn input_ended(result: &crate::batch::InputResult) {
    if let Some(doc) = lock(&BATCH).as_mut()
        && let Some(results) = doc.get_mut("results").and_then(|r| r.as_array_mut())
    {
        results.push(serde_json::to_value(result).unwrap_or_default());
    }
}

/// Remove the folders given to [`remove_on_abort`].
fn remove_scratch() {
    for folder in lock(&SCRATCH).iter() {
        let _ = std::fs::remove_dir_all(folder);
    }
}

/// The command's runs are over (its result is being printed): a first Ctrl+C from now on
/// is ignored rather than answered after the run's last event (a second one still leaves).
pub fn work_over() {
    WORK_OVER.store(true, Ordering::SeqCst);
}

/// A stop signal this soon after the first is the same stop delivered twice (`timeout`
/// signals the process and then its process group; a supervisor may do likewise), not a
/// second Ctrl+C: a person's second press comes later.
const SAME_STOP: Duration = Duration::from_millis(150);

/// What a stop signal (Ctrl+C, SIGTERM, SIGHUP) is as it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The first.
    First,
    /// The first again, sent twice at once ([`SAME_STOP`]).
    Again,
    /// A second one.
    Second,
}

/// What the handler shares with the runs: when the first stop signal came (none yet:
/// Ctrl+C was not pressed), and the token of the run in progress.
#[derive(Default)]
struct Shared {
    first_at: Mutex<Option<Instant>>,
    current: Mutex<CancelToken>,
}

impl Shared {
    /// What a stop signal arriving now is; the first is recorded.
    fn on_stop(&self) -> Stop {
        let mut first_at = lock(&self.first_at);
        let now = Instant::now();
        match *first_at {
            None => {
                *first_at = Some(now);
                Stop::First
            }
            Some(t) if now.duration_since(t) < SAME_STOP => Stop::Again,
            Some(_) => Stop::Second,
        }
    }

    /// Whether a stop signal came.
    fn asked(&self) -> bool {
        lock(&self.first_at).is_some()
    }
}

/// The installed Ctrl+C handler. Each run gets a fresh token from [`Interrupts::next_run`]:
/// a run that fails cancels its own token, which must not stop the runs after it.
pub struct Interrupts(Arc<Shared>);

impl Interrupts {
    /// Install the handler (once per process). `first` is what the first Ctrl+C says the
    /// command does (one of the `ON_*` lines); with `--progress jsonl` its messages are
    /// events, as every other line on stderr (`console::set_modes`).
    ///
    /// A file-size limit (`ulimit -f`) makes writes fail with EFBIG instead of killing the
    /// process with SIGXFSZ, so the run ends with a write error (exit 4) and removes its
    /// temporary file.
    ///
    /// SIGINT and SIGHUP that were ignored when RAVE started stay ignored: `nohup rave ...`
    /// goes on after the terminal closes, and a background job of a script is not stopped
    /// by a Ctrl+C meant for the script (SIGTERM is always answered).
    pub fn install(first: &'static str) -> Result<Self> {
        IN_BATCH.store(first == ON_BATCH, Ordering::SeqCst);
        // SAFETY: setting a signal's disposition to SIG_IGN installs no handler code;
        // nothing in RAVE relies on SIGXFSZ's default action.
        unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
        let kept_ignored: Vec<libc::c_int> = [libc::SIGINT, libc::SIGHUP]
            .into_iter()
            .filter(|&signal| ignored_at_start(signal))
            .collect();
        let shared = Arc::new(Shared::default());
        let handler = Arc::clone(&shared);
        ctrlc::set_handler(move || {
            // The work is over (the report is being printed): nothing to stop, nothing to say
            // after the last event; a second Ctrl+C still leaves at once.
            let stop = handler.on_stop();
            if WORK_OVER.load(Ordering::SeqCst) {
                if stop == Stop::Second {
                    // SAFETY: as below; every output is settled by now.
                    unsafe { libc::_exit(130) };
                }
                return;
            }
            if stop == Stop::Again {
                return;
            }
            if stop == Stop::Second {
                aborted();
                rave_pipeline::output_file::remove_in_flight();
                remove_scratch();
                // SAFETY: _exit ends the process at once. `exit` would run atexit handlers
                // and library destructors (ONNX Runtime's) while the other threads still
                // use them, and let those threads go on creating files and printing errors
                // meanwhile.
                unsafe { libc::_exit(130) };
            }
            // One handler for SIGINT, SIGTERM and SIGHUP: the words fit each.
            say(&format!("{first} (Ctrl+C or SIGTERM again to abort)"));
            lock(&handler.current).cancel(StopReason::User);
        })
        .map_err(|e| {
            EngineError::InvariantViolation(format!("cannot install the Ctrl+C handler: {e}"))
        })?;
        for signal in kept_ignored {
            // SAFETY: as for SIGXFSZ above: back to the disposition RAVE was started with.
            unsafe { libc::signal(signal, libc::SIG_IGN) };
        }
        Ok(Self(shared))
    }

    /// A fresh token for the next run, already cancelled when Ctrl+C was pressed before.
    pub fn next_run(&self) -> CancelToken {
        let token = CancelToken::new();
        let mut current = lock(&self.0.current);
        *current = token.clone();
        // Checked under the lock: a Ctrl+C after this point finds the new token in place.
        if self.asked() {
            token.cancel(StopReason::User);
        }
        token
    }

    /// Whether Ctrl+C (or SIGTERM) was received.
    pub fn asked(&self) -> bool {
        self.0.asked()
    }
}

/// Whether `signal` was ignored (SIG_IGN) when RAVE started, as `nohup` leaves SIGHUP and
/// a non-interactive shell a background job's SIGINT.
fn ignored_at_start(signal: libc::c_int) -> bool {
    // SAFETY: sigaction with no new action only writes the current one into `current`, a
    // plain C struct for which all zeroes is a valid value.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

/// Print what Ctrl+C does: a line of its own below the progress, or an `interrupt` event.
fn say(message: &str) {
    match console::jsonl() {
        true => errln!(
            "{}",
            serde_json::json!({"event": "interrupt", "message": message})
        ),
        false => errln!("{}rave: {message}", below_the_bar()),
    }
}

/// What goes before a line said during a run: a line end below the progress bar on a
/// terminal; nothing in a log or a pipe (no empty line).
fn below_the_bar() -> &'static str {
    match std::io::stderr().is_terminal() {
        true => "\n",
        false => "",
    }
}

/// Say that a second Ctrl+C aborts the run: its last words, as the error of a run that
/// failed (the JSON error with `--json`, in a batch with the `results` of the inputs that
/// ended before; an `error` event with `--progress jsonl`).
fn aborted() {
    // A benchmark's scratch (its passes' output and work folder) goes whole; a run's work
    // folder stays for the next run.
    let message = match (lock(&SCRATCH).is_empty(), IN_BATCH.load(Ordering::SeqCst)) {
        (false, _) => {
            "aborted by a second stop signal (Ctrl+C, SIGTERM or SIGHUP); its scratch files were removed"
        }
        // The outputs finished stay: the same command would stop on the first of them.
        (true, true) => {
            "aborted by a second stop signal (Ctrl+C, SIGTERM or SIGHUP); the output being written was removed (the finished outputs are kept, and the work folder keeps the finished segments: run the same command again with --skip-existing to finish the batch)"
        }
        (true, false) => {
            "aborted by a second stop signal (Ctrl+C, SIGTERM or SIGHUP); the output being written was removed (the work folder keeps the segments finished: the same command resumes, and clears what this run left half-written there)"
        }
    };
    let object = ErrorObject {
        kind: "aborted",
        message: message.into(),
        ..ErrorObject::of(&EngineError::Cancelled)
    };
    let line = format!("{}rave: {}", below_the_bar(), object.message);
    let json = console::json();
    if json && claim_final_document() {
        // A batch's document as far as it got, with the error; a single run's, the error.
        let mut doc = lock(&BATCH)
            .clone()
            .filter(|_| IN_BATCH.load(Ordering::SeqCst))
            .unwrap_or_else(|| serde_json::json!({}));
        doc["error"] = serde_json::to_value(&object).unwrap_or_default();
        outln!("{doc}");
    }
    if console::jsonl() || !json {
        failure::say(&object, None, &line, false, console::jsonl());
    }
}

/// `m` locked, also after a thread panicked holding it (the data stays usable).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The token of a command that makes one run (`rave upscale` of one file, `rave benchmark`,
/// the distributed commands); `first` is what its first Ctrl+C does.
pub fn interrupt_on_ctrl_c(first: &'static str) -> Result<CancelToken> {
    Ok(Interrupts::install(first)?.next_run())
}
