//! The `config` lookup: Ansible's resolved setting values (variables, then the
//! environment, then ansible.cfg, then the default), for the core settings turbo-play
//! knows, the connection and shell plugins' options it knows, and the options a Python
//! lookup plugin on the lookup plugin path documents.

use std::path::{Path, PathBuf};

use minijinja::value::{Kwargs, Value as MjValue};
use minijinja::{Error as MjError, ErrorKind, State};
use serde_json::Value;

use super::filters::python_string_repr as repr;

fn error(message: impl Into<String>) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, message.into())
}

/// How a setting's text is read.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Str,
    Path,
    PathList,
    List,
    Bool,
    Int,
}

/// One setting: where its value may come from, each source's later entries winning.
struct Setting {
    name: &'static str,
    kind: Kind,
    /// JSON; a string may be a template over other settings (`{{ ANSIBLE_HOME }}`).
    default: &'static str,
    env: &'static [&'static str],
    ini: &'static [(&'static str, &'static str)],
    vars: &'static [&'static str],
}

/// Ansible's core settings that turbo-play honours or users commonly ask for, with the
/// names, sources and defaults of ansible-core 2.21.
const CORE: &[Setting] = &[
    Setting {
        name: "ANSIBLE_HOME",
        kind: Kind::Path,
        default: r#""~/.ansible""#,
        env: &["ANSIBLE_HOME"],
        ini: &[("defaults", "home")],
        vars: &[],
    },
    Setting {
        name: "ANSIBLE_COW_ACCEPTLIST",
        kind: Kind::List,
        default: r#"["bud-frogs", "bunny", "cheese", "daemon", "default", "dragon", "elephant-in-snake", "elephant", "eyes", "hellokitty", "kitty", "luke-koala", "meow", "milk", "moofasa", "moose", "ren", "sheep", "small", "stegosaurus", "stimpy", "supermilker", "three-eyes", "turkey", "turtle", "tux", "udder", "vader-koala", "vader", "www"]"#,
        env: &["ANSIBLE_COW_ACCEPTLIST"],
        ini: &[("defaults", "cowsay_enabled_stencils")],
        vars: &[],
    },
    Setting {
        name: "ANSIBLE_COW_SELECTION",
        kind: Kind::Str,
        default: r#""default""#,
        env: &["ANSIBLE_COW_SELECTION"],
        ini: &[("defaults", "cow_selection")],
        vars: &[],
    },
    Setting {
        name: "ANSIBLE_FORCE_COLOR",
        kind: Kind::Bool,
        default: r#"false"#,
        env: &["ANSIBLE_FORCE_COLOR"],
        ini: &[("defaults", "force_color")],
        vars: &[],
    },
    Setting {
        name: "COLLECTIONS_PATHS",
        kind: Kind::PathList,
        default: r#""{{ ANSIBLE_HOME ~ \"/collections:/usr/share/ansible/collections\" }}""#,
        env: &["ANSIBLE_COLLECTIONS_PATH"],
        ini: &[("defaults", "collections_path")],
        vars: &[],
    },
    Setting {
        name: "COLOR_CHANGED",
        kind: Kind::Str,
        default: r#""yellow""#,
        env: &["ANSIBLE_COLOR_CHANGED"],
        ini: &[("colors", "changed")],
        vars: &[],
    },
    Setting {
        name: "COLOR_ERROR",
        kind: Kind::Str,
        default: r#""red""#,
        env: &["ANSIBLE_COLOR_ERROR"],
        ini: &[("colors", "error")],
        vars: &[],
    },
    Setting {
        name: "COLOR_OK",
        kind: Kind::Str,
        default: r#""green""#,
        env: &["ANSIBLE_COLOR_OK"],
        ini: &[("colors", "ok")],
        vars: &[],
    },
    Setting {
        name: "COLOR_SKIP",
        kind: Kind::Str,
        default: r#""cyan""#,
        env: &["ANSIBLE_COLOR_SKIP"],
        ini: &[("colors", "skip")],
        vars: &[],
    },
    Setting {
        name: "COLOR_WARN",
        kind: Kind::Str,
        default: r#""bright purple""#,
        env: &["ANSIBLE_COLOR_WARN"],
        ini: &[("colors", "warn")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_BECOME",
        kind: Kind::Bool,
        default: r#"false"#,
        env: &["ANSIBLE_BECOME"],
        ini: &[("privilege_escalation", "become")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_BECOME_EXE",
        kind: Kind::Str,
        default: r#"null"#,
        env: &["ANSIBLE_BECOME_EXE"],
        ini: &[("privilege_escalation", "become_exe")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_BECOME_FLAGS",
        kind: Kind::Str,
        default: r#""""#,
        env: &["ANSIBLE_BECOME_FLAGS"],
        ini: &[("privilege_escalation", "become_flags")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_BECOME_METHOD",
        kind: Kind::Str,
        default: r#""sudo""#,
        env: &["ANSIBLE_BECOME_METHOD"],
        ini: &[("privilege_escalation", "become_method")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_BECOME_USER",
        kind: Kind::Str,
        default: r#""root""#,
        env: &["ANSIBLE_BECOME_USER"],
        ini: &[("privilege_escalation", "become_user")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_FORKS",
        kind: Kind::Int,
        default: r#"5"#,
        env: &["ANSIBLE_FORKS"],
        ini: &[("defaults", "forks")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_GATHERING",
        kind: Kind::Str,
        default: r#""implicit""#,
        env: &["ANSIBLE_GATHERING"],
        ini: &[("defaults", "gathering")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_HASH_BEHAVIOUR",
        kind: Kind::Str,
        default: r#""replace""#,
        env: &["ANSIBLE_HASH_BEHAVIOUR"],
        ini: &[("defaults", "hash_behaviour")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_HOST_LIST",
        kind: Kind::PathList,
        default: r#"["/etc/ansible/hosts"]"#,
        env: &["ANSIBLE_INVENTORY"],
        ini: &[("defaults", "inventory")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_JINJA2_NATIVE",
        kind: Kind::Bool,
        default: r#"true"#,
        env: &["ANSIBLE_JINJA2_NATIVE"],
        ini: &[("defaults", "jinja2_native")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_KEEP_REMOTE_FILES",
        kind: Kind::Bool,
        default: r#"false"#,
        env: &["ANSIBLE_KEEP_REMOTE_FILES"],
        ini: &[("defaults", "keep_remote_files")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_LOCAL_TMP",
        kind: Kind::Path,
        default: r#""{{ ANSIBLE_HOME ~ \"/tmp\" }}""#,
        env: &["ANSIBLE_LOCAL_TEMP"],
        ini: &[("defaults", "local_tmp")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_LOG_PATH",
        kind: Kind::Path,
        default: r#"null"#,
        env: &["ANSIBLE_LOG_PATH"],
        ini: &[("defaults", "log_path")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_LOOKUP_PLUGIN_PATH",
        kind: Kind::PathList,
        default: r#""{{ ANSIBLE_HOME ~ \"/plugins/lookup:/usr/share/ansible/plugins/lookup\" }}""#,
        env: &["ANSIBLE_LOOKUP_PLUGINS"],
        ini: &[("defaults", "lookup_plugins")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_MANAGED_STR",
        kind: Kind::Str,
        default: r#""Ansible managed""#,
        env: &[],
        ini: &[("defaults", "ansible_managed")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_MODULE_NAME",
        kind: Kind::Str,
        default: r#""command""#,
        env: &[],
        ini: &[("defaults", "module_name")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_PRIVATE_KEY_FILE",
        kind: Kind::Path,
        default: r#"null"#,
        env: &["ANSIBLE_PRIVATE_KEY_FILE"],
        ini: &[("defaults", "private_key_file")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_REMOTE_USER",
        kind: Kind::Str,
        default: r#"null"#,
        env: &["ANSIBLE_REMOTE_USER"],
        ini: &[("defaults", "remote_user")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_ROLES_PATH",
        kind: Kind::PathList,
        default: r#""{{ ANSIBLE_HOME ~ \"/roles:/usr/share/ansible/roles:/etc/ansible/roles\" }}""#,
        env: &["ANSIBLE_ROLES_PATH"],
        ini: &[("defaults", "roles_path")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_STDOUT_CALLBACK",
        kind: Kind::Str,
        default: r#""default""#,
        env: &["ANSIBLE_STDOUT_CALLBACK"],
        ini: &[("defaults", "stdout_callback")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_TIMEOUT",
        kind: Kind::Int,
        default: r#"10"#,
        env: &["ANSIBLE_TIMEOUT"],
        ini: &[("defaults", "timeout")],
        vars: &[],
    },
    Setting {
        name: "DEFAULT_VAULT_PASSWORD_FILE",
        kind: Kind::Path,
        default: r#"null"#,
        env: &["ANSIBLE_VAULT_PASSWORD_FILE"],
        ini: &[("defaults", "vault_password_file")],
        vars: &[],
    },
    Setting {
        name: "HOST_KEY_CHECKING",
        kind: Kind::Bool,
        default: r#"true"#,
        env: &["ANSIBLE_HOST_KEY_CHECKING"],
        ini: &[("defaults", "host_key_checking")],
        vars: &[],
    },
    Setting {
        name: "INJECT_FACTS_AS_VARS",
        kind: Kind::Bool,
        default: r#"true"#,
        env: &["ANSIBLE_INJECT_FACT_VARS"],
        ini: &[("defaults", "inject_facts_as_vars")],
        vars: &[],
    },
    Setting {
        name: "RETRY_FILES_ENABLED",
        kind: Kind::Bool,
        default: r#"false"#,
        env: &["ANSIBLE_RETRY_FILES_ENABLED"],
        ini: &[("defaults", "retry_files_enabled")],
        vars: &[],
    },
    Setting {
        name: "RETRY_FILES_SAVE_PATH",
        kind: Kind::Path,
        default: r#"null"#,
        env: &["ANSIBLE_RETRY_FILES_SAVE_PATH"],
        ini: &[("defaults", "retry_files_save_path")],
        vars: &[],
    },
    Setting {
        name: "_Z_TEST_ENTRY",
        kind: Kind::Str,
        default: r#"null"#,
        env: &["ANSIBLE_TEST_ENTRY"],
        ini: &[("testing", "valid")],
        vars: &["_z_test_entry"],
    },
    Setting {
        name: "_Z_TEST_ENTRY_2",
        kind: Kind::Str,
        default: r#"null"#,
        env: &["ANSIBLE_TEST_ENTRY2"],
        ini: &[("testing", "valid2")],
        vars: &[],
    },
    Setting {
        name: "_Z_TEST_ENTRY_3",
        kind: Kind::Path,
        default: r#""{{ANSIBLE_HOME}}""#,
        env: &["ANSIBLE_TEST_ENTRY3"],
        ini: &[("testing", "valid3")],
        vars: &[],
    },
];

/// The plugins' options turbo-play knows: (type, name, option).
const PLUGIN_OPTIONS: &[(&str, &str, Setting)] = &[
    (
        "connection",
        "ssh",
        Setting {
            name: "remote_user",
            kind: Kind::Str,
            default: "null",
            env: &["ANSIBLE_REMOTE_USER"],
            ini: &[("defaults", "remote_user")],
            vars: &["ansible_user", "ansible_ssh_user"],
        },
    ),
    (
        "connection",
        "ssh",
        Setting {
            name: "port",
            kind: Kind::Int,
            default: "null",
            env: &["ANSIBLE_REMOTE_PORT"],
            ini: &[("defaults", "remote_port")],
            vars: &["ansible_port", "ansible_ssh_port"],
        },
    ),
    (
        "connection",
        "ssh",
        Setting {
            name: "host",
            kind: Kind::Str,
            default: "\"{{ inventory_hostname }}\"",
            env: &[],
            ini: &[],
            vars: &["inventory_hostname", "ansible_host", "ansible_ssh_host"],
        },
    ),
    (
        "connection",
        "ssh",
        Setting {
            name: "private_key_file",
            kind: Kind::Path,
            default: "null",
            env: &["ANSIBLE_PRIVATE_KEY_FILE"],
            ini: &[("defaults", "private_key_file")],
            vars: &["ansible_private_key_file", "ansible_ssh_private_key_file"],
        },
    ),
    (
        "connection",
        "ssh",
        Setting {
            name: "timeout",
            kind: Kind::Int,
            default: "10",
            env: &["ANSIBLE_TIMEOUT", "ANSIBLE_SSH_TIMEOUT"],
            ini: &[("defaults", "timeout"), ("ssh_connection", "timeout")],
            vars: &["ansible_ssh_timeout"],
        },
    ),
    (
        "shell",
        "sh",
        Setting {
            name: "remote_tmp",
            kind: Kind::Str,
            default: "\"~/.ansible/tmp\"",
            env: &["ANSIBLE_REMOTE_TEMP", "ANSIBLE_REMOTE_TMP"],
            ini: &[("defaults", "remote_tmp")],
            vars: &["ansible_remote_tmp"],
        },
    ),
    (
        "become",
        "sudo",
        Setting {
            name: "become_user",
            kind: Kind::Str,
            default: "\"root\"",
            env: &["ANSIBLE_BECOME_USER", "ANSIBLE_SUDO_USER"],
            ini: &[
                ("privilege_escalation", "become_user"),
                ("sudo_become_plugin", "user"),
            ],
            vars: &["ansible_become_user", "ansible_sudo_user"],
        },
    ),
    (
        "become",
        "sudo",
        Setting {
            name: "become_exe",
            kind: Kind::Str,
            default: "\"sudo\"",
            env: &["ANSIBLE_BECOME_EXE", "ANSIBLE_SUDO_EXE"],
            ini: &[
                ("privilege_escalation", "become_exe"),
                ("sudo_become_plugin", "executable"),
            ],
            vars: &["ansible_become_exe", "ansible_sudo_exe"],
        },
    ),
    (
        "become",
        "sudo",
        Setting {
            name: "become_flags",
            kind: Kind::Str,
            default: "\"-H -S -n\"",
            env: &["ANSIBLE_BECOME_FLAGS", "ANSIBLE_SUDO_FLAGS"],
            ini: &[
                ("privilege_escalation", "become_flags"),
                ("sudo_become_plugin", "flags"),
            ],
            vars: &["ansible_become_flags", "ansible_sudo_flags"],
        },
    ),
    (
        "become",
        "sudo",
        Setting {
            name: "become_pass",
            kind: Kind::Str,
            default: "null",
            env: &["ANSIBLE_BECOME_PASS", "ANSIBLE_SUDO_PASS"],
            ini: &[("sudo_become_plugin", "password")],
            vars: &[
                "ansible_become_password",
                "ansible_become_pass",
                "ansible_sudo_pass",
            ],
        },
    ),
    (
        "become",
        "su",
        Setting {
            name: "become_user",
            kind: Kind::Str,
            default: "\"root\"",
            env: &["ANSIBLE_BECOME_USER", "ANSIBLE_SU_USER"],
            ini: &[
                ("privilege_escalation", "become_user"),
                ("su_become_plugin", "user"),
            ],
            vars: &["ansible_become_user", "ansible_su_user"],
        },
    ),
    (
        "become",
        "su",
        Setting {
            name: "become_exe",
            kind: Kind::Str,
            default: "\"su\"",
            env: &["ANSIBLE_BECOME_EXE", "ANSIBLE_SU_EXE"],
            ini: &[
                ("privilege_escalation", "become_exe"),
                ("su_become_plugin", "executable"),
            ],
            vars: &["ansible_become_exe", "ansible_su_exe"],
        },
    ),
    (
        "become",
        "su",
        Setting {
            name: "become_flags",
            kind: Kind::Str,
            default: "\"\"",
            env: &["ANSIBLE_BECOME_FLAGS", "ANSIBLE_SU_FLAGS"],
            ini: &[
                ("privilege_escalation", "become_flags"),
                ("su_become_plugin", "flags"),
            ],
            vars: &["ansible_become_flags", "ansible_su_flags"],
        },
    ),
    (
        "become",
        "su",
        Setting {
            name: "become_pass",
            kind: Kind::Str,
            default: "null",
            env: &["ANSIBLE_BECOME_PASS", "ANSIBLE_SU_PASS"],
            ini: &[("su_become_plugin", "password")],
            vars: &[
                "ansible_become_password",
                "ansible_become_pass",
                "ansible_su_pass",
            ],
        },
    ),
    (
        "become",
        "sudo",
        Setting {
            name: "sudo_chdir",
            kind: Kind::Str,
            default: "null",
            env: &["ANSIBLE_SUDO_CHDIR"],
            ini: &[("sudo_become_plugin", "chdir")],
            vars: &["ansible_sudo_chdir"],
        },
    ),
    (
        "become",
        "su",
        Setting {
            name: "prompt_l10n",
            kind: Kind::List,
            default: "[]",
            env: &["ANSIBLE_SU_PROMPT_L10N"],
            ini: &[("su_become_plugin", "localized_prompts")],
            vars: &["ansible_su_prompt_l10n"],
        },
    ),
    (
        "lookup",
        "config",
        Setting {
            name: "on_missing",
            kind: Kind::Str,
            default: "\"error\"",
            env: &[],
            ini: &[],
            vars: &[],
        },
    ),
    (
        "lookup",
        "config",
        Setting {
            name: "show_origin",
            kind: Kind::Bool,
            default: "null",
            env: &[],
            ini: &[],
            vars: &[],
        },
    ),
];

/// Plugins turbo-play has of each type Ansible's `plugin_type` names.
fn builtin_plugin(kind: &str, name: &str) -> bool {
    let name = name.strip_prefix("ansible.builtin.").unwrap_or(name);
    match kind {
        "connection" => ["ssh", "local"].contains(&name),
        "shell" => ["sh"].contains(&name),
        "become" => ["sudo", "su"].contains(&name),
        "lookup" => super::lookups::NAMES.contains(&name),
        _ => false,
    }
}

/// A documented option of a Python plugin file: what `DOCUMENTATION` says of it.
struct Documented {
    required: bool,
    kind: Kind,
    default: Value,
    env: Vec<String>,
    ini: Vec<(String, String)>,
    vars: Vec<String>,
}

/// Where the value came from, in Ansible's words.
fn resolve(
    state: &State,
    kind: Kind,
    default: &Value,
    env: &[&str],
    ini: &[(&str, &str)],
    vars: &[&str],
) -> Result<(Value, String), MjError> {
    for name in vars.iter().rev() {
        if let Some(value) = state.lookup(name).filter(|v| !v.is_undefined()) {
            let value = serde_json::to_value(&value).map_err(|e| error(e.to_string()))?;
            return Ok((convert(kind, value, None)?, format!("var: {name}")));
        }
    }
    for name in env.iter().rev() {
        if let Ok(text) = std::env::var(name) {
            return Ok((
                convert(kind, Value::from(text), None)?,
                format!("env: {name}"),
            ));
        }
    }
    if !ini.is_empty()
        && let Some((file, parsed)) = ansible_cfg()
    {
        for (section, key) in ini.iter().rev() {
            if let Some(text) = parsed.get(section, key) {
                let base = file.parent().map(Path::to_path_buf);
                let value = convert(kind, Value::from(text), base.as_deref())?;
                return Ok((value, file.display().to_string()));
            }
        }
    }
    let default = match default {
        Value::String(text) if super::is_template(text) => {
            let home = ansible_home(state)?;
            let rendered = state.env().render_str(
                text,
                minijinja::context! { ANSIBLE_HOME => home, ..state_context(state) },
            )?;
            Value::from(rendered)
        }
        other => other.clone(),
    };
    Ok((convert(kind, default, None)?, "default".into()))
}

/// The variables a default's template may name (`inventory_hostname`).
fn state_context(state: &State) -> MjValue {
    MjValue::from_iter(
        state
            .known_variables()
            .into_iter()
            .filter_map(|name| state.lookup(&name).map(|v| (name.to_string(), v))),
    )
}

fn ansible_home(state: &State) -> Result<Value, MjError> {
    let home = CORE
        .iter()
        .find(|s| s.name == "ANSIBLE_HOME")
        .expect("ANSIBLE_HOME is a core setting");
    let default: Value = serde_json::from_str(home.default).unwrap_or(Value::Null);
    Ok(resolve(state, home.kind, &default, home.env, home.ini, home.vars)?.0)
}

/// The ansible.cfg Ansible would read, parsed.
fn ansible_cfg() -> Option<(PathBuf, crate::config::Ini)> {
    let file = crate::config::Config::load().ok()?.file?;
    let text = std::fs::read_to_string(&file).ok()?;
    let parsed = crate::config::Ini::parse(&file, &text).ok()?;
    Some((file, parsed))
}

fn expand_user(path: &str) -> String {
    match (path.strip_prefix('~'), std::env::var("HOME")) {
        (Some(rest), Ok(home)) if rest.is_empty() || rest.starts_with('/') => {
            format!("{home}{rest}")
        }
        _ => path.to_string(),
    }
}

/// A value in the setting's type, as Ansible's config manager converts it; relative
/// paths from ansible.cfg are its directory's.
fn convert(kind: Kind, value: Value, base: Option<&Path>) -> Result<Value, MjError> {
    let path = |text: &str| -> String {
        let expanded = expand_user(text);
        match base {
            Some(dir) if !Path::new(&expanded).is_absolute() => {
                dir.join(expanded).display().to_string()
            }
            _ => expanded,
        }
    };
    Ok(match (kind, value) {
        (_, Value::Null) => Value::Null,
        (Kind::Str, Value::String(s)) => Value::String(s),
        (Kind::Path, Value::String(s)) => Value::from(path(&s)),
        (Kind::PathList, Value::String(s)) => Value::from(
            s.split(':')
                .filter(|p| !p.is_empty())
                .map(path)
                .collect::<Vec<_>>(),
        ),
        (Kind::PathList, Value::Array(items)) => Value::from(
            items
                .iter()
                .map(|i| Value::from(path(i.as_str().unwrap_or_default())))
                .collect::<Vec<_>>(),
        ),
        (Kind::List, Value::String(s)) => Value::from(
            s.split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>(),
        ),
        (Kind::Bool, Value::String(s)) => Value::from(match s.to_ascii_lowercase().as_str() {
            "y" | "yes" | "on" | "1" | "true" | "t" => true,
            "n" | "no" | "off" | "0" | "false" | "f" | "" => false,
            _ => {
                return Err(error(format!(
                    "Invalid value {} for a boolean setting",
                    repr(&s)
                )));
            }
        }),
        (Kind::Int, Value::String(s)) => Value::from(
            s.trim()
                .parse::<i64>()
                .map_err(|_| error(format!("Invalid value provided for 'int': {}", repr(&s))))?,
        ),
        (_, other) => other,
    })
}

/// `lookup('config', 'SETTING', ...)` and, with `plugin_type=`/`plugin_name=`, a
/// plugin's option.
pub(super) fn config(
    state: &State,
    terms: &[MjValue],
    kwargs: &Kwargs,
    playbook_dir: &Path,
) -> Result<Vec<MjValue>, MjError> {
    let missing = kwargs
        .get::<Option<String>>("on_missing")?
        .unwrap_or_else(|| "error".into());
    if !["error", "warn", "skip"].contains(&missing.as_str()) {
        return Err(error(format!(
            "Invalid value {} for config 'on_missing' for 'config' lookup plugin.",
            repr(&missing)
        )));
    }
    let plugin_type: Option<String> = kwargs.get("plugin_type")?;
    let plugin_name: Option<String> = kwargs.get("plugin_name")?;
    let show_origin = kwargs.get::<Option<bool>>("show_origin")?.unwrap_or(false);
    let plugin = match (plugin_type, plugin_name) {
        (None, None) => None,
        (Some(kind), Some(name)) => Some((kind, name)),
        _ => {
            return Err(error(
                "Both plugin_type and plugin_name are required, cannot use one without the other.",
            ));
        }
    };
    let documented = match &plugin {
        Some((kind, name)) if !builtin_plugin(kind, name) => Some(
            documented_options(kind, name, playbook_dir)
                .ok_or_else(|| error(format!("Unable to load {kind} plugin {}.", repr(name))))?,
        ),
        _ => None,
    };
    let mut out = Vec::new();
    for term in terms {
        let Some(name) = term.as_str() else {
            return Err(error(format!(
                "Invalid setting identifier, {} is not a <class 'str'>, its a <class '{}'>.",
                super::filters::python_str(term),
                super::filters::mj_type_name(term)
            )));
        };
        let found = match (&plugin, &documented) {
            (None, _) => CORE.iter().find(|s| s.name == name).map(|s| {
                let default = serde_json::from_str(s.default).unwrap_or(Value::Null);
                resolve(state, s.kind, &default, s.env, s.ini, s.vars)
            }),
            (Some((kind, plugin)), Some(options)) => {
                options.iter().find(|(n, _)| n == name).map(|(_, o)| {
                    let env: Vec<&str> = o.env.iter().map(String::as_str).collect();
                    let ini: Vec<(&str, &str)> = o
                        .ini
                        .iter()
                        .map(|(s, k)| (s.as_str(), k.as_str()))
                        .collect();
                    let vars: Vec<&str> = o.vars.iter().map(String::as_str).collect();
                    let resolved = resolve(state, o.kind, &o.default, &env, &ini, &vars)?;
                    if o.required && resolved.0.is_null() {
                        return Err(error(format!(
                            "Required config {} for {} {kind} plugin not provided.",
                            repr(name),
                            repr(plugin)
                        )));
                    }
                    Ok(resolved)
                })
            }
            (Some((kind, plugin)), None) => {
                let plugin = plugin.strip_prefix("ansible.builtin.").unwrap_or(plugin);
                PLUGIN_OPTIONS
                    .iter()
                    .find(|(k, p, s)| k == kind && *p == plugin && s.name == name)
                    .map(|(_, _, s)| {
                        let default = serde_json::from_str(s.default).unwrap_or(Value::Null);
                        resolve(state, s.kind, &default, s.env, s.ini, s.vars)
                    })
            }
        };
        let Some(found) = found else {
            let message = match &plugin {
                None => format!("No config definition exists for {}.", repr(name)),
                Some((kind, plugin)) => format!(
                    "No config definition exists for {} for {} {kind} plugin.",
                    repr(name),
                    repr(plugin)
                ),
            };
            match missing.as_str() {
                "error" => return Err(error(message)),
                // Ansible warns for `warn`; a lookup here has no channel for warnings.
                _ => continue,
            }
        };
        let (value, origin) = found?;
        let value = MjValue::from_serialize(&value);
        out.push(if show_origin {
            MjValue::from(vec![value, MjValue::from(origin)])
        } else {
            value
        });
    }
    Ok(out)
}

/// The options a Python plugin documents, from `<name>.py` on the plugin path
/// (`ANSIBLE_<TYPE>_PLUGINS`, then `<type>_plugins/` beside the playbook).
fn documented_options(
    kind: &str,
    name: &str,
    playbook_dir: &Path,
) -> Option<Vec<(String, Documented)>> {
    let env_name = format!("ANSIBLE_{}_PLUGINS", kind.to_ascii_uppercase());
    let mut dirs: Vec<PathBuf> = std::env::var(&env_name)
        .map(|v| {
            v.split(':')
                .filter(|d| !d.is_empty())
                .map(|d| PathBuf::from(expand_user(d)))
                .collect()
        })
        .unwrap_or_default();
    dirs.push(playbook_dir.join(format!("{kind}_plugins")));
    let file = dirs
        .iter()
        .map(|d| d.join(format!("{name}.py")))
        .find(|f| f.is_file())?;
    let source = std::fs::read_to_string(file).ok()?;
    let doc = documentation(&source)?;
    let parsed: Value = serde_saphyr::from_str(doc).ok()?;
    let options = parsed.get("options")?.as_object()?;
    let names = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| e.get("name").and_then(Value::as_str).map(str::to_string))
            .collect()
    };
    Some(
        options
            .iter()
            .map(|(option, spec)| {
                let kind = match spec.get("type").and_then(Value::as_str).unwrap_or("string") {
                    "path" | "tmppath" => Kind::Path,
                    "pathspec" | "pathlist" => Kind::PathList,
                    "list" => Kind::List,
                    "bool" | "boolean" => Kind::Bool,
                    "int" | "integer" => Kind::Int,
                    _ => Kind::Str,
                };
                let ini = spec
                    .get("ini")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|e| {
                        Some((
                            e.get("section")?.as_str()?.to_string(),
                            e.get("key")?.as_str()?.to_string(),
                        ))
                    })
                    .collect();
                let documented = Documented {
                    required: spec
                        .get("required")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    kind,
                    default: spec.get("default").cloned().unwrap_or(Value::Null),
                    env: names(spec.get("env")),
                    ini,
                    vars: names(spec.get("vars")),
                };
                (option.clone(), documented)
            })
            .collect(),
    )
}

/// The text of a plugin file's `DOCUMENTATION = """..."""` (or `r"""`).
fn documentation(source: &str) -> Option<&str> {
    let start = source.find("DOCUMENTATION")?;
    let rest = &source[start..];
    let open = rest.find("\"\"\"")? + 3;
    let body = &rest[open..];
    let close = body.find("\"\"\"")?;
    Some(&body[..close])
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn values_convert_as_ansible_types_them() {
        assert_eq!(
            convert(Kind::Int, Value::from("2022"), None).unwrap(),
            Value::from(2022)
        );
        assert_eq!(
            convert(Kind::List, Value::from("a, b,,c"), None).unwrap(),
            serde_json::json!(["a", "b", "c"])
        );
        assert_eq!(
            convert(
                Kind::PathList,
                Value::from("/a:rel"),
                Some(Path::new("/cfg"))
            )
            .unwrap(),
            serde_json::json!(["/a", "/cfg/rel"])
        );
        assert_eq!(
            convert(Kind::Bool, Value::from("yes"), None).unwrap(),
            Value::from(true)
        );
        assert!(convert(Kind::Int, Value::from("x"), None).is_err());
    }

    #[test]
    fn core_table_defaults_are_json() {
        for setting in CORE.iter().chain(PLUGIN_OPTIONS.iter().map(|(_, _, s)| s)) {
            assert!(
                serde_json::from_str::<Value>(setting.default).is_ok(),
                "{}",
                setting.name
            );
        }
        let doc = documentation("X\nDOCUMENTATION = r\"\"\"\noptions:\n  a: {}\n\"\"\"\n").unwrap();
        assert_eq!(doc, "\noptions:\n  a: {}\n");
    }
}
