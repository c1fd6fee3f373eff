//! The files in deploy/, checked without a cluster: the Kubernetes manifests parsed and held
//! against what `rave segment` and `rave assemble` need, and the Slurm scripts run against
//! stand-in `rave`, `sbatch` and `scontrol` commands that record what they were asked.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{repo, stderr, stdout};
use serde::Deserialize;
use serde_json::Value;

/// The image the manifests name, documented in deploy/README.md as a placeholder.
const IMAGE: &str = "ghcr.io/rave-video/rave:latest";

/// The index variables rave reads; a manifest that set one would override Kubernetes'.
const INDEX_VARS: [&str; 3] = [
    "JOB_COMPLETION_INDEX",
    "SLURM_ARRAY_TASK_ID",
    "AWS_BATCH_JOB_ARRAY_INDEX",
];

fn deploy(path: &str) -> PathBuf {
    repo().join("deploy").join(path)
}

/// Every document of every YAML file in deploy/k8s, as JSON values.
fn k8s_objects() -> Vec<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(deploy("k8s"))
        .expect("deploy/k8s")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no YAML in deploy/k8s");
    let mut objects = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for doc in serde_norway::Deserializer::from_str(&text) {
            let value = Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("{}: not valid YAML: {e}", file.display()));
            assert!(
                value["apiVersion"].is_string() && value["kind"].is_string(),
                "{}: a document without apiVersion and kind",
                file.display()
            );
            objects.push(value);
        }
    }
    objects
}

/// The one Job whose container runs `rave SUBCOMMAND`.
fn job_running<'a>(objects: &'a [Value], subcommand: &str) -> &'a Value {
    let jobs: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "Job" && command(o).get(1).map(String::as_str) == Some(subcommand))
        .collect();
    assert_eq!(jobs.len(), 1, "Jobs running `rave {subcommand}`: {jobs:#?}");
    jobs[0]
}

/// The pod spec of a Job.
fn pod(job: &Value) -> &Value {
    &job["spec"]["template"]["spec"]
}

/// The Job's only container.
fn container(job: &Value) -> &Value {
    let containers = pod(job)["containers"].as_array().expect("containers");
    assert_eq!(
        containers.len(),
        1,
        "one container per Job: {containers:#?}"
    );
    &containers[0]
}

/// The container's command line: `command` then `args`.
fn command(job: &Value) -> Vec<String> {
    let Some(containers) = pod(job)["containers"].as_array() else {
        return Vec::new();
    };
    let Some(c) = containers.first() else {
        return Vec::new();
    };
    ["command", "args"]
        .iter()
        .filter_map(|k| c[*k].as_array())
        .flatten()
        .map(|a| a.as_str().expect("command words are strings").to_string())
        .collect()
}

/// The value after `flag` in a command line.
fn flag_value<'a>(cmd: &'a [String], flag: &str) -> &'a str {
    let at = cmd
        .iter()
        .position(|a| a == flag)
        .unwrap_or_else(|| panic!("{flag} missing from {cmd:?}"));
    cmd.get(at + 1)
        .unwrap_or_else(|| panic!("{flag} without a value in {cmd:?}"))
}

/// (claim name, mount path) of the container's persistent volume.
fn claim_mount(job: &Value) -> (String, String) {
    let mounts = container(job)["volumeMounts"]
        .as_array()
        .expect("volumeMounts");
    let volumes = pod(job)["volumes"].as_array().expect("volumes");
    let found: Vec<(String, String)> = mounts
        .iter()
        .filter_map(|m| {
            let volume = volumes.iter().find(|v| v["name"] == m["name"])?;
            let claim = volume["persistentVolumeClaim"]["claimName"].as_str()?;
            Some((claim.to_string(), m["mountPath"].as_str()?.to_string()))
        })
        .collect();
    assert_eq!(found.len(), 1, "one claim mounted: {mounts:#?}");
    found[0].clone()
}

/// Whether `path` is `dir` or inside it (whole path components).
fn is_under(path: &str, dir: &str) -> bool {
    Path::new(path).starts_with(dir)
}

#[test]
fn segments_run_as_an_indexed_job_on_the_shared_volume() {
    let objects = k8s_objects();
    let job = job_running(&objects, "segment");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    for key in ["completions", "parallelism"] {
        assert!(
            spec[key].as_u64().is_some_and(|n| n >= 1),
            "{key}: {}",
            spec[key]
        );
    }
    assert!(
        ["Never", "OnFailure"].contains(&pod(job)["restartPolicy"].as_str().unwrap_or("")),
        "a Job's pods need restartPolicy Never or OnFailure"
    );

    // The index is rave's own reading of JOB_COMPLETION_INDEX: no --index, no variable set.
    let c = container(job);
    let cmd = command(job);
    let work = flag_value(&cmd, "--work");
    assert_eq!(cmd, ["rave", "segment", "--work", work]);
    assert!(work.starts_with('/'), "--work {work}: not absolute");
    for var in c["env"].as_array().into_iter().flatten() {
        assert!(
            !INDEX_VARS.contains(&var["name"].as_str().unwrap_or("")),
            "the manifest sets {}: rave must read Kubernetes' index",
            var["name"]
        );
    }
    assert!(
        c["envFrom"].is_null(),
        "envFrom could set an index variable"
    );
    assert_eq!(c["image"], IMAGE);

    let gpus = &c["resources"]["limits"]["nvidia.com/gpu"];
    assert!(
        gpus.as_u64() == Some(1) || gpus.as_str() == Some("1"),
        "nvidia.com/gpu limit: {gpus}"
    );

    // The work folder lies on the shared claim, and that claim is ReadWriteMany.
    let (claim, mount) = claim_mount(job);
    assert!(is_under(work, &mount), "--work {work} is not under {mount}");
    let pvc = objects
        .iter()
        .find(|o| o["kind"] == "PersistentVolumeClaim" && o["metadata"]["name"] == claim.as_str())
        .unwrap_or_else(|| panic!("no PersistentVolumeClaim {claim} in deploy/k8s"));
    assert_eq!(
        pvc["spec"]["accessModes"],
        serde_json::json!(["ReadWriteMany"])
    );

    // A failure policy, where there is one, names this container.
    for rule in spec["podFailurePolicy"]["rules"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(name) = rule["onExitCodes"]["containerName"].as_str() {
            assert_eq!(name, c["name"], "podFailurePolicy names another container");
        }
    }
}

#[test]
fn plan_and_assemble_use_the_same_work_folder_volume_and_image() {
    let objects = k8s_objects();
    let segments = job_running(&objects, "segment");
    let work = flag_value(&command(segments), "--work").to_string();
    let volume = claim_mount(segments);

    let assemble = job_running(&objects, "assemble");
    assert_eq!(command(assemble), ["rave", "assemble", "--work", &work]);

    let plan = job_running(&objects, "plan");
    let plan_cmd = command(plan);
    assert_eq!(flag_value(&plan_cmd, "--work"), work);
    assert!(
        plan_cmd.iter().any(|a| a == "--json"),
        "the plan's log must carry the segment count as JSON: {plan_cmd:?}"
    );
    for flag in ["-i", "-o"] {
        let path = flag_value(&plan_cmd, flag);
        assert!(
            is_under(path, &volume.1),
            "{flag} {path} is not on the volume"
        );
    }

    for job in [plan, assemble] {
        assert_eq!(claim_mount(job), volume, "{}", job["metadata"]["name"]);
        assert_eq!(container(job)["image"], IMAGE);
    }
}

#[test]
fn readme_names_the_placeholder_image_and_the_completions_edit_fits_the_manifest() {
    let readme = std::fs::read_to_string(deploy("README.md")).unwrap();
    assert!(readme.contains(IMAGE) && readme.contains("placeholder"));
    // The README sets N with sed on the `  completions:` line: exactly one must exist.
    let sed = r#"sed "s/^  completions: .*/  completions: $N/" deploy/k8s/segments-job.yaml"#;
    assert!(
        readme.contains(sed),
        "the README's completions command changed"
    );
    let manifest = std::fs::read_to_string(deploy("k8s/segments-job.yaml")).unwrap();
    let lines = manifest
        .lines()
        .filter(|l| l.starts_with("  completions: "))
        .count();
    assert_eq!(lines, 1);
}

#[test]
fn slurm_scripts_parse() {
    let mut scripts = vec![repo().join("scripts/slurm_local.sh")];
    for e in std::fs::read_dir(deploy("slurm")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sh" || x == "sbatch") {
            scripts.push(p);
        }
    }
    assert!(scripts.len() >= 4, "{scripts:?}");
    for s in scripts {
        let o = Command::new("bash").arg("-n").arg(&s).output().unwrap();
        assert!(o.status.success(), "{}: {}", s.display(), stderr(&o));
    }
}

/// Stand-in `rave`, `sbatch` and `scontrol` that append each call, its words separated by
/// tabs, to `calls.log` in their folder. `rave plan` prints STUB_SEGMENTS segments; `sbatch`
/// prints ids 100, 101, ... as "ID;cluster"; `scontrol` reports STUB_MAX_ARRAY and every job
/// in STUB_STATE.
struct Stubs {
    dir: tempfile::TempDir,
}

impl Stubs {
    fn new() -> Stubs {
        let dir = common::scratch();
        let log = r#"(IFS=$'\t'; echo "${0##*/}$IFS$*") >>"${0%/*}/calls.log""#;
        let scripts = [
            (
                "rave",
                r#"[[ $1 == plan ]] && echo "{\"segments\": $STUB_SEGMENTS, \"work\": \"w\", \"output\": \"o\"}"; true"#,
            ),
            (
                "sbatch",
                r#"n=$(grep -c '^sbatch' "${0%/*}/calls.log"); echo "$((99 + n));cluster""#,
            ),
            (
                "scontrol",
                r#"case "$2" in config) echo "MaxArraySize            = $STUB_MAX_ARRAY" ;; job) echo "JobId=$4 JobName=x JobState=$STUB_STATE Reason=None" ;; esac"#,
            ),
        ];
        for (name, body) in scripts {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/usr/bin/env bash\n{log}\n{body}\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Stubs { dir }
    }

    /// The stubs' folder, canonical (the scripts make their paths absolute).
    fn path(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    /// Every recorded call, as its words.
    fn calls(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(self.dir.path().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect()
    }

    /// Run `bash SCRIPT ARGS` with the stubs first on PATH.
    fn bash(&self, script: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        let path = format!(
            "{}:{}",
            self.path().display(),
            std::env::var("PATH").unwrap()
        );
        let mut c = Command::new("bash");
        c.arg(script).args(args).env("PATH", path);
        for var in INDEX_VARS {
            c.env_remove(var);
        }
        c.envs(env.iter().copied()).output().unwrap()
    }
}

fn words(ws: &[&str]) -> Vec<String> {
    ws.iter().map(|w| w.to_string()).collect()
}

#[test]
fn array_script_runs_the_segment_of_its_task_index() {
    let stubs = Stubs::new();
    let rave = stubs.path().join("rave");
    let script = deploy("slurm/rave-array.sbatch");
    let o = stubs.bash(
        &script,
        &["/shared/job", rave.to_str().unwrap()],
        &[("SLURM_ARRAY_TASK_ID", "3")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stubs.calls(),
        [words(&[
            "rave",
            "segment",
            "--work",
            "/shared/job",
            "--index",
            "3"
        ])]
    );

    // Outside an array there is no index: a clear failure, and rave is not run.
    let o = stubs.bash(&script, &["/shared/job", rave.to_str().unwrap()], &[]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("not an array task"), "{}", stderr(&o));
    assert_eq!(stubs.calls().len(), 1);
}

#[test]
fn assemble_script_runs_assemble_on_the_work_folder_with_its_options() {
    let stubs = Stubs::new();
    let rave = stubs.path().join("rave");
    let script = deploy("slurm/rave-assemble.sbatch");
    for extra in [&[][..], &["--keep-work"][..]] {
        let mut args = vec!["/shared/job", rave.to_str().unwrap()];
        args.extend(extra);
        let o = stubs.bash(&script, &args, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(
        stubs.calls(),
        [
            words(&["rave", "assemble", "--work", "/shared/job"]),
            words(&["rave", "assemble", "--work", "/shared/job", "--keep-work"])
        ]
    );
}

/// `submit.sh` with the stubs: 4 segments, at most 2 at once, 1 GPU each, the work folder
/// kept, `--wait`.
fn submit(stubs: &Stubs, work: &Path, max_array: &str, state: &str) -> Output {
    let rave = stubs.path().join("rave");
    stubs.bash(
        &deploy("slurm/submit.sh"),
        &[
            "--work",
            work.to_str().unwrap(),
            "--rave",
            rave.to_str().unwrap(),
            "--max-parallel",
            "2",
            "--gpus",
            "1",
            "--partition",
            "gpu",
            "--sbatch",
            "--account=vid",
            "--keep-work",
            "--wait",
            "--",
            "-i",
            "in.mkv",
            "-o",
            "out.mkv",
        ],
        &[
            ("STUB_SEGMENTS", "4"),
            ("STUB_MAX_ARRAY", max_array),
            ("STUB_STATE", state),
        ],
    )
}

#[test]
fn submit_plans_then_submits_the_array_and_an_assemble_job_after_it() {
    let stubs = Stubs::new();
    let work = stubs.path().join("job");
    let o = submit(&stubs, &work, "1001", "COMPLETED");
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));

    let (w, rave) = (work.to_str().unwrap(), stubs.path().join("rave"));
    let rave = rave.to_str().unwrap();
    let slurm = deploy("slurm").canonicalize().unwrap();
    let array_script = slurm.join("rave-array.sbatch");
    let assemble_script = slurm.join("rave-assemble.sbatch");
    let logs = format!("{w}/slurm-logs");
    let calls = stubs.calls();
    let sbatch: Vec<&Vec<String>> = calls.iter().filter(|c| c[0] == "sbatch").collect();
    assert_eq!(
        calls[0],
        words(&[
            "rave", "plan", "--work", w, "--json", "-i", "in.mkv", "-o", "out.mkv"
        ])
    );
    assert_eq!(sbatch.len(), 2, "{calls:#?}");
    assert_eq!(
        *sbatch[0],
        words(&[
            "sbatch",
            "--parsable",
            "--partition",
            "gpu",
            "--account=vid",
            "--array",
            "0-3%2",
            "--job-name",
            "rave-segment",
            "--output",
            &format!("{logs}/segment-%A_%a.out"),
            "--gres",
            "gpu:1",
            array_script.to_str().unwrap(),
            w,
            rave,
        ])
    );
    // The array's id without the ";cluster" that --parsable adds.
    assert_eq!(
        *sbatch[1],
        words(&[
            "sbatch",
            "--parsable",
            "--partition",
            "gpu",
            "--account=vid",
            "--dependency",
            "afterok:100",
            "--kill-on-invalid-dep=yes",
            "--job-name",
            "rave-assemble",
            "--output",
            &format!("{logs}/assemble-%j.out"),
            assemble_script.to_str().unwrap(),
            w,
            rave,
            "--keep-work",
        ])
    );
    assert!(Path::new(&logs).is_dir(), "Slurm does not make log folders");
    assert!(
        stdout(&o).contains("assemble job 101 COMPLETED"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn submit_wait_fails_when_slurm_cancelled_the_assemble_job() {
    let stubs = Stubs::new();
    let o = submit(&stubs, &stubs.path().join("job"), "1001", "CANCELLED");
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("assemble job 101 CANCELLED"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn submit_refuses_more_segments_than_the_cluster_array_limit() {
    let stubs = Stubs::new();
    let o = submit(&stubs, &stubs.path().join("job"), "3", "COMPLETED");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("MaxArraySize is 3"), "{}", stderr(&o));
    assert!(stubs.calls().iter().all(|c| c[0] != "sbatch"));
}
