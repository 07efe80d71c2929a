//! Turning a task's outcomes into what Ansible shows and keeps: the per-host (and per
//! item) lines, the registered result, facts and inventory changes, handler notifications
//! and the recap counts.

use std::sync::atomic::Ordering;

use serde_json::{Map, Value};

use super::super::flow::Caught;
use super::super::task_state;
use super::{HostState, RunContext};
use crate::modules::{Effect, FactsLayer, Shown, TaskOutcome};
use crate::playbook::Task;
use crate::report::events::{Event, HostResult, Status, VERBOSE_OVERRIDE};
use crate::report::task_error::TaskOrigin;

/// What the output shows for an item: its `loop_control.label` when set, else the item.
pub(in crate::executor) fn item_shown(
    ctx: &RunContext,
    task: &Task,
    vars: &minijinja::Value,
    item: &Value,
) -> String {
    match &task.loop_control.label {
        None => item_label(item),
        Some(label) => match ctx.templar.render_value(&Value::from(label.clone()), vars) {
            Ok(shown) => item_label(&shown),
            // An unrenderable label must not fail a task that ran: show it as written.
            Err(_) => label.clone(),
        },
    }
}

/// Ansible shows a string item as it is, anything else as Python shows data
/// (`{'key': 'a', 'value': 1}`).
pub(super) fn item_label(item: &Value) -> String {
    match item {
        Value::String(s) => s.clone(),
        other => crate::template::python_str(&minijinja::Value::from_serialize(other)),
    }
}

pub(super) fn status_of(outcome: &TaskOutcome) -> Status {
    if outcome.failed {
        Status::Failed
    } else if outcome.skipped {
        Status::Skipped
    } else if outcome.changed {
        Status::Changed
    } else {
        Status::Ok
    }
}

/// One loop item's result with what the output shows for it.
pub(super) struct ItemOutcome {
    pub(super) item: Option<Value>,
    pub(super) index: usize,
    pub(super) label: Option<String>,
    pub(super) outcome: TaskOutcome,
}

pub(super) fn finish_loop(
    ctx: &RunContext,
    task: &Task,
    host: &HostState,
    delegate: Option<&HostState>,
    outcomes: Vec<ItemOutcome>,
    notify: &[String],
    projected: Option<&Projected>,
) {
    let mut results = Vec::with_capacity(outcomes.len());
    // Ansible's loop result gathers its items' warnings and deprecations, every copy.
    let (mut warnings, mut deprecations) = (Vec::new(), Vec::new());
    let (mut any_changed, mut any_failed, mut all_skipped) = (false, false, true);
    let last_failed = outcomes.iter().rposition(|o| o.outcome.failed);
    let control = &task.loop_control;
    for ItemOutcome {
        item,
        index,
        label,
        mut outcome,
    } in outcomes
    {
        let verbose = outcome.verbose_always;
        absorb_facts(ctx, task, facts_host(task, host, delegate), &outcome);
        absorb_inventory(ctx, host, &mut outcome);
        ctx.custom_stats.absorb(&host.name, &outcome);
        any_changed |= outcome.changed;
        any_failed |= outcome.failed;
        all_skipped &= outcome.skipped;
        let mut data = outcome.registered();
        for (key, all) in [
            ("warnings", &mut warnings),
            ("deprecations", &mut deprecations),
        ] {
            if let Some(Value::Array(list)) = data.get(key) {
                all.extend(list.iter().cloned());
            }
        }
        // Ansible's result keys: the item under its loop_var, the index under index_var.
        data.insert(task.loop_var.clone(), item.unwrap_or(Value::Null));
        data.insert("ansible_loop_var".into(), task.loop_var.clone().into());
        if let Some(index_var) = &control.index_var {
            data.insert(index_var.clone(), index.into());
            data.insert("ansible_index_var".into(), index_var.clone().into());
        }
        if control.label.is_some() {
            data.insert(
                "_ansible_item_label".into(),
                label.clone().unwrap_or_default().into(),
            );
        }
        let (label, shown) = if task.keywords.no_log || outcome.no_log {
            (label_shown(task, label), censored(task, &outcome))
        } else {
            // A failed debug item goes whole: its error comes from all of it, and the
            // console cleans what it dumps as Ansible's callback does.
            let own_data = task.module.caps().shown == Shown::OwnData && !outcome.failed;
            let mut shown = if own_data {
                debug_shown(&data)
            } else {
                data.clone()
            };
            if outcome.skipped {
                // Ansible shows a skipped item without its loop variable's name.
                shown.remove("ansible_loop_var");
            }
            (label, shown)
        };
        ctx.emit(Event::HostResult(HostResult {
            host: shown_host(host, delegate),
            status: status_of(&outcome),
            item: label,
            data: shown,
            ignored: task.ignore_errors && Some(index) == last_failed,
            // A censored result is shown as any other, only with -v.
            verbose_always: !(task.keywords.no_log || outcome.no_log)
                && (verbose || (task.module.caps().shown == Shown::OwnData && !outcome.skipped)),
            origin: Some(TaskOrigin::of(task).caused_by(outcome.cause.clone())),
        }));
        results.push(Value::Object(data));
    }
    let summary = TaskOutcome {
        changed: any_changed,
        failed: any_failed,
        // An empty loop is a skip, as in Ansible.
        skipped: all_skipped,
        msg: Some(
            if any_failed {
                "One or more items failed"
            } else {
                "All items completed"
            }
            .to_string(),
        ),
        ..TaskOutcome::default()
    };
    // Ansible closes a loop that ran no item with one `skipping: [h]` line of its own.
    if all_skipped {
        let mut data = Map::new();
        if results.is_empty() {
            data.insert("skipped_reason".into(), "No items in the list".into());
        } else {
            data.insert("msg".into(), "All items skipped".into());
        }
        if task.keywords.no_log {
            data = censored(task, &TaskOutcome::default());
        }
        ctx.emit(Event::HostResult(HostResult {
            host: shown_host(host, delegate),
            status: Status::Skipped,
            item: None,
            data,
            ignored: false,
            verbose_always: false,
            origin: None,
        }));
    }
    let mut summary = summary;
    if let Some(projected) = projected.filter(|p| p.failure.is_some()) {
        // Every item was shown: the loop's own failure is shown on its own.
        projected.fail(&mut summary);
        ctx.emit(Event::HostResult(HostResult {
            host: shown_host(host, delegate),
            status: Status::Failed,
            item: None,
            data: Map::from_iter(summary.msg.clone().map(|m| ("msg".to_string(), m.into()))),
            ignored: task.ignore_errors,
            verbose_always: false,
            origin: Some(TaskOrigin::of(task).caused_by(summary.cause.clone())),
        }));
    } else if any_failed {
        // Ansible's callback cleans a debug result to its message, so a debug loop's
        // failure is dumped once more as the task's own; other loops only say
        // `...ignoring`.
        let mut shown = Map::new();
        if task.module.caps().shown == Shown::OwnData && !task.keywords.no_log {
            shown.insert("msg".into(), "One or more items failed".into());
        }
        ctx.emit(Event::LoopFailed(HostResult {
            host: shown_host(host, delegate),
            status: Status::Failed,
            item: None,
            data: shown,
            ignored: task.ignore_errors,
            verbose_always: false,
            origin: Some(TaskOrigin::of(task)),
        }));
    }
    let mut data = summary.registered();
    let msg = data.shift_remove("msg");
    for (key, all) in [("warnings", warnings), ("deprecations", deprecations)] {
        if !all.is_empty() {
            data.insert(key.into(), Value::Array(all));
        }
    }
    data.extend(msg.map(|m| ("msg".to_string(), m)));
    data.insert("results".into(), Value::Array(results));
    record(task, host, &summary, data, notify);
}

pub(in crate::executor) fn finish_task(
    ctx: &RunContext,
    task: &Task,
    host: &HostState,
    delegate: Option<&HostState>,
    mut outcome: TaskOutcome,
    notify: &[String],
) {
    let verbose = outcome.verbose_always;
    absorb_facts(ctx, task, facts_host(task, host, delegate), &outcome);
    absorb_inventory(ctx, host, &mut outcome);
    ctx.custom_stats.absorb(&host.name, &outcome);
    let data = outcome.registered();
    let shown_as = task.module.caps().shown;
    let is_debug = shown_as == Shown::OwnData && !outcome.skipped;
    // debug shows only what it was asked to show, like Ansible's; its callback knows it
    // by the action's name, so an action plugin that is debug under another name shows
    // its `changed` too.
    let shown = if is_debug && !outcome.failed && !crate::playbook::is_debug_action(&task.action) {
        let mut shown = Map::new();
        shown.insert("changed".into(), outcome.changed.into());
        shown.extend(outcome.data.clone());
        shown
    } else if is_debug && !outcome.failed {
        outcome.data.clone()
    } else if shown_as == Shown::Nothing && !outcome.failed {
        // Ansible's playbook display never prints gathered facts, even with -v, but its
        // ad-hoc display does: the reporter decides.
        let mut all = data.clone();
        all.insert(VERBOSE_OVERRIDE.into(), Value::Bool(true));
        all
    } else {
        data.clone()
    };
    let censor = task.keywords.no_log || outcome.no_log;
    let shown = if censor {
        censored(task, &outcome)
    } else {
        shown
    };
    ctx.emit(Event::HostResult(HostResult {
        host: shown_host(host, delegate),
        status: status_of(&outcome),
        item: None,
        data: shown,
        ignored: outcome.failed && task.ignore_errors,
        // Ansible's censored result loses `_ansible_verbose_always` with the rest.
        verbose_always: !censor && (is_debug || verbose),
        origin: Some(TaskOrigin::of(task).caused_by(outcome.cause.clone())),
    }));
    record(task, host, &outcome, data, notify);
}

/// A task's register projections once it is done (`task_state::registered`): what each
/// variable is registered as, and the failure when one could not be evaluated, which
/// fails the task as in Ansible.
pub(super) struct Projected {
    values: Vec<(String, Value)>,
    failure: Option<String>,
}

impl Projected {
    pub(super) fn of(
        registered: &[(String, Result<Value, crate::template::TemplateError>)],
    ) -> Projected {
        let mut values = Vec::new();
        let mut failed = Vec::new();
        for (name, value) in registered {
            match value {
                Ok(value) => values.push((name.clone(), value.clone())),
                Err(e) => {
                    let words = match e {
                        crate::template::TemplateError::Undefined { .. } => e.to_string(),
                        other => other.conditional_message(),
                    };
                    values.push((name.clone(), task_state::failed_value(name, &words)));
                    failed.push((name.clone(), words));
                }
            }
        }
        let failure =
            (!failed.is_empty()).then(|| task_state::failure_message(&failed, registered.len()));
        Projected { values, failure }
    }

    /// Fails the task's result when a projection failed; its own `msg` stays.
    pub(super) fn fail(&self, outcome: &mut TaskOutcome) {
        let Some(failure) = &self.failure else {
            return;
        };
        outcome.failed = true;
        outcome
            .data
            .entry("exception")
            .or_insert_with(|| "(traceback unavailable)".into());
        outcome.cause = Some(crate::modules::ErrorCause {
            message: failure.clone(),
            file: std::path::PathBuf::new(),
            line: None,
            column: None,
            alone: true,
        });
    }

    /// Registers the projections (a plain `register: name` was registered with the
    /// result).
    pub(super) fn register(&self, task: &Task, host: &HostState) {
        if task.register.is_some() {
            return;
        }
        for (name, value) in &self.values {
            host.register(name, value.clone());
        }
    }
}

/// Adds a deprecation of the controller's (a template read `vars`) to the result's own.
pub(super) fn add_deprecation(outcome: &mut TaskOutcome, deprecation: Value) {
    let list = outcome
        .data
        .entry("deprecations")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(list) = list {
        list.push(deprecation);
    }
}

/// The `pause` module's wait, done here because planners cannot sleep.
pub(super) async fn take_pause(outcome: &mut TaskOutcome, wait: std::time::Duration) {
    // Its warnings stay in the result, which the reporter shows with the result's line.
    let start = std::time::SystemTime::now();
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
    let stamp = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    };
    outcome
        .data
        .insert("start".into(), stamp(start).to_string().into());
    outcome.data.insert(
        "stop".into(),
        stamp(std::time::SystemTime::now()).to_string().into(),
    );
}

/// What Ansible's output keeps of a debug result: `msg` alone (with any warnings), or for
/// `var=` the variable without the status keys. The registered value keeps everything.
pub(super) fn debug_shown(data: &Map<String, Value>) -> Map<String, Value> {
    const WITH_MSG: &[&str] = &["msg", "exception", "warnings", "deprecations"];
    const HIDDEN: &[&str] = &["changed", "failed", "skipped", "invocation", "skip_reason"];
    data.iter()
        .filter(|(k, _)| {
            if data.contains_key("msg") {
                WITH_MSG.contains(&k.as_str())
            } else {
                !HIDDEN.contains(&k.as_str())
            }
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// What Ansible's callback shows for the item of a `no_log` task.
pub(in crate::executor) const CENSORED_ITEM: &str = "(censored due to no_log)";

/// An item's label as the output may show it: censored under `no_log`.
pub(in crate::executor) fn label_shown(task: &Task, label: Option<String>) -> Option<String> {
    match label {
        Some(_) if task.keywords.no_log => Some(CENSORED_ITEM.to_string()),
        other => other,
    }
}

/// The keys Ansible keeps of a censored result (`PRESERVE` in its `_task.py`).
const PRESERVED: &[&str] = &[
    "attempts",
    "changed",
    "deprecations",
    "exception",
    "retries",
    "warnings",
];

/// What `no_log: true` leaves of a result in the output (the registered value keeps it
/// all, as in Ansible).
pub(super) fn censored(task: &Task, outcome: &TaskOutcome) -> Map<String, Value> {
    // debug's result has no `changed` of its own to keep (every other action sets it).
    censor(outcome, task.module.caps().shown != Shown::OwnData)
}

fn censor(outcome: &TaskOutcome, keep_changed: bool) -> Map<String, Value> {
    let mut data: Map<String, Value> = outcome
        .data
        .iter()
        .filter(|(k, _)| PRESERVED.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if keep_changed {
        data.insert("changed".into(), outcome.changed.into());
    }
    data.insert(
        "censored".into(),
        "the output has been hidden due to the fact that 'no_log: true' was specified for this result"
            .into(),
    );
    data
}

/// An unreachable host's result as the output shows it: censored under `no_log` too.
pub(super) fn unreachable_shown(task: &Task, data: &Map<String, Value>) -> Map<String, Value> {
    if task.keywords.no_log {
        censor(&TaskOutcome::default(), true)
    } else {
        data.clone()
    }
}

/// AnsibleModule keeps the values of its `no_log` arguments (user's `password`,
/// yum_repository's) out of everything it returns, registered value included, whether or
/// not the task has `no_log`.
pub(super) fn mask_no_log_args(
    task: &Task,
    raw_args: &Map<String, Value>,
    outcome: &mut TaskOutcome,
) {
    let secrets = task.module.spec().no_log_values(raw_args);
    if secrets.is_empty() {
        return;
    }
    for value in outcome.data.values_mut() {
        crate::modules::spec::mask_no_log_values(value, &secrets);
    }
    if let Some(msg) = &mut outcome.msg {
        let mut text = Value::String(std::mem::take(msg));
        crate::modules::spec::mask_no_log_values(&mut text, &secrets);
        *msg = text.as_str().unwrap_or_default().to_string();
    }
}

/// Ansible's `h1 -> h2` for a delegated task.
pub(super) fn shown_host(host: &HostState, delegate: Option<&HostState>) -> String {
    match delegate {
        Some(d) => format!("{} -> {}", host.name, d.name),
        None => host.name.clone(),
    }
}

/// Where facts a task sets land: on the delegated host only with `delegate_facts`.
pub(super) fn facts_host<'a>(
    task: &Task,
    host: &'a HostState,
    delegate: Option<&'a HostState>,
) -> &'a HostState {
    match delegate {
        Some(d) if task.keywords.delegate_facts => d,
        _ => host,
    }
}

/// `add_host` and `group_by` results change the run's inventory, as in Ansible; an
/// add_host that changed nothing (the host, its groups and variables were there) is not
/// `changed`.
pub(super) fn absorb_inventory(ctx: &RunContext, host: &HostState, outcome: &mut TaskOutcome) {
    if outcome.failed || outcome.skipped {
        return;
    }
    for effect in outcome.effects.clone() {
        match &effect {
            Effect::AddHost { name, groups, vars } => {
                outcome.changed = ctx.runtime.lock().expect("runtime lock").add_host(
                    &ctx.inventory(),
                    name,
                    groups,
                    vars,
                );
            }
            Effect::JoinGroup { group, parents } => {
                outcome.changed = ctx.runtime.lock().expect("runtime lock").join_group(
                    &ctx.inventory(),
                    &host.name,
                    group,
                    parents,
                );
            }
            Effect::Wait(_) | Effect::Reconnect(_) | Effect::Reboot(_) => {}
        }
    }
}

/// A module hands variables back the way Ansible's do, under `ansible_facts` in its
/// result, into the layer it declares: host facts (setup, and any module that returns
/// facts), include_vars' layer above task vars, or set_fact's above that.
pub(super) fn absorb_facts(ctx: &RunContext, task: &Task, host: &HostState, outcome: &TaskOutcome) {
    if outcome.failed || outcome.skipped {
        return;
    }
    let Some(Value::Object(new)) = outcome.data.get("ansible_facts") else {
        return;
    };
    // Ansible's set_host_facts/set_nonpersistent_facts warn about reserved names.
    if task.module.caps().facts != FactsLayer::Gathered {
        for name in new.keys().filter(|k| crate::playbook::is_reserved_name(k)) {
            ctx.emit(crate::report::events::Event::Warning(format!(
                "Found variable using reserved name '{name}'.\nOrigin: {}",
                task.location
            )));
        }
    }
    match task.module.caps().facts {
        FactsLayer::Gathered => {
            // Kept without the prefix, as `ansible_facts.X`; vars.rs adds the `ansible_X` names.
            let mut facts = host.facts.lock().expect("facts lock");
            let mut plain = host.plain_facts.lock().expect("plain facts lock");
            for (k, v) in new {
                if !k.starts_with("ansible_") {
                    plain.insert(k.clone());
                }
                facts.insert(
                    k.strip_prefix("ansible_").unwrap_or(k).to_string(),
                    v.clone(),
                );
            }
            // A fact returned without the `ansible_` prefix (`getent_passwd`, `my_fact`)
            // is also a variable of that name, in the facts' layer (vars.rs), as Ansible
            // injects facts.
        }
        FactsLayer::IncludeVars => host.include_vars_from(new),
        FactsLayer::SetFact => host.set_facts_from(new),
    }
}

/// Counts the task in the recap, registers its result, notifies handlers, and benches a
/// failed host (unless a block's rescue or always takes the failure first).
pub(super) fn record(
    task: &Task,
    host: &HostState,
    outcome: &TaskOutcome,
    data: Map<String, Value>,
    notify: &[String],
) {
    let caught = (outcome.failed && !task.ignore_errors)
        .then(|| host.flow.lock().expect("flow lock").fail(task, &data));
    if !outcome.failed && outcome.changed && !notify.is_empty() {
        host.flow.lock().expect("flow lock").notify(notify);
    }
    if let Some(name) = &task.register {
        host.register(name, Value::Object(data));
    }
    host.stat(|s| match caught {
        // Ansible counts a failure a rescue takes as `rescued`, and nothing else.
        Some(Caught::Rescue) => s.rescued += 1,
        Some(_) => s.failed += 1,
        None if outcome.failed => {
            s.ok += 1;
            s.ignored += 1;
            s.changed += u32::from(outcome.changed);
        }
        None if outcome.skipped => s.skipped += 1,
        None => {
            s.ok += 1;
            s.changed += u32::from(outcome.changed);
        }
    });
    if caught == Some(Caught::Uncaught) {
        host.out.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_items_show_what_ansible_shows() {
        let data = |v: Value| v.as_object().unwrap().clone();
        let with_msg = data(serde_json::json!({
            "msg": "a", "changed": false, "failed": false, "item": "a", "ansible_loop_var": "item"
        }));
        assert_eq!(
            Value::Object(debug_shown(&with_msg)),
            serde_json::json!({"msg": "a"})
        );
        let with_var = data(serde_json::json!({
            "x": 1, "changed": false, "failed": false, "item": "a", "ansible_loop_var": "item"
        }));
        assert_eq!(
            Value::Object(debug_shown(&with_var)),
            serde_json::json!({"x": 1, "item": "a", "ansible_loop_var": "item"})
        );
    }

    #[test]
    fn no_log_keeps_only_what_ansible_preserves() {
        let mut outcome = TaskOutcome {
            changed: true,
            msg: Some("secret".into()),
            ..Default::default()
        };
        outcome.data.insert("stdout".into(), "secret".into());
        outcome.data.insert("attempts".into(), 2.into());
        let shown = censor(&outcome, true);
        assert_eq!(shown.len(), 3, "{shown:?}");
        assert_eq!(shown["changed"], true);
        assert_eq!(shown["attempts"], 2);
        assert!(
            shown["censored"]
                .as_str()
                .unwrap()
                .contains("'no_log: true'")
        );
        assert!(!censor(&outcome, false).contains_key("changed"));
    }

    #[test]
    fn labels_show_data_as_python_does() {
        assert_eq!(item_label(&Value::from("a")), "a");
        assert_eq!(
            item_label(&serde_json::json!({"key": "k", "value": [1, true, null]})),
            "{'key': 'k', 'value': [1, True, None]}"
        );
    }
}
