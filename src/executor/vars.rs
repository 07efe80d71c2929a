//! The variables a task sees on a host, layered in Ansible's precedence order (low to
//! high): role defaults, inventory (all, groups, group_vars/ files, host, host_vars/
//! files), gathered facts, play vars, play vars_files, role vars, task vars, include_vars,
//! set facts and registered results (one layer: the later write wins), role parameters,
//! include params, extra vars; plus the magic variables.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{HostState, RunContext};
use crate::playbook::{Play, Playbook, Task};
use crate::template::unresolved::{self, UNRESOLVED_VARS};
use crate::template::{Templar, TemplateError, is_template};
use crate::vars_file::layer_play_vars_files;

/// Ansible's placeholder that makes a module argument disappear (`default(omit)`).
pub const OMIT: &str = crate::template::OMIT;

/// The hosts of the running play, for its magic variables. Read when a task's variables
/// are built, so a host that failed or ended its play (`meta: end_host`) has left them.
#[derive(Clone)]
pub struct PlayHosts {
    /// Every host of the play, across all `serial` batches, in the play's order, with
    /// those that failed in earlier plays (`ansible_play_hosts_all`).
    pub all: Arc<[Arc<HostState>]>,
    /// The batch that is running (every host when the play has no `serial`).
    pub batch: Arc<[Arc<HostState>]>,
}

impl PlayHosts {
    /// Ansible's four lists: `ansible_play_hosts_all` (every host), `ansible_play_hosts`
    /// (those still in the play, in any batch), `ansible_play_batch` and `play_hosts`
    /// (those still in the play in this batch).
    fn magic(&self) -> [(&'static str, Value); 4] {
        let names = |hosts: &[Arc<HostState>], active_only: bool| -> Value {
            hosts
                .iter()
                .filter(|h| !active_only || super::flow::in_play(h))
                .map(|h| Value::from(h.name.clone()))
                .collect()
        };
        let batch = names(&self.batch, true);
        [
            ("ansible_play_hosts_all", names(&self.all, false)),
            ("ansible_play_hosts", names(&self.all, true)),
            ("play_hosts", batch.clone()),
            ("ansible_play_batch", batch),
        ]
    }
}

/// Everything a task sees on a host. Fails when a `group_vars/`/`host_vars/` file or a
/// `vars_files` entry cannot be read (the message names the file).
pub fn task_vars(
    ctx: &RunContext,
    playbook: &Playbook,
    play: &Play,
    task: &Task,
    host: &HostState,
    play_hosts: &PlayHosts,
) -> Result<minijinja::Value, String> {
    let mut vars = layered_vars(ctx, playbook, play, task, host, play_hosts)?;
    // Registered as undefined, with why (a register projection that failed).
    let undefined: Vec<(String, Value)> = vars
        .iter()
        .filter_map(|(k, v)| {
            unresolved::undefined_because(v)
                .map(|why| (k.clone(), unresolved::entry_because(k, why)))
        })
        .collect();
    for (name, _) in &undefined {
        vars.shift_remove(name);
    }
    let hostvars = minijinja::Value::from_object(super::hostvars::HostVars::new(
        ctx.me.clone(),
        playbook.dir.clone(),
    ));
    // Results and facts came from the target, and set facts were templated when they
    // were set: Ansible never templates them again. The locks are let go before
    // rendering, which may read this host through `hostvars`.
    let pending: Vec<String> = {
        let registered = host.registered.lock().expect("registered lock");
        let set_facts = host.set_facts.lock().expect("set_facts lock");
        let facts = host.facts.lock().expect("facts lock");
        vars.iter()
            .filter(|(k, v)| {
                holds_template(v)
                    && !registered.contains_key(*k)
                    && set_facts.get(*k) != Some(*v)
                    && !(play.unsafe_vars.contains(*k) && play.vars.get(*k) == Some(*v))
                    && k.as_str() != "ansible_facts"
                    && !k
                        .strip_prefix("ansible_")
                        .is_some_and(|f| facts.contains_key(f))
            })
            .map(|(k, _)| k.clone())
            .collect()
    };
    let unresolved = resolve_nested_templates(&ctx.templar, &mut vars, pending, &hostvars);
    // An inline `!vault` value the run's secrets cannot decrypt kept its text: `unvault`
    // may still open it with the password it is given.
    let undecryptable: Map<String, Value> = unresolved
        .broken
        .iter()
        .filter_map(|(name, _)| {
            let envelope = crate::vault::inline_envelope(vars.get(name)?.as_str()?)?;
            Some((name.clone(), Value::from(envelope)))
        })
        .collect();
    // One whose template names an undefined variable is undefined to the task's
    // templates, which fail with its error where they need its value (see
    // `template::unresolved`).
    let listed: Map<String, Value> = unresolved
        .undefined
        .iter()
        .filter_map(|(name, error)| {
            let text = vars.shift_remove(name)?;
            Some((name.clone(), unresolved::entry(&text, error)))
        })
        .chain(
            unresolved
                .partial
                .iter()
                .map(|(name, text, error)| (name.clone(), unresolved::partial_entry(text, error))),
        )
        .chain(undefined)
        .collect();
    vars.insert(UNRESOLVED_VARS.into(), Value::Object(listed));
    // A variable whose template fails for another reason than an undefined name fails
    // the task that uses it, as Ansible's lazy templating does; unused, it harms nothing.
    let broken = broken_values(
        unresolved
            .broken
            .iter()
            .map(|(name, message)| (name, message)),
    );
    // The last map that has a name wins.
    let all = minijinja::value::merge_maps([
        unresolved::template_vars(&vars),
        broken,
        minijinja::context! {
            hostvars => hostvars,
            __tp_undecryptable => minijinja::Value::from_serialize(&undecryptable),
        },
    ]);
    let dict = super::vars_dict::VarsDict::value(all.clone());
    Ok(minijinja::value::merge_maps([
        all,
        minijinja::context! { vars => dict },
    ]))
}

/// Variables whose template failed for another reason than an undefined name, as values
/// that fail whatever uses them with that error, as Ansible's lazy templating does;
/// unused, they harm nothing.
fn broken_values<'a>(
    broken: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> minijinja::Value {
    minijinja::Value::from_iter(broken.into_iter().map(|(name, message)| {
        // The kind's words would come twice: the message already starts with them.
        let message = message
            .strip_prefix("invalid operation: ")
            .unwrap_or(message)
            .to_string();
        let error = minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, message);
        (name.clone(), minijinja::Value::from(error))
    }))
}

/// The task's variables as written, every layer merged in Ansible's precedence and no
/// template resolved: what [`task_vars`] resolves, and what the chain analysis reads to
/// follow a variable to the variables its template names.
pub(super) fn layered_vars(
    ctx: &RunContext,
    playbook: &Playbook,
    play: &Play,
    task: &Task,
    host: &HostState,
    play_hosts: &PlayHosts,
) -> Result<Map<String, Value>, String> {
    let mut vars = ctx
        .runtime
        .lock()
        .expect("runtime lock")
        .inventory_vars(&ctx.inventory(), &host.name, &playbook.dir)
        .map_err(|e| e.to_string())?;
    // Role defaults sit below everything: the play's roles' (with those a public
    // include_role added), then the task's own role's.
    let public_included = ctx.public_roles.lock().expect("public roles lock").clone();
    let roles = || {
        play.roles
            .iter()
            .chain(&public_included)
            .chain(task.role.as_ref())
    };
    if roles().next().is_some() {
        let mut below = Map::new();
        roles().for_each(|role| extend(&mut below, &role.defaults));
        extend(&mut below, &vars);
        vars = below;
    }
    let facts_gathered;
    {
        let facts = host.facts.lock().expect("facts lock");
        facts_gathered = !facts.is_empty();
        // Facts are reachable both as `ansible_facts.X` and as the older `ansible_X` names.
        for (k, v) in facts.iter() {
            vars.insert(format!("ansible_{k}"), v.clone());
        }
        for k in host.plain_facts.lock().expect("plain facts lock").iter() {
            if let Some(v) = facts.get(k) {
                vars.insert(k.clone(), v.clone());
            }
        }
        vars.insert("ansible_facts".into(), Value::Object(facts.clone()));
    }
    let magic = magic_vars(ctx, playbook, host, play_hosts);
    extend(&mut vars, &play.vars);
    // vars_prompt never prompts here: its default stands in (and -e, layered later, wins).
    for prompt in &play.vars_prompt {
        if let Some(value) = &prompt.default {
            vars.insert(prompt.name.clone(), value.clone());
        }
    }
    if !play.vars_files.is_empty() {
        let mut above = ctx.opts.extra_vars.clone();
        extend(&mut above, &magic);
        // An entry's variables hold templates of their own, resolved as a task's are.
        let render = |raw: &str, scope: &Map<String, Value>| {
            let hostvars = minijinja::Value::from_object(super::hostvars::HostVars::new(
                ctx.me.clone(),
                playbook.dir.clone(),
            ));
            let mut scope = scope.clone();
            let pending = {
                let facts = host.facts.lock().expect("facts lock");
                scope
                    .iter()
                    .filter(|(k, v)| {
                        holds_template(v)
                            && k.as_str() != "ansible_facts"
                            && !k
                                .strip_prefix("ansible_")
                                .is_some_and(|f| facts.contains_key(f))
                    })
                    .map(|(k, _)| k.clone())
                    .collect()
            };
            resolve_nested_templates(&ctx.templar, &mut scope, pending, &hostvars);
            let context = minijinja::context! {
                hostvars => hostvars,
                ..minijinja::Value::from_serialize(&scope)
            };
            ctx.templar.render_str(raw, &context)
        };
        layer_play_vars_files(
            &play.vars_files,
            &playbook.dir,
            &render,
            &mut vars,
            &above,
            facts_gathered,
            &ctx.vars_files,
        )
        .map_err(|e| format!("{}: {e}", play.location))?;
    }
    roles().for_each(|role| extend(&mut vars, &role.vars));
    if let Some(role) = &task.role {
        // The task's own role once more, over the play's roles: what it inherits, then
        // its own vars, then its entry's `vars:`.
        extend(&mut vars, &role.inherited_vars);
        extend(&mut vars, &role.vars);
        extend(&mut vars, &role.keyword_vars);
    }
    extend(&mut vars, &task.vars);
    extend(
        &mut vars,
        &host.included_vars.lock().expect("included_vars lock"),
    );
    extend(&mut vars, &host.set_facts.lock().expect("set_facts lock"));
    extend(&mut vars, &host.registered.lock().expect("registered lock"));
    if let Some(role) = &task.role {
        extend(&mut vars, &role.params);
    }
    extend(&mut vars, &task.include_params);
    extend(&mut vars, &ctx.opts.extra_vars);
    extend(&mut vars, &magic);
    add_role_names(&mut vars, roles());
    if let Some(role) = &task.role {
        if !role.parents.is_empty() {
            let (names, paths): (Vec<String>, Vec<String>) = role
                .parents
                .iter()
                .map(|(name, path)| (name.clone(), path.display().to_string()))
                .unzip();
            vars.insert("ansible_parent_role_names".into(), Value::from(names));
            vars.insert("ansible_parent_role_paths".into(), Value::from(paths));
        }
        let path = Value::from(role.path.display().to_string());
        // A collection's role: `role_name` is its short name, `ansible_role_name` the
        // namespace.collection.role one, as in Ansible.
        let short =
            crate::playbook::split_role_fqcn(&role.name).map_or(role.name.as_str(), |n| n.2);
        vars.insert("role_name".into(), Value::from(short));
        vars.insert("ansible_role_name".into(), Value::from(role.name.clone()));
        vars.insert("role_path".into(), path);
    }
    vars.insert(
        "ansible_search_path".into(),
        search_path(playbook, task).into(),
    );
    connection_defaults(ctx, host, &mut vars);
    Ok(vars)
}

/// [`resolve_nested_templates`] for what `hostvars[name]` holds: every variable holding a
/// template but those `keep` names (registered results and facts are data, not templates).
pub(super) fn resolve_hostvars_templates(
    templar: &Templar,
    vars: &mut Map<String, Value>,
    keep: impl Fn(&str) -> bool,
    hostvars: &minijinja::Value,
) {
    let pending: Vec<String> = vars
        .iter()
        .filter(|(k, v)| holds_template(v) && !keep(k))
        .map(|(k, _)| k.clone())
        .collect();
    resolve_nested_templates(templar, vars, pending, hostvars);
}

/// Passes a variable may need before every template inside it is resolved
/// (`a: "{{ b }}"`, `b: "{{ c }}"`, ...); deeper chains are left as they are.
const MAX_TEMPLATE_DEPTH: usize = 8;

/// What [`resolve_nested_templates`] could not resolve.
#[derive(Default)]
struct Unresolved {
    /// Failed for another reason than an undefined name (a lookup or filter error): the
    /// error's message.
    broken: Vec<(String, String)>,
    /// Name an undefined variable: the error, by variable.
    undefined: Vec<(String, TemplateError)>,
    /// Dicts and lists some of whose leaves name an undefined variable: they keep their
    /// other values, those leaves undefined; by variable, its text as written and the
    /// first leaf's error.
    partial: Vec<(String, Value, TemplateError)>,
}

/// Ansible templates variables lazily: `conf: "{{ base }}/conf"` means the value of
/// `base`. Every variable holding a template is rendered against the others until
/// nothing changes. A variable whose template fails keeps its text here and is returned
/// with its error; while it fails, the others' templates see it undefined, so one that
/// reads it fails in turn (with its error, where the variables carry the list of them).
fn resolve_nested_templates(
    templar: &Templar,
    vars: &mut Map<String, Value>,
    mut pending: Vec<String>,
    hostvars: &minijinja::Value,
) -> Unresolved {
    // A failure may come from a variable not resolved yet: it counts only when it lasts.
    let mut failed: std::collections::BTreeMap<String, String> = Default::default();
    let mut undefined: std::collections::BTreeMap<String, TemplateError> = Default::default();
    let mut partial: std::collections::BTreeMap<String, TemplateError> = Default::default();
    // Each pass renders what the variable says, never what an earlier pass made of it:
    // a value is templated once (text an `!unsafe` value gives, or a template a lookup
    // returns, stays as it is), only against the others' values as they settle.
    let written: std::collections::HashMap<String, Value> = pending
        .iter()
        .map(|key| (key.clone(), vars[key].clone()))
        .collect();
    for _ in 0..MAX_TEMPLATE_DEPTH {
        if pending.is_empty() {
            break;
        }
        let visible = if undefined.is_empty() {
            unresolved::template_vars(vars)
        } else {
            let defined: Map<String, Value> = vars
                .iter()
                .filter(|(k, _)| !undefined.contains_key(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            unresolved::template_vars(&defined)
        };
        // A variable that reads a broken one fails with its error, not with its text; one
        // that reads an undefined leaf, with the leaf's.
        let partial_listed: Map<String, Value> = partial
            .iter()
            .map(|(k, e)| (k.clone(), unresolved::partial_entry(&written[k], e)))
            .collect();
        let context = minijinja::value::merge_maps([
            visible,
            broken_values(&failed),
            minijinja::context! {
                hostvars => hostvars.clone(),
                __tp_unresolved => minijinja::Value::from_serialize(&partial_listed),
            },
        ]);
        let mut still = Vec::new();
        let mut changed = false;
        for key in pending {
            let rendered = match templar.render_value(&written[&key], &context) {
                Ok(rendered) => {
                    partial.remove(&key);
                    rendered
                }
                // A dict or list stays one: only its leaves that name an undefined
                // variable are undefined (tried again while the others change).
                Err(TemplateError::Undefined { .. })
                    if written[&key].is_object() || written[&key].is_array() =>
                {
                    match render_leaves(templar, &written[&key], &context) {
                        Ok((rendered, error)) => {
                            failed.remove(&key);
                            changed |= undefined.remove(&key).is_some();
                            changed |= partial.insert(key.clone(), error).is_none();
                            still.push(key.clone());
                            if rendered != vars[&key] {
                                changed = true;
                                vars.insert(key, rendered);
                            }
                        }
                        Err(
                            TemplateError::Syntax { message, .. }
                            | TemplateError::Render { message, .. },
                        ) => {
                            changed |= undefined.remove(&key).is_some();
                            partial.remove(&key);
                            failed.insert(key.clone(), message);
                            still.push(key);
                        }
                        Err(e @ TemplateError::Undefined { .. }) => {
                            failed.remove(&key);
                            partial.remove(&key);
                            changed |= undefined.insert(key.clone(), e).is_none();
                            still.push(key);
                        }
                    }
                    continue;
                }
                // It may name one not resolved yet (`all: "{{ hostvars[h] }}"` before
                // `x: "{{ all.y }}"`): tried again while the others change.
                Err(e @ TemplateError::Undefined { .. }) => {
                    failed.remove(&key);
                    changed |= undefined.insert(key.clone(), e).is_none();
                    still.push(key);
                    continue;
                }
                Err(
                    TemplateError::Syntax { message, .. } | TemplateError::Render { message, .. },
                ) => {
                    changed |= undefined.remove(&key).is_some();
                    partial.remove(&key);
                    failed.insert(key.clone(), message);
                    still.push(key);
                    continue;
                }
            };
            failed.remove(&key);
            changed |= undefined.remove(&key).is_some();
            // Text that still reads as a template may come from one not settled yet
            // (it is rendered again next pass), or be what an `!unsafe` value gives.
            if holds_template(&rendered) {
                still.push(key.clone());
            }
            if rendered != vars[&key] {
                changed = true;
                vars.insert(key, rendered);
            }
        }
        if !changed {
            break;
        }
        pending = still;
    }
    // What an earlier pass made of it, before a variable it reads turned out undefined,
    // is no value of it.
    for key in undefined.keys() {
        vars.insert(key.clone(), written[key].clone());
    }
    // `b: "{{ a }}"` with `a: "{{ nope }}"` fails as `a` does: 'nope' is undefined.
    let first = |e: &TemplateError| match e {
        TemplateError::Undefined { name, missing, .. } if missing.is_none() => {
            name.split(['.', '[']).next().map(str::to_string)
        }
        _ => None,
    };
    let settle = |(key, error): (&String, &TemplateError)| {
        let mut error = error.clone();
        for _ in 0..MAX_TEMPLATE_DEPTH {
            match first(&error).and_then(|name| undefined.get(&name).or(partial.get(&name))) {
                Some(deeper) if deeper != &error => error = deeper.clone(),
                _ => break,
            }
        }
        (key.clone(), error)
    };
    Unresolved {
        broken: failed.iter().map(|(k, m)| (k.clone(), m.clone())).collect(),
        undefined: undefined.iter().map(settle).collect(),
        partial: partial
            .iter()
            .map(settle)
            .map(|(key, error)| {
                let text = written[&key].clone();
                (key, text, error)
            })
            .collect(),
    }
}

/// A loop item's variables over the task's: Ansible templates variables lazily, so one
/// whose template names the loop variable (`dir: "/out/{{ test_id }}"` with
/// `loop_var: test_id`) means this item's value. Such variables were left unresolved when
/// the task's variables were resolved (the name was undefined then); those that mention
/// one of the item's names, or one resolved here, are rendered again with the item.
pub(super) fn with_item_vars(
    templar: &Templar,
    base: &minijinja::Value,
    overlay: std::collections::BTreeMap<String, minijinja::Value>,
) -> minijinja::Value {
    let mut pending: Vec<(String, Value, String)> = unresolved::listed(base)
        .into_iter()
        .filter(|(name, _)| !overlay.contains_key(name))
        .map(|(name, text)| {
            let shown = text.to_string();
            (name, text, shown)
        })
        .collect();
    if pending.is_empty() {
        return minijinja::context! { ..minijinja::Value::from(overlay), ..base.clone() };
    }
    let mut names: Vec<String> = overlay.keys().cloned().collect();
    let mut resolved = overlay;
    // Rendered with the item but for leaves still undefined: still listed, for their error.
    let mut still_partial: Vec<(String, minijinja::Value)> = Vec::new();
    // A chain (`a: "{{ b }}"`, `b: "{{ item }}"`) settles in as many passes as it is long.
    for _ in 0..MAX_TEMPLATE_DEPTH {
        let context = minijinja::context! {
            ..minijinja::Value::from(resolved.clone()),
            ..base.clone()
        };
        let mut still = Vec::new();
        let mut changed = false;
        for (name, text, shown) in pending {
            if !names.iter().any(|n| shown.contains(n.as_str())) {
                still.push((name, text, shown));
                continue;
            }
            match templar.render_value(&text, &context) {
                Ok(rendered) => {
                    changed = true;
                    resolved.insert(name.clone(), minijinja::Value::from_serialize(&rendered));
                    names.push(name);
                }
                // A dict or list with leaves still undefined: its others take the item.
                Err(TemplateError::Undefined { .. })
                    if (text.is_object() || text.is_array())
                        && let Ok((rendered, error)) = render_leaves(templar, &text, &context) =>
                {
                    changed = true;
                    resolved.insert(name.clone(), unresolved::template_value(&rendered));
                    names.push(name.clone());
                    let entry = unresolved::partial_entry(&text, &error);
                    still_partial.push((name, minijinja::Value::from_serialize(&entry)));
                }
                // Still undefined (or failing): the task fails where it uses it.
                Err(_) => still.push((name, text, shown)),
            }
        }
        pending = still;
        if !changed || pending.is_empty() {
            break;
        }
    }
    // Those still unresolved keep their errors; the others are no longer listed.
    let listed: std::collections::BTreeMap<String, minijinja::Value> = pending
        .iter()
        .filter_map(|(name, _, _)| {
            let entry = base.get_attr(UNRESOLVED_VARS).ok()?.get_attr(name).ok()?;
            Some((name.clone(), entry))
        })
        .chain(still_partial)
        .collect();
    resolved.insert(UNRESOLVED_VARS.into(), minijinja::Value::from(listed));
    minijinja::context! { ..minijinja::Value::from(resolved), ..base.clone() }
}

/// `value` (a dict or list) rendered leaf by leaf: a leaf whose template names an
/// undefined variable becomes undefined ([`unresolved::undefined_value`]); the first such
/// error comes with it. Any other failure is the value's.
fn render_leaves(
    templar: &Templar,
    value: &Value,
    context: &minijinja::Value,
) -> Result<(Value, TemplateError), TemplateError> {
    let mut first = None;
    let rendered = render_leaf(templar, value, context, &mut first)?;
    match first {
        Some(error) => Ok((rendered, error)),
        // Every leaf rendered alone: what failed needs the whole (a key's template).
        None => templar.render_value(value, context).map(|v| {
            let error = TemplateError::Undefined {
                name: String::new(),
                expr: String::new(),
                missing: None,
            };
            (v, error)
        }),
    }
}

fn render_leaf(
    templar: &Templar,
    value: &Value,
    context: &minijinja::Value,
    first: &mut Option<TemplateError>,
) -> Result<Value, TemplateError> {
    match value {
        Value::Array(items) => items
            .iter()
            .map(|v| render_leaf(templar, v, context, first))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                let key = match templar.render_value(&Value::from(k.clone()), context)? {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                out.insert(key, render_leaf(templar, v, context, first)?);
            }
            Ok(Value::Object(out))
        }
        leaf => match templar.render_value(leaf, context) {
            Err(e @ TemplateError::Undefined { .. }) => {
                let why = e.to_string();
                first.get_or_insert(e);
                Ok(unresolved::undefined_value(&why))
            }
            other => other,
        },
    }
}

fn holds_template(value: &Value) -> bool {
    match value {
        Value::String(s) => is_template(s),
        Value::Array(items) => items.iter().any(holds_template),
        Value::Object(map) => map.values().any(holds_template),
        _ => false,
    }
}

/// Ansible's `ansible_search_path`, where lookups and `first_found` look for relative
/// names: the task's role, the directory of the file the task is written in, then the
/// playbook's directory.
fn search_path(playbook: &Playbook, task: &Task) -> Vec<String> {
    let task_dir = task
        .location
        .file
        .parent()
        .map(|dir| playbook.dir.join(dir))
        .filter(|dir| !dir.as_os_str().is_empty());
    let mut dirs: Vec<String> = Vec::new();
    let candidates = task.role.iter().map(|role| role.path.clone());
    for dir in candidates.chain(task_dir).chain([playbook.dir.clone()]) {
        // Absolute, as Ansible's: a lookup may run with another working directory.
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        let text = dir.display().to_string();
        let text = match text.trim_end_matches('/') {
            "" => "/".to_string(),
            trimmed => trimmed.to_string(),
        };
        if !dirs.contains(&text) {
            dirs.push(text);
        }
    }
    dirs
}

fn magic_vars(
    ctx: &RunContext,
    playbook: &Playbook,
    host: &HostState,
    play_hosts: &PlayHosts,
) -> Map<String, Value> {
    let (groups, group_names) = {
        let runtime = ctx.runtime.lock().expect("runtime lock");
        if runtime.is_empty() {
            (
                ctx.inventory().groups_var().clone(),
                ctx.inventory().group_names(&host.name),
            )
        } else {
            (
                ctx.inventory()
                    .groups_in_order(&runtime.groups(&ctx.inventory())),
                runtime.group_names(&ctx.inventory(), &host.name),
            )
        }
    };
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
        ("groups", groups),
        ("ansible_version", super::hostvars::ansible_version()),
        ("ansible_playbook_python", Value::from(controller_python())),
        (
            "playbook_dir",
            Value::from(playbook.dir.display().to_string()),
        ),
        ("ansible_check_mode", Value::from(ctx.opts.check)),
        ("ansible_diff_mode", Value::from(ctx.opts.diff)),
        ("ansible_verbosity", Value::from(ctx.opts.verbosity)),
        ("ansible_forks", Value::from(ctx.opts.forks)),
        (
            "ansible_run_tags",
            Value::from(ctx.opts.tags.only.iter().cloned().collect::<Vec<_>>()),
        ),
        (
            "ansible_skip_tags",
            Value::from(ctx.opts.tags.skip.iter().cloned().collect::<Vec<_>>()),
        ),
        ("omit", Value::from(OMIT)),
    ];
    magic
        .into_iter()
        .chain(play_hosts.magic())
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// What Ansible's connection layer adds to a task's variables when the host leaves them
/// unset: `ansible_host`, the address connected to (the `ansible_ssh_host` alias, else
/// the inventory name, `127.0.0.1` for the implicit localhost), and for the implicit
/// localhost the controller's Python as `ansible_python_interpreter`.
fn connection_defaults(ctx: &RunContext, host: &HostState, vars: &mut Map<String, Value>) {
    let implicit = !ctx.inventory().hosts().any(|h| h.name == host.name);
    if !vars.contains_key("ansible_host") {
        let address = match vars.get("ansible_ssh_host") {
            Some(alias) => alias.clone(),
            None if implicit => Value::from("127.0.0.1"),
            None => Value::from(host.name.clone()),
        };
        vars.insert("ansible_host".into(), address);
    }
    if implicit && !vars.contains_key("ansible_python_interpreter") {
        vars.insert(
            "ansible_python_interpreter".into(),
            Value::from(controller_python()),
        );
    }
}

/// The controller's Python, `ansible_playbook_python`: Ansible's is the interpreter it
/// runs in; turbo-play has none, so it is the first `python3` on PATH.
pub fn controller_python() -> &'static str {
    static FOUND: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    FOUND.get_or_init(|| {
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join("python3"))
            .find(|candidate| candidate.is_file())
            .map_or_else(|| "/usr/bin/python3".into(), |p| p.display().to_string())
    })
}

/// One layer over those below it, as `hash_behaviour` says.
fn extend(into: &mut Map<String, Value>, from: &Map<String, Value>) {
    crate::hash_merge::combine(into, from);
}

/// Drops arguments whose value is the omit placeholder (after templating).
pub fn strip_omitted(args: &mut Map<String, Value>) {
    args.retain(|_, v| v.as_str() != Some(OMIT));
}

/// The play's role names as Ansible's magic variables give them: the roles the play names
/// (`roles:`, imports and public includes), those reached as dependencies, and both.
fn add_role_names<'a>(
    vars: &mut Map<String, Value>,
    roles: impl Iterator<Item = &'a std::sync::Arc<crate::playbook::RoleInfo>>,
) {
    let (mut named, mut dependent): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for role in roles {
        let list = if role.dependency {
            &mut dependent
        } else {
            &mut named
        };
        if !list.contains(&role.name) {
            list.push(role.name.clone());
        }
    }
    let mut all = named.clone();
    all.extend(dependent.iter().filter(|n| !named.contains(n)).cloned());
    vars.insert("role_names".into(), Value::from(named.clone()));
    vars.insert("ansible_play_role_names".into(), Value::from(named));
    vars.insert(
        "ansible_dependent_role_names".into(),
        Value::from(dependent),
    );
    vars.insert("ansible_role_names".into(), Value::from(all));
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;

    /// ansible-playbook 2.21 with `serial: 2` over h1..h5, h2 failed in the first batch
    /// and h4 ended by `meta: end_host`: `ansible_play_hosts` keeps the hosts of every
    /// batch still in the play, `ansible_play_batch` (and `play_hosts`) those of this one.
    #[test]
    fn play_host_lists_follow_batches_failures_and_ended_hosts() {
        let hosts: Vec<Arc<HostState>> = ["h1", "h2", "h3", "h4", "h5"]
            .iter()
            .map(|n| Arc::new(HostState::new(n)))
            .collect();
        hosts[1].out.store(true, Ordering::SeqCst);
        hosts[3].flow.lock().unwrap().end_host_for_tests();
        let lists = PlayHosts {
            all: hosts.iter().cloned().collect(),
            batch: hosts[2..4].iter().cloned().collect(),
        }
        .magic();
        let get = |name: &str| lists.iter().find(|(k, _)| *k == name).unwrap().1.clone();
        assert_eq!(
            get("ansible_play_hosts_all"),
            serde_json::json!(["h1", "h2", "h3", "h4", "h5"])
        );
        assert_eq!(
            get("ansible_play_hosts"),
            serde_json::json!(["h1", "h3", "h5"])
        );
        assert_eq!(get("ansible_play_batch"), serde_json::json!(["h3"]));
        assert_eq!(get("play_hosts"), serde_json::json!(["h3"]));
    }

    /// A variable whose lookup fails is reported as broken (and so fails where it is
    /// used); one that names what is undefined here (a loop's `item`, or another such
    /// variable) is reported with the error of the undefined name at the end of its
    /// chain; one that failed only until the variable it reads was resolved is neither.
    #[test]
    fn nested_templates_report_lasting_failures_only() {
        let templar = Templar::new();
        let mut vars: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "broken": "{{ lookup('dict', 1) }}",
            "chained": "x{{ later }}",
            "later": "{{ item }}",
            "parsed": "{{ text | from_json }}",
            "text": "{{ raw | to_json }}",
            "raw": {"a": 1},
        }))
        .unwrap();
        let pending = vec![
            "broken".into(),
            "chained".into(),
            "later".into(),
            "parsed".into(),
            "text".into(),
        ];
        let unresolved =
            resolve_nested_templates(&templar, &mut vars, pending, &minijinja::Value::UNDEFINED);
        let broken = unresolved.broken;
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert_eq!(broken[0].0, "broken");
        assert!(
            broken[0]
                .1
                .contains("the 'dict' lookup plugin expects a dictionary")
        );
        let undefined: Vec<(String, String)> = unresolved
            .undefined
            .iter()
            .map(|(name, e)| (name.clone(), e.to_string()))
            .collect();
        assert_eq!(
            undefined,
            [
                ("chained".to_string(), "'item' is undefined".to_string()),
                ("later".to_string(), "'item' is undefined".to_string())
            ]
        );
        assert_eq!(vars["parsed"], serde_json::json!({"a": 1}));
        // Left as written: the first pass saw `later` as its text.
        assert_eq!(vars["later"], serde_json::json!("{{ item }}"));
        assert_eq!(vars["chained"], serde_json::json!("x{{ later }}"));
    }

    /// A variable whose template reads a broken one is broken with the same error (it does
    /// not keep the broken one's text), as Ansible's lazy templating fails it.
    #[test]
    fn a_variable_reading_a_broken_one_is_broken_too() {
        let templar = Templar::new();
        let mut vars: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "broken": "{{ lookup('dict', 1) }}",
            "holder": {"fine": 1, "bang": "{{ broken }}"},
        }))
        .unwrap();
        let pending = vec!["broken".into(), "holder".into()];
        let broken =
            resolve_nested_templates(&templar, &mut vars, pending, &minijinja::Value::UNDEFINED)
                .broken;
        let names: Vec<&str> = broken.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["broken", "holder"], "{broken:?}");
        assert!(
            broken[1]
                .1
                .contains("the 'dict' lookup plugin expects a dictionary")
        );
    }

    /// ansible-playbook 2.21: a dict or list variable whose leaf names an undefined
    /// variable stays a dict or list, that leaf undefined and its other values rendered;
    /// a variable reading the leaf is undefined with the leaf's error.
    #[test]
    fn a_dict_with_an_undefined_leaf_keeps_its_other_values() {
        let templar = Templar::new();
        let mut vars: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "a_dict": {"a_key": "{{ not_defined }}", "b_key": "{{ five }}"},
            "a_list": [1, "{{ not_defined }}"],
            "reader": "{{ a_dict.a_key }}",
            "five": 5,
        }))
        .unwrap();
        let pending = vec!["a_dict".into(), "a_list".into(), "reader".into()];
        let unresolved =
            resolve_nested_templates(&templar, &mut vars, pending, &minijinja::Value::UNDEFINED);
        let why = unresolved::undefined_value("'not_defined' is undefined");
        assert_eq!(
            vars["a_dict"],
            serde_json::json!({"a_key": why.clone(), "b_key": 5})
        );
        assert_eq!(vars["a_list"], serde_json::json!([1, why]));
        let partial: Vec<(&str, String)> = unresolved
            .partial
            .iter()
            .map(|(name, _, e)| (name.as_str(), e.to_string()))
            .collect();
        let expected = "'not_defined' is undefined".to_string();
        assert_eq!(
            partial,
            [("a_dict", expected.clone()), ("a_list", expected.clone())]
        );
        let undefined: Vec<(&str, String)> = unresolved
            .undefined
            .iter()
            .map(|(name, e)| (name.as_str(), e.to_string()))
            .collect();
        assert_eq!(undefined, [("reader", expected)]);
        let seen = unresolved::template_vars(&vars);
        let a_dict = seen.get_attr("a_dict").unwrap();
        assert!(a_dict.get_attr("a_key").unwrap().is_undefined());
        assert_eq!(a_dict.get_attr("b_key").unwrap(), minijinja::Value::from(5));
    }

    #[test]
    fn the_controllers_python_is_a_python3() {
        assert!(controller_python().ends_with("python3"));
    }
}
