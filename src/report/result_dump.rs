//! A result's data as Ansible's callbacks dump it after ` => `: JSON with sorted keys (on
//! one line, or indented for verbose and pretty output), or YAML (`callback_result_format
//! = yaml`: PyYAML's block style, multi-line strings as literal blocks, indented under
//! the line).

use std::io::{self, Write};

use serde_json::{Map, Value};

use crate::display_options::{DisplayOptions, ResultFormat, YamlWidth};
use crate::template::yaml_dump;

/// `_dump_results`: without the internal keys, and without the exception, warnings and
/// deprecations the callback has shown already.
pub fn dump_result(
    data: &Map<String, Value>,
    display: &DisplayOptions,
    verbose_always: bool,
    verbosity: u8,
) -> String {
    let mut public: Map<String, Value> = data
        .iter()
        .filter(|(k, _)| !k.starts_with("_ansible_"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let indent = display.dump_indent(verbose_always, verbosity);
    match display.result_format {
        ResultFormat::Json => json_text(&sort_keys(&Value::Object(public)), indent),
        ResultFormat::Yaml => {
            // Pretty (the default for YAML) drops the `_lines` copies of the output.
            let lossy = display.pretty_results != Some(false);
            if lossy {
                for (text, lines) in [("stdout", "stdout_lines"), ("stderr", "stderr_lines")] {
                    if public.contains_key(text) && public.contains_key(lines) {
                        public.insert(lines.into(), Value::from("<omitted>"));
                    }
                }
            }
            let yaml = yaml_dump::dump_with(
                &Value::Object(public),
                &yaml_dump::Options {
                    // PyYAML's own indent when the callback asks none.
                    indent: indent.unwrap_or(2),
                    style: yaml_dump::Style::Block,
                    width: yaml_width(display.yaml_width),
                    literal_blocks: Some(yaml_dump::Lossy(lossy)),
                },
            );
            // `textwrap.indent`: lines of white space only stay as they are.
            let pad = " ".repeat(indent.unwrap_or(4));
            let mut out = String::from("\n");
            for line in yaml.split_inclusive('\n') {
                if !line.trim().is_empty() {
                    out.push_str(&pad);
                }
                out.push_str(line);
            }
            // The display ends the line.
            if out.ends_with('\n') {
                out.pop();
            }
            out
        }
    }
}

/// `_get_yaml_width`.
fn yaml_width(width: YamlWidth) -> usize {
    match width {
        YamlWidth::Default => yaml_dump::DEFAULT_WIDTH,
        YamlWidth::NoBreak => 0x7FFF_FFFF,
        YamlWidth::Terminal => terminal_columns(),
    }
}

/// Ansible's display width: the terminal's less one, never under 79.
fn terminal_columns() -> usize {
    let term = console::Term::stdout();
    let width = if term.is_term() {
        usize::from(term.size().1)
    } else {
        0
    };
    width.saturating_sub(1).max(79)
}

fn json_text(value: &Value, indent: Option<usize>) -> String {
    let mut buf = Vec::new();
    match indent {
        Some(n) => {
            let spaces = " ".repeat(n);
            let fmt = serde_json::ser::PrettyFormatter::with_indent(spaces.as_bytes());
            let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
            serde::Serialize::serialize(value, &mut ser).expect("json");
        }
        None => {
            let mut ser = serde_json::Serializer::with_formatter(&mut buf, PythonCompact);
            serde::Serialize::serialize(value, &mut ser).expect("json");
        }
    }
    String::from_utf8(buf).expect("utf8")
}

/// `json.dumps(data, indent=1, sort_keys=True)` with its line breaks removed.
pub(super) fn dump_flat(data: &Map<String, Value>) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn yaml(pretty: Option<bool>, indent: usize) -> DisplayOptions {
        DisplayOptions {
            result_format: ResultFormat::Yaml,
            pretty_results: pretty,
            result_indentation: indent,
            ..DisplayOptions::default()
        }
    }

    /// As ansible-core 2.21.5's callback_default target records them.
    #[test]
    fn yaml_results_as_the_default_callback_dumps_them() {
        let data = json!({"changed": true, "cmd": ["echo", "foo"], "delta": "0:00:00.000000",
            "msg": "", "rc": 0, "stdout": "foo", "stdout_lines": ["foo"], "stderr": "",
            "stderr_lines": [], "_ansible_no_log": false})
        .as_object()
        .cloned()
        .unwrap();
        assert_eq!(
            dump_result(&data, &yaml(None, 4), false, 1),
            "\n    changed: true\n    cmd:\n    - echo\n    - foo\n    delta: '0:00:00.000000'\n    \
             msg: ''\n    rc: 0\n    stderr: ''\n    stderr_lines: <omitted>\n    stdout: foo\n    \
             stdout_lines: <omitted>"
        );
        assert_eq!(
            dump_result(&data, &yaml(Some(false), 4), false, 1),
            "\n    changed: true\n    cmd:\n    - echo\n    - foo\n    delta: '0:00:00.000000'\n    \
             msg: ''\n    rc: 0\n    stderr: ''\n    stderr_lines: []\n    stdout: foo\n    \
             stdout_lines:\n    - foo"
        );
        let msg = json!({"msg": "äöü\néêè"}).as_object().cloned().unwrap();
        assert_eq!(
            dump_result(&msg, &yaml(None, 2), true, 0),
            "\n  msg: |-\n    äöü\n    éêè"
        );
    }

    #[test]
    fn json_results_indent_for_verbose_output_and_from_vvv() {
        let data = json!({"b": 1, "a": [1]}).as_object().cloned().unwrap();
        let display = DisplayOptions::default();
        assert_eq!(
            dump_result(&data, &display, false, 2),
            "{\"a\": [1], \"b\": 1}"
        );
        assert_eq!(
            dump_result(&data, &display, false, 3),
            "{\n    \"a\": [\n        1\n    ],\n    \"b\": 1\n}"
        );
        assert_eq!(
            dump_result(&data, &display, true, 0),
            dump_result(&data, &display, false, 3)
        );
    }
}
