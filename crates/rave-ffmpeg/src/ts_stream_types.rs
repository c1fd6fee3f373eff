//! `TsStreamTypes`: the codec each elementary PID of a transport stream is declared with,
//! read from the PAT and PMTs in the file's bytes (`TsSeams` hands in their packets), and
//! where a PID's codec changes: a part joined whose sound (or picture) is coded otherwise
//! on the same PID (`cat ac3-capture.ts mp2-capture.ts`, a channel switching its audio
//! codec between programmes). FFmpeg keeps reading such a PID with the first codec's
//! parser, which finds no frame in the second's bytes and drops them without a word: the
//! output lost that part's sound, and the run said every packet kept.

use std::collections::{HashMap, HashSet};

use crate::ts_packet;

/// PMT descriptors that name a codec on a PID of the private stream type (0x06): AC-3,
/// E-AC-3, DTS, AAC, subtitling, teletext.
const CODEC_DESCRIPTORS: [u8; 6] = [0x6A, 0x7A, 0x7B, 0x7C, 0x59, 0x56];

/// How a PMT declares one PID's codec: its stream type, and for private data the first
/// descriptor that names one.
pub type Declared = (u8, Option<u8>);

/// A PID whose declared codec changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecChange {
    /// The elementary PID.
    pub pid: u16,
    /// The byte of the PMT packet that declares the new codec.
    pub at: u64,
    /// The codec declared before.
    pub from: Declared,
    /// The codec declared from there on.
    pub to: Declared,
}

/// The declared codecs of one transport stream, as far as read (see the module).
#[derive(Debug, Default)]
pub(crate) struct TsStreamTypes {
    pmt_pids: HashSet<u16>,
    declared: HashMap<u16, Declared>,
    changes: Vec<CodecChange>,
}

impl TsStreamTypes {
    /// Whether packets of `pid` are read here (the PAT's and the PMTs').
    pub(crate) fn wants(&self, pid: u16) -> bool {
        pid == 0 || self.pmt_pids.contains(&pid)
    }

    /// A transport packet `p` (188 bytes) of the PAT or a PMT at byte `at`. Only sections
    /// that start and end in one packet are read (the PAT's and PMT's almost always do).
    pub(crate) fn on_packet(&mut self, at: u64, p: &[u8]) {
        let pid = ts_packet::pid(p[1], p[2]);
        let Some(section) = section_of(p) else {
            return;
        };
        match (pid, section.first()) {
            (0, Some(0x00)) => self.on_pat(section),
            (_, Some(0x02)) => self.on_pmt(at, section),
            _ => {}
        }
    }

    /// The codec changes found since last asked.
    pub(crate) fn take_changes(&mut self) -> Vec<CodecChange> {
        std::mem::take(&mut self.changes)
    }

    fn on_pat(&mut self, s: &[u8]) {
        for entry in s[8..].chunks_exact(4) {
            let program = u16::from_be_bytes([entry[0], entry[1]]);
            if program != 0 {
                self.pmt_pids.insert(ts_packet::pid(entry[2], entry[3]));
            }
        }
    }

    fn on_pmt(&mut self, at: u64, s: &[u8]) {
        let Some(&[hi, lo]) = s.get(10..12) else {
            return;
        };
        let mut i = 12 + usize::from(u16::from_be_bytes([hi, lo]) & 0x0FFF);
        while let Some(es) = s.get(i..i + 5) {
            let pid = ts_packet::pid(es[1], es[2]);
            let info = usize::from(u16::from_be_bytes([es[3], es[4]]) & 0x0FFF);
            let descriptors = s.get(i + 5..i + 5 + info).unwrap_or_default();
            let named = match es[0] {
                0x06 => codec_descriptor(descriptors),
                _ => None,
            };
            let now = (es[0], named);
            match self.declared.insert(pid, now) {
                Some(before) if before != now => self.changes.push(CodecChange {
                    pid,
                    at,
                    from: before,
                    to: now,
                }),
                _ => {}
            }
            i += 5 + info;
        }
    }
}

/// The section that starts in transport packet `p`, without its CRC, where it ends there.
fn section_of(p: &[u8]) -> Option<&[u8]> {
    if p[1] & 0x40 == 0 {
        return None;
    }
    let payload = ts_packet::payload(p)?;
    let pointer = usize::from(*payload.first()?);
    let s = payload.get(1 + pointer..)?;
    let length = usize::from(u16::from_be_bytes([*s.get(1)?, *s.get(2)?]) & 0x0FFF);
    // The header's 3 bytes, the section, less its 4-byte CRC; at least the fixed fields.
    s.get(..(3 + length).checked_sub(4)?)
        .filter(|s| s.len() >= 8)
}

/// The first descriptor in `d` that names a codec.
fn codec_descriptor(mut d: &[u8]) -> Option<u8> {
    while let [tag, len, rest @ ..] = d {
        if CODEC_DESCRIPTORS.contains(tag) {
            return Some(*tag);
        }
        d = rest.get(usize::from(*len)..)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transport packet of `pid` holding the section `body` (table id on), CRC zeroed.
    fn packet(pid: u16, body: &[u8]) -> Vec<u8> {
        let mut p = vec![0x47, 0x40 | (pid >> 8) as u8, pid as u8, 0x10, 0];
        let length = body.len() - 3 + 4;
        let mut s = body.to_vec();
        s[1] = 0xB0 | (length >> 8) as u8;
        s[2] = length as u8;
        p.extend(s);
        p.extend([0; 4]);
        p.resize(188, 0xFF);
        p
    }

    fn pat() -> Vec<u8> {
        packet(0, &[0, 0, 0, 0, 1, 0xC1, 0, 0, 0, 1, 0xF0, 0x00])
    }

    /// A PMT on PID 0x1000 declaring video 0x100 (H.264) and audio 0x101 as `audio`.
    fn pmt(audio: &[u8]) -> Vec<u8> {
        let mut body = vec![2, 0, 0, 0, 1, 0xC1, 0, 0, 0xE1, 0x00, 0xF0, 0];
        body.extend([0x1B, 0xE1, 0x00, 0xF0, 0]);
        body.extend(audio);
        packet(0x1000, &body)
    }

    #[test]
    fn a_pids_codec_declared_otherwise_later_is_a_change() {
        let mut t = TsStreamTypes::default();
        assert!(t.wants(0) && !t.wants(0x1000));
        t.on_packet(0, &pat());
        assert!(t.wants(0x1000));
        // AC-3 the DVB way (private data, its descriptor), then again, then MP2.
        let ac3 = [0x06, 0xE1, 0x01, 0xF0, 3, 0x6A, 1, 0];
        t.on_packet(188, &pmt(&ac3));
        t.on_packet(376, &pmt(&ac3));
        assert_eq!(t.take_changes(), []);
        t.on_packet(564, &pmt(&[0x03, 0xE1, 0x01, 0xF0, 0]));
        let change = CodecChange {
            pid: 0x101,
            at: 564,
            from: (0x06, Some(0x6A)),
            to: (0x03, None),
        };
        assert_eq!(t.take_changes(), [change]);
        // A language descriptor added changes no codec.
        t.on_packet(
            752,
            &pmt(&[0x03, 0xE1, 0x01, 0xF0, 6, 0x0A, 4, b'e', b'n', b'g', 0]),
        );
        assert_eq!(t.take_changes(), []);
    }
}
