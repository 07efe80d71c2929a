//! Command-line flags, spelled as ansible-playbook spells them.

use std::path::PathBuf;

use clap::{ArgAction, Parser};
use serde_json::{Map, Value};

#[derive(Debug, Parser)]
#[command(
    name = "turbo-play",
    version,
    about = "Run Ansible playbooks over one SSH connection per host, with a cached agent",
    after_help = "Exit codes: 0 ok, 1 error, 2 a host failed, 4 a host unreachable or a parse error, 5 bad options."
)]
pub struct Cli {
    /// Playbook(s) to run, in order.
    #[arg(required = true, value_name = "PLAYBOOK")]
    pub playbooks: Vec<PathBuf>,

    /// Inventory: a file (INI or YAML), a directory, or a comma list `host1,host2,`.
    /// Default: $ANSIBLE_INVENTORY, else ansible.cfg's `inventory`.
    #[arg(short = 'i', long = "inventory", visible_alias = "inventory-file", value_name = "INVENTORY", value_delimiter = None)]
    pub inventory: Vec<String>,

    /// Extra variables: `k=v k2=v2`, JSON or YAML `{"k": 1}`, or `@file`. Highest precedence.
    #[arg(short = 'e', long = "extra-vars", value_name = "VARS")]
    pub extra_vars: Vec<String>,

    /// Further limit the selected hosts to this pattern.
    #[arg(short = 'l', long = "limit", value_name = "SUBSET")]
    pub limit: Option<String>,

    /// How many hosts run at once. Default: $ANSIBLE_FORKS, else ansible.cfg's `forks`,
    /// else 5.
    #[arg(short = 'f', long = "forks", value_name = "FORKS")]
    pub forks: Option<usize>,

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

    /// SSH connection timeout in seconds.
    #[arg(short = 'T', long = "timeout", value_name = "TIMEOUT")]
    pub timeout: Option<u64>,

    /// Don't change anything; report what would change.
    #[arg(short = 'C', long = "check")]
    pub check: bool,

    /// Run notified handlers even on hosts that failed.
    #[arg(long = "force-handlers")]
    pub force_handlers: bool,

    /// Show the differences in changed files.
    #[arg(short = 'D', long = "diff")]
    pub diff: bool,

    /// More output (-v results, -vv agent bootstrap).
    #[arg(short = 'v', long = "verbose", action = ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, thiserror::Error)]
pub enum ExtraVarsError {
    #[error("-e {arg}: {message}")]
    Invalid { arg: String, message: String },
}

/// Merges every `-e` in order (later wins), as ansible-playbook does.
pub fn parse_extra_vars(args: &[String]) -> Result<Map<String, Value>, ExtraVarsError> {
    let mut vars = Map::new();
    for arg in args {
        let invalid = |message: String| ExtraVarsError::Invalid {
            arg: arg.clone(),
            message,
        };
        let parsed = if let Some(path) = arg.strip_prefix('@') {
            let source = crate::yaml::Source::read(std::path::Path::new(path))
                .map_err(|e| invalid(e.to_string()))?;
            let node = source.parse().map_err(|e| invalid(e.to_string()))?;
            match node.to_json() {
                Value::Object(m) => m,
                Value::Null => Map::new(),
                _ => return Err(invalid(format!("{path} must hold a mapping of variables"))),
            }
        } else if arg.trim_start().starts_with('{') || arg.trim_start().starts_with('[') {
            let source = crate::yaml::Source::from_text("<extra vars>", arg.as_str());
            match source
                .parse()
                .map_err(|e| invalid(e.to_string()))?
                .to_json()
            {
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
    let parsed = crate::playbook::parse_kv(text, None);
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
    fn bad_extra_vars_say_how_to_fix() {
        let err = parse_extra_vars(&["n".into()]).unwrap_err().to_string();
        assert!(err.contains("'n' is not k=v"), "{err}");
    }
}
