//! The damage corpus: small clips with audio in every container RAVE reads (MP4, faststart
//! MP4, fragmented MP4, Matroska, WebM, MPEG-TS, AVI, FLV), and mutations of them with fixed seeds:
//! truncations, zeroed, cut, duplicated and garbage regions, garbage after a valid header,
//! bit flips in the header and in the data, and targeted MP4 sample-table damage.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use crate::common::ffmpeg;

/// Frames in every corpus clip (25 fps).
pub const FRAMES: u32 = 30;

/// A container of the corpus: file name and the ffmpeg arguments that make it.
pub struct Container {
    /// Short name (also the clip's file stem).
    pub name: &'static str,
    /// File extension.
    pub ext: &'static str,
    /// Muxer arguments, and codec arguments where the clip is not H.264 + AAC.
    pub args: &'static [&'static str],
}

/// H.264 with B-frames and a short GOP, and AAC: the codecs of most corpus clips.
const H264_AAC: [&str; 8] = ["-c:v", "libx264", "-bf", "2", "-g", "10", "-c:a", "aac"];

/// Every container of the corpus.
pub const CONTAINERS: [Container; 8] = [
    Container {
        name: "mp4",
        ext: "mp4",
        args: &[],
    },
    Container {
        name: "faststart",
        ext: "mp4",
        args: &[
            "-c:v",
            "libx264",
            "-bf",
            "2",
            "-g",
            "10",
            "-c:a",
            "aac",
            "-movflags",
            "+faststart",
        ],
    },
    Container {
        name: "fragmented",
        ext: "mp4",
        args: &["-movflags", "+frag_keyframe+empty_moov+default_base_moof"],
    },
    Container {
        name: "matroska",
        ext: "mkv",
        args: &[],
    },
    Container {
        name: "webm",
        ext: "webm",
        args: &[
            "-c:v",
            "libvpx-vp9",
            "-g",
            "10",
            "-deadline",
            "realtime",
            "-c:a",
            "libopus",
        ],
    },
    Container {
        name: "ts",
        ext: "ts",
        args: &[],
    },
    // No B-frames: AVI stores decode times only, and the last frames of a B-frame stream
    // have none (clean_inputs_e2e remuxes a B-frame stream into AVI).
    Container {
        name: "avi",
        ext: "avi",
        args: &["-c:v", "libx264", "-bf", "0", "-g", "10", "-c:a", "aac"],
    },
    Container {
        name: "flv",
        ext: "flv",
        args: &["-c:v", "libx264", "-bf", "2", "-g", "10", "-c:a", "aac"],
    },
];

/// Make the clean clip of `c` in `dir`: 30 frames of moving test content with a tone.
pub fn make_clean(dir: &Path, c: &Container) -> PathBuf {
    let path = dir.join(format!("{}.{}", c.name, c.ext));
    let secs = format!("{}", f64::from(FRAMES) / 25.0);
    let mut args = vec![
        "-f".to_string(),
        "lavfi".into(),
        "-i".into(),
        format!("testsrc2=size=64x48:rate=25:duration={secs}"),
        "-f".into(),
        "lavfi".into(),
        "-i".into(),
        format!("sine=frequency=440:sample_rate=48000:duration={secs}"),
    ];
    if !c.args.contains(&"-c:v") {
        args.extend(H264_AAC.iter().map(|s| s.to_string()));
    }
    args.extend(c.args.iter().map(|s| s.to_string()));
    args.extend(["-shortest".into(), path.to_str().unwrap().into()]);
    ffmpeg(&args.iter().map(String::as_str).collect::<Vec<_>>());
    path
}

/// One way of damaging a file.
#[derive(Debug, Clone, Copy)]
pub enum Mutation {
    /// Keep this fraction of the file.
    Truncate(f64),
    /// Zero 512 bytes at this fraction.
    Zero(f64),
    /// Remove 700 bytes at this fraction.
    Cut(f64),
    /// Repeat 700 bytes at this fraction.
    Duplicate(f64),
    /// Random bytes over 300 bytes at this fraction.
    Garbage(f64),
    /// Random bytes from this fraction to the end (a valid header, then garbage).
    GarbageTail(f64),
    /// Flip 4 random bits in the first 400 bytes (headers).
    HeaderFlips,
    /// Flip 8 random bits within 2000 bytes from this fraction.
    DataFlips(f64),
}

impl Mutation {
    /// A short name for file names and the outcome table.
    pub fn label(&self) -> String {
        let pct = |f: f64| (f * 100.0).round() as u32;
        match self {
            Mutation::Truncate(f) => format!("truncate{}", pct(*f)),
            Mutation::Zero(f) => format!("zero{}", pct(*f)),
            Mutation::Cut(f) => format!("cut{}", pct(*f)),
            Mutation::Duplicate(f) => format!("dup{}", pct(*f)),
            Mutation::Garbage(f) => format!("garbage{}", pct(*f)),
            Mutation::GarbageTail(f) => format!("garbagetail{}", pct(*f)),
            Mutation::HeaderFlips => "headerflips".into(),
            Mutation::DataFlips(f) => format!("flips{}", pct(*f)),
        }
    }

    /// `data` damaged this way, with the random choices drawn from `seed`.
    pub fn apply(&self, data: &[u8], seed: u32) -> Vec<u8> {
        let mut rng = XorShift(seed.max(1));
        let n = data.len();
        let at = |f: f64| ((n as f64 * f) as usize).min(n);
        let mut out = data.to_vec();
        match *self {
            Mutation::Truncate(f) => out.truncate(at(f)),
            Mutation::Zero(f) => {
                let p = at(f);
                out[p..(p + 512).min(n)].fill(0);
            }
            Mutation::Cut(f) => {
                let p = at(f);
                out.drain(p..(p + 700).min(n));
            }
            Mutation::Duplicate(f) => {
                let p = at(f);
                let copy = data[p..(p + 700).min(n)].to_vec();
                out.splice(p..p, copy);
            }
            Mutation::Garbage(f) => {
                let p = at(f);
                out[p..(p + 300).min(n)].fill_with(|| rng.byte());
            }
            Mutation::GarbageTail(f) => out[at(f)..].fill_with(|| rng.byte()),
            Mutation::HeaderFlips => {
                for _ in 0..4 {
                    let i = rng.below(400.min(n));
                    out[i] ^= 1 << rng.below(8);
                }
            }
            Mutation::DataFlips(f) => {
                let p = at(f);
                for _ in 0..8 {
                    let i = p + rng.below(2000.min(n - p));
                    out[i] ^= 1 << rng.below(8);
                }
            }
        }
        out
    }
}

/// Every generic mutation of the corpus, in order (their index is their seed).
pub fn mutations() -> Vec<Mutation> {
    let mut all: Vec<Mutation> = [0.1, 0.3, 0.5, 0.9]
        .into_iter()
        .map(Mutation::Truncate)
        .collect();
    for f in [0.3, 0.6] {
        all.extend([
            Mutation::Zero(f),
            Mutation::Cut(f),
            Mutation::Duplicate(f),
            Mutation::Garbage(f),
        ]);
    }
    all.extend([
        Mutation::GarbageTail(0.2),
        Mutation::HeaderFlips,
        Mutation::DataFlips(0.5),
    ]);
    all
}

/// Overwrite `bytes` with random bytes drawn from `seed`.
pub fn fill_garbage(bytes: &mut [u8], seed: u32) {
    let mut rng = XorShift(seed.max(1));
    bytes.fill_with(|| rng.byte());
}

/// A deterministic xorshift32 generator.
struct XorShift(u32);

impl XorShift {
    fn next(&mut self) -> u32 {
        let mut s = self.0;
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        self.0 = s;
        s
    }

    fn byte(&mut self) -> u8 {
        self.next() as u8
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { self.next() as usize % n }
    }
}

/// Byte offsets of every box named `kind` inside the MP4 `data`, depth first, descending
/// into the container boxes on the way to the sample tables.
pub fn find_boxes(data: &[u8], kind: &[u8; 4]) -> Vec<usize> {
    const CONTAINERS: [&[u8; 4]; 6] = [b"moov", b"trak", b"edts", b"mdia", b"minf", b"stbl"];
    fn walk(data: &[u8], start: usize, end: usize, kind: &[u8; 4], found: &mut Vec<usize>) {
        let mut pos = start;
        while pos + 8 <= end {
            let size = u32::from_be_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
            let name: &[u8] = &data[pos + 4..pos + 8];
            if size < 8 || pos + size > end {
                return;
            }
            if name == kind {
                found.push(pos);
            }
            if CONTAINERS.iter().any(|c| name == *c) {
                walk(data, pos + 8, pos + size, kind, found);
            }
            pos += size;
        }
    }
    let mut found = Vec::new();
    walk(data, 0, data.len(), kind, &mut found);
    found
}

/// The MP4 `data` (boxes of version 0, a movie time scale of 1000) trimmed to show its
/// first `end_ms` milliseconds, as QuickTime trims: every track's first edit, the movie's
/// and every track's duration shortened, the samples left as they are.
pub fn with_shown_until(data: &[u8], end_ms: u32) -> Vec<u8> {
    let mut out = data.to_vec();
    let mvhd = find_boxes(data, b"mvhd")[0];
    assert_eq!(
        (data[mvhd + 8], &data[mvhd + 20..mvhd + 24]),
        (0, &1000u32.to_be_bytes()[..])
    );
    let mut set = |at: usize| out[at..at + 4].copy_from_slice(&end_ms.to_be_bytes());
    set(mvhd + 24);
    for tkhd in find_boxes(data, b"tkhd") {
        assert_eq!(data[tkhd + 8], 0, "tkhd version");
        set(tkhd + 28);
    }
    let edits = find_boxes(data, b"elst");
    assert!(!edits.is_empty(), "no edit list to trim");
    for elst in edits {
        assert_eq!(data[elst + 8], 0, "elst version");
        set(elst + 16);
    }
    out
}

/// The MP4 `data` with the sample count of track `track`'s `stsz` box set to `count`.
pub fn with_sample_count(data: &[u8], track: usize, count: u32) -> Vec<u8> {
    let at = find_boxes(data, b"stsz")[track];
    let mut out = data.to_vec();
    out[at + 16..at + 20].copy_from_slice(&count.to_be_bytes());
    out
}

/// The MP4 `data` with bit `bit` of the composition offset (`ctts`, the first track's: the
/// video of an FFmpeg remux) of each sample in `samples` (decode order) flipped: their
/// presentation times damaged, nothing else. Each touched entry must be of one sample.
pub fn with_composition_offsets_flipped(
    data: &[u8],
    samples: std::ops::Range<usize>,
    bit: u32,
) -> Vec<u8> {
    let at = find_boxes(data, b"ctts")[0];
    let mut out = data.to_vec();
    let entries = u32::from_be_bytes(out[at + 12..at + 16].try_into().unwrap()) as usize;
    let mut sample = 0;
    for i in 0..entries {
        let p = at + 16 + 8 * i;
        let count = u32::from_be_bytes(out[p..p + 4].try_into().unwrap()) as usize;
        if samples.contains(&sample) {
            assert_eq!(count, 1, "ctts entry {i} holds {count} samples");
            let v = u32::from_be_bytes(out[p + 4..p + 8].try_into().unwrap()) ^ (1 << bit);
            out[p + 4..p + 8].copy_from_slice(&v.to_be_bytes());
        }
        sample += count;
    }
    out
}

/// The MP4 `data` with every chunk offset of track `track`'s `stco` box moved by `shift`.
pub fn with_shifted_chunks(data: &[u8], track: usize, shift: u32) -> Vec<u8> {
    let at = find_boxes(data, b"stco")[track];
    let mut out = data.to_vec();
    let entries = u32::from_be_bytes(out[at + 12..at + 16].try_into().unwrap()) as usize;
    for i in 0..entries {
        let p = at + 16 + 4 * i;
        let v = u32::from_be_bytes(out[p..p + 4].try_into().unwrap());
        out[p..p + 4].copy_from_slice(&v.wrapping_add(shift).to_be_bytes());
    }
    out
}

/// The MP4 `data` with the first run of track `track`'s `stsc` box that puts several
/// samples in each chunk putting one fewer: the chunk map then places fewer samples than the
/// size table lists, and FFmpeg reads the rest of the chunk as lost.
pub fn with_fewer_samples_per_chunk(data: &[u8], track: usize) -> Vec<u8> {
    let at = find_boxes(data, b"stsc")[track];
    let mut out = data.to_vec();
    let entries = u32::from_be_bytes(out[at + 12..at + 16].try_into().unwrap()) as usize;
    let p = (0..entries)
        .map(|i| at + 16 + 12 * i + 4)
        .find(|&p| u32::from_be_bytes(out[p..p + 4].try_into().unwrap()) > 1)
        .expect("a chunk of several samples");
    let n = u32::from_be_bytes(out[p..p + 4].try_into().unwrap());
    out[p..p + 4].copy_from_slice(&(n - 1).to_be_bytes());
    out
}

/// The fragmented MP4 `data` cut right after its `moov`: an init segment with no fragments.
pub fn init_segment_only(data: &[u8]) -> Vec<u8> {
    let at = find_boxes(data, b"moov")[0];
    let size = u32::from_be_bytes(data[at..at + 4].try_into().unwrap()) as usize;
    data[..at + size].to_vec()
}

/// The fragmented MP4 `data` without its `nth` movie fragment (its `moof` and the `mdat`
/// after it, up to the next `moof`, or for the last one up to the fragment index `mfra`
/// at the end): a segment a download or a copy left out. Every box still chains to the
/// end of the file; only the fragments' numbers, or the index, show the loss.
pub fn without_fragment(data: &[u8], nth: usize) -> Vec<u8> {
    let moofs = find_boxes(data, b"moof");
    let index = find_boxes(data, b"mfra");
    let end = moofs.get(nth + 1).or(index.first()).copied();
    let end = end.unwrap_or_else(|| panic!("fragment {nth} of {}", moofs.len()));
    [&data[..moofs[nth]], &data[end..]].concat()
}

/// An EBML element at `pos`: (ID with marker bits, header length, payload size).
fn ebml_element(data: &[u8], pos: usize) -> Option<(u32, usize, usize)> {
    let vint_len = |b: u8| b.leading_zeros() as usize + 1;
    let id_len = vint_len(*data.get(pos)?);
    let id = data
        .get(pos..pos + id_len)?
        .iter()
        .fold(0u32, |a, &x| (a << 8) | u32::from(x));
    let size_at = pos + id_len;
    let size_len = vint_len(*data.get(size_at)?);
    let raw = data.get(size_at..size_at + size_len)?;
    let mask = if size_len == 8 { 0 } else { 0xFFu8 >> size_len };
    let size = raw[1..]
        .iter()
        .fold(u64::from(raw[0] & mask), |a, &x| (a << 8) | u64::from(x));
    Some((id, id_len + size_len, size as usize))
}

/// The Matroska `data` (written without CRC-32 elements) with the `nth` audio block (track
/// 2) moved 200 ms back in time, so that the audio timestamps go backwards there.
pub fn with_audio_going_back(data: &[u8], nth: usize) -> Vec<u8> {
    with_audio_blocks_moved(data, nth..nth + 1, -200)
}

/// The Matroska `data` (written without CRC-32 elements) with the audio blocks (track 2)
/// `blocks` (counted from 0) moved `ms` milliseconds in time: one block, a timestamp
/// damaged by a flipped bit; every block from one on, a pause in the sound.
pub fn with_audio_blocks_moved(data: &[u8], blocks: std::ops::Range<usize>, ms: i16) -> Vec<u8> {
    with_blocks_moved(data, 2, blocks, ms)
}

/// The Matroska `data` (written without CRC-32 elements) with the blocks `blocks` of
/// `track` (1: the video of an FFmpeg remux, 2: its audio) moved `ms` milliseconds.
pub fn with_blocks_moved(
    data: &[u8],
    track: u8,
    blocks: std::ops::Range<usize>,
    ms: i16,
) -> Vec<u8> {
    let mut out = data.to_vec();
    let (_, h, ebml) = ebml_element(data, 0).expect("EBML header");
    let segment = h + ebml;
    let (_, h, _) = ebml_element(data, segment).expect("segment");
    let mut pos = segment + h;
    let mut seen = 0;
    while let Some((id, h, size)) = ebml_element(data, pos) {
        if id == 0x1F43_B675 {
            let mut child = pos + h;
            while child < pos + h + size {
                let (cid, ch, csize) = ebml_element(data, child).expect("cluster child");
                let body = child + ch;
                if cid == 0xA3 && data[body] == 0x80 | track {
                    if blocks.contains(&seen) {
                        let t = i16::from_be_bytes([data[body + 1], data[body + 2]]) + ms;
                        out[body + 1..body + 3].copy_from_slice(&t.to_be_bytes());
                    }
                    seen += 1;
                    if seen == blocks.end {
                        return out;
                    }
                }
                child = body + csize;
            }
        }
        pos += h + size;
    }
    panic!("fewer than {} blocks of track {track}", blocks.end);
}

/// The MPEG-TS `data` with the first ADTS sync word after its middle zeroed: one AAC packet
/// whose header no muxer can parse, with the transport stream itself intact.
pub fn with_broken_adts_header(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    let at = data[data.len() / 2..]
        .windows(2)
        .position(|w| w == [0xFF, 0xF1])
        .expect("an ADTS header")
        + data.len() / 2;
    out[at..at + 2].fill(0);
    out
}

/// Where each PES of a transport stream `data` whose stream ID passes `id` starts (its
/// payload: 00 00 01 ID), at least ten of them.
pub fn pes_starts(data: &[u8], id: impl Fn(u8) -> bool) -> Vec<usize> {
    let starts: Vec<usize> = (0..data.len() / 188)
        .map(|k| k * 188)
        .filter(|&at| data[at] == 0x47 && data[at + 1] & 0x40 != 0)
        .filter_map(|at| {
            let payload = match (data[at + 3] >> 4) & 3 {
                3 => at + 5 + usize::from(data[at + 4]),
                1 => at + 4,
                _ => return None,
            };
            let head = data.get(payload..payload + 4)?;
            (head[..3] == [0, 0, 1] && id(head[3])).then_some(payload)
        })
        .collect();
    assert!(starts.len() >= 10, "{} PES starts", starts.len());
    starts
}

/// The PTS of the PES starting at `at` in the transport stream `data` (90 kHz), and
/// whether the PES carries a DTS too.
pub fn pes_pts(data: &[u8], at: usize) -> (u64, bool) {
    (pes_time(data, at + 9), data[at + 7] >> 6 == 3)
}

/// The 33-bit 90 kHz time whose five bytes (with marker bits) start at `at`.
fn pes_time(data: &[u8], at: usize) -> u64 {
    let b = &data[at..at + 5];
    (u64::from(b[0] >> 1 & 7) << 30)
        | (u64::from(b[1]) << 22)
        | (u64::from(b[2] >> 1) << 15)
        | (u64::from(b[3]) << 7)
        | u64::from(b[4] >> 1)
}

/// The transport stream `data` with bit `bit` of the PTS of the PES starting at `at`
/// flipped (the 33-bit 90 kHz field split over five bytes with marker bits).
pub fn with_pes_pts_bit_flipped(data: &[u8], at: usize, bit: u32) -> Vec<u8> {
    with_pes_pts(data, at, pes_pts(data, at).0 ^ (1 << bit))
}

/// The transport stream `data` with the PTS of the PES starting at `at` moved by `ticks`
/// of the 90 kHz clock.
pub fn with_pes_pts_moved(data: &[u8], at: usize, ticks: i64) -> Vec<u8> {
    with_pes_pts(
        data,
        at,
        pes_pts(data, at).0.wrapping_add_signed(ticks) & ((1 << 33) - 1),
    )
}

/// The transport stream `data` with the DTS of the PES starting at `at` (which carries
/// one) moved by `ticks` of the 90 kHz clock.
pub fn with_pes_dts_moved(data: &[u8], at: usize, ticks: i64) -> Vec<u8> {
    let v = pes_time(data, at + 14).wrapping_add_signed(ticks) & ((1 << 33) - 1);
    let mut out = data.to_vec();
    set_pes_time(&mut out, at + 14, v);
    out
}

/// The transport stream `data` with the PTS of the PES starting at `at` set to `v`.
fn with_pes_pts(data: &[u8], at: usize, v: u64) -> Vec<u8> {
    let mut out = data.to_vec();
    set_pes_time(&mut out, at + 9, v);
    out
}

/// Write `v` as the 33-bit 90 kHz time whose five bytes (with marker bits) start at `at`.
fn set_pes_time(data: &mut [u8], at: usize, v: u64) {
    let b = &mut data[at..at + 5];
    b[0] = (b[0] & 0xF0) | ((v >> 30 & 7) as u8) << 1 | 1;
    b[1] = (v >> 22) as u8;
    b[2] = ((v >> 15 & 0x7F) as u8) << 1 | 1;
    b[3] = (v >> 7) as u8;
    b[4] = ((v & 0x7F) as u8) << 1 | 1;
}
