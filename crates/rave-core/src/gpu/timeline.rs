//! A per-frame timeline of the pipeline's stages, for finding where a GPU waits (there is no
//! Nsight Systems on the machines RAVE is measured on). Off unless `RAVE_TIMELINE` names a
//! CSV file; then each stage marks host instants (`host`) and points on its CUDA stream
//! (`gpu`, a timing event there), and [`write`](fn@write) puts them in the file, one row a mark:
//! `section,what,seq,ms` with `section` the part of the run ([`section`]; `run` unless
//! named), `seq` the mark's count of its kind in the section (the frame's order, for stages
//! that take frames in order, one at a time) and `ms` from the start on a common clock.
//!
//! GPU marks are placed on the host's clock through one event the first GPU mark records and
//! waits for: its completion is taken to be the host instant the wait returned (within tens
//! of microseconds; that one wait is not in the report's count of host waits). Marking
//! costs an event record (a few microseconds); off, it costs an atomic load. Each GPU mark
//! keeps its event until the file is written, so recording stops after [`MAX_MARKS`]
//! (about an hour of 1080p at 100 fps). Marks are on one GPU: those of another device's
//! streams cannot be placed and are left out. Which stages mark: the decode, preprocess and
//! postprocess stages, and RAVE's native engine inside the inference (ONNX Runtime's
//! backends do not mark their GPU work; the host's `inf_begin`/`inf_end` are there).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};

/// Marks kept at most; later ones are dropped.
pub const MAX_MARKS: usize = 4_000_000;

/// Where a mark was taken.
enum When {
    Host(Instant),
    Gpu(CudaEvent),
}

struct Mark {
    section: &'static str,
    what: &'static str,
    seq: u64,
    when: When,
}

struct Marks {
    section: &'static str,
    marks: Vec<Mark>,
    counts: HashMap<&'static str, u64>,
    /// The first GPU mark's reference event and the host instant it was seen complete.
    base: Option<(CudaEvent, Instant)>,
}

struct Recorder {
    path: PathBuf,
    origin: Instant,
    marks: Mutex<Marks>,
}

fn recorder() -> Option<&'static Recorder> {
    static RECORDER: OnceLock<Option<Recorder>> = OnceLock::new();
    RECORDER
        .get_or_init(|| {
            std::env::var_os("RAVE_TIMELINE")
                .filter(|p| !p.is_empty())
                .map(|path| Recorder {
                    path: PathBuf::from(path),
                    origin: Instant::now(),
                    marks: Mutex::new(Marks {
                        section: "run",
                        marks: Vec::new(),
                        counts: HashMap::new(),
                        base: None,
                    }),
                })
        })
        .as_ref()
}

impl Recorder {
    fn push(&self, what: &'static str, when: When) {
        let mut m = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        if m.marks.len() >= MAX_MARKS {
            return;
        }
        let count = m.counts.entry(what).or_insert(0);
        let seq = *count;
        *count += 1;
        let section = m.section;
        m.marks.push(Mark {
            section,
            what,
            seq,
            when,
        });
    }
}

/// Start the part of the run called `name` (its marks counted from 0).
pub fn section(name: &'static str) {
    if let Some(r) = recorder() {
        let mut m = r.marks.lock().unwrap_or_else(|e| e.into_inner());
        m.section = name;
        m.counts.clear();
    }
}

/// Whether marks are being recorded.
pub fn enabled() -> bool {
    recorder().is_some()
}

/// Mark `what` at this host instant.
pub fn host(what: &'static str) {
    if let Some(r) = recorder() {
        r.push(what, When::Host(Instant::now()));
    }
}

/// Mark `what` at this point of `stream`'s queued work (when the GPU reaches it).
pub fn gpu(what: &'static str, stream: &CudaStream) {
    let Some(r) = recorder() else { return };
    let record = || stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT));
    {
        let mut m = r.marks.lock().unwrap_or_else(|e| e.into_inner());
        if m.marks.len() >= MAX_MARKS {
            return;
        }
        if m.base.is_none() {
            let Ok(base) = record() else { return };
            if base.synchronize().is_err() {
                return;
            }
            m.base = Some((base, Instant::now()));
        }
    }
    if let Ok(event) = record() {
        r.push(what, When::Gpu(event));
    }
}

/// Write the marks to the `RAVE_TIMELINE` file (waiting for the GPU's), if recording; a
/// failure is returned for the caller to log, never fatal.
pub fn write() -> std::io::Result<()> {
    let Some(r) = recorder() else { return Ok(()) };
    let m = r.marks.lock().unwrap_or_else(|e| e.into_inner());
    let origin = r.origin;
    let mut out = String::from("section,what,seq,ms\n");
    for mark in &m.marks {
        let ms = match (&mark.when, &m.base) {
            (When::Host(t), _) => t.duration_since(origin).as_secs_f64() * 1e3,
            (When::Gpu(event), Some((base, seen))) => {
                let Ok(after) = base.elapsed_ms(event) else {
                    continue;
                };
                seen.duration_since(origin).as_secs_f64() * 1e3 + f64::from(after)
            }
            (When::Gpu(_), None) => continue,
        };
        out.push_str(&format!(
            "{},{},{},{ms:.4}\n",
            mark.section, mark.what, mark.seq
        ));
    }
    std::fs::write(&r.path, out)
}
