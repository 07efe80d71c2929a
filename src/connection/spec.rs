//! Inventory vars -> [`ConnectionSpec`], with the precedence Ansible's ssh plugin gives
//! them: it puts its own `-o User=`/`-o Port=`/`-o StrictHostKeyChecking=no` before the
//! user's `ssh_common_args`/`ssh_extra_args`, and ssh keeps the first value of an option.
//! A jump host or proxy command (`-J`, `-o ProxyJump`, `-o ProxyCommand`) becomes the
//! spec's [`Proxy`]; `ssh_args` (ansible.cfg or `ansible_ssh_args`) come first on Ansible's
//! command line, so their proxy wins over the other args'.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{
    ConnectError, ConnectionDefaults, ConnectionKind, ConnectionSpec, DEFAULT_CONNECT_TIMEOUT,
    StrictHostKeyChecking,
};
use crate::booleans;
use crate::tilde::expand_user_path as expand_tilde;

impl ConnectionSpec {
    /// From a host's merged inventory vars (see the module docs for the precedence).
    pub fn from_host_vars(
        host: &str,
        vars: &Map<String, Value>,
        defaults: &ConnectionDefaults,
    ) -> Result<ConnectionSpec, ConnectError> {
        from_vars_with_env(host, vars, defaults, &|name| std::env::var(name).ok())
    }
}

/// How the SSH connection reaches the host: directly, through a chain of jump hosts
/// (OpenSSH's `ProxyJump` / `-J`), or over the stdin and stdout of a command
/// (`ProxyCommand`). Plain data: filled from the ssh args here and from ssh_config by its
/// reader; `connection::ssh` acts on it. As in OpenSSH, the first of ProxyJump and
/// ProxyCommand to be given wins, and `none` for either means "connect directly" (it also
/// overrides a proxy that ssh_config would give).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Proxy {
    #[default]
    None,
    /// Bastions in the order they are reached: the first is contacted directly, each next
    /// one through a direct-tcpip channel of the previous one, and the host through the
    /// last one. Never empty.
    Jump(Vec<JumpHost>),
    /// A command run with `sh -c` whose stdin and stdout carry the SSH stream. Its `%h %p
    /// %r %n %%` tokens are still in it: they are expanded when connecting.
    Command(String),
}

/// One bastion of a ProxyJump chain, as written (`[user@]host[:port]`, or the
/// `ssh://[user@]host[:port]` form). An unset user is the controller's user and an unset
/// port 22, as OpenSSH does for a jump host ssh_config says nothing about; keys,
/// known_hosts and host key checking are the target host's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JumpHost {
    pub user: Option<String>,
    pub address: String,
    pub port: Option<u16>,
}

impl JumpHost {
    /// `bastion`, `ops@bastion:2222`, `[2001:db8::1]:22`, `ssh://ops@bastion:2222`.
    pub fn parse(text: &str) -> Result<JumpHost, String> {
        let bad = |why: &str| format!("jump host `{text}`: {why} (write [user@]host[:port])");
        let rest = text.trim();
        let rest = rest.strip_prefix("ssh://").unwrap_or(rest);
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (user, hostport) = match rest.rsplit_once('@') {
            Some((user, hostport)) if !user.is_empty() => (Some(user.to_string()), hostport),
            Some(_) => return Err(bad("the user before `@` is empty")),
            None => (None, rest),
        };
        let (address, port) = if let Some(bracketed) = hostport.strip_prefix('[') {
            let (address, after) = bracketed
                .split_once(']')
                .ok_or_else(|| bad("`[` without `]`"))?;
            match after {
                "" => (address, None),
                _ => match after.strip_prefix(':') {
                    Some(port) => (address, Some(port)),
                    None => return Err(bad("text after `]`")),
                },
            }
        } else if hostport.matches(':').count() == 1 {
            let (address, port) = hostport.split_once(':').expect("one colon");
            (address, Some(port))
        } else {
            // A bare IPv6 address has several colons and no port.
            (hostport, None)
        };
        if address.is_empty() {
            return Err(bad("no host name"));
        }
        let port = match port {
            None => None,
            Some(port) => Some(parse_port(port).ok_or_else(|| bad("the port is not 1-65535"))?),
        };
        Ok(JumpHost {
            user,
            address: address.to_string(),
            port,
        })
    }

    /// `user@host:port` as messages show it (the defaults filled in by the caller).
    pub fn describe(&self, default_user: &str) -> String {
        let user = self.user.as_deref().unwrap_or(default_user);
        let port = self.port.unwrap_or(22);
        if self.address.contains(':') {
            format!("{user}@[{}]:{port}", self.address)
        } else {
            format!("{user}@{}:{port}", self.address)
        }
    }
}

/// `ProxyJump`'s value: `none`, or a comma list of jump hosts.
pub fn parse_proxy_jump(value: &str) -> Result<Proxy, String> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("none") {
        return Ok(Proxy::None);
    }
    let hops = value
        .split(',')
        .map(JumpHost::parse)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Proxy::Jump(hops))
}

/// `ProxyCommand`'s value: `none`, or the command (OpenSSH's `exec ` prefix is harmless
/// under `sh -c`, so it is kept).
pub fn parse_proxy_command(value: &str) -> Result<Proxy, String> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("none") {
        return Ok(Proxy::None);
    }
    if value.is_empty() {
        return Err("ProxyCommand has no command".into());
    }
    Ok(Proxy::Command(value.to_string()))
}

/// A password kept in memory only; `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<hidden>)")
    }
}

/// What `-o` options (and `-p`/`-l`/`-i`/`-J`) in the ssh args say; first value wins.
#[derive(Debug, Default, PartialEq)]
struct SshOptions {
    user: Option<String>,
    port: Option<String>,
    identity_files: Vec<String>,
    known_hosts_files: Option<Vec<String>>,
    strict: Option<String>,
    connect_timeout: Option<String>,
    /// `Some(Proxy::None)` when the args said `none`: that beats ssh_config's proxy.
    proxy: Option<Proxy>,
    connection_attempts: Option<String>,
}

pub(super) fn from_vars_with_env(
    host: &str,
    vars: &Map<String, Value>,
    defaults: &ConnectionDefaults,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ConnectionSpec, ConnectError> {
    let config_error = |message: String| ConnectError::Config {
        host: host.to_string(),
        message,
    };

    let kind = match var_string(vars, &["ansible_connection"]).as_deref() {
        None | Some("ssh") | Some("smart") | Some("paramiko") | Some("paramiko_ssh") => {
            ConnectionKind::Ssh
        }
        Some("local") => ConnectionKind::Local,
        Some(other) => {
            return Err(config_error(format!(
                "ansible_connection={other} is not supported: turbo-play connects with `ssh` or `local`"
            )));
        }
    };

    let mut options = SshOptions::default();
    // `ssh_args` (ansible.cfg's, replaced by `ansible_ssh_args`) come first on Ansible's
    // command line; only their proxy is read: their other options (ControlMaster and the
    // like) are for OpenSSH, which turbo-play does not run.
    let ssh_args = match var_string(vars, &["ansible_ssh_args"]) {
        Some(args) => Some(("ansible_ssh_args", args)),
        None => defaults.ssh_args.clone().map(|args| ("ssh_args", args)),
    };
    if let Some((name, args)) = ssh_args {
        let words =
            crate::shell_words::split(&args).map_err(|e| config_error(format!("{name}: {e}")))?;
        let mut proxy_only = SshOptions::default();
        parse_ssh_args(&words, &mut proxy_only)
            .map_err(|e| config_error(format!("{name}: {e}")))?;
        options.proxy = proxy_only.proxy;
    }
    for (name, fallback) in [
        ("ansible_ssh_common_args", &defaults.ssh_common_args),
        ("ansible_ssh_extra_args", &defaults.ssh_extra_args),
    ] {
        let args = var_string(vars, &[name]).map(|a| (name, a)).or_else(|| {
            fallback
                .clone()
                .map(|a| (name.trim_start_matches("ansible_"), a))
        });
        if let Some((name, args)) = args {
            let words = crate::shell_words::split(&args)
                .map_err(|e| config_error(format!("{name}: {e}")))?;
            parse_ssh_args(&words, &mut options)
                .map_err(|e| config_error(format!("{name}: {e}")))?;
        }
    }

    let address = var_string(vars, &["ansible_host", "ansible_ssh_host"])
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| host.to_string());

    let port =
        match var_string(vars, &["ansible_port", "ansible_ssh_port"]).or(options.port.clone()) {
            None => 22,
            Some(text) => parse_port(&text).ok_or_else(|| {
                config_error(format!(
                    "ansible_port={text} is not a port number (1-65535)"
                ))
            })?,
        };

    let user = var_string(vars, &["ansible_user", "ansible_ssh_user"])
        .or_else(|| defaults.remote_user.clone())
        .or(options.user.clone())
        .or_else(current_user_name)
        .ok_or_else(|| {
            config_error("no remote user: set ansible_user or remote_user".to_string())
        })?;

    let mut identity_files = Vec::new();
    if let Some(key) = var_string(
        vars,
        &["ansible_ssh_private_key_file", "ansible_private_key_file"],
    ) {
        identity_files.push(expand_tilde(&key));
    }
    if let Some(key) = &defaults.private_key {
        identity_files.push(expand_tilde(&key.to_string_lossy()));
    }
    for key in &options.identity_files {
        identity_files.push(expand_tilde(key));
    }
    dedup_in_order(&mut identity_files);

    // The ssh plugin's `host_key_checking` option is `type: boolean`, read leniently by
    // Ansible's config whether it comes from a variable or the environment: anything but a
    // true spelling is false (ensure_type in config/manager.py).
    let checking_var = match vars
        .get("ansible_host_key_checking")
        .or_else(|| vars.get("ansible_ssh_host_key_checking"))
        .or_else(|| vars.get("host_key_checking"))
    {
        None | Some(Value::Null) => None,
        Some(value) => Some(booleans::lenient(value)),
    };
    let checking_env = env("ANSIBLE_HOST_KEY_CHECKING").map(|text| booleans::lenient_text(&text));
    let host_key_checking = checking_var
        .or(checking_env)
        .or(defaults.host_key_checking)
        .unwrap_or(true);
    let strict = if !host_key_checking {
        StrictHostKeyChecking::No
    } else {
        match options
            .strict
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            None | Some("yes") | Some("ask") | Some("true") => StrictHostKeyChecking::Yes,
            Some("no") | Some("off") | Some("false") => StrictHostKeyChecking::No,
            Some("accept-new") => StrictHostKeyChecking::AcceptNew,
            Some(other) => {
                return Err(config_error(format!(
                    "StrictHostKeyChecking={other} is not one of yes, no, accept-new, off"
                )));
            }
        }
    };

    let mut known_hosts_files: Vec<PathBuf> = match &options.known_hosts_files {
        Some(files) => files.iter().map(|f| expand_tilde(f)).collect(),
        None => vec![expand_tilde("~/.ssh/known_hosts")],
    };
    // ssh reads the system-wide file too, whatever UserKnownHostsFile says.
    known_hosts_files.push(PathBuf::from("/etc/ssh/ssh_known_hosts"));

    let timeout_var = match var_string(vars, &["ansible_timeout", "ansible_ssh_timeout"]) {
        None => None,
        Some(text) => Some(parse_seconds(&text).ok_or_else(|| {
            config_error(format!("ansible_timeout={text} is not a number of seconds"))
        })?),
    };
    let timeout_option = match &options.connect_timeout {
        None => None,
        Some(text) => Some(parse_seconds(text).ok_or_else(|| {
            config_error(format!("ConnectTimeout={text} is not a number of seconds"))
        })?),
    };
    let connect_timeout = timeout_var
        .or(defaults.timeout)
        .or(timeout_option)
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT);

    // Ansible's `reconnection_retries` (a variable over ANSIBLE_SSH_RETRIES and ansible.cfg),
    // else OpenSSH's ConnectionAttempts counted as retries after the first attempt.
    let retries = match var_string(vars, &["ansible_ssh_retries"]) {
        Some(text) => Some(text.trim().parse::<u32>().map_err(|_| {
            config_error(format!(
                "ansible_ssh_retries={text} is not a non-negative integer"
            ))
        })?),
        None => match defaults.retries {
            Some(n) => Some(n),
            None => match &options.connection_attempts {
                None => None,
                Some(text) => Some(
                    text.trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| {
                            config_error(format!(
                                "ConnectionAttempts={text} is not a positive integer"
                            ))
                        })?
                        - 1,
                ),
            },
        },
    };

    let password = var_string(
        vars,
        &[
            "ansible_password",
            "ansible_ssh_pass",
            "ansible_ssh_password",
        ],
    )
    .map(Secret)
    .or_else(|| defaults.password.clone());

    Ok(ConnectionSpec {
        host: host.to_string(),
        kind,
        address,
        port,
        user,
        identity_files,
        strict,
        known_hosts_files,
        connect_timeout,
        proxy: options.proxy.unwrap_or_default(),
        password,
        retries,
    })
}

/// The first of `names` that is set, as text (numbers and booleans included).
fn var_string(vars: &Map<String, Value>, names: &[&str]) -> Option<String> {
    names.iter().find_map(|name| match vars.get(*name)? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        other => Some(other.to_string()),
    })
}

fn parse_port(text: &str) -> Option<u16> {
    text.trim().parse::<u16>().ok().filter(|p| *p != 0)
}

fn parse_seconds(text: &str) -> Option<Duration> {
    let secs: f64 = text.trim().parse().ok()?;
    (secs.is_finite() && secs > 0.0).then(|| Duration::from_secs_f64(secs))
}

fn dedup_in_order(paths: &mut Vec<PathBuf>) {
    let mut seen = std::collections::HashSet::new();
    paths.retain(|p| seen.insert(p.clone()));
}

fn parse_ssh_args(words: &[String], options: &mut SshOptions) -> Result<(), String> {
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let Some(flag) = word.strip_prefix('-').and_then(|w| w.chars().next()) else {
            continue;
        };
        if !matches!(flag, 'o' | 'p' | 'l' | 'i' | 'J') {
            continue;
        }
        let attached = &word[2..];
        let value = if attached.is_empty() {
            words
                .next()
                .ok_or_else(|| format!("`-{flag}` needs a value"))?
                .clone()
        } else {
            attached.to_string()
        };
        match flag {
            'p' => set_once(&mut options.port, value),
            'l' => set_once(&mut options.user, value),
            'i' => options.identity_files.push(value),
            'J' => {
                if options.proxy.is_none() {
                    options.proxy = Some(parse_proxy_jump(&value)?);
                }
            }
            _ => apply_option(&value, options)?,
        }
    }
    Ok(())
}

fn set_once(slot: &mut Option<String>, value: String) {
    if slot.is_none() {
        *slot = Some(value);
    }
}

/// One `Key=Value` or `Key Value` as ssh's -o takes it; options we do not use are ignored.
fn apply_option(option: &str, options: &mut SshOptions) -> Result<(), String> {
    let option = option.trim();
    let split_at = option
        .find(|c: char| c == '=' || c.is_whitespace())
        .ok_or_else(|| format!("`-o {option}` has no value (use -o Key=Value)"))?;
    let key = option[..split_at].to_ascii_lowercase();
    let value = option[split_at..]
        .trim_start_matches(|c: char| c.is_whitespace())
        .trim_start_matches('=')
        .trim()
        .to_string();
    match key.as_str() {
        "user" => set_once(&mut options.user, value),
        "port" => set_once(&mut options.port, value),
        "identityfile" => options.identity_files.push(value),
        "stricthostkeychecking" => set_once(&mut options.strict, value),
        "connecttimeout" => set_once(&mut options.connect_timeout, value),
        "connectionattempts" => set_once(&mut options.connection_attempts, value),
        "proxyjump" if options.proxy.is_none() => {
            options.proxy = Some(parse_proxy_jump(&value)?);
        }
        "proxycommand" if options.proxy.is_none() => {
            options.proxy = Some(parse_proxy_command(&value)?);
        }
        "userknownhostsfile" if options.known_hosts_files.is_none() => {
            options.known_hosts_files =
                Some(value.split_whitespace().map(str::to_string).collect());
        }
        _ => {}
    }
    Ok(())
}

/// The name of the user running turbo-play: $USER, $LOGNAME, else the passwd entry.
fn current_user_name() -> Option<String> {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        .or_else(|| crate::tilde::current_user_passwd().map(|(name, _)| name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("vars must be an object"),
        }
    }

    fn spec_with(
        v: Value,
        defaults: &ConnectionDefaults,
        env: &[(&str, &str)],
    ) -> Result<ConnectionSpec, ConnectError> {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        from_vars_with_env("web1", &vars(v), defaults, &|name| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    fn spec(v: Value) -> ConnectionSpec {
        spec_with(v, &ConnectionDefaults::default(), &[]).unwrap()
    }

    fn home() -> PathBuf {
        super::super::local_home().unwrap()
    }

    #[test]
    fn defaults_for_a_bare_host() {
        let s = spec(json!({}));
        assert_eq!(s.host, "web1");
        assert_eq!(s.kind, ConnectionKind::Ssh);
        assert_eq!(s.address, "web1");
        assert_eq!(s.port, 22);
        assert_eq!(s.user, current_user_name().unwrap());
        assert!(s.identity_files.is_empty());
        assert_eq!(s.strict, StrictHostKeyChecking::Yes);
        assert_eq!(s.known_hosts_files[0], home().join(".ssh/known_hosts"));
        assert_eq!(s.connect_timeout, Duration::from_secs(10));
    }

    #[test]
    fn host_vars() {
        let s = spec(json!({
            "ansible_connection": "ssh",
            "ansible_host": "127.0.0.1",
            "ansible_port": "2222",
            "ansible_user": "deploy",
            "ansible_ssh_private_key_file": "~/keys/id_deploy",
        }));
        assert_eq!(s.address, "127.0.0.1");
        assert_eq!(s.port, 2222);
        assert_eq!(s.user, "deploy");
        assert_eq!(s.identity_files, vec![home().join("keys/id_deploy")]);
        assert_eq!(spec(json!({"ansible_port": 2200})).port, 2200);
        assert_eq!(
            spec(json!({"ansible_connection": "local"})).kind,
            ConnectionKind::Local
        );
        assert_eq!(
            spec(json!({"ansible_connection": "smart"})).kind,
            ConnectionKind::Ssh
        );
    }

    #[test]
    fn bad_values_name_the_variable() {
        let err = spec_with(
            json!({"ansible_connection": "winrm"}),
            &Default::default(),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("ansible_connection=winrm"), "{err}");
        assert!(err.starts_with("host web1:"), "{err}");
        let err = spec_with(json!({"ansible_port": "http"}), &Default::default(), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("ansible_port=http"), "{err}");
        let err = spec_with(
            json!({"ansible_ssh_common_args": "-o 'StrictHostKeyChecking=maybe'"}),
            &Default::default(),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("StrictHostKeyChecking=maybe"), "{err}");
    }

    #[test]
    fn defaults_apply_under_host_vars() {
        let defaults = ConnectionDefaults {
            remote_user: Some("ops".into()),
            private_key: Some(PathBuf::from("/keys/ops")),
            host_key_checking: Some(false),
            timeout: Some(Duration::from_secs(3)),
            ..Default::default()
        };
        let s = spec_with(json!({}), &defaults, &[]).unwrap();
        assert_eq!(s.user, "ops");
        assert_eq!(s.identity_files, vec![PathBuf::from("/keys/ops")]);
        assert_eq!(s.strict, StrictHostKeyChecking::No);
        assert_eq!(s.connect_timeout, Duration::from_secs(3));

        let s = spec_with(
            json!({"ansible_user": "deploy", "ansible_ssh_private_key_file": "/keys/d"}),
            &defaults,
            &[],
        )
        .unwrap();
        assert_eq!(s.user, "deploy");
        assert_eq!(
            s.identity_files,
            vec![PathBuf::from("/keys/d"), PathBuf::from("/keys/ops")]
        );
    }

    #[test]
    fn host_key_checking_precedence() {
        let on = ConnectionDefaults {
            host_key_checking: Some(true),
            ..Default::default()
        };
        let off = ConnectionDefaults {
            host_key_checking: Some(false),
            ..Default::default()
        };
        let strict = |v: Value, d: &ConnectionDefaults, env: &[(&str, &str)]| {
            spec_with(v, d, env).unwrap().strict
        };
        use StrictHostKeyChecking::*;
        // env beats defaults
        assert_eq!(
            strict(json!({}), &on, &[("ANSIBLE_HOST_KEY_CHECKING", "False")]),
            No
        );
        assert_eq!(
            strict(json!({}), &off, &[("ANSIBLE_HOST_KEY_CHECKING", "True")]),
            Yes
        );
        // host var beats env, as a bool or as a string
        assert_eq!(
            strict(
                json!({"ansible_host_key_checking": false}),
                &on,
                &[("ANSIBLE_HOST_KEY_CHECKING", "True")]
            ),
            No
        );
        assert_eq!(strict(json!({"host_key_checking": "False"}), &on, &[]), No);
        assert_eq!(
            strict(
                json!({"ansible_host_key_checking": "yes"}),
                &off,
                &[("ANSIBLE_HOST_KEY_CHECKING", "False")]
            ),
            Yes
        );
        assert_eq!(strict(json!({}), &Default::default(), &[]), Yes);
        assert_eq!(strict(json!({}), &off, &[]), No);
        // Not a true spelling: false, as Ansible's config reads a boolean option.
        let unset = ConnectionDefaults::default();
        assert_eq!(
            strict(json!({"ansible_host_key_checking": "maybe"}), &unset, &[]),
            No
        );
        assert_eq!(
            strict(
                json!({}),
                &unset,
                &[("ANSIBLE_HOST_KEY_CHECKING", "garbage")]
            ),
            No
        );
    }

    fn jump(user: Option<&str>, address: &str, port: Option<u16>) -> JumpHost {
        JumpHost {
            user: user.map(str::to_string),
            address: address.into(),
            port,
        }
    }

    #[test]
    fn jump_host_forms() {
        assert_eq!(JumpHost::parse("gw").unwrap(), jump(None, "gw", None));
        assert_eq!(
            JumpHost::parse("ops@gw:2222").unwrap(),
            jump(Some("ops"), "gw", Some(2222))
        );
        assert_eq!(
            JumpHost::parse("ssh://ops@gw:2222").unwrap(),
            jump(Some("ops"), "gw", Some(2222))
        );
        assert_eq!(
            JumpHost::parse("[2001:db8::1]:22").unwrap(),
            jump(None, "2001:db8::1", Some(22))
        );
        assert_eq!(
            JumpHost::parse("a@b@gw").unwrap(),
            jump(Some("a@b"), "gw", None)
        );
        assert_eq!(JumpHost::parse("::1").unwrap(), jump(None, "::1", None));
        assert!(
            JumpHost::parse("gw:http")
                .unwrap_err()
                .contains("the port is not 1-65535")
        );
        assert!(JumpHost::parse("@gw").unwrap_err().contains("user"));
        assert_eq!(
            jump(Some("ops"), "2001:db8::1", None).describe("me"),
            "ops@[2001:db8::1]:22"
        );
        assert_eq!(jump(None, "gw", Some(2)).describe("me"), "me@gw:2");
    }

    #[test]
    fn proxies_in_the_ssh_args() {
        let proxy = |name: &str, args: &str| {
            let mut v = Map::new();
            v.insert(name.to_string(), Value::String(args.to_string()));
            spec_with(Value::Object(v), &ConnectionDefaults::default(), &[])
                .unwrap()
                .proxy
        };
        let chain = Proxy::Jump(vec![
            jump(None, "a", None),
            jump(Some("ops"), "b", Some(2222)),
        ]);
        assert_eq!(proxy("ansible_ssh_common_args", "-J a,ops@b:2222"), chain);
        assert_eq!(proxy("ansible_ssh_extra_args", "-Ja,ops@b:2222"), chain);
        assert_eq!(
            proxy("ansible_ssh_common_args", "-o ProxyJump=a,ops@b:2222"),
            chain
        );
        assert_eq!(
            proxy("ansible_ssh_common_args", "-o 'ProxyJump a,ops@b:2222'"),
            chain
        );
        assert_eq!(
            proxy(
                "ansible_ssh_common_args",
                "-o 'ProxyCommand ssh -W %h:%p bastion'"
            ),
            Proxy::Command("ssh -W %h:%p bastion".into())
        );
        assert_eq!(
            proxy("ansible_ssh_common_args", "-oProxyCommand='nc gw 22'"),
            Proxy::Command("nc gw 22".into())
        );
        // The first of ProxyJump and ProxyCommand wins, `none` included.
        assert_eq!(
            proxy(
                "ansible_ssh_common_args",
                "-o ProxyCommand=none -J a -o ProxyJump=b"
            ),
            Proxy::None
        );
        assert_eq!(
            proxy("ansible_ssh_common_args", "-J a -o ProxyCommand=nc"),
            Proxy::Jump(vec![jump(None, "a", None)])
        );
        // ssh_args come first on Ansible's command line; only their proxy is read.
        let s = spec(json!({
            "ansible_ssh_args": "-C -o ControlMaster=auto -o ProxyJump=gw -o Port=2022",
            "ansible_ssh_common_args": "-J other",
        }));
        assert_eq!(s.proxy, Proxy::Jump(vec![jump(None, "gw", None)]));
        assert_eq!(s.port, 22);
        let defaults = ConnectionDefaults {
            ssh_args: Some("-o ControlMaster=auto -J gw".into()),
            ssh_common_args: Some("-J ignored-after-ssh-args -o Port=2200".into()),
            ..Default::default()
        };
        let s = spec_with(json!({}), &defaults, &[]).unwrap();
        assert_eq!(s.proxy, Proxy::Jump(vec![jump(None, "gw", None)]));
        assert_eq!(s.port, 2200, "--ssh-common-args are read");
        // The host's own args win over --ssh-common-args.
        let defaults = ConnectionDefaults {
            ssh_common_args: Some("-J from-cli".into()),
            ..Default::default()
        };
        let s = spec_with(
            json!({"ansible_ssh_common_args": "-J mine"}),
            &defaults,
            &[],
        )
        .unwrap();
        assert_eq!(s.proxy, Proxy::Jump(vec![jump(None, "mine", None)]));
        let s = spec_with(json!({}), &defaults, &[]).unwrap();
        assert_eq!(s.proxy, Proxy::Jump(vec![jump(None, "from-cli", None)]));
        // Errors name where they are.
        let err = spec_with(
            json!({"ansible_ssh_common_args": "-J gw:notaport"}),
            &Default::default(),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("host web1: ansible_ssh_common_args: jump host `gw:notaport`"),
            "{err}"
        );
        assert_eq!(spec(json!({})).proxy, Proxy::None);
    }

    #[test]
    fn passwords_and_retries() {
        let s = spec(json!({"ansible_ssh_pass": "s3cret"}));
        assert_eq!(s.password, Some(Secret("s3cret".into())));
        assert!(!format!("{s:?}").contains("s3cret"), "Debug hides it");
        let s = spec(json!({"ansible_password": "a", "ansible_ssh_pass": "b"}));
        assert_eq!(s.password, Some(Secret("a".into())));
        let defaults = ConnectionDefaults {
            password: Some(Secret("cli".into())),
            retries: Some(3),
            ..Default::default()
        };
        let s = spec_with(json!({}), &defaults, &[]).unwrap();
        assert_eq!(
            (s.password, s.retries),
            (Some(Secret("cli".into())), Some(3))
        );
        let s = spec_with(json!({"ansible_ssh_retries": 0}), &defaults, &[]).unwrap();
        assert_eq!(s.retries, Some(0));
        assert_eq!(spec(json!({})).retries, None);
        let s = spec(json!({"ansible_ssh_extra_args": "-o ConnectionAttempts=4"}));
        assert_eq!(s.retries, Some(3));
        let err = spec_with(
            json!({"ansible_ssh_retries": "many"}),
            &Default::default(),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("ansible_ssh_retries=many"), "{err}");
    }

    #[test]
    fn ssh_args_options() {
        let s = spec(json!({
            "ansible_ssh_common_args": "-o UserKnownHostsFile='/tmp/kh1 ~/kh2' -oStrictHostKeyChecking=accept-new -o \"ConnectTimeout 4\"",
            "ansible_ssh_extra_args": "-o Port=2022 -o User=bob -o IdentityFile=~/.ssh/extra -o StrictHostKeyChecking=no",
        }));
        assert_eq!(
            s.known_hosts_files,
            vec![
                PathBuf::from("/tmp/kh1"),
                home().join("kh2"),
                PathBuf::from("/etc/ssh/ssh_known_hosts")
            ]
        );
        // The first StrictHostKeyChecking wins, as in ssh.
        assert_eq!(s.strict, StrictHostKeyChecking::AcceptNew);
        assert_eq!(s.connect_timeout, Duration::from_secs(4));
        assert_eq!(s.port, 2022);
        assert_eq!(s.user, "bob");
        assert_eq!(s.identity_files, vec![home().join(".ssh/extra")]);

        // ansible_* vars come first on Ansible's ssh command line, so they win.
        let s = spec(json!({
            "ansible_port": 2200,
            "ansible_user": "alice",
            "ansible_ssh_extra_args": "-o Port=2022 -o User=bob -o UserKnownHostsFile=/dev/null",
        }));
        assert_eq!((s.port, s.user.as_str()), (2200, "alice"));
        assert_eq!(s.known_hosts_files[0], PathBuf::from("/dev/null"));

        // host_key_checking=false beats StrictHostKeyChecking=yes in the args.
        let s = spec(json!({
            "host_key_checking": false,
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=yes",
        }));
        assert_eq!(s.strict, StrictHostKeyChecking::No);
        let s = spec(json!({"ansible_ssh_common_args": "-o StrictHostKeyChecking=off"}));
        assert_eq!(s.strict, StrictHostKeyChecking::No);
    }
}
