//! The arguments a module receives: the task's, plus the `_ansible_*` internal arguments
//! Ansible 2.21's action base sets (`ActionBase._update_module_args`), with its defaults
//! for what turbo-play has no setting of its own for.

use serde_json::{Map, Value, json};

/// What the internal arguments are made from.
pub struct Internal<'a> {
    pub check_mode: bool,
    pub diff: bool,
    pub no_log: bool,
    pub verbosity: u8,
    /// The action as the task wrote it (`ini_file`, `community.general.ini_file`).
    pub module_name: &'a str,
    /// ansible-core's version on the controller, as `_ansible_version` reports it.
    pub version: &'a str,
    /// `ansible_syslog_facility`, else Ansible's default.
    pub syslog_facility: Option<&'a str>,
    /// Ansible's `INJECT_INVOCATION`: the module returns its arguments as `invocation`.
    pub inject_invocation: bool,
}

/// The task's arguments with Ansible's internal ones added.
pub fn module_args(task_args: &Map<String, Value>, internal: &Internal) -> Map<String, Value> {
    let mut args = task_args.clone();
    let set = [
        ("_ansible_check_mode", json!(internal.check_mode)),
        ("_ansible_no_log", json!(internal.no_log)),
        ("_ansible_debug", json!(false)),
        ("_ansible_diff", json!(internal.diff)),
        ("_ansible_verbosity", json!(internal.verbosity)),
        ("_ansible_version", json!(internal.version)),
        ("_ansible_module_name", json!(internal.module_name)),
        (
            "_ansible_syslog_facility",
            json!(internal.syslog_facility.unwrap_or("LOG_USER")),
        ),
        (
            "_ansible_selinux_special_fs",
            json!(["fuse", "nfs", "vboxsf", "ramfs", "9p", "vfat"]),
        ),
        ("_ansible_socket", Value::Null),
        ("_ansible_shell_executable", json!("/bin/sh")),
        ("_ansible_keep_remote_files", json!(false)),
        // Ansible's pipelining makes no remote temp dir: modules that need one make it
        // under `_ansible_remote_tmp` and remove it at exit.
        ("_ansible_tmpdir", Value::Null),
        ("_ansible_remote_tmp", json!("~/.ansible/tmp")),
        ("_ansible_ignore_unknown_opts", json!(false)),
        ("_ansible_target_log_info", Value::Null),
        ("_ansible_tracebacks_for", json!([])),
        (
            "_ansible_inject_invocation",
            json!(internal.inject_invocation),
        ),
    ];
    for (name, value) in set {
        args.insert(name.into(), value);
    }
    args
}

/// New-style modules read `{"ANSIBLE_MODULE_ARGS": {...}}`.
pub fn json_args(args: Map<String, Value>) -> Vec<u8> {
    let mut wrapped = Map::new();
    wrapped.insert("ANSIBLE_MODULE_ARGS".into(), Value::Object(args));
    serde_json::to_vec(&Value::Object(wrapped)).expect("JSON values serialize")
}

/// Old-style modules read `k=v` pairs, each value quoted as Python's `shlex.quote` of
/// its `str()`.
pub fn kv_args(args: &Map<String, Value>) -> Vec<u8> {
    let mut out = String::new();
    for (key, value) in args {
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Bool(true) => "True".into(),
            Value::Bool(false) => "False".into(),
            Value::Null => "None".into(),
            other => crate::modules::spec::python_text(other),
        };
        out.push_str(&format!("{key}={} ", shell_quote(&text)));
    }
    out.into_bytes()
}

/// Python's `shlex.quote`.
fn shell_quote(text: &str) -> String {
    if text.is_empty() {
        return "''".into();
    }
    let safe = |c: char| c.is_alphanumeric() || c == '_' || "@%+=:,./-".contains(c);
    if text.chars().all(safe) {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', "'\"'\"'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_arguments_are_added_as_ansible_sets_them() {
        let task = json!({"path": "/x"}).as_object().unwrap().clone();
        let args = module_args(
            &task,
            &Internal {
                check_mode: true,
                diff: false,
                no_log: false,
                verbosity: 0,
                module_name: "hello",
                version: "2.21.5",
                syslog_facility: None,
                inject_invocation: false,
            },
        );
        assert_eq!(args["path"], json!("/x"));
        assert_eq!(args["_ansible_check_mode"], json!(true));
        assert_eq!(args["_ansible_module_name"], json!("hello"));
        assert_eq!(args["_ansible_syslog_facility"], json!("LOG_USER"));
        assert_eq!(args["_ansible_remote_tmp"], json!("~/.ansible/tmp"));
    }

    #[test]
    fn old_style_arguments_are_quoted_as_shlex() {
        let args = json!({"a": "x y", "b": true, "c": "it's", "d": "", "e": 3})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(
            String::from_utf8(kv_args(&args)).unwrap(),
            "a='x y' b=True c='it'\"'\"'s' d='' e=3 "
        );
    }
}
