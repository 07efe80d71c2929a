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
    outcome.data = data;
    outcome
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
