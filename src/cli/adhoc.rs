//! Ansible's `ansible` command: one module run on the hosts of a pattern, as a play of
//! one task without facts (what Ansible itself builds), through the same executor as a
//! playbook, shown by the minimal (or `-o` oneline) callback.

use std::path::PathBuf;

use clap::{ArgAction, Parser};
use serde_json::{Value, json};

use super::launch::{self, EXIT_BAD_OPTIONS, EXIT_ERROR, EXIT_PARSE_ERROR, Ended, Failure};
use super::{
    CheckArgs, ConnectArgs, ForkArgs, InventoryArgs, RunasArgs, VaultArgs, parse_extra_vars,
};
use crate::inventory::Inventory;
use crate::report::events::Event;
use crate::report::minimal::{AdhocReporter, Shape};

#[derive(Debug, Parser)]
#[command(
    name = "ansible",
    version,
    about = "Define and run a single task 'playbook' against a set of hosts",
    after_help = "Some actions do not make sense in Ad-Hoc (include, meta, etc)"
)]
pub struct AdhocCli {
    /// Host pattern.
    #[arg(value_name = "pattern")]
    pub pattern: String,

    /// Name of the action to execute.
    #[arg(
        short = 'm',
        long = "module-name",
        value_name = "MODULE_NAME",
        default_value = "command"
    )]
    pub module_name: String,

    /// The action's options in space separated k=v format (`-a 'opt1=val1 opt2=val2'`) or
    /// a JSON string (`-a '{"opt1": "val1"}'`).
    #[arg(
        short = 'a',
        long = "args",
        value_name = "MODULE_ARGS",
        allow_hyphen_values = true
    )]
    pub module_args: Option<String>,

    #[command(flatten)]
    pub inventory: InventoryArgs,

    /// Set additional variables as key=value or YAML/JSON, if filename prepend with @.
    #[arg(short = 'e', long = "extra-vars", value_name = "EXTRA_VARS")]
    pub extra_vars: Vec<String>,

    /// Outputs a list of matching hosts; does not execute anything else.
    #[arg(long = "list-hosts")]
    pub list_hosts: bool,

    /// Condense output (Ansible's oneline callback).
    #[arg(short = 'o', long = "one-line")]
    pub one_line: bool,

    /// Log output to this directory: each host's result in a file named after it.
    #[arg(short = 't', long = "tree", value_name = "TREE")]
    pub tree: Option<PathBuf>,

    /// Run asynchronously, failing after this many seconds.
    #[arg(short = 'B', long = "background", value_name = "SECONDS")]
    pub background: Option<u64>,

    /// The poll interval if using -B (default 15).
    #[arg(short = 'P', long = "poll", value_name = "POLL_INTERVAL")]
    pub poll: Option<u64>,

    /// Task timeout limit in seconds.
    #[arg(long = "task-timeout", value_name = "TASK_TIMEOUT")]
    pub task_timeout: Option<u64>,

    /// Use this as the playbook directory (relative paths, group_vars/, host_vars/).
    #[arg(long = "playbook-dir", value_name = "BASEDIR")]
    pub playbook_dir: Option<PathBuf>,

    /// Prepend colon-separated path(s) to the module library.
    #[arg(short = 'M', long = "module-path", value_name = "MODULE_PATH")]
    pub module_path: Vec<String>,

    #[command(flatten)]
    pub forks: ForkArgs,

    #[command(flatten)]
    pub connect: ConnectArgs,

    #[command(flatten)]
    pub check: CheckArgs,

    #[command(flatten)]
    pub runas: RunasArgs,

    #[command(flatten)]
    pub vault: VaultArgs,

    /// More output (-vvv also shows the module's invocation).
    #[arg(short = 'v', long = "verbose", action = ArgAction::Count)]
    pub verbose: u8,
}

/// Modules Ansible refuses to run without arguments (`C.MODULE_REQUIRE_ARGS`).
const REQUIRE_ARGS: &[&str] = &[
    "command",
    "raw",
    "script",
    "shell",
    "win_command",
    "win_shell",
    "ansible.builtin.command",
    "ansible.builtin.raw",
    "ansible.builtin.script",
    "ansible.builtin.shell",
    "ansible.legacy.command",
    "ansible.legacy.raw",
    "ansible.legacy.script",
    "ansible.legacy.shell",
    "ansible.windows.win_command",
    "ansible.windows.win_shell",
];

pub fn run(cli: AdhocCli) -> Result<u8, Failure> {
    let mut config = launch::load_config(&cli.vault)?;
    for dirs in &cli.module_path {
        let prepended = dirs.split(':').filter(|d| !d.is_empty()).map(PathBuf::from);
        let mut library: Vec<PathBuf> = prepended.collect();
        library.append(&mut config.library);
        config.library = library;
    }
    launch::show_config_file(&config, cli.verbose);
    let extra_vars =
        parse_extra_vars(&cli.extra_vars).map_err(|e| (e.exit_code(), e.to_string()))?;
    let inventory = launch::load_inventory(&cli.inventory, &config)?;
    for warning in inventory.warnings() {
        config.warnings.push(warning.clone());
    }
    let (hosts, unmatched) = host_list(&inventory, &cli.pattern, cli.inventory.limit.as_deref())?;
    let stopping_early = cli.list_hosts || hosts.is_empty();
    if stopping_early {
        for warning in &config.warnings {
            eprintln!("[WARNING]: {warning}");
        }
        for pattern in &unmatched {
            eprintln!("[WARNING]: Could not match supplied host pattern, ignoring: {pattern}");
        }
    }
    if hosts.is_empty() && inventory.hosts().next().is_some() {
        if cli.inventory.limit.is_some() {
            return Err((
                EXIT_ERROR,
                "Specified inventory, host pattern and/or --limit leaves us with no hosts to target.".into(),
            ));
        }
        eprintln!("[WARNING]: No hosts matched, nothing to do");
    }
    if cli.list_hosts {
        println!("  hosts ({}):", hosts.len());
        for host in &hosts {
            println!("    {host}");
        }
        return Ok(0);
    }
    let module = cli.module_name.as_str();
    let raw_args = cli.module_args.clone().unwrap_or_default();
    if REQUIRE_ARGS.contains(&module) && raw_args.is_empty() {
        let mut message = format!("No argument passed to {module} module");
        if cli.pattern.ends_with(".yml") {
            message.push_str(" (did you mean to run ansible-playbook?)");
        }
        return Err((EXIT_BAD_OPTIONS, message));
    }
    if matches!(
        module,
        "import_playbook" | "ansible.builtin.import_playbook" | "ansible.legacy.import_playbook"
    ) {
        return Err((
            EXIT_BAD_OPTIONS,
            format!("'{module}' is not a valid action for ad-hoc commands"),
        ));
    }
    if hosts.is_empty() {
        return Ok(0);
    }

    let base_dir = match &cli.playbook_dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|e| (EXIT_ERROR, format!("the current directory: {e}")))?,
    };
    let text = play_text(&cli.pattern, module, &raw_args, &cli);
    let options = launch::load_options(&config);
    let playbooks =
        crate::playbook::load_playbooks_text(&base_dir.join("__adhoc_playbook__"), &text, &options)
            .map_err(|e| (EXIT_PARSE_ERROR, e.to_string()))?;
    for playbook in &playbooks {
        inventory
            .load_vars_dirs(&playbook.dir)
            .map_err(|e| (EXIT_PARSE_ERROR, e.to_string()))?;
    }

    let flags = launch::RunFlags {
        forks: &cli.forks,
        check: &cli.check,
        inventory: &cli.inventory,
        connect: &cli.connect,
        runas: &cli.runas,
        verbosity: cli.verbose,
    };
    let opts = crate::executor::RunOptions {
        plugins: options.plugins.clone(),
        ..launch::run_options(&config, flags, extra_vars)?
    };
    let task_repr = task_repr(module, &raw_args, &cli);
    let shape = if cli.one_line {
        Shape::OneLine
    } else {
        Shape::Minimal
    };
    let verbosity = cli.verbose;
    let module = module.to_string();
    let tree = cli.tree.clone();
    let deprecation_warnings = config.deprecation_warnings.unwrap_or(true);
    let report = move |mut rx: tokio::sync::mpsc::UnboundedReceiver<Event>| {
        let mut reporter = AdhocReporter::stdout(verbosity, shape, &module)
            .with_task_repr(task_repr)
            .with_tree(tree.clone())
            .with_deprecation_warnings(deprecation_warnings);
        if shape == Shape::OneLine {
            reporter.deprecated("The '-o' argument is deprecated. This feature will be removed from ansible-core version 2.23. Use callback configuration to enable the oneline callback instead.");
            reporter.deprecated("oneline has been deprecated. Use another callback plugin, or vendor and/or move the oneline callback to a collection. This feature will be removed from ansible-core version 2.23.\nOrigin: <unknown>\n\noneline");
        }
        if tree.is_some() {
            reporter.deprecated("The '-t' argument is deprecated. This feature will be removed from ansible-core version 2.23. Use callback configuration to enable the tree callback instead.");
            reporter.deprecated("tree has been deprecated. Use another callback plugin, or vendor and/or move the tree callback to a collection. This feature will be removed from ansible-core version 2.23.\nOrigin: <unknown>\n\ntree");
        }
        while let Some(event) = rx.blocking_recv() {
            reporter.handle(&event);
        }
    };
    match launch::execute(playbooks, inventory, opts, config.warnings, report)? {
        Ended::Finished(summary) => Ok(summary.exit_code() as u8),
        Ended::Stopped(code) => Ok(code),
    }
}

/// Ansible's `get_host_list`: the pattern's hosts within `--limit`, and the parts of
/// either that matched nothing.
fn host_list(
    inventory: &Inventory,
    pattern: &str,
    limit: Option<&str>,
) -> Result<(Vec<String>, Vec<String>), Failure> {
    let selection = inventory
        .select_reporting(pattern)
        .map_err(|e| (EXIT_ERROR, e.to_string()))?;
    let mut unmatched = selection.unmatched;
    let mut hosts = selection.hosts;
    if let Some(limit) = limit {
        let limited = inventory
            .limit_reporting(hosts, limit)
            .map_err(|e| (EXIT_ERROR, e.to_string()))?;
        hosts = limited.hosts;
        unmatched.extend(limited.unmatched);
    }
    Ok((hosts, unmatched))
}

/// The play Ansible's `_play_ds` builds, as playbook text: `-a` as a JSON object when it
/// is one, else the module's free-form or `k=v` string, parsed as a task's would be.
fn play_text(pattern: &str, module: &str, raw_args: &str, cli: &AdhocCli) -> String {
    let args = if raw_args.starts_with('{') && raw_args.ends_with('}') {
        match serde_json::from_str::<Value>(raw_args) {
            Ok(Value::Object(map)) if !map.is_empty() => Value::Object(map),
            _ => Value::String(raw_args.to_string()),
        }
    } else if raw_args.is_empty() {
        Value::Null
    } else {
        Value::String(raw_args.to_string())
    };
    let mut task = serde_json::Map::new();
    task.insert(module.to_string(), args);
    if let Some(timeout) = cli.task_timeout.filter(|t| *t > 0) {
        task.insert("timeout".into(), json!(timeout));
    }
    if let Some(seconds) = cli.background.filter(|s| *s > 0) {
        task.insert("async".into(), json!(seconds));
        task.insert("poll".into(), json!(cli.poll.unwrap_or(15)));
    }
    let play = json!([{
        "name": "Ansible Ad-Hoc",
        "hosts": pattern,
        "gather_facts": false,
        "tasks": [Value::Object(task)],
    }]);
    play.to_string()
}

/// The task as Ansible's error block shows it: its data after `_play_ds`, as Python's
/// `repr` of the dict (`-a` parsed as `parse_kv` parses it, free-form for the modules that
/// require arguments).
fn task_repr(module: &str, raw_args: &str, cli: &AdhocCli) -> String {
    let mut args = serde_json::Map::new();
    let json_object = raw_args.starts_with('{') && raw_args.ends_with('}');
    match serde_json::from_str::<Value>(raw_args) {
        Ok(Value::Object(map)) if json_object && !map.is_empty() => args = map,
        _ => {
            let free_form = REQUIRE_ARGS.contains(&module);
            let only = free_form.then_some(crate::kv_args::FREE_FORM_OPTIONS);
            let parsed = crate::kv_args::parse_kv(raw_args, only);
            for (key, value) in parsed.pairs {
                args.insert(key, Value::String(value));
            }
            if !parsed.raw.is_empty() {
                args.insert("_raw_params".into(), Value::String(parsed.raw));
            }
        }
    }
    let task = json!({
        "action": module,
        "args": args,
        "timeout": cli.task_timeout.unwrap_or(0),
        "async_val": cli.background.unwrap_or(0),
        "poll": cli.poll.unwrap_or(15),
    });
    crate::template::python_repr_of(&minijinja::Value::from_serialize(&task))
}
