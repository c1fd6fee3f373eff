//! A copied stream's flags (dispositions) its output's container cannot keep. Measured
//! with this FFmpeg (5.1), copying an audio track flagged each way out of Matroska: `.mp4`
//! keeps `default`, `dub`, `comment`, `forced`, `hearing_impaired` and `visual_impaired`
//! but not `original`; `.mov` keeps only `default`. Matroska keeps them all.

use ffmpeg_next::ffi;

use crate::codec_choice::Container;

/// The flags measured, with the containers that lose each.
const LOST: &[(i32, &str, &[Container])] = &[
    (ffi::AV_DISPOSITION_DUB, "dub", &[Container::Mov]),
    (
        ffi::AV_DISPOSITION_ORIGINAL,
        "original",
        &[Container::Mp4, Container::Mov],
    ),
    (ffi::AV_DISPOSITION_COMMENT, "comment", &[Container::Mov]),
    (ffi::AV_DISPOSITION_FORCED, "forced", &[Container::Mov]),
    (
        ffi::AV_DISPOSITION_HEARING_IMPAIRED,
        "hearing_impaired",
        &[Container::Mov],
    ),
    (
        ffi::AV_DISPOSITION_VISUAL_IMPAIRED,
        "visual_impaired",
        &[Container::Mov],
    ),
];

/// The names of the flags of `disposition` that `container` loses.
pub fn lost(container: Container, disposition: i32) -> Vec<&'static str> {
    LOST.iter()
        .filter(|(flag, _, losing)| disposition & flag != 0 && losing.contains(&container))
        .map(|(_, name, _)| *name)
        .collect()
}

/// The warning for copied stream `describe` ("stream #2 (audio aac)") whose `disposition`
/// `container` cannot keep in full, if it cannot.
pub fn warning(container: Container, describe: &str, disposition: i32) -> Option<String> {
    let lost = lost(container, disposition);
    let keeping = match container {
        Container::Mov if !lost.contains(&"original") => ".mp4 or .mkv keep them",
        _ => ".mkv keeps them",
    };
    (!lost.is_empty()).then(|| {
        format!(
            "{describe} is flagged {}, which {} cannot store: the output's stream loses the flag(s); {keeping}",
            lost.join(", "),
            container.extension()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mov_loses_all_but_default_and_mp4_only_original() {
        let flags =
            ffi::AV_DISPOSITION_DEFAULT | ffi::AV_DISPOSITION_COMMENT | ffi::AV_DISPOSITION_FORCED;
        assert_eq!(lost(Container::Mov, flags), ["comment", "forced"]);
        assert!(lost(Container::Mp4, flags).is_empty());
        assert!(lost(Container::Matroska, flags).is_empty());
        let original = ffi::AV_DISPOSITION_ORIGINAL;
        assert_eq!(lost(Container::Mp4, original), ["original"]);
        let said = warning(Container::Mov, "stream #1 (audio aac)", flags).unwrap();
        assert!(said.ends_with(".mp4 or .mkv keep them"), "{said}");
        assert!(warning(Container::Mp4, "stream #1", flags).is_none());
    }
}
