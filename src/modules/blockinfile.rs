//! `blockinfile`: make a block of lines between two marker lines be in a file (replaced
//! where the markers are, else inserted where `insertafter`/`insertbefore` say), or remove
//! it. The file is read first, the new text computed here with Ansible's algorithm, then
//! written whole.

use serde_json::json;

use super::lineinfile::{ATOMIC, SELINUX};
use super::spec::{Arg, Spec};
use super::text_file::{
    self, Current, WriteOpts, check_encoding, content_diff, decode, diff_list, failed_with_rc,
    line_pattern, outcome, sets_multiline, split_lines_keep, with_attrs_message,
};
use super::{Args, Module, ModuleError, Plan, PlanContext, TaskOutcome};
use crate::template::pyregex::{Anchor, PyRegex};

pub struct BlockInFile;

/// ansible-core 2.21's blockinfile: its own arguments and the file module's common ones.
static SPEC: Spec = Spec::new(&[
    Arg::bool("append_newline").default_bool(false),
    Arg::str("attributes").aliases(&["attr"]).not_yet(),
    Arg::str("block").aliases(&["content"]).default_str(""),
    Arg::bool("backup").default_bool(false),
    Arg::bool("create").default_bool(false),
    Arg::str("encoding").default_str("utf-8"),
    Arg::str("group"),
    Arg::str("insertafter"),
    Arg::str("insertbefore"),
    Arg::str("marker").default_str("# {mark} ANSIBLE MANAGED BLOCK"),
    Arg::str("marker_begin").default_str("BEGIN"),
    Arg::str("marker_end").default_str("END"),
    Arg::raw("mode"),
    Arg::str("owner"),
    Arg::path("path")
        .aliases(&["dest", "destfile", "name"])
        .required(),
    Arg::bool("prepend_newline").default_bool(false),
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
.mutually_exclusive(&[&["insertbefore", "insertafter"]]);

/// What the task asks, taken out of its arguments for the step after the read.
struct Request {
    present: bool,
    block: String,
    marker_begin: String,
    marker_end: String,
    insertafter: Option<String>,
    insertbefore: Option<String>,
    create: bool,
    append_newline: bool,
    prepend_newline: bool,
    diff: bool,
    opts: WriteOpts,
}

impl Module for BlockInFile {
    fn name(&self) -> &'static str {
        "blockinfile"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        check_encoding(args, self.name())?;
        let text = |name: &str| args.str(name).unwrap_or_default().to_string();
        let marker = text("marker");
        let request = Request {
            present: args.str("state") != Some("absent"),
            block: text("block"),
            marker_begin: format!("{}\n", marker.replace("{mark}", &text("marker_begin"))),
            marker_end: format!("{}\n", marker.replace("{mark}", &text("marker_end"))),
            insertafter: args.str("insertafter").map(str::to_string),
            insertbefore: args.str("insertbefore").map(str::to_string),
            create: args.bool("create"),
            append_newline: args.bool("append_newline"),
            prepend_newline: args.bool("prepend_newline"),
            diff: ctx.diff,
            opts: WriteOpts::of(args, ctx.check_mode)?,
        };
        if let Some(pattern) = insert_pattern(&request) {
            compile(&pattern)?;
        }
        let path = args.str("path").unwrap_or_default();
        Ok(text_file::read(path, move |current| {
            Ok(edit(request, current))
        }))
    }
}

/// The pattern that places a new block: `insertafter` unless EOF, else `insertbefore`
/// unless BOF (Ansible compiles `insertafter: BOF` as a pattern, and so does this).
fn insert_pattern(request: &Request) -> Option<String> {
    match (&request.insertafter, &request.insertbefore) {
        (None, None) => None,
        (Some(after), _) if after != "EOF" => Some(after.clone()),
        (None, Some(before)) if before != "BOF" => Some(before.clone()),
        _ => None,
    }
}

/// A pattern searched line by line (with Python's `$`), or in the whole text when it
/// turns MULTILINE on itself.
fn compile(pattern: &str) -> Result<PyRegex, ModuleError> {
    let body = if sets_multiline(pattern) {
        pattern.to_string()
    } else {
        line_pattern(pattern)
    };
    PyRegex::new(&body, Anchor::Search, false, false)
        .map_err(|e| ModuleError::Invalid(e.to_string()))
}

fn edit(request: Request, current: Current) -> Plan {
    let path = current.path.clone();
    if current.is_dir() {
        return Plan::Done(failed_with_rc(256, format!("Path {path} is a directory !")));
    }
    let original = if current.exists() {
        // Newlines are kept as they are (`newline=''`).
        match decode(&current.bytes, false) {
            Ok(text) => Some(text),
            Err(why) => return Plan::Done(TaskOutcome::failed(format!("{path}: {why}"))),
        }
    } else {
        if !request.create {
            return Plan::Done(failed_with_rc(257, format!("Path {path} does not exist !")));
        }
        None
    };
    if !request.present && original.is_none() {
        return Plan::Done(TaskOutcome {
            msg: Some(format!("File {path} not present")),
            ..TaskOutcome::default()
        });
    }
    let text = original.clone().unwrap_or_default();
    let mut lines = split_lines_keep(&text);
    let before = if request.diff {
        text.clone()
    } else {
        String::new()
    };
    let insertafter = match (&request.insertafter, &request.insertbefore) {
        (None, None) => Some("EOF".to_string()),
        (after, _) => after.clone(),
    };
    let insertbefore = request.insertbefore.clone();

    let blocklines: Vec<String> = if request.present && !request.block.is_empty() {
        let mut block = request.block.clone();
        if !block.ends_with('\n') {
            block.push('\n');
        }
        let mut all = vec![request.marker_begin.clone()];
        all.extend(split_lines_keep(&block));
        all.push(request.marker_end.clone());
        all
    } else {
        Vec::new()
    };

    let (mut n0, mut n1) = (None, None);
    for (i, line) in lines.iter().enumerate() {
        if *line == request.marker_begin {
            n0 = Some(i);
        }
        if *line == request.marker_end {
            n1 = Some(i);
        }
    }
    let mut at = match (n0, n1) {
        (Some(begin), Some(end)) if begin < end => {
            lines.drain(begin..=end);
            begin
        }
        (Some(begin), Some(end)) => {
            lines.drain(end..=begin);
            end
        }
        _ => match insert_pattern(&request) {
            Some(pattern) => {
                let re = compile(&pattern).expect("compiled when planned");
                let found = match placement(&re, &pattern, &text, &lines, &insertafter) {
                    Ok(found) => found,
                    Err(e) => return Plan::Done(TaskOutcome::failed(e)),
                };
                match found {
                    None => lines.len(),
                    Some(n) if insertafter.is_some() => n + 1,
                    Some(n) => n,
                }
            }
            None if insertbefore.is_some() => 0,
            None => lines.len(),
        },
    };
    at = at.min(lines.len());
    if at > 0 && !lines[at - 1].ends_with('\n') {
        lines[at - 1].push('\n');
    }
    if request.prepend_newline && request.present && at != 0 && lines[at - 1] != "\n" {
        lines.insert(at, "\n".to_string());
        at += 1;
    }
    let block_len = blocklines.len();
    let block_removed = blocklines.is_empty();
    lines.splice(at..at, blocklines);
    if request.append_newline && request.present {
        let after_block = at + block_len;
        if after_block < lines.len() && lines[after_block] != "\n" {
            lines.insert(after_block, "\n".to_string());
        }
    }
    let result = lines.concat();

    let (changed, msg) = match &original {
        Some(o) if *o == result => (false, ""),
        None => (true, "File created"),
        Some(_) if block_removed => (true, "Block removed"),
        Some(_) => (true, "Block inserted"),
    };
    let after = if request.diff {
        result.clone()
    } else {
        String::new()
    };
    let content = content_diff(&path, &before, &after);
    let new_bytes = changed.then(|| result.into_bytes());
    let msg = msg.to_string();
    text_file::write(&current, new_bytes, request.opts, move |written| {
        if written.missing_in_check {
            let mut out = outcome(changed, msg);
            out.data.insert("diff".into(), content);
            return out;
        }
        let (changed, msg) = with_attrs_message(changed, msg, &written);
        let mut out = outcome(changed, msg);
        out.data
            .insert("diff".into(), diff_list(content, &path, &written));
        if let Some(backup) = &written.backup_file {
            out.data.insert("backup_file".into(), json!(backup));
        }
        out
    })
}

/// The line the insert pattern last matches (per line), or for a MULTILINE pattern the
/// number of newlines before its first match in the whole text: Ansible's `n0`.
fn placement(
    re: &PyRegex,
    pattern: &str,
    text: &str,
    lines: &[String],
    insertafter: &Option<String>,
) -> Result<Option<usize>, String> {
    if sets_multiline(pattern) {
        let Some(spans) = re.spans(text).map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let (start, end) = spans[0].expect("group 0 is the match");
        let upto = if insertafter.is_some() { end } else { start };
        return Ok(Some(text[..upto].matches('\n').count()));
    }
    let mut found = None;
    for (i, line) in lines.iter().enumerate() {
        if re.is_match(line).map_err(|e| e.to_string())? {
            found = Some(i);
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::text_file::testing::FakeTarget;
    use serde_json::Value;

    fn run_on(target: &mut FakeTarget, args: Value) -> Result<TaskOutcome, String> {
        target.run(&BlockInFile, args)
    }

    fn edit(before: &str, args: Value) -> (String, bool, String) {
        FakeTarget::edit(&BlockInFile, before, args)
    }

    const BLOCK: &str = "# BEGIN ANSIBLE MANAGED BLOCK\nk=v\n# END ANSIBLE MANAGED BLOCK\n";

    #[test]
    fn inserts_replaces_and_removes_the_block() {
        assert_eq!(
            edit("a\n", json!({"block": "k=v"})),
            (format!("a\n{BLOCK}"), true, "Block inserted".into())
        );
        assert_eq!(
            edit(&format!("a\n{BLOCK}"), json!({"block": "k=v"})),
            (format!("a\n{BLOCK}"), false, "".into())
        );
        assert_eq!(
            edit(&format!("a\n{BLOCK}b\n"), json!({"block": "x\ny\n"})).0,
            "a\n# BEGIN ANSIBLE MANAGED BLOCK\nx\ny\n# END ANSIBLE MANAGED BLOCK\nb\n"
        );
        assert_eq!(
            edit(&format!("a\n{BLOCK}b\n"), json!({"state": "absent"})),
            ("a\nb\n".into(), true, "Block removed".into())
        );
        // An empty block removes it too.
        assert_eq!(
            edit(&format!("a\n{BLOCK}"), json!({"block": ""})).2,
            "Block removed"
        );
        assert_eq!(edit("a", json!({"block": "k=v"})).0, format!("a\n{BLOCK}"));
    }

    #[test]
    fn places_a_new_block_as_insertafter_and_insertbefore_say() {
        let text = "one\ntwo\none\n";
        assert_eq!(
            edit(text, json!({"block": "k=v", "insertafter": "^one"})).0,
            format!("one\ntwo\none\n{BLOCK}")
        );
        assert_eq!(
            edit(text, json!({"block": "k=v", "insertbefore": "^one"})).0,
            format!("one\ntwo\n{BLOCK}one\n")
        );
        assert_eq!(
            edit(text, json!({"block": "k=v", "insertbefore": "BOF"})).0,
            format!("{BLOCK}one\ntwo\none\n")
        );
        // With (?m) the pattern is searched in the whole text, first match.
        assert_eq!(
            edit(
                text,
                json!({"block": "k=v", "insertafter": "(?m)^one\\ntwo$"})
            )
            .0,
            format!("one\ntwo\n{BLOCK}one\n")
        );
        assert_eq!(
            edit(
                text,
                json!({"block": "k=v", "insertafter": "^two", "prepend_newline": true, "append_newline": true})
            )
            .0,
            format!("one\ntwo\n\n{BLOCK}\none\n")
        );
        assert_eq!(
            edit(
                "x\n",
                json!({"block": "k=v", "marker": "// {mark} ours", "marker_begin": "START", "marker_end": "STOP"})
            )
            .0,
            "x\n// START ours\nk=v\n// STOP ours\n"
        );
        // Windows line endings are kept.
        assert_eq!(
            edit("a\r\nb\r\n", json!({"block": "k=v", "insertafter": "^a"})).0,
            format!("a\r\n{BLOCK}b\r\n")
        );
    }

    #[test]
    fn missing_files_directories_and_check_mode() {
        let mut target = FakeTarget::default();
        let out = run_on(&mut target, json!({"path": "/n", "block": "k=v"})).unwrap();
        assert!(out.failed);
        assert_eq!(out.msg.as_deref(), Some("Path /n does not exist !"));
        assert_eq!(out.data["rc"], json!(257));
        // Even to remove a block: Ansible checks the file before the state.
        let out = run_on(&mut target, json!({"path": "/n", "state": "absent"})).unwrap();
        assert_eq!(out.data["rc"], json!(257));
        let out = run_on(
            &mut target,
            json!({"path": "/n", "state": "absent", "create": true}),
        )
        .unwrap();
        assert_eq!(
            (out.failed, out.changed, out.msg.as_deref()),
            (false, false, Some("File /n not present"))
        );
        let out = run_on(
            &mut target,
            json!({"path": "/n", "block": "k=v", "create": true, "backup": true}),
        )
        .unwrap();
        assert_eq!(
            (out.changed, out.msg.as_deref()),
            (true, Some("File created"))
        );
        assert_eq!(target.text("/n").unwrap(), BLOCK);
        assert!(!out.data.contains_key("backup_file"));
        let out = run_on(
            &mut target,
            json!({"path": "/n", "block": "new", "backup": true}),
        )
        .unwrap();
        assert_eq!(out.data["backup_file"], json!("/n.backup"));
        target.dirs.push("/d".into());
        let out = run_on(&mut target, json!({"path": "/d", "block": "x"})).unwrap();
        assert_eq!(out.msg.as_deref(), Some("Path /d is a directory !"));
        let mut target = FakeTarget::with(&[("/f", "a\n")]);
        target.check = true;
        let out = run_on(&mut target, json!({"path": "/f", "block": "k=v"})).unwrap();
        assert!(out.changed && !target.wrote());
        assert_eq!(target.text("/f").unwrap(), "a\n");
        assert_eq!(out.data["diff"][0]["after"], json!(format!("a\n{BLOCK}")));
    }

    #[test]
    fn bad_arguments_are_explained() {
        let msg = |args: Value| {
            run_on(&mut FakeTarget::with(&[("/f", "")]), args)
                .map(|o| o.msg.unwrap())
                .unwrap_err()
        };
        assert_eq!(
            msg(json!({"path": "/f", "insertafter": "a", "insertbefore": "b"})),
            "parameters are mutually exclusive: insertbefore|insertafter"
        );
        assert_eq!(
            msg(json!({"path": "/f", "foo": 1})),
            "Unsupported parameters for (blockinfile) module: foo. Supported parameters include: append_newline, attributes, backup, block, create, encoding, group, insertafter, insertbefore, marker, marker_begin, marker_end, mode, owner, path, prepend_newline, selevel, serole, setype, seuser, state, unsafe_writes, validate (attr, content, dest, destfile, name)."
        );
        assert!(
            msg(json!({"path": "/f", "insertafter": "(x"}))
                .starts_with("invalid regular expression")
        );
    }
}
