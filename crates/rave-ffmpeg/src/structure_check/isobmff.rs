//! MP4/MOV (ISO base media): the top-level boxes must chain to the end of the file, in a
//! fragmented MP4 every movie fragment must be there (see `fragments`), each track's
//! sample tables must place every sample inside the file (see `sample_tables`), and an
//! unfragmented movie must be the file's only one (two files joined end to end play as the
//! first: FFmpeg skips the second `moov`).

use std::io::{Read, Seek, SeekFrom};

use super::fragments::Fragments;
use super::sample_tables::check_sample_tables;
use super::{StructureProblem, read_up_to, zeros_to_end};

/// Largest `moov` whose sample tables are read (a larger one is left unchecked).
const MAX_MOVIE_BYTES: u64 = 256 << 20;

/// MP4/MOV: every top-level box must fit in the file and the boxes must end exactly at its
/// end (zero padding after the last box is accepted). A fragmented file's movie fragments
/// must all be there: a fragment lost (a download or a copy that left one out) leaves the
/// boxes chained, and FFmpeg reads across the hole without a word.
pub fn check_boxes(r: &mut (impl Read + Seek), len: u64) -> Option<StructureProblem> {
    let mut fragments = Fragments::default();
    let mut movie = None;
    let mut stopped = len;
    match chain_boxes(r, len, (&mut fragments, &mut movie), &mut stopped) {
        // The chain's own problem is the one named (a file cut inside a box is reported as
        // such); fragments lost before it are counted with it, and in a fragmented file
        // whose index survives past the break, the fragments it lists there.
        Some(mut problem) => {
            problem.count += fragments.missing();
            if !problem.truncated && fragments.fragmented() && stopped < len {
                fragments.index_from_end(r, len);
                let (past, ends) = fragments.listed_past(stopped);
                if past > 0 {
                    problem.text.push_str(&format!(
                        "; the fragment index at the end of the file lists {past} movie fragment(s) past it, which are not read"
                    ));
                    problem.count += past;
                    problem.indexed_ends = ends;
                }
            }
            Some(problem)
        }
        None => fragments
            .problem()
            .or_else(|| movie.and_then(|m| movie_tables(r, m, len))),
    }
}

/// The sample tables of the `moov` whose body lies between `start` and `end`.
fn movie_tables(
    r: &mut (impl Read + Seek),
    (start, end): (u64, u64),
    len: u64,
) -> Option<StructureProblem> {
    if end - start > MAX_MOVIE_BYTES {
        return None;
    }
    r.seek(SeekFrom::Start(start)).ok()?;
    let mut body = vec![0u8; (end - start) as usize];
    (read_up_to(r, &mut body)? == body.len()).then_some(())?;
    check_sample_tables(&body, len)
}

/// Walk the top-level boxes, noting the movie fragments and their index in `fragments`,
/// and where the body of the first `moov` lies in `movie`; `stopped` is where the box the
/// walk met last starts.
fn chain_boxes(
    r: &mut (impl Read + Seek),
    len: u64,
    (fragments, movie): (&mut Fragments, &mut Option<(u64, u64)>),
    stopped: &mut u64,
) -> Option<StructureProblem> {
    let mut pos = 0u64;
    // Whether a movie fragment came before (the movie is then read fragment by fragment),
    // and where a later movie starts that no fragment has followed yet.
    let mut fragmented = false;
    let mut second_movie: Option<u64> = None;
    while pos < len {
        let left = len - pos;
        let mut head = [0u8; 16];
        r.seek(SeekFrom::Start(pos)).ok()?;
        let got = read_up_to(r, &mut head[..left.min(16) as usize])?;
        if got < 8 {
            if head[..got].iter().all(|&b| b == 0) {
                return None;
            }
            return Some(StructureProblem::truncated(format!(
                "the file ends inside an MP4 box header at byte {pos}"
            )));
        }
        *stopped = pos;
        let kind = &head[4..8];
        if !kind.iter().all(|b| (0x20..=0x7e).contains(b)) {
            if zeros_to_end(r, pos, len)? {
                return None;
            }
            return Some(StructureProblem::broken(format!(
                "unreadable data at byte {pos} where an MP4 box should start"
            )));
        }
        let name = String::from_utf8_lossy(kind).into_owned();
        let (size, header) = match u32::from_be_bytes([head[0], head[1], head[2], head[3]]) {
            0 => return None, // the last box runs to the end of the file
            1 if got >= 16 => (
                u64::from_be_bytes(head[8..16].try_into().expect("8 bytes")),
                16,
            ),
            1 => {
                return Some(StructureProblem::truncated(format!(
                    "the file ends inside the header of box '{name}' at byte {pos}"
                )));
            }
            n => (u64::from(n), 8),
        };
        if size < header {
            return Some(StructureProblem::broken(format!(
                "box '{name}' at byte {pos} has an impossible size ({size} bytes)"
            )));
        }
        if size > left {
            return Some(StructureProblem::truncated(format!(
                "the file is truncated: box '{name}' at byte {pos} declares {size} bytes, only {left} are there"
            )));
        }
        match kind {
            b"moof" => {
                fragmented = true;
                second_movie.take();
                fragments.moof(r, pos, (pos + header, pos + size))
            }
            b"mfra" => fragments.index(r, (pos + header, pos + size)),
            b"moov" if movie.is_none() => *movie = Some((pos + header, pos + size)),
            // A second movie: its samples are never read, unless both movies are
            // fragmented (the later fragments are read whatever comes between them).
            b"moov" if !fragmented => return Some(second_movie_at(pos)),
            b"moov" => second_movie = second_movie.or(Some(pos)),
            _ => {}
        }
        pos += size;
    }
    second_movie.map(second_movie_at)
}

/// The problem of a second movie (`moov`) at byte `pos` whose samples are not read.
fn second_movie_at(pos: u64) -> StructureProblem {
    StructureProblem::broken(format!(
        "a second movie ('moov' box) starts at byte {pos}: the file is two or more MP4/MOV files joined end to end, and only the first would be read; join recordings with FFmpeg's concat demuxer (ffmpeg -f concat -safe 0 -i LIST -c copy JOINED.mp4), or split the file"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn mp4_box(kind: &[u8; 4], payload: usize) -> Vec<u8> {
        let mut b = ((payload + 8) as u32).to_be_bytes().to_vec();
        b.extend_from_slice(kind);
        b.resize(payload + 8, 0xAB);
        b
    }

    fn boxes(data: &[u8]) -> Option<StructureProblem> {
        check_boxes(&mut Cursor::new(data), data.len() as u64)
    }

    #[test]
    fn mp4_boxes_must_chain_to_the_end() {
        let mut file = mp4_box(b"ftyp", 20);
        file.extend(mp4_box(b"moov", 100));
        file.extend(mp4_box(b"mdat", 400));
        assert_eq!(boxes(&file), None);
        let mut padded = file.clone();
        padded.extend([0u8; 12]);
        assert_eq!(boxes(&padded), None, "zero padding after the last box");
        let cut = &file[..file.len() - 50];
        let p = boxes(cut).expect("truncated");
        assert!(p.truncated && p.text.contains("box 'mdat'"), "{p:?}");
        let mut garbage = file.clone();
        garbage.extend([0x01, 0x02, 0xFF, 0xFE, 0x80, 0x81, 0x00, 0x10, 9]);
        let p = boxes(&garbage).expect("garbage");
        assert!(!p.truncated && p.text.contains("unreadable data"), "{p:?}");
        let mut tiny = file.clone();
        tiny.extend([0, 0, 0, 3, b'f', b'r', b'e', b'e']);
        assert!(boxes(&tiny).unwrap().text.contains("impossible size"));
    }

    #[test]
    fn two_unfragmented_movies_joined_are_refused_two_fragmented_ones_are_not() {
        let movie = [
            mp4_box(b"ftyp", 20),
            mp4_box(b"moov", 100),
            mp4_box(b"mdat", 400),
        ]
        .concat();
        let p = boxes(&[movie.clone(), movie.clone()].concat()).expect("joined");
        assert!(!p.truncated, "{p:?}");
        assert!(
            p.text
                .starts_with("a second movie ('moov' box) starts at byte 572: the file is two or more MP4/MOV files joined"),
            "{}",
            p.text
        );
        // Fragmented recordings joined: every fragment is read.
        let joined = [fragmented(&[1, 2]), fragmented(&[1, 2])].concat();
        assert_eq!(boxes(&joined), None);
        // A fragmented one, then a plain one: the plain one's samples are not read.
        let p = boxes(&[fragmented(&[1, 2]), movie].concat()).expect("plain after fragmented");
        assert!(p.text.starts_with("a second movie"), "{}", p.text);
    }

    /// A movie fragment: `moof` holding an `mfhd` numbered `number` (after another child
    /// when `mfhd_second`), then its `mdat`.
    fn fragment(number: u32, mfhd_second: bool) -> Vec<u8> {
        let mut mfhd = 16u32.to_be_bytes().to_vec();
        mfhd.extend_from_slice(b"mfhd");
        mfhd.extend([0; 4]);
        mfhd.extend(number.to_be_bytes());
        let traf = mp4_box(b"traf", 24);
        let children = if mfhd_second {
            [traf, mfhd].concat()
        } else {
            [mfhd, traf].concat()
        };
        let mut moof = ((children.len() + 8) as u32).to_be_bytes().to_vec();
        moof.extend_from_slice(b"moof");
        moof.extend(children);
        moof.extend(mp4_box(b"mdat", 100));
        moof
    }

    fn fragmented(numbers: &[u32]) -> Vec<u8> {
        let mut file = mp4_box(b"ftyp", 20);
        file.extend(mp4_box(b"moov", 100));
        for (i, &n) in numbers.iter().enumerate() {
            file.extend(fragment(n, i % 2 == 1));
        }
        file.extend(mp4_box(b"mfra", 40));
        file
    }

    #[test]
    fn a_fragmented_mp4_must_not_skip_a_fragment_number() {
        assert_eq!(boxes(&fragmented(&[1, 2, 3, 4, 5])), None);
        assert_eq!(
            boxes(&fragmented(&[7, 8, 9])),
            None,
            "a live stream's middle"
        );
        assert_eq!(
            boxes(&fragmented(&[1, 2, 1, 2])),
            None,
            "two recordings joined"
        );
        let p = boxes(&fragmented(&[1, 2, 3, 5, 6])).expect("fragment 4 lost");
        assert!(!p.truncated && p.count == 1, "{p:?}");
        assert!(
            p.text.starts_with(
                "movie fragment 4 is missing: the fragments' numbers jump from 3 to 5 at byte "
            ),
            "{}",
            p.text
        );
        let p = boxes(&fragmented(&[1, 4, 5, 9])).expect("five lost");
        assert_eq!(p.count, 5, "{p:?}");
        assert!(
            p.text.starts_with("movie fragments 2 to 3 are missing")
                && p.text.ends_with("(3 more missing further on)"),
            "{}",
            p.text
        );
        // A cut inside a box is what is reported, the gap before it counted all the same.
        let file = fragmented(&[1, 3, 4]);
        let p = boxes(&file[..file.len() - 10]).expect("cut");
        assert!(
            p.truncated && p.text.contains("box 'mfra'") && p.count == 2,
            "{p:?}"
        );
    }
}
