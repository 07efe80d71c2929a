//! The task an action plugin runs for (`modules::action_plugin`), owned so that it lasts
//! through the steps of the plugin's run: its variables, the run's templar, and what the
//! plugin's `self._task` and `self._play_context` hold.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::RunContext;
use super::prepare::{check_mode, diff_mode};
use crate::modules::PlanContext;
use crate::modules::action_plugin::ControllerTask;
use crate::playbook::{Playbook, Task};
use crate::template::Templar;

struct TaskOnController {
    templar: Arc<Templar>,
    vars: minijinja::Value,
    playbook_dir: PathBuf,
    role_dir: Option<PathBuf>,
    task_dir: Option<PathBuf>,
    check_mode: bool,
    diff: bool,
    ansible_managed: Option<String>,
    no_log: bool,
    delegated: bool,
    info: Map<String, Value>,
}

impl ControllerTask for TaskOnController {
    fn vars(&self) -> &minijinja::Value {
        &self.vars
    }

    fn templar(&self) -> &Templar {
        &self.templar
    }

    fn plan_context(&self) -> PlanContext<'_> {
        PlanContext {
            role_dir: self.role_dir.as_deref(),
            task_dir: self.task_dir.as_deref(),
            check_mode: self.check_mode,
            diff: self.diff,
            vars: Some(&self.vars),
            templar: Some(&self.templar),
            ansible_managed: self.ansible_managed.as_deref(),
            no_log: self.no_log,
            delegated: self.delegated,
            ..PlanContext::new(&self.playbook_dir)
        }
    }

    fn task_info(&self) -> Map<String, Value> {
        self.info.clone()
    }
}

/// The task on the controller for the item whose variables are `vars`.
pub(super) fn controller(
    ctx: &RunContext,
    playbook: &Playbook,
    task: &Task,
    vars: &minijinja::Value,
) -> Arc<dyn ControllerTask> {
    let role_dir = task.role.as_ref().map(|r| r.path.clone());
    let task_dir = task.location.file.parent().map(|p| p.to_path_buf());
    let check = check_mode(ctx, task);
    let diff = diff_mode(ctx, task);
    let var_text = |name: &str| {
        vars.get_attr(name)
            .ok()
            .filter(|v| !v.is_undefined() && !v.is_none())
            .map(|v| v.to_string())
    };
    // Ansible's task search path: the role's, the task file's, the playbook's directory.
    let mut search_path: Vec<String> = Vec::new();
    for dir in [role_dir.as_ref(), task_dir.as_ref(), Some(&playbook.dir)]
        .into_iter()
        .flatten()
    {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        let text = dir.display().to_string();
        if !search_path.contains(&text) {
            search_path.push(text);
        }
    }
    let async_val = task
        .async_job
        .limit
        .as_ref()
        .and_then(|v| ctx.templar.render_value(v, vars).ok())
        .and_then(|v| match v {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        })
        .unwrap_or(0);
    let mut info = Map::new();
    info.insert("name".into(), Value::from(task.display_name()));
    info.insert("check_mode".into(), Value::from(check));
    info.insert("diff".into(), Value::from(diff));
    info.insert("no_log".into(), Value::from(task.keywords.no_log));
    info.insert("async_val".into(), Value::from(async_val));
    info.insert(
        "delegate_to".into(),
        task.keywords
            .delegate_to
            .clone()
            .map_or(Value::Null, Value::from),
    );
    info.insert(
        "delegate_facts".into(),
        Value::from(task.keywords.delegate_facts),
    );
    info.insert("ignore_errors".into(), Value::from(task.ignore_errors));
    info.insert(
        "register".into(),
        task.register.clone().map_or(Value::Null, Value::from),
    );
    info.insert("search_path".into(), Value::from(search_path));
    if let Some(role) = &task.role {
        info.insert(
            "role_path".into(),
            Value::from(role.path.display().to_string()),
        );
        info.insert("role_name".into(), Value::from(role.name.clone()));
    }
    info.insert(
        "play_context".into(),
        json!({
            "check_mode": check,
            "diff": diff,
            "verbosity": ctx.opts.verbosity,
            "remote_user": var_text("ansible_user"),
            "remote_addr": var_text("ansible_host").or_else(|| var_text("inventory_hostname")),
            "port": var_text("ansible_port"),
            "connection": var_text("ansible_connection").unwrap_or_else(|| "ssh".into()),
            "become": vars.get_attr("ansible_become").is_ok_and(|v| v.is_true()),
            "become_user": var_text("ansible_become_user"),
            "become_method": var_text("ansible_become_method").unwrap_or_else(|| "sudo".into()),
        }),
    );
    Arc::new(TaskOnController {
        templar: ctx.templar.clone(),
        vars: vars.clone(),
        playbook_dir: playbook.dir.clone(),
        role_dir,
        task_dir,
        check_mode: check,
        diff,
        ansible_managed: ctx.opts.ansible_managed.clone(),
        no_log: task.keywords.no_log,
        delegated: task.keywords.delegate_to.is_some(),
        info,
    })
}
