//! The `[ERROR]: Task failed: ...` block Ansible's callbacks print above a failed or
//! unreachable host's result: the error, where the task is written, and its source.

use super::events::Status;
pub use crate::modules::ErrorCause;
use crate::playbook::Location;
use serde_json::{Map, Value};
use std::path::{Component, Path, PathBuf};

/// The task a result came from, as the error block names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskOrigin {
    pub location: Location,
    /// The action as written (`ansible.builtin.fail`, `command`).
    pub action: String,
    /// What the failure came from, when it is written elsewhere than the task.
    pub cause: Option<ErrorCause>,
    /// The task runs a controller-side (Python) action plugin: its failures are an
    /// action's.
    pub controller_action: bool,
}

/// Modules whose work is all in Ansible's controller-side action plugin: their failures
/// are an action's, the rest a module's.
const ACTIONS: &[&str] = &[
    "add_host",
    "assert",
    "debug",
    "fail",
    "group_by",
    "include_vars",
    "pause",
    "reboot",
    "set_fact",
    "set_stats",
    "validate_argument_spec",
    "wait_for_connection",
];

impl TaskOrigin {
    pub fn of(task: &crate::playbook::Task) -> Self {
        TaskOrigin {
            location: task.location.clone(),
            action: task.action.clone(),
            cause: None,
            controller_action: task.module.caps().controller_action,
        }
    }

    /// The task's origin with the cause its result names.
    pub fn caused_by(mut self, cause: Option<ErrorCause>) -> Self {
        self.cause = cause;
        self
    }
}

/// Whether the action's work is all in Ansible's controller-side action plugin (no module
/// runs, so nothing injects an `invocation`).
pub fn is_action(action: &str) -> bool {
    ACTIONS.contains(&short_name(action))
}

pub fn short_name(module: &str) -> &str {
    module
        .strip_prefix("ansible.builtin.")
        .or_else(|| module.strip_prefix("ansible.legacy."))
        .unwrap_or(module)
}

/// The block's first line after `[ERROR]: `, or `None` for a result that is no error.
/// A message the executor already words as the task's error ("Task failed: ...", as a
/// `failed_when` or a connection's) is kept as it is.
pub fn error_message(status: Status, action: &str, data: &Map<String, Value>) -> Option<String> {
    error_message_of(status, ACTIONS.contains(&short_name(action)), data)
}

/// [`error_message`] for a task whose failures are an action's (`by_action`) or a
/// module's.
fn error_message_of(status: Status, by_action: bool, data: &Map<String, Value>) -> Option<String> {
    let msg = data
        .get("msg")
        .map(super::minimal::python_str)
        .unwrap_or_default();
    match status {
        Status::Failed | Status::Unreachable if msg.starts_with("Task failed: ") => Some(msg),
        // The executor's own errors (a condition, an undefined variable) are the task's,
        // neither a module's nor an action's; Ansible names their cause below its origin.
        Status::Failed if msg.contains("\n\nThe error appears to be in '") => {
            let (error, _) = msg.split_once("\n\n").unwrap_or((&msg, ""));
            Some(format!("Task failed: {error}"))
        }
        Status::Failed => {
            let kind = if by_action {
                "Action failed"
            } else {
                "Module failed"
            };
            Some(format!("Task failed: {kind}: {msg}"))
        }
        Status::Unreachable => Some(format!("Task failed: {msg}")),
        _ => None,
    }
}

/// The whole block for a playbook's task: the error, its origin and the source around it.
pub fn error_block(
    status: Status,
    origin: &TaskOrigin,
    data: &Map<String, Value>,
) -> Option<String> {
    // A poll that gave up on its job fails without an exception, which Ansible's callback
    // needs for the block: none there (checked on 2.21.5).
    if data.contains_key("async_result") {
        return None;
    }
    let by_action = origin.controller_action || ACTIONS.contains(&short_name(&origin.action));
    let error = error_message_of(status, by_action, data)?;
    if let Some(cause) = origin.cause.as_ref().filter(|cause| cause.alone) {
        if cause.line.is_none() {
            // The message ends its own lines (a group of sub-events).
            return Some(format!("[ERROR]: {}", cause.message));
        }
        let location = Location {
            file: std::sync::Arc::from(cause.file.as_path()),
            line: cause.line.unwrap_or(0),
            column: cause.column.unwrap_or(0),
        };
        return Some(format!(
            "[ERROR]: {}\nOrigin: {}:{}:{}\n\n{}\n",
            cause.message,
            absolute(&location.file).display(),
            location.line,
            location.column,
            source_context(&location)
        ));
    }
    let context = source_context(&origin.location);
    let location = &origin.location;
    let task_origin = format!(
        "Origin: {}:{}:{}\n\n{context}\n",
        absolute(&location.file).display(),
        location.line,
        location.column
    );
    let Some(cause) = &origin.cause else {
        return Some(format!("[ERROR]: {error}\n{task_origin}"));
    };
    let file = absolute(&cause.file);
    let cause_origin = match cause.line {
        Some(line) => format!(
            "Origin: {}:{line}\n\n{}\n",
            file.display(),
            line_context(&file, line)
        ),
        None => format!("Origin: {}\n", file.display()),
    };
    Some(format!(
        "[ERROR]: {error}\n\nTask failed.\n{task_origin}\n<<< caused by >>>\n\n{}\n{cause_origin}",
        cause.message
    ))
}

/// A cause's line with the two before it, numbered, and the whole line marked, as
/// Ansible's `SourceContext` shows an origin without a column.
fn line_context(file: &Path, line: usize) -> String {
    let location = Location {
        file: std::sync::Arc::from(file),
        line,
        column: 0,
    };
    let context = source_context(&location);
    let Some(last) = context.rsplit('\n').next() else {
        return context;
    };
    let label_width = line.to_string().len();
    let Some(text) = last.get(label_width..) else {
        return context;
    };
    let width = text
        .strip_prefix(' ')
        .unwrap_or(text)
        .chars()
        .count()
        .max(1);
    format!(
        "{context}\n{} {}",
        " ".repeat(label_width),
        "^".repeat(width)
    )
}

/// The path as Python's `os.path.abspath` makes it, which Ansible's origins show: joined
/// to the working directory and `.`/`..` taken out without following links.
pub(super) fn absolute(path: &Path) -> PathBuf {
    let joined = match std::env::current_dir() {
        Ok(cwd) if path.is_relative() => cwd.join(path),
        _ => path.to_path_buf(),
    };
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Up to two lines before the task's, numbered, and a `^ column N` marker under its
/// column, as ansible-core 2.21's `SourceContext.from_origin` renders them; the reason in
/// parentheses when the file cannot be read.
pub fn source_context(location: &Location) -> String {
    const CONTEXT_LINES: usize = 2;
    const MAX_WIDTH: usize = 120;
    const TRUNCATED: &str = "...";
    let text = match std::fs::read_to_string(&location.file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return "(source not shown: FileNotFoundError)".into();
        }
        Err(_) => return "(source not shown: OSError)".into(),
    };
    if text.starts_with("$ANSIBLE_VAULT;") {
        return "(source not shown: content encrypted)".into();
    }
    let target = location.line;
    let start = target.saturating_sub(1 + CONTEXT_LINES);
    let lines: Vec<&str> = text.split('\n').skip(start).take(target - start).collect();
    if target == 0 || lines.len() != target - start {
        return "(source not shown: file truncated)".into();
    }
    let label_width = target.to_string().len();
    let max_line = MAX_WIDTH - label_width - 1;
    let mut usable = max_line;
    let mut out = Vec::new();
    for (n, line) in (start + 1..).zip(lines) {
        let mut line = line.strip_suffix('\r').unwrap_or(line).replace('\t', " ");
        if line.chars().count() > max_line {
            line = line
                .chars()
                .take(max_line - TRUNCATED.len())
                .collect::<String>()
                + TRUNCATED;
            usable = max_line - TRUNCATED.len();
        }
        let gap = if line.is_empty() { "" } else { " " };
        out.push(format!("{n:>label_width$}{gap}{line}"));
    }
    let col = location.column;
    if (1..=usable).contains(&col) {
        let marker = format!("column {col}");
        let marker = if col - 1 + 2 + marker.len() > max_line {
            format!(
                "{}{marker} ^",
                " ".repeat((col - 1).saturating_sub(marker.len() + 1))
            )
        } else {
            format!("{}^ {marker}", " ".repeat(col - 1))
        };
        out.push(format!("{} {marker}", " ".repeat(label_width)));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// The origin of a task at `line`:`column` of `file`, running `action`, that failed
    /// for `cause`.
    fn origin_at(
        file: &Path,
        line: usize,
        column: usize,
        action: &str,
        cause: ErrorCause,
    ) -> TaskOrigin {
        TaskOrigin {
            controller_action: false,
            location: Location {
                file: Arc::from(file),
                line,
                column,
            },
            action: action.into(),
            cause: Some(cause),
        }
    }

    #[test]
    fn source_is_numbered_and_marked_as_ansible_does() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pb.yml");
        let lines: String = (1..=9).map(|n| format!("# {n}\n")).collect();
        std::fs::write(&file, format!("{lines}    - fail:\n")).unwrap();
        let location = Location {
            file: Arc::from(file.as_path()),
            line: 10,
            column: 7,
        };
        assert_eq!(
            source_context(&location),
            " 8 # 8\n 9 # 9\n10     - fail:\n         ^ column 7"
        );
        let mut data = Map::new();
        data.insert("msg".into(), "boom".into());
        let origin = TaskOrigin {
            controller_action: false,
            location: location.clone(),
            action: "ansible.builtin.fail".into(),
            cause: None,
        };
        let block = error_block(Status::Failed, &origin, &data).unwrap();
        assert!(block.starts_with(&format!(
            "[ERROR]: Task failed: Action failed: boom\nOrigin: {}:10:7\n\n 8 # 8",
            file.display()
        )));
        assert_eq!(
            absolute(Path::new("/a/./b/../c.yml")),
            Path::new("/a/c.yml")
        );
        assert!(error_block(Status::Ok, &origin, &data).is_none());
    }

    /// A template file's syntax error, as ansible-playbook 2.21.5 shows it: the task's
    /// origin, then the cause with the file's line marked whole; without a line, the
    /// file alone.
    #[test]
    fn a_cause_in_another_file_is_shown_below_the_task() {
        let dir = tempfile::tempdir().unwrap();
        let task_file = dir.path().join("pb.yml");
        std::fs::write(&task_file, "- hosts: all\n  tasks:\n    - template:\n").unwrap();
        let template = dir.path().join("t.j2");
        std::fs::write(&template, "line 1\nline 2\nline 3\n{% sorry\n").unwrap();
        let mut data = Map::new();
        data.insert("msg".into(), "Task failed: Syntax error".into());
        let cause = ErrorCause {
            message: "Syntax error".into(),
            file: template.clone(),
            line: Some(4),
            column: None,
            alone: false,
        };
        let origin = origin_at(&task_file, 3, 7, "template", cause.clone());
        let block = error_block(Status::Failed, &origin, &data).unwrap();
        let want = format!(
            "[ERROR]: Task failed: Syntax error\n\nTask failed.\nOrigin: {}:3:7\n\n\
             1 - hosts: all\n2   tasks:\n3     - template:\n        ^ column 7\n\n\
             <<< caused by >>>\n\nSyntax error\nOrigin: {}:4\n\n\
             2 line 2\n3 line 3\n4 {{% sorry\n  ^^^^^^^^\n",
            task_file.display(),
            template.display()
        );
        assert_eq!(block, want);
        let origin = origin.caused_by(Some(ErrorCause {
            line: None,
            ..cause
        }));
        let block = error_block(Status::Failed, &origin, &data).unwrap();
        assert!(
            block.ends_with(&format!("Syntax error\nOrigin: {}\n", template.display())),
            "{block}"
        );
    }

    /// An error about one of the task's values (include_role's missing role) is shown
    /// alone at the value, as ansible-core 2.21.5 shows it.
    #[test]
    fn an_error_about_a_value_is_shown_at_the_value() {
        let dir = tempfile::tempdir().unwrap();
        let task_file = dir.path().join("pb.yml");
        std::fs::write(
            &task_file,
            "- hosts: all\n  tasks:\n    - include_role:\n        name: nope\n",
        )
        .unwrap();
        let mut data = Map::new();
        data.insert("msg".into(), "The role 'nope' was not found in: /r".into());
        let origin = origin_at(
            &task_file,
            3,
            7,
            "include_role",
            ErrorCause {
                message: "The role 'nope' was not found in: /r".into(),
                file: task_file.clone(),
                line: Some(4),
                column: Some(15),
                alone: true,
            },
        );
        assert_eq!(
            error_block(Status::Failed, &origin, &data).unwrap(),
            format!(
                "[ERROR]: The role 'nope' was not found in: /r\nOrigin: {}:4:15\n\n\
                 2   tasks:\n3     - include_role:\n4         name: nope\n                \
                 ^ column 15\n",
                task_file.display()
            )
        );
    }

    #[test]
    fn an_error_apart_from_the_task_is_shown_alone_where_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pb.yml");
        std::fs::write(
            &file,
            "- debug:\n  loop: [1]\n  loop_control:\n    break_when: 1 / 0\n",
        )
        .unwrap();
        let mut data = Map::new();
        data.insert("msg".into(), "hi".into());
        let origin = origin_at(
            &file,
            1,
            3,
            "debug",
            ErrorCause::alone(
                "A 'break_when' expression failed: Error rendering expression: division by zero"
                    .into(),
                file.clone(),
                4,
                17,
            ),
        );
        let block = error_block(Status::Failed, &origin, &data).unwrap();
        let want = format!(
            "[ERROR]: A 'break_when' expression failed: Error rendering expression: division by zero\n\
             Origin: {}:4:17\n\n\
             2   loop: [1]\n3   loop_control:\n4     break_when: 1 / 0\n                  ^ column 17\n",
            file.display()
        );
        assert_eq!(block, want);
    }
}
