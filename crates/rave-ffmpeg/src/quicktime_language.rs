//! Stream languages in QuickTime (.mov). Its track header holds one of the classic
//! Macintosh language codes, listed by their ISO 639-2 names (some bibliographic, "ger",
//! some terminological, "fra"), and FFmpeg's mov muxer writes only those: any other code is
//! left unset, silently. MP4 takes any three lowercase letters, Matroska any value. A
//! language the list holds under its other ISO 639-2 name ("deu" for "ger") is written
//! under that name; one it does not hold at all is said. In both, a two-letter ISO 639-1
//! code ("en", as `ffmpeg -metadata:s:a language=en` sets it, or a tag's "en-US") is
//! written as its ISO 639-2 code ("eng"), and capitals as small letters: FFmpeg left
//! them unset, silently; a value that is no language code at all is said.

use crate::codec_choice::Container;

/// The languages QuickTime's track header can name, as FFmpeg's mov muxer spells them
/// (the three-letter ones: a few entries are two letters and a space, and read back as
/// such).
const QUICKTIME: &[&str] = &[
    "eng", "fra", "ger", "ita", "dut", "sve", "spa", "dan", "por", "nor", "heb", "jpn", "ara",
    "fin", "gre", "ice", "mlt", "tur", "chi", "urd", "hin", "tha", "kor", "lit", "pol", "hun",
    "est", "lav", "rus", "iri", "alb", "ron", "ces", "slk", "slv", "yid", "mac", "bul", "ukr",
    "bel", "uzb", "kaz", "aze", "arm", "geo", "mol", "kir", "tgk", "tuk", "mon", "pus", "kur",
    "kas", "snd", "tib", "nep", "san", "mar", "ben", "asm", "guj", "ori", "mal", "kan", "tam",
    "tel", "bur", "khm", "lao", "vie", "ind", "tgl", "may", "amh", "tir", "orm", "som", "swa",
    "run", "mlg", "epo", "wel", "baq", "cat", "lat", "que", "grn", "aym", "tat", "uig", "dzo",
    "jav",
];

/// Languages with two ISO 639-2 codes (bibliographic and terminological), and Swedish and
/// Irish, which the list spells its own way: each pair names one language.
const SAME_LANGUAGE: &[(&str, &str)] = &[
    ("alb", "sqi"),
    ("arm", "hye"),
    ("baq", "eus"),
    ("bur", "mya"),
    ("chi", "zho"),
    ("cze", "ces"),
    ("dut", "nld"),
    ("fre", "fra"),
    ("geo", "kat"),
    ("ger", "deu"),
    ("gre", "ell"),
    ("ice", "isl"),
    ("mac", "mkd"),
    ("may", "msa"),
    ("per", "fas"),
    ("rum", "ron"),
    ("slo", "slk"),
    ("tib", "bod"),
    ("wel", "cym"),
    ("swe", "sve"),
    ("gle", "iri"),
];

/// How a stream's `language` goes into a QuickTime file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuickTimeLanguage {
    /// Written as it is.
    Kept,
    /// Written under this other name of the same language.
    Renamed(&'static str),
    /// Not written: QuickTime has no code for it.
    Lost,
}

/// How `language` (an ISO 639-2 code, any case) goes into a QuickTime file. "und" and an
/// empty value are kept (nothing is lost).
pub fn in_quicktime(language: &str) -> QuickTimeLanguage {
    let code = language.trim().to_ascii_lowercase();
    if code.is_empty() || code == "und" || QUICKTIME.contains(&language) {
        return QuickTimeLanguage::Kept;
    }
    let other = SAME_LANGUAGE
        .iter()
        .find_map(|&(a, b)| match code.as_str() {
            c if c == a => Some(b),
            c if c == b => Some(a),
            _ => None,
        });
    match other.or_else(|| QUICKTIME.iter().copied().find(|&q| q == code)) {
        Some(name) if QUICKTIME.contains(&name) => QuickTimeLanguage::Renamed(name),
        _ => QuickTimeLanguage::Lost,
    }
}

/// `language` as the three small letters of an ISO 639-2 code: as it is where it is
/// three letters, from ISO 639-1 where it is two ("en", "pt-BR"); `None` for any other
/// value.
pub fn three_letters(language: &str) -> Option<String> {
    let code = language.trim().to_ascii_lowercase();
    let primary = code.split(['-', '_']).next().unwrap_or_default();
    if !primary.bytes().all(|b| b.is_ascii_lowercase()) {
        return None;
    }
    match primary.len() {
        3 => Some(primary.to_owned()),
        2 => isolang::Language::from_639_1(primary).map(|l| l.to_639_3().to_owned()),
        _ => None,
    }
}

/// `metadata`, that of the output stream `what` ("stream #1"), ready for `container`: in
/// an MP4 or QuickTime file its language as three small letters ([`three_letters`]), in a
/// QuickTime file renamed where QuickTime names it otherwise, and where the file cannot
/// hold it, a warning in `warnings` (the value stays, for FFmpeg to leave out); Matroska
/// takes it as it is.
pub fn for_output<'a>(
    mut metadata: ffmpeg_next::Dictionary<'a>,
    container: Option<Container>,
    what: &str,
    warnings: &mut Vec<String>,
) -> ffmpeg_next::Dictionary<'a> {
    let language = metadata.get("language").map(str::to_owned);
    let quicktime = matches!(container, Some(Container::Mov | Container::Mp4));
    let Some(language) = language.filter(|l| quicktime && !l.trim().is_empty()) else {
        return metadata;
    };
    let Some(code) = three_letters(&language) else {
        let ext = container.map_or("", |c| c.extension());
        warnings.push(format!(
            "{what}: its language '{language}' is no ISO 639 code, so the {ext} leaves it unset; .mkv keeps it"
        ));
        return metadata;
    };
    if container == Some(Container::Mp4) {
        if code != language {
            metadata.set("language", &code);
        }
        return metadata;
    }
    match in_quicktime(&code) {
        QuickTimeLanguage::Kept if code != language => metadata.set("language", &code),
        QuickTimeLanguage::Kept => {}
        QuickTimeLanguage::Renamed(name) => metadata.set("language", name),
        QuickTimeLanguage::Lost => warnings.push(format!(
            "{what}: its language '{language}' has no QuickTime code, so the .mov leaves it unset; .mp4 or .mkv keep it"
        )),
    }
    metadata
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_quicktime_names_otherwise_are_renamed_and_the_rest_said_lost() {
        assert_eq!(in_quicktime("eng"), QuickTimeLanguage::Kept);
        assert_eq!(in_quicktime("fra"), QuickTimeLanguage::Kept);
        assert_eq!(in_quicktime("und"), QuickTimeLanguage::Kept);
        assert_eq!(in_quicktime("fre"), QuickTimeLanguage::Renamed("fra"));
        assert_eq!(in_quicktime("deu"), QuickTimeLanguage::Renamed("ger"));
        assert_eq!(in_quicktime("nld"), QuickTimeLanguage::Renamed("dut"));
        assert_eq!(in_quicktime("zho"), QuickTimeLanguage::Renamed("chi"));
        assert_eq!(in_quicktime("swe"), QuickTimeLanguage::Renamed("sve"));
        assert_eq!(in_quicktime("ENG"), QuickTimeLanguage::Renamed("eng"));
        // Both names of Persian are missing from the list, as is Croatian's.
        assert_eq!(in_quicktime("per"), QuickTimeLanguage::Lost);
        assert_eq!(in_quicktime("hrv"), QuickTimeLanguage::Lost);
        assert_eq!(in_quicktime("xyz"), QuickTimeLanguage::Lost);
    }

    #[test]
    fn two_letter_codes_and_capitals_become_three_small_letters() {
        assert_eq!(three_letters("en").as_deref(), Some("eng"));
        assert_eq!(three_letters("pt-BR").as_deref(), Some("por"));
        assert_eq!(three_letters("DE").as_deref(), Some("deu"));
        assert_eq!(three_letters("ENG").as_deref(), Some("eng"));
        assert_eq!(three_letters("fre").as_deref(), Some("fre"));
        assert_eq!(three_letters("english"), None);
        assert_eq!(three_letters("e1"), None);
        assert_eq!(three_letters("qq"), None, "no ISO 639-1 language");
    }

    #[test]
    fn every_pair_names_at_most_one_quicktime_code() {
        for &(a, b) in SAME_LANGUAGE {
            assert!(
                !(QUICKTIME.contains(&a) && QUICKTIME.contains(&b)),
                "{a}/{b}"
            );
        }
    }
}
