//! `AudioCheck`: the input's audio streams decoded while the plan reads every packet, so that
//! damage inside the audio (which RAVE copies without decoding) is seen before any work: a
//! container whose index and timestamps are intact can still carry audio packets whose bytes
//! were zeroed, flipped or overwritten, and copying them passes the damage on in silence.
//!
//! Each stream is decoded on its own thread (AAC decodes at about 1000x real time on one
//! core, AC-3 5.1 about 500x, Opus about 300x), with the decoders' checksum checks on (AC-3,
//! E-AC-3, FLAC and MP3 frames that carry a CRC). A packet counts as damaged when its
//! decoder refuses it or logs an error while decoding it. The first packet of a stream is
//! forgiven: a stream cut by a stream copy may start on a frame that refers to data before
//! the cut (MP3's bit reservoir) and decodes with an error in an undamaged file. In an
//! MPEG-TS or MPEG-PS file, which may be cut at any pack or packet (a DVD's VOB cut at a
//! pack), the first few packets until one decodes are forgiven too: the tail of a frame
//! cut in two comes first ("Header missing"). So are a part's, where parts cut so are
//! joined (`AudioCheck::part_starts`: DVD VOBs cut at a pack and joined with `cat`).

use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use ffmpeg_next::format::context::Input;
use ffmpeg_next::media::Type;
use ffmpeg_next::util::error::EAGAIN;
use ffmpeg_next::{Packet, ffi};

use crate::log_watch::LogWatch;

/// Packets queued to a stream's decoder before the reader waits for it.
const QUEUE: usize = 512;

/// Packets at the start of an MPEG-TS/PS audio stream forgiven until one decodes: the
/// pieces of a frame a cut split.
const CUT_FRAGMENTS: usize = 4;

/// What decoding the audio found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AudioVerdict {
    /// Audio packets whose decoder refused them or logged an error decoding them.
    pub damaged_packets: u64,
    /// The first of them, in words.
    pub first_problem: Option<String>,
}

/// The audio decoders running beside a read of the whole input.
pub struct AudioCheck {
    /// Per stream index of the input, the worker decoding it (audio streams with a decoder).
    workers: Vec<Option<Worker>>,
    /// Where the file's earliest stream starts (times in messages count from here).
    start_s: f64,
}

struct Worker {
    packets: SyncSender<Fed>,
    done: JoinHandle<StreamVerdict>,
}

/// What a stream's decoder is fed.
enum Fed {
    /// A packet of its stream.
    Packet(Packet),
    /// A part joined starts: its first packets are the file's start's.
    Part,
}

/// One stream's result.
struct StreamVerdict {
    damaged: u64,
    /// Where the first damaged packet is (seconds) and what its decoder said.
    first: Option<(f64, String)>,
}

impl AudioCheck {
    /// Start a decoder for every audio stream of `input` that this FFmpeg can decode (a
    /// stream it cannot is left unchecked: it is copied all the same).
    pub fn start(input: &Input) -> Self {
        let forgiven = match crate::sys::timestamps_may_restart(input) {
            true => CUT_FRAGMENTS,
            false => 1,
        };
        let workers = input
            .streams()
            .map(|stream| {
                (stream.parameters().medium() == Type::Audio)
                    .then(|| Worker::start(&stream, forgiven))
                    .flatten()
            })
            .collect();
        Self {
            workers,
            start_s: crate::output_timeline::earliest_start_s(input),
        }
    }

    /// Decode `packet` if it belongs to a checked stream.
    pub fn feed(&self, packet: &Packet) {
        if let Some(Some(worker)) = self.workers.get(packet.stream()) {
            // A worker that stopped (it cannot: it drains until the sender is dropped) is
            // reported by `finish`.
            let _ = worker.packets.send(Fed::Packet(packet.clone()));
        }
    }

    /// A part joined starts (the timestamps restarted): each stream's next packets until
    /// one decodes are forgiven as a file's first are, the part cut anywhere too.
    pub fn part_starts(&self) {
        for worker in self.workers.iter().flatten() {
            let _ = worker.packets.send(Fed::Part);
        }
    }

    /// Drain every decoder and sum what they found; the first problem is the earliest in
    /// the file's time, named by its stream.
    pub fn finish(self) -> AudioVerdict {
        let mut verdict = AudioVerdict::default();
        let mut earliest: Option<f64> = None;
        for (index, worker) in self.workers.into_iter().enumerate() {
            let Some(worker) = worker else { continue };
            drop(worker.packets);
            let Ok(found) = worker.done.join() else {
                continue;
            };
            verdict.damaged_packets += found.damaged;
            if let Some((at, why)) = found.first
                && earliest.is_none_or(|e| at < e)
            {
                earliest = Some(at);
                let at = (at - self.start_s).max(0.0);
                verdict.first_problem = Some(format!(
                    "stream #{index}: the audio packet at {at:.3} s does not decode ({why}): its bytes are damaged"
                ));
            }
        }
        verdict
    }
}

impl Worker {
    /// A decoder of `stream` whose first `forgiven` packets are forgiven until one decodes.
    fn start(stream: &ffmpeg_next::Stream, forgiven: usize) -> Option<Self> {
        let mut ctx =
            ffmpeg_next::codec::context::Context::from_parameters(stream.parameters()).ok()?;
        // SAFETY: `ctx` owns a valid, not yet opened codec context whose `opaque` nothing
        // else uses; `err_recognition` is a plain flag field read when it opens.
        let log = unsafe {
            (*ctx.as_mut_ptr()).err_recognition |= ffi::AV_EF_CRCCHECK;
            LogWatch::decoder(ctx.as_mut_ptr())
        };
        let decoder = ctx.decoder().audio().ok()?;
        let tb = stream.time_base();
        let unit_s = match tb.denominator() {
            0 => 0.0,
            d => f64::from(tb.numerator()) / f64::from(d),
        };
        let (packets, queue) = sync_channel::<Fed>(QUEUE);
        let done = std::thread::Builder::new()
            .name("audio-check".into())
            .spawn(move || decode_all(decoder, log, unit_s, forgiven, queue))
            .ok()?;
        Some(Self { packets, done })
    }
}

/// Decode every packet `queue` delivers until the reader drops its end; the first
/// `forgiven` packets are forgiven until one decodes, the file's and each part's.
fn decode_all(
    mut decoder: ffmpeg_next::decoder::Audio,
    log: LogWatch,
    unit_s: f64,
    forgiven: usize,
    queue: std::sync::mpsc::Receiver<Fed>,
) -> StreamVerdict {
    let mut decoded_one = false;
    let mut verdict = StreamVerdict {
        damaged: 0,
        first: None,
    };
    let mut frame = ffmpeg_next::frame::Audio::empty();
    // Packets of the file, or of the part joined last, so far.
    let mut n = 0;
    for fed in queue {
        let packet = match fed {
            Fed::Packet(packet) => packet,
            Fed::Part => {
                (n, decoded_one) = (0, false);
                continue;
            }
        };
        n += 1;
        let logged = log.tally().count();
        let mut refused = match decoder.send_packet(&packet) {
            Ok(()) => None,
            Err(ffmpeg_next::Error::Other { errno }) if errno == EAGAIN => None,
            Err(e) => Some(e.to_string()),
        };
        loop {
            match decoder.receive_frame(&mut frame) {
                Ok(()) => {}
                Err(ffmpeg_next::Error::Other { errno }) if errno == EAGAIN => break,
                Err(ffmpeg_next::Error::Eof) => break,
                Err(e) => {
                    refused.get_or_insert_with(|| e.to_string());
                    break;
                }
            }
        }
        let failed = refused.is_some() || log.tally().count() > logged;
        let forgive = n == 1 || (n <= forgiven && !decoded_one);
        decoded_one |= !failed;
        if forgive {
            log.tally().reset();
            continue;
        }
        if !failed {
            continue;
        }
        verdict.damaged += 1;
        if verdict.first.is_none() {
            let at = packet.pts().or(packet.dts()).unwrap_or(0) as f64 * unit_s;
            let why = log
                .tally()
                .first()
                .map(|t| t.trim().trim_end_matches('.').to_owned());
            let why = why.or(refused).unwrap_or_else(|| "decoder error".into());
            verdict.first = Some((at, why));
        }
    }
    verdict
}
