//! The names RAVE gives its files in a work folder, and what a name found there is: only
//! files with exactly these names are RAVE's to remove (a user's `seg-intro.mp4` or
//! `film.partial.mp4` in a folder given to `--work` is not).

/// What a file of a work folder is, by its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkFile {
    /// `manifest.json`, its lock, the job lock, or the manifest's temporary form.
    Bookkeeping,
    /// A finished segment: `seg-NNNNN.mp4`.
    Segment,
    /// An interrupted run's segment: `seg-NNNNN.partial.mp4`.
    Partial,
    /// A worker's segment being written: `.seg-NNNNN.HOST.PID-N.tmp.mp4` (`host` `None`
    /// in the older form without it).
    Temp {
        /// The host its worker runs on.
        host: Option<String>,
        /// Its worker's process id.
        pid: i32,
    },
}

/// The name of the file a worker on this host writes segment `index` into (the `n`-th
/// such file of this process).
pub fn temp_name(index: usize, n: u64) -> String {
    format!(
        ".seg-{index:05}.{}.{}-{n}.tmp.mp4",
        this_host(),
        std::process::id()
    )
}

/// This machine's host name (`localhost` where it cannot be read), read once.
pub fn this_host() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into())
    })
}

/// What follows a segment index of five digits or more at the start of `s`.
fn after_index(s: &str) -> Option<&str> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    (digits >= 5).then(|| &s[digits..])
}

/// What the file named `name` is, where it is one of RAVE's.
pub fn classify(name: &str) -> Option<WorkFile> {
    if matches!(name, "manifest.json" | "manifest.lock" | "job.lock")
        || name
            .strip_prefix("manifest.tmp-")
            .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
    {
        return Some(WorkFile::Bookkeeping);
    }
    if let Some(rest) = name.strip_prefix("seg-").and_then(after_index) {
        return match rest {
            ".mp4" => Some(WorkFile::Segment),
            ".partial.mp4" => Some(WorkFile::Partial),
            _ => None,
        };
    }
    let owner = name
        .strip_prefix(".seg-")
        .and_then(after_index)?
        .strip_prefix('.')?
        .strip_suffix(".tmp.mp4")?;
    let (host, pid_n) = match owner.rsplit_once('.') {
        Some((host, pid_n)) => (Some(host.to_owned()), pid_n),
        None => (None, owner),
    };
    let (pid, n) = pid_n.split_once('-')?;
    n.parse::<u64>().ok()?;
    Some(WorkFile::Temp {
        host,
        pid: pid.parse().ok()?,
    })
}

/// Whether the worker that writes temporary file `name` may still run: on this host, its
/// process exists; on another host (shared storage), it cannot be told, so it may.
pub fn temp_owner_may_run(host: Option<&str>, pid: i32) -> bool {
    if host.is_some_and(|h| h != this_host()) {
        return true;
    }
    // SAFETY: signal 0 only checks that the process exists.
    pid > 0 && unsafe { libc::kill(pid, 0) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_names_rave_gives_are_raves() {
        assert_eq!(classify("manifest.json"), Some(WorkFile::Bookkeeping));
        assert_eq!(classify("manifest.tmp-4242"), Some(WorkFile::Bookkeeping));
        assert_eq!(classify("seg-00012.mp4"), Some(WorkFile::Segment));
        assert_eq!(classify("seg-123456.mp4"), Some(WorkFile::Segment));
        assert_eq!(classify("seg-00012.partial.mp4"), Some(WorkFile::Partial));
        let temp = temp_name(7, 3);
        assert_eq!(
            classify(&temp),
            Some(WorkFile::Temp {
                host: Some(this_host().into()),
                pid: std::process::id() as i32
            })
        );
        assert_eq!(
            classify(".seg-00004.node-3.cluster.local.812-0.tmp.mp4"),
            Some(WorkFile::Temp {
                host: Some("node-3.cluster.local".into()),
                pid: 812
            })
        );
        assert_eq!(
            classify(".seg-00004.812-0.tmp.mp4"),
            Some(WorkFile::Temp {
                host: None,
                pid: 812
            })
        );
        for theirs in [
            "seg-intro.mp4",
            "film.partial.mp4",
            ".seg-keep.mp4",
            "seg-0001.mp4",
            "seg-00001.mkv",
            "manifest.tmp-",
            "manifest.txt",
            "notes.txt",
            "slurm-1.out",
        ] {
            assert_eq!(classify(theirs), None, "{theirs}");
        }
    }

    #[test]
    fn a_temporary_file_of_another_host_may_belong_to_a_running_worker() {
        assert!(temp_owner_may_run(Some("some-other-node"), 999_999_999));
        assert!(!temp_owner_may_run(Some(this_host()), 999_999_999));
        assert!(!temp_owner_may_run(None, 999_999_999));
        assert!(temp_owner_may_run(None, std::process::id() as i32));
    }
}
