//! Stream titles in MP4 and QuickTime: FFmpeg 5.1's mov muxer writes none (a track's
//! `title` is dropped without a word; `.mkv` keeps it), so a titled stream going there is
//! said, with the container that keeps it.

use crate::codec_choice::Container;

/// The warning for a stream `what` ("stream #1") whose `metadata` has a title that
/// `container` does not keep, if any.
pub fn title_lost(
    metadata: &ffmpeg_next::Dictionary,
    what: &str,
    container: Container,
) -> Option<String> {
    if container == Container::Matroska {
        return None;
    }
    let title = metadata.get("title").filter(|t| !t.trim().is_empty())?;
    Some(format!(
        "{what}: its title '{title}' is not kept: FFmpeg's {} muxer writes no track titles; .mkv keeps them",
        container.label()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_titled_stream_going_to_mp4_or_mov_is_said() {
        let mut titled = ffmpeg_next::Dictionary::new();
        titled.set("title", "Commentary");
        let lost = title_lost(&titled, "stream #1", Container::Mp4).expect("said");
        assert!(
            lost.starts_with("stream #1: its title 'Commentary' is not kept"),
            "{lost}"
        );
        assert!(title_lost(&titled, "stream #1", Container::Mov).is_some());
        assert_eq!(title_lost(&titled, "stream #1", Container::Matroska), None);
        let untitled = ffmpeg_next::Dictionary::new();
        assert_eq!(title_lost(&untitled, "stream #1", Container::Mp4), None);
    }
}
