//! `cron`: a job or variable in a user's crontab (read with `crontab -l`, written with
//! `crontab -`, `-u USER` when the task names another user than the one connected) or in a
//! cron file, in Ansible's `#Ansible: NAME` format. One step reads (and looks for the
//! `crontab` program, which Ansible requires even for a cron file), the edit is decided
//! here on the text ([`cron_tab`](super::cron_tab)), and one more writes when something
//! changed. Check mode reads and writes nothing: the module does its own check mode so its
//! read still runs.

use serde_json::{Map, Value, json};
use turbo_proto::{
    Command, EnsureFile, EnsurePath, Exec, FileContent, FileMode, Op, OpResult, Ownership,
    PathState,
};

use super::cron_tab::{CronTab, Found, job_line};
use super::spec::{Arg, Spec};
use super::{Args, Caps, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, unexpected};

pub struct Cron;

/// ansible-core 2.21's cron module.
static SPEC: Spec = Spec::new(&[
    Arg::bool("backup").default_bool(false),
    Arg::path("cron_file"),
    Arg::str("day").aliases(&["dom"]).default_str("*"),
    Arg::bool("disabled").default_bool(false),
    Arg::bool("env").default_bool(false),
    Arg::str("hour").default_str("*"),
    Arg::str("insertafter"),
    Arg::str("insertbefore"),
    Arg::str("job").aliases(&["value"]),
    Arg::str("minute").default_str("*"),
    Arg::str("month").default_str("*"),
    Arg::str("name").required(),
    Arg::str("special_time").choices(&[
        "reboot", "yearly", "annually", "monthly", "weekly", "daily", "hourly",
    ]),
    Arg::str("state")
        .default_str("present")
        .choices(&["present", "absent"]),
    Arg::str("user"),
    Arg::str("weekday").aliases(&["dow"]).default_str("*"),
])
.mutually_exclusive(&[&["insertafter", "insertbefore"]]);

/// Python's `shlex.quote`.
fn quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\"'\"'"))
    }
}

/// Fails as Ansible's `get_bin_path('crontab', required=True)` when there is none, with
/// the search path it printed.
const NEED_CRONTAB: &str =
    "command -v crontab >/dev/null 2>&1 || { printf %s \"$PATH\"; exit 127; }\n";

/// `crontab ARGS`, with `-u USER` only when USER is not the user running it.
fn crontab(user: Option<&str>, args: &str) -> String {
    match user {
        None => format!("crontab {args}"),
        Some(u) => {
            let u = quote(u);
            format!(
                "if [ \"$(id -un)\" = {u} ]; then crontab {args}; else crontab -u {u} {args}; fi"
            )
        }
    }
}

fn shell(script: String, stdin: Option<Vec<u8>>) -> Op {
    Op::Exec(Exec {
        command: Command::Shell {
            script,
            executable: None,
        },
        chdir: None,
        creates: None,
        removes: None,
        env: Vec::new(),
        stdin,
        umask: Some(0o022),
    })
}

/// Ansible's message for a missing `crontab`, from the target's `$PATH`.
fn no_crontab(path: &str) -> String {
    let mut dirs: Vec<&str> = path.split(':').filter(|d| !d.is_empty()).collect();
    for extra in ["/sbin", "/usr/sbin", "/usr/local/sbin"] {
        if !dirs.contains(&extra) {
            dirs.push(extra);
        }
    }
    format!(
        "Failed to find required executable \"crontab\" in paths: {}",
        dirs.join(":")
    )
}

/// What the task asks, out of its arguments.
struct Request {
    name: String,
    user: Option<String>,
    job: Option<String>,
    /// The cron file's path (`/etc/cron.d/NAME` for a bare name) and as written.
    cron_file: Option<(String, String)>,
    install: bool,
    backup: bool,
    times: [String; 5],
    special: Option<String>,
    disabled: bool,
    env: bool,
    after: Option<String>,
    before: Option<String>,
    check: bool,
    diff: bool,
}

impl Request {
    fn of(args: &Args, ctx: &PlanContext) -> Request {
        let text = |k: &str| args.str(k).map(str::to_string);
        let cron_file = args.str("cron_file").map(|f| {
            let path = if f.starts_with('/') {
                f.to_string()
            } else {
                format!("/etc/cron.d/{f}")
            };
            (path, f.to_string())
        });
        let time = |k: &str| args.str(k).unwrap_or("*").to_string();
        Request {
            name: args.str("name").unwrap_or_default().to_string(),
            user: text("user"),
            job: text("job"),
            cron_file,
            install: args.str("state") != Some("absent"),
            backup: args.bool("backup"),
            times: [
                time("minute"),
                time("hour"),
                time("day"),
                time("month"),
                time("weekday"),
            ],
            special: text("special_time"),
            disabled: args.bool("disabled"),
            env: args.bool("env"),
            after: text("insertafter"),
            before: text("insertbefore"),
            check: ctx.check_mode,
            diff: ctx.diff,
        }
    }

    /// The checks Ansible makes on the arguments alone.
    fn refusal(&self) -> Option<&'static str> {
        if self
            .cron_file
            .as_ref()
            .is_some_and(|(p, _)| p == "/etc/crontab")
        {
            return Some("Will not manage /etc/crontab via cron_file, see documentation.");
        }
        if self.special.is_some() && self.times.iter().any(|t| t != "*") {
            return Some(
                "You cannot combine special_time with any of the time or day/date parameters.",
            );
        }
        if self.install {
            if self.cron_file.is_some() && self.user.is_none() {
                return Some("To use cron_file=... parameter you must specify user=... as well");
            }
            if self.job.is_none() {
                return Some("You must specify 'job' to install a new cron job or variable");
            }
            if (self.after.is_some() || self.before.is_some()) && !self.env {
                return Some("Insertafter and insertbefore parameters are valid only with env=yes");
            }
        }
        None
    }

    fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if let Some((_, written)) = &self.cron_file {
            let base = written.rsplit('/').next().unwrap_or_default();
            let fine = !base.is_empty()
                && base
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !fine {
                warnings.push(format!("Filename portion of cron_file (\"{base}\") should consist solely of upper- and lower-case letters, digits, underscores, and hyphens"));
            }
        }
        if self.install
            && !self.env
            && let Some(job) = &self.job
            && job.trim_matches(['\r', '\n']).contains(['\r', '\n'])
        {
            warnings.push("Job should not contain line breaks".into());
        }
        warnings
    }

    fn header(&self) -> String {
        match (&self.cron_file, &self.user) {
            (Some((path, _)), _) => path.clone(),
            (None, Some(user)) => format!("crontab for user \"{user}\""),
            (None, None) => "crontab".into(),
        }
    }
}

/// What the edit comes to.
#[derive(Debug, PartialEq)]
enum Decision {
    /// Write the crontab when `changed`.
    Edit { changed: bool },
    /// The cron file holds nothing any more: remove it.
    RemoveFile,
}

/// Ansible's `main()` after reading: the job or variable added, updated or removed.
fn decide(req: &Request, tab: &mut CronTab) -> Result<Decision, String> {
    let mut changed = false;
    let job = req.job.as_deref().unwrap_or_default();
    if req.env {
        if req.name.contains(' ') {
            return Err("Invalid name for environment variable".into());
        }
        let decl = format!("{}=\"{job}\"", req.name);
        let old = tab.find_env(&req.name).map(|i| tab.lines[i].clone());
        if req.install {
            match old {
                None => {
                    tab.add_env(decl, req.after.as_deref(), req.before.as_deref())?;
                    changed = true;
                }
                Some(old) if old != decl => {
                    tab.update_env(&req.name, Some(&decl));
                    changed = true;
                }
                Some(_) => {}
            }
        } else if old.is_some() {
            tab.update_env(&req.name, None);
            changed = true;
        }
    } else if req.install {
        let times = req.times.each_ref().map(String::as_str);
        let cron_user = req.cron_file.as_ref().and(req.user.as_deref());
        let line = job_line(times, job, req.special.as_deref(), req.disabled, cron_user);
        match tab.find_job(&req.name, Some(&line)) {
            Found::None => {
                tab.add_job(&req.name, &line);
                changed = true;
            }
            Found::Named(old) if old != line => {
                tab.update_job(&req.name, Some(&line));
                changed = true;
            }
            Found::Named(_) => {}
            Found::Adopted => {
                tab.update_job(&req.name, Some(&line));
                changed = true;
            }
        }
    } else if tab.find_job(&req.name, None) != Found::None {
        tab.update_job(&req.name, None);
        changed = true;
        if req.cron_file.is_some() && tab.is_empty() {
            return Ok(Decision::RemoveFile);
        }
    }
    if !changed && !tab.existing.is_empty() && !tab.existing.ends_with(['\r', '\n']) {
        changed = true;
    }
    Ok(Decision::Edit { changed })
}

impl Module for Cron {
    fn name(&self) -> &'static str {
        "cron"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let req = Request::of(args, ctx);
        if let Some(refusal) = req.refusal() {
            return Ok(Plan::Done(TaskOutcome::failed(refusal)));
        }
        let read = match &req.cron_file {
            Some((path, _)) => Op::Batch(vec![
                shell(NEED_CRONTAB.to_string(), None),
                Op::ReadFile {
                    path: path.clone(),
                    offset: 0,
                    limit: None,
                },
            ]),
            None => shell(
                format!("{NEED_CRONTAB}{}", crontab(req.user.as_deref(), "-l")),
                None,
            ),
        };
        Ok(Plan::Step(
            read,
            Next::new(move |reply| Ok(after_read(req, reply))),
        ))
    }
}

fn after_read(req: Request, reply: OpResult) -> Plan {
    let (ran, file) = match reply {
        OpResult::Batch(mut replies) if replies.len() == 2 => {
            let file = replies.pop().expect("two replies");
            (replies.pop().expect("two replies"), Some(file))
        }
        other => (other, None),
    };
    let OpResult::Exec(ran) = ran else {
        return Plan::Done(unexpected("cron", ran));
    };
    if ran.rc == 127 && !ran.stdout.is_empty() && ran.stderr.is_empty() {
        return Plan::Done(TaskOutcome::failed(no_crontab(&String::from_utf8_lossy(
            &ran.stdout,
        ))));
    }
    // A new cron file gets what Ansible's `open()` under umask 022 gives it.
    let mut new_file = false;
    let mut tab = match file {
        Some(OpResult::Read(read)) => {
            new_file = !read.stat.exists;
            if !read.eof {
                return Plan::Done(TaskOutcome::failed(format!(
                    "{}: a cron file over one read (8 MiB) is not supported",
                    read.stat.path
                )));
            }
            let text = String::from_utf8_lossy(&read.data).into_owned();
            CronTab::from_file(read.stat.exists.then_some(text.as_str()))
        }
        Some(other) => return Plan::Done(unexpected("cron", other)),
        None => {
            if ran.rc != 0 && ran.rc != 1 {
                return Plan::Done(TaskOutcome::failed("Unable to read crontab"));
            }
            CronTab::from_listing(&String::from_utf8_lossy(&ran.stdout))
        }
    };
    let before = tab.existing.clone();
    let original = tab.render();
    let decision = match decide(&req, &mut tab) {
        Ok(d) => d,
        Err(message) => return Plan::Done(TaskOutcome::failed(message)),
    };
    let mut out = TaskOutcome::default();
    let warnings = req.warnings();
    if !warnings.is_empty() {
        out.data.insert("warnings".into(), json!(warnings));
    }
    let mut diff = Map::new();
    if req.diff {
        diff.insert("before".into(), json!(before));
        diff.insert("before_header".into(), json!(req.header()));
    }
    let backup = req.backup && !req.check;
    let changed = match decision {
        Decision::RemoveFile => {
            let (path, written) = req.cron_file.clone().expect("only cron files are removed");
            if req.diff {
                diff.insert("after".into(), json!(""));
                diff.insert("after_header".into(), json!("/dev/null"));
            }
            out.data.insert("cron_file".into(), json!(written));
            out.data.insert("state".into(), json!("absent"));
            out.data.insert("diff".into(), Value::Object(diff));
            let remove = Op::EnsurePath(EnsurePath {
                path,
                state: PathState::Absent,
                mode: None,
                recurse_parents: false,
                owner: Ownership::default(),
            });
            // A job was found, so the file was there: removing it is the change (and
            // check mode predicts it).
            out.changed = true;
            if req.check {
                return Plan::Done(out);
            }
            // Ansible returns before it reports the backup it made.
            return finish_writes(out, None, remove, false);
        }
        Decision::Edit { changed } => changed,
    };
    out.changed = changed;
    out.data.insert("jobs".into(), json!(tab.job_names()));
    out.data.insert("envs".into(), json!(tab.env_names()));
    if let Some((_, written)) = &req.cron_file {
        out.data.insert("cron_file".into(), json!(written));
    }
    if !changed {
        return Plan::Done(out);
    }
    let rendered = tab.render();
    if req.diff {
        diff.insert("after".into(), json!(rendered));
        diff.insert("after_header".into(), json!(req.header()));
        out.data.insert("diff".into(), Value::Object(diff));
    }
    if req.check {
        return Plan::Done(out);
    }
    let write = match &req.cron_file {
        Some((path, _)) => Op::EnsureFile(EnsureFile {
            path: path.clone(),
            content: FileContent::Inline(rendered.into_bytes()),
            mode: new_file.then_some(FileMode::Bits(0o644)),
            force: true,
            owner: Ownership::default(),
            validate: None,
            backup: false,
        }),
        None => shell(
            crontab(req.user.as_deref(), "-"),
            Some(rendered.into_bytes()),
        ),
    };
    finish_writes(
        out,
        backup.then_some(original),
        write,
        req.cron_file.is_none(),
    )
}

/// Ansible's backup (`tempfile.mkstemp(prefix='crontab')` holding the crontab as read),
/// then the write, in one batch.
fn finish_writes(out: TaskOutcome, backup: Option<String>, write: Op, installs: bool) -> Plan {
    let mut ops = Vec::new();
    if let Some(original) = backup {
        ops.push(shell(
            "f=$(mktemp --tmpdir crontabXXXXXXXX) && cat > \"$f\" && printf %s \"$f\"".into(),
            Some(original.into_bytes()),
        ));
    }
    let backs_up = !ops.is_empty();
    ops.push(write);
    Plan::Step(
        Op::Batch(ops),
        Next::new(move |reply| {
            let OpResult::Batch(mut replies) = reply else {
                return Ok(Plan::Done(unexpected("cron", reply)));
            };
            let mut out = out;
            if backs_up {
                match replies.remove(0) {
                    OpResult::Exec(ran) if ran.rc == 0 => {
                        let path = String::from_utf8_lossy(&ran.stdout).into_owned();
                        out.data.insert("backup_file".into(), json!(path));
                    }
                    OpResult::Exec(ran) => {
                        return Ok(Plan::Done(TaskOutcome::failed(format!(
                            "could not write the crontab's backup: {}",
                            String::from_utf8_lossy(&ran.stderr).trim_end()
                        ))));
                    }
                    other => return Ok(Plan::Done(unexpected("cron", other))),
                }
            }
            match replies.pop() {
                Some(OpResult::Exec(ran)) if installs && ran.rc != 0 => {
                    let mut failed = TaskOutcome::failed("Failed to install new cronfile: -");
                    failed.data.insert("rc".into(), json!(ran.rc));
                    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                    failed
                        .data
                        .insert("stdout".into(), json!(text(&ran.stdout)));
                    failed
                        .data
                        .insert("stderr".into(), json!(text(&ran.stderr)));
                    Ok(Plan::Done(failed))
                }
                Some(OpResult::Error(e)) => Ok(Plan::Done(TaskOutcome::failed(e.message))),
                _ => Ok(Plan::Done(out)),
            }
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn request(v: Value) -> Request {
        let args = crate::modules::check(&Cron, v);
        Request::of(&args, &PlanContext::new(Path::new("/")))
    }

    #[test]
    fn reads_the_crontab_of_the_named_user_only_when_another() {
        let planned = crate::modules::try_plan(
            &Cron,
            json!({"name": "n", "job": "j", "user": "bob"}),
            &PlanContext::new(Path::new("/")),
        )
        .unwrap();
        let Plan::Step(Op::Exec(exec), _) = planned else {
            panic!("{planned:?}")
        };
        let Command::Shell { script, .. } = exec.command else {
            panic!()
        };
        assert_eq!(
            script,
            format!(
                "{NEED_CRONTAB}if [ \"$(id -un)\" = bob ]; then crontab -l; else crontab -u bob -l; fi"
            )
        );
        assert_eq!(quote("a b"), "'a b'");
    }

    #[test]
    fn decides_as_ansible() {
        let mut tab = CronTab::from_file(Some("#Ansible: n\n0 * * * * j\n"));
        let same = request(json!({"name": "n", "minute": "0", "job": "j"}));
        assert_eq!(
            decide(&same, &mut tab),
            Ok(Decision::Edit { changed: false })
        );
        let moved = request(json!({"name": "n", "minute": "5", "job": "j"}));
        assert_eq!(
            decide(&moved, &mut tab),
            Ok(Decision::Edit { changed: true })
        );
        assert_eq!(tab.render(), "#Ansible: n\n5 * * * * j\n");
        let mut unterminated = CronTab::from_file(Some("A=1"));
        let absent = request(json!({"name": "n", "state": "absent"}));
        assert_eq!(
            decide(&absent, &mut unterminated),
            Ok(Decision::Edit { changed: true })
        );
        let mut file = CronTab::from_file(Some("#Ansible: n\n* * * * * root j\n"));
        let in_file = request(json!({"name": "n", "state": "absent", "cron_file": "f"}));
        assert_eq!(decide(&in_file, &mut file), Ok(Decision::RemoveFile));
        assert_eq!(
            request(json!({"name": "n", "job": "j", "cron_file": "f"})).refusal(),
            Some("To use cron_file=... parameter you must specify user=... as well")
        );
    }

    #[test]
    fn names_the_search_path_when_crontab_is_missing() {
        assert_eq!(
            no_crontab("/usr/bin:/bin"),
            "Failed to find required executable \"crontab\" in paths: /usr/bin:/bin:/sbin:/usr/sbin:/usr/local/sbin"
        );
    }
}
