//! Builds `turbo-agent` statically and hands its bytes to the controller, so that
//! `cargo build`, `cargo test` and `cargo install --path .` each give one self-contained
//! binary. Cargo does not build another package's binary for us, hence a nested cargo with
//! its own target directory (sharing ours would deadlock on the build lock).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

const AGENT_TARGET: &str = "x86_64-unknown-linux-gnu";

fn main() {
    println!("cargo:rerun-if-changed=agent/src");
    println!("cargo:rerun-if-changed=agent/proto/src");
    println!("cargo:rerun-if-changed=agent/Cargo.toml");
    // The agent's build profile lives in the workspace manifest.
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!("cargo:rerun-if-changed=agent/proto/Cargo.toml");
    println!("cargo:rerun-if-env-changed=TURBO_PLAY_PREBUILT_AGENT");

    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("manifest dir"));

    let agent_path = match env::var_os("TURBO_PLAY_PREBUILT_AGENT") {
        Some(p) => PathBuf::from(p),
        None => build_agent(&manifest_dir, &out_dir),
    };
    let bytes = std::fs::read(&agent_path)
        .unwrap_or_else(|e| panic!("reading the agent {}: {e}", agent_path.display()));
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();

    let embedded = out_dir.join("turbo-agent.bin");
    std::fs::write(&embedded, &bytes).expect("writing the embedded agent");
    println!("cargo:rustc-env=TURBO_AGENT_SHA256={hex}");
    println!("cargo:rustc-env=TURBO_AGENT_TARGET={AGENT_TARGET}");
}

fn build_agent(manifest_dir: &Path, out_dir: &Path) -> PathBuf {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target_dir = out_dir.join("agent-target");
    let mut cmd = Command::new(cargo);
    cmd.current_dir(manifest_dir)
        .args(["build", "--package", "turbo-agent", "--profile", "agent"])
        .args(["--target", AGENT_TARGET])
        .arg("--target-dir")
        .arg(&target_dir)
        // Only the agent is static: with an explicit --target these flags skip build
        // scripts and proc macros, which could not be linked statically.
        .env("CARGO_ENCODED_RUSTFLAGS", "-Ctarget-feature=+crt-static")
        .env_remove("RUSTFLAGS")
        // Under `cargo clippy` the wrapper would lint the agent with the controller's flags.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_MAKEFLAGS")
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS");
    let status = cmd.status().expect("running cargo to build turbo-agent");
    assert!(status.success(), "building turbo-agent failed");
    target_dir
        .join(AGENT_TARGET)
        .join("agent")
        .join("turbo-agent")
}
