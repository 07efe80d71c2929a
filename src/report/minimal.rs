//! The output of Ansible's ad-hoc command: its `minimal` callback (`host | CHANGED | rc=0
//! >>` and the command's output for command/shell/raw, `host | SUCCESS => {json}` for the
//! rest), the `oneline` callback of `-o`, and the `tree` callback of `-t DIR` (each host's
//! result as JSON in `DIR/host`). No banners and no recap: one block per host.

use std::io::{self, Write};
use std::path::PathBuf;

use console::Style;
use serde_json::{Map, Value};

use super::console::{render_diffs, terminal_colors};
use super::events::{Event, HostResult, Status};
use super::result_dump::{PythonCompact, sort_keys};
use super::task_error::{self, short_name};
use super::warnings::Warnings;

/// Which of Ansible's ad-hoc callbacks shapes the lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Minimal,
    OneLine,
}

pub struct AdhocReporter<W: Write, E: Write> {
    out: W,
    err: E,
    warnings: Warnings,
    verbosity: u8,
    colors: bool,
    shape: Shape,
    /// The module's name: command, shell and raw print their output rather than JSON.
    module: String,
    tree: Option<PathBuf>,
    /// The task as Ansible's error block quotes it (`{'action': ..., 'args': ...}`).
    task_repr: Option<String>,
}

impl AdhocReporter<io::Stdout, io::Stderr> {
    pub fn stdout(verbosity: u8, shape: Shape, module: &str) -> Self {
        let (colors, _) = terminal_colors();
        AdhocReporter::new(io::stdout(), io::stderr(), verbosity, colors, shape, module)
    }
}

impl<W: Write, E: Write> AdhocReporter<W, E> {
    pub fn new(out: W, err: E, verbosity: u8, colors: bool, shape: Shape, module: &str) -> Self {
        AdhocReporter {
            out,
            err,
            warnings: Warnings::new(true),
            verbosity,
            colors,
            shape,
            module: module.to_string(),
            tree: None,
            task_repr: None,
        }
    }

    /// `-t DIR`: each host's result is also written to `DIR/<host>`.
    pub fn with_tree(mut self, dir: Option<PathBuf>) -> Self {
        self.tree = dir;
        self
    }

    /// The task's text for the `[ERROR]: Task failed` block above a failed host's result.
    pub fn with_task_repr(mut self, repr: String) -> Self {
        self.task_repr = Some(repr);
        self
    }

    /// ansible.cfg's `deprecation_warnings`.
    pub fn with_deprecation_warnings(mut self, enabled: bool) -> Self {
        self.warnings = Warnings::new(enabled);
        self
    }

    pub fn into_parts(self) -> (W, E) {
        (self.out, self.err)
    }

    /// A deprecation of the command line's (`-o`, `-t`), in Ansible's words.
    pub fn deprecated(&mut self, text: &str) {
        for (_, line) in self.warnings.deprecation_text(text) {
            self.warn(&line);
        }
    }

    pub fn handle(&mut self, event: &Event) {
        match event {
            Event::HostResult(result) => self.result(result),
            Event::Warning(text) => {
                if let Some(text) = self.warnings.warning(text) {
                    self.warn(&text);
                }
            }
            Event::Deprecation(text) => self.deprecated(text),
            _ => {}
        }
        let _ = self.out.flush();
    }

    fn warn(&mut self, text: &str) {
        let body = text.strip_suffix('\n').unwrap_or(text);
        let styled = self.paint(body, Style::new().magenta().bold());
        let _ = writeln!(self.err, "{styled}");
        let _ = self.err.flush();
    }

    /// Ansible's display colours a message line by line.
    fn paint(&self, text: &str, style: Style) -> String {
        if !self.colors {
            return text.to_string();
        }
        let style = style.force_styling(true);
        text.split('\n')
            .map(|line| style.apply_to(line).to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn result(&mut self, result: &HostResult) {
        for (_, text) in self.warnings.from_result(&result.data) {
            self.warn(&text);
        }
        if self.shape == Shape::Minimal
            && let Some(diff) = result.data.get("diff")
        {
            // Ansible's display adds its line break to the diff's own.
            for text in render_diffs(diff) {
                let _ = writeln!(self.out, "{text}");
            }
        }
        if let Some(dir) = &self.tree
            && result.status != Status::Skipped
        {
            write_tree_file(dir, &result.host, &self.tree_text(result));
        }
        if self.shape == Shape::Minimal
            && let Some(block) = self.error_block(result)
        {
            let painted = self.paint(&block, Style::new().red());
            let _ = writeln!(self.out, "{painted}");
        }
        let (text, style) = match self.shape {
            Shape::Minimal => self.minimal(result),
            Shape::OneLine => self.one_line(result),
        };
        let text = text.strip_suffix('\n').unwrap_or(&text).to_string();
        let painted = self.paint(&text, style);
        let _ = writeln!(self.out, "{painted}");
    }

    /// What the minimal callback's exception handling prints above a failed or
    /// unreachable host's result: the error, the task's origin and the task itself.
    fn error_block(&self, result: &HostResult) -> Option<String> {
        let repr = self.task_repr.as_ref()?;
        let error = task_error::error_message(result.status, &self.module, &result.data)?;
        Some(format!(
            "[ERROR]: {error}\nOrigin: <adhoc '{}' task>\n\n{repr}\n",
            self.module
        ))
    }

    /// The result as the callbacks dump it: no internal keys, no `failed`/`skipped` (the
    /// line says so), and below -vvv no `invocation` and no `diff`.
    fn shown(&self, result: &HostResult) -> Map<String, Value> {
        let mut data: Map<String, Value> = result
            .data
            .iter()
            .filter(|(k, _)| !k.starts_with("_ansible_"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for key in ["exception", "warnings", "deprecations", "failed", "skipped"] {
            data.remove(key);
        }
        if self.verbosity < 3 {
            data.remove("invocation");
            data.remove("diff");
        }
        data
    }

    fn no_json(&self) -> bool {
        let short = short_name(&self.module);
        matches!(
            short,
            "command" | "shell" | "raw" | "win_command" | "win_shell"
        )
    }

    fn minimal(&self, result: &HostResult) -> (String, Style) {
        let data = self.shown(result);
        let host = &result.host;
        match result.status {
            Status::Ok | Status::Changed => {
                let (state, style) = ok_state(result);
                if self.no_json() && !result.data.contains_key("ansible_job_id") {
                    (command_output(host, &result.data, state), style)
                } else {
                    (format!("{host} | {state} => {}", pretty(&data, 4)), style)
                }
            }
            Status::Failed => {
                let text = if self.no_json() && !result.data.contains_key("module_stderr") {
                    command_output(host, &result.data, "FAILED")
                } else {
                    format!("{host} | FAILED! => {}", pretty(&data, 4))
                };
                (text, Style::new().red())
            }
            Status::Skipped => (format!("{host} | SKIPPED"), Style::new().cyan()),
            Status::Unreachable => (
                format!("{host} | UNREACHABLE! => {}", pretty(&data, 4)),
                Style::new().red().bright(),
            ),
        }
    }

    fn one_line(&self, result: &HostResult) -> (String, Style) {
        let mut data = self.shown(result);
        let host = &result.host;
        // The oneline callback does not clean debug's result as the others do.
        if result.verbose_always && !data.contains_key("changed") {
            data.insert("changed".into(), Value::Bool(false));
        }
        // `indent=0` is no indent to the callbacks' dump, so a result it always shows
        // indented (debug's) keeps its four spaces; the line breaks go either way.
        let flat = pretty(&data, if result.verbose_always { 4 } else { 0 }).replace('\n', "");
        match result.status {
            Status::Ok | Status::Changed => {
                let (state, style) = ok_state(result);
                if self.no_json() && !result.data.contains_key("ansible_job_id") {
                    (one_line_command(host, &result.data, state), style)
                } else {
                    (format!("{host} | {state} => {flat}"), style)
                }
            }
            Status::Failed => {
                // Every failed result carries an exception to this callback, which shows
                // it (without a traceback below -vvv) unless the command's output is shown.
                let mut text = if self.no_json() && !result.data.contains_key("module_stderr") {
                    one_line_command(host, &result.data, "FAILED")
                } else {
                    "An exception occurred during task execution. To see the full traceback, use -vvv. The error was: (traceback unavailable)".to_string()
                };
                text.push('\n');
                text.push_str(&format!("{host} | FAILED! => {flat}"));
                (text, Style::new().red())
            }
            Status::Skipped => (format!("{host} | SKIPPED"), Style::new().cyan()),
            Status::Unreachable => {
                let msg = result.data.get("msg").map(python_str).unwrap_or_default();
                (
                    format!("{host} | UNREACHABLE!: {msg}"),
                    Style::new().red().bright(),
                )
            }
        }
    }

    /// The tree callback's file: the result on one line (indented when always verbose).
    fn tree_text(&self, result: &HostResult) -> String {
        let data = self.shown(result);
        if result.verbose_always || self.verbosity > 2 {
            return pretty(&data, 4);
        }
        let mut buf = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, PythonCompact);
        serde::Serialize::serialize(&sort_keys(&Value::Object(data)), &mut ser).expect("json");
        String::from_utf8(buf).expect("utf8")
    }
}

/// A good result's word and colour.
fn ok_state(result: &HostResult) -> (&'static str, Style) {
    if result.status == Status::Changed {
        ("CHANGED", Style::new().yellow())
    } else {
        ("SUCCESS", Style::new().green())
    }
}

/// The minimal callback's block for command, shell and raw: a header, then the output,
/// error output and message as they are.
fn command_output(host: &str, data: &Map<String, Value>, caption: &str) -> String {
    let text = |k: &str| data.get(k).map(python_str).unwrap_or_default();
    let rc = data
        .get("rc")
        .map(python_str)
        .unwrap_or_else(|| "-1".into());
    format!(
        "{host} | {caption} | rc={rc} >>\n{}{}{}\n",
        text("stdout"),
        text("stderr"),
        text("msg")
    )
}

/// The oneline callback's line for command, shell and raw: line breaks escaped.
fn one_line_command(host: &str, data: &Map<String, Value>, caption: &str) -> String {
    let escaped = |k: &str| {
        data.get(k)
            .map(python_str)
            .unwrap_or_default()
            .replace('\n', "\\n")
            .replace('\r', "\\r")
    };
    let rc = data
        .get("rc")
        .map(python_str)
        .unwrap_or_else(|| "-1".into());
    let stderr = escaped("stderr");
    if stderr.is_empty() {
        format!(
            "{host} | {caption} | rc={rc} | (stdout) {}",
            escaped("stdout")
        )
    } else {
        format!(
            "{host} | {caption} | rc={rc} | (stdout) {} (stderr) {stderr}",
            escaped("stdout")
        )
    }
}

/// A value as Python's `%s` shows the plain ones (strings bare, numbers as written).
pub(super) fn python_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        other => other.to_string(),
    }
}

/// `json.dumps(data, indent=N, sort_keys=True, ensure_ascii=False)`.
fn pretty(data: &Map<String, Value>, indent: usize) -> String {
    let sorted = sort_keys(&Value::Object(data.clone()));
    let spaces = " ".repeat(indent);
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(spaces.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    serde::Serialize::serialize(&sorted, &mut ser).expect("json");
    String::from_utf8(buf).expect("utf8")
}

fn write_tree_file(dir: &std::path::Path, host: &str, text: &str) {
    let written = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(dir.join(host), text));
    if let Err(e) = written {
        eprintln!(
            "[WARNING]: Unable to write to {host:?}'s file in {}: {e}",
            dir.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(shape: Shape, module: &str, status: Status, data: Value, always: bool) -> String {
        let mut r = AdhocReporter::new(Vec::new(), Vec::new(), 0, false, shape, module);
        r.handle(&Event::HostResult(HostResult {
            host: "h1".into(),
            status,
            item: None,
            data: data.as_object().cloned().unwrap(),
            ignored: false,
            verbose_always: always,
            origin: None,
        }));
        String::from_utf8(r.into_parts().0).unwrap()
    }

    // Expected texts: ansible 2.21.5's `ansible h1 -i inv -m ... [-o]` on a local host.
    #[test]
    fn minimal_prints_json_or_the_commands_output() {
        let ping = serde_json::json!({"changed": false, "ping": "pong"});
        assert_eq!(
            render(Shape::Minimal, "ping", Status::Ok, ping.clone(), false),
            "h1 | SUCCESS => {\n    \"changed\": false,\n    \"ping\": \"pong\"\n}\n"
        );
        assert_eq!(
            render(Shape::OneLine, "ping", Status::Ok, ping, false),
            "h1 | SUCCESS => {\"changed\": false,\"ping\": \"pong\"}\n"
        );
        let failed = serde_json::json!({"changed": true, "rc": 3, "stdout": "hi", "stderr": "",
            "msg": "The command exited with a non-zero return code.", "failed": true});
        assert_eq!(
            render(Shape::Minimal, "shell", Status::Failed, failed, false),
            "h1 | FAILED | rc=3 >>\nhiThe command exited with a non-zero return code.\n"
        );
        let out = serde_json::json!({"changed": true, "rc": 1, "stdout": "out", "stderr": "err",
            "cmd": ["sh", "-c", "x"], "failed": true});
        assert_eq!(
            render(Shape::OneLine, "command", Status::Failed, out, false),
            "h1 | FAILED | rc=1 | (stdout) out (stderr) err\n\
             h1 | FAILED! => {\"changed\": true,\"cmd\": [\"sh\",\"-c\",\"x\"],\"rc\": 1,\"stderr\": \"err\",\"stdout\": \"out\"}\n"
        );
        let debug = serde_json::json!({"msg": "hello"});
        assert_eq!(
            render(Shape::OneLine, "debug", Status::Ok, debug, true),
            "h1 | SUCCESS => {    \"changed\": false,    \"msg\": \"hello\"}\n"
        );
    }
}
