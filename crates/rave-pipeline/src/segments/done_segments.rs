//! The files of the segments a manifest marks done, held against it: there, of the recorded
//! size and checksum; one that is not is marked pending again, to be redone.

use rave_core::error::Result;

use super::fingerprint::file_sha256;
use super::manifest::{Manifest, SegmentEntry, SegmentState};
use super::work_folder::WorkFolder;

/// Check every segment marked done: its file must be there with its size and checksum;
/// one that is not is marked pending again (redone). Returns the manifest as checked.
pub fn verify_done(work: &WorkFolder) -> Result<Manifest> {
    verify_done_naming(work).map(|(manifest, _)| manifest)
}

/// [`verify_done`], also naming the files of the segments it found not intact.
pub fn verify_done_naming(work: &WorkFolder) -> Result<(Manifest, Vec<String>)> {
    let mut locked = work.lock()?;
    let mut not_intact = Vec::new();
    for seg in &mut locked.manifest.segments {
        if seg.state == SegmentState::Done && !intact(work, seg) {
            seg.state = SegmentState::Pending;
            not_intact.push(seg.file.clone().unwrap_or_default());
        }
    }
    if !not_intact.is_empty() {
        locked.save()?;
    }
    Ok((locked.manifest, not_intact))
}

/// Whether segment `index` is done with its file intact; one marked done whose file is not
/// is marked pending again (to be redone).
pub fn verify_segment(work: &WorkFolder, index: usize) -> Result<bool> {
    let mut locked = work.lock()?;
    let Some(seg) = locked.manifest.segments.get_mut(index) else {
        return Ok(false);
    };
    if seg.state != SegmentState::Done {
        return Ok(false);
    }
    if intact(work, seg) {
        return Ok(true);
    }
    seg.state = SegmentState::Pending;
    locked.save()?;
    Ok(false)
}

/// Whether a done segment's file is there with its recorded size (a quick look, without
/// the checksum: for `rave status`).
pub fn file_present(work: &WorkFolder, seg: &SegmentEntry) -> bool {
    seg.file.as_ref().is_some_and(|name| {
        std::fs::metadata(work.file(name)).is_ok_and(|m| Some(m.len()) == seg.bytes)
    })
}

/// Whether a done segment's file is there with its recorded size and checksum.
fn intact(work: &WorkFolder, seg: &SegmentEntry) -> bool {
    file_present(work, seg)
        && seg
            .file
            .as_ref()
            .is_some_and(|name| file_sha256(&work.file(name)).ok() == seg.sha256)
}
