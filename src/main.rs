//! The CLI edge: which command was asked for (the name the binary was invoked under, or
//! its first argument), its flags, and for ansible-playbook: load everything (no
//! connection is opened before all input is known to be good), run, and map the outcome
//! to ansible-playbook's exit codes.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use turbo_play::cli::launch::{EXIT_ERROR, EXIT_PARSE_ERROR, Ended, Failure};
use turbo_play::cli::{Cli, launch, parse_extra_vars};
use turbo_play::executor::RunOptions;
use turbo_play::inventory::Inventory;
use turbo_play::listing::{self, Listings};
use turbo_play::playbook::{
    TagFilter, load_playbooks, render_templated_play_keywords, render_templated_tags,
};
use turbo_play::report::console::ConsoleReporter;
use turbo_play::report::events::Event;
use turbo_play::report::json::JsonReporter;

/// The commands of Ansible's this binary is: by the name it was invoked under (a link
/// named `ansible`, `ansible-inventory` or `ansible-playbook`), else by its first argument
/// (`turbo-play adhoc ...`, `turbo-play inventory ...`), else ansible-playbook's.
#[derive(Clone, Copy)]
enum Command {
    Playbook,
    Adhoc,
    Inventory,
}

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    let invoked_as = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (command, name) = match invoked_as.as_str() {
        "ansible" => (Command::Adhoc, invoked_as.clone()),
        "ansible-inventory" => (Command::Inventory, invoked_as.clone()),
        "ansible-playbook" => (Command::Playbook, invoked_as.clone()),
        _ => {
            // A playbook file of one of these names still runs as a playbook.
            let word = args
                .get(1)
                .and_then(|a| a.to_str())
                .filter(|a| !std::path::Path::new(a).is_file());
            let sub = match word {
                Some("adhoc" | "ansible") => Some(Command::Adhoc),
                Some("inventory" | "ansible-inventory") => Some(Command::Inventory),
                Some("playbook" | "ansible-playbook") => Some(Command::Playbook),
                _ => None,
            };
            match sub {
                Some(command) => {
                    let sub = args.remove(1).to_string_lossy().into_owned();
                    (command, format!("turbo-play {sub}"))
                }
                None => (Command::Playbook, "turbo-play".to_string()),
            }
        }
    };
    // Ansible's commands answer `--version` wherever it is, before anything else.
    let ansible_name = !matches!(name.as_str(), "turbo-play");
    if ansible_name && args.iter().skip(1).any(|a| a == "--version") {
        let prog = name.strip_prefix("turbo-play ").unwrap_or(&name);
        let prog = match prog {
            "adhoc" => "ansible",
            "inventory" => "ansible-inventory",
            "playbook" => "ansible-playbook",
            other => other,
        };
        let executable = args[0].to_string_lossy().into_owned();
        print!("{}", launch::version_text(prog, &executable));
        return ExitCode::SUCCESS;
    }
    // ansible-playbook's errors keep the `ERROR!` the conformance runner and users' scripts
    // read; the other commands print Ansible 2.21's `[ERROR]:`.
    let (outcome, error_prefix) = match command {
        Command::Playbook => (
            parse::<Cli>(&name, args, EXIT_USAGE).and_then(run),
            "ERROR! ",
        ),
        Command::Adhoc => (
            parse::<turbo_play::cli::adhoc::AdhocCli>(&name, args, EXIT_USAGE)
                .and_then(|cli| Ok(turbo_play::cli::adhoc::run(cli)?)),
            "[ERROR]: ",
        ),
        Command::Inventory => (
            parse::<turbo_play::cli::inventory::InventoryCli>(&name, args, EXIT_USAGE)
                .and_then(|cli| Ok(turbo_play::cli::inventory::run(cli)?)),
            "[ERROR]: ",
        ),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(Exit::Code(code)) => ExitCode::from(code),
        Err(Exit::Failed((code, message))) => {
            eprintln!("{error_prefix}{message}");
            ExitCode::from(code)
        }
    }
}

enum Exit {
    /// Help, a version or a usage error, already printed.
    Code(u8),
    Failed(Failure),
}

impl From<Failure> for Exit {
    fn from(failure: Failure) -> Self {
        Exit::Failed(failure)
    }
}

/// argparse's exit code for a usage error (an unknown flag, a missing or bad value), which
/// every Ansible command gives; 5 is for options that parse but cannot be used together
/// with the configuration (Ansible's `AnsibleOptionsError`).
const EXIT_USAGE: u8 = 2;

fn parse<T: CommandFactory + FromArgMatches>(
    name: &str,
    args: Vec<OsString>,
    usage_code: u8,
) -> Result<T, Exit> {
    let parsed = T::command()
        .bin_name(name)
        .try_get_matches_from(args)
        .and_then(|mut m| T::from_arg_matches_mut(&mut m));
    parsed.map_err(|e| {
        let code = if e.use_stderr() { usage_code } else { 0 };
        let _ = e.print();
        Exit::Code(code)
    })
}

fn run(cli: Cli) -> Result<u8, Exit> {
    Ok(run_playbooks(cli)?)
}

fn run_playbooks(cli: Cli) -> Result<u8, Failure> {
    if !cli.merge_recaps.is_empty() {
        return merge_recaps(&cli);
    }
    let mut config = launch::load_config(&cli.vault)?;
    // ansible-playbook's first line at -v (not in the JSON stream, which is JSON only).
    if !cli.json_output() {
        launch::show_config_file(&config, cli.verbose);
    }
    let extra_vars =
        parse_extra_vars(&cli.extra_vars).map_err(|e| (e.exit_code(), e.to_string()))?;
    let inventory = launch::load_inventory(&cli.inventory, &config)?;
    if let Some(limit) = &cli.inventory.limit {
        check_limit(&inventory, limit).map_err(|e| (EXIT_ERROR, e))?;
    }
    let mut playbooks = Vec::new();
    // How many playbooks each path loaded (import_playbook from another directory adds some).
    let mut loaded_per_path = Vec::new();
    // One for all the playbooks: the plugins of one are visible to the next, as in Ansible.
    let options = launch::load_options(&config);
    for path in &cli.playbooks {
        if !path.is_file() {
            return Err((
                EXIT_ERROR,
                format!("the playbook: {} could not be found", path.display()),
            ));
        }
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
        let listing_only = cli.list_hosts || cli.list_tasks || cli.list_tags;
        for playbook in &mut playbooks {
            if !listing_only {
                turbo_play::cli::vars_prompt::ask_playbook(playbook, &templar, &extra_vars)
                    .map_err(|e| (EXIT_ERROR, e))?;
            }
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
                    limit: cli.inventory.limit.as_deref(),
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
    let flags = launch::RunFlags {
        forks: &cli.forks,
        check: &cli.check,
        inventory: &cli.inventory,
        connect: &cli.connect,
        runas: &cli.runas,
        verbosity: cli.verbose,
    };
    let opts = RunOptions {
        slice: cli.slice,
        force_handlers: cli.force_handlers,
        tags,
        start_at_task: cli.start_at_task.clone(),
        plugins: options.plugins.clone(),
        ..launch::run_options(&config, flags, extra_vars)?
    };
    let verbosity = cli.verbose;
    let show_custom_stats = config.show_custom_stats;
    let display = config.display.clone();
    let deprecation_warnings = config.deprecation_warnings.unwrap_or(true);
    let report = move |mut rx: tokio::sync::mpsc::UnboundedReceiver<Event>| {
        if json_output {
            let mut json = JsonReporter::stdout();
            while let Some(event) = rx.blocking_recv() {
                json.handle(&event);
            }
        } else {
            let mut console = ConsoleReporter::stdout(verbosity)
                .with_display(display)
                .with_custom_stats(show_custom_stats)
                .with_deprecation_warnings(deprecation_warnings);
            while let Some(event) = rx.blocking_recv() {
                console.handle(&event);
            }
        }
    };
    let summary = match launch::execute(playbooks, inventory, opts, config.warnings, report)? {
        Ended::Finished(summary) => summary,
        Ended::Stopped(code) => return Ok(code),
    };
    if let Some(name) = &summary.start_at_unmatched {
        eprintln!(
            "ERROR! No matching task \"{name}\" found. Note: --start-at-task can only follow static includes."
        );
    }
    Ok(summary.exit_code() as u8)
}

/// `--merge-recaps`: the slices' recaps as one, with the exit code one run would have had.
fn merge_recaps(cli: &Cli) -> Result<u8, Failure> {
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
