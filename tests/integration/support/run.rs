//! A small builder for whole runs of the real binary: playbook + inventory + args in,
//! exit code, output and recap out (in the style of just's and ripgrep's test suites).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::hosts::LocalHosts;

pub struct TestRun {
    dir: tempfile::TempDir,
    playbook: Option<String>,
    inventory: Option<String>,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// A program (and its arguments) the binary runs under, e.g. `setsid -w`.
    wrapper: Vec<String>,
    /// The name the binary is invoked under (a link to it: `ansible`, `ansible-inventory`).
    program: Option<String>,
    /// A first argument before all others (`adhoc`, `inventory`).
    subcommand: Option<String>,
}

impl TestRun {
    pub fn new() -> TestRun {
        TestRun {
            dir: tempfile::tempdir().expect("tempdir"),
            playbook: None,
            inventory: None,
            args: Vec::new(),
            env: Vec::new(),
            wrapper: Vec::new(),
            program: None,
            subcommand: None,
        }
    }

    /// `turbo-play NAME ...`: one of the binary's other commands.
    pub fn subcommand(mut self, name: &str) -> Self {
        self.subcommand = Some(name.to_string());
        self
    }

    /// Runs the binary through a link of this name, as `ln -s turbo-play ansible` would.
    pub fn invoked_as(mut self, name: &str) -> Self {
        self.program = Some(name.to_string());
        self
    }

    /// The playbook's YAML, written to `site.yml` in the run's directory.
    pub fn playbook(mut self, yaml: &str) -> Self {
        self.playbook = Some(yaml.to_string());
        self
    }

    /// The inventory's text, written to `hosts` and passed with `-i`.
    pub fn inventory(mut self, text: &str) -> Self {
        self.inventory = Some(text.to_string());
        self
    }

    /// Runs on local hosts: their inventory (as `inventory` would), and their shared home
    /// as the controller's HOME, which is `~` for the local connection.
    pub fn local_hosts(self, hosts: &LocalHosts) -> Self {
        self.inventory(&hosts.inventory()).local_home(hosts)
    }

    /// Only the local hosts' home, for a test that writes its own inventory (groups, host
    /// vars) from [`LocalHosts::line`].
    pub fn local_home(self, hosts: &LocalHosts) -> Self {
        let home = hosts.home().to_str().expect("utf-8 temp path").to_string();
        self.env("HOME", &home)
    }

    pub fn arg(mut self, arg: &str) -> Self {
        self.args.push(arg.to_string());
        self
    }

    pub fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// Runs the binary as the last argument of `wrapper` (`setsid -w` for no terminal, a
    /// pty driver for one).
    pub fn through(mut self, wrapper: &[&str]) -> Self {
        self.wrapper = wrapper.iter().map(|a| a.to_string()).collect();
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// A file beside the playbook (e.g. `files/x`, `templates/t.j2`).
    pub fn file(self, relative: &str, contents: &str) -> Self {
        self.file_bytes(relative, contents.as_bytes())
    }

    /// A file beside the playbook with arbitrary (e.g. binary) contents.
    pub fn file_bytes(self, relative: &str, contents: &[u8]) -> Self {
        let path = self.dir.path().join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, contents).expect("write file");
        self
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn run(&self) -> Outcome {
        let mut binary = PathBuf::from(env!("CARGO_BIN_EXE_turbo-play"));
        if let Some(name) = &self.program {
            let link = self.dir.path().join("bin").join(name);
            if !link.exists() {
                std::fs::create_dir_all(link.parent().expect("bin dir")).expect("mkdir bin");
                std::os::unix::fs::symlink(&binary, &link).expect("link the binary");
            }
            binary = link;
        }
        let mut cmd = match self.wrapper.split_first() {
            Some((program, args)) => {
                let mut cmd = Command::new(program);
                cmd.args(args).arg(&binary);
                cmd
            }
            None => Command::new(&binary),
        };
        // The controller reads ~ (ssh config, known_hosts, the local connection's home):
        // keep it away from the real one unless a test sets HOME itself.
        let home = self.dir.path().join("controller-home");
        std::fs::create_dir_all(&home).expect("controller home");
        cmd.current_dir(self.dir.path())
            .env("NO_COLOR", "1")
            .env("HOME", &home)
            .env_remove("SSH_AUTH_SOCK");
        for var in [
            "ANSIBLE_HOST_KEY_CHECKING",
            "ANSIBLE_INVENTORY",
            "ANSIBLE_FORKS",
            "ANSIBLE_REMOTE_USER",
            "ANSIBLE_FORCE_COLOR",
            "ANSIBLE_CONFIG",
            "ANSIBLE_ROLES_PATH",
            "ANSIBLE_PRIVATE_KEY_FILE",
            "ANSIBLE_TIMEOUT",
        ] {
            cmd.env_remove(var);
        }
        if let Some(name) = &self.subcommand {
            cmd.arg(name);
        }
        if let Some(yaml) = &self.playbook {
            let path = self.dir.path().join("site.yml");
            std::fs::write(&path, yaml).expect("write playbook");
            cmd.arg(path);
        }
        if let Some(text) = &self.inventory {
            let path = self.dir.path().join("hosts");
            std::fs::write(&path, text).expect("write inventory");
            cmd.arg("-i").arg(path);
        }
        cmd.args(&self.args);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run turbo-play");
        Outcome {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// One host's line of the PLAY RECAP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recap {
    pub ok: u32,
    pub changed: u32,
    pub unreachable: u32,
    pub failed: u32,
    pub skipped: u32,
    pub rescued: u32,
    pub ignored: u32,
}

impl Outcome {
    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Every host's recap line, parsed.
    pub fn recaps(&self) -> HashMap<String, Recap> {
        let mut recaps = HashMap::new();
        let Some((_, tail)) = self.stdout.split_once("PLAY RECAP") else {
            return recaps;
        };
        for line in tail.lines().skip(1) {
            let Some((host, fields)) = line.split_once(" : ") else {
                continue;
            };
            let mut r = Recap::default();
            for field in fields.split_whitespace() {
                let Some((k, v)) = field.split_once('=') else {
                    continue;
                };
                let v: u32 = v.parse().expect("recap number");
                match k {
                    "ok" => r.ok = v,
                    "changed" => r.changed = v,
                    "unreachable" => r.unreachable = v,
                    "failed" => r.failed = v,
                    "skipped" => r.skipped = v,
                    "rescued" => r.rescued = v,
                    "ignored" => r.ignored = v,
                    other => panic!("unknown recap field {other}"),
                }
            }
            recaps.insert(host.trim().to_string(), r);
        }
        recaps
    }

    #[track_caller]
    pub fn recap(&self, host: &str) -> Recap {
        *self
            .recaps()
            .get(host)
            .unwrap_or_else(|| panic!("no recap for {host}\n{}", self.stdout))
    }
}

/// A file's bytes and permission bits, for assertions on the target.
pub fn file_bytes_and_mode(path: &Path) -> (Vec<u8>, u32) {
    use std::os::unix::fs::PermissionsExt;
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mode = std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o7777;
    (bytes, mode)
}

pub fn path_in(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

/// The head of a play that skips fact gathering, for short test playbooks.
pub const PLAY_HEAD: &str = "- hosts: all\n  gather_facts: false\n";

/// A recap with these ok/changed counts and nothing else.
pub fn recap(ok: u32, changed: u32) -> Recap {
    Recap {
        ok,
        changed,
        ..Recap::default()
    }
}

#[track_caller]
pub fn assert_contains(out: &Outcome, needle: &str) {
    assert!(
        out.stdout.contains(needle) || out.stderr.contains(needle),
        "expected {needle:?} in the output\n--- stdout\n{}\n--- stderr\n{}",
        out.stdout,
        out.stderr
    );
}

#[track_caller]
pub fn assert_not_contains(out: &Outcome, needle: &str) {
    assert!(
        !out.stdout.contains(needle) && !out.stderr.contains(needle),
        "did not expect {needle:?} in the output\n--- stdout\n{}\n--- stderr\n{}",
        out.stdout,
        out.stderr
    );
}

/// The file on the target holds exactly these bytes with this mode.
#[track_caller]
pub fn assert_file(path: &Path, bytes: &[u8], mode: u32) {
    let (got, got_mode) = file_bytes_and_mode(path);
    assert_eq!(
        got,
        bytes,
        "{}: {:?}",
        path.display(),
        String::from_utf8_lossy(&got)
    );
    assert_eq!(
        got_mode,
        mode,
        "{}: mode {got_mode:o}, expected {mode:o}",
        path.display()
    );
}
