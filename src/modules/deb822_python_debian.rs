//! What Ansible's deb822_repository needs before it does anything: the Python `debian`
//! library (python3-debian) where the system's Python sees it, installed with apt when
//! `install_python_debian` asks, else the module fails in Ansible's words. turbo-play
//! writes the stanza itself, but a host Ansible's module refuses is refused here too.
//!
//! The library is looked for where Debian's python3-debian puts it (a `Stat`, which also
//! runs in check mode, where Ansible fails without it).

use turbo_proto::{Command, Exec, Op, OpResult};

use super::{ModuleError, Next, Plan, TaskOutcome, system_library};

const PACKAGE: &str = "python3-debian";

/// Where python3-debian installs the library for every Python 3 of the system.
const LIBRARY: &str = "/usr/lib/python3/dist-packages/debian/__init__.py";

/// The look for the library, to go with the module's first ops.
pub(super) fn probe() -> Op {
    system_library::probe(LIBRARY)
}

pub(super) use super::system_library::found;

type Then = Box<dyn FnOnce() -> Result<Plan, ModuleError> + Send + Sync>;

/// The library is missing: fail as Ansible's module does, or (`install`) install it with
/// `apt update` and `apt install`, look again, and go on with `then`.
pub(super) fn missing(install: bool, check: bool, then: Then) -> Result<Plan, ModuleError> {
    if check {
        return failed(format!(
            "{PACKAGE} must be installed to use check mode. If run with install_python_debian, this module can auto-install it."
        ));
    }
    if !install {
        return failed(format!(
            "{PACKAGE} is not installed, and install_python_debian is False"
        ));
    }
    Ok(Plan::Step(
        shell(FIND_APT),
        Next::new(move |reply| {
            let (rc, out) = match exec_result(reply) {
                Ok(x) => x,
                Err(plan) => return Ok(*plan),
            };
            if rc != 0 {
                return failed(format!(
                    "Failed to find required executable \"apt\" in paths: {}",
                    out.trim()
                ));
            }
            let apt = out.trim().to_string();
            Ok(Plan::Step(
                argv(&[&apt, "update"]),
                Next::new(move |reply| {
                    let OpResult::Exec(x) = reply else {
                        return Ok(Plan::Done(super::unexpected("deb822_repository", reply)));
                    };
                    if x.rc != 0 {
                        return failed(format!(
                            "Failed update while auto installing {PACKAGE} due to '{}'",
                            String::from_utf8_lossy(&x.stderr).trim()
                        ));
                    }
                    Ok(Plan::Step(
                        argv(&[&apt, "install", PACKAGE, "-y", "-q"]),
                        Next::new(move |reply| {
                            let OpResult::Exec(x) = reply else {
                                return Ok(Plan::Done(super::unexpected(
                                    "deb822_repository",
                                    reply,
                                )));
                            };
                            if x.rc != 0 {
                                return failed(format!(
                                    "Failed to auto-install {PACKAGE} due to : '{}'",
                                    String::from_utf8_lossy(&x.stderr).trim()
                                ));
                            }
                            Ok(Plan::Step(
                                probe(),
                                Next::new(move |reply| {
                                    if found(Some(&reply)) {
                                        then()
                                    } else {
                                        failed(format!(
                                            "Failed to import the required Python library ({PACKAGE}) on this host's Python. Please read the module documentation and install it in the appropriate location. If the required library is installed, but Ansible is using the wrong Python interpreter, please consult the documentation on ansible_python_interpreter"
                                        ))
                                    }
                                }),
                            ))
                        }),
                    ))
                }),
            ))
        }),
    ))
}

/// `get_bin_path('apt')`: PATH, then the sbin directories; on failure, the paths it
/// searched (PATH's, then the existing sbin directories not in it), joined by `:`.
const FIND_APT: &str = r#"searched=$PATH
for d in /sbin /usr/sbin /usr/local/sbin; do
  case ":$PATH:" in *":$d:"*) ;; *) [ -d "$d" ] && searched="$searched:$d" ;; esac
done
IFS=:
for d in $searched; do
  [ -n "$d" ] && [ -f "$d/apt" ] && [ -x "$d/apt" ] && { echo "$d/apt"; exit 0; }
done
echo "$searched"
exit 1
"#;

fn failed(msg: String) -> Result<Plan, ModuleError> {
    Ok(Plan::Done(TaskOutcome::failed(msg)))
}

fn shell(script: &str) -> Op {
    Op::Exec(Exec::plain(Command::Shell {
        script: script.to_string(),
        executable: None,
    }))
}

fn argv(words: &[&str]) -> Op {
    Op::Exec(Exec::plain(Command::Argv(
        words.iter().map(|w| w.to_string()).collect(),
    )))
}

fn exec_result(reply: OpResult) -> Result<(i32, String), Box<Plan>> {
    match reply {
        OpResult::Exec(x) => Ok((x.rc, String::from_utf8_lossy(&x.stdout).into_owned())),
        other => Err(Box::new(Plan::Done(super::unexpected(
            "deb822_repository",
            other,
        )))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turbo_proto::{ExecOutcome, FileKind};

    fn ran(rc: i32, stdout: &str, stderr: &str) -> OpResult {
        OpResult::Exec(ExecOutcome {
            ran: true,
            rc,
            stdout: stdout.into(),
            stderr: stderr.into(),
            start_unix_micros: 0,
            duration_micros: 0,
            msg: String::new(),
        })
    }

    fn done_msg(plan: Plan) -> String {
        match plan {
            Plan::Done(out) => out.msg.unwrap_or_default(),
            other => panic!("{other:?}"),
        }
    }

    fn resume(plan: Plan, reply: OpResult) -> Plan {
        match plan {
            Plan::Step(_, next) => next.resume(reply).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    fn go_on() -> Then {
        Box::new(|| Ok(Plan::Done(TaskOutcome::default())))
    }

    #[test]
    fn without_the_library_the_module_fails_as_ansibles() {
        assert_eq!(
            done_msg(missing(false, false, go_on()).unwrap()),
            "python3-debian is not installed, and install_python_debian is False"
        );
        assert!(
            done_msg(missing(true, true, go_on()).unwrap())
                .starts_with("python3-debian must be installed to use check mode.")
        );
        let no_apt = resume(
            missing(true, false, go_on()).unwrap(),
            ran(1, "/usr/bin:/bin:/sbin\n", ""),
        );
        assert_eq!(
            done_msg(no_apt),
            "Failed to find required executable \"apt\" in paths: /usr/bin:/bin:/sbin"
        );
        let update = resume(
            missing(true, false, go_on()).unwrap(),
            ran(0, "/usr/bin/apt\n", ""),
        );
        assert!(matches!(&update, Plan::Step(Op::Exec(x), _)
            if x.command == Command::Argv(vec!["/usr/bin/apt".into(), "update".into()])));
        assert_eq!(
            done_msg(resume(update, ran(100, "", "E: Malformed entry 1\n"))),
            "Failed update while auto installing python3-debian due to 'E: Malformed entry 1'"
        );
    }

    #[test]
    fn an_installed_library_lets_the_module_go_on() {
        let mut plan = missing(true, false, go_on()).unwrap();
        plan = resume(plan, ran(0, "/usr/bin/apt\n", ""));
        plan = resume(plan, ran(0, "", ""));
        let Plan::Step(Op::Exec(install), _) = &plan else {
            panic!()
        };
        assert_eq!(
            install.command,
            Command::Argv(
                ["/usr/bin/apt", "install", "python3-debian", "-y", "-q"]
                    .map(String::from)
                    .to_vec()
            )
        );
        plan = resume(plan, ran(0, "", ""));
        let library = OpResult::Stat(turbo_proto::StatInfo {
            exists: true,
            kind: FileKind::File,
            ..Default::default()
        });
        assert!(matches!(
            resume(plan, library),
            Plan::Done(TaskOutcome { failed: false, .. })
        ));
    }
}
