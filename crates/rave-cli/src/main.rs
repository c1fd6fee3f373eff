//! The `rave` command: parse the arguments, run the chosen command, print any error once
//! and exit with the code of its family.

// Everything printed goes through `console` (a closed pipe stops printing, never panics).
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod batch;
mod bounds;
mod commands;
mod console;
mod failure;
mod interrupt;
mod locate;
mod log_lines;
mod panics;
mod progress_lines;
mod progress_view;
mod summary;

use clap::Parser;

use args::{Cli, Command};

/// No usage data leaves the user's machine: ONNX Runtime's telemetry is off unless the
/// user set `ORT_DISABLE_TELEMETRY` themselves (see `TELEMETRY_OPT_OUT`).
fn keep_runtime_telemetry_off() {
    use rave_tensorrt::runtime::TELEMETRY_OPT_OUT;
    if std::env::var_os(TELEMETRY_OPT_OUT).is_none() {
        // SAFETY: the first thing `main` does, before any thread exists: nothing can read
        // or write the environment at the same time.
        unsafe { std::env::set_var(TELEMETRY_OPT_OUT, "1") };
    }
}

fn main() {
    keep_runtime_telemetry_off();
    console::keep_stderr();
    let raw_os: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let raw: Vec<String> = raw_os
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let wants_json = raw.iter().any(|a| a == "--json");
    if let Some(bad) = raw_os.iter().find(|a| a.to_str().is_none()) {
        let code = failure::not_utf8(&bad.to_string_lossy(), &raw, wants_json);
        std::process::exit(code);
    }
    let cli = match Cli::try_parse_from(&raw) {
        Ok(cli) => cli,
        Err(e) => std::process::exit(failure::usage_error(e, &raw, wants_json)),
    };
    quiet_encoder_logs();
    let json = cli.command.json();
    let jsonl = cli.command.progress() == Some(args::ProgressArg::Jsonl);
    console::set_modes(json, jsonl);
    init_logging(cli.verbose, jsonl);
    panics::install(json, jsonl);
    let run = || {
        panics::injected();
        gpu_stand_in().and_then(|()| match &cli.command {
            Command::Upscale(a) => commands::upscale::run(&cli.global, a),
            Command::Benchmark(a) => commands::benchmark::run(&cli.global, a),
            Command::Probe(a) => commands::probe::run(a),
            Command::Models(a) => commands::models::run(&cli.global, a),
            Command::Devices(a) => commands::devices::run(&cli.global, a),
            Command::Plan(a) => commands::distributed::plan(&cli.global, a, &raw),
            Command::Segment(a) => commands::distributed::segment(&cli.global, a),
            Command::Assemble(a) => commands::distributed::assemble(a),
            Command::Status(a) => commands::distributed::status(a),
        })
    };
    // Unwind safety: nothing the run touched is used after a panic; the process exits.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(Ok(code)) => std::process::exit(code),
        Ok(Err(e)) => std::process::exit(failure::report(&e, json, jsonl)),
        Err(_) => std::process::exit(panics::reached_main(json, jsonl)),
    }
}

/// `RAVE_TEST_GPU_COPIES=N`: show GPU 0 as N GPUs, to test `--gpus 0,1` on a machine
/// with one GPU (see `rave_core::gpu::stand_in`); said in a warning, since the speeds are
/// one GPU's.
fn gpu_stand_in() -> Result<(), rave_core::error::EngineError> {
    const VAR: &str = "RAVE_TEST_GPU_COPIES";
    let Some(value) = std::env::var_os(VAR) else {
        return Ok(());
    };
    let text = value.to_string_lossy();
    let bad = |why: String| rave_core::error::EngineError::Config(format!("{VAR}={text}: {why}"));
    let copies: usize = text
        .trim()
        .parse()
        .map_err(|_| bad("not a number; use 2 to 8, or unset it".into()))?;
    rave_core::gpu::stand_in::show_gpu0_as(copies).map_err(bad)?;
    tracing::warn!(
        "{VAR}={copies}: GPU 0 is shown as GPUs 0 to {}, for testing; their speeds are one GPU's shared",
        copies - 1
    );
    Ok(())
}

/// SVT-AV1 logs to stderr unless told otherwise; keep its chatter to errors.
fn quiet_encoder_logs() {
    if std::env::var_os("SVT_LOG").is_none() {
        // SAFETY: called at the top of main, before any thread exists, so nothing can read
        // the environment concurrently.
        unsafe { std::env::set_var("SVT_LOG", "1") };
    }
}

/// Log to stderr at the level `-v` asks (or RAVE_LOG's filter); with `--progress jsonl`
/// (`jsonl`) each line is a `log` event.
fn init_logging(verbose: u8, jsonl: bool) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("RAVE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let lines = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    if jsonl {
        lines
            .with_writer(log_lines::LogLines { events: true })
            .with_ansi(false)
            .with_level(false)
            .without_time()
            .init();
    } else {
        lines
            .with_writer(log_lines::LogLines { events: false })
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init();
    }
}
