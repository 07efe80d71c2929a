//! Modules: Ansible's task actions, each a pure planner. A module turns its (already
//! templated) arguments into one agent [`Op`] or an immediate outcome, and turns the
//! agent's [`OpResult`] into the result Ansible would register. Nothing here does I/O on
//! the target; the executor sends the ops.
//!
//! Adding a module = one file with a `Module` impl + one entry in [`MODULES`].

use std::path::{Path, PathBuf};

use serde_json::Value;
use turbo_proto::{FileMode, Op, OpResult};

use crate::template::{Templar, TemplateError};

mod assert;
mod command;
mod copy;
mod copy_tree;
mod debug;
mod file;
mod include;
mod include_vars;
mod inventory_edit;
mod meta;
mod pause;
mod ping;
mod set_fact;
mod setup;
mod stat;
mod template;
mod unsupported;

pub use assert::VERBOSE_ALWAYS;
pub use include::is_dynamic_include;
pub use pause::PAUSE_SECONDS;
pub use unsupported::{NOT_YET_SUPPORTED, collection_module};

/// Arguments after templating, as the registered result's `invocation.module_args` has them.
pub type ModuleArgs = serde_json::Map<String, Value>;

pub struct PlanContext<'a> {
    pub playbook_dir: &'a Path,
    /// The task's role directory: its `files/`/`templates/` come before the playbook's.
    pub role_dir: Option<&'a Path>,
    /// The directory of the file the task is written in (an imported tasks file's), searched
    /// after the role's and before the playbook's, as Ansible's task search path.
    pub task_dir: Option<&'a Path>,
    pub check_mode: bool,
    pub diff: bool,
    /// The task's variables, for modules that template on the controller (template, debug var=).
    pub vars: Option<&'a minijinja::Value>,
    pub templar: Option<&'a Templar>,
    /// ansible.cfg's `ansible_managed`; `None` means Ansible's default text.
    pub ansible_managed: Option<&'a str>,
}

impl<'a> PlanContext<'a> {
    pub fn new(playbook_dir: &'a Path) -> PlanContext<'a> {
        PlanContext {
            playbook_dir,
            role_dir: None,
            task_dir: None,
            check_mode: false,
            diff: false,
            vars: None,
            templar: None,
            ansible_managed: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Nothing to send to the target (debug, or skipped in check mode).
    Done(TaskOutcome),
    /// Send this op (all ops modules plan can go into a `Batch` with other items' ops).
    Remote(Op),
}

pub trait Module: Send + Sync {
    /// The short name, e.g. "copy".
    fn name(&self) -> &'static str;
    /// Accepted argument names (with aliases), checked when the playbook is loaded.
    fn arg_names(&self) -> &'static [&'static str];
    /// Whether any argument name is accepted (set_fact: the names are the variables).
    fn accepts_any_args(&self) -> bool {
        false
    }
    /// Whether a plain string argument is the command line itself (command, shell).
    fn free_form(&self) -> bool {
        false
    }
    /// True when the op this module plans can go into a `Batch` with other items' ops
    /// (all of ours: each item's op stands alone).
    fn batchable(&self) -> bool {
        true
    }
    fn plan(&self, args: &ModuleArgs, ctx: &PlanContext) -> Result<Plan, ModuleError>;
    /// The agent's reply as the task's outcome. Modules that only ever plan
    /// `Plan::Done` (debug, set_fact, assert...) keep this default: a reply can only be
    /// an error.
    fn finish(&self, args: &ModuleArgs, result: OpResult) -> TaskOutcome {
        let _ = args;
        unexpected(self.name(), result)
    }
    /// [`Module::finish`] for a request made in check mode (nothing was changed).
    fn finish_check(&self, args: &ModuleArgs, result: OpResult) -> TaskOutcome {
        self.finish(args, result)
    }
    /// The bytes behind a planned `FileContent::Digest`, for when the agent answers
    /// `NeedContent`. Only modules that plan digests (copy, template) return `Some`.
    fn content(
        &self,
        args: &ModuleArgs,
        ctx: &PlanContext,
    ) -> Result<Option<Vec<u8>>, ModuleError> {
        let _ = (args, ctx);
        Ok(None)
    }
}

impl std::fmt::Debug for dyn Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Module({})", self.name())
    }
}

/// What a task did on one host (or for one loop item).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskOutcome {
    pub changed: bool,
    pub failed: bool,
    pub skipped: bool,
    pub msg: Option<String>,
    /// The registered result's other keys, in Ansible's shape (`rc`, `stdout`, `dest`...).
    pub data: serde_json::Map<String, Value>,
}

impl TaskOutcome {
    pub fn failed(msg: impl Into<String>) -> TaskOutcome {
        TaskOutcome {
            failed: true,
            msg: Some(msg.into()),
            ..TaskOutcome::default()
        }
    }

    /// The result as `register:` stores it in Ansible: `data` plus `changed` and `failed`
    /// always, `skipped` when true, and `msg` when there is one.
    pub fn registered(&self) -> serde_json::Map<String, Value> {
        let mut out = self.data.clone();
        out.insert("changed".into(), Value::Bool(self.changed));
        out.insert("failed".into(), Value::Bool(self.failed));
        if self.skipped {
            out.insert("skipped".into(), Value::Bool(true));
        }
        if let Some(msg) = &self.msg {
            out.insert("msg".into(), Value::String(msg.clone()));
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    #[error("mode must be octal or symbolic, got '{0}'")]
    InvalidMode(String),
    #[error("missing required arguments: {0}")]
    Missing(&'static str),
    #[error("{0}")]
    Invalid(String),
    #[error("{what} must be {expected}, got {got}")]
    WrongType {
        what: &'static str,
        expected: &'static str,
        got: String,
    },
    #[error("src file not found: {path} (looked in {looked_in})")]
    SrcNotFound { path: String, looked_in: String },
    #[error("could not read {path}: {message}")]
    Read { path: String, message: String },
    #[error("{0} is not supported yet")]
    NotSupported(&'static str),
    #[error("template {src}: {error}")]
    Template {
        src: String,
        #[source]
        error: TemplateError,
    },
}

static MODULES: &[&dyn Module] = &[
    &copy::Copy,
    &template::Template,
    &file::File,
    &command::CommandModule,
    &command::Shell,
    &debug::Debug,
    &ping::Ping,
    &stat::Stat,
    &setup::Setup,
    &set_fact::SetFact,
    &include_vars::IncludeVars,
    &assert::Assert,
    &assert::Fail,
    &meta::Meta,
    &pause::Pause,
    &inventory_edit::AddHost,
    &inventory_edit::GroupBy,
    &include::IncludeTasks,
    &include::IncludeRole,
];

/// Every registered module.
pub fn all() -> &'static [&'static dyn Module] {
    MODULES
}

/// `copy`, `ansible.builtin.copy` and `ansible.legacy.copy` are the same module.
pub fn find(name: &str) -> Option<&'static dyn Module> {
    let short = name
        .strip_prefix("ansible.builtin.")
        .or_else(|| name.strip_prefix("ansible.legacy."))
        .unwrap_or(name);
    MODULES
        .iter()
        .copied()
        .find(|m| m.name() == short)
        .or_else(|| unsupported::find(short))
}

/// Whether turbo-play runs this module itself (not only knows Ansible has it).
pub fn is_implemented(name: &str) -> bool {
    find(name).is_some_and(|m| MODULES.iter().any(|r| std::ptr::eq(*r, m)))
}

/// The module a mistyped name most likely meant.
pub fn suggest(name: &str) -> Option<&'static str> {
    let short = name
        .strip_prefix("ansible.builtin.")
        .or_else(|| name.strip_prefix("ansible.legacy."))
        .unwrap_or(name);
    let known = MODULES.iter().map(|m| m.name());
    closest(short, known.chain(NOT_YET_SUPPORTED.iter().copied()))
}

/// The candidate within a small edit distance of `word`, if any (for "did you mean").
pub fn closest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let limit = if word.chars().count() <= 4 { 1 } else { 2 };
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// A file mode as Ansible reads it: an integer is the bits themselves (YAML `0644` arrives
/// as 420), a string of octal digits is octal text ("0644", "644", "0o644"), anything
/// else must be symbolic ("u=rw,g=r,o=r", "a+x").
pub fn parse_mode(v: &Value) -> Result<Option<FileMode>, ModuleError> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_u64() {
            Some(bits) if bits <= 0o7777 => Ok(Some(FileMode::Bits(bits as u32))),
            _ => Err(ModuleError::InvalidMode(n.to_string())),
        },
        Value::String(s) => {
            let text = s.trim();
            let digits = text
                .strip_prefix("0o")
                .or_else(|| text.strip_prefix("0O"))
                .unwrap_or(text);
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                return match u32::from_str_radix(digits, 8) {
                    Ok(bits) if bits <= 0o7777 => Ok(Some(FileMode::Bits(bits))),
                    _ => Err(ModuleError::InvalidMode(s.clone())),
                };
            }
            if is_symbolic_mode(text) {
                Ok(Some(FileMode::Symbolic(text.to_string())))
            } else {
                Err(ModuleError::InvalidMode(s.clone()))
            }
        }
        other => Err(ModuleError::InvalidMode(other.to_string())),
    }
}

/// chmod's symbolic grammar, clause by clause: `[ugoa]*([-+=]([rwxXst]*|[ugo]))+`.
fn is_symbolic_mode(text: &str) -> bool {
    !text.is_empty()
        && text.split(',').all(|clause| {
            let rest = clause.trim_start_matches(['u', 'g', 'o', 'a']);
            if rest.is_empty() {
                return false;
            }
            let bytes = rest.as_bytes();
            let mut i = 0;
            while i < bytes.len() {
                if !matches!(bytes[i], b'+' | b'-' | b'=') {
                    return false;
                }
                i += 1;
                let start = i;
                while i < bytes.len() && !matches!(bytes[i], b'+' | b'-' | b'=') {
                    i += 1;
                }
                let perms = &rest[start..i];
                let copy_from = matches!(perms, "u" | "g" | "o");
                if !copy_from && !perms.chars().all(|c| "rwxXst".contains(c)) {
                    return false;
                }
            }
            true
        })
}

/// Ansible's `0644`-style mode text for file results (`'0%03o'`: set-id bits give `04755`).
pub fn mode_string(mode: u32) -> String {
    format!("0{:03o}", mode & 0o7777)
}

/// Ansible's `owner`/`group` file arguments (a name or a numeric id each).
pub(crate) fn ownership(args: &ModuleArgs) -> Result<turbo_proto::Ownership, ModuleError> {
    Ok(turbo_proto::Ownership {
        user: arg_str(args, "owner")?,
        group: arg_str(args, "group")?,
    })
}

/// A scalar argument as text (numbers and booleans as Ansible prints them).
pub(crate) fn arg_str(args: &ModuleArgs, key: &'static str) -> Result<Option<String>, ModuleError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(Value::Bool(b)) => Ok(Some(if *b { "True" } else { "False" }.to_string())),
        Some(other) => Err(ModuleError::WrongType {
            what: key,
            expected: "a string",
            got: describe(other),
        }),
    }
}

/// A boolean argument with Ansible's spellings (yes/no, true/false, on/off, 1/0).
pub(crate) fn arg_bool(
    args: &ModuleArgs,
    key: &'static str,
    default: bool,
) -> Result<bool, ModuleError> {
    let bad = |v: &Value| ModuleError::WrongType {
        what: key,
        expected: "a boolean (yes/no, true/false)",
        got: describe(v),
    };
    match args.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v @ Value::Number(n)) => match n.as_i64() {
            Some(1) => Ok(true),
            Some(0) => Ok(false),
            _ => Err(bad(v)),
        },
        Some(v @ Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "yes" | "y" | "true" | "t" | "on" | "1" => Ok(true),
            "no" | "n" | "false" | "f" | "off" | "0" => Ok(false),
            _ => Err(bad(v)),
        },
        Some(v) => Err(bad(v)),
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "a mapping".to_string(),
        other => other.to_string(),
    }
}

/// `~/x` on the controller means the controller user's home.
fn expand_local_home(path: &str) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return Path::new(&home).join(rest);
    }
    PathBuf::from(path)
}

/// A controller-side source file as Ansible finds it: absolute (or `~`) as written,
/// else in a role `<role>/<subdir>/<src>`, `<role>/<src>`, then the same beside the task's
/// own file, then `<playbook_dir>/<subdir>/<src>`, then `<playbook_dir>/<src>`.
pub(crate) fn find_local_source(
    src: &str,
    ctx: &PlanContext,
    subdir: &str,
) -> Result<PathBuf, ModuleError> {
    let playbook_dir = ctx.playbook_dir;
    let written = expand_local_home(src);
    if written.is_absolute() {
        return if written.exists() {
            Ok(written)
        } else {
            Err(ModuleError::SrcNotFound {
                path: src.to_string(),
                looked_in: written
                    .parent()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            })
        };
    }
    let mut dirs = Vec::new();
    for dir in [ctx.role_dir, ctx.task_dir, Some(playbook_dir)]
        .into_iter()
        .flatten()
    {
        for candidate in [dir.join(subdir), dir.to_path_buf()] {
            if !dirs.contains(&candidate) {
                dirs.push(candidate);
            }
        }
    }
    for dir in &dirs {
        let candidate = dir.join(&written);
        if candidate.exists() {
            return Ok(candidate);
        }
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Err(ModuleError::SrcNotFound {
        path: src.to_string(),
        looked_in: looked.join(", "),
    })
}

pub(crate) fn read_local(path: &Path) -> Result<Vec<u8>, ModuleError> {
    std::fs::read(path).map_err(|e| ModuleError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// The outcome for a reply that is not the kind this module's op produces.
pub(crate) fn unexpected(module: &str, result: OpResult) -> TaskOutcome {
    match result {
        OpResult::Error(e) => TaskOutcome::failed(e.message),
        other => TaskOutcome::failed(format!(
            "internal error: {module} got an unexpected reply from the agent: {other:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_roles_files_come_before_the_playbooks() {
        let dir = tempfile::tempdir().unwrap();
        let role = dir.path().join("roles/r");
        for file in ["files/a", "roles/r/files/a", "b", "roles/r/c"] {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, file).unwrap();
        }
        let in_role = PlanContext {
            role_dir: Some(&role),
            ..PlanContext::new(dir.path())
        };
        let found = |src: &str, ctx: &PlanContext| {
            find_local_source(src, ctx, "files")
                .map(|p| p.strip_prefix(dir.path()).unwrap().to_path_buf())
        };
        assert_eq!(found("a", &in_role).unwrap(), Path::new("roles/r/files/a"));
        assert_eq!(found("c", &in_role).unwrap(), Path::new("roles/r/c"));
        assert_eq!(found("b", &in_role).unwrap(), Path::new("b"));
        let outside = PlanContext::new(dir.path());
        assert_eq!(found("a", &outside).unwrap(), Path::new("files/a"));
        let tasks_dir = dir.path().join("roles");
        let imported = PlanContext {
            task_dir: Some(&tasks_dir),
            ..PlanContext::new(dir.path())
        };
        assert_eq!(found("r/c", &imported).unwrap(), Path::new("roles/r/c"));
        let missing = found("zz", &in_role).unwrap_err().to_string();
        assert!(missing.contains("roles/r/files"), "{missing}");
    }

    #[test]
    fn finds_modules_by_short_and_qualified_names() {
        assert_eq!(find("copy").unwrap().name(), "copy");
        assert_eq!(find("ansible.builtin.copy").unwrap().name(), "copy");
        assert_eq!(find("ansible.legacy.shell").unwrap().name(), "shell");
        assert!(find("community.general.copy").is_none());
        assert!(find("nope").is_none());
        // Ansible's own modules load even when turbo-play cannot run them yet.
        assert_eq!(find("ansible.builtin.service").unwrap().name(), "service");
        assert_eq!(
            find("ansible.legacy.lineinfile").unwrap().name(),
            "lineinfile"
        );
        assert!(find("community.general.ufw").is_none());
        assert!(is_implemented("ansible.builtin.copy"));
        assert!(!is_implemented("service"));
        assert!(!is_implemented("nope"));
        for m in all() {
            assert!(std::ptr::eq(find(m.name()).unwrap(), *m));
        }
    }

    #[test]
    fn a_module_is_either_implemented_or_listed_as_not_yet() {
        for m in all() {
            assert!(
                !NOT_YET_SUPPORTED.contains(&m.name()),
                "{} is implemented: remove it from unsupported::NOT_YET_SUPPORTED",
                m.name()
            );
        }
    }

    #[test]
    fn suggests_close_names() {
        assert_eq!(suggest("cpy"), Some("copy"));
        assert_eq!(suggest("comand"), Some("command"));
        assert_eq!(suggest("servce"), Some("service"));
        assert_eq!(suggest("ansible.builtin.linefile"), Some("lineinfile"));
        assert_eq!(suggest("ansible.builtin.templat"), Some("template"));
        assert_eq!(suggest("xyzzy"), None);
    }

    #[test]
    fn parses_modes_as_ansible() {
        assert_eq!(
            parse_mode(&json!(420)).unwrap(),
            Some(FileMode::Bits(0o644))
        );
        assert_eq!(
            parse_mode(&json!("0644")).unwrap(),
            Some(FileMode::Bits(0o644))
        );
        assert_eq!(
            parse_mode(&json!("644")).unwrap(),
            Some(FileMode::Bits(0o644))
        );
        assert_eq!(
            parse_mode(&json!("0o755")).unwrap(),
            Some(FileMode::Bits(0o755))
        );
        assert_eq!(
            parse_mode(&json!("1777")).unwrap(),
            Some(FileMode::Bits(0o1777))
        );
        assert_eq!(parse_mode(&json!(null)).unwrap(), None);
        assert_eq!(
            parse_mode(&json!("u=rw,g=r,o=r")).unwrap(),
            Some(FileMode::Symbolic("u=rw,g=r,o=r".into()))
        );
        assert_eq!(
            parse_mode(&json!("a+x")).unwrap(),
            Some(FileMode::Symbolic("a+x".into()))
        );
        assert_eq!(
            parse_mode(&json!("u+rw-x,go=u")).unwrap(),
            Some(FileMode::Symbolic("u+rw-x,go=u".into()))
        );
        for bad in [
            json!("abc"),
            json!("0899"),
            json!("u=rwz"),
            json!("77777"),
            json!(-1),
            json!(1.5),
            json!([1]),
            json!("u"),
            json!(""),
        ] {
            let err = parse_mode(&bad).unwrap_err();
            assert!(
                err.to_string()
                    .starts_with("mode must be octal or symbolic, got "),
                "{bad}: {err}"
            );
        }
        assert_eq!(
            parse_mode(&json!("abc")).unwrap_err().to_string(),
            "mode must be octal or symbolic, got 'abc'"
        );
    }

    #[test]
    fn boolean_args_accept_ansible_spellings() {
        let args: ModuleArgs = json!({"a": "yes", "b": "no", "c": true, "d": 0, "e": "maybe"})
            .as_object()
            .unwrap()
            .clone();
        assert!(arg_bool(&args, "a", false).unwrap());
        assert!(!arg_bool(&args, "b", true).unwrap());
        assert!(arg_bool(&args, "c", false).unwrap());
        assert!(!arg_bool(&args, "d", true).unwrap());
        assert!(arg_bool(&args, "missing", true).unwrap());
        assert_eq!(
            arg_bool(&args, "e", true).unwrap_err().to_string(),
            "e must be a boolean (yes/no, true/false), got 'maybe'"
        );
    }

    #[test]
    fn registered_results_have_ansible_keys() {
        let mut out = TaskOutcome {
            changed: true,
            msg: Some(String::new()),
            ..TaskOutcome::default()
        };
        out.data.insert("rc".into(), json!(0));
        assert_eq!(
            Value::Object(out.registered()),
            json!({"rc": 0, "changed": true, "failed": false, "msg": ""})
        );
        let skipped = TaskOutcome {
            skipped: true,
            ..TaskOutcome::default()
        };
        assert_eq!(
            Value::Object(skipped.registered()),
            json!({"changed": false, "failed": false, "skipped": true})
        );
        assert!(all().iter().all(|m| m.batchable()));
    }

    #[test]
    fn mode_strings_are_zero_padded_octal() {
        assert_eq!(mode_string(0o644), "0644");
        assert_eq!(mode_string(0o100755), "0755");
        assert_eq!(mode_string(0o1777), "01777");
    }
}
