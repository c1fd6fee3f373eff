//! Whether a packet whose timestamp leaps shows the timestamps restarting (parts joined)
//! or is damaged alone: told by the packets read after it, of its own stream and the others.

use std::collections::HashMap;

use ffmpeg_next::{Packet, Rational};

use super::Demuxer;
use crate::splice::TimestampSplicer;

impl Demuxer {
    /// Whether the packets after `candidate` (which shows a restart; timestamps in
    /// `candidate_tb`) restart too, within [`RESTART_LOOKAHEAD`](super::RESTART_LOOKAHEAD) packets: a packet of another
    /// stream that can show one and does not continue its stream in step confirms it (a
    /// splice moves every stream; across a join one may go back by less than a restart
    /// does, and the other part's last packet may come first: FFmpeg hands out a PES when
    /// the next one starts); packets of other streams that all continue deny it (a damaged
    /// PES header moves only its own stream's packets, an MPEG-TS audio PES holding a dozen
    /// of them), counting only those of a PES read from past the candidate's place: the
    /// part before's last, handed out late, deny nothing (where the next part's never come,
    /// their codec changed, FFmpeg's parser of the first codec dropping them). Where the candidate
    /// is a second behind every other stream too, its own stream decides first: its next
    /// PES back in step with the packets before the candidate denies it (the damaged
    /// header's PES is over), one that starts on the new line too confirms it, whatever the
    /// others do (across a join, the next part's picture, starting seconds after its sound,
    /// may happen to go on in step with the first part's). With neither, another stream
    /// decides as above; with no other stream there, its own stream's next packet, by
    /// showing a restart too; with none, it is taken as a restart, as before.
    pub(super) fn restart_confirmed(
        &mut self,
        candidate: &Packet,
        candidate_tb: Rational,
        on_error: &mut impl FnMut(&ffmpeg_next::Error),
    ) -> bool {
        let stream = candidate.stream();
        let mut i = 0;
        let mut own_next = None;
        let mut others_continue = false;
        // Whether the next PES of its own stream (its next packet with a byte position of
        // its own) went on from the candidate's new line (else it came back in step).
        let mut own_next_pes = None;
        let own_decides = self.splicer.behind_the_others(candidate, candidate_tb);
        // Per stream: whether its latest PES read here lies past the candidate's place.
        let mut past_candidate: HashMap<usize, bool> = HashMap::new();
        loop {
            if !self.read_ahead_to(i, on_error) {
                break;
            }
            let p = &self.unplaced[i];
            i += 1;
            let Some(&tb) = self.time_bases.get(p.stream()) else {
                continue;
            };
            match p.stream() == stream {
                true => {
                    let shows = self.splicer.shows_reset(p, tb);
                    own_next.get_or_insert(shows);
                    let own_pes = p.position() >= 0 && p.position() != candidate.position();
                    if own_decides && own_pes && own_next_pes.is_none() {
                        own_next_pes = match (shows, self.splicer.continues(p, tb)) {
                            (true, _) => Some(true),
                            (false, true) => Some(false),
                            (false, false) => None,
                        };
                    }
                }
                false if self.splicer.judges(p.stream()) => {
                    if !self.splicer.continues(p, tb) {
                        return true;
                    }
                    // One of a PES from before the candidate's place is the part before's,
                    // handed out late (a parser holds a PES's last frame until the next
                    // PES of its PID starts): it says nothing of what follows.
                    let past = match p.position() {
                        at if at >= 0 => *past_candidate
                            .entry(p.stream())
                            .insert_entry(at > candidate.position())
                            .get(),
                        _ => past_candidate.get(&p.stream()).copied().unwrap_or(false),
                    };
                    others_continue |= past || candidate.position() < 0;
                }
                false => {}
            }
        }
        own_next_pes.unwrap_or(!others_continue && own_next.unwrap_or(true))
    }

    /// Whether the next packet of `leapt`'s stream read from a place of its own (its next
    /// PES; within [`RESTART_LOOKAHEAD`](super::RESTART_LOOKAHEAD) packets) is decoded well before it
    /// (`TimestampSplicer::comes_back_from`): `leapt`'s time is damaged.
    pub(super) fn own_stream_comes_back(
        &mut self,
        leapt: &Packet,
        tb: Rational,
        on_error: &mut impl FnMut(&ffmpeg_next::Error),
    ) -> bool {
        let mut i = 0;
        while self.read_ahead_to(i, on_error) {
            let p = &self.unplaced[i];
            i += 1;
            let own_read = p.position() >= 0 && p.position() != leapt.position();
            if p.stream() == leapt.stream() && own_read {
                return TimestampSplicer::comes_back_from(p, leapt, tb);
            }
        }
        false
    }
}
