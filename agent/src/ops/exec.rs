//! `Op::Exec`: Ansible's `command` and `shell`, with `creates`/`removes`, `chdir`, extra
//! environment and stdin. Output is captured whole; the protocol stream is on private fds,
//! so the child cannot write into it.

use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Component, Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use turbo_proto::{Command, ErrorKind, Exec, ExecOutcome, OpError, OpResult};

use super::child::{self, Ending};
use super::{Agent, Flags, op_error};
use crate::sys;

pub fn exec(agent: &mut Agent, spec: Exec, flags: Flags) -> Result<OpResult, OpError> {
    let start_unix_micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64);
    let started = Instant::now();
    let skipped = |msg: String, stdout: String| {
        Ok(OpResult::Exec(ExecOutcome {
            ran: false,
            rc: 0,
            stdout: stdout.into_bytes(),
            stderr: Vec::new(),
            start_unix_micros,
            duration_micros: started.elapsed().as_micros() as u64,
            msg,
        }))
    };

    let chdir = spec.chdir.as_deref().map(|d| agent.expand(d));
    // Relative creates/removes are looked up where the command would run, as Ansible
    // changes directory before checking them.
    let resolve = |p: &str| -> PathBuf {
        let p = agent.expand(p);
        match &chdir {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p,
        }
    };
    let verb = if flags.check { "Would" } else { "Did" };
    if let Some(creates) = &spec.creates {
        let path = resolve(creates);
        if glob_exists(&path) {
            let shown = path.display();
            return skipped(
                format!("{verb} not run command since '{shown}' exists"),
                format!("skipped, since {shown} exists"),
            );
        }
    }
    if let Some(removes) = &spec.removes {
        let path = resolve(removes);
        if !glob_exists(&path) {
            let shown = path.display();
            return skipped(
                format!("{verb} not run command since '{shown}' does not exist"),
                format!("skipped, since {shown} does not exist"),
            );
        }
    }
    if flags.check {
        return skipped("skipped in check mode".into(), String::new());
    }

    let (program, mut process) = match &spec.command {
        Command::Argv(argv) => {
            // Ansible's command module expands `$VAR` and `~` in each word
            // (expand_argument_vars, on by default), with the task's environment.
            let lookup = |name: &str| {
                spec.env
                    .iter()
                    .rev()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
                    .or_else(|| std::env::var(name).ok())
            };
            let argv: Vec<String> = argv
                .iter()
                .map(|a| expand_argument(a, &agent.home, &lookup))
                .collect();
            let Some((program, args)) = argv.split_first() else {
                return Err(op_error(ErrorKind::InvalidArgument, "no command given"));
            };
            let mut p = Process::new(program);
            p.args(args);
            (program.clone(), p)
        }
        Command::Shell { script, executable } => {
            let shell = executable.clone().unwrap_or_else(|| "/bin/sh".into());
            let mut p = Process::new(&shell);
            p.arg("-c").arg(script);
            (shell, p)
        }
    };
    if let Some(dir) = &chdir {
        if !dir.is_dir() {
            return Err(op_error(
                ErrorKind::NotFound,
                format!(
                    "Unable to change directory before execution: {} is not a directory",
                    dir.display()
                ),
            ));
        }
        process.current_dir(dir);
    }
    process
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group: a timeout or a cancel stops the command and all it started.
        .process_group(0);

    // Set around the spawn only, so that the child inherits it and the agent's own files
    // keep the session's umask.
    let agent_umask = spec.umask.map(sys::set_umask);
    let spawned = process.spawn();
    if let Some(mask) = agent_umask {
        sys::set_umask(mask);
    }
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            return Ok(OpResult::Exec(ExecOutcome {
                ran: true,
                rc: 2,
                stdout: Vec::new(),
                stderr: Vec::new(),
                start_unix_micros,
                duration_micros: started.elapsed().as_micros() as u64,
                msg: format!("{e}: {program}"),
            }));
        }
    };

    // stdin gets its own writer: a child that fills its output pipes while we feed it
    // would otherwise deadlock. Output is read as it comes, with the protocol input.
    let feeder = match (spec.stdin, child.stdin.take()) {
        (Some(bytes), Some(mut pipe)) => Some(std::thread::spawn(move || {
            // A child that exits without reading all of its input is not an error.
            let _ = pipe.write_all(&bytes);
        })),
        _ => None,
    };
    let finished = child::supervise(agent, &mut child, started)
        .map_err(|e| op_error(ErrorKind::Io, format!("waiting for {program}: {e}")))?;
    let status = match finished.ending {
        Ending::Exited(status) => status,
        // The feeder is left to end on its broken pipe: the group is gone.
        Ending::TimedOut { after } => {
            return Ok(OpResult::TimedOut {
                after_ms: after.as_millis() as u64,
            });
        }
        Ending::Cancelled => {
            return Err(op_error(ErrorKind::Io, "cancelled by the controller"));
        }
    };
    if let Some(t) = feeder {
        let _ = t.join();
    }
    let (stdout, stderr) = (finished.stdout, finished.stderr);
    // Ansible reports death by signal N as rc -N.
    let rc = status
        .code()
        .unwrap_or_else(|| -status.signal().unwrap_or(0));
    Ok(OpResult::Exec(ExecOutcome {
        ran: true,
        rc,
        stdout,
        stderr,
        start_unix_micros,
        duration_micros: started.elapsed().as_micros() as u64,
        msg: if rc == 0 {
            String::new()
        } else {
            "The command exited with a non-zero return code.".into()
        },
    }))
}

/// Whether anything matches `pattern`, as Python's glob.glob (which Ansible's
/// creates/removes use): `*`, `?` and `[...]` within one path component; wildcards do not
/// match a leading dot; dangling symlinks count as existing.
pub fn glob_exists(pattern: &Path) -> bool {
    let has_magic = |s: &str| s.contains(['*', '?', '[']);
    if !has_magic(&pattern.to_string_lossy()) {
        return pattern.symlink_metadata().is_ok();
    }
    let mut candidates = vec![PathBuf::new()];
    for component in pattern.components() {
        let Component::Normal(part) = component else {
            for c in &mut candidates {
                c.push(component);
            }
            continue;
        };
        let part = part.to_string_lossy();
        if !has_magic(&part) {
            for c in &mut candidates {
                c.push(&*part);
            }
            continue;
        }
        let mut next = Vec::new();
        for dir in &candidates {
            let listing = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir.as_path()
            };
            let Ok(entries) = std::fs::read_dir(listing) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if name.starts_with('.') && !part.starts_with('.') {
                    continue;
                }
                if wildcard_match(part.as_bytes(), name.as_bytes()) {
                    next.push(dir.join(&*name));
                }
            }
        }
        candidates = next;
        if candidates.is_empty() {
            return false;
        }
    }
    candidates.iter().any(|c| c.symlink_metadata().is_ok())
}

/// fnmatch for one component: `*`, `?`, `[abc]`, `[a-z]`, `[!x]`.
fn wildcard_match(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|skip| wildcard_match(rest, &name[skip..])),
        Some((b'?', rest)) => !name.is_empty() && wildcard_match(rest, &name[1..]),
        Some((b'[', rest)) => {
            let Some((&c, name_rest)) = name.split_first() else {
                return false;
            };
            let (negate, body) = match rest.split_first() {
                Some((b'!', body)) => (true, body),
                _ => (false, rest),
            };
            // A `]` right after `[` or `[!` is a member, not the end.
            let Some(close) = body.iter().skip(1).position(|&b| b == b']').map(|i| i + 1) else {
                // No closing bracket: the `[` is literal.
                return c == b'[' && wildcard_match(rest, name_rest);
            };
            let class = &body[..close];
            let mut hit = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == b'-' {
                    hit |= (class[i]..=class[i + 2]).contains(&c);
                    i += 3;
                } else {
                    hit |= class[i] == c;
                    i += 1;
                }
            }
            hit != negate && wildcard_match(&body[close + 1..], name_rest)
        }
        Some((&p, rest)) => name.first() == Some(&p) && wildcard_match(rest, &name[1..]),
    }
}

/// Python's `os.path.expanduser(os.path.expandvars(word))`, as Ansible's command module
/// applies it: `$NAME` and `${NAME}` become the variable's value when it is set (and stay
/// as written when not), then a leading `~`, `~/`, `~user` or `~user/` becomes the home
/// directory.
pub fn expand_argument(word: &str, home: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, written_len) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        match (written_len, lookup(name)) {
            (n, Some(value)) if n > 0 && !name.is_empty() => out.push_str(&value),
            (n, _) => out.push_str(&rest[at..at + 1 + n]),
        }
        rest = &after[written_len..];
    }
    out.push_str(rest);
    crate::users::expand_tilde(&out, home)
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    #[test]
    fn arguments_expand_variables_and_home_like_python() {
        let env = |name: &str| match name {
            "HOME" => Some("/home/u".to_string()),
            "X" => Some("ex".to_string()),
            _ => None,
        };
        let e = |w: &str| expand_argument(w, "/home/u", &env);
        assert_eq!(e("~/file"), "/home/u/file");
        assert_eq!(e("~"), "/home/u");
        assert_eq!(e("a~b"), "a~b");
        assert_eq!(e("$X/y"), "ex/y");
        assert_eq!(e("${X}z"), "exz");
        assert_eq!(e("$UNSET and ${UNSET}"), "$UNSET and ${UNSET}");
        assert_eq!(e("cost$"), "cost$");
        assert_eq!(e("${open"), "${open");
        assert_eq!(e("$HOME/.x"), "/home/u/.x");
    }

    fn argv(args: &[&str]) -> Command {
        Command::Argv(args.iter().map(|s| s.to_string()).collect())
    }

    fn shell(script: &str) -> Command {
        Command::Shell {
            script: script.into(),
            executable: None,
        }
    }

    fn spec(command: Command) -> Exec {
        Exec {
            command,
            chdir: None,
            creates: None,
            removes: None,
            env: vec![],
            stdin: None,
            umask: None,
        }
    }

    fn run(a: &mut Agent, spec: Exec, flags: Flags) -> ExecOutcome {
        match exec(a, spec, flags).unwrap() {
            OpResult::Exec(o) => o,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn argv_runs_without_a_shell_and_captures_both_streams() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let o = run(
            &mut a,
            spec(argv(&["echo", "*", "a b", "$NOT_SET_ANYWHERE"])),
            Flags::default(),
        );
        assert!(o.ran);
        assert_eq!(o.rc, 0);
        // No shell: no globbing, words kept whole, unset variables left as written.
        assert_eq!(o.stdout, b"* a b $NOT_SET_ANYWHERE\n");
        assert!(o.start_unix_micros > 1_600_000_000_000_000);
        let o = run(
            &mut a,
            spec(shell("echo out; echo err >&2; exit 3")),
            Flags::default(),
        );
        assert_eq!(
            (o.rc, &o.stdout[..], &o.stderr[..]),
            (3, &b"out\n"[..], &b"err\n"[..])
        );
        assert_eq!(o.msg, "The command exited with a non-zero return code.");
    }

    #[test]
    fn large_output_on_both_pipes_does_not_deadlock() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let script = "i=0; while [ $i -lt 2000 ]; do echo 0123456789012345678901234567890123456789; \
                      echo 0123456789012345678901234567890123456789 >&2; i=$((i+1)); done";
        let o = run(&mut a, spec(shell(script)), Flags::default());
        assert_eq!(o.rc, 0);
        assert_eq!(o.stdout.len(), 2000 * 41);
        assert_eq!(o.stderr.len(), 2000 * 41);
    }

    #[test]
    fn stdin_env_and_chdir_reach_the_child() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let mut s = spec(shell("cat; echo \"$GREETING\"; pwd"));
        s.stdin = Some(vec![b'x'; 300_000]);
        s.env = vec![("GREETING".into(), "hej".into())];
        s.chdir = Some("~".into());
        let o = run(&mut a, s, Flags::default());
        let want = format!("{}hej\n{}\n", "x".repeat(300_000), dir.path().display());
        assert_eq!(String::from_utf8(o.stdout).unwrap(), want);

        let mut s = spec(argv(&["cat"]));
        assert_eq!(
            run(&mut a, s.clone(), Flags::default()).stdout,
            b"",
            "stdin is /dev/null"
        );
        s.chdir = Some(dir.str("missing"));
        let err = exec(&mut a, s, Flags::default()).unwrap_err();
        assert!(
            err.message.starts_with("Unable to change directory"),
            "{}",
            err.message
        );
    }

    #[test]
    fn shell_executable_replaces_sh() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let o = run(
            &mut a,
            spec(Command::Shell {
                script: "echo $0".into(),
                executable: Some("/bin/bash".into()),
            }),
            Flags::default(),
        );
        assert_eq!(o.stdout, b"/bin/bash\n");
    }

    #[test]
    fn signals_give_negative_rc_and_missing_programs_rc_2() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let o = run(&mut a, spec(shell("kill -9 $$")), Flags::default());
        assert_eq!(o.rc, -9);
        let o = run(
            &mut a,
            spec(argv(&["turbo-no-such-program"])),
            Flags::default(),
        );
        assert!(o.ran);
        assert_eq!(o.rc, 2);
        assert!(o.msg.starts_with("No such file or directory"), "{}", o.msg);
        assert!(o.msg.ends_with(": turbo-no-such-program"), "{}", o.msg);
        let err = exec(&mut a, spec(argv(&[])), Flags::default()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidArgument);
    }

    #[test]
    fn creates_removes_and_check_mode_skip() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        std::fs::write(dir.join("marker.done"), b"").unwrap();
        let marker = dir.join("ran");
        let touch = || spec(shell(&format!("touch {}", marker.display())));

        let mut s = touch();
        s.creates = Some("~/marker.done".into());
        let o = run(&mut a, s, Flags::default());
        assert!(!o.ran);
        assert_eq!(o.rc, 0);
        let shown = dir.str("marker.done");
        assert_eq!(o.msg, format!("Did not run command since '{shown}' exists"));
        assert_eq!(
            o.stdout,
            format!("skipped, since {shown} exists").into_bytes()
        );

        let mut s = touch();
        s.chdir = Some(dir.str(""));
        s.creates = Some("*.done".into());
        assert!(
            !run(&mut a, s, Flags::default()).ran,
            "relative glob under chdir"
        );

        let mut s = touch();
        s.removes = Some(dir.str("absent"));
        let o = run(&mut a, s, Flags::default());
        assert!(!o.ran);
        assert!(o.msg.ends_with("does not exist'") || o.msg.contains("does not exist"));

        let o = run(
            &mut a,
            touch(),
            Flags {
                check: true,
                diff: false,
            },
        );
        assert!(!o.ran);
        assert_eq!(o.msg, "skipped in check mode");
        assert!(!marker.exists());

        let mut s = touch();
        s.removes = Some(dir.str("marker.*"));
        assert!(run(&mut a, s, Flags::default()).ran);
        assert!(marker.exists());
    }

    #[test]
    fn wildcards_follow_fnmatch() {
        assert!(wildcard_match(b"*.txt", b"a.txt"));
        assert!(!wildcard_match(b"*.txt", b"a.txt.bak"));
        assert!(wildcard_match(b"a?c", b"abc"));
        assert!(wildcard_match(b"[a-c]x", b"bx"));
        assert!(!wildcard_match(b"[!a-c]x", b"bx"));
        assert!(wildcard_match(b"[]]", b"]"));
        assert!(wildcard_match(b"[x", b"[x"));
        assert!(wildcard_match(b"*", b""));
    }

    #[test]
    fn glob_skips_hidden_names_unless_asked() {
        let dir = TempDir::new();
        std::fs::create_dir(dir.join("d")).unwrap();
        std::fs::write(dir.join("d/.hidden"), b"").unwrap();
        assert!(!glob_exists(&dir.join("d/*")));
        assert!(glob_exists(&dir.join("d/.h*")));
        assert!(glob_exists(&dir.join("*/.hidden")));
        assert!(!glob_exists(&dir.join("x*/.hidden")));
        std::os::unix::fs::symlink("nowhere", dir.join("dangling")).unwrap();
        assert!(glob_exists(&dir.join("dangling")));
    }
}
