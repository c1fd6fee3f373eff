//! What `-i` and `-o` ask for: one file into one file (the plain run), or a batch of inputs
//! into an output folder, checked before any work: no two outputs alike, no output an input.
//! A file that RAVE wrote from another input of the same batch (a batch into its own input
//! folder, run again) is taken as that input's output, not as an input.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rave_core::error::{EngineError, Result};
use rave_ffmpeg::Container;
use rave_ffmpeg::source_tag::{source_tag_value, upscaled_from};
use rave_pipeline::output_lock::FileId;
use serde::Serialize;

use super::folder;

/// One input and the output it is written to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputJob {
    /// The input file.
    pub input: PathBuf,
    /// Its output file, in the output folder.
    pub output: PathBuf,
}

impl InputJob {
    /// Whether `--skip-existing` leaves this input alone: its output is a regular file that
    /// is not the input itself, and the input is there (a missing input stays an error, an
    /// output that is a folder or the input is refused by the run as without the option).
    pub fn is_done(&self) -> bool {
        let (Ok(input), Ok(output)) = (
            std::fs::metadata(&self.input),
            std::fs::metadata(&self.output),
        ) else {
            return false;
        };
        let same = FileId::of(&input) == FileId::of(&output);
        input.is_file() && output.is_file() && !same
    }

    /// Whether a run refused for `error` is one `--skip-existing` (`skip_existing`) leaves
    /// alone after all: the output appeared while it started (another run finishing it).
    pub fn finished_meanwhile(&self, error: &EngineError, skip_existing: bool) -> bool {
        skip_existing && matches!(error, EngineError::OutputExists(_)) && self.is_done()
    }
}

/// A file given as an input (usually in a listed folder) that is left out as an input:
/// RAVE's output of another input of the batch (the batch wrote it on an earlier pass), or
/// a folder's file named as RAVE names a partial output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    /// The file left out.
    #[serde(serialize_with = "super::report::lossy_path")]
    pub file: PathBuf,
    /// Why it is not an input (`reason` in the JSON, with `output_of` where it has one).
    #[serde(flatten)]
    pub reason: LeftOutReason,
}

/// Why a file given is not taken as an input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum LeftOutReason {
    /// RAVE's output of another input of the batch.
    OutputOfInput {
        /// The input it was upscaled from (its `RAVE_SOURCE` tag holds that name's digest).
        #[serde(serialize_with = "super::report::lossy_path")]
        output_of: PathBuf,
    },
    /// RAVE's partial output of an interrupted run (its `RAVE_SOURCE` tag says so).
    RavePartial,
    /// An MP4 or MOV named as RAVE names a partial output (`NAME.partial.EXT`), without the
    /// tag that would tell (RAVE's MP4 and MOV outputs mostly cannot carry it): the user
    /// gives it with `-i` to have it upscaled.
    PartialName,
}

/// What `rave upscale` was asked to do.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// One input file into one output file: the run and report as they have always been.
    Single(InputJob),
    /// Each input into the output folder, one after another.
    Batch {
        /// The output folder (created when missing).
        folder: PathBuf,
        /// The inputs in order, with their outputs.
        jobs: Vec<InputJob>,
        /// Files given that are outputs of other inputs, not inputs.
        left_out: Vec<LeftOut>,
    },
}

/// The plan for `-i inputs -o output`, or the reason it cannot run.
///
/// A batch is several `-i` values, a folder among them, or `-o` naming a folder (an existing
/// one, or a path ending in `/`). A batch's `-o` is a folder unless it is an existing file or
/// ends in a video extension.
pub fn plan(inputs: &[PathBuf], output: &Path) -> Result<Plan> {
    let folders: Vec<&PathBuf> = inputs.iter().filter(|p| p.is_dir()).collect();
    let text = output.as_os_str().to_string_lossy();
    let slash = text.ends_with('/');
    // `-o clip.mp4/` where clip.mp4 is a file: a folder asked for where a file stands.
    let without_slash = Path::new(text.trim_end_matches('/'));
    if slash && without_slash.exists() && !without_slash.is_dir() {
        return Err(EngineError::Config(format!(
            "-o {} asks for an output folder, but {} is a file; name a folder that is not one (e.g. -o upscaled/)",
            output.display(),
            without_slash.display()
        )));
    }
    let output_is_folder = output.is_dir() || slash;
    if let ([input], [], false) = (inputs, folders.as_slice(), output_is_folder) {
        return Ok(Plan::Single(InputJob {
            input: input.clone(),
            output: output.to_path_buf(),
        }));
    }
    if !output_is_folder && (output.exists() || folder::has_video_extension(output)) {
        let why = match folders.first() {
            Some(dir) => format!("a folder input (-i {}) needs", dir.display()),
            None => format!("{} inputs need", inputs.len()),
        };
        return Err(EngineError::Config(format!(
            "-o {} names a file, but {why} an output folder; name a folder (e.g. -o upscaled/), or upscale one input at a time",
            output.display(),
        )));
    }
    let mut jobs = Vec::new();
    let mut folder_left_out = Vec::new();
    for input in inputs {
        let files = match input.is_dir() {
            true => {
                let (videos, partials) = folder::videos_in(input)?;
                folder_left_out.extend(partials);
                videos
            }
            false => vec![input.clone()],
        };
        jobs.extend(files.into_iter().map(|input| InputJob {
            output: output.join(output_name(&input)),
            input,
        }));
    }
    let (jobs, mut left_out) = leave_out_earlier_outputs(jobs);
    left_out.extend(folder_left_out);
    refuse_collisions(&jobs)?;
    Ok(Plan::Batch {
        folder: output.to_path_buf(),
        jobs,
        left_out,
    })
}

/// Split off the inputs that are RAVE's outputs of another input beside them: `clip.mkv`,
/// tagged as upscaled from `clip.avi`, where both would be written to the same output (a
/// batch into its own input folder, run again). Anything else that collides stays, for
/// [`refuse_collisions`] to refuse.
fn leave_out_earlier_outputs(jobs: Vec<InputJob>) -> (Vec<InputJob>, Vec<LeftOut>) {
    let source_of = |job: &InputJob| {
        jobs.iter().find(|other| {
            other.output == job.output
                && other.input != job.input
                && other.input.parent() == job.input.parent()
                && upscaled_from(&job.input).as_deref()
                    == Some(source_tag_value(&other.input).as_str())
        })
    };
    let mut kept = Vec::with_capacity(jobs.len());
    let mut left_out = Vec::new();
    for job in &jobs {
        match source_of(job) {
            Some(source) => left_out.push(LeftOut {
                file: job.input.clone(),
                reason: LeftOutReason::OutputOfInput {
                    output_of: source.input.clone(),
                },
            }),
            None => kept.push(job.clone()),
        }
    }
    (kept, left_out)
}

/// The output's file name for `input`: its own name when RAVE writes its container
/// (.mp4, .m4v, .mov, .mkv), else the name with `.mkv`, the container that holds the most
/// kinds of streams.
pub fn output_name(input: &Path) -> PathBuf {
    let name = PathBuf::from(input.file_name().unwrap_or(input.as_os_str()));
    match Container::from_path(&name) {
        Ok(_) => name,
        Err(_) => name.with_extension(Container::Matroska.extension().trim_start_matches('.')),
    }
}

/// Refuse (exit 4) two inputs written to the same output, and an output that is an input.
fn refuse_collisions(jobs: &[InputJob]) -> Result<()> {
    let clash = |path: &Path, reason: String| EngineError::OutputUnwritable {
        path: path.to_path_buf(),
        reason,
    };
    let mut first_by_output: HashMap<&Path, &InputJob> = HashMap::new();
    for job in jobs {
        if let Some(earlier) = first_by_output.insert(&job.output, job) {
            let same = file_id(&earlier.input).is_some_and(|a| Some(a) == file_id(&job.input));
            let also = match earlier.input == job.input {
                true => String::new(),
                false => format!(" (also as {})", earlier.input.display()),
            };
            return Err(clash(
                &job.output,
                match same {
                    true => format!(
                        "{} is given twice{also}; list each input once",
                        job.input.display(),
                    ),
                    false => format!(
                        "both {} and {} would be written here; rename one of them or upscale them separately",
                        earlier.input.display(),
                        job.input.display()
                    ),
                },
            ));
        }
    }
    for job in jobs {
        let Some(out) = file_id(&job.output) else {
            continue;
        };
        if let Some(input) = jobs.iter().find(|j| file_id(&j.input) == Some(out)) {
            let which = match input.input == job.output {
                true => String::new(),
                false => format!(" {}", input.input.display()),
            };
            return Err(EngineError::OutputNameUnusable {
                path: job.output.clone(),
                reason: format!(
                    "it is the input file{which}; choose an output folder other than the input's"
                ),
            });
        }
    }
    Ok(())
}

/// The file `path` refers to (device and inode, so hard links compare equal), if it exists.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, b"x").unwrap();
        p
    }

    #[test]
    fn outputs_keep_a_container_rave_writes_and_else_become_mkv() {
        for (input, output) in [
            ("in/a.mp4", "a.mp4"),
            ("b.MOV", "b.MOV"),
            ("c.m4v", "c.m4v"),
            ("d.mkv", "d.mkv"),
            ("e.avi", "e.mkv"),
            ("f.webm", "f.mkv"),
            ("g.tar.ts", "g.tar.mkv"),
            ("noext", "noext.mkv"),
        ] {
            assert_eq!(output_name(Path::new(input)), Path::new(output), "{input}");
        }
    }

    #[test]
    fn an_output_refused_as_existing_is_skipped_only_with_skip_existing_and_only_if_finished() {
        let dir = tempfile::tempdir().unwrap();
        let job = InputJob {
            input: touch(dir.path(), "a.mp4"),
            output: dir.path().join("o.mkv"),
        };
        let exists = EngineError::OutputExists(job.output.clone());
        // Refused while starting, the output there once the refusal is looked at: another
        // run finished it meanwhile.
        std::fs::write(&job.output, b"finished").unwrap();
        assert!(job.finished_meanwhile(&exists, true));
        assert!(!job.finished_meanwhile(&exists, false));
        let other = EngineError::Config("refused".into());
        assert!(!job.finished_meanwhile(&other, true));
        // Gone again (or a folder, or a link to nothing): not finished.
        std::fs::remove_file(&job.output).unwrap();
        assert!(!job.finished_meanwhile(&exists, true));
        std::fs::create_dir(&job.output).unwrap();
        assert!(!job.finished_meanwhile(&exists, true));
    }

    #[test]
    fn one_file_into_one_file_is_the_plain_run() {
        let dir = tempfile::tempdir().unwrap();
        let a = touch(dir.path(), "a.mp4");
        let out = dir.path().join("o.mkv");
        assert_eq!(
            plan(std::slice::from_ref(&a), &out).unwrap(),
            Plan::Single(InputJob {
                input: a.clone(),
                output: out
            })
        );
        // A missing input or a file-like -o stays the plain run, with today's errors.
        let missing = dir.path().join("missing.mp4");
        assert!(matches!(
            plan(&[missing], Path::new("x")).unwrap(),
            Plan::Single(_)
        ));
        // An existing folder, or one spelt with a trailing slash, takes the input's name.
        let to = format!("{}/new/", dir.path().display());
        let Plan::Batch { jobs, .. } = plan(std::slice::from_ref(&a), Path::new(&to)).unwrap()
        else {
            panic!("a batch");
        };
        assert_eq!(jobs[0].output, dir.path().join("new/a.mp4"));
    }

    #[test]
    fn several_inputs_need_an_output_folder() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (touch(dir.path(), "a.mp4"), touch(dir.path(), "b.avi"));
        let inputs = [a.clone(), b.clone()];
        for out in ["out.mp4", "out.MKV"] {
            let err = plan(&inputs, &dir.path().join(out)).unwrap_err();
            assert_eq!(err.family().exit_code(), 2);
            assert!(
                err.to_string().contains("names a file, but 2 inputs need"),
                "{err}"
            );
        }
        let err = plan(&inputs, &a).unwrap_err();
        assert!(err.to_string().contains("names a file"), "{err}");
        // A folder spelt over an existing file (`-o a.mp4/`): a usage error, also for one
        // input (it was exit 4, "cannot create the output folder: File exists").
        let over_file = PathBuf::from(format!("{}/", a.display()));
        for given in [&inputs[..], std::slice::from_ref(&b)] {
            let err = plan(given, &over_file).unwrap_err();
            assert_eq!(err.family().exit_code(), 2);
            assert!(
                err.to_string().contains("is a file; name a folder"),
                "{err}"
            );
        }
        let out = dir.path().join("upscaled");
        let Plan::Batch { folder, jobs, .. } = plan(&inputs, &out).unwrap() else {
            panic!("a batch");
        };
        assert_eq!(folder, out);
        let outputs: Vec<_> = jobs.iter().map(|j| j.output.clone()).collect();
        assert_eq!(outputs, [out.join("a.mp4"), out.join("b.mkv")]);
    }

    #[test]
    fn a_folder_input_needs_an_output_folder() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in");
        std::fs::create_dir(&input).unwrap();
        touch(&input, "a.mp4");
        let err = plan(std::slice::from_ref(&input), &dir.path().join("o.mp4")).unwrap_err();
        assert!(err.to_string().contains("a folder input (-i "), "{err}");
    }

    #[test]
    fn two_inputs_onto_one_output_or_an_output_onto_an_input_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("x")).unwrap();
        let (a, a2) = (touch(d, "a.mp4"), touch(&d.join("x"), "a.mp4"));
        let err = plan(&[a.clone(), a2.clone()], &d.join("out")).unwrap_err();
        assert_eq!(err.family().exit_code(), 4);
        assert!(err.to_string().contains("both"), "{err}");

        // clip.avi and clip.mkv both become clip.mkv.
        let (c1, c2) = (touch(d, "clip.avi"), touch(d, "clip.mkv"));
        let err = plan(&[c1, c2], &d.join("out")).unwrap_err();
        assert!(err.to_string().contains("out/clip.mkv"), "{err}");

        let err = plan(&[a.clone(), d.join("./a.mp4")], &d.join("out")).unwrap_err();
        assert!(err.to_string().contains("is given twice"), "{err}");

        // Into its own folder: the output would be the input.
        let err = plan(&[a.clone(), d.join("clip.avi")], d).unwrap_err();
        assert_eq!(err.family().exit_code(), 4);
        assert!(
            err.to_string()
                .contains("a.mp4: cannot write output: it is the input file;"),
            "{err}"
        );
        // clip.avi -> clip.mkv next to it is fine when clip.mkv is not an input.
        std::fs::remove_file(d.join("clip.mkv")).unwrap();
        assert!(plan(&[d.join("clip.avi"), a2], d).is_ok());
    }
}
