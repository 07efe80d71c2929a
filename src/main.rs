//! The CLI edge: parse flags, load everything (no connection is opened before all input
//! is known to be good), run, and map the outcome to ansible-playbook's exit codes.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use turbo_play::cli::{Cli, parse_extra_vars};
use turbo_play::config::Config;
use turbo_play::connection::ConnectionDefaults;
use turbo_play::executor::{BecomeDefaults, RunOptions, run_playbooks_until};
use turbo_play::inventory::Inventory;
use turbo_play::listing::{self, Listings};
use turbo_play::playbook::{
    LoadOptions, TagFilter, load_playbooks, render_templated_play_keywords, render_templated_tags,
};
use turbo_play::report::console::ConsoleReporter;
use turbo_play::report::events::Event;
use turbo_play::report::json::JsonReporter;

/// ansible-playbook's exit codes.
const EXIT_ERROR: u8 = 1;
const EXIT_PARSE_ERROR: u8 = 4;
const EXIT_BAD_OPTIONS: u8 = 5;
/// Ctrl-C: ansible-playbook's "User interrupted execution".
const EXIT_INTERRUPTED: u8 = 99;
/// SIGTERM: what ansible-playbook's exit looks like to its parent (killed by signal 15).
const EXIT_TERMINATED: u8 = 128 + 15;

/// `forks` when neither a flag, the environment nor ansible.cfg sets it. Not Ansible's 5:
/// a host costs turbo-play a connection and a task that mostly waits on the network, not
/// a Python process, and 5 at a time leaves the controller idle on a fleet.
const DEFAULT_FORKS: usize = 50;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_BAD_OPTIONS } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err((code, message)) => {
            eprintln!("ERROR! {message}");
            ExitCode::from(code)
        }
    }
}

fn run(cli: Cli) -> Result<u8, (u8, String)> {
    if !cli.merge_recaps.is_empty() {
        return merge_recaps(&cli);
    }
    let mut config = Config::load().map_err(|e| (EXIT_BAD_OPTIONS, e.to_string()))?;
    // Before anything is read: `-e @file`, inventories and playbooks may be encrypted too.
    let vault_warnings = install_vault_secrets(&cli, &config.vault).map_err(|e| (EXIT_ERROR, e))?;
    config.warnings.extend(vault_warnings);
    if let Some(policy) = config.duplicate_dict_key.as_deref() {
        let policy = turbo_play::yaml::DuplicateKeys::parse(policy).ok_or_else(|| {
            (
                EXIT_BAD_OPTIONS,
                format!("Invalid value '{policy}' for DUPLICATE_YAML_DICT_KEY: use warn, error or ignore"),
            )
        })?;
        policy.install();
    }
    let extra_vars =
        parse_extra_vars(&cli.extra_vars).map_err(|e| (EXIT_BAD_OPTIONS, e.to_string()))?;
    // A flag beats the environment and ansible.cfg (which Config has already layered).
    let inventory_sources = if cli.inventory.is_empty() {
        config.inventory.clone()
    } else {
        cli.inventory.clone()
    };
    let inventory =
        Inventory::load(&inventory_sources).map_err(|e| (EXIT_PARSE_ERROR, e.to_string()))?;
    if let Some(limit) = &cli.limit {
        check_limit(&inventory, limit).map_err(|e| (EXIT_ERROR, e))?;
    }
    let mut playbooks = Vec::new();
    // How many playbooks each path loaded (import_playbook from another directory adds some).
    let mut loaded_per_path = Vec::new();
    for path in &cli.playbooks {
        if !path.is_file() {
            return Err((
                EXIT_BAD_OPTIONS,
                format!("the playbook: {} could not be found", path.display()),
            ));
        }
        let home = turbo_play::tilde::home_dir();
        let options = LoadOptions {
            roles_path: if config.roles_path.is_empty() {
                LoadOptions::default_roles_path(home.as_deref())
            } else {
                config.roles_path.clone()
            },
            collections_path: if config.collections_path.is_empty() {
                turbo_play::playbook::default_collections_path(home.as_deref())
            } else {
                config.collections_path.clone()
            },
            library: config.library.clone(),
            module_utils: config.module_utils.clone(),
        };
        let loaded =
            load_playbooks(path, &options).map_err(|e| (EXIT_PARSE_ERROR, e.to_string()))?;
        loaded_per_path.push(loaded.len());
        for playbook in loaded {
            // A broken group_vars/host_vars file is reported before anything connects.
            inventory
                .load_vars_dirs(&playbook.dir)
                .map_err(|e| (EXIT_PARSE_ERROR, e.to_string()))?;
            playbooks.push(playbook);
        }
    }
    config
        .warnings
        .extend(turbo_play::yaml::take_load_warnings());
    let tags = TagFilter::from_args(&cli.tags, &cli.skip_tags);
    if !cli.syntax_check {
        let templar = turbo_play::template::Templar::new();
        for playbook in &mut playbooks {
            render_templated_tags(playbook, &templar, &extra_vars).map_err(|e| (EXIT_ERROR, e))?;
            render_templated_play_keywords(playbook, &templar, &extra_vars).map_err(|e| {
                let code = if e.parse {
                    EXIT_PARSE_ERROR
                } else {
                    EXIT_ERROR
                };
                (code, e.message)
            })?;
        }
    }
    // Like ansible-playbook: --syntax-check and the listings stop before any connection
    // (their stdout is the listing alone, so warnings go to stderr).
    let listings = Listings {
        hosts: cli.list_hosts,
        tasks: cli.list_tasks,
        tags: cli.list_tags,
    };
    if cli.syntax_check || listings.any() {
        for warning in &config.warnings {
            eprintln!("[WARNING]: {warning}");
        }
    }
    if cli.syntax_check {
        for path in &cli.playbooks {
            print!("{}", listing::syntax_check(&path.display().to_string()));
        }
        return Ok(0);
    }
    if listings.any() {
        let filter = if cli.list_tags {
            let user_gave_tags = !(cli.tags.is_empty() && cli.skip_tags.is_empty());
            tags.clone().for_listing_tags(user_gave_tags)
        } else {
            tags.clone()
        };
        let mut rest = playbooks.as_slice();
        for (path, count) in cli.playbooks.iter().zip(&loaded_per_path) {
            let (these, others) = rest.split_at(*count);
            rest = others;
            let text = listing::render(
                these,
                &path.display().to_string(),
                &inventory,
                listing::HostFilter {
                    limit: cli.limit.as_deref(),
                    slice: cli.slice,
                },
                listings,
                &filter,
            )
            .map_err(|e| (EXIT_ERROR, e))?;
            print!("{text}");
        }
        return Ok(0);
    }
    let json_output = cli.json_output();
    let opts = RunOptions {
        forks: cli.forks.or(config.forks).unwrap_or(DEFAULT_FORKS).max(1),
        check: cli.check,
        diff: cli.diff,
        verbosity: cli.verbose,
        limit: cli.limit.clone(),
        slice: cli.slice,
        extra_vars,
        force_handlers: cli.force_handlers,
        connection_defaults: ConnectionDefaults {
            remote_user: cli.user.clone().or(config.remote_user),
            private_key: cli.private_key.clone().or(config.private_key_file),
            host_key_checking: config.host_key_checking,
            timeout: cli.timeout.or(config.timeout).map(Duration::from_secs),
            ssh_args: config.ssh_args,
            ssh_common_args: cli.ssh_common_args.clone(),
            ssh_extra_args: cli.ssh_extra_args.clone(),
            ssh_config: None,
            password: connection_password(&cli).map_err(|e| (EXIT_BAD_OPTIONS, e))?,
            retries: config.ssh_retries,
        },
        roles_path: config.roles_path,
        tags,
        start_at_task: cli.start_at_task.clone(),
        connection: cli.connection.clone(),
        ansible_managed: config.ansible_managed,
        chains: config.chains.unwrap_or(true),
        become_defaults: become_defaults(&cli, &config.become_)
            .map_err(|e| (EXIT_BAD_OPTIONS, e))?,
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| (EXIT_ERROR, format!("starting the async runtime: {e}")))?;
    // The exit code of the signal that stopped the run.
    let stopped_by = std::sync::atomic::AtomicU8::new(EXIT_INTERRUPTED);
    let summary = runtime.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let verbosity = cli.verbose;
        let show_custom_stats = config.show_custom_stats;
        let deprecation_warnings = config.deprecation_warnings.unwrap_or(true);
        // One reporter owns the terminal; it drains the channel until every sender is gone.
        let reporter = tokio::task::spawn_blocking(move || {
            if json_output {
                let mut json = JsonReporter::stdout();
                while let Some(event) = rx.blocking_recv() {
                    json.handle(&event);
                }
            } else {
                let mut console = ConsoleReporter::stdout(verbosity)
                    .with_custom_stats(show_custom_stats)
                    .with_deprecation_warnings(deprecation_warnings);
                while let Some(event) = rx.blocking_recv() {
                    console.handle(&event);
                }
            }
        });
        for warning in config.warnings {
            let _ = tx.send(Event::Warning(warning));
        }
        let summary =
            run_playbooks_until(playbooks, inventory, opts, tx, interrupt(&stopped_by)).await;
        let _ = reporter.await;
        summary
    });
    if summary.interrupted {
        return Ok(stopped_by.load(std::sync::atomic::Ordering::SeqCst));
    }
    if let Some(name) = &summary.start_at_unmatched {
        eprintln!(
            "ERROR! No matching task \"{name}\" found. Note: --start-at-task can only follow static includes."
        );
    }
    Ok(summary.exit_code() as u8)
}

/// `--merge-recaps`: the slices' recaps as one, with the exit code one run would have had.
fn merge_recaps(cli: &Cli) -> Result<u8, (u8, String)> {
    let merged = turbo_play::report::merged_recap::merge_files(&cli.merge_recaps)
        .map_err(|e| (EXIT_ERROR, e.to_string()))?;
    for warning in &merged.warnings {
        eprintln!("[WARNING]: {warning}");
    }
    ConsoleReporter::stdout(cli.verbose).handle(&Event::Recap(merged.stats.clone()));
    let summary = turbo_play::executor::RunSummary {
        stats: merged.stats,
        start_at_unmatched: None,
        interrupted: false,
    };
    Ok(summary.exit_code() as u8)
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

/// ansible-playbook refuses, before running anything, a `--limit` that leaves none of a
/// non-empty inventory's hosts (an inventory with no hosts only has the implicit localhost,
/// which `all` never matches, so it is let through).
fn check_limit(inventory: &Inventory, limit: &str) -> Result<(), String> {
    let all = inventory.select("all").map_err(|e| e.to_string())?;
    if all.is_empty() {
        return Ok(());
    }
    let limited = inventory.limit(all, limit).map_err(|e| e.to_string())?;
    if limited.is_empty() {
        return Err(format!(
            "Specified inventory, host pattern and/or --limit leaves us with no hosts to target (--limit {limit} matches none of the inventory's hosts)."
        ));
    }
    Ok(())
}

/// `--vault-id`, `--vault-password-file` and `-J` over ansible.cfg's vault settings: the
/// secrets every encrypted file and `!vault` value of the run is opened with. Returns
/// the warnings for sources that failed while another worked.
fn install_vault_secrets(
    cli: &Cli,
    config: &turbo_play::config::VaultConfig,
) -> Result<Vec<String>, String> {
    use turbo_play::become_password::{Hidden, ask_hidden};
    let mut password_files = cli.vault_password_files.clone();
    password_files.extend(config.password_file.clone());
    let sources = turbo_play::vault::SecretSources {
        identity_list: config.identity_list.clone(),
        vault_ids: cli.vault_ids.clone(),
        password_files,
        ask_vault_pass: cli.ask_vault_pass || config.ask_vault_pass == Some(true),
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
    turbo_play::vault::install(vault);
    Ok(warnings)
}

/// `-k` (asked once, without echo) or `--connection-password-file`: the SSH login
/// password for hosts that set no `ansible_password`.
fn connection_password(cli: &Cli) -> Result<Option<turbo_play::connection::Secret>, String> {
    use turbo_play::become_password::{ask_hidden, read_password_file};
    let password = if cli.ask_pass {
        Some(ask_hidden("SSH password: ").map_err(|e| {
            format!("-k needs a terminal to ask for the SSH password ({e}); use --connection-password-file or ansible_password")
        })?)
    } else if let Some(file) = &cli.connection_password_file {
        Some(read_password_file(file, "connection")?)
    } else {
        None
    };
    Ok(password.map(turbo_play::connection::Secret))
}

/// `-b`, `--become-user`, `--become-method`, `-K`, `--become-password-file` over
/// ansible.cfg's `[privilege_escalation]`.
fn become_defaults(
    cli: &Cli,
    config: &turbo_play::config::BecomeConfig,
) -> Result<BecomeDefaults, String> {
    let password = if cli.ask_become_pass || (config.ask_pass == Some(true)) {
        Some(turbo_play::become_password::prompt()?)
    } else if let Some(file) = cli
        .become_password_file
        .as_ref()
        .or(config.password_file.as_ref())
    {
        Some(turbo_play::become_password::from_file(file)?)
    } else {
        None
    };
    Ok(BecomeDefaults {
        enabled: cli.become_ || config.enabled == Some(true),
        user: cli.become_user.clone().or_else(|| config.user.clone()),
        method: cli.become_method.clone().or_else(|| config.method.clone()),
        flags: config.flags.clone(),
        exe: config.exe.clone(),
        password,
    })
}
