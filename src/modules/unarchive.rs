//! `unarchive`: an archive unpacked into an existing directory on the target by the
//! target's GNU tar, as Ansible's tar handlers do it: `--list` with each compression flag
//! in Ansible's order until one lists files, `--diff` to decide whether anything must be
//! unpacked (Ansible's idempotence), `--extract` when so. A controller-side `src` (the
//! default) is sent first to a temporary file on the target and removed at the end.
//! Zip archives (Ansible's unzip handlers), URLs and owner/group/mode are not done yet.

use serde_json::json;
use turbo_proto::{Command, Exec, FileKind, Op, OpResult, StatInfo};

use super::copy::{ATOMIC, SELINUX};
use super::spec::{Arg, Elem, Spec};
use super::unarchive_tar::{HANDLERS, TarCall, files_in_archive, is_unarchived};
use super::{
    Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, find_local_source,
    mode_string, read_local, read_local_decrypted, unexpected,
};

pub struct Unarchive;

/// ansible-core 2.21's unarchive module and action plugin.
static SPEC: Spec = Spec::new(&[
    Arg::str("attributes").aliases(&["attr"]).not_yet(),
    Arg::bool("copy"),
    Arg::path("creates"),
    Arg::bool("decrypt").default_bool(true),
    Arg::path("dest").required(),
    Arg::list("exclude", Elem::Str),
    Arg::list("extra_opts", Elem::Str),
    Arg::str("group").not_yet(),
    Arg::list("include", Elem::Str),
    Arg::int("io_buffer_size")
        .default_int(64 * 1024)
        .no_effect("used by Ansible's zip handler only"),
    Arg::bool("keep_newer").default_bool(false),
    Arg::bool("list_files").default_bool(false),
    Arg::raw("mode").not_yet(),
    Arg::str("owner").not_yet(),
    Arg::bool("remote_src").default_bool(false),
    Arg::str("selevel").no_effect(SELINUX),
    Arg::str("serole").no_effect(SELINUX),
    Arg::str("setype").no_effect(SELINUX),
    Arg::str("seuser").no_effect(SELINUX),
    Arg::path("src").required(),
    Arg::bool("unsafe_writes")
        .default_bool(false)
        .no_effect(ATOMIC),
    Arg::bool("validate_certs")
        .default_bool(true)
        .no_effect("used for URL sources, which are not done yet"),
])
.mutually_exclusive(&[&["include", "exclude"]]);

/// Python's `shlex.quote`.
fn quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\"'\"'"))
    }
}

/// The C locale Ansible asks for (`get_best_parsable_locale`), so tar's words parse.
fn c_locale() -> Vec<(String, String)> {
    ["LANG", "LC_ALL", "LC_MESSAGES", "LANGUAGE"]
        .iter()
        .map(|k| (k.to_string(), "C".to_string()))
        .collect()
}

fn exec(command: Command, chdir: Option<&str>, stdin: Option<Vec<u8>>) -> Op {
    Op::Exec(Exec {
        command,
        chdir: chdir.map(str::to_string),
        creates: None,
        removes: None,
        env: c_locale(),
        stdin,
        umask: None,
    })
}

fn sh(script: String) -> Command {
    Command::Shell {
        script,
        executable: None,
    }
}

/// What the task asks, out of its arguments.
#[derive(Clone)]
struct Request {
    src: String,
    dest: String,
    creates: Option<String>,
    list_files: bool,
    keep_newer: bool,
    excludes: Vec<String>,
    includes: Vec<String>,
    extra_opts: Vec<String>,
    check: bool,
}

impl Module for Unarchive {
    fn name(&self) -> &'static str {
        "unarchive"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let mut remote_src = args.bool("remote_src");
        if let Some(copy) = args.opt_bool("copy") {
            if args.is_set("remote_src") {
                return Ok(Plan::Done(TaskOutcome::failed(
                    "parameters are mutually exclusive: ('copy', 'remote_src')",
                )));
            }
            remote_src = !copy;
        }
        let src = args.str("src").unwrap_or_default().to_string();
        if src.contains("://") {
            if !remote_src {
                return Ok(Plan::Done(TaskOutcome::failed(format!(
                    "Unsupported option, an URI src ({src}) is only supported when remote_src is True"
                ))));
            }
            return Err(ModuleError::Invalid(format!(
                "turbo-play's unarchive does not download a URL src yet ({src}); fetch it with get_url first, or run this task with ansible-playbook"
            )));
        }
        let req = Request {
            src,
            dest: args.str("dest").unwrap_or_default().to_string(),
            creates: args.str("creates").map(str::to_string),
            list_files: args.bool("list_files"),
            keep_newer: args.bool("keep_newer"),
            excludes: args
                .str_list("exclude")
                .into_iter()
                .map(|e| e.trim_end_matches('/').to_string())
                .collect(),
            includes: args.str_list("include"),
            extra_opts: args.str_list("extra_opts"),
            check: ctx.check_mode,
        };
        let local = if remote_src {
            None
        } else {
            let path = find_local_source(&req.src, ctx, "files")?;
            Some(if args.bool("decrypt") {
                read_local_decrypted(&path)?
            } else {
                read_local(&path)?
            })
        };
        let stat = |path: &str| Op::Stat {
            path: path.to_string(),
            checksum: None,
            follow: true,
        };
        let mut ops = vec![stat(&req.dest)];
        ops.push(stat(req.creates.as_deref().unwrap_or("/")));
        if remote_src {
            ops.push(stat(&req.src));
        }
        Ok(Plan::Step(
            Op::Batch(ops),
            Next::new(move |reply| Ok(after_stats(req, local, reply))),
        ))
    }
}

/// The stats' replies, or the first reply that is not one (an agent error).
fn stats(reply: OpResult) -> Result<Vec<StatInfo>, Box<OpResult>> {
    let OpResult::Batch(replies) = reply else {
        return Err(Box::new(reply));
    };
    replies
        .into_iter()
        .map(|r| match r {
            OpResult::Stat(s) => Ok(s),
            other => Err(Box::new(other)),
        })
        .collect()
}

fn after_stats(req: Request, local: Option<Vec<u8>>, reply: OpResult) -> Plan {
    let stats = match stats(reply) {
        Ok(s) => s,
        Err(other) => return Plan::Done(unexpected("unarchive", *other)),
    };
    if req.creates.is_some() && stats[1].exists {
        return Plan::Done(TaskOutcome {
            skipped: true,
            msg: Some(format!(
                "skipped, since {} exists",
                req.creates.as_deref().unwrap_or_default()
            )),
            ..TaskOutcome::default()
        });
    }
    let dest = stats[0].clone();
    if !dest.exists || dest.kind != FileKind::Directory {
        return Plan::Done(TaskOutcome::failed(format!(
            "dest '{}' must be an existing dir",
            req.dest
        )));
    }
    if let Some(src) = stats.get(2) {
        if !src.exists {
            return Plan::Done(TaskOutcome::failed(format!(
                "Source '{}' does not exist",
                req.src
            )));
        }
        if src.size == 0 {
            return Plan::Done(TaskOutcome::failed(format!(
                "Invalid archive '{}', the file is 0 bytes",
                src.path
            )));
        }
    }
    if req.check {
        return Plan::Done(TaskOutcome {
            skipped: true,
            msg: Some(
                "remote module (ansible.legacy.unarchive) does not support check mode when using gtar".into(),
            ),
            ..TaskOutcome::default()
        });
    }
    match local {
        None => {
            let src = stats[2].path.clone();
            detect(req, src, None, dest)
        }
        Some(bytes) if bytes.is_empty() => Plan::Done(TaskOutcome::failed(format!(
            "Invalid archive '{}', the file is 0 bytes",
            req.src
        ))),
        Some(bytes) => {
            let upload = exec(
                sh("f=$(mktemp --tmpdir ansible-unarchive.XXXXXXXX) && cat > \"$f\" && printf %s \"$f\"".into()),
                None,
                Some(bytes),
            );
            Plan::Step(
                upload,
                Next::new(move |reply| {
                    let OpResult::Exec(ran) = reply else {
                        return Ok(Plan::Done(unexpected("unarchive", reply)));
                    };
                    if ran.rc != 0 {
                        return Ok(Plan::Done(TaskOutcome::failed(format!(
                            "Source '{}' failed to transfer: {}",
                            req.src,
                            String::from_utf8_lossy(&ran.stderr).trim_end()
                        ))));
                    }
                    let tmp = String::from_utf8_lossy(&ran.stdout).into_owned();
                    Ok(detect(req, tmp.clone(), Some(tmp), dest))
                }),
            )
        }
    }
}

/// Finds GNU tar and the first handler whose `--list` names files, then lists them.
fn detect(req: Request, src: String, tmp: Option<String>, dest: StatInfo) -> Plan {
    // Ansible tries its unzip handlers first; those are not done here yet.
    let mut script = format!(
        "unzip -Z -1 {} >/dev/null 2>&1 && {{ echo zip; exit 0; }}\n",
        quote(&src)
    );
    script.push_str(
        "tar=$(command -v gtar || command -v tar) || { echo notar; exit 0; }\n\"$tar\" --version 2>/dev/null | head -n 1 | grep -q GNU || { echo \"notgnu $tar\"; exit 0; }\n",
    );
    for (i, (_, flag)) in HANDLERS.iter().enumerate() {
        let call = call(&req, "TAR", &src, &dest.path, flag);
        let words: Vec<String> = call
            .argv("--list")
            .iter()
            .skip(1)
            .map(|w| quote(w))
            .collect();
        script.push_str(&format!(
            "if out=$(\"$tar\" {} 2>/dev/null) && [ -n \"$out\" ]; then printf 'tar %s\\nhandler {i}\\n%s\\n' \"$tar\" \"$out\"; exit 0; fi\n",
            words.join(" ")
        ));
    }
    script.push_str("echo none\n");
    let op = exec(sh(script), Some(&dest.path), None);
    Plan::Step(
        op,
        Next::new(move |reply| {
            let OpResult::Exec(ran) = reply else {
                return Ok(Plan::Done(unexpected("unarchive", reply)));
            };
            let out = String::from_utf8_lossy(&ran.stdout).into_owned();
            let mut lines = out.splitn(3, '\n');
            let first = lines.next().unwrap_or_default();
            let Some(tar) = first.strip_prefix("tar ") else {
                let why = match first.split_once(' ') {
                    Some(("notgnu", path)) => {
                        format!("Command \"{path}\" detected as tar type None. GNU tar required.")
                    }
                    _ if first == "zip" => {
                        return Ok(cleanup_then(
                            tmp.clone(),
                            TaskOutcome::failed(format!(
                                "turbo-play's unarchive does not unpack zip archives yet ({}); run this task with ansible-playbook",
                                req.src
                            )),
                        ));
                    }
                    _ if first == "notar" => {
                        "Unable to find required 'gtar' or 'tar' binary in the path".into()
                    }
                    _ => "Command \"tar\" could not handle archive".into(),
                };
                return Ok(cleanup_then(
                    tmp.clone(),
                    TaskOutcome::failed(format!(
                        "Failed to find handler for \"{src}\". Make sure the required command to extract the file is installed.\n{why}"
                    )),
                ));
            };
            let handler: usize = lines
                .next()
                .and_then(|l| l.strip_prefix("handler "))
                .and_then(|i| i.parse().ok())
                .unwrap_or(0);
            let files = files_in_archive(lines.next().unwrap_or_default(), &req.excludes);
            Ok(diff(req, src, tmp, dest, tar.to_string(), handler, files))
        }),
    )
}

fn call<'a>(
    req: &'a Request,
    tar: &'a str,
    src: &'a str,
    dest: &'a str,
    flag: &'a str,
) -> TarCall<'a> {
    TarCall {
        tar,
        dest,
        src,
        flag,
        extra_opts: &req.extra_opts,
        excludes: &req.excludes,
        includes: &req.includes,
        keep_newer: req.keep_newer,
    }
}

fn diff(
    req: Request,
    src: String,
    tmp: Option<String>,
    dest: StatInfo,
    tar: String,
    handler: usize,
    files: Vec<String>,
) -> Plan {
    let (name, flag) = HANDLERS[handler];
    let argv = call(&req, &tar, &src, &dest.path, flag).argv("--diff");
    let op = exec(Command::Argv(argv), Some(&dest.path), None);
    Plan::Step(
        op,
        Next::new(move |reply| {
            let OpResult::Exec(ran) = reply else {
                return Ok(Plan::Done(unexpected("unarchive", reply)));
            };
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            // Ansible's check compares ownership only when it runs as root, which
            // `--diff`'s own Uid lines reveal no better than the dest's owner does.
            let root = dest.uid == 0;
            let mut out = TaskOutcome::default();
            out.data.insert("handler".into(), json!(name));
            out.data.insert("dest".into(), json!(req.dest));
            out.data.insert("src".into(), json!(src));
            if req.list_files {
                out.data.insert("files".into(), json!(files));
            }
            path_info(&mut out, &dest);
            if is_unarchived(&text(&ran.stdout), &text(&ran.stderr), root) {
                return Ok(cleanup_then(tmp, out));
            }
            let argv = call(&req, &tar, &src, &dest.path, flag).argv("--extract");
            let extract = exec(Command::Argv(argv.clone()), Some(&dest.path), None);
            Ok(Plan::Step(
                extract,
                Next::new(move |reply| {
                    let OpResult::Exec(ran) = reply else {
                        return Ok(Plan::Done(unexpected("unarchive", reply)));
                    };
                    out.data.insert(
                        "extract_results".into(),
                        json!({"cmd": argv, "rc": ran.rc, "out": text(&ran.stdout), "err": text(&ran.stderr)}),
                    );
                    if ran.rc != 0 {
                        out.failed = true;
                        out.msg = Some(format!("failed to unpack {src} to {}", req.dest));
                    } else {
                        out.changed = true;
                    }
                    Ok(cleanup_then(tmp, out))
                }),
            ))
        }),
    )
}

/// The dest's path info, which Ansible's `exit_json` adds for `dest`.
fn path_info(out: &mut TaskOutcome, dest: &StatInfo) {
    let data = &mut out.data;
    data.insert("uid".into(), json!(dest.uid));
    data.insert("gid".into(), json!(dest.gid));
    data.insert("owner".into(), json!(dest.owner));
    data.insert("group".into(), json!(dest.group));
    data.insert("mode".into(), json!(mode_string(dest.mode)));
    data.insert("state".into(), json!("directory"));
    data.insert("size".into(), json!(dest.size));
}

/// Removes the uploaded archive (if any), then reports `out`.
fn cleanup_then(tmp: Option<String>, out: TaskOutcome) -> Plan {
    let Some(tmp) = tmp else {
        return Plan::Done(out);
    };
    let rm = exec(
        Command::Argv(vec!["rm".into(), "-f".into(), tmp]),
        None,
        None,
    );
    Plan::Step(rm, Next::new(move |_| Ok(Plan::Done(out))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(v: serde_json::Value) -> Result<Plan, String> {
        crate::modules::try_plan(&Unarchive, v, &PlanContext::new(Path::new("/")))
    }

    #[test]
    fn stats_dest_creates_and_a_remote_src_first() {
        let planned =
            plan(json!({"src": "/a.tgz", "dest": "/d", "remote_src": true, "creates": "/d/x"}))
                .unwrap();
        let stat = |p: &str| Op::Stat {
            path: p.into(),
            checksum: None,
            follow: true,
        };
        assert_eq!(
            planned,
            Plan::Step(
                Op::Batch(vec![stat("/d"), stat("/d/x"), stat("/a.tgz")]),
                Next::new(|_| unreachable!())
            )
        );
    }

    #[test]
    fn refuses_as_the_action_plugin_does() {
        let msg = |v| match plan(v) {
            Ok(Plan::Done(out)) => out.msg.unwrap_or_default(),
            Ok(other) => panic!("{other:?}"),
            Err(e) => e,
        };
        assert_eq!(
            msg(json!({"src": "https://x/a.tgz", "dest": "/d"})),
            "Unsupported option, an URI src (https://x/a.tgz) is only supported when remote_src is True"
        );
        assert_eq!(
            msg(json!({"src": "/a", "dest": "/d", "copy": false, "remote_src": true})),
            "parameters are mutually exclusive: ('copy', 'remote_src')"
        );
        assert!(
            msg(json!({"src": "/a", "dest": "/d", "include": ["x"], "exclude": ["y"]}))
                .starts_with("parameters are mutually exclusive: include|exclude")
        );
    }
}
