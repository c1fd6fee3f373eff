//! A `rave` run in the background, read event by event from its `--progress jsonl` stderr
//! and signalled (Ctrl+C) at chosen points: the tests of interrupted runs.

use std::io::{BufRead, BufReader, Lines, Read};
use std::path::Path;
use std::process::{Child, ChildStderr, Stdio};

use super::rave;

/// A `rave upscale` running in the background with JSON progress on stderr.
pub struct Running {
    child: Child,
    lines: Lines<BufReader<ChildStderr>>,
    stderr: Vec<String>,
}

impl Running {
    /// Start `rave upscale -i input -o output --progress jsonl` with `extra`.
    pub fn start(input: &Path, output: &Path, extra: &[&str]) -> Self {
        let mut args = vec!["upscale", "-i", input.to_str().unwrap()];
        args.extend(["-o", output.to_str().unwrap(), "--progress", "jsonl"]);
        args.extend_from_slice(extra);
        Self::command(rave().args(args))
    }

    /// Start `command` (whose progress must be jsonl on stderr).
    pub fn command(command: &mut std::process::Command) -> Self {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stderr.take().unwrap()).lines();
        Self {
            child,
            lines,
            stderr: Vec::new(),
        }
    }

    /// Read stderr until a line contains `needle` (panics if the run ends first).
    pub fn wait_for(&mut self, needle: &str) {
        for line in self.lines.by_ref() {
            let line = line.unwrap();
            let found = line.contains(needle);
            self.stderr.push(line);
            if found {
                return;
            }
        }
        panic!("run ended before {needle:?}; stderr: {:#?}", self.stderr);
    }

    /// Read stderr until a progress event says `n` frames are done.
    pub fn wait_done(&mut self, n: u64) {
        loop {
            self.wait_for("\"progress\"");
            let last = self.stderr.last().unwrap();
            let v: serde_json::Value = serde_json::from_str(last).unwrap();
            if v["frames_done"].as_u64().is_some_and(|d| d >= n) {
                return;
            }
        }
    }

    /// Read stderr until `n` progress events were seen.
    pub fn wait_frames(&mut self, n: usize) {
        for _ in 0..n {
            self.wait_for("\"progress\"");
        }
    }

    /// The process id of the run.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send `sig` as a second stop, past the moment in which RAVE takes a signal sent twice
    /// at once (as `timeout` sends it) as one stop.
    pub fn second_stop(&self, sig: &str) {
        std::thread::sleep(std::time::Duration::from_millis(300));
        self.signal(sig);
    }

    pub fn signal(&self, sig: &str) {
        let ok = std::process::Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success(), "kill {sig}");
    }

    /// Wait for the end: (exit code, stdout, all of stderr).
    pub fn finish(mut self) -> (Option<i32>, String, String) {
        self.stderr
            .extend(self.lines.by_ref().map_while(Result::ok));
        let status = self.child.wait().unwrap();
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        (status.code(), out, self.stderr.join("\n"))
    }
}
