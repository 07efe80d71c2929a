//! Ansible-shaped terminal output, so that users' eyes and scripts find what they know:
//! `PLAY [..] ***`, `changed: [host] => (item=1)`, `fatal: [host]: FAILED! => {...}`,
//! `PLAY RECAP`. A progress display (terminal only, `progress.rs`) keeps long loops and many hosts readable.

use std::collections::HashSet;
use std::io::{self, Write};

use console::Style;
use serde_json::{Map, Value};

use super::events::{Event, HostResult, HostStats, Status};
use super::progress::{FleetTally, TaskProgress};
use super::task_error;
use super::warnings::{Kind, Warnings, without_warnings};

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
        }
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
            Event::PlayStart { name } => {
                self.finish_progress();
                self.line("");
                let header = banner(&format!("PLAY [{name}]"));
                self.line(&header);
            }
            Event::NoHostsMatched => {
                let text = self
                    .style(Style::new().cyan())
                    .apply_to("skipping: no hosts matched")
                    .to_string();
                self.line(&text);
            }
            Event::TaskStart { name, hosts } | Event::HandlerStart { name, hosts } => {
                let title = match event {
                    Event::HandlerStart { .. } => format!("RUNNING HANDLER [{name}]"),
                    _ => format!("TASK [{name}]"),
                };
                self.finish_progress();
                self.line("");
                self.line(&banner(&title));
                if self.progress_enabled {
                    self.progress = Some(TaskProgress::start(name, *hosts, &self.tally));
                }
            }
            Event::ItemsPlanned { host, count } => {
                if let Some(progress) = &mut self.progress {
                    progress.planned(host, *count as u64);
                }
            }
            Event::HostResult(result) => {
                let result = &*result.for_playbook();
                if let Some(diff) = result.data.get("diff") {
                    for text in render_diffs(diff) {
                        self.line(&text);
                    }
                }
                for (kind, text) in self.warnings.from_result(&result.data) {
                    self.warning_line(kind, &text);
                }
                self.error_block(result);
                let text = self.format_result(result);
                self.line(&text);
                self.tally.count(result);
                if let Some(progress) = &mut self.progress {
                    progress.result(result, &self.tally);
                }
            }
            Event::Included { file, hosts, item } => {
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

    fn finish_progress(&mut self) {
        if let Some(progress) = self.progress.take() {
            progress.finish();
        }
    }

    /// The `[ERROR]: Task failed` block above a failed or unreachable result, on stdout
    /// (the default callback's `display_failed_stderr` is off), each line red as Ansible's
    /// display colours one.
    fn error_block(&mut self, result: &HostResult) {
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
        self.line(&painted.join("\n"));
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
                let verbosity = self.verbosity.max(u8::from(r.verbose_always) * 4);
                let mut text = format!("{head}{}", dump(&r.data, verbosity));
                if r.ignored {
                    text.push_str("\n...ignoring");
                }
                text
            }
            Status::Unreachable => {
                let mut text = format!(
                    "fatal: [{}]: UNREACHABLE! => {}",
                    r.host,
                    dump(&r.data, self.verbosity)
                );
                // `ignore_unreachable: true`
                if r.ignored {
                    text.push_str("\n...ignoring");
                }
                text
            }
            // Ansible's item skip line ends in a space, before the ` => ` of -v too.
            Status::Skipped if show_data && !r.data.is_empty() && r.item.is_some() => {
                format!(
                    "{word}: [{}]{item}  => {}",
                    r.host,
                    dump(&r.data, self.verbosity.max(u8::from(r.verbose_always) * 4))
                )
            }
            _ if show_data && !r.data.is_empty() => {
                format!(
                    "{word}: [{}]{item} => {}",
                    r.host,
                    dump(&r.data, self.verbosity.max(u8::from(r.verbose_always) * 4))
                )
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

/// `PLAY [x] ****...` padded with stars to 80 columns, as Ansible does.
fn banner(title: &str) -> String {
    let stars = 79usize.saturating_sub(title.chars().count()).max(3);
    format!("{title} {}", "*".repeat(stars))
}

/// Ansible dumps results as JSON with sorted keys: on one line by default, indented by 4
/// when verbose output was asked for (debug always is).
fn dump(data: &Map<String, Value>, verbosity: u8) -> String {
    // Internal keys (`_ansible_item_label`, ...) never show, as Ansible strips them.
    let public: Map<String, Value> = data
        .iter()
        .filter(|(k, _)| !k.starts_with("_ansible_"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let sorted = sort_keys(&Value::Object(public));
    if verbosity >= 4 {
        let mut buf = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
        serde::Serialize::serialize(&sorted, &mut ser).expect("json");
        String::from_utf8(buf).expect("utf8")
    } else {
        let mut buf = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, PythonCompact);
        serde::Serialize::serialize(&sorted, &mut ser).expect("json");
        String::from_utf8(buf).expect("utf8")
    }
}

/// `json.dumps(data, indent=1, sort_keys=True)` with its line breaks removed.
fn dump_flat(data: &Map<String, Value>) -> String {
    let sorted = sort_keys(&Value::Object(data.clone()));
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    serde::Serialize::serialize(&sorted, &mut ser).expect("json");
    String::from_utf8(buf).expect("utf8").replace('\n', "")
}

/// Ansible dumps with `sort_keys`, at every depth.
pub fn sort_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sort_keys(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

/// Python's `json.dumps` separators (`", "` and `": "`), which Ansible's one-line
/// results use and users' scripts match on.
pub(super) struct PythonCompact;

impl serde_json::ser::Formatter for PythonCompact {
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
}

/// How Python prints a bool, as the default callback's `%s` shows it.
fn python_bool(value: bool) -> &'static str {
    if value { "True" } else { "False" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(events: &[Event], verbosity: u8) -> String {
        let mut r = ConsoleReporter::new(Vec::new(), Vec::new(), verbosity, false, false);
        for e in events {
            r.handle(e);
        }
        String::from_utf8(r.into_inner()).unwrap()
    }

    fn result(status: Status, item: Option<&str>, data: Value) -> Event {
        Event::HostResult(HostResult {
            host: "web1".into(),
            status,
            item: item.map(str::to_string),
            data: data.as_object().cloned().unwrap_or_default(),
            ignored: false,
            verbose_always: false,
            origin: None,
        })
    }

    /// On a terminal the bar exists (hidden at first, then on stderr): every line must
    /// still reach the reporter's own output, the same as when piped.
    #[test]
    fn a_progress_bar_never_swallows_or_moves_lines() {
        let mut events = vec![
            Event::PlayStart { name: "all".into() },
            Event::TaskStart {
                name: "Loop".into(),
                hosts: 1,
            },
            Event::ItemsPlanned {
                host: "web1".into(),
                count: 60,
            },
        ];
        for i in 0..60 {
            let item = i.to_string();
            events.push(result(Status::Ok, Some(&item), serde_json::json!({})));
        }
        let mut with_bar = ConsoleReporter::new(Vec::new(), Vec::new(), 0, false, true);
        for e in &events {
            with_bar.handle(e);
        }
        let with_bar = String::from_utf8(with_bar.into_inner()).unwrap();
        assert_eq!(with_bar, render(&events, 0));
        assert!(with_bar.contains("ok: [web1] => (item=59)\n"), "{with_bar}");
    }

    #[test]
    fn prints_ansible_shapes() {
        let out = render(
            &[
                Event::PlayStart { name: "all".into() },
                Event::TaskStart {
                    name: "Create files".into(),
                    hosts: 1,
                },
                result(
                    Status::Changed,
                    Some("1"),
                    serde_json::json!({"changed": true}),
                ),
                result(Status::Ok, None, serde_json::json!({})),
                result(
                    Status::Failed,
                    None,
                    serde_json::json!({"rc": 1, "msg": "The command exited with a non-zero return code."}),
                ),
                Event::Recap(vec![HostStats {
                    host: "web1".into(),
                    ok: 2,
                    changed: 1,
                    failed: 1,
                    ..Default::default()
                }]),
            ],
            0,
        );
        let expected_play = format!("PLAY [all] {}", "*".repeat(69));
        assert!(out.contains(&expected_play), "{out}");
        assert!(out.contains("TASK [Create files] ****"), "{out}");
        assert!(out.contains("changed: [web1] => (item=1)\n"), "{out}");
        assert!(out.contains("ok: [web1]\n"), "{out}");
        assert!(
            out.contains(r#"fatal: [web1]: FAILED! => {"msg": "The command exited with a non-zero return code.", "rc": 1}"#),
            "{out}"
        );
        assert!(
            out.contains("web1                       : ok=2    changed=1    unreachable=0    failed=1    skipped=0    rescued=0    ignored=0"),
            "{out}"
        );
    }

    #[test]
    fn diffs_print_before_the_result_and_leave_the_dump() {
        let data = serde_json::json!({"changed": true, "diff": {"before": "old\n", "after": "new\n", "before_header": "/x", "after_header": "/x"}});
        let out = render(&[result(Status::Changed, None, data)], 1);
        assert!(
            out.starts_with("--- before: /x\n+++ after: /x\n@@ -1 +1 @@\n-old\n+new\n"),
            "{out}"
        );
        assert!(
            out.contains("changed: [web1] => {\"changed\": true}"),
            "{out}"
        );
    }

    #[test]
    fn status_keys_are_left_out_and_verbose_failures_are_indented() {
        let out = render(
            &[result(
                Status::Failed,
                None,
                serde_json::json!({"failed": true, "msg": "x", "changed": false}),
            )],
            0,
        );
        assert_eq!(
            out,
            "fatal: [web1]: FAILED! => {\"changed\": false, \"msg\": \"x\"}\n"
        );
        let mut e = result(
            Status::Failed,
            None,
            serde_json::json!({"failed": true, "assertion": "a", "msg": "Assertion failed"}),
        );
        if let Event::HostResult(r) = &mut e {
            r.verbose_always = true;
        }
        let out = render(&[e], 0);
        assert_eq!(
            out,
            "fatal: [web1]: FAILED! => {\n    \"assertion\": \"a\",\n    \"msg\": \"Assertion failed\"\n}\n"
        );
        let out = render(
            &[result(
                Status::Skipped,
                None,
                serde_json::json!({"skipped": true, "skip_reason": "r"}),
            )],
            1,
        );
        assert_eq!(out, "skipping: [web1] => {\"skip_reason\": \"r\"}\n");
        // Ansible's item skip line ends in a space; internal keys never show.
        let item = |status| {
            result(
                status,
                Some("b"),
                serde_json::json!({"item": "b", "_ansible_item_label": "b"}),
            )
        };
        assert_eq!(
            render(&[item(Status::Skipped)], 0),
            "skipping: [web1] => (item=b) \n"
        );
        assert_eq!(
            render(&[item(Status::Ok)], 1),
            "ok: [web1] => (item=b) => {\"item\": \"b\"}\n"
        );
        assert_eq!(
            render(&[item(Status::Skipped)], 1),
            "skipping: [web1] => (item=b)  => {\"item\": \"b\"}\n"
        );
    }

    #[test]
    fn warnings_go_to_stderr_once_and_leave_the_dump() {
        let data = serde_json::json!({
            "changed": false,
            "warnings": ["careful"],
            "deprecations": [{"msg": "old", "version": "2.99", "collection_name": "ansible.legacy",
                "deprecator": {"resolved_name": "ansible.legacy.m", "type": "module"}}],
        });
        let events = [
            result(Status::Ok, None, data.clone()),
            result(Status::Ok, None, data),
            Event::Warning("careful".into()),
            Event::Warning("new".into()),
        ];
        let mut r = ConsoleReporter::new(Vec::new(), Vec::new(), 1, false, false);
        for e in &events {
            r.handle(e);
        }
        let (out, err) = r.into_parts();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "ok: [web1] => {\"changed\": false}\nok: [web1] => {\"changed\": false}\n"
        );
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "[WARNING]: careful\n\
             [WARNING]: Deprecation warnings can be disabled by setting `deprecation_warnings=False` in ansible.cfg.\n\
             [DEPRECATION WARNING]: old. This feature will be removed from module 'm' in collection 'ansible.legacy' version 2.99.\n\
             [WARNING]: new\n"
        );
        let mut quiet = ConsoleReporter::new(Vec::new(), Vec::new(), 0, false, false)
            .with_deprecation_warnings(false);
        quiet.handle(&events[0]);
        let (out, err) = quiet.into_parts();
        assert_eq!(String::from_utf8(out).unwrap(), "ok: [web1]\n");
        assert_eq!(String::from_utf8(err).unwrap(), "[WARNING]: careful\n");
    }

    #[test]
    fn handlers_have_their_own_banner() {
        let out = render(
            &[Event::HandlerStart {
                name: "restart web".into(),
                hosts: 1,
            }],
            0,
        );
        assert_eq!(
            out,
            format!("\nRUNNING HANDLER [restart web] {}\n", "*".repeat(50))
        );
    }

    #[test]
    fn included_lines_read_as_ansible() {
        let out = render(
            &[
                Event::Included {
                    file: "/srv/pb/setup.yml".into(),
                    hosts: vec!["web1".into(), "web2".into()],
                    item: None,
                },
                Event::Included {
                    file: "/srv/pb/item.yml".into(),
                    hosts: vec!["web1".into()],
                    item: Some("a".into()),
                },
            ],
            0,
        );
        assert_eq!(
            out,
            "included: /srv/pb/setup.yml for web1, web2\nincluded: /srv/pb/item.yml for web1 => (item=a)\n"
        );
    }

    #[test]
    fn retries_read_as_ansible() {
        let out = render(
            &[Event::Retry {
                host: "web1".into(),
                task: "wait".into(),
                item: None,
                retries_left: 2,
            }],
            0,
        );
        assert_eq!(out, "FAILED - RETRYING: [web1]: wait (2 retries left).\n");
    }

    #[test]
    fn debug_results_are_indented_json() {
        let mut e = result(Status::Ok, None, serde_json::json!({"msg": "hi"}));
        if let Event::HostResult(r) = &mut e {
            r.verbose_always = true;
        }
        let out = render(&[e], 0);
        assert!(
            out.contains("ok: [web1] => {\n    \"msg\": \"hi\"\n}"),
            "{out}"
        );
    }
}
