//! ansible.cfg and the `ANSIBLE_*` environment variables, for the settings turbo-play
//! honours. Precedence, as in Ansible: command-line flag > environment > ansible.cfg >
//! default. The flags are applied by the caller (main.rs); this module gives the
//! environment-over-file part.
//!
//! The file is found as Ansible finds it: `$ANSIBLE_CONFIG` (a directory means its
//! `ansible.cfg`), `./ansible.cfg` (unless the current directory is world-writable),
//! `~/.ansible.cfg`, `/etc/ansible/ansible.cfg`; the first that exists is the only one read.
//! Relative paths in the file are relative to the file's directory; in the environment,
//! to the current directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// The ansible.cfg that was read, if any.
    pub file: Option<PathBuf>,
    /// `[defaults] inventory` / `ANSIBLE_INVENTORY`: comma-separated paths.
    pub inventory: Vec<String>,
    pub remote_user: Option<String>,
    /// `[defaults] duplicate_dict_key` / `ANSIBLE_DUPLICATE_YAML_DICT_KEY`: warn, error
    /// or ignore (what YAML files with a repeated mapping key get).
    pub duplicate_dict_key: Option<String>,
    /// `[defaults] validate_action_group_metadata` /
    /// `ANSIBLE_VALIDATE_ACTION_GROUP_METADATA`: an action group's malformed `metadata`
    /// is warned about (unset: on).
    pub validate_action_group_metadata: Option<bool>,
    pub forks: Option<usize>,
    /// `[defaults] roles_path` / `ANSIBLE_ROLES_PATH`: colon-separated directories where
    /// roles are searched after `roles/` beside the playbook.
    pub roles_path: Vec<PathBuf>,
    /// `[defaults] collections_path` / `ANSIBLE_COLLECTIONS_PATH` (or their older plural
    /// spellings): colon-separated directories holding `ansible_collections/`.
    pub collections_path: Vec<PathBuf>,
    /// `[defaults] library` / `ANSIBLE_LIBRARY`: directories of modules, searched after
    /// `library/` beside the playbook and in roles.
    pub library: Vec<PathBuf>,
    /// `[defaults] module_utils` / `ANSIBLE_MODULE_UTILS`: directories of module_utils.
    pub module_utils: Vec<PathBuf>,
    /// `[defaults] filter_plugins`, `test_plugins`, `lookup_plugins`, `action_plugins` /
    /// `ANSIBLE_FILTER_PLUGINS`...: directories of Python plugins (empty: Ansible's
    /// defaults under `~/.ansible/plugins` and `/usr/share/ansible/plugins`).
    pub filter_plugins: Vec<PathBuf>,
    pub test_plugins: Vec<PathBuf>,
    pub lookup_plugins: Vec<PathBuf>,
    pub action_plugins: Vec<PathBuf>,
    pub host_key_checking: Option<bool>,
    pub private_key_file: Option<PathBuf>,
    /// Connection timeout in seconds.
    pub timeout: Option<u64>,
    /// `[defaults] ansible_managed`: what `{{ ansible_managed }}` says in templates.
    pub ansible_managed: Option<String>,
    /// `[ssh_connection] ssh_args` / `ANSIBLE_SSH_ARGS`.
    pub ssh_args: Option<String>,
    /// `[ssh_connection] retries` / `ANSIBLE_SSH_RETRIES`: Ansible's reconnection_retries.
    pub ssh_retries: Option<u32>,
    /// `[defaults] show_custom_stats` / `ANSIBLE_SHOW_CUSTOM_STATS`: the recap's CUSTOM STATS.
    pub show_custom_stats: bool,
    /// `[defaults] no_log` / `ANSIBLE_NO_LOG`: tasks that do not say hide their results.
    pub no_log: bool,
    /// `[defaults] inject_invocation` / `ANSIBLE_INJECT_INVOCATION`: results carry the
    /// module's arguments as `invocation.module_args`.
    pub inject_invocation: bool,
    /// `[defaults] deprecation_warnings` / `ANSIBLE_DEPRECATION_WARNINGS`: whether
    /// `[DEPRECATION WARNING]`s are shown (unset: they are).
    pub deprecation_warnings: Option<bool>,
    /// `[privilege_escalation]`: become, become_user, become_method, become_flags,
    /// become_exe, become_ask_pass, become_password_file (and their `ANSIBLE_BECOME*`);
    /// the sudo plugin's chdir.
    pub become_: BecomeConfig,
    /// `[defaults]` vault_password_file, vault_identity_list, vault_id_match,
    /// vault_identity, ask_vault_pass (and their `ANSIBLE_*`).
    pub vault: VaultConfig,
    /// `[turbo_play] chains` / `TURBO_PLAY_CHAINS`: whether a host's next tasks may be
    /// sent before the earlier ones answered (see ARCHITECTURE.md, "Chains").
    pub chains: Option<bool>,
    /// `[defaults] gathering` / `ANSIBLE_GATHERING`: implicit, explicit or smart.
    pub gathering: Gathering,
    /// The default callback's options (`display_skipped_hosts`, `callback_result_format`...).
    pub display: crate::display_options::DisplayOptions,
    /// `[defaults] strategy` / `ANSIBLE_STRATEGY`: the strategy of plays that name none
    /// (an unknown one fails when such a play starts, as in Ansible).
    pub strategy: Option<String>,
    /// `[defaults] facts_modules` / `ANSIBLE_FACTS_MODULES`: the modules fact gathering
    /// runs (unset: Ansible's `smart`, which is `setup`); the `ansible_facts_modules`
    /// variable wins over it.
    pub facts_modules: Option<Vec<String>>,
    /// `[defaults] hash_behaviour` / `ANSIBLE_HASH_BEHAVIOUR`: `merge` makes dictionary
    /// variables of different layers merge recursively instead of replacing each other.
    pub hash_merge: bool,
    /// Printed as `[WARNING]: ...`.
    pub warnings: Vec<String>,
}

/// Which plays gather facts (Ansible's `DEFAULT_GATHERING`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Gathering {
    /// Every play unless it says `gather_facts: false`.
    #[default]
    Implicit,
    /// Only plays that say `gather_facts: true`.
    Explicit,
    /// As implicit, but a host whose facts were gathered earlier in the run is skipped.
    Smart,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("Error reading config file ({path}): {message}")]
    Read { path: PathBuf, message: String },
    #[error("{path}:{line}: {message}")]
    Syntax {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("Invalid type for configuration option {origin}: {key} = '{value}' is not {expected}")]
    Invalid {
        origin: String,
        key: &'static str,
        value: String,
        expected: &'static str,
    },
}

/// An ini file as Python's configparser reads it for Ansible (inline `;` comments, `=` or
/// `:` between key and value, case-insensitive keys, indented continuation lines).
#[derive(Debug, Default, PartialEq)]
pub struct Ini {
    /// section -> key -> (value, line)
    sections: HashMap<String, HashMap<String, (String, usize)>>,
}

impl Ini {
    pub fn parse(path: &Path, text: &str) -> Result<Ini, ConfigError> {
        let syntax = |line: usize, message: String| ConfigError::Syntax {
            path: path.to_path_buf(),
            line,
            message,
        };
        let mut ini = Ini::default();
        let mut section: Option<String> = None;
        // (key, indentation of its line) for continuation lines.
        let mut last_key: Option<(String, usize)> = None;
        for (index, raw) in text.lines().enumerate() {
            let number = index + 1;
            let stripped = strip_inline_comment(raw);
            let value = stripped.trim();
            let trimmed_start = raw.trim_start();
            if trimmed_start.starts_with('#') || trimmed_start.starts_with(';') {
                continue;
            }
            if value.is_empty() {
                last_key = None;
                continue;
            }
            let indent = raw.len() - trimmed_start.len();
            if let (Some(sec), Some((key, key_indent))) = (&section, &last_key)
                && indent > *key_indent
            {
                let entry = ini
                    .sections
                    .get_mut(sec)
                    .and_then(|s| s.get_mut(key))
                    .expect("the key was inserted");
                entry.0.push('\n');
                entry.0.push_str(value);
                continue;
            }
            if let Some(name) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
                if ini.sections.contains_key(name) {
                    return Err(syntax(number, format!("section '{name}' already exists")));
                }
                ini.sections.insert(name.to_string(), HashMap::new());
                section = Some(name.to_string());
                last_key = None;
                continue;
            }
            let Some(sec) = &section else {
                return Err(syntax(
                    number,
                    "File contains no section headers: start the file with `[defaults]`".into(),
                ));
            };
            let Some(split) = value.find(['=', ':']) else {
                return Err(syntax(number, format!("'{value}' is not `key = value`")));
            };
            let key = value[..split].trim().to_ascii_lowercase();
            let val = value[split + 1..].trim().to_string();
            let entries = ini.sections.get_mut(sec).expect("section exists");
            if entries.contains_key(&key) {
                return Err(syntax(
                    number,
                    format!("option '{key}' in section '{sec}' already exists"),
                ));
            }
            entries.insert(key.clone(), (val, number));
            last_key = Some((key, indent));
        }
        Ok(ini)
    }

    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        self.entry(section, key).map(|(v, _)| v)
    }

    fn entry(&self, section: &str, key: &str) -> Option<(&str, usize)> {
        self.sections
            .get(section)?
            .get(key)
            .map(|(v, line)| (v.as_str(), *line))
    }
}

/// configparser's inline comments: `;` preceded by whitespace starts one.
fn strip_inline_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    for i in 1..bytes.len() {
        if bytes[i] == b';' && bytes[i - 1].is_ascii_whitespace() {
            return &line[..i];
        }
    }
    line
}

/// Where a value came from, for resolving relative paths and naming it in errors.
struct Origin {
    name: String,
    base: PathBuf,
}

impl Config {
    /// Reads the environment and the ansible.cfg Ansible would use.
    pub fn load() -> Result<Config, ConfigError> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let home = crate::tilde::home_dir();
        Config::load_with(&|k| std::env::var(k).ok(), &cwd, home.as_deref())
    }

    pub fn load_with(
        env: &dyn Fn(&str) -> Option<String>,
        cwd: &Path,
        home: Option<&Path>,
    ) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let (file, warning) = find_config_file(env, cwd, home);
        config.warnings.extend(warning);
        let ini = match &file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
                Ini::parse(path, &text)?
            }
            None => Ini::default(),
        };
        let file_dir = file
            .as_ref()
            .and_then(|f| f.parent())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| cwd.to_path_buf());
        // The setting from the environment, else from the file.
        let setting = |env_name: &str, key: &str| -> Option<(String, Origin)> {
            if let Some(value) = env(env_name) {
                return Some((
                    value,
                    Origin {
                        name: format!("env {env_name}"),
                        base: cwd.to_path_buf(),
                    },
                ));
            }
            let (value, line) = ini.entry("defaults", key)?;
            let path = file.as_ref().expect("a value came from a file");
            Some((
                value.to_string(),
                Origin {
                    name: format!("{}:{line}", path.display()),
                    base: file_dir.clone(),
                },
            ))
        };

        if let Some((value, origin)) = setting("ANSIBLE_INVENTORY", "inventory") {
            config.inventory = value
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| resolve_path(p, &origin.base, home).display().to_string())
                .collect();
        }
        if let Some((value, origin)) = setting("ANSIBLE_ROLES_PATH", "roles_path") {
            config.roles_path = value
                .split(':')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| resolve_path(p, &origin.base, home))
                .collect();
        }
        if let Some((value, origin)) = setting("ANSIBLE_COLLECTIONS_PATH", "collections_path")
            .or_else(|| setting("ANSIBLE_COLLECTIONS_PATHS", "collections_paths"))
        {
            config.collections_path = value
                .split(':')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| resolve_path(p, &origin.base, home))
                .collect();
        }
        for (env, key, slot) in [
            ("ANSIBLE_LIBRARY", "library", &mut config.library),
            (
                "ANSIBLE_MODULE_UTILS",
                "module_utils",
                &mut config.module_utils,
            ),
            (
                "ANSIBLE_FILTER_PLUGINS",
                "filter_plugins",
                &mut config.filter_plugins,
            ),
            (
                "ANSIBLE_TEST_PLUGINS",
                "test_plugins",
                &mut config.test_plugins,
            ),
            (
                "ANSIBLE_LOOKUP_PLUGINS",
                "lookup_plugins",
                &mut config.lookup_plugins,
            ),
            (
                "ANSIBLE_ACTION_PLUGINS",
                "action_plugins",
                &mut config.action_plugins,
            ),
        ] {
            if let Some((value, origin)) = setting(env, key) {
                *slot = value
                    .split(':')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(|p| resolve_path(p, &origin.base, home))
                    .collect();
            }
        }
        if let Some((value, _)) = setting("ANSIBLE_DUPLICATE_YAML_DICT_KEY", "duplicate_dict_key") {
            config.duplicate_dict_key = Some(value);
        }
        if let Some((value, _)) = setting(
            "ANSIBLE_VALIDATE_ACTION_GROUP_METADATA",
            "validate_action_group_metadata",
        ) {
            config.validate_action_group_metadata = Some(crate::booleans::lenient_text(&value));
        }
        if let Some((value, _)) = setting("ANSIBLE_REMOTE_USER", "remote_user")
            && !value.is_empty()
        {
            config.remote_user = Some(value);
        }
        if let Some((value, origin)) = setting("ANSIBLE_PRIVATE_KEY_FILE", "private_key_file")
            && !value.is_empty()
        {
            config.private_key_file = Some(resolve_path(&value, &origin.base, home));
        }
        if let Some((value, origin)) = setting("ANSIBLE_FORKS", "forks") {
            config.forks = Some(parse_int(&value).ok_or_else(|| ConfigError::Invalid {
                origin: origin.name,
                key: "forks",
                value: value.clone(),
                expected: "an integer",
            })?);
        }
        // Ansible reads this one from ansible.cfg only (no environment variable).
        if let Some((value, _)) = ini.entry("defaults", "ansible_managed") {
            config.ansible_managed = Some(value.to_string());
        }
        if let Some((value, origin)) = setting("ANSIBLE_TIMEOUT", "timeout") {
            config.timeout = Some(parse_int(&value).ok_or_else(|| ConfigError::Invalid {
                origin: origin.name,
                key: "timeout",
                value: value.clone(),
                expected: "an integer number of seconds",
            })? as u64);
        }
        if let Some((value, _)) = setting("ANSIBLE_HOST_KEY_CHECKING", "host_key_checking") {
            // Ansible's config reads `type: boolean` leniently: anything but a true
            // spelling is false, never an error (ensure_type in config/manager.py).
            config.host_key_checking = Some(crate::booleans::lenient_text(&value));
        }
        if let Some((value, _)) = setting("ANSIBLE_SHOW_CUSTOM_STATS", "show_custom_stats") {
            config.show_custom_stats = crate::booleans::lenient_text(&value);
        }
        if let Some((value, _)) = setting("ANSIBLE_NO_LOG", "no_log") {
            config.no_log = crate::booleans::lenient_text(&value);
        }
        if let Some((value, _)) = setting("ANSIBLE_INJECT_INVOCATION", "inject_invocation") {
            config.inject_invocation = crate::booleans::lenient_text(&value);
        }
        if let Some((value, _)) = setting("ANSIBLE_DEPRECATION_WARNINGS", "deprecation_warnings") {
            config.deprecation_warnings = Some(crate::booleans::lenient_text(&value));
        }
        config.display = crate::display_options::DisplayOptions::read(&|env, key| {
            setting(env, key).map(|(value, _)| value)
        })
        .map_err(|e| {
            let origin = setting(&format!("ANSIBLE_{}", e.key.to_ascii_uppercase()), e.key)
                .map_or_else(|| e.key.to_string(), |(_, origin)| origin.name);
            ConfigError::Invalid {
                origin,
                key: e.key,
                value: e.value,
                expected: e.expected,
            }
        })?;
        if setting("ANSIBLE_SHOW_PER_HOST_START", "show_per_host_start")
            .is_some_and(|(value, _)| crate::booleans::lenient_text(&value))
        {
            config.warnings.push(
                "show_per_host_start is not acted on by turbo-play: no `[started ...]` lines are shown"
                    .into(),
            );
        }
        if let Some((value, _)) = setting("ANSIBLE_STRATEGY", "strategy") {
            config.strategy = Some(value.trim().to_string());
        }
        if let Some((value, _)) = setting("ANSIBLE_FACTS_MODULES", "facts_modules") {
            // Ansible's `list` type: comma-separated.
            config.facts_modules = Some(
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|m| !m.is_empty())
                    .map(str::to_string)
                    .collect(),
            );
        }
        if let Some((value, origin)) = setting("ANSIBLE_GATHERING", "gathering") {
            config.gathering = match value.to_ascii_lowercase().as_str() {
                "implicit" => Gathering::Implicit,
                "explicit" => Gathering::Explicit,
                "smart" => Gathering::Smart,
                _ => {
                    return Err(ConfigError::Invalid {
                        origin: origin.name,
                        key: "gathering",
                        value: value.clone(),
                        expected: "one of implicit, explicit, smart",
                    });
                }
            };
        }
        if let Some((value, origin)) = setting("ANSIBLE_HASH_BEHAVIOUR", "hash_behaviour") {
            config.hash_merge = match value.to_ascii_lowercase().as_str() {
                "merge" => true,
                "replace" => false,
                _ => {
                    return Err(ConfigError::Invalid {
                        origin: origin.name,
                        key: "hash_behaviour",
                        value: value.clone(),
                        expected: "one of replace, merge",
                    });
                }
            };
        }
        // turbo-play's own section: Ansible ignores sections it does not know.
        let chains = env("TURBO_PLAY_CHAINS").or_else(|| {
            ini.entry("turbo_play", "chains")
                .map(|(v, _)| v.to_string())
        });
        if let Some(value) = chains {
            config.chains = Some(crate::booleans::lenient_text(&value));
        }
        // [privilege_escalation], each also from its ANSIBLE_BECOME* variable.
        let escalation = |env_name: &str, key: &str| -> Option<(String, String)> {
            if let Some(value) = env(env_name) {
                return Some((value, format!("env {env_name}")));
            }
            let (value, line) = ini.entry("privilege_escalation", key)?;
            let path = file.as_ref().expect("a value came from a file");
            Some((value.to_string(), format!("{}:{line}", path.display())))
        };
        // Read as Ansible's config reads `type: boolean`: leniently.
        let flag = |env_name: &str, key: &str| -> Option<bool> {
            escalation(env_name, key).map(|(value, _)| crate::booleans::lenient_text(&value))
        };
        config.become_ = BecomeConfig {
            enabled: flag("ANSIBLE_BECOME", "become"),
            ask_pass: flag("ANSIBLE_BECOME_ASK_PASS", "become_ask_pass"),
            user: escalation("ANSIBLE_BECOME_USER", "become_user").map(|(v, _)| v),
            method: escalation("ANSIBLE_BECOME_METHOD", "become_method").map(|(v, _)| v),
            flags: escalation("ANSIBLE_BECOME_FLAGS", "become_flags").map(|(v, _)| v),
            exe: escalation("ANSIBLE_BECOME_EXE", "become_exe").map(|(v, _)| v),
            password_file: escalation("ANSIBLE_BECOME_PASSWORD_FILE", "become_password_file")
                .map(|(v, _)| resolve_path(&v, &file_dir, home)),
            // The sudo plugin's own option, in its own section.
            sudo_chdir: env("ANSIBLE_SUDO_CHDIR").or_else(|| {
                ini.entry("sudo_become_plugin", "chdir")
                    .map(|(v, _)| v.to_string())
            }),
        };
        config.vault = VaultConfig {
            password_file: setting("ANSIBLE_VAULT_PASSWORD_FILE", "vault_password_file")
                .filter(|(value, _)| !value.is_empty())
                .map(|(value, origin)| resolve_path(&value, &origin.base, home)),
            identity_list: setting("ANSIBLE_VAULT_IDENTITY_LIST", "vault_identity_list")
                .map(|(value, _)| {
                    value
                        .split(',')
                        .map(str::trim)
                        .filter(|id| !id.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            id_match: setting("ANSIBLE_VAULT_ID_MATCH", "vault_id_match")
                .map(|(value, _)| crate::booleans::lenient_text(&value)),
            identity: setting("ANSIBLE_VAULT_IDENTITY", "vault_identity").map(|(value, _)| value),
            ask_vault_pass: setting("ANSIBLE_ASK_VAULT_PASS", "ask_vault_pass")
                .map(|(value, _)| crate::booleans::lenient_text(&value)),
        };
        config.ssh_args = env("ANSIBLE_SSH_ARGS").or_else(|| {
            ini.entry("ssh_connection", "ssh_args")
                .map(|(value, _)| value.to_string())
        });
        let ssh_retries = env("ANSIBLE_SSH_RETRIES")
            .map(|v| (v, "env ANSIBLE_SSH_RETRIES".to_string()))
            .or_else(|| {
                let (value, line) = ini.entry("ssh_connection", "retries")?;
                let path = file.as_ref().expect("a value came from a file");
                Some((value.to_string(), format!("{}:{line}", path.display())))
            });
        if let Some((value, origin)) = ssh_retries {
            config.ssh_retries =
                Some(
                    value
                        .trim()
                        .parse::<u32>()
                        .map_err(|_| ConfigError::Invalid {
                            origin,
                            key: "retries",
                            value: value.clone(),
                            expected: "a non-negative integer",
                        })?,
                );
        }
        config.file = file;
        Ok(config)
    }
}

/// ansible.cfg's vault settings (all in `[defaults]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VaultConfig {
    /// A path, relative to the file (or, from the environment, the current directory).
    pub password_file: Option<PathBuf>,
    /// `label@source` entries, tried before `--vault-id`.
    pub identity_list: Vec<String>,
    pub id_match: Option<bool>,
    /// The label of a secret given without one (Ansible's default: `default`).
    pub identity: Option<String>,
    pub ask_vault_pass: Option<bool>,
}

/// ansible.cfg's `[privilege_escalation]` settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BecomeConfig {
    pub enabled: Option<bool>,
    pub ask_pass: Option<bool>,
    pub user: Option<String>,
    pub method: Option<String>,
    pub flags: Option<String>,
    pub exe: Option<String>,
    pub password_file: Option<PathBuf>,
    /// The sudo plugin's `sudo_chdir` (`ANSIBLE_SUDO_CHDIR`, `[sudo_become_plugin] chdir`).
    pub sudo_chdir: Option<String>,
}

/// Ansible's `find_ini_config_file`; also the warning for a skipped world-writable
/// current directory.
fn find_config_file(
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
    home: Option<&Path>,
) -> (Option<PathBuf>, Option<String>) {
    let mut candidates = Vec::new();
    let from_env = env("ANSIBLE_CONFIG").map(|value| {
        let path = resolve_path(&value, cwd, home);
        if path.is_dir() {
            path.join("ansible.cfg")
        } else {
            path
        }
    });
    candidates.extend(from_env.clone());
    let cwd_cfg = cwd.join("ansible.cfg");
    let mut skipped_cwd = false;
    if world_writable(cwd) {
        skipped_cwd = cwd_cfg.exists();
    } else {
        candidates.push(cwd_cfg);
    }
    if let Some(home) = home {
        candidates.push(home.join(".ansible.cfg"));
    }
    candidates.push(PathBuf::from("/etc/ansible/ansible.cfg"));
    let found = candidates.into_iter().find(|p| p.is_file());
    let used_env = from_env.is_some() && found == from_env;
    let warning = (skipped_cwd && !used_env).then(|| {
        format!(
            "Ansible is being run in a world writable directory ({}), ignoring it as an ansible.cfg source.",
            cwd.display()
        )
    });
    (found, warning)
}

fn world_writable(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o002 != 0)
}

/// `~` and `$VAR` expanded, then relative to `base` (Ansible's `resolve_path`).
fn resolve_path(value: &str, base: &Path, home: Option<&Path>) -> PathBuf {
    let expanded = expand_vars(value);
    let path = PathBuf::from(crate::tilde::expand_user_with(&expanded, home));
    let joined = if path.is_absolute() {
        path
    } else {
        base.join(path)
    };
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Python's `os.path.expandvars`: `$NAME` and `${NAME}`; unknown names stay as written.
fn expand_vars(value: &str) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let (name, consumed) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        match std::env::var(name) {
            Ok(v) if !name.is_empty() => {
                out.push_str(&v);
                rest = &after[consumed..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn parse_int(value: &str) -> Option<usize> {
    value.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    /// A cwd and a home, both private (not world-writable), with optional ansible.cfg files.
    struct Dirs {
        _root: tempfile::TempDir,
        cwd: PathBuf,
        home: PathBuf,
    }

    fn dirs(cwd_cfg: Option<&str>, home_cfg: Option<&str>) -> Dirs {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let cwd = root.path().join("work");
        let home = root.path().join("home");
        for d in [&cwd, &home] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        if let Some(text) = cwd_cfg {
            std::fs::write(cwd.join("ansible.cfg"), text).unwrap();
        }
        if let Some(text) = home_cfg {
            std::fs::write(home.join(".ansible.cfg"), text).unwrap();
        }
        Dirs {
            _root: root,
            cwd,
            home,
        }
    }

    fn load(d: &Dirs, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::load_with(&env_of(env), &d.cwd, Some(&d.home))
    }

    const FULL: &str = "\
# a comment
[defaults]
inventory = ./hosts, /abs/other
remote_user: deploy ; inline comment
forks = 12
roles_path = roles:~/shared/roles
host_key_checking = False
private_key_file = ~/.ssh/deploy_key
timeout = 30
unrelated = whatever

[ssh_connection]
pipelining = True
";

    #[test]
    fn reads_defaults_from_the_cwd_file() {
        let d = dirs(Some(FULL), None);
        let c = load(&d, &[]).unwrap();
        assert_eq!(c.file, Some(d.cwd.join("ansible.cfg")));
        assert_eq!(
            c.inventory,
            [
                d.cwd.join("hosts").display().to_string(),
                "/abs/other".into()
            ]
        );
        assert_eq!(c.remote_user.as_deref(), Some("deploy"));
        assert_eq!(c.forks, Some(12));
        assert_eq!(
            c.roles_path,
            [d.cwd.join("roles"), d.home.join("shared/roles")]
        );
        assert_eq!(c.host_key_checking, Some(false));
        assert_eq!(c.private_key_file, Some(d.home.join(".ssh/deploy_key")));
        assert_eq!(c.timeout, Some(30));
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn collections_path_in_either_spelling() {
        let d = dirs(
            Some("[defaults]\ncollections_paths = ./colls:~/more\n"),
            None,
        );
        let c = load(&d, &[]).unwrap();
        assert_eq!(
            c.collections_path,
            [d.cwd.join("colls"), d.home.join("more")]
        );
        let d = dirs(Some("[defaults]\ncollections_path = /a\n"), None);
        assert_eq!(
            load(&d, &[]).unwrap().collections_path,
            [PathBuf::from("/a")]
        );
        let c = load(&d, &[("ANSIBLE_COLLECTIONS_PATH", "/e1:/e2")]).unwrap();
        assert_eq!(
            c.collections_path,
            [PathBuf::from("/e1"), PathBuf::from("/e2")]
        );
        assert!(
            load(&dirs(None, None), &[])
                .unwrap()
                .collections_path
                .is_empty()
        );
    }

    #[test]
    fn ssh_retries_from_the_environment_or_the_file() {
        let d = dirs(Some("[ssh_connection]\nretries = 4\n"), None);
        assert_eq!(load(&d, &[]).unwrap().ssh_retries, Some(4));
        assert_eq!(
            load(&d, &[("ANSIBLE_SSH_RETRIES", "0")])
                .unwrap()
                .ssh_retries,
            Some(0)
        );
        assert_eq!(load(&dirs(None, None), &[]).unwrap().ssh_retries, None);
        let err = load(&d, &[("ANSIBLE_SSH_RETRIES", "-1")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("env ANSIBLE_SSH_RETRIES: retries = '-1'"),
            "{err}"
        );
    }

    #[test]
    fn callback_options_strategy_and_facts_modules() {
        let d = dirs(
            Some(
                "[defaults]\ndisplay_ok_hosts = no\ncallback_result_format = yaml\nstrategy = free\nfacts_modules = a, smart\n",
            ),
            None,
        );
        let c = load(&d, &[("ANSIBLE_DISPLAY_SKIPPED_HOSTS", "0")]).unwrap();
        assert!(!c.display.ok_hosts && !c.display.skipped_hosts);
        assert_eq!(
            c.display.result_format,
            crate::display_options::ResultFormat::Yaml
        );
        assert_eq!(c.strategy.as_deref(), Some("free"));
        assert_eq!(c.facts_modules, Some(vec!["a".into(), "smart".into()]));
        let c = load(&d, &[("ANSIBLE_STRATEGY", "linear")]).unwrap();
        assert_eq!(c.strategy.as_deref(), Some("linear"));
    }

    #[test]
    fn environment_beats_the_file() {
        let d = dirs(Some(FULL), None);
        let c = load(
            &d,
            &[
                ("ANSIBLE_INVENTORY", "a,b"),
                ("ANSIBLE_FORKS", "3"),
                ("ANSIBLE_REMOTE_USER", "envuser"),
                ("ANSIBLE_HOST_KEY_CHECKING", "yes"),
                ("ANSIBLE_PRIVATE_KEY_FILE", "/k"),
                ("ANSIBLE_TIMEOUT", "5"),
                ("ANSIBLE_ROLES_PATH", "/r1:/r2"),
            ],
        )
        .unwrap();
        assert_eq!(
            c.inventory,
            [
                d.cwd.join("a").display().to_string(),
                d.cwd.join("b").display().to_string()
            ]
        );
        assert_eq!(c.forks, Some(3));
        assert_eq!(c.remote_user.as_deref(), Some("envuser"));
        assert_eq!(c.host_key_checking, Some(true));
        assert_eq!(c.private_key_file, Some(PathBuf::from("/k")));
        assert_eq!(c.timeout, Some(5));
        assert_eq!(c.roles_path, [PathBuf::from("/r1"), PathBuf::from("/r2")]);
    }

    #[test]
    fn search_order_env_then_cwd_then_home() {
        let d = dirs(
            Some("[defaults]\nforks = 1\n"),
            Some("[defaults]\nforks = 2\n"),
        );
        assert_eq!(load(&d, &[]).unwrap().forks, Some(1));
        let elsewhere = d.home.join("custom");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("ansible.cfg"), "[defaults]\nforks = 3\n").unwrap();
        // ANSIBLE_CONFIG naming a directory means its ansible.cfg.
        let env = [("ANSIBLE_CONFIG", elsewhere.to_str().unwrap())];
        assert_eq!(load(&d, &env).unwrap().forks, Some(3));
        std::fs::remove_file(d.cwd.join("ansible.cfg")).unwrap();
        let c = load(&d, &[]).unwrap();
        assert_eq!(
            (c.forks, c.file),
            (Some(2), Some(d.home.join(".ansible.cfg")))
        );
        std::fs::remove_file(d.home.join(".ansible.cfg")).unwrap();
        assert_eq!(load(&d, &[]).unwrap(), Config::default());
    }

    #[test]
    fn world_writable_cwd_is_skipped_with_a_warning() {
        use std::os::unix::fs::PermissionsExt;
        let d = dirs(Some("[defaults]\nforks = 1\n"), None);
        std::fs::set_permissions(&d.cwd, std::fs::Permissions::from_mode(0o777)).unwrap();
        let c = load(&d, &[]).unwrap();
        assert_eq!(c.forks, None);
        assert!(
            c.warnings[0].contains("world writable directory"),
            "{:?}",
            c.warnings
        );
    }

    #[test]
    fn bad_values_and_syntax_are_errors_naming_where() {
        let d = dirs(Some("[defaults]\nforks = many\n"), None);
        let err = load(&d, &[]).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "Invalid type for configuration option {}:2: forks = 'many' is not an integer",
                d.cwd.join("ansible.cfg").display()
            )
        );
        let err = load(&d, &[("ANSIBLE_FORKS", "x")]).unwrap_err().to_string();
        assert!(err.contains("env ANSIBLE_FORKS: forks = 'x'"), "{err}");
        // ansible-config dump: ANSIBLE_HOST_KEY_CHECKING=garbage is HOST_KEY_CHECKING = False.
        let c = load(
            &d,
            &[
                ("ANSIBLE_FORKS", "1"),
                ("ANSIBLE_HOST_KEY_CHECKING", "maybe"),
            ],
        )
        .unwrap();
        assert_eq!(c.host_key_checking, Some(false));
        let p = Path::new("ansible.cfg");
        let err = Ini::parse(p, "forks = 1\n").unwrap_err().to_string();
        assert!(
            err.starts_with("ansible.cfg:1: File contains no section headers"),
            "{err}"
        );
        let err = Ini::parse(p, "[defaults]\nforks\n")
            .unwrap_err()
            .to_string();
        assert_eq!(err, "ansible.cfg:2: 'forks' is not `key = value`");
        let err = Ini::parse(p, "[defaults]\na=1\nA=2\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "ansible.cfg:3: option 'a' in section 'defaults' already exists"
        );
    }

    #[test]
    fn vault_settings_from_the_file_and_the_environment() {
        let d = dirs(
            Some(
                "[defaults]\nvault_password_file = ~/.vault_pass\nvault_identity_list = dev@a, prod@prompt\nvault_id_match = yes\n",
            ),
            None,
        );
        let c = load(&d, &[]).unwrap();
        assert_eq!(c.vault.password_file, Some(d.home.join(".vault_pass")));
        assert_eq!(c.vault.identity_list, ["dev@a", "prod@prompt"]);
        assert_eq!(c.vault.id_match, Some(true));
        let c = load(&d, &[("ANSIBLE_VAULT_PASSWORD_FILE", "pw")]).unwrap();
        assert_eq!(c.vault.password_file, Some(d.cwd.join("pw")));
    }

    #[test]
    fn ini_continuations_comments_and_case() {
        let ini = Ini::parse(
            Path::new("x"),
            "[defaults]\nInventory = a,\n   b\n; comment\n  # indented comment\nkey=v;not a comment\n",
        )
        .unwrap();
        assert_eq!(ini.get("defaults", "inventory"), Some("a,\nb"));
        assert_eq!(ini.get("defaults", "key"), Some("v;not a comment"));
        assert_eq!(ini.get("nope", "key"), None);
    }
}
