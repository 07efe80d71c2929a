//! The variables a task sees on a host, layered in Ansible's precedence order (low to
//! high): inventory (all, groups, host), gathered facts, play vars, task vars, set facts
//! and registered results, extra vars; plus the magic variables.

use serde_json::{Map, Value};

use super::{HostState, RunContext};
use crate::playbook::{Play, Playbook, Task};

/// Ansible's placeholder that makes a module argument disappear (`default(omit)`).
pub const OMIT: &str = "__omit_place_holder__turbo_play__";

pub fn task_vars(
    ctx: &RunContext,
    playbook: &Playbook,
    play: &Play,
    task: &Task,
    host: &HostState,
    play_hosts: &[String],
) -> minijinja::Value {
    let mut vars = ctx.inventory.host_vars(&host.name);
    {
        let facts = host.facts.lock().expect("facts lock");
        // Facts are reachable both as `ansible_facts.X` and as the older `ansible_X` names.
        for (k, v) in facts.iter() {
            vars.insert(format!("ansible_{k}"), v.clone());
        }
        vars.insert("ansible_facts".into(), Value::Object(facts.clone()));
    }
    extend(&mut vars, &play.vars);
    extend(&mut vars, &task.vars);
    extend(&mut vars, &host.set_facts.lock().expect("set_facts lock"));
    extend(&mut vars, &host.registered.lock().expect("registered lock"));
    extend(&mut vars, &ctx.opts.extra_vars);

    let groups = ctx.inventory.groups();
    let group_names = ctx.inventory.group_names(&host.name);
    let short = host
        .name
        .split('.')
        .next()
        .unwrap_or(&host.name)
        .to_string();
    let magic = [
        ("inventory_hostname", Value::from(host.name.clone())),
        ("inventory_hostname_short", Value::from(short)),
        ("group_names", Value::from(group_names)),
        ("groups", serde_json::to_value(groups).unwrap_or_default()),
        ("play_hosts", Value::from(play_hosts.to_vec())),
        ("ansible_play_hosts", Value::from(play_hosts.to_vec())),
        ("ansible_play_batch", Value::from(play_hosts.to_vec())),
        (
            "playbook_dir",
            Value::from(playbook.dir.display().to_string()),
        ),
        ("ansible_check_mode", Value::from(ctx.opts.check)),
        ("ansible_diff_mode", Value::from(ctx.opts.diff)),
        ("omit", Value::from(OMIT)),
    ];
    for (k, v) in magic {
        vars.insert(k.to_string(), v);
    }
    minijinja::Value::from_serialize(&vars)
}

fn extend(into: &mut Map<String, Value>, from: &Map<String, Value>) {
    for (k, v) in from {
        into.insert(k.clone(), v.clone());
    }
}

/// Drops arguments whose value is the omit placeholder (after templating).
pub fn strip_omitted(args: &mut Map<String, Value>) {
    args.retain(|_, v| v.as_str() != Some(OMIT));
}
