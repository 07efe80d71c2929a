//! `replace`: substitute every match of a pattern in a file (or in the part of it between
//! `after` and `before`). The file is read first, the substitution made here with Python's
//! `re.subn` semantics, then the file written whole.

use serde_json::json;

use super::lineinfile::{ATOMIC, SELINUX};
use super::spec::{Arg, Spec};
use super::text_file::{
    self, Current, WriteOpts, check_encoding, decode, failed_with_rc, outcome, with_attrs_message,
};
use super::{Args, Module, ModuleError, Plan, PlanContext, TaskOutcome};
use crate::template::pyregex::{Anchor, PyRegex, python_replacement};

pub struct Replace;

/// ansible-core 2.21's replace: its own arguments and the file module's common ones.
static SPEC: Spec = Spec::new(&[
    Arg::str("after"),
    Arg::str("attributes").aliases(&["attr"]).not_yet(),
    Arg::bool("backup").default_bool(false),
    Arg::str("before"),
    Arg::str("encoding").default_str("utf-8"),
    Arg::str("group"),
    Arg::raw("mode"),
    Arg::str("owner"),
    Arg::path("path")
        .aliases(&["dest", "destfile", "name"])
        .required(),
    Arg::str("regexp").required(),
    Arg::str("replace").default_str(""),
    Arg::str("selevel").no_effect(SELINUX),
    Arg::str("serole").no_effect(SELINUX),
    Arg::str("setype").no_effect(SELINUX),
    Arg::str("seuser").no_effect(SELINUX),
    Arg::bool("unsafe_writes")
        .default_bool(false)
        .no_effect(ATOMIC),
    Arg::str("validate"),
]);

/// What the task asks, compiled, for the step after the read.
struct Request {
    /// The `after`/`before` pattern as Ansible builds it, for its message, and compiled.
    section: Option<(String, PyRegex)>,
    regexp: PyRegex,
    replacement: String,
    diff: bool,
    opts: WriteOpts,
}

impl Module for Replace {
    fn name(&self) -> &'static str {
        "replace"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        check_encoding(args, self.name())?;
        let given = |name: &str| args.str(name).filter(|s| !s.is_empty());
        let section = match (given("after"), given("before")) {
            (Some(after), Some(before)) => Some(format!("{after}(?P<subsection>.*?){before}")),
            (Some(after), None) => Some(format!("{after}(?P<subsection>.*)")),
            (None, Some(before)) => Some(format!("(?P<subsection>.*){before}")),
            (None, None) => None,
        };
        let invalid = |e: crate::template::pyregex::PyRegexError| {
            ModuleError::Invalid(format!("Unable to process replace due to error: {e}"))
        };
        let section = match section {
            // re.DOTALL: the section may span lines.
            Some(pattern) => {
                let re = PyRegex::new(&format!("(?s){pattern}"), Anchor::Search, false, false)
                    .map_err(invalid)?;
                Some((pattern, re))
            }
            None => None,
        };
        let regexp = PyRegex::new(
            args.str("regexp").unwrap_or_default(),
            Anchor::Search,
            false,
            true,
        )
        .map_err(invalid)?;
        let request = Request {
            section,
            regexp,
            replacement: python_replacement(args.str("replace").unwrap_or_default()),
            diff: ctx.diff,
            opts: WriteOpts::of(args, ctx.check_mode)?,
        };
        let path = args.str("path").unwrap_or_default();
        Ok(text_file::read(path, move |current| {
            Ok(edit(request, current))
        }))
    }
}

fn edit(request: Request, current: Current) -> Plan {
    let path = current.path.clone();
    if current.is_dir() {
        return Plan::Done(failed_with_rc(256, format!("Path {path} is a directory !")));
    }
    if !current.exists() {
        return Plan::Done(failed_with_rc(257, format!("Path {path} does not exist !")));
    }
    let contents = match decode(&current.bytes, true) {
        Ok(text) => text,
        Err(why) => return Plan::Done(TaskOutcome::failed(format!("{path}: {why}"))),
    };
    let (start, end) = match &request.section {
        None => (0, contents.len()),
        Some((pattern, re)) => {
            let found = match re.spans(&contents) {
                Ok(found) => found,
                Err(e) => return Plan::Done(TaskOutcome::failed(e.to_string())),
            };
            let group = re.group_index("subsection").expect("the pattern names it");
            match found.and_then(|spans| spans[group]) {
                Some(span) => span,
                None => {
                    let mut out = outcome(
                        false,
                        format!(
                            "Pattern for before/after params did not match the given file: {pattern}"
                        ),
                    );
                    out.data.insert("rc".into(), json!(0));
                    return Plan::Done(out);
                }
            }
        }
    };
    let section = &contents[start..end];
    let (replaced, count) = match request.regexp.subn(section, &request.replacement) {
        Ok(done) => done,
        Err(e) => {
            return Plan::Done(TaskOutcome::failed(format!(
                "Unable to process replace due to error: {e}"
            )));
        }
    };
    let changed = count > 0 && replaced != section;
    let mut diff = None;
    let new_bytes = if changed {
        let result = format!("{}{replaced}{}", &contents[..start], &contents[end..]);
        if request.diff {
            diff = Some(json!({
                "before_header": path,
                "before": contents,
                "after_header": path,
                "after": result,
            }));
        }
        Some(result.into_bytes())
    } else {
        None
    };
    let msg = if changed {
        format!("{count} replacements made")
    } else {
        String::new()
    };
    text_file::write(&current, new_bytes, request.opts, move |written| {
        let (changed, msg) = with_attrs_message(changed, msg, &written);
        let mut out = outcome(changed, msg);
        out.data.insert("rc".into(), json!(0));
        if let Some(diff) = diff {
            out.data.insert("diff".into(), diff);
        }
        if let Some(backup) = &written.backup_file {
            out.data.insert("backup_file".into(), json!(backup));
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::text_file::testing::FakeTarget;
    use serde_json::Value;

    fn run_on(target: &mut FakeTarget, args: Value) -> Result<TaskOutcome, String> {
        target.run(&Replace, args)
    }

    fn edit(before: &str, args: Value) -> (String, bool, String) {
        FakeTarget::edit(&Replace, before, args)
    }

    #[test]
    fn substitutes_every_match_with_pythons_syntax() {
        assert_eq!(
            edit("a=1\nb=1\n", json!({"regexp": "=1$", "replace": "=2"})),
            ("a=2\nb=2\n".into(), true, "2 replacements made".into())
        );
        assert_eq!(
            edit(
                "host old\n",
                json!({"regexp": "^(host) (\\w+)$", "replace": "\\1 new-\\2"})
            )
            .0,
            "host new-old\n"
        );
        assert_eq!(
            edit(
                "k: v\n",
                json!({"regexp": "(?P<key>\\w+): v", "replace": "\\g<key>: $w"})
            )
            .0,
            "k: $w\n"
        );
        assert_eq!(
            edit("a\n", json!({"regexp": "zzz", "replace": "y"})),
            ("a\n".into(), false, "".into())
        );
        // Replacing a match by itself changes nothing.
        assert_eq!(
            edit("a\n", json!({"regexp": "a", "replace": "a"})),
            ("a\n".into(), false, "".into())
        );
        assert_eq!(
            edit("x\ny\n", json!({"regexp": "^", "replace": "# "})).0,
            "# x\n# y\n# "
        );
    }

    #[test]
    fn after_and_before_bound_the_section() {
        let text = "a=1\n[s]\na=1\n[t]\na=1\n";
        assert_eq!(
            edit(
                text,
                json!({"regexp": "a=1", "replace": "a=2", "after": "\\[s\\]", "before": "\\[t\\]"})
            ),
            (
                "a=1\n[s]\na=2\n[t]\na=1\n".into(),
                true,
                "1 replacements made".into()
            )
        );
        assert_eq!(
            edit(
                text,
                json!({"regexp": "a=1", "replace": "a=2", "after": "\\[s\\]"})
            )
            .0,
            "a=1\n[s]\na=2\n[t]\na=2\n"
        );
        assert_eq!(
            edit(
                text,
                json!({"regexp": "a=1", "replace": "a=2", "before": "\\[t\\]"})
            )
            .0,
            "a=2\n[s]\na=2\n[t]\na=1\n"
        );
        assert_eq!(
            edit(text, json!({"regexp": "a", "after": "nowhere"})),
            (
                text.into(),
                false,
                "Pattern for before/after params did not match the given file: nowhere(?P<subsection>.*)"
                    .into()
            )
        );
    }

    #[test]
    fn failures_backup_and_check_mode() {
        let mut target = FakeTarget::default();
        let out = run_on(&mut target, json!({"path": "/n", "regexp": "a"})).unwrap();
        assert_eq!(
            (out.failed, out.msg.as_deref()),
            (true, Some("Path /n does not exist !"))
        );
        assert_eq!(out.data["rc"], json!(257));
        let mut target = FakeTarget::with(&[("/f", "a\r\nb\n")]);
        let out = run_on(
            &mut target,
            json!({"path": "/f", "regexp": "b", "replace": "c", "backup": true}),
        )
        .unwrap();
        assert_eq!(target.text("/f").unwrap(), "a\nc\n");
        assert_eq!(out.data["backup_file"], json!("/f.backup"));
        assert_eq!(
            out.data["diff"],
            json!({"before_header": "/f", "before": "a\nb\n", "after_header": "/f", "after": "a\nc\n"})
        );
        target.check = true;
        let out = run_on(
            &mut target,
            json!({"path": "/f", "regexp": "c", "replace": "d"}),
        )
        .unwrap();
        assert!(out.changed && target.text("/f").unwrap() == "a\nc\n");
        let err = |args: Value| run_on(&mut FakeTarget::default(), args).unwrap_err();
        assert_eq!(
            err(json!({"path": "/f"})),
            "missing required arguments: regexp"
        );
        assert!(
            err(json!({"path": "/f", "regexp": "(a"}))
                .starts_with("Unable to process replace due to error: invalid regular expression")
        );
        assert_eq!(
            err(json!({"path": "/f", "regexp": "a", "foo": 1})),
            "Unsupported parameters for (replace) module: foo. Supported parameters include: after, attributes, backup, before, encoding, group, mode, owner, path, regexp, replace, selevel, serole, setype, seuser, unsafe_writes, validate (attr, dest, destfile, name)."
        );
    }
}
