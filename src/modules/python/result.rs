//! A module's reply as Ansible treats it: its JSON (found in its output as
//! `_filter_non_json_lines` finds it) becomes the task's result, `changed`/`failed`/
//! `skipped`/`msg` taken out, internal `_ansible_*` keys dropped; output that is not JSON,
//! a crash or a timeout fails the task with Ansible's words.

use serde_json::{Map, Value};
use turbo_proto::ModuleRun;

use crate::modules::TaskOutcome;

/// The task's outcome from what the module printed.
pub fn outcome(run: ModuleRun, timeout_secs: Option<u64>) -> TaskOutcome {
    if run.timed_out {
        return TaskOutcome::failed(format!(
            "The task exceeded the timeout of {} seconds and was killed.",
            timeout_secs.unwrap_or_default()
        ));
    }
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let (parsed, junk) = match json_object(&stdout) {
        Some(found) => found,
        None => return not_json(&run, stdout, stderr),
    };
    let mut outcome = outcome_of_result(parsed);
    let data = &mut outcome.data;
    if let Some(junk) = junk {
        let warnings = data
            .entry("warnings")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = warnings {
            list.push(Value::String(format!(
                "Module invocation had junk after the JSON data: {junk}"
            )));
        }
    }
    if run.discovered && !run.interpreter.is_empty() {
        let facts = data
            .entry("ansible_facts")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(facts) = facts {
            facts.insert(
                "discovered_interpreter_python".into(),
                Value::String(run.interpreter.clone()),
            );
        }
    }
    outcome
}

/// A result dict (a module's JSON, an action plugin's result) as the task's outcome, as
/// Ansible's controller treats it: `changed`/`failed`/`skipped`/`msg` taken out, internal
/// `_ansible_*` keys dropped, warnings and deprecations made plain, an exception's
/// message made the failure's, output split into lines.
pub fn outcome_of_result(parsed: Map<String, Value>) -> TaskOutcome {
    let mut data = parsed;
    let mut outcome = TaskOutcome {
        changed: truthy(data.remove("changed")),
        failed: truthy(data.remove("failed")),
        skipped: truthy(data.remove("skipped")),
        ..TaskOutcome::default()
    };
    outcome.msg = match data.remove("msg") {
        Some(Value::String(s)) => Some(s),
        Some(Value::Null) | None => None,
        Some(other) => Some(crate::modules::spec::python_text(&other)),
    };
    data.retain(|k, _| !k.starts_with("_ansible_"));
    if let Some(Value::Array(warnings)) = data.get_mut("warnings") {
        for warning in warnings.iter_mut() {
            if let Some(text) = summary_msg(warning, "WarningSummary") {
                *warning = Value::String(text);
            }
        }
    }
    if let Some(Value::Array(deprecations)) = data.get_mut("deprecations") {
        for deprecation in deprecations.iter_mut() {
            if let Some(plain) = deprecation_dict(deprecation) {
                *deprecation = plain;
            }
        }
    }
    if let Some(brief) = data.get("exception").and_then(error_summary) {
        // What the controller makes of a module's exception: the message of its chain,
        // and no traceback (Ansible shows none unless asked to).
        outcome.failed = true;
        if outcome.msg.is_none() {
            outcome.msg = Some(format!("Task failed: Module failed: {brief}"));
        }
        data.insert(
            "exception".into(),
            Value::String("(traceback unavailable)".into()),
        );
    }
    for (text, lines) in [("stdout", "stdout_lines"), ("stderr", "stderr_lines")] {
        // The controller splits a result's output into lines when the module did not
        // (ansible's `_task.py`), whichever module it was.
        if data.contains_key(text) && !data.contains_key(lines) {
            let split = match data.get(text) {
                Some(Value::String(s)) => crate::modules::text_file::split_lines(s),
                _ => Vec::new(),
            };
            data.insert(lines.into(), Value::from(split));
        }
    }
    outcome.data = data;
    outcome
}

/// The message of a serialized `WarningSummary` (or other summary of one event).
fn summary_msg(value: &Value, kind: &str) -> Option<String> {
    (value.get("__ansible_type")?.as_str()? == kind)
        .then(|| value.get("event")?.get("msg")?.as_str().map(str::to_string))?
}

/// A serialized `DeprecationSummary` as playbooks see it (Ansible's
/// `deprecation_as_dict` plus the deprecator): the collection (none for an indeterminate
/// deprecator), the deprecator's name and type (null when unknown, as for a collection's
/// own deprecation), the message and the date, else the version.
fn deprecation_dict(value: &Value) -> Option<Value> {
    let msg = summary_msg(value, "DeprecationSummary")?;
    let mut out = Map::new();
    if let Some(deprecator) = value.get("deprecator").filter(|d| d.is_object()) {
        let resolved = deprecator.get("resolved_name").and_then(Value::as_str);
        let kind = deprecator
            .get("type")
            .and_then(|t| t.get("value").or(Some(t)))
            .and_then(Value::as_str);
        let collection = resolved.map(|name| name.split('.').take(2).collect::<Vec<_>>().join("."));
        out.insert(
            "collection_name".into(),
            collection.map_or(Value::Null, Value::String),
        );
        let mut plain = Map::new();
        let text = |s: Option<&str>| s.map_or(Value::Null, |s| Value::String(s.into()));
        plain.insert("resolved_name".into(), text(resolved));
        plain.insert("type".into(), text(kind));
        out.insert("deprecator".into(), Value::Object(plain));
    } else {
        out.insert("collection_name".into(), Value::Null);
        out.insert("deprecator".into(), Value::Null);
    }
    out.insert("msg".into(), Value::String(msg));
    match value.get("date").filter(|v| !v.is_null()) {
        Some(date) => out.insert("date".into(), date.clone()),
        None => out.insert(
            "version".into(),
            value.get("version").cloned().unwrap_or(Value::Null),
        ),
    };
    Some(Value::Object(out))
}

/// The brief message of a module's serialized `ErrorSummary` (2.19+'s exception
/// results): each event's `msg` along the chain it follows, repeats left out.
fn error_summary(exception: &Value) -> Option<String> {
    if exception.get("__ansible_type")?.as_str()? != "ErrorSummary" {
        return None;
    }
    let mut event = exception.get("event")?;
    let mut parts: Vec<String> = Vec::new();
    loop {
        if let Some(msg) = event.get("msg").and_then(Value::as_str)
            && parts.last().is_none_or(|last| last != msg)
        {
            parts.push(msg.to_string());
        }
        match event.get("chain") {
            Some(chain) if chain.get("follow").and_then(Value::as_bool) == Some(true) => {
                event = chain.get("event")?;
            }
            _ => break,
        }
    }
    Some(parts.join(": "))
}

/// The result of output that holds no JSON object: Ansible keeps what the module printed.
fn not_json(run: &ModuleRun, stdout: String, stderr: String) -> TaskOutcome {
    let not_found = !run.interpreter.is_empty()
        && [&stdout, &stderr].iter().any(|text| {
            [
                "No such file or directory",
                "not found",
                "command not found",
            ]
            .iter()
            .any(|tail| text.contains(&format!("{}: {tail}", run.interpreter)))
        });
    let msg = if not_found {
        format!(
            "The module interpreter '{}' was not found. Consider overriding the configured \
             interpreter path for this host. See stdout/stderr for the returned output.",
            run.interpreter
        )
    } else {
        "Module result deserialization failed: No start of json char found\n\nSee stdout/stderr \
         for the returned output."
            .to_string()
    };
    let mut outcome = TaskOutcome::failed(msg);
    outcome
        .data
        .insert("module_stdout".into(), Value::String(stdout));
    outcome
        .data
        .insert("module_stderr".into(), Value::String(stderr));
    outcome.data.insert("rc".into(), Value::from(run.rc));
    outcome
}

/// The JSON object in a module's output (lines before the first `{` line skipped, lines
/// after the last `}` line kept as junk), as Ansible's `_filter_non_json_lines`.
fn json_object(stdout: &str) -> Option<(Map<String, Value>, Option<String>)> {
    let lines: Vec<&str> = stdout.lines().collect();
    let start = lines.iter().position(|l| l.trim().starts_with('{'))?;
    let lines = &lines[start..];
    let end = lines.iter().rposition(|l| l.trim().ends_with('}'))?;
    let text = lines[..=end].join("\n");
    let trailing = &lines[end + 1..];
    let junk = trailing
        .iter()
        .any(|l| !l.trim().is_empty())
        .then(|| trailing.join("\n"));
    match serde_json::from_str::<Value>(&text).ok()? {
        Value::Object(map) => Some((map, junk)),
        _ => None,
    }
}

/// Ansible's `boolean()` of a result flag, lenient (a module may say "yes").
fn truthy(value: Option<Value>) -> bool {
    value.is_some_and(|v| crate::booleans::lenient(&v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(stdout: &str) -> ModuleRun {
        ModuleRun {
            interpreter: "/usr/bin/python3".into(),
            discovered: false,
            rc: 0,
            stdout: stdout.as_bytes().to_vec(),
            stderr: Vec::new(),
            timed_out: false,
        }
    }

    #[test]
    fn output_is_split_into_lines_as_the_controller_does() {
        assert_eq!(
            crate::modules::text_file::split_lines("a\r\nb\rc\n\nd\u{2028}e"),
            ["a", "b", "c", "", "d", "e"]
        );
        let out = outcome(run(r#"{"stdout": "x\ny\n", "stderr": "", "rc": 1}"#), None);
        assert_eq!(out.data["stdout_lines"], serde_json::json!(["x", "y"]));
        assert_eq!(out.data["stderr_lines"], serde_json::json!([]));
    }

    #[test]
    fn a_modules_json_is_its_result() {
        let out = outcome(
            run(
                "junk before\n{\"changed\": true, \"msg\": \"hi\", \"x\": 1, \"_ansible_no_log\": false}\n",
            ),
            None,
        );
        assert!(out.changed && !out.failed);
        assert_eq!(out.msg.as_deref(), Some("hi"));
        assert_eq!(Value::Object(out.data), json!({"x": 1}));
    }

    #[test]
    fn output_without_json_fails_with_what_was_printed() {
        let mut crashed = run("Traceback\n");
        crashed.rc = 1;
        let out = outcome(crashed, None);
        assert!(out.failed);
        assert_eq!(out.data["rc"], json!(1));
        assert_eq!(out.data["module_stdout"], json!("Traceback\n"));
    }

    #[test]
    fn deprecations_register_as_ansible_registers_them() {
        let summary = |deprecator: Value, extra: Value| {
            let mut d = json!({"__ansible_type": "DeprecationSummary",
                "event": {"__ansible_type": "Event", "msg": "m"}, "deprecator": deprecator});
            d.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            d
        };
        let reply = json!({"deprecations": [
            summary(json!({"resolved_name": "acme.tools", "type": null}), json!({"version": "3.0.0"})),
            summary(json!({"resolved_name": "ns.c.mod", "type": "module"}), json!({"date": "2030-01-01", "version": "9"})),
        ]});
        let out = outcome(run(&reply.to_string()), None);
        assert_eq!(
            out.data["deprecations"],
            json!([
                {"collection_name": "acme.tools", "deprecator": {"resolved_name": "acme.tools", "type": null}, "msg": "m", "version": "3.0.0"},
                {"collection_name": "ns.c", "date": "2030-01-01", "deprecator": {"resolved_name": "ns.c.mod", "type": "module"}, "msg": "m"},
            ])
        );
    }

    #[test]
    fn a_discovered_interpreter_becomes_a_fact() {
        let mut found = run("{}");
        found.discovered = true;
        let out = outcome(found, None);
        assert_eq!(
            out.data["ansible_facts"],
            json!({"discovered_interpreter_python": "/usr/bin/python3"})
        );
    }
}
