//! What every command of the binary does the same way before and around a run: the exit
//! codes, the vault secrets, passwords and become settings from the command line over
//! ansible.cfg, the inventory, and the runtime with its one reporter and its signals.

use std::time::Duration;

use super::{CheckArgs, ConnectArgs, ForkArgs, InventoryArgs, RunasArgs, VaultArgs};
use crate::config::Config;
use crate::connection::ConnectionDefaults;
use crate::executor::{BecomeDefaults, RunOptions, RunSummary, run_playbooks_until};
use crate::inventory::Inventory;
use crate::playbook::{LoadOptions, Playbook};
use crate::report::events::Event;

/// Ansible's exit codes.
pub const EXIT_ERROR: u8 = 1;
pub const EXIT_PARSE_ERROR: u8 = 4;
pub const EXIT_BAD_OPTIONS: u8 = 5;
/// Ctrl-C: Ansible's "User interrupted execution".
pub const EXIT_INTERRUPTED: u8 = 99;
/// SIGTERM: what ansible-playbook's exit looks like to its parent (killed by signal 15).
pub const EXIT_TERMINATED: u8 = 128 + 15;

/// `forks` when neither a flag, the environment nor ansible.cfg sets it. Not Ansible's 5:
/// a host costs turbo-play a connection and a task that mostly waits on the network, not
/// a Python process, and 5 at a time leaves the controller idle on a fleet.
pub const DEFAULT_FORKS: usize = 50;

/// A command's failure: its exit code and the message after `ERROR! `.
pub type Failure = (u8, String);

/// ansible.cfg and the environment, with the vault secrets installed before anything is
/// read (`-e @file`, inventories and playbooks may be encrypted too).
pub fn load_config(vault: &VaultArgs) -> Result<Config, Failure> {
    let mut config = Config::load().map_err(|e| (EXIT_BAD_OPTIONS, e.to_string()))?;
    let vault_warnings =
        install_vault_secrets(vault, &config.vault).map_err(|e| (EXIT_ERROR, e))?;
    config.warnings.extend(vault_warnings);
    if let Some(policy) = config.duplicate_dict_key.as_deref() {
        let policy = crate::yaml::DuplicateKeys::parse(policy).ok_or_else(|| {
            (
                EXIT_BAD_OPTIONS,
                format!(
                    "Invalid value '{policy}' for DUPLICATE_YAML_DICT_KEY: use warn, error or ignore"
                ),
            )
        })?;
        policy.install();
    }
    crate::hash_merge::set_merge(config.hash_merge);
    crate::playbook::set_validate_group_metadata(
        config.validate_action_group_metadata.unwrap_or(true),
    );
    crate::modules::set_inject_invocation(config.inject_invocation);
    Ok(config)
}

/// `--version` under Ansible's names, in the shape of Ansible's: the ansible-core release
/// whose behaviour this binary follows, then where it reads its configuration and modules.
pub fn version_text(prog: &str, executable: &str) -> String {
    let config = Config::load().ok();
    let file = config
        .as_ref()
        .and_then(|c| c.file.as_ref())
        .map_or("None".to_string(), |f| f.display().to_string());
    let options = config.as_ref().map(load_options).unwrap_or_default();
    let quoted: Vec<String> = options
        .library
        .iter()
        .map(|p| format!("'{}'", p.display()))
        .collect();
    let collections: Vec<String> = options
        .collections_path
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    format!(
        "{prog} [core 2.21.5] (turbo-play {})\n  config file = {file}\n  configured module search path = [{}]\n  ansible collection location = {}\n  executable location = {executable}\n",
        env!("CARGO_PKG_VERSION"),
        quoted.join(", "),
        collections.join(":"),
    )
}

/// What Ansible's commands print first at `-v`: which ansible.cfg they read.
pub fn show_config_file(config: &Config, verbosity: u8) {
    if verbosity == 0 {
        return;
    }
    match &config.file {
        Some(file) => println!("Using {} as config file", file.display()),
        None => println!("No config file found; using defaults"),
    }
}

/// The `-i` sources (a flag beats the environment and ansible.cfg, which Config has
/// already layered), loaded.
pub fn load_inventory(args: &InventoryArgs, config: &Config) -> Result<Inventory, Failure> {
    let sources = if args.inventory.is_empty() {
        config.inventory.clone()
    } else {
        args.inventory.clone()
    };
    Inventory::load(&sources).map_err(|e| (EXIT_PARSE_ERROR, e.to_string()))
}

/// Where playbooks find roles, collections and modules: ansible.cfg's paths, else Ansible's
/// defaults.
pub fn load_options(config: &Config) -> LoadOptions {
    let home = crate::tilde::home_dir();
    LoadOptions {
        roles_path: if config.roles_path.is_empty() {
            LoadOptions::default_roles_path(home.as_deref())
        } else {
            config.roles_path.clone()
        },
        collections_path: if config.collections_path.is_empty() {
            crate::playbook::default_collections_path(home.as_deref())
        } else {
            config.collections_path.clone()
        },
        library: config.library.clone(),
        module_utils: config.module_utils.clone(),
        default_strategy: config.strategy.clone(),
        plugins: std::sync::Arc::new(crate::plugins::Catalog::new(&plugin_paths(config))),
        default_no_log: config.no_log,
    }
}

/// The configured directories of Python plugins, each kind's Ansible's default when
/// ansible.cfg and the environment name none.
fn plugin_paths(config: &Config) -> crate::plugins::ConfiguredPaths {
    let defaults = crate::plugins::ConfiguredPaths::defaults(crate::tilde::home_dir().as_deref());
    let or_default = |set: &Vec<std::path::PathBuf>, default: Vec<std::path::PathBuf>| {
        if set.is_empty() { default } else { set.clone() }
    };
    crate::plugins::ConfiguredPaths {
        filter: or_default(&config.filter_plugins, defaults.filter),
        test: or_default(&config.test_plugins, defaults.test),
        lookup: or_default(&config.lookup_plugins, defaults.lookup),
        action: or_default(&config.action_plugins, defaults.action),
    }
}

/// The connection settings of the command line over ansible.cfg's.
pub fn connection_defaults(
    connect: &ConnectArgs,
    config: &Config,
) -> Result<ConnectionDefaults, Failure> {
    Ok(ConnectionDefaults {
        remote_user: connect.user.clone().or(config.remote_user.clone()),
        private_key: connect
            .private_key
            .clone()
            .or(config.private_key_file.clone()),
        host_key_checking: config.host_key_checking,
        timeout: connect.timeout.or(config.timeout).map(Duration::from_secs),
        ssh_args: config.ssh_args.clone(),
        ssh_common_args: connect.ssh_common_args.clone(),
        ssh_extra_args: connect.ssh_extra_args.clone(),
        ssh_config: None,
        password: connection_password(connect)?,
        retries: config.ssh_retries,
    })
}

/// The flags every running command has, for [`run_options`].
pub struct RunFlags<'a> {
    pub forks: &'a ForkArgs,
    pub check: &'a CheckArgs,
    pub inventory: &'a InventoryArgs,
    pub connect: &'a ConnectArgs,
    pub runas: &'a RunasArgs,
    pub verbosity: u8,
}

/// The run's options that every command sets the same way, from its flags over
/// ansible.cfg; a playbook adds its tags, slice and the like.
pub fn run_options(
    config: &Config,
    flags: RunFlags,
    extra_vars: serde_json::Map<String, serde_json::Value>,
) -> Result<RunOptions, Failure> {
    Ok(RunOptions {
        forks: flags
            .forks
            .forks
            .or(config.forks)
            .unwrap_or(DEFAULT_FORKS)
            .max(1),
        check: flags.check.check,
        diff: flags.check.diff,
        limit: flags.inventory.limit.clone(),
        extra_vars,
        connection_defaults: connection_defaults(flags.connect, config)?,
        roles_path: config.roles_path.clone(),
        connection: flags.connect.connection.clone(),
        ansible_managed: config.ansible_managed.clone(),
        chains: config.chains.unwrap_or(true),
        gathering: config.gathering,
        facts_modules: config.facts_modules.clone(),
        load_options: load_options(config),
        become_defaults: become_defaults(flags.runas, &config.become_)?,
        verbosity: flags.verbosity,
        ..RunOptions::default()
    })
}

/// How a run ended: its summary, or the exit code of the signal that stopped it.
pub enum Ended {
    Finished(RunSummary),
    Stopped(u8),
}

/// Runs the playbooks on a runtime of its own, every event going to `report`, which runs
/// on a thread of its own until the last event. The first SIGINT or SIGTERM stops the run
/// (its agents cancelled, what finished reported); a second one exits at once.
pub fn execute(
    playbooks: Vec<Playbook>,
    inventory: Inventory,
    opts: RunOptions,
    warnings: Vec<String>,
    report: impl FnOnce(tokio::sync::mpsc::UnboundedReceiver<Event>) + Send + 'static,
) -> Result<Ended, Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| (EXIT_ERROR, format!("starting the async runtime: {e}")))?;
    let stopped_by = std::sync::atomic::AtomicU8::new(EXIT_INTERRUPTED);
    let summary = runtime.block_on(async {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        // One reporter owns the terminal; it drains the channel until every sender is gone.
        let reporter = tokio::task::spawn_blocking(move || report(rx));
        for warning in warnings {
            let _ = tx.send(Event::Warning(warning));
        }
        for deprecation in crate::yaml::take_load_deprecations() {
            let _ = tx.send(Event::Deprecation(deprecation));
        }
        let summary =
            run_playbooks_until(playbooks, inventory, opts, tx, interrupt(&stopped_by)).await;
        let _ = reporter.await;
        summary
    });
    if summary.interrupted {
        return Ok(Ended::Stopped(
            stopped_by.load(std::sync::atomic::Ordering::SeqCst),
        ));
    }
    Ok(Ended::Finished(summary))
}

/// Completes at the first SIGINT or SIGTERM, noting which in `stopped_by`; the run then
/// stops its agents and shows the recap. A second one exits at once.
async fn interrupt(stopped_by: &std::sync::atomic::AtomicU8) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        // Without handlers the signals keep their default: the run can only be killed.
        return std::future::pending().await;
    };
    let code = tokio::select! {
        _ = int.recv() => {
            eprintln!("[ERROR]: User interrupted execution");
            EXIT_INTERRUPTED
        }
        _ = term.recv() => EXIT_TERMINATED,
    };
    stopped_by.store(code, std::sync::atomic::Ordering::SeqCst);
    tokio::spawn(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        std::process::exit(i32::from(code));
    });
}

/// `--vault-id`, `--vault-password-file` and `-J` over ansible.cfg's vault settings: the
/// secrets every encrypted file and `!vault` value of the run is opened with. Returns
/// the warnings for sources that failed while another worked.
fn install_vault_secrets(
    args: &VaultArgs,
    config: &crate::config::VaultConfig,
) -> Result<Vec<String>, String> {
    use crate::become_password::{Hidden, ask_hidden};
    let mut password_files = args.vault_password_files.clone();
    password_files.extend(config.password_file.clone());
    let sources = crate::vault::SecretSources {
        identity_list: config.identity_list.clone(),
        vault_ids: args.vault_ids.clone(),
        password_files,
        ask_vault_pass: args.ask_vault_pass || config.ask_vault_pass == Some(true),
        default_id: config.identity.clone(),
        id_match: config.id_match == Some(true),
    };
    if sources.is_empty() {
        return Ok(Vec::new());
    }
    let (vault, warnings) = sources.load(&mut |text: &str| {
        ask_hidden(text).map_err(|e| match e {
            Hidden::NoTerminal(e) => format!(
                "asking for the vault password needs a terminal ({e}); use --vault-password-file or --vault-id label@file"
            ),
            Hidden::Read(e) => format!("reading the vault password: {e}"),
        })
    })?;
    crate::vault::install(vault);
    Ok(warnings)
}

/// `-k` (asked once, without echo) or `--connection-password-file`: the SSH login
/// password for hosts that set no `ansible_password`.
fn connection_password(args: &ConnectArgs) -> Result<Option<crate::connection::Secret>, Failure> {
    use crate::become_password::{ask_hidden, read_password_file};
    let password = if args.ask_pass {
        Some(ask_hidden("SSH password: ").map_err(|e| {
            (EXIT_BAD_OPTIONS, format!("-k needs a terminal to ask for the SSH password ({e}); use --connection-password-file or ansible_password"))
        })?)
    } else if let Some(file) = &args.connection_password_file {
        Some(read_password_file(file, "connection").map_err(|e| (EXIT_ERROR, e))?)
    } else {
        None
    };
    Ok(password.map(crate::connection::Secret))
}

/// `-b`, `--become-user`, `--become-method`, `-K`, `--become-password-file` over
/// ansible.cfg's `[privilege_escalation]`.
pub fn become_defaults(
    args: &RunasArgs,
    config: &crate::config::BecomeConfig,
) -> Result<BecomeDefaults, Failure> {
    let password = if args.ask_become_pass || (config.ask_pass == Some(true)) {
        Some(crate::become_password::prompt().map_err(|e| (EXIT_BAD_OPTIONS, e))?)
    } else if let Some(file) = args
        .become_password_file
        .as_ref()
        .or(config.password_file.as_ref())
    {
        // A file Ansible cannot read is its `AnsibleError`, not an options error.
        Some(crate::become_password::from_file(file).map_err(|e| (EXIT_ERROR, e))?)
    } else {
        None
    };
    Ok(BecomeDefaults {
        enabled: args.become_ || config.enabled == Some(true),
        user: args.become_user.clone().or_else(|| config.user.clone()),
        method: args.become_method.clone().or_else(|| config.method.clone()),
        flags: config.flags.clone(),
        exe: config.exe.clone(),
        sudo_chdir: config.sudo_chdir.clone(),
        password,
    })
}
