//! `lineinfile`: make one line be in a file (replacing the line a pattern finds, or added
//! where `insertafter`/`insertbefore` say), or remove every line that matches. The file is
//! read first, the new text computed here with Ansible's algorithm, then written whole.

use serde_json::json;

use super::spec::{Arg, Spec};
use super::text_file::{
    self, Current, WriteOpts, Written, check_encoding, content_diff, decode, diff_list,
    failed_with_rc, line_pattern, outcome, read_lines, with_attrs_message,
};
use super::{Args, Module, ModuleError, Plan, PlanContext, TaskOutcome};
use crate::template::pyregex::{Anchor, PyRegex, python_replacement};

pub struct LineInFile;

pub(super) const SELINUX: &str = "SELinux contexts are not set by turbo-play's agent";
pub(super) const ATOMIC: &str = "the agent's writes are atomic renames either way";

/// ansible-core 2.21's lineinfile: its own arguments and the file module's common ones.
static SPEC: Spec = Spec::new(&[
    Arg::str("attributes").aliases(&["attr"]).not_yet(),
    Arg::bool("backrefs").default_bool(false),
    Arg::bool("backup").default_bool(false),
    Arg::bool("create").default_bool(false),
    Arg::str("encoding").default_str("utf-8"),
    Arg::bool("firstmatch").default_bool(false),
    Arg::str("group"),
    Arg::str("insertafter"),
    Arg::str("insertbefore"),
    Arg::str("line").aliases(&["value"]),
    Arg::raw("mode"),
    Arg::str("owner"),
    Arg::path("path")
        .aliases(&["dest", "destfile", "name"])
        .required(),
    Arg::str("regexp").aliases(&["regex"]),
    Arg::str("search_string"),
    Arg::str("selevel").no_effect(SELINUX),
    Arg::str("serole").no_effect(SELINUX),
    Arg::str("setype").no_effect(SELINUX),
    Arg::str("seuser").no_effect(SELINUX),
    Arg::str("state")
        .choices(&["absent", "present"])
        .default_str("present"),
    Arg::bool("unsafe_writes")
        .default_bool(false)
        .no_effect(ATOMIC),
    Arg::str("validate"),
])
.mutually_exclusive(&[
    &["insertbefore", "insertafter"],
    &["regexp", "search_string"],
    &["backrefs", "search_string"],
]);

/// What the task asks, taken out of its arguments for the step after the read.
struct Request {
    present: bool,
    regexp: Option<String>,
    search_string: Option<String>,
    line: Option<String>,
    insertafter: Option<String>,
    insertbefore: Option<String>,
    backrefs: bool,
    create: bool,
    firstmatch: bool,
    diff: bool,
    opts: WriteOpts,
}

impl Module for LineInFile {
    fn name(&self) -> &'static str {
        "lineinfile"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        check_encoding(args, self.name())?;
        let text = |name: &str| args.str(name).map(str::to_string);
        let request = Request {
            present: args.str("state") != Some("absent"),
            regexp: text("regexp"),
            search_string: text("search_string"),
            line: text("line"),
            insertafter: text("insertafter"),
            insertbefore: text("insertbefore"),
            backrefs: args.bool("backrefs"),
            create: args.bool("create"),
            firstmatch: args.bool("firstmatch"),
            diff: ctx.diff,
            opts: WriteOpts::of(args, ctx.check_mode)?,
        };
        // Broken patterns fail before anything is read.
        for pattern in [&request.regexp, &request.insertafter, &request.insertbefore]
            .into_iter()
            .flatten()
        {
            compile(pattern)?;
        }
        let path = args.str("path").unwrap_or_default();
        Ok(text_file::read(path, move |current| {
            Ok(edit(request, current))
        }))
    }
}

fn compile(pattern: &str) -> Result<PyRegex, ModuleError> {
    PyRegex::new(&line_pattern(pattern), Anchor::Search, false, false)
        .map_err(|e| ModuleError::Invalid(e.to_string()))
}

/// Ansible's warning for a pattern that matches every line.
fn empty_pattern_warning(request: &Request) -> Option<String> {
    let what = if request.regexp.as_deref() == Some("") {
        "regular expression"
    } else if request.search_string.as_deref() == Some("") {
        "search string"
    } else {
        return None;
    };
    let mut msg = format!(
        "The {what} is an empty string, which will match every line in the file. This may have unintended consequences, such as replacing the last line in the file rather than appending."
    );
    if what == "regular expression" {
        msg.push_str(
            " If this is desired, use '^' to match every line in the file and avoid this warning.",
        );
    }
    Some(msg)
}

fn edit(request: Request, current: Current) -> Plan {
    let warning = empty_pattern_warning(&request);
    let plan = checked_edit(request, current);
    match warning {
        Some(warning) => warned(plan, warning),
        None => plan,
    }
}

/// The plan with `warning` in the outcome it ends in, however many steps (the write and
/// the attributes) come before.
fn warned(plan: Plan, warning: String) -> Plan {
    match plan {
        Plan::Done(mut outcome) => {
            outcome.data.insert("warnings".into(), json!([warning]));
            Plan::Done(outcome)
        }
        Plan::Step(op, next) => {
            Plan::Step(op, next.and_then(move |plan| Ok(warned(plan, warning))))
        }
        Plan::Flow(flow) => Plan::Flow(super::flow::and_then(flow, move |plan| {
            Ok(warned(plan, warning))
        })),
        // lineinfile's edits all end in steps; a bare op's reply goes to `finish`.
        remote @ Plan::Remote(_) => remote,
    }
}

fn checked_edit(request: Request, current: Current) -> Plan {
    if current.is_dir() {
        return Plan::Done(failed_with_rc(
            256,
            format!("Path {} is a directory !", current.path),
        ));
    }
    if request.present {
        if request.backrefs && request.regexp.is_none() {
            return Plan::Done(TaskOutcome::failed("regexp is required with backrefs=true"));
        }
        if request.line.is_none() {
            return Plan::Done(TaskOutcome::failed("line is required with state=present"));
        }
        present(request, current)
    } else {
        if request.regexp.is_none() && request.search_string.is_none() && request.line.is_none() {
            return Plan::Done(TaskOutcome::failed(
                "one of line, search_string, or regexp is required with state=absent",
            ));
        }
        absent(request, current)
    }
}

/// The file's lines as Ansible's `readlines()` gives them, or why they cannot be read.
fn current_lines(current: &Current) -> Result<Vec<String>, String> {
    decode(&current.bytes, true)
        .map(|text| read_lines(&text))
        .map_err(|why| format!("{}: {why}", current.path))
}

fn is_set(value: &Option<String>) -> bool {
    value.as_deref().is_some_and(|s| !s.is_empty())
}

/// Where the line goes, and what it becomes: Ansible's `present()`.
fn present(request: Request, current: Current) -> Plan {
    let path = current.path.clone();
    if !current.exists() && !request.create {
        return Plan::Done(failed_with_rc(
            257,
            format!("Destination {path} does not exist !"),
        ));
    }
    let mut lines = match current_lines(&current) {
        Ok(lines) => lines,
        Err(why) => return Plan::Done(TaskOutcome::failed(why)),
    };
    let before = lines.concat();
    let line = request.line.clone().unwrap_or_default();
    let (insertafter, insertbefore) = match (&request.insertafter, &request.insertbefore) {
        (None, None) => (Some("EOF".to_string()), None),
        (after, before) => (after.clone(), before.clone()),
    };
    let compiled = |p: &str| compile(p).expect("compiled when planned");
    let re_m = request.regexp.as_deref().map(compiled);
    let re_ins = match (&insertafter, &insertbefore) {
        (Some(after), _) if after != "BOF" && after != "EOF" => Some(compiled(after)),
        (_, Some(before)) if before != "BOF" => Some(compiled(before)),
        _ => None,
    };

    // index.0: the line the pattern (or the exact line) is on; index.1: where to insert.
    let mut index: (i64, i64) = (-1, -1);
    let mut found: Option<usize> = None;
    if let Some(re) = &re_m {
        for (lineno, cur) in lines.iter().enumerate() {
            match re.is_match(cur) {
                Ok(true) => {
                    index.0 = lineno as i64;
                    found = Some(lineno);
                    if request.firstmatch {
                        break;
                    }
                }
                Ok(false) => {}
                Err(e) => return Plan::Done(TaskOutcome::failed(e.to_string())),
            }
        }
    }
    if let Some(needle) = &request.search_string {
        for (lineno, cur) in lines.iter().enumerate() {
            if cur.contains(needle.as_str()) {
                index.0 = lineno as i64;
                found = Some(lineno);
                if request.firstmatch {
                    break;
                }
            }
        }
    }
    if found.is_none() {
        for (lineno, cur) in lines.iter().enumerate() {
            if line == cur.trim_end_matches(['\r', '\n']) {
                index.0 = lineno as i64;
            } else if let Some(re) = &re_ins {
                match re.is_match(cur) {
                    Ok(true) => {
                        if is_set(&insertafter) {
                            index.1 = lineno as i64 + 1;
                            if request.firstmatch {
                                break;
                            }
                        }
                        if is_set(&insertbefore) {
                            index.1 = lineno as i64;
                            if request.firstmatch {
                                break;
                            }
                        }
                    }
                    Ok(false) => {}
                    Err(e) => return Plan::Done(TaskOutcome::failed(e.to_string())),
                }
            }
        }
    }

    let mut msg = "";
    let mut changed = false;
    let with_newline = format!("{line}\n");
    if index.0 != -1 {
        let at = index.0 as usize;
        let mut new_line = match (request.backrefs, found, &re_m) {
            (true, Some(_), Some(re)) => match expand(re, &lines[at], &line) {
                Ok(expanded) => expanded,
                Err(e) => return Plan::Done(TaskOutcome::failed(e)),
            },
            _ => line.clone(),
        };
        if !new_line.ends_with('\n') {
            new_line.push('\n');
        }
        // (Ansible also has an insert branch here for neither regexp nor search_string
        // with no exact line: that is no case, since only an exact line sets index.0 then.)
        if lines[at] != new_line {
            lines[at] = new_line;
            msg = "line replaced";
            changed = true;
        }
    } else if request.backrefs {
        // Nothing to fill the backreferences with: Ansible leaves the file alone.
    } else if insertbefore.as_deref() == Some("BOF") || insertafter.as_deref() == Some("BOF") {
        lines.insert(0, with_newline);
        msg = "line added";
        changed = true;
    } else if insertafter.as_deref() == Some("EOF") || index.1 == -1 {
        if lines
            .last()
            .is_some_and(|last| !last.ends_with(['\n', '\r']))
        {
            lines.push("\n".to_string());
        }
        lines.push(with_newline);
        msg = "line added";
        changed = true;
    } else if is_set(&insertafter) {
        let at = index.1 as usize;
        if lines.len() == at {
            if lines[at - 1].trim_end_matches(['\r', '\n']) != line {
                lines.push(with_newline);
                msg = "line added";
                changed = true;
            }
        } else if line != lines[at].trim_end_matches(['\n', '\r']) {
            lines.insert(at, with_newline);
            msg = "line added";
            changed = true;
        }
    } else {
        lines.insert(index.1 as usize, with_newline);
        msg = "line added";
        changed = true;
    }

    let after = lines.concat();
    let content = if request.diff {
        content_diff(&path, &before, &after)
    } else {
        content_diff(&path, "", "")
    };
    let new_bytes = changed.then(|| after.into_bytes());
    let msg = msg.to_string();
    text_file::write(&current, new_bytes, request.opts, move |written| {
        let backup = written.backup_file.clone().unwrap_or_default();
        if written.missing_in_check {
            let mut out = outcome(changed, msg);
            out.data.insert("backup".into(), json!(backup));
            out.data.insert("diff".into(), content);
            return out;
        }
        let (changed, msg) = with_attrs_message(changed, msg, &written);
        let mut out = outcome(changed, msg);
        out.data.insert("backup".into(), json!(backup));
        out.data
            .insert("diff".into(), diff_list(content, &path, &written));
        out
    })
}

/// Python's `match.expand(template)` for the first match of `re` in `text`.
fn expand(re: &PyRegex, text: &str, template: &str) -> Result<String, String> {
    let spans = re
        .spans(text)
        .map_err(|e| e.to_string())?
        .ok_or("the regular expression no longer matches")?;
    let (start, end) = spans[0].expect("group 0 is the match");
    // The same first match replaced leaves the text around it as it was: what is between
    // is the expansion.
    let replaced = re
        .replacen(text, 1, &python_replacement(template))
        .map_err(|e| e.to_string())?;
    Ok(replaced[start..replaced.len() - (text.len() - end)].to_string())
}

/// Ansible's `absent()`: every line the pattern, string or exact line finds goes.
fn absent(request: Request, current: Current) -> Plan {
    let path = current.path.clone();
    if !current.exists() {
        return Plan::Done(outcome(false, "file not present".into()));
    }
    let lines = match current_lines(&current) {
        Ok(lines) => lines,
        Err(why) => return Plan::Done(TaskOutcome::failed(why)),
    };
    let before = lines.concat();
    let re = request
        .regexp
        .as_deref()
        .map(|p| compile(p).expect("compiled when planned"));
    let line = request.line.clone().unwrap_or_default();
    let mut kept = Vec::with_capacity(lines.len());
    let mut found = 0usize;
    for cur in lines {
        let matches = if let Some(re) = &re {
            match re.is_match(&cur) {
                Ok(m) => m,
                Err(e) => return Plan::Done(TaskOutcome::failed(e.to_string())),
            }
        } else if let Some(needle) = &request.search_string {
            cur.contains(needle.as_str())
        } else {
            line == cur.trim_end_matches(['\r', '\n'])
        };
        if matches {
            found += 1;
        } else {
            kept.push(cur);
        }
    }
    let changed = found > 0;
    let after = kept.concat();
    let content = if request.diff {
        content_diff(&path, &before, &after)
    } else {
        content_diff(&path, "", "")
    };
    let msg = if changed {
        format!("{found} line(s) removed")
    } else {
        String::new()
    };
    let new_bytes = changed.then(|| after.into_bytes());
    text_file::write(
        &current,
        new_bytes,
        request.opts,
        move |written: Written| {
            let (changed, msg) = with_attrs_message(changed, msg, &written);
            let mut out = outcome(changed, msg);
            out.data.insert("found".into(), json!(found));
            out.data.insert(
                "backup".into(),
                json!(written.backup_file.clone().unwrap_or_default()),
            );
            out.data
                .insert("diff".into(), diff_list(content, &path, &written));
            out
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::text_file::testing::FakeTarget;
    use serde_json::Value;

    fn run_on(target: &mut FakeTarget, args: Value) -> Result<TaskOutcome, String> {
        target.run(&LineInFile, args)
    }

    fn edit(before: &str, args: Value) -> (String, bool, String) {
        FakeTarget::edit(&LineInFile, before, args)
    }

    #[test]
    fn replaces_the_last_line_the_pattern_finds() {
        assert_eq!(
            edit("a=1\nb=2\na=3\n", json!({"regexp": "^a=", "line": "a=9"})),
            ("a=1\nb=2\na=9\n".into(), true, "line replaced".into())
        );
        assert_eq!(
            edit(
                "a=1\nb=2\na=3\n",
                json!({"regexp": "^a=", "line": "a=9", "firstmatch": true})
            ),
            ("a=9\nb=2\na=3\n".into(), true, "line replaced".into())
        );
        // Python's `$` also matches before the line's newline.
        assert_eq!(
            edit("a=1\n", json!({"regexp": "^a=1$", "line": "a=1"})),
            ("a=1\n".into(), false, "".into())
        );
        assert_eq!(
            edit(
                "x 127.0.0.1 y\n",
                json!({"search_string": "127.0.0.1", "line": "z"})
            ),
            ("z\n".into(), true, "line replaced".into())
        );
    }

    #[test]
    fn adds_where_insertafter_and_insertbefore_say() {
        let text = "[a]\nk=1\n[b]\nk=2\n";
        assert_eq!(
            edit(text, json!({"line": "new", "insertafter": "^\\[a\\]"})).0,
            "[a]\nnew\nk=1\n[b]\nk=2\n"
        );
        assert_eq!(
            edit(text, json!({"line": "new", "insertafter": "^k="})).0,
            "[a]\nk=1\n[b]\nk=2\nnew\n"
        );
        assert_eq!(
            edit(
                text,
                json!({"line": "new", "insertafter": "^k=", "firstmatch": true})
            )
            .0,
            "[a]\nk=1\nnew\n[b]\nk=2\n"
        );
        assert_eq!(
            edit(text, json!({"line": "new", "insertbefore": "^\\["})).0,
            "[a]\nk=1\nnew\n[b]\nk=2\n"
        );
        assert_eq!(
            edit(text, json!({"line": "new", "insertbefore": "BOF"})).0,
            "new\n[a]\nk=1\n[b]\nk=2\n"
        );
        assert_eq!(
            edit(text, json!({"line": "new", "insertbefore": "nowhere"})).0,
            "[a]\nk=1\n[b]\nk=2\nnew\n"
        );
        // Already there: nothing to do, wherever it is.
        assert_eq!(
            edit(text, json!({"line": "k=1", "insertbefore": "BOF"})),
            (text.into(), false, "".into())
        );
        // The line after the insertafter match is already the line.
        assert_eq!(
            edit(
                "[a]\nnew\n",
                json!({"line": "new", "insertafter": "^\\[a\\]", "regexp": "^nomatch"})
            ),
            ("[a]\nnew\n".into(), false, "".into())
        );
        // A last line without its newline gets one before the added line.
        assert_eq!(edit("a", json!({"line": "b"})).0, "a\nb\n");
        // Windows newlines are read as newlines and written as \n, as Ansible does.
        assert_eq!(edit("a\r\nb\r\n", json!({"line": "c"})).0, "a\nb\nc\n");
    }

    #[test]
    fn backrefs_fill_the_line_from_the_match() {
        assert_eq!(
            edit(
                "Xms128m\n",
                json!({"regexp": "^(.*)Xms(\\d+)m(.*)$", "line": "\\1Xms${xms}\\2m\\3", "backrefs": true})
            )
            .0,
            "Xms${xms}128m\n"
        );
        assert_eq!(
            edit(
                "host=old\n",
                json!({"regexp": "^(?P<k>host=).*", "line": "\\g<k>new", "backrefs": true})
            )
            .0,
            "host=new\n"
        );
        assert_eq!(
            edit(
                "a\n",
                json!({"regexp": "^zzz(.*)", "line": "\\1", "backrefs": true})
            ),
            ("a\n".into(), false, "".into())
        );
    }

    #[test]
    fn absent_removes_every_match() {
        let mut target = FakeTarget::with(&[("/f", "a=1\nb=2\na=3\n")]);
        let out = run_on(
            &mut target,
            json!({"path": "/f", "regexp": "^a", "state": "absent"}),
        )
        .unwrap();
        assert_eq!(target.text("/f").unwrap(), "b=2\n");
        assert_eq!(out.msg.as_deref(), Some("2 line(s) removed"));
        assert_eq!(out.data["found"], json!(2));
        assert_eq!(out.data["backup"], json!(""));
        assert_eq!(
            out.data["diff"][0],
            json!({"before": "a=1\nb=2\na=3\n", "after": "b=2\n",
                   "before_header": "/f (content)", "after_header": "/f (content)"})
        );
        let out = run_on(
            &mut target,
            json!({"path": "/f", "line": "b=2", "state": "absent"}),
        )
        .unwrap();
        assert_eq!((out.changed, target.text("/f").unwrap()), (true, "".into()));
        let out = run_on(
            &mut target,
            json!({"path": "/nope", "line": "x", "state": "absent"}),
        )
        .unwrap();
        assert_eq!(
            (out.changed, out.failed, out.msg.as_deref()),
            (false, false, Some("file not present"))
        );
    }

    #[test]
    fn missing_files_and_bad_arguments_fail_as_ansible() {
        let mut target = FakeTarget::default();
        let out = run_on(&mut target, json!({"path": "/nope", "line": "x"})).unwrap();
        assert!(out.failed);
        assert_eq!(
            out.msg.as_deref(),
            Some("Destination /nope does not exist !")
        );
        assert_eq!(out.data["rc"], json!(257));
        let out = run_on(
            &mut target,
            json!({"path": "/d/new", "line": "x", "create": true}),
        )
        .unwrap();
        assert_eq!(
            (out.changed, out.msg.as_deref()),
            (true, Some("line added"))
        );
        assert_eq!(target.text("/d/new").unwrap(), "x\n");
        assert!(
            matches!(target.sent.last().unwrap(), turbo_proto::Op::Batch(ops) if matches!(&ops[0], turbo_proto::Op::EnsurePath(p) if p.path == "/d")),
            "the parent directory is made first: {:?}",
            target.sent
        );
        target.dirs.push("/dir".into());
        let out = run_on(&mut target, json!({"path": "/dir", "line": "x"})).unwrap();
        assert_eq!(out.msg.as_deref(), Some("Path /dir is a directory !"));
        assert_eq!(out.data["rc"], json!(256));
        let msg = |args: Value| {
            run_on(&mut FakeTarget::with(&[("/f", "")]), args)
                .map(|o| o.msg.unwrap())
                .unwrap_or_else(|e| e)
        };
        assert_eq!(
            msg(json!({"path": "/f"})),
            "line is required with state=present"
        );
        assert_eq!(
            msg(json!({"path": "/f", "line": "x", "backrefs": true})),
            "regexp is required with backrefs=true"
        );
        assert_eq!(
            msg(json!({"path": "/f", "state": "absent"})),
            "one of line, search_string, or regexp is required with state=absent"
        );
        assert_eq!(
            msg(json!({"path": "/f", "line": "x", "insertafter": "a", "insertbefore": "b"})),
            "parameters are mutually exclusive: insertbefore|insertafter"
        );
        assert_eq!(
            msg(json!({"path": "/f", "line": "x", "regexp": "a", "search_string": "b"})),
            "parameters are mutually exclusive: regexp|search_string"
        );
        assert_eq!(
            msg(json!({"path": "/f", "line": "x", "encoding": "latin-1"})),
            "turbo-play's lineinfile reads and writes only utf-8 files yet, not encoding 'latin-1'; remove it or run this task with ansible-playbook"
        );
        assert_eq!(
            msg(json!({"path": "/f", "line": "x", "foo": 1})),
            "Unsupported parameters for (lineinfile) module: foo. Supported parameters include: attributes, backrefs, backup, create, encoding, firstmatch, group, insertafter, insertbefore, line, mode, owner, path, regexp, search_string, selevel, serole, setype, seuser, state, unsafe_writes, validate (attr, dest, destfile, name, regex, value)."
        );
        assert_eq!(
            msg(json!({"path": "/f", "line": "x", "validate": "visudo -c"})),
            "validate must contain %s: visudo -c"
        );
        let out = run_on(
            &mut FakeTarget::with(&[("/f", "a\n")]),
            json!({"path": "/f", "regexp": "", "line": "a"}),
        )
        .unwrap();
        assert!(out.data["warnings"][0].as_str().unwrap().starts_with(
            "The regular expression is an empty string, which will match every line in the file."
        ));
    }

    #[test]
    fn check_mode_writes_nothing_and_attributes_are_reported() {
        let mut target = FakeTarget::with(&[("/f", "a\n")]);
        target.check = true;
        let out = run_on(&mut target, json!({"path": "/f", "line": "b"})).unwrap();
        assert!(out.changed);
        assert_eq!(target.text("/f").unwrap(), "a\n");
        assert!(!target.wrote());
        // A missing file in check mode: the content diff alone, as Ansible returns early.
        let out = run_on(
            &mut target,
            json!({"path": "/new", "line": "b", "create": true}),
        )
        .unwrap();
        assert!(out.changed);
        assert!(out.data["diff"].is_object());
        assert!(target.text("/new").is_none());

        let mut target = FakeTarget::with(&[("/f", "a\n")]);
        let out = run_on(
            &mut target,
            json!({"path": "/f", "line": "a", "mode": "0600"}),
        )
        .unwrap();
        assert_eq!(
            (out.changed, out.msg.as_deref()),
            (true, Some("ownership, perms or SE linux context changed"))
        );
        assert_eq!(
            out.data["diff"][1],
            json!({"before": {"mode": "0644"}, "after": {"mode": "0600"},
                   "before_header": "/f (file attributes)", "after_header": "/f (file attributes)"})
        );
        let out = run_on(
            &mut target,
            json!({"path": "/f", "line": "b", "mode": "0640"}),
        )
        .unwrap();
        assert_eq!(
            out.msg.as_deref(),
            Some("line added and ownership, perms or SE linux context changed")
        );
        let out = run_on(
            &mut target,
            json!({"path": "/f", "line": "b", "mode": "0640"}),
        )
        .unwrap();
        assert_eq!((out.changed, out.msg.as_deref()), (false, Some("")));
    }

    #[test]
    fn backup_and_symlinks() {
        let mut target = FakeTarget::with(&[("/real", "a\n")]);
        target.links.insert("/link".into(), "/real".into());
        let out = run_on(
            &mut target,
            json!({"path": "/link", "line": "b", "backup": true}),
        )
        .unwrap();
        assert_eq!(target.text("/real").unwrap(), "a\nb\n");
        assert_eq!(out.data["backup"], json!("/real.backup"));
        assert!(!target.files.contains_key("/link"));
    }

    #[test]
    fn a_loops_items_each_see_the_lines_the_earlier_ones_add() {
        // The executor runs a step-planning module's items one after another.
        let mut target = FakeTarget::with(&[("/f", "a\n")]);
        let msgs: Vec<String> = ["x", "y", "a", "x"]
            .iter()
            .map(|line| {
                let out = run_on(&mut target, json!({"path": "/f", "line": line})).unwrap();
                out.msg.unwrap_or_default()
            })
            .collect();
        assert_eq!(msgs, ["line added", "line added", "", ""]);
        assert_eq!(target.text("/f").unwrap(), "a\nx\ny\n");
    }

    #[test]
    fn large_files_are_read_page_by_page() {
        let text = "x\n".repeat(1000);
        let mut target = FakeTarget::with(&[("/f", &text)]);
        target.page = Some(300);
        let out = run_on(&mut target, json!({"path": "/f", "line": "end"})).unwrap();
        assert!(out.changed);
        assert_eq!(target.text("/f").unwrap(), format!("{text}end\n"));
        let reads = target
            .sent
            .iter()
            .filter(|op| matches!(op, turbo_proto::Op::ReadFile { .. }))
            .count();
        assert_eq!(reads, 6, "one page with the first request, six more");
    }
}
