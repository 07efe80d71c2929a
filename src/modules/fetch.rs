//! `fetch`: a remote file copied to the controller, as Ansible's fetch action does it: stat
//! the file with its SHA-1, compare with the local copy, and bring the bytes over only
//! when they differ, page by page (`ReadFile` with `offset`). A loop's items go together
//! (each touches a local file of its own): one batch of stats, then one batch of first
//! pages.
//!
//! Unlike every other module, fetch writes on the controller: the pages go straight into
//! a temp file beside the destination ([`fetch_local::Download`]), renamed into place when
//! the last page is in. That happens in this planner's step continuations, which run on
//! the controller as the replies arrive; nothing else in the module layer writes locally.

use serde_json::{Value, json};
use turbo_proto::{Digest, ErrorKind, FileKind, Op, OpResult};

use super::fetch_dest::{Where, host_root, leaves_through_symlink, local_dest};
use super::fetch_local::{Download, hex, local_digests};
use super::spec::{Arg, Spec, Unknown};
use super::{Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, unexpected};

pub struct Fetch;

/// Ansible's fetch action reads its arguments itself (booleans leniently) and ignores
/// names it does not know.
static SPEC: Spec = Spec::new(&[
    Arg::raw("dest"),
    Arg::raw("fail_on_missing"),
    Arg::raw("flat"),
    Arg::raw("src"),
    Arg::raw("validate_checksum"),
])
.unknown(Unknown::Accepted);

/// What the first reply needs to go on.
struct Request {
    dest: String,
    flat: bool,
    fail_on_missing: bool,
    validate_checksum: bool,
    host: String,
    base: std::path::PathBuf,
}

impl Module for Fetch {
    fn name(&self) -> &'static str {
        "fetch"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        if ctx.check_mode {
            return Ok(Plan::Done(TaskOutcome {
                skipped: true,
                msg: Some("check mode not (yet) supported for this module".into()),
                ..TaskOutcome::default()
            }));
        }
        let src = args.raw("src").filter(|v| !v.is_null());
        let dest = args.raw("dest").filter(|v| !v.is_null());
        let (src, dest) = match (src, dest) {
            (None, _) | (_, None) => return Ok(failed("src and dest are required")),
            (_, Some(d)) if !d.is_string() => {
                return Ok(failed(
                    "Invalid type supplied for dest option, it must be a string",
                ));
            }
            (Some(s), _) if !s.is_string() => {
                return Ok(failed(
                    "Invalid type supplied for source option, it must be a string",
                ));
            }
            (Some(s), Some(d)) => (
                s.as_str().unwrap_or_default().to_string(),
                d.as_str().unwrap_or_default().to_string(),
            ),
        };
        let lenient = |name: &str, default: bool| {
            args.raw(name)
                .filter(|v| !v.is_null())
                .map_or(default, crate::booleans::lenient)
        };
        let host = ctx
            .vars
            .and_then(|v| v.get_attr("inventory_hostname").ok())
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let request = Request {
            dest,
            flat: lenient("flat", false),
            fail_on_missing: lenient("fail_on_missing", true),
            validate_checksum: lenient("validate_checksum", true),
            host,
            base: ctx.playbook_dir.to_path_buf(),
        };
        // fetch always follows symlinks, as Ansible's remote stat does for it.
        let stat = Op::Stat {
            path: src.clone(),
            checksum: Some(Digest::Sha1),
            follow: true,
        };
        // What the item writes on the controller: its own file under dest unless flat.
        let touched = if request.flat {
            format!("fetch to {}", request.dest)
        } else {
            format!("fetch of {src} to {}", request.dest)
        };
        Ok(Plan::Step(
            stat,
            Next::new(move |reply| Ok(after_stat(request, src, reply))).touching(touched),
        ))
    }
}

fn failed(msg: &str) -> Plan {
    Plan::Done(TaskOutcome::failed(msg))
}

fn after_stat(request: Request, src: String, reply: OpResult) -> Plan {
    let stat = match reply {
        OpResult::Stat(stat) => stat,
        // An unreadable file cannot be hashed: Ansible falls back to slurp, which fails.
        // Only the failure carries slurp's message; the note Ansible gives instead has none.
        OpResult::Error(e) if e.kind == ErrorKind::PermissionDenied => {
            let mut out = not_fetched(&request, &src, None, false);
            if out.failed {
                out.msg = Some(format!("File is not readable: {src}"));
            }
            return Plan::Done(out);
        }
        other => return Plan::Done(unexpected("fetch", other)),
    };
    let source = stat.path.clone();
    match stat.kind {
        FileKind::Missing => {
            return Plan::Done(not_fetched(
                &request,
                &source,
                Some("the remote file does not exist, not transferring, ignored".into()),
                false,
            ));
        }
        FileKind::Directory => {
            let msg = "remote file is a directory, fetch cannot work on directories";
            return Plan::Done(not_fetched(&request, &source, Some(msg.into()), true));
        }
        _ => {}
    }
    let Some(remote_checksum) = stat.checksum.as_deref().map(hex) else {
        return Plan::Done(unexpected("fetch", OpResult::Stat(stat)));
    };
    let w = Where {
        source: &source,
        dest: &request.dest,
        flat: request.flat,
        host: &request.host,
        base: &request.base,
    };
    let dest = match local_dest(&w, |p| p.is_dir()) {
        Ok(dest) => dest,
        Err(msg) => return Plan::Done(TaskOutcome::failed(msg)),
    };
    if let Some(msg) = host_root(&w).and_then(|root| leaves_through_symlink(&dest, &root)) {
        return Plan::Done(TaskOutcome::failed(msg));
    }
    let dest_text = dest.to_string_lossy().into_owned();
    let local = local_digests(&dest);
    if let Some((sha1, md5)) = &local
        && *sha1 == remote_checksum
    {
        let mut out = TaskOutcome::default();
        out.data.insert("md5sum".into(), json!(md5));
        out.data.insert("file".into(), json!(source));
        out.data.insert("dest".into(), json!(dest_text));
        out.data.insert("checksum".into(), json!(sha1));
        return Plan::Done(out);
    }
    let download = match Download::start(&dest) {
        Ok(d) => d,
        Err(msg) => return Plan::Done(TaskOutcome::failed(msg)),
    };
    let done = Done {
        source,
        dest: dest_text,
        remote_checksum,
        validate: request.validate_checksum,
    };
    read_page(download, done)
}

/// The result for a file that is not there to fetch: a failure with `fail_on_missing`
/// (Ansible's default), else a note. `dir` is the directory case, whose note
/// Ansible words differently and which keeps neither `changed` nor `file`.
fn not_fetched(request: &Request, source: &str, msg: Option<String>, dir: bool) -> TaskOutcome {
    let mut out = TaskOutcome {
        msg: msg.clone(),
        ..TaskOutcome::default()
    };
    if request.fail_on_missing {
        out.failed = true;
        return out;
    }
    if dir {
        out.msg = msg.map(|m| format!("{m}, not transferring, ignored"));
    } else {
        out.data.insert("file".into(), json!(source));
    }
    out
}

/// What the result names once the bytes are in.
struct Done {
    source: String,
    dest: String,
    remote_checksum: String,
    validate: bool,
}

/// Bytes asked per page: small enough that a page in flight, decoded and written costs a
/// few MiB on the controller, large enough that round trips stay few.
const PAGE_BYTES: u64 = 2 << 20;

fn read_page(download: Download, done: Done) -> Plan {
    let op = Op::ReadFile {
        path: done.source.clone(),
        offset: download.received,
        limit: Some(PAGE_BYTES),
    };
    Plan::Step(
        op,
        Next::new(move |reply| {
            let mut download = download;
            let read = match reply {
                OpResult::Read(read) if read.stat.exists => read,
                OpResult::Read(_) => {
                    return Ok(Plan::Done(TaskOutcome::failed(format!(
                        "the remote file {} disappeared while it was fetched",
                        done.source
                    ))));
                }
                other => return Ok(Plan::Done(unexpected("fetch", other))),
            };
            // An agent that answers another page than the one asked for, or an empty page
            // that is not the end, would corrupt the copy or keep the task asking for ever.
            if read.offset != download.received || (read.data.is_empty() && !read.eof) {
                return Ok(Plan::Done(TaskOutcome::failed(format!(
                    "agent protocol error: asked for {} from byte {}, got {} bytes from byte {}{}",
                    done.source,
                    download.received,
                    read.data.len(),
                    read.offset,
                    if read.eof { "" } else { " and more to come" }
                ))));
            }
            if let Err(msg) = download.append(&read.data) {
                return Ok(Plan::Done(TaskOutcome::failed(msg)));
            }
            if !read.eof {
                return Ok(read_page(download, done));
            }
            Ok(Plan::Done(match download.commit() {
                Ok((sha1, md5)) => fetched(done, sha1, md5),
                Err(msg) => TaskOutcome::failed(msg),
            }))
        }),
    )
}

fn fetched(done: Done, sha1: String, md5: String) -> TaskOutcome {
    let mismatch = done.validate && sha1 != done.remote_checksum;
    let mut out = TaskOutcome {
        changed: !mismatch,
        failed: mismatch,
        msg: mismatch.then(|| "checksum mismatch".to_string()),
        ..TaskOutcome::default()
    };
    out.data.insert("md5sum".into(), json!(md5));
    out.data.insert("file".into(), json!(done.source));
    out.data.insert("dest".into(), json!(done.dest));
    out.data.insert("remote_md5sum".into(), Value::Null);
    out.data.insert("checksum".into(), json!(sha1));
    out.data
        .insert("remote_checksum".into(), json!(done.remote_checksum));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use turbo_proto::{FileRead, StatInfo};

    fn vars() -> minijinja::Value {
        minijinja::Value::from_serialize(json!({"inventory_hostname": "web1"}))
    }

    fn plan_in(dir: &Path, args: Value) -> Plan {
        let vars = vars();
        let ctx = PlanContext {
            vars: Some(&vars),
            ..PlanContext::new(dir)
        };
        crate::modules::try_plan(&Fetch, args, &ctx).unwrap()
    }

    fn file_stat(path: &str, content: &[u8]) -> StatInfo {
        use sha1::{Digest as _, Sha1};
        StatInfo {
            path: path.into(),
            exists: true,
            kind: FileKind::File,
            size: content.len() as u64,
            checksum: Some(Sha1::digest(content).to_vec()),
            ..StatInfo::default()
        }
    }

    fn page(stat: &StatInfo, offset: u64, data: &[u8], eof: bool) -> OpResult {
        OpResult::Read(FileRead {
            stat: stat.clone(),
            offset,
            data: data.to_vec(),
            eof,
        })
    }

    fn step(plan: Plan, reply: OpResult) -> (Op, Plan) {
        let Plan::Step(op, next) = plan else {
            panic!("expected a step, got {plan:?}")
        };
        (op, next.resume(reply).unwrap())
    }

    fn done(plan: Plan) -> TaskOutcome {
        match plan {
            Plan::Done(out) => out,
            other => panic!("expected an outcome, got {other:?}"),
        }
    }

    #[test]
    fn fetches_page_by_page_then_reports_nothing_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let stat = file_stat("/var/log/app.log", b"line one\nline two\n");
        let args = json!({"src": "/var/log/app.log", "dest": "got"});
        let (op, plan) = step(
            plan_in(dir.path(), args.clone()),
            OpResult::Stat(stat.clone()),
        );
        assert_eq!(
            op,
            Op::Stat {
                path: "/var/log/app.log".into(),
                checksum: Some(Digest::Sha1),
                follow: true
            }
        );
        let (op, plan) = step(plan, page(&stat, 0, b"line one\n", false));
        assert_eq!(
            op,
            Op::ReadFile {
                path: "/var/log/app.log".into(),
                offset: 0,
                limit: Some(PAGE_BYTES)
            }
        );
        let (op, plan) = step(plan, page(&stat, 9, b"line two\n", true));
        assert_eq!(
            op,
            Op::ReadFile {
                path: "/var/log/app.log".into(),
                offset: 9,
                limit: Some(PAGE_BYTES)
            }
        );
        let out = done(plan);
        let dest = dir.path().join("got/web1/var/log/app.log");
        assert_eq!(std::fs::read(&dest).unwrap(), b"line one\nline two\n");
        assert!(out.changed && !out.failed, "{out:?}");
        assert_eq!(out.data["dest"], json!(dest.to_string_lossy()));
        assert_eq!(out.data["file"], json!("/var/log/app.log"));
        assert_eq!(out.data["checksum"], out.data["remote_checksum"]);
        assert_eq!(out.data["remote_md5sum"], Value::Null);
        assert_eq!(
            out.data["md5sum"],
            json!(format!("{:x}", md5::compute(b"line one\nline two\n")))
        );
        let again = done(step(plan_in(dir.path(), args), OpResult::Stat(stat)).1);
        assert!(!again.changed && !again.failed);
        assert!(!again.data.contains_key("remote_checksum"));
    }

    #[test]
    fn missing_and_directories_as_ansible_words_them() {
        let dir = tempfile::tempdir().unwrap();
        let missing = OpResult::Stat(StatInfo::missing("/nope".into()));
        let out = done(
            step(
                plan_in(dir.path(), json!({"src": "/nope", "dest": "d"})),
                missing.clone(),
            )
            .1,
        );
        assert!(out.failed);
        assert_eq!(
            out.msg.as_deref(),
            Some("the remote file does not exist, not transferring, ignored")
        );
        let args = json!({"src": "/nope", "dest": "d", "fail_on_missing": "no"});
        let out = done(step(plan_in(dir.path(), args), missing).1);
        assert!(!out.failed);
        assert_eq!(out.data["file"], json!("/nope"));
        let d = StatInfo {
            path: "/etc".into(),
            exists: true,
            kind: FileKind::Directory,
            ..StatInfo::default()
        };
        let args = json!({"src": "/etc", "dest": "d", "fail_on_missing": false});
        let out = done(step(plan_in(dir.path(), args), OpResult::Stat(d)).1);
        assert!(!out.failed);
        assert_eq!(
            out.msg.as_deref(),
            Some(
                "remote file is a directory, fetch cannot work on directories, not transferring, ignored"
            )
        );
    }

    #[test]
    fn arguments_and_check_mode() {
        let dir = tempfile::tempdir().unwrap();
        let msg = |args| done(plan_in(dir.path(), args)).msg.unwrap();
        assert_eq!(msg(json!({"src": "/a"})), "src and dest are required");
        assert_eq!(
            msg(json!({"src": "/a", "dest": ["x"]})),
            "Invalid type supplied for dest option, it must be a string"
        );
        assert_eq!(
            msg(json!({"src": 1, "dest": "x"})),
            "Invalid type supplied for source option, it must be a string"
        );
        let ctx = PlanContext {
            check_mode: true,
            ..PlanContext::new(dir.path())
        };
        let out = done(
            crate::modules::try_plan(&Fetch, json!({"src": "/a", "dest": "d"}), &ctx).unwrap(),
        );
        assert!(out.skipped);
    }

    #[test]
    fn a_changed_copy_fails_validation_but_stays() {
        let dir = tempfile::tempdir().unwrap();
        let stat = file_stat("/f", b"old");
        let args = json!({"src": "/f", "dest": "/", "flat": true});
        let dest = dir.path().join("flat");
        let args = json!({"src": "/f", "dest": dest.to_string_lossy(), "flat": args["flat"]});
        let (_, plan) = step(plan_in(dir.path(), args), OpResult::Stat(stat.clone()));
        let out = done(step(plan, page(&stat, 0, b"new", true)).1);
        assert!(out.failed);
        assert_eq!(out.msg.as_deref(), Some("checksum mismatch"));
        assert_eq!(std::fs::read(&dest).unwrap(), b"new");
    }

    /// Every file under `dir`, relative to it, with what symlinks point to left unread.
    fn files_under(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for entry in std::fs::read_dir(&d).unwrap().flatten() {
                let path = entry.path();
                if entry.file_type().unwrap().is_dir() {
                    todo.push(path);
                } else {
                    out.push(path.strip_prefix(dir).unwrap().display().to_string());
                }
            }
        }
        out.sort();
        out
    }

    /// An agent asked for `asked` that answers with the stat of `lied` and its bytes.
    fn fetch_with_lying_stat(dir: &Path, args: Value, lied: &str) -> TaskOutcome {
        let stat = file_stat(lied, b"owned\n");
        match step(plan_in(dir, args), OpResult::Stat(stat.clone())).1 {
            Plan::Done(out) => out,
            plan => done(step(plan, page(&stat, 0, b"owned\n", true)).1),
        }
    }

    #[test]
    fn a_remote_path_that_climbs_out_of_dest_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let play = root.path().join("play");
        std::fs::create_dir(&play).unwrap();
        for lied in [
            "/../../../outside",
            "/var/../../../../outside",
            "..",
            "/",
            "",
        ] {
            let args = json!({"src": "/var/log/app.log", "dest": "got"});
            let out = fetch_with_lying_stat(&play, args, lied);
            assert!(out.failed, "{lied:?}: {out:?}");
            let msg = out.msg.unwrap();
            assert!(msg.starts_with("Detected directory traversal"), "{msg}");
        }
        // The user's own src with `..` is held to the same rule.
        let args = json!({"src": "../../../outside", "dest": "got"});
        let out = fetch_with_lying_stat(&play, args, "../../../outside");
        assert!(out.failed);
        // With flat and a trailing slash, only the remote name is taken: `..` is no name.
        let args = json!({"src": "/etc/x", "dest": "got/", "flat": true});
        let out = fetch_with_lying_stat(&play, args, "/etc/..");
        assert!(out.failed);
        assert_eq!(files_under(root.path()), Vec::<String>::new());
    }

    #[test]
    fn an_absolute_remote_path_stays_under_the_hosts_folder() {
        let dir = tempfile::tempdir().unwrap();
        let args = json!({"src": "/etc/motd", "dest": "got"});
        let out = fetch_with_lying_stat(dir.path(), args, "/root/.ssh/authorized_keys");
        // The agent chose which of its files to send, but not where the controller puts it.
        assert!(!out.failed, "{out:?}");
        assert_eq!(
            files_under(dir.path()),
            ["got/web1/root/.ssh/authorized_keys"]
        );
    }

    #[test]
    fn a_symlink_in_the_dest_tree_is_not_followed_out_of_it() {
        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let play = root.path().join("play");
        std::fs::create_dir_all(play.join("got/web1/var")).unwrap();
        // Planted where a fetch of /var/log/... goes, pointing elsewhere.
        std::os::unix::fs::symlink(&outside, play.join("got/web1/var/log")).unwrap();
        let args = json!({"src": "/var/log/app.log", "dest": "got"});
        let out = fetch_with_lying_stat(&play, args, "/var/log/app.log");
        assert!(out.failed, "{out:?}");
        assert!(out.msg.unwrap().contains("through a symbolic link"));
        assert_eq!(files_under(&outside), Vec::<String>::new());

        // A host folder that is itself a link (the user's choice of disk) is followed.
        let elsewhere = root.path().join("big/web1");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::create_dir(play.join("linked")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, play.join("linked/web1")).unwrap();
        let args = json!({"src": "/etc/motd", "dest": "linked"});
        let out = fetch_with_lying_stat(&play, args, "/etc/motd");
        assert!(!out.failed, "{out:?}");
        assert_eq!(files_under(&elsewhere), ["etc/motd"]);
    }

    #[test]
    fn a_checksum_that_does_not_match_the_bytes_fails_the_task() {
        let dir = tempfile::tempdir().unwrap();
        // The stat claims the SHA-1 of other content than the pages carry.
        let stat = file_stat("/f", b"what the stat says");
        let args = json!({"src": "/f", "dest": "got"});
        let (_, plan) = step(plan_in(dir.path(), args), OpResult::Stat(stat.clone()));
        let out = done(step(plan, page(&stat, 0, b"what was sent", true)).1);
        assert!(out.failed);
        assert_eq!(out.msg.as_deref(), Some("checksum mismatch"));
        assert_ne!(out.data["checksum"], out.data["remote_checksum"]);
        // As in Ansible, the copy stays (inside dest) and nothing else is left behind.
        assert_eq!(files_under(dir.path()), ["got/web1/f"]);
    }

    #[test]
    fn pages_out_of_step_or_empty_without_end_fail_instead_of_looping() {
        let dir = tempfile::tempdir().unwrap();
        let stat = file_stat("/f", b"0123456789");
        let args = json!({"src": "/f", "dest": "got"});
        let start = || {
            step(
                plan_in(dir.path(), args.clone()),
                OpResult::Stat(stat.clone()),
            )
            .1
        };
        // A page from another offset than asked.
        let (_, plan) = step(start(), page(&stat, 0, b"01234", false));
        let out = done(step(plan, page(&stat, 2, b"23456789", true)).1);
        assert!(out.failed);
        assert!(
            out.msg
                .unwrap()
                .starts_with("agent protocol error: asked for /f from byte 5")
        );
        // An empty page that promises more: the task would ask again for ever.
        let out = done(step(start(), page(&stat, 0, b"", false)).1);
        assert!(out.failed);
        // Wrong answers of another kind are errors too, and no temp file is left.
        let out = done(step(start(), OpResult::NeedContent).1);
        assert!(out.failed);
        let out = done(
            step(
                plan_in(dir.path(), args.clone()),
                OpResult::Stat(StatInfo {
                    checksum: None,
                    ..stat.clone()
                }),
            )
            .1,
        );
        assert!(out.failed);
        assert_eq!(files_under(dir.path()), Vec::<String>::new());
    }
}
