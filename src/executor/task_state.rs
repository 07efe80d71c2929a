//! What a task's own expressions know of it while it runs on a host: Ansible 2.21's
//! `_task` variable (`result`, the latest result recorded; `loop_result`, the loop's
//! result so far; `polymorphic_result`, the loop's once it is over, else the latest) and
//! its register projections (`register: {name: expression, ...}`).
//!
//! Ansible records each result as soon as the module returns, before `changed_when`,
//! `failed_when`, `until` and `break_when` judge it (their verdicts change the recorded
//! result in place), and from the first result on the projections are variables of the
//! task's later expressions, the next items' `when` and arguments included; once the
//! task is done each is evaluated one last time and registered. Ansible evaluates them
//! lazily, where they are read; here every projection is evaluated where the task's
//! expressions are, those that fail left undefined. A loop whose task reads `_task` or
//! projects runs its items one after another, each planned after the one before it is
//! judged.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use minijinja::value::{Enumerator, Object, ObjectRepr, Value as MjValue};
use serde_json::{Map, Value};

use crate::modules::TaskOutcome;
use crate::playbook::Task;
use crate::template::{Templar, TemplateError};

/// Ansible's `_task`, the name templates read it under.
pub const NAME: &str = "_task";

/// The expression a plain `register: name` stands for.
const POLYMORPHIC: &str = "_task.polymorphic_result";

/// Whether the task's expressions read `_task` or it registers projections. A name read
/// through another variable's template is not seen; that variable is undefined then.
pub(super) fn in_flight(task: &Task) -> bool {
    if !task.register_projections.is_empty() {
        return true;
    }
    let mentions = |text: &str| text.contains(NAME);
    let conditions = task
        .when
        .iter()
        .chain(task.changed_when.iter().flatten())
        .chain(task.failed_when.iter().flatten())
        .chain(task.until.iter().flat_map(|u| &u.conditions));
    let break_when = match &task.loop_control.break_when {
        Some(crate::playbook::BreakWhen::Conditions(written)) => {
            written.iter().any(|c| mentions(&c.text))
        }
        _ => false,
    };
    conditions.into_iter().any(|c| mentions(c))
        || break_when
        || task.args.values().any(|v| mentions(&v.to_string()))
}

/// The projections a task registers, the plain `register: name` as Ansible reads it.
fn projections(task: &Task) -> Vec<(String, Value)> {
    match &task.register {
        Some(name) => vec![(name.clone(), Value::String(POLYMORPHIC.into()))],
        None => task.register_projections.clone(),
    }
}

/// A task's results on one host so far.
#[derive(Debug, Clone)]
pub(super) struct TaskRecord {
    is_loop: bool,
    /// Each item's result as registered (with its item), in order; the one result
    /// without a loop.
    results: Vec<Map<String, Value>>,
    exited: bool,
}

impl TaskRecord {
    pub fn new(is_loop: bool) -> TaskRecord {
        TaskRecord {
            is_loop,
            results: Vec::new(),
            exited: false,
        }
    }

    /// Records item `index`'s result (the task's, without a loop), replacing an earlier
    /// attempt's.
    pub fn record(&mut self, index: usize, result: Map<String, Value>) {
        if index < self.results.len() {
            self.results[index] = result;
        } else {
            self.results.push(result);
        }
    }

    /// The loop is over (all items ran, or `break_when` stopped it).
    pub fn exit_loop(&mut self) {
        self.exited = true;
    }

    /// This record with item `index`'s result as it stands now.
    pub fn with_current(&self, index: usize, result: Map<String, Value>) -> TaskRecord {
        let mut record = self.clone();
        record.record(index, result);
        record
    }

    /// The loop's result as Ansible builds it from the items recorded so far.
    fn loop_result(&self) -> Value {
        let any = |key: &str| {
            self.results
                .iter()
                .any(|r| r.get(key).and_then(Value::as_bool).unwrap_or(false))
        };
        let all_skipped = !self.results.is_empty()
            && self
                .results
                .iter()
                .all(|r| r.get("skipped").and_then(Value::as_bool).unwrap_or(false));
        let failed = any("failed");
        let mut out = Map::new();
        out.insert("changed".into(), any("changed").into());
        out.insert("failed".into(), failed.into());
        if all_skipped {
            out.insert("skipped".into(), true.into());
        }
        let msg = if all_skipped {
            "All items skipped"
        } else if failed {
            "One or more items failed"
        } else {
            "All items completed"
        };
        out.insert("msg".into(), msg.into());
        out.insert(
            "results".into(),
            Value::Array(self.results.iter().cloned().map(Value::Object).collect()),
        );
        Value::Object(out)
    }

    /// `_task` as templates read it: a property Ansible cannot give yet is left out, so
    /// it is undefined.
    fn current_task(&self) -> Value {
        let mut task = Map::new();
        let latest = self.results.last().cloned().map(Value::Object);
        if let Some(latest) = &latest {
            task.insert("result".into(), latest.clone());
        }
        if self.is_loop {
            task.insert("loop_result".into(), self.loop_result());
        }
        let polymorphic = if self.is_loop && self.exited {
            Some(self.loop_result())
        } else {
            latest
        };
        if let Some(polymorphic) = polymorphic {
            task.insert("polymorphic_result".into(), polymorphic);
        }
        Value::Object(task)
    }
}

/// An item's result as `_task` holds it: as registered, with the item.
pub(super) fn item_result(
    task: &Task,
    outcome: &TaskOutcome,
    item: Option<&Value>,
    index: usize,
) -> Map<String, Value> {
    let mut result = outcome.registered();
    if let Some(item) = item {
        result.insert(task.loop_var.clone(), item.clone());
        result.insert("ansible_loop_var".into(), task.loop_var.clone().into());
        if let Some(index_var) = &task.loop_control.index_var {
            result.insert(index_var.clone(), index.into());
            result.insert("ansible_index_var".into(), index_var.clone().into());
        }
    }
    result
}

/// `vars` as the task's expressions see them while it runs: with `_task`, and once a
/// result is recorded, its projections (those that cannot be evaluated yet undefined).
pub(super) fn vars_with(
    templar: &Templar,
    task: &Task,
    vars: &MjValue,
    record: &TaskRecord,
) -> MjValue {
    let mut overlay = BTreeMap::new();
    overlay.insert(
        NAME.to_string(),
        MjValue::from_serialize(record.current_task()),
    );
    if record.results.is_empty() {
        return MjValue::from_object(Shadowing {
            base: vars.clone(),
            overlay,
            hidden: HashSet::new(),
        });
    }
    let (values, _) = evaluate(templar, &projections(task), vars, overlay);
    MjValue::from_object(values)
}

/// The task's registered variables once it is done (`vars` are its last item's): each
/// projection's value, or the error that kept it from one.
pub(super) fn registered(
    templar: &Templar,
    task: &Task,
    vars: &MjValue,
    record: &TaskRecord,
) -> Vec<(String, Result<Value, TemplateError>)> {
    let mut record = record.clone();
    record.exit_loop();
    let mut overlay = BTreeMap::new();
    overlay.insert(
        NAME.to_string(),
        MjValue::from_serialize(record.current_task()),
    );
    let written = projections(task);
    let (values, mut errors) = evaluate(templar, &written, vars, overlay);
    written
        .into_iter()
        .map(|(name, _)| {
            let value = match errors.remove(&name) {
                Some(error) => Err(error),
                None => values
                    .overlay
                    .get(&name)
                    .map(|v| serde_json::to_value(v).unwrap_or(Value::Null))
                    .ok_or_else(|| TemplateError::Undefined {
                        name: name.clone(),
                        expr: name.clone(),
                        missing: None,
                    }),
            };
            (name, value)
        })
        .collect()
}

/// Evaluates the projections against `vars` and `overlay`, in as many passes as they
/// read one another; the names of those not evaluated (yet) are undefined, never an
/// older value of the same name.
fn evaluate(
    templar: &Templar,
    projections: &[(String, Value)],
    vars: &MjValue,
    overlay: BTreeMap<String, MjValue>,
) -> (Shadowing, BTreeMap<String, TemplateError>) {
    let mut values = Shadowing {
        base: vars.clone(),
        overlay,
        hidden: projections.iter().map(|(name, _)| name.clone()).collect(),
    };
    let mut pending: Vec<&(String, Value)> = projections.iter().collect();
    let mut errors = BTreeMap::new();
    for _ in 0..=projections.len() {
        let context = MjValue::from_object(values.clone());
        let mut still = Vec::new();
        let mut progress = false;
        for projection in pending {
            let (name, written) = projection;
            let value = match written {
                Value::String(expr) => templar.eval_expr(expr, &context),
                other => Ok(other.clone()),
            };
            match value {
                Ok(value) => {
                    errors.remove(name);
                    values
                        .overlay
                        .insert(name.clone(), MjValue::from_serialize(&value));
                    progress = true;
                }
                Err(e) => {
                    errors.insert(name.clone(), e);
                    still.push(projection);
                }
            }
        }
        pending = still;
        if !progress || pending.is_empty() {
            break;
        }
    }
    (values, errors)
}

/// Variables with some names set over them and some hidden (undefined even where the
/// variables below have them).
#[derive(Debug, Clone)]
struct Shadowing {
    base: MjValue,
    overlay: BTreeMap<String, MjValue>,
    hidden: HashSet<String>,
}

impl Object for Shadowing {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &MjValue) -> Option<MjValue> {
        let name = key.as_str()?;
        if let Some(value) = self.overlay.get(name) {
            return Some(value.clone());
        }
        if self.hidden.contains(name) {
            return None;
        }
        self.base.get_attr(name).ok().filter(|v| !v.is_undefined())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let mut keys: Vec<MjValue> = self
            .overlay
            .keys()
            .map(|k| MjValue::from(k.as_str()))
            .collect();
        if let Ok(below) = self.base.try_iter() {
            keys.extend(below.filter(|k| {
                k.as_str()
                    .is_some_and(|k| !self.overlay.contains_key(k) && !self.hidden.contains(k))
            }));
        }
        Enumerator::Values(keys)
    }
}

/// Ansible's error for a task whose projections failed once it was done, with each
/// failure as a sub-event of it.
pub(super) fn failure_message(failed: &[(String, String)], of: usize) -> String {
    let count = failed.len();
    let mut text = format!(
        "Task failed due to errors in {count} out of {of} register projections. ({count} sub-exception{})\n",
        if count == 1 { "" } else { "s" }
    );
    for (n, (name, error)) in failed.iter().enumerate() {
        text.push_str(&format!(
            "\n+--[ Sub-Event {} of {count} ]---\n| \n| Register projection '{name}' failed: {error}\n+--[ End Sub-Event ]---\n",
            n + 1
        ));
    }
    text
}

/// What a projection that failed leaves its variable: undefined, with Ansible's words for
/// why where it is read.
pub(super) fn failed_value(name: &str, error: &str) -> Value {
    crate::template::unresolved::undefined_value(&format!(
        "The variable '{name}' is undefined because its register expression failed: {error}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn task_properties_follow_what_is_recorded() {
        let mut record = TaskRecord::new(true);
        assert_eq!(
            record.current_task(),
            json!({"loop_result": {
                "changed": false, "failed": false, "msg": "All items completed", "results": []
            }})
        );
        record.record(
            0,
            json!({"changed": true, "failed": false, "item": 1})
                .as_object()
                .unwrap()
                .clone(),
        );
        record.record(
            1,
            json!({"changed": false, "failed": true, "item": 2})
                .as_object()
                .unwrap()
                .clone(),
        );
        let task = record.current_task();
        assert_eq!(task["result"]["item"], json!(2));
        assert_eq!(task["polymorphic_result"]["item"], json!(2));
        assert_eq!(
            task["loop_result"]["msg"],
            json!("One or more items failed")
        );
        assert_eq!(task["loop_result"]["changed"], json!(true));
        // Another attempt replaces the item's result.
        record.record(
            1,
            json!({"changed": false, "failed": false, "item": 2})
                .as_object()
                .unwrap()
                .clone(),
        );
        record.exit_loop();
        let task = record.current_task();
        assert_eq!(
            task["polymorphic_result"]["results"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        assert_eq!(task["polymorphic_result"]["failed"], json!(false));
    }
}
