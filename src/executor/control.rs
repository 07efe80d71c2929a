//! `changed_when`, `failed_when` and `until`: judged per item once its result is known,
//! with the result under the `register` name, as Ansible's task executor does.

use std::time::Duration;

use serde_json::{Map, Value};

use super::task_state::{self, TaskRecord};
use crate::modules::{ErrorCause, TaskOutcome};
use crate::playbook::{BreakWhen, Task, Until};
use crate::template::{Templar, TemplateError};

/// How often an item may run and how long to wait in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempts {
    /// Runs in all, first included. Ansible's count: `retries + 1`, 3 when unset.
    pub total: u64,
    pub delay: Duration,
}

/// A keyword that counts (`retries`, `async`, `poll`), templated for one host: a
/// non-negative integer, or a string of one.
pub(super) fn keyword_count(
    templar: &Templar,
    raw: &Value,
    vars: &minijinja::Value,
    what: &str,
) -> Result<u64, String> {
    let value = templar
        .render_value(raw, vars)
        .map_err(|e| format!("{what}: {e}"))?;
    match &value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .ok_or_else(|| format!("{what} must be a non-negative integer, got {value}"))
}

impl Attempts {
    pub const ONCE: Attempts = Attempts {
        total: 1,
        delay: Duration::ZERO,
    };

    /// The task's attempts for one host (`retries`/`delay` may be templates).
    pub fn of(task: &Task, templar: &Templar, vars: &minijinja::Value) -> Result<Attempts, String> {
        let Some(until) = &task.until else {
            return Ok(Attempts::ONCE);
        };
        let number = |raw: &Option<Value>, what: &str| -> Result<Option<u64>, String> {
            raw.as_ref()
                .map(|raw| keyword_count(templar, raw, vars, what))
                .transpose()
        };
        let total = match number(&until.retries, "retries")? {
            None => Until::DEFAULT_RETRIES,
            Some(0) => 1,
            Some(n) => n + 1,
        };
        let delay = match &until.delay {
            None => Duration::from_secs(Until::DEFAULT_DELAY),
            Some(raw) => {
                let value = templar
                    .render_value(raw, vars)
                    .map_err(|e| format!("delay: {e}"))?;
                let seconds = match &value {
                    Value::Number(n) => n.as_f64(),
                    Value::String(s) => s.trim().parse().ok(),
                    _ => None,
                }
                .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                .ok_or_else(|| {
                    format!("delay must be a non-negative number of seconds, got {value}")
                })?;
                Duration::from_secs_f64(seconds)
            }
        };
        Ok(Attempts { total, delay })
    }
}

/// What the `until` check decided for an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Final,
    /// Run the item again (after the delay).
    Retry,
}

/// Whether every condition holds, or the error of the first that cannot be evaluated.
fn conditions_hold(
    templar: &Templar,
    conditions: &[String],
    vars: &minijinja::Value,
) -> Result<bool, TemplateError> {
    for condition in conditions {
        if !templar.eval_condition(condition, vars)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether every `when` condition holds, with Ansible's message for one that cannot be
/// evaluated ("Task failed: A 'when' expression failed: ...").
pub(super) fn all_hold(
    templar: &Templar,
    conditions: &[String],
    vars: &minijinja::Value,
) -> Result<bool, String> {
    conditions_hold(templar, conditions, vars).map_err(|e| when_failure(&e))
}

/// The `msg` of a task whose `when` could not be evaluated.
pub(super) fn when_failure(e: &TemplateError) -> String {
    format!(
        "Task failed: A 'when' expression failed: {}",
        e.conditional_message()
    )
}

/// The `msg` of a result that `failed_when` failed, when the module gave none.
pub const FAILED_WHEN_MESSAGE: &str =
    "Task failed: Action failed: A 'failed_when' expression evaluated to 'True'.";

/// Applies the task's control keywords to one item's outcome from attempt `attempt`.
/// `vars` are the item's variables; the result itself is added under the `register`
/// name. As in ansible-core 2.21, the result's keys are no variables of their own
/// (`rc`, `stdout`): a condition reads them through the registered name.
#[cfg(test)]
pub fn judge(
    task: &Task,
    templar: &Templar,
    vars: &minijinja::Value,
    outcome: &mut TaskOutcome,
    attempt: u64,
    attempts: Attempts,
) -> Verdict {
    judge_with(task, templar, vars, outcome, attempt, attempts, None)
}

/// [`judge`] for a task whose expressions read `_task` or its register projections: the
/// item's result is recorded in `in_flight` as it stands at each condition.
pub(super) fn judge_with(
    task: &Task,
    templar: &Templar,
    vars: &minijinja::Value,
    outcome: &mut TaskOutcome,
    attempt: u64,
    attempts: Attempts,
    in_flight: Option<&InFlight>,
) -> Verdict {
    // A skip never ran the module: Ansible judges nothing about it.
    if outcome.skipped {
        return Verdict::Final;
    }
    if task.until.is_some() {
        outcome.data.insert("attempts".into(), attempt.into());
    }
    let holds = |conditions: &[String], outcome: &TaskOutcome| {
        let vars = with_result(templar, task, vars, outcome, in_flight);
        conditions_hold(templar, conditions, &vars)
    };
    // Ansible's words for what failed: a module's failure, or the action's.
    let module_failed = outcome.failed && !crate::report::task_error::is_action(&task.action);
    if let Some(conditions) = task.changed_when.as_deref().filter(|c| !c.is_empty()) {
        match holds(conditions, outcome) {
            Ok(changed) => {
                outcome.changed = changed;
                outcome
                    .data
                    .insert("changed_when_result".into(), changed.into());
            }
            Err(e) => {
                let text = e.conditional_message();
                suppress_exception(outcome, "changed_when_suppressed_exception");
                keyword_failed(task, outcome, "changed_when", module_failed, text);
                return Verdict::Final;
            }
        }
    }
    if let Some(conditions) = task.failed_when.as_deref().filter(|c| !c.is_empty()) {
        // Any failed_when takes the module's exception aside, whatever it decides.
        suppress_exception(outcome, "failed_when_suppressed_exception");
        match holds(conditions, outcome) {
            Ok(failed) => {
                outcome.failed = failed;
                outcome
                    .data
                    .insert("failed_when_result".into(), failed.into());
                if failed {
                    expression_failed(task, outcome, FAILED_WHEN_MESSAGE);
                }
            }
            Err(e) => {
                let text = e.conditional_message();
                keyword_failed(task, outcome, "failed_when", module_failed, text);
                return Verdict::Final;
            }
        }
    }
    let Some(until) = &task.until else {
        return Verdict::Final;
    };
    if attempts.total <= 1 {
        return Verdict::Final;
    }
    match holds(&until.conditions, outcome) {
        Ok(true) => Verdict::Final,
        Ok(false) if attempt < attempts.total => Verdict::Retry,
        Ok(false) => {
            // Ansible reports one attempt fewer than it made when it gives up.
            outcome
                .data
                .insert("attempts".into(), (attempts.total - 1).into());
            // Giving up fails the item, unless failed_when decided (its result wins in
            // Ansible's task result).
            if !outcome.data.contains_key("failed_when_result") {
                outcome.failed = true;
            }
            Verdict::Final
        }
        // Ansible raises it: the module's result is gone.
        Err(e) => {
            let mut failed = TaskOutcome::failed(format!(
                "Task failed: An 'until' expression failed: {}",
                e.conditional_message()
            ));
            failed
                .data
                .insert("exception".into(), "(traceback unavailable)".into());
            *outcome = failed;
            Verdict::Final
        }
    }
}

fn failure_kind(module_failed: bool) -> &'static str {
    if module_failed {
        "Task failed: Module failed:"
    } else {
        "Task failed: Action failed:"
    }
}

/// Fails the result for a `changed_when` or `failed_when` (`keyword`) that could not be
/// evaluated: the error's `text` is the `<keyword>_result`, as Ansible records it.
fn keyword_failed(
    task: &Task,
    outcome: &mut TaskOutcome,
    keyword: &str,
    module_failed: bool,
    text: String,
) {
    let kind = failure_kind(module_failed);
    let error = format!("{kind} A '{keyword}' expression failed: {text}");
    outcome
        .data
        .insert(format!("{keyword}_result"), text.into());
    expression_failed(task, outcome, &error);
}

/// Moves the result's exception to `key`, as Ansible keeps the one a condition replaces.
fn suppress_exception(outcome: &mut TaskOutcome, key: &str) {
    if let Some(exception) = outcome.data.shift_remove("exception") {
        outcome.data.insert(key.into(), exception);
    }
}

/// Fails the result for a condition, as Ansible's `set_*_when_result` does: the error
/// shown is `error`, the module's own `msg` stays unless it had none.
fn expression_failed(task: &Task, outcome: &mut TaskOutcome, error: &str) {
    outcome.failed = true;
    outcome
        .data
        .insert("exception".into(), "(traceback unavailable)".into());
    // debug keeps its message (any value) among its data.
    let has_own = outcome.msg.as_deref().is_some_and(|m| !m.is_empty())
        || outcome
            .data
            .get("msg")
            .is_some_and(|m| !m.is_null() && m.as_str() != Some(""));
    if !has_own {
        outcome.msg = Some(error.to_string());
    }
    outcome.cause = Some(ErrorCause::alone(
        error.to_string(),
        task.location.file.to_path_buf(),
        task.location.line,
        task.location.column,
    ));
}

/// Whether `loop_control.break_when` stops the loop after this item, recorded in its
/// result as Ansible records it (`break_when_result`). A check that cannot be evaluated
/// stops the loop and fails the item as Ansible's `set_break_when_result` does: the
/// error's text is the `break_when_result`, an exception the item already had moves to
/// `break_when_suppressed_exception`, and the error shown is the expression's, where it
/// is written.
pub(super) fn breaks(
    task: &Task,
    templar: &Templar,
    vars: &minijinja::Value,
    outcome: &mut TaskOutcome,
    in_flight: Option<&InFlight>,
) -> bool {
    let Some(break_when) = &task.loop_control.break_when else {
        return false;
    };
    let verdict = match break_when {
        BreakWhen::Conditions(conditions) => {
            let vars = with_result(templar, task, vars, outcome, in_flight);
            conditions.iter().try_fold(true, |all, condition| {
                if !all {
                    return Ok(false);
                }
                templar
                    .eval_condition(&condition.text, &vars)
                    .map_err(|e| (e.conditional_message(), &condition.origin))
            })
        }
        BreakWhen::NotStrings(origin) => Err((
            "Conditional expressions must be strings.".to_string(),
            origin,
        )),
    };
    match verdict {
        Ok(stop) => {
            outcome.data.insert("break_when_result".into(), stop.into());
            stop
        }
        Err((message, origin)) => {
            if let Some(exception) = outcome.data.shift_remove("exception") {
                outcome
                    .data
                    .insert("break_when_suppressed_exception".into(), exception);
            }
            outcome.data.insert(
                "exception".into(),
                Value::String("(traceback unavailable)".into()),
            );
            outcome.cause = Some(ErrorCause::alone(
                format!("A 'break_when' expression failed: {message}"),
                origin.file.to_path_buf(),
                origin.line,
                origin.column,
            ));
            outcome
                .data
                .insert("break_when_result".into(), message.into());
            outcome.failed = true;
            true
        }
    }
}

/// Where an item of a task that reads `_task` stands: the results recorded before it, and
/// which item it is.
pub(super) struct InFlight<'a> {
    pub record: &'a TaskRecord,
    pub index: usize,
    pub item: Option<&'a Value>,
}

/// The item's variables plus the result under the `register` name (above everything);
/// in flight, as `_task` and the projections.
fn with_result(
    templar: &Templar,
    task: &Task,
    vars: &minijinja::Value,
    outcome: &TaskOutcome,
    in_flight: Option<&InFlight>,
) -> minijinja::Value {
    if let Some(at) = in_flight {
        let current = task_state::item_result(task, outcome, at.item, at.index);
        let record = at.record.with_current(at.index, current);
        return task_state::vars_with(templar, task, vars, &record);
    }
    match &task.register {
        Some(name) => {
            let result: Map<String, Value> = outcome.registered();
            let mut named = std::collections::BTreeMap::new();
            named.insert(name.clone(), minijinja::Value::from_serialize(&result));
            minijinja::context! { ..minijinja::Value::from(named), ..vars.clone() }
        }
        None => vars.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook::load_playbook_text;
    use serde_json::json;
    use std::path::Path;

    fn task(extra: &str) -> Task {
        let text = format!("- hosts: all\n  tasks:\n    - command: x\n      register: r\n{extra}");
        load_playbook_text(Path::new("site.yml"), &text)
            .unwrap_or_else(|e| panic!("{e}"))
            .plays
            .remove(0)
            .tasks
            .remove(0)
    }

    fn outcome(rc: i64, stdout: &str) -> TaskOutcome {
        let mut out = TaskOutcome {
            changed: true,
            failed: rc != 0,
            ..Default::default()
        };
        out.data.insert("rc".into(), rc.into());
        out.data.insert("stdout".into(), stdout.into());
        out
    }

    fn vars() -> minijinja::Value {
        minijinja::Value::from_serialize(json!({"limit": 2, "rc": "a task var wins"}))
    }

    #[test]
    fn changed_and_failed_when_override_the_module() {
        let t = task("      changed_when: false\n      failed_when: r.rc not in [0, 1]\n");
        let mut out = outcome(1, "");
        let verdict = judge(&t, &Templar::new(), &vars(), &mut out, 1, Attempts::ONCE);
        assert_eq!(verdict, Verdict::Final);
        assert!(!out.changed && !out.failed);
        assert_eq!(out.data["failed_when_result"], json!(false));

        // A list is an `and`; the result is read through the registered name, a
        // module's own msg stays.
        let t = task("      failed_when:\n        - \"'boom' in r.stdout\"\n        - r.rc == 0\n");
        let mut out = outcome(0, "boom");
        out.msg = Some("module says".into());
        judge(&t, &Templar::new(), &vars(), &mut out, 1, Attempts::ONCE);
        assert!(out.failed);
        assert_eq!(out.msg.as_deref(), Some("module says"));
        assert_eq!(out.data["exception"], json!("(traceback unavailable)"));
        assert_eq!(out.cause.unwrap().message, FAILED_WHEN_MESSAGE);
        let mut out = outcome(0, "boom");
        judge(&t, &Templar::new(), &vars(), &mut out, 1, Attempts::ONCE);
        assert_eq!(out.msg.as_deref(), Some(FAILED_WHEN_MESSAGE));
        // A result's keys are no variables of their own (ansible-core 2.21): `rc` is the
        // task's variable here.
        let t = task("      changed_when: rc == 'a task var wins'\n");
        let mut out = outcome(0, "");
        out.changed = false;
        judge(&t, &Templar::new(), &vars(), &mut out, 1, Attempts::ONCE);
        assert!(out.changed);
        let t = task("      failed_when: \"'boom' in stdout\"\n");
        let mut out = outcome(0, "boom");
        judge(&t, &Templar::new(), &vars(), &mut out, 1, Attempts::ONCE);
        assert!(out.failed);
        assert_eq!(
            out.data["failed_when_result"],
            json!("Error while evaluating conditional: 'stdout' is undefined")
        );
    }

    #[test]
    fn a_broken_condition_fails_the_item() {
        let t = task("      changed_when: r.nope.deeper\n");
        let mut out = outcome(0, "");
        judge(&t, &Templar::new(), &vars(), &mut out, 1, Attempts::ONCE);
        assert!(out.failed && out.changed);
        let error =
            "Error while evaluating conditional: object of type 'dict' has no attribute 'nope'";
        assert_eq!(out.data["changed_when_result"], json!(error));
        assert_eq!(
            out.msg.as_deref(),
            Some(
                format!("Task failed: Action failed: A 'changed_when' expression failed: {error}")
                    .as_str()
            )
        );
        // A module's exception is kept aside; `until` that cannot be evaluated replaces
        // the result.
        let t = task("      until: nope\n      retries: 1\n");
        let mut out = outcome(0, "");
        let attempts = Attempts::of(&t, &Templar::new(), &vars()).unwrap();
        judge(&t, &Templar::new(), &vars(), &mut out, 1, attempts);
        assert!(out.failed && !out.changed);
        assert_eq!(
            out.msg.as_deref(),
            Some(
                "Task failed: An 'until' expression failed: Error while evaluating conditional: 'nope' is undefined"
            )
        );
        assert!(!out.data.contains_key("rc"));
    }

    #[test]
    fn skipped_items_are_not_judged() {
        let t = task("      failed_when: true\n");
        let mut out = TaskOutcome {
            skipped: true,
            ..Default::default()
        };
        judge(&t, &Templar::new(), &vars(), &mut out, 1, Attempts::ONCE);
        assert!(!out.failed);
    }

    #[test]
    fn attempts_follow_ansibles_count() {
        let templar = Templar::new();
        let of = |extra: &str| Attempts::of(&task(extra), &templar, &vars());
        assert_eq!(of("").unwrap(), Attempts::ONCE);
        assert_eq!(
            of("      until: false\n").unwrap(),
            Attempts {
                total: 3,
                delay: Duration::from_secs(5)
            }
        );
        assert_eq!(
            of("      until: false\n      retries: '{{ limit }}'\n      delay: 0\n").unwrap(),
            Attempts {
                total: 3,
                delay: Duration::ZERO
            }
        );
        assert_eq!(
            of("      until: false\n      retries: 0\n").unwrap().total,
            1
        );
        assert_eq!(
            of("      until: false\n      retries: '{{ \"x\" }}'\n").unwrap_err(),
            "retries must be a non-negative integer, got \"x\""
        );
    }

    #[test]
    fn until_retries_then_gives_up_with_ansibles_attempts() {
        let t = task("      until: r.stdout == 'ready'\n      retries: 2\n      delay: 0\n");
        let attempts = Attempts::of(&t, &Templar::new(), &vars()).unwrap();
        assert_eq!(attempts.total, 3);
        let templar = Templar::new();
        let mut out = outcome(0, "waiting");
        assert_eq!(
            judge(&t, &templar, &vars(), &mut out, 1, attempts),
            Verdict::Retry
        );
        assert_eq!(out.data["attempts"], json!(1));
        let mut out = outcome(0, "waiting");
        assert_eq!(
            judge(&t, &templar, &vars(), &mut out, 3, attempts),
            Verdict::Final
        );
        assert!(out.failed);
        assert_eq!(out.data["attempts"], json!(2));
        let mut out = outcome(0, "ready");
        assert_eq!(
            judge(&t, &templar, &vars(), &mut out, 2, attempts),
            Verdict::Final
        );
        assert!(!out.failed);
        assert_eq!(out.data["attempts"], json!(2));
    }

    /// ansible-core 2.21.5 (loop-until): a failed_when that holds false wins over giving
    /// up on `until`; it sees the attempt under way.
    #[test]
    fn failed_when_decides_an_item_until_gave_up_on() {
        let t = task(
            "      until: 1 == 0\n      retries: 2\n      delay: 0\n      failed_when: r.attempts > 6\n",
        );
        let templar = Templar::new();
        let attempts = Attempts::of(&t, &templar, &vars()).unwrap();
        let mut out = outcome(0, "x");
        assert_eq!(
            judge(&t, &templar, &vars(), &mut out, 3, attempts),
            Verdict::Final
        );
        assert!(!out.failed, "{out:?}");
        assert_eq!(out.data["attempts"], json!(2));
    }
}
