//! The output file's own tags: the source's, less its file-type box, plus RAVE's source tag;
//! and, for a phone's QuickTime keys, the `mdta` form that keeps them.

use std::path::Path;

use ffmpeg_next::Dictionary;
use ffmpeg_next::format::context::Input;

use crate::codec_choice::Container;
use crate::source_tag::{SOURCE_TAG, source_tag_value};

/// The prefix of the QuickTime `mdta` keys a phone writes (location, make, model, date).
const APPLE: &str = "com.apple.quicktime.";

/// Common tags and their QuickTime key names, which Apple's players read from `mdta`.
const APPLE_NAMES: [(&str, &str); 7] = [
    ("title", "title"),
    ("artist", "artist"),
    ("album", "album"),
    ("comment", "comment"),
    ("genre", "genre"),
    ("copyright", "copyright"),
    ("description", "description"),
];

/// Whether the output is written with `mdta` keys (`movflags use_metadata_tags`): an MP4
/// or MOV of a source holding QuickTime keys, which FFmpeg's default form (the iTunes-style
/// tags it knows) would drop. FFmpeg 5.1 writes one form or the other, not both.
pub fn as_mdta_keys(input: &Input, container: Container) -> bool {
    container != Container::Matroska
        && input
            .metadata()
            .iter()
            .any(|(key, _)| key.starts_with(APPLE))
}

/// The output's tags for a source `input` at `path`. The source's file-type box, read as
/// tags, describes its container, not the output's (as `mdta` keys it would hide the
/// output's own brands). With `mdta` keys, a common tag (title, artist, ...) is also given
/// its QuickTime name where the source has none, so Apple's players still show it.
pub fn of(input: &Input, path: &Path, mdta: bool) -> Dictionary<'static> {
    let mut tags = Dictionary::new();
    for (key, value) in input.metadata().iter() {
        if !matches!(key, "major_brand" | "minor_version" | "compatible_brands") {
            tags.set(key, value);
        }
    }
    if mdta {
        for (common, apple) in APPLE_NAMES {
            let named = format!("{APPLE}{apple}");
            if let Some(value) = input.metadata().get(common)
                && input.metadata().get(&named).is_none()
            {
                tags.set(&named, value);
            }
        }
    }
    tags.set(SOURCE_TAG, &source_tag_value(path));
    tags
}
