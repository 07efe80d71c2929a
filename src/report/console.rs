//! Ansible-shaped terminal output, so that users' eyes and scripts find what they know:
//! `PLAY [..] ***`, `changed: [host] => (item=1)`, `fatal: [host]: FAILED! => {...}`,
//! `PLAY RECAP`. A progress display (terminal only, `progress.rs`) keeps long loops and many hosts readable.

use std::collections::HashSet;
use std::io::{self, Write};

use console::Style;
use serde_json::Value;

use super::events::{Event, HostResult, HostStats, Status};
use super::progress::{FleetTally, TaskProgress};
use super::result_dump::{dump_flat, dump_result};
use super::task_error;
use super::warnings::{Kind, Warnings, without_warnings};
use crate::display_options::DisplayOptions;

pub struct ConsoleReporter<W: Write, E: Write> {
    out: W,
    /// Where warnings go: stderr, as Ansible's display sends them.
    err: E,
    warnings: Warnings,
    verbosity: u8,
    colors: bool,
    /// Only when attached to a terminal.
    progress_enabled: bool,
    progress: Option<TaskProgress>,
    /// Hosts failed or unreachable so far, for the progress display.
    tally: FleetTally,
    /// ansible.cfg's `show_custom_stats`: the recap's CUSTOM STATS section.
    show_custom_stats: bool,
    /// Error blocks already shown: Ansible's display prints an identical one once a run.
    errors_shown: HashSet<String>,
    /// The default callback's options (what shows, and how results are dumped).
    display: DisplayOptions,
    /// `--check`, for the `DRY RUN` banner after the recap.
    dry_run: bool,
    /// Banners, printed with the first result they head (see [`Banners`]).
    banners: Banners,
}

/// Ansible's default callback prints a task's banner when the task starts only if every
/// result shows; otherwise, and always under the `free` strategy, it prints a task's
/// banner before the first of its results that shows, so that a task whose results are
/// all hidden has none.
#[derive(Default)]
struct Banners {
    /// The play runs under the `free` strategy: each host's results belong to the task
    /// it last started.
    free: bool,
    /// The task (or handler) that started last, with its banner's title.
    current: Option<(usize, String)>,
    /// Under `free`, each host's task.
    by_host: std::collections::HashMap<String, (usize, String)>,
    /// The task whose banner was printed last.
    printed: Option<usize>,
}

impl ConsoleReporter<io::Stdout, io::Stderr> {
    /// Colours on a terminal; none with NO_COLOR / ANSIBLE_NOCOLOR true, always with
    /// ANSIBLE_FORCE_COLOR true.
    pub fn stdout(verbosity: u8) -> Self {
        let (colors, tty) = terminal_colors();
        ConsoleReporter::new(io::stdout(), io::stderr(), verbosity, colors, tty)
    }
}

/// Whether stdout gets colours, and whether it is a terminal; tells the `console` crate.
pub(super) fn terminal_colors() -> (bool, bool) {
    let tty = console::Term::stdout().is_term();
    // Ansible's config reads these as `type: boolean`, leniently (anything but a true
    // spelling is false), and of ANSIBLE_NOCOLOR and NO_COLOR the last one set wins
    // (config/base.yml, `_loop_entries` in config/manager.py).
    let env_bool = |k: &str| {
        std::env::var(k)
            .ok()
            .map(|v| crate::booleans::lenient_text(&v))
    };
    let force = env_bool("ANSIBLE_FORCE_COLOR").unwrap_or(false);
    let nocolor = env_bool("NO_COLOR")
        .or_else(|| env_bool("ANSIBLE_NOCOLOR"))
        .unwrap_or(false);
    let colors = force || (tty && !nocolor);
    console::set_colors_enabled(colors);
    (colors, tty)
}

impl<W: Write, E: Write> ConsoleReporter<W, E> {
    pub fn new(out: W, err: E, verbosity: u8, colors: bool, progress_enabled: bool) -> Self {
        ConsoleReporter {
            out,
            err,
            warnings: Warnings::new(true),
            verbosity,
            colors,
            progress_enabled,
            progress: None,
            tally: FleetTally::default(),
            show_custom_stats: false,
            errors_shown: HashSet::new(),
            display: DisplayOptions::default(),
            dry_run: false,
            banners: Banners::default(),
        }
    }

    /// The default callback's options from ansible.cfg and the environment.
    pub fn with_display(mut self, display: DisplayOptions) -> Self {
        self.display = display;
        self
    }

    pub fn with_custom_stats(mut self, show: bool) -> Self {
        self.show_custom_stats = show;
        self
    }

    /// ansible.cfg's `deprecation_warnings`: false shows no deprecation at all.
    pub fn with_deprecation_warnings(mut self, enabled: bool) -> Self {
        self.warnings = Warnings::new(enabled);
        self
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    pub fn into_parts(self) -> (W, E) {
        (self.out, self.err)
    }

    fn style(&self, s: Style) -> Style {
        if self.colors {
            s.force_styling(true)
        } else {
            Style::new()
        }
    }

    /// Prints above the progress bar when there is one. The line goes to our own output
    /// either way: the bar's `println` writes to the bar's target (stderr, or nowhere while
    /// the bar is hidden), which would lose results or move them off stdout.
    fn line(&mut self, text: &str) {
        let out = &mut self.out;
        let mut write = || {
            let _ = writeln!(out, "{text}");
            let _ = out.flush();
        };
        match &self.progress {
            Some(progress) => progress.suspend(write),
            None => write(),
        }
    }

    /// A warning or deprecation, on stderr (above the progress bar), its own line breaks
    /// included.
    fn warning_line(&mut self, kind: Kind, text: &str) {
        let style = match kind {
            Kind::Warning => Style::new().magenta().bold(),
            Kind::Deprecation => Style::new().magenta(),
        };
        // Coloured without its line breaks, as Ansible's display colours a message.
        let body = text.strip_suffix('\n').unwrap_or(text);
        let text = format!("{}\n", self.style(style).apply_to(body));
        let err = &mut self.err;
        let mut write = || {
            let _ = err.write_all(text.as_bytes());
            let _ = err.flush();
        };
        match &self.progress {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }

    pub fn handle(&mut self, event: &Event) {
        match event {
            Event::RunStart { check } => {
                self.dry_run = *check;
                if *check && self.display.check_mode_markers {
                    self.line("");
                    self.line(&banner("DRY RUN"));
                }
            }
            Event::PlayStart {
                name,
                check_mode,
                free,
            } => {
                self.finish_progress();
                let marker = if *check_mode && self.display.check_mode_markers {
                    " [CHECK MODE]"
                } else {
                    ""
                };
                let title = if name.is_empty() {
                    format!("PLAY{marker}")
                } else {
                    format!("PLAY [{name}]{marker}")
                };
                self.line("");
                self.line(&banner(&title));
                self.banners = Banners {
                    free: *free,
                    ..Banners::default()
                };
            }
            Event::NoHostsMatched => {
                let text = self
                    .style(Style::new().cyan())
                    .apply_to("skipping: no hosts matched")
                    .to_string();
                self.line(&text);
            }
            Event::TaskStart(task) | Event::HandlerStart(task) => {
                let prefix = match event {
                    Event::HandlerStart(_) => "RUNNING HANDLER",
                    _ => "TASK",
                };
                let marker = if task.check_mode && self.display.check_mode_markers {
                    " [CHECK MODE]"
                } else {
                    ""
                };
                let title = format!("{prefix} [{}]{marker}", task.name);
                self.finish_progress();
                match &task.host {
                    Some(host) if self.banners.free => {
                        self.banners.by_host.insert(host.clone(), (task.key, title));
                    }
                    _ => {
                        self.banners.current = Some((task.key, title));
                        if self.display.eager_banners() && !self.banners.free {
                            self.task_banner(None);
                        }
                    }
                }
                if self.progress_enabled {
                    self.progress = Some(TaskProgress::start(&task.name, task.hosts, &self.tally));
                }
            }
            Event::ItemsPlanned { host, count } => {
                if let Some(progress) = &mut self.progress {
                    progress.planned(host, *count as u64);
                }
            }
            Event::HostResult(result) => {
                let result = &*result.for_playbook();
                self.host_result(result);
                self.tally.count(result);
                if let Some(progress) = &mut self.progress {
                    progress.result(result, &self.tally);
                }
            }
            Event::LoopFailed(result) => self.loop_failed(result),
            Event::Included { file, hosts, item } => {
                // The include task's own result prints its banner, shown or not.
                self.task_banner(hosts.first().map(String::as_str));
                if !self.display.included_hosts {
                    return;
                }
                let item = item
                    .as_deref()
                    .map(|i| format!(" => (item={i})"))
                    .unwrap_or_default();
                let text = format!("included: {file} for {}{item}", hosts.join(", "));
                let text = self.style(Style::new().cyan()).apply_to(text).to_string();
                self.line(&text);
            }
            Event::Retry {
                host,
                task,
                retries_left,
                ..
            } => {
                // Ansible's wording, which names no loop item (so none leaks under no_log).
                let text =
                    format!("FAILED - RETRYING: [{host}]: {task} ({retries_left} retries left).");
                let text = self.style(Style::new().red()).apply_to(text).to_string();
                self.line(&text);
            }
            Event::AsyncPoll {
                host,
                jid,
                started,
                finished,
            } => {
                let text = format!(
                    "ASYNC POLL on {host}: jid={jid} started={} finished={}",
                    python_bool(*started),
                    python_bool(*finished)
                );
                let text = self.style(Style::new().red()).apply_to(text).to_string();
                self.line(&text);
            }
            Event::AsyncDone { host, jid, failed } => {
                let verdict = if *failed { "FAILED" } else { "OK" };
                let text = format!("ASYNC {verdict} on {host}: jid={jid}");
                let text = self.style(Style::new().red()).apply_to(text).to_string();
                self.line(&text);
            }
            Event::AgentReady {
                host,
                uploaded,
                upload_bytes,
                replaced_stale,
            } => {
                if self.verbosity >= 2 {
                    let what = match (uploaded, replaced_stale) {
                        (true, true) => {
                            format!("replaced a stale agent ({upload_bytes} bytes uploaded)")
                        }
                        (true, false) => format!("agent uploaded ({upload_bytes} bytes)"),
                        _ => "agent cached".to_string(),
                    };
                    self.line(&format!("<{host}> {what}"));
                }
            }
            Event::Verbose { level, text } => {
                if self.verbosity >= *level {
                    self.line(text);
                }
            }
            Event::Warning(text) => {
                if let Some(text) = self.warnings.warning(text) {
                    self.warning_line(Kind::Warning, &text);
                }
            }
            Event::Deprecation(text) => {
                for (kind, line) in self.warnings.deprecation_text(text) {
                    self.warning_line(kind, &line);
                }
            }
            Event::NoMoreHosts => {
                self.finish_progress();
                self.line("");
                self.line(&banner("NO MORE HOSTS LEFT"));
            }
            Event::CustomStats(stats) => {
                if !self.show_custom_stats {
                    return;
                }
                // Ansible's default callback: hosts by name, then the run's, each
                // dumped with an indent of one and its line breaks taken out.
                self.line("");
                self.line(&banner("CUSTOM STATS:"));
                for (owner, data) in stats.iter().filter(|(k, _)| *k != "_run") {
                    self.line(&format!("\t{owner}: {}", dump_flat(data)));
                }
                if let Some(run) = stats.get("_run") {
                    self.line("");
                    self.line(&format!("\tRUN: {}", dump_flat(run)));
                }
                self.line("");
            }
            Event::Recap(stats) => {
                self.finish_progress();
                self.line("");
                self.line(&banner("PLAY RECAP"));
                for s in stats {
                    let text = self.format_recap(s);
                    self.line(&text);
                }
                self.line("");
                if self.dry_run && self.display.check_mode_markers {
                    self.line("");
                    self.line(&banner("DRY RUN"));
                }
                // Not at -v, whose output stays ansible-playbook's line for line.
                if self.verbosity >= 2 {
                    for s in stats {
                        self.line(&format!(
                            "<{}> agent protocol: {} bytes sent, {} bytes received",
                            s.host, s.bytes_sent, s.bytes_received
                        ));
                    }
                }
            }
        }
        let _ = self.out.flush();
    }

    /// The banner of the task a result of `host` belongs to, unless it is the last one
    /// printed (`None`: the task that started last).
    fn task_banner(&mut self, host: Option<&str>) {
        let banners = &self.banners;
        let task = match host {
            Some(host) if banners.free => {
                // A delegated result names its host `h -> d`.
                let own = host.split(" -> ").next().unwrap_or(host);
                banners.by_host.get(own).or(banners.current.as_ref())
            }
            _ => banners.current.as_ref(),
        };
        let Some((key, title)) = task.cloned() else {
            return;
        };
        if self.banners.printed == Some(key) {
            return;
        }
        self.banners.printed = Some(key);
        self.line("");
        self.line(&banner(&title));
    }

    /// One result (a task's on a host, or an item's), as the default callback shows it:
    /// `ok` and `skipping` lines only when the options show them, failures on stderr
    /// with `display_failed_stderr`.
    fn host_result(&mut self, result: &HostResult) {
        let changed = result.status == Status::Changed;
        let shown = match result.status {
            Status::Ok => self.display.ok_hosts,
            Status::Skipped => self.display.skipped_hosts,
            _ => true,
        };
        // Ansible shows a diff only for a changed result (`changed_when: false` hides it).
        if changed && let Some(diff) = result.data.get("diff") {
            let texts = render_diffs(diff);
            if !texts.is_empty() {
                self.task_banner(Some(&result.host));
            }
            for text in texts {
                self.line(&text);
            }
        }
        if !shown {
            return;
        }
        self.task_banner(Some(&result.host));
        for (kind, text) in self.warnings.from_result(&result.data) {
            self.warning_line(kind, &text);
        }
        let failure = matches!(result.status, Status::Failed | Status::Unreachable);
        let to_stderr = failure && self.display.failed_stderr;
        self.error_block(result, to_stderr);
        if result.status == Status::Failed && result.item.is_none() {
            self.task_path(result);
        }
        let text = self.format_result(&cleaned(result));
        self.result_line(&text, to_stderr);
        // A loop's failure is said once, after its items (`LoopFailed`).
        if failure && result.ignored && result.item.is_none() {
            self.ignoring();
        }
    }

    /// A loop whose item failed, after its items: Ansible's callback shows the task's
    /// own result only where it keeps a message of it (debug's), then `...ignoring`.
    fn loop_failed(&mut self, result: &HostResult) {
        self.task_banner(Some(&result.host));
        if !result.data.is_empty() {
            self.task_path(result);
            let text = self.format_result(result);
            self.result_line(&text, self.display.failed_stderr);
        }
        if result.ignored {
            self.ignoring();
        }
    }

    /// `task path: FILE:LINE` above a task's failure (`show_task_path_on_failure`; from
    /// -vv every banner has it already).
    fn task_path(&mut self, result: &HostResult) {
        if !self.display.task_path_on_failure || self.verbosity >= 2 {
            return;
        }
        let Some(origin) = &result.origin else {
            return;
        };
        let location = &origin.location;
        let text = format!(
            "task path: {}:{}",
            task_error::absolute(&location.file).display(),
            location.line
        );
        let text = self.style(Style::new().blue()).apply_to(text).to_string();
        self.line(&text);
    }

    fn ignoring(&mut self) {
        let text = self
            .style(Style::new().cyan())
            .apply_to("...ignoring")
            .to_string();
        self.line(&text);
    }

    /// A result's line, on stderr when failures go there.
    fn result_line(&mut self, text: &str, to_stderr: bool) {
        if !to_stderr {
            self.line(text);
            return;
        }
        let text = format!("{text}\n");
        let err = &mut self.err;
        let mut write = || {
            let _ = err.write_all(text.as_bytes());
            let _ = err.flush();
        };
        match &self.progress {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }

    fn finish_progress(&mut self) {
        if let Some(progress) = self.progress.take() {
            progress.finish();
        }
    }

    /// The `[ERROR]: Task failed` block above a failed or unreachable result, on stdout
    /// (the default callback's `display_failed_stderr` is off), each line red as Ansible's
    /// display colours one.
    fn error_block(&mut self, result: &HostResult, to_stderr: bool) {
        let Some(origin) = &result.origin else {
            return;
        };
        let Some(block) = task_error::error_block(result.status, origin, &result.data) else {
            return;
        };
        if !self.errors_shown.insert(block.clone()) {
            return;
        }
        let style = self.style(Style::new().red());
        let painted: Vec<String> = block
            .split('\n')
            .map(|l| style.apply_to(l).to_string())
            .collect();
        self.result_line(&painted.join("\n"), to_stderr);
    }

    /// A result's data after ` => `, as the options dump it.
    fn dump(&self, r: &HostResult) -> String {
        dump_result(&r.data, &self.display, r.verbose_always, self.verbosity)
    }

    fn format_result(&self, r: &HostResult) -> String {
        // The diff was shown above the line; the dump repeats it only at -vvv, as Ansible.
        // `failed`/`skipped` are already said by the line's word, and Ansible drops them.
        let stripped;
        let hide_diff = self.verbosity < 3 && r.data.contains_key("diff");
        // Ansible's callback takes the exception out of the dump below -vvv.
        let hide_exception = self.verbosity < 3 && r.data.contains_key("exception");
        let unwarned;
        let r = match without_warnings(&r.data) {
            Some(data) => {
                unwarned = HostResult { data, ..r.clone() };
                &unwarned
            }
            None => r,
        };
        let r = if hide_diff
            || hide_exception
            || r.data.contains_key("failed")
            || r.data.contains_key("skipped")
        {
            let mut copy = r.clone();
            if hide_diff {
                copy.data.remove("diff");
            }
            if hide_exception {
                copy.data.remove("exception");
            }
            copy.data.remove("failed");
            copy.data.remove("skipped");
            stripped = copy;
            &stripped
        } else {
            r
        };
        let item = r
            .item
            .as_deref()
            .map(|i| format!(" => (item={i})"))
            .unwrap_or_default();
        let show_data = r.verbose_always || self.verbosity >= 1;
        let (word, style) = match r.status {
            Status::Ok => ("ok", Style::new().green()),
            Status::Changed => ("changed", Style::new().yellow()),
            Status::Skipped => ("skipping", Style::new().cyan()),
            Status::Failed | Status::Unreachable => ("", Style::new().red()),
        };
        let style = self.style(style);
        let text = match r.status {
            Status::Failed => {
                let head = match &r.item {
                    Some(i) => format!("failed: [{}] (item={i}) => ", r.host),
                    None => format!("fatal: [{}]: FAILED! => ", r.host),
                };
                format!("{head}{}", self.dump(r))
            }
            // `ignore_unreachable: true` adds its `...ignoring` below.
            Status::Unreachable => format!("fatal: [{}]: UNREACHABLE! => {}", r.host, self.dump(r)),
            // Ansible's item skip line ends in a space, before the ` => ` of -v too.
            Status::Skipped if show_data && !r.data.is_empty() && r.item.is_some() => {
                format!("{word}: [{}]{item}  => {}", r.host, self.dump(r))
            }
            _ if show_data && !r.data.is_empty() => {
                format!("{word}: [{}]{item} => {}", r.host, self.dump(r))
            }
            // Ansible's item skip line ends in a space.
            Status::Skipped if r.item.is_some() => format!("{word}: [{}]{item} ", r.host),
            _ => format!("{word}: [{}]{item}", r.host),
        };
        style.apply_to(text).to_string()
    }

    fn format_recap(&self, s: &HostStats) -> String {
        let host_style = if s.failed > 0 || s.unreachable > 0 {
            Style::new().red()
        } else if s.changed > 0 {
            Style::new().yellow()
        } else {
            Style::new().green()
        };
        let host = self.style(host_style).apply_to(format!("{:<26}", s.host));
        let field = |name: &str, n: u32, style: Style| {
            let text = format!("{name}={n:<4}");
            if n > 0 {
                self.style(style).apply_to(text).to_string()
            } else {
                text
            }
        };
        format!(
            "{host} : {} {} {} {} {} {} {}",
            field("ok", s.ok, Style::new().green()),
            field("changed", s.changed, Style::new().yellow()),
            field("unreachable", s.unreachable, Style::new().red()),
            field("failed", s.failed, Style::new().red()),
            field("skipped", s.skipped, Style::new().cyan()),
            field("rescued", s.rescued, Style::new().magenta()),
            field("ignored", s.ignored, Style::new().magenta()),
        )
    }
}

/// A module's `diff` result (one `{before, after, before_header, after_header}` or a list
/// of them) as the unified diffs Ansible prints for --diff.
pub(super) fn render_diffs(diff: &Value) -> Vec<String> {
    let parts = match diff {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    parts
        .into_iter()
        .filter_map(|d| {
            let text = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("");
            let (before, after) = (text("before"), text("after"));
            if before == after {
                return None;
            }
            // Ansible's `--- before` when there was no file (no header), else with the path.
            let head = |side: &str, header: &str| match d.get(header).and_then(Value::as_str) {
                Some(path) => format!("{side}: {path}"),
                None => side.to_string(),
            };
            let body = similar::TextDiff::from_lines(before, after)
                .unified_diff()
                .context_radius(3)
                .header(
                    &head("before", "before_header"),
                    &head("after", "after_header"),
                )
                .to_string();
            Some(body)
        })
        .collect()
}

/// What Ansible's callback dumps of a debug result (its `_clean_results`): the message
/// alone (with any exception and warnings), or the variable without the status keys.
fn cleaned(result: &HostResult) -> std::borrow::Cow<'_, HostResult> {
    let is_debug = result
        .origin
        .as_ref()
        .is_some_and(|o| task_error::short_name(&o.action) == "debug");
    if !is_debug {
        return std::borrow::Cow::Borrowed(result);
    }
    const WITH_MSG: &[&str] = &["msg", "exception", "warnings", "deprecations"];
    const HIDDEN: &[&str] = &[
        "changed",
        "failed",
        "skipped",
        "invocation",
        "skip_reason",
        "ansible_loop_var",
        "ansible_index_var",
        "ansible_loop",
    ];
    let mut shown = result.clone();
    let has_msg = shown.data.contains_key("msg");
    shown.data.retain(|k, _| {
        if has_msg {
            WITH_MSG.contains(&k.as_str()) || k.starts_with("_ansible_")
        } else {
            !HIDDEN.contains(&k.as_str())
        }
    });
    std::borrow::Cow::Owned(shown)
}

/// `PLAY [x] ****...` padded with stars to 80 columns, as Ansible does.
fn banner(title: &str) -> String {
    let stars = 79usize.saturating_sub(title.chars().count()).max(3);
    format!("{title} {}", "*".repeat(stars))
}

/// How Python prints a bool, as the default callback's `%s` shows it.
fn python_bool(value: bool) -> &'static str {
    if value { "True" } else { "False" }
}

#[cfg(test)]
#[path = "console_tests.rs"]
mod tests;
