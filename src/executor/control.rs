//! `changed_when`, `failed_when` and `until`: judged per item once its result is known,
//! with the result under the `register` name, as Ansible's task executor does.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::modules::TaskOutcome;
use crate::playbook::{BreakWhen, Task, Until};
use crate::template::Templar;

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

/// Whether every condition holds, with Ansible's message (naming the task) for one that
/// cannot be evaluated.
pub(super) fn all_hold(
    templar: &Templar,
    task: &Task,
    conditions: &[String],
    vars: &minijinja::Value,
) -> Result<bool, String> {
    for condition in conditions {
        match templar.eval_condition(condition, vars) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => {
                return Err(format!(
                    "The conditional check '{condition}' failed. The error was: {e}\n\nThe error appears to be in '{}'",
                    task.location
                ));
            }
        }
    }
    Ok(true)
}

/// The `msg` of a result that `failed_when` failed (when it has none of its own).
pub use crate::report::task_error::FAILED_WHEN_MESSAGE;

/// Applies the task's control keywords to one item's outcome from attempt `attempt`.
/// `vars` are the item's variables; the result itself is added under the `register`
/// name and, below every other variable, as bare names (`rc`, `stdout`...).
pub fn judge(
    task: &Task,
    templar: &Templar,
    vars: &minijinja::Value,
    outcome: &mut TaskOutcome,
    attempt: u64,
    attempts: Attempts,
) -> Verdict {
    // A skip never ran the module: Ansible judges nothing about it.
    if outcome.skipped {
        return Verdict::Final;
    }
    if task.until.is_some() {
        outcome.data.insert("attempts".into(), attempt.into());
    }
    let holds = |conditions: &[String], outcome: &TaskOutcome| -> Result<bool, String> {
        all_hold(templar, task, conditions, &with_result(task, vars, outcome))
    };
    let fail = |outcome: &mut TaskOutcome, message: String| {
        outcome.failed = true;
        outcome.msg = Some(message);
        Verdict::Final
    };
    if let Some(conditions) = task.changed_when.as_deref().filter(|c| !c.is_empty()) {
        match holds(conditions, outcome) {
            Ok(changed) => {
                outcome.changed = changed;
                outcome
                    .data
                    .insert("changed_when_result".into(), changed.into());
            }
            Err(message) => return fail(outcome, message),
        }
    }
    if let Some(conditions) = task.failed_when.as_deref().filter(|c| !c.is_empty()) {
        match holds(conditions, outcome) {
            Ok(failed) => {
                outcome.failed = failed;
                outcome
                    .data
                    .insert("failed_when_result".into(), failed.into());
                // ansible-core 2.21's words where the module said nothing (an empty
                // msg included); its own message stays (debug's).
                let said = |m: Option<&Value>| m.is_some_and(|m| m.as_str() != Some(""));
                let own_msg = outcome.msg.as_deref().is_some_and(|m| !m.is_empty())
                    || said(outcome.data.get("msg"));
                if failed && !own_msg {
                    outcome.msg = Some(FAILED_WHEN_MESSAGE.into());
                }
            }
            Err(message) => return fail(outcome, message),
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
        Err(message) => fail(outcome, message),
    }
}

/// Whether `loop_control.break_when` stops the loop after this item, recorded in its
/// result as Ansible records it (`break_when_result`); a check that cannot be evaluated
/// fails the item and stops the loop.
pub fn breaks(
    task: &Task,
    templar: &Templar,
    vars: &minijinja::Value,
    outcome: &mut TaskOutcome,
) -> bool {
    let Some(break_when) = &task.loop_control.break_when else {
        return false;
    };
    let verdict = match break_when {
        BreakWhen::Conditions(conditions) => {
            let vars = with_result(task, vars, outcome);
            conditions.iter().try_fold(true, |all, condition| {
                Ok::<bool, String>(
                    all && templar
                        .eval_condition(condition, &vars)
                        .map_err(|e| e.to_string())?,
                )
            })
        }
        BreakWhen::NotStrings => Err("Conditional expressions must be strings.".to_string()),
    };
    match verdict {
        Ok(stop) => {
            outcome.data.insert("break_when_result".into(), stop.into());
            stop
        }
        Err(message) => {
            outcome
                .data
                .insert("break_when_result".into(), message.into());
            outcome.failed = true;
            true
        }
    }
}

/// The item's variables plus the result: under the `register` name (above everything)
/// and as bare names (below everything).
fn with_result(task: &Task, vars: &minijinja::Value, outcome: &TaskOutcome) -> minijinja::Value {
    let result: Map<String, Value> = outcome.registered();
    let bare = minijinja::Value::from_serialize(&result);
    match &task.register {
        Some(name) => {
            let mut named = std::collections::BTreeMap::new();
            named.insert(name.clone(), minijinja::Value::from_serialize(&result));
            minijinja::context! { ..minijinja::Value::from(named), ..vars.clone(), ..bare }
        }
        None => minijinja::context! { ..vars.clone(), ..bare },
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

        // A list is an `and`; bare result keys sit below the task's own variables.
        let t = task("      failed_when:\n        - \"'boom' in stdout\"\n        - r.rc == 0\n");
        let mut out = outcome(0, "boom");
        judge(&t, &Templar::new(), &vars(), &mut out, 1, Attempts::ONCE);
        assert!(out.failed);
        assert_eq!(out.msg.as_deref(), Some(FAILED_WHEN_MESSAGE));
        let t = task("      changed_when: rc == 'a task var wins'\n");
        let mut out = outcome(0, "");
        out.changed = false;
        judge(&t, &Templar::new(), &vars(), &mut out, 1, Attempts::ONCE);
        assert!(out.changed);
    }

    #[test]
    fn a_broken_condition_fails_the_item() {
        let t = task("      changed_when: r.nope.deeper\n");
        let mut out = outcome(0, "");
        judge(&t, &Templar::new(), &vars(), &mut out, 1, Attempts::ONCE);
        assert!(out.failed);
        let msg = out.msg.unwrap();
        assert!(
            msg.starts_with("The conditional check 'r.nope.deeper' failed. The error was:"),
            "{msg}"
        );
        assert!(msg.contains("site.yml:3:7"), "{msg}");
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
