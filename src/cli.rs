//! Command-line flags, spelled as ansible-playbook spells them, in the groups Ansible's
//! commands share; the ad-hoc and inventory commands and what every command does around
//! a run are in the submodules.

pub mod adhoc;
pub mod inventory;
pub mod launch;
mod toml_dump;
pub mod vars_prompt;

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser};
use serde_json::{Map, Value};

#[derive(Debug, Parser)]
#[command(
    name = "turbo-play",
    version,
    about = "Run Ansible playbooks over one SSH connection per host, with a cached agent",
    after_help = "Exit codes: 0 ok, 1 error, 2 a host failed, 4 a host unreachable or a parse error, 5 bad options.\n\nAlso: `turbo-play adhoc PATTERN -m MODULE -a ARGS` (Ansible's `ansible`) and `turbo-play inventory --list` (`ansible-inventory`); or link the binary under those names."
)]
pub struct Cli {
    /// Playbook(s) to run, in order.
    #[arg(required_unless_present = "merge_recaps", value_name = "PLAYBOOK")]
    pub playbooks: Vec<PathBuf>,

    #[command(flatten)]
    pub inventory: InventoryArgs,

    /// Extra variables: `k=v k2=v2`, JSON or YAML `{"k": 1}`, or `@file`. Highest precedence.
    #[arg(short = 'e', long = "extra-vars", value_name = "VARS")]
    pub extra_vars: Vec<String>,

    /// Run only the K-th of N stable slices of the hosts (K from 1 to N), to split a large
    /// fleet over N controllers; a host's slice depends on its name alone. Merge the slices'
    /// `--json` logs with `--merge-recaps`.
    #[arg(long = "slice", value_name = "K/N")]
    pub slice: Option<crate::host_slice::HostSlice>,

    /// Print one PLAY RECAP (and exit with its code) from the `--json` event logs of several
    /// runs, such as the slices of one fleet; runs nothing.
    #[arg(long = "merge-recaps", value_name = "JSON_LOG", num_args = 1.., conflicts_with = "playbooks")]
    pub merge_recaps: Vec<PathBuf>,

    #[command(flatten)]
    pub forks: ForkArgs,

    #[command(flatten)]
    pub connect: ConnectArgs,

    #[command(flatten)]
    pub check: CheckArgs,

    /// Run notified handlers even on hosts that failed.
    #[arg(long = "force-handlers")]
    pub force_handlers: bool,

    /// More output (-v results, -vv agent bootstrap).
    #[arg(short = 'v', long = "verbose", action = ArgAction::Count)]
    pub verbose: u8,

    /// Only run plays and tasks tagged with these values (comma list; repeatable).
    #[arg(short = 't', long = "tags", value_name = "TAGS")]
    pub tags: Vec<String>,

    /// Only run plays and tasks whose tags do not match these values (comma list;
    /// repeatable).
    #[arg(long = "skip-tags", value_name = "SKIP_TAGS")]
    pub skip_tags: Vec<String>,

    /// Start the playbook at the first task whose name matches (a shell glob).
    #[arg(long = "start-at-task", value_name = "START_AT_TASK")]
    pub start_at_task: Option<String>,

    /// List the hosts each play would run on; runs nothing.
    #[arg(long = "list-hosts")]
    pub list_hosts: bool,

    /// List the tasks that would run; runs nothing.
    #[arg(long = "list-tasks")]
    pub list_tasks: bool,

    /// List the tags in use; runs nothing.
    #[arg(long = "list-tags")]
    pub list_tags: bool,

    /// Check the playbooks' syntax; runs nothing.
    #[arg(long = "syntax-check")]
    pub syntax_check: bool,

    #[command(flatten)]
    pub runas: RunasArgs,

    #[command(flatten)]
    pub vault: VaultArgs,

    /// Print one JSON event per line instead of the human output (same as --output json).
    #[arg(long = "json")]
    pub json: bool,

    /// Output format: `human` (Ansible's default callback) or `json` (one event per line).
    #[arg(long = "output", value_enum, value_name = "FORMAT")]
    pub output: Option<OutputFormat>,
}

/// Ansible's inventory options (`-i`, `-l`, `--flush-cache`), shared by its commands.
#[derive(Debug, Clone, Default, Args)]
pub struct InventoryArgs {
    /// Inventory: a file (INI or YAML), a directory, or a comma list `host1,host2,`.
    /// Default: $ANSIBLE_INVENTORY, else ansible.cfg's `inventory`.
    #[arg(short = 'i', long = "inventory", visible_alias = "inventory-file", value_name = "INVENTORY", value_delimiter = None)]
    pub inventory: Vec<String>,

    /// Further limit the selected hosts to this pattern.
    #[arg(short = 'l', long = "limit", value_name = "SUBSET")]
    pub limit: Option<String>,

    /// Accepted for compatibility: turbo-play keeps no fact cache.
    #[arg(long = "flush-cache")]
    pub flush_cache: bool,
}

/// `-f`.
#[derive(Debug, Clone, Default, Args)]
pub struct ForkArgs {
    /// How many hosts run at once. Default: $ANSIBLE_FORKS, else ansible.cfg's `forks`,
    /// else 50 (not Ansible's 5: a host here costs a connection and a waiting task, not a
    /// process, so the controller mostly waits on the network).
    #[arg(short = 'f', long = "forks", value_name = "FORKS", value_parser = at_least_one_fork)]
    pub forks: Option<usize>,
}

/// Ansible refuses `-f 0` as a usage error, in these words.
fn at_least_one_fork(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("The number of processes (--forks) must be >= 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// `-C`, `-D`.
#[derive(Debug, Clone, Default, Args)]
pub struct CheckArgs {
    /// Don't change anything; report what would change.
    #[arg(short = 'C', long = "check")]
    pub check: bool,

    /// Show the differences in changed files.
    #[arg(short = 'D', long = "diff")]
    pub diff: bool,
}

/// Ansible's connection options: as whom and how to connect.
#[derive(Debug, Clone, Default, Args)]
pub struct ConnectArgs {
    /// Connect as this user (inventory `ansible_user` wins). Default:
    /// $ANSIBLE_REMOTE_USER, else ansible.cfg's `remote_user`.
    #[arg(short = 'u', long = "user", value_name = "REMOTE_USER")]
    pub user: Option<String>,

    /// Private key for SSH authentication.
    #[arg(
        long = "private-key",
        visible_alias = "key-file",
        value_name = "PRIVATE_KEY_FILE"
    )]
    pub private_key: Option<PathBuf>,

    /// Ask for the connection (SSH login) password, once, without echo.
    #[arg(short = 'k', long = "ask-pass")]
    pub ask_pass: bool,

    /// Connection password file (or an executable that prints it).
    #[arg(
        long = "connection-password-file",
        visible_alias = "conn-pass-file",
        value_name = "CONNECTION_PASSWORD_FILE"
    )]
    pub connection_password_file: Option<PathBuf>,

    /// Arguments for every ssh connection, read as ssh reads them (-F, -J, -o any option,
    /// -p/-l/-i...); a host's `ansible_ssh_common_args` wins.
    #[arg(
        long = "ssh-common-args",
        value_name = "SSH_COMMON_ARGS",
        allow_hyphen_values = true
    )]
    pub ssh_common_args: Option<String>,

    /// Arguments for ssh only, read as --ssh-common-args; `ansible_ssh_extra_args` wins.
    #[arg(
        long = "ssh-extra-args",
        value_name = "SSH_EXTRA_ARGS",
        allow_hyphen_values = true
    )]
    pub ssh_extra_args: Option<String>,

    /// SSH connection timeout in seconds.
    #[arg(short = 'T', long = "timeout", value_name = "TIMEOUT")]
    pub timeout: Option<u64>,

    /// Connection type for hosts that set no `ansible_connection` (and whose play sets no
    /// `connection`).
    #[arg(short = 'c', long = "connection", value_name = "CONNECTION",
          value_parser = ["ssh", "local", "smart", "paramiko", "paramiko_ssh"])]
    pub connection: Option<String>,
}

/// Ansible's privilege escalation options.
#[derive(Debug, Clone, Default, Args)]
pub struct RunasArgs {
    /// Run operations with become (does not imply a password prompt).
    #[arg(short = 'b', long = "become")]
    pub become_: bool,

    /// Privilege escalation method to use (default: sudo).
    #[arg(long = "become-method", value_name = "BECOME_METHOD")]
    pub become_method: Option<String>,

    /// Run operations as this user (default: root).
    #[arg(long = "become-user", value_name = "BECOME_USER")]
    pub become_user: Option<String>,

    /// Ask for the privilege escalation password.
    #[arg(short = 'K', long = "ask-become-pass")]
    pub ask_become_pass: bool,

    /// Become password file (or an executable that prints it).
    #[arg(
        long = "become-password-file",
        visible_alias = "become-pass-file",
        value_name = "BECOME_PASSWORD_FILE"
    )]
    pub become_password_file: Option<std::path::PathBuf>,
}

/// Ansible's vault options.
#[derive(Debug, Clone, Default, Args)]
pub struct VaultArgs {
    /// A vault identity: `label@source`, the source a password file, an executable that
    /// prints the password, or `prompt` (repeatable; tried in order).
    #[arg(long = "vault-id", value_name = "VAULT_IDS")]
    pub vault_ids: Vec<String>,

    /// Ask for the vault password.
    #[arg(
        short = 'J',
        long = "ask-vault-password",
        visible_alias = "ask-vault-pass",
        conflicts_with = "vault_password_files"
    )]
    pub ask_vault_pass: bool,

    /// Vault password file (or an executable that prints the password; repeatable).
    #[arg(
        long = "vault-password-file",
        visible_alias = "vault-pass-file",
        value_name = "VAULT_PASSWORD_FILES"
    )]
    pub vault_password_files: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Human,
    Json,
}

impl Cli {
    /// `--json` or `--output json`.
    pub fn json_output(&self) -> bool {
        self.json || self.output == Some(OutputFormat::Json)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExtraVarsError {
    /// An `@file` that cannot be read.
    #[error("-e {arg}: {message}")]
    Unreadable { arg: String, message: String },
    /// A file or JSON/YAML text that does not parse.
    #[error("-e {arg}: {message}")]
    Syntax { arg: String, message: String },
    /// Text that parses, but not to a mapping of variables.
    #[error("-e {arg}: {message}")]
    Invalid { arg: String, message: String },
}

impl ExtraVarsError {
    /// ansible-playbook's exit code for it: a file it cannot read is an `AnsibleError`
    /// (1), YAML it cannot parse an `AnsibleParserError` (4), data that is no mapping an
    /// `AnsibleOptionsError` (5).
    pub fn exit_code(&self) -> u8 {
        match self {
            ExtraVarsError::Unreadable { .. } => launch::EXIT_ERROR,
            ExtraVarsError::Syntax { .. } => launch::EXIT_PARSE_ERROR,
            ExtraVarsError::Invalid { .. } => launch::EXIT_BAD_OPTIONS,
        }
    }
}

/// Merges every `-e` in order (later wins), as ansible-playbook does.
pub fn parse_extra_vars(args: &[String]) -> Result<Map<String, Value>, ExtraVarsError> {
    let mut vars = Map::new();
    for arg in args {
        let arg_text = || arg.clone();
        let invalid = |message: String| ExtraVarsError::Invalid {
            arg: arg_text(),
            message,
        };
        let syntax = |message: String| ExtraVarsError::Syntax {
            arg: arg_text(),
            message,
        };
        let parsed = if let Some(path) = arg.strip_prefix('@') {
            let source = crate::yaml::Source::read(std::path::Path::new(path)).map_err(|e| {
                ExtraVarsError::Unreadable {
                    arg: arg_text(),
                    message: e.to_string(),
                }
            })?;
            let node = source.parse().map_err(|e| syntax(e.to_string()))?;
            match node.to_json() {
                Value::Object(m) => m,
                Value::Null => Map::new(),
                _ => return Err(invalid(format!("{path} must hold a mapping of variables"))),
            }
        } else if arg.trim_start().starts_with('{') || arg.trim_start().starts_with('[') {
            let source = crate::yaml::Source::from_text("<extra vars>", arg.as_str());
            match source.parse().map_err(|e| syntax(e.to_string()))?.to_json() {
                Value::Object(m) => m,
                _ => return Err(invalid("must be a mapping of variables".into())),
            }
        } else {
            parse_key_values(arg).map_err(invalid)?
        };
        vars.extend(parsed);
    }
    Ok(vars)
}

/// `k=v k2="two words"`: Ansible's key=value parsing; values stay strings, as with -e k=v.
fn parse_key_values(text: &str) -> Result<Map<String, Value>, String> {
    let parsed = crate::kv_args::parse_kv(text, None);
    if let Some(word) = parsed.raw.split_whitespace().next() {
        return Err(format!(
            "'{word}' is not k=v: write -e '{word}=value' or pass JSON"
        ));
    }
    Ok(parsed
        .pairs
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_vars_forms_merge_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("vars.yml");
        std::fs::write(&file, "from_file: yes\nn: 7\n").unwrap();
        let vars = parse_extra_vars(&[
            "n=100 msg='two words'".into(),
            r#"{"list": [1, 2]}"#.into(),
            format!("@{}", file.display()),
        ])
        .unwrap();
        assert_eq!(vars["n"], Value::from(7));
        assert_eq!(vars["msg"], Value::from("two words"));
        assert_eq!(vars["list"], serde_json::json!([1, 2]));
        assert_eq!(vars["from_file"], Value::from(true));
    }

    #[test]
    fn listing_tag_and_output_flags_parse() {
        let cli = Cli::try_parse_from([
            "turbo-play",
            "site.yml",
            "-t",
            "a,b",
            "--tags",
            "c",
            "--skip-tags",
            "d",
            "--list-tasks",
            "--start-at-task",
            "Install*",
            "-c",
            "local",
            "--flush-cache",
            "--output",
            "json",
        ])
        .unwrap();
        assert_eq!(cli.tags, ["a,b", "c"]);
        assert_eq!(cli.skip_tags, ["d"]);
        assert!(cli.list_tasks && !cli.list_hosts && cli.inventory.flush_cache);
        assert_eq!(cli.start_at_task.as_deref(), Some("Install*"));
        assert_eq!(cli.connect.connection.as_deref(), Some("local"));
        assert!(cli.json_output());
        let plain = Cli::try_parse_from(["turbo-play", "site.yml"]).unwrap();
        assert!(!plain.json_output());
        assert!(Cli::try_parse_from(["turbo-play", "site.yml", "-c", "winrm"]).is_err());
    }

    #[test]
    fn bad_extra_vars_say_how_to_fix() {
        let err = parse_extra_vars(&["n".into()]).unwrap_err().to_string();
        assert!(err.contains("'n' is not k=v"), "{err}");
    }
}
