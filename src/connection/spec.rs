//! Inventory vars -> [`ConnectionSpec`], with the precedence Ansible's ssh plugin gives
//! them: it puts its own `-o User=`/`-o Port=`/`-o StrictHostKeyChecking=no` before the
//! user's `ssh_common_args`/`ssh_extra_args`, and ssh keeps the first value of an option.
//! A jump host or proxy command (`-J`, `-o ProxyJump`, `-o ProxyCommand`) becomes the
//! spec's [`Proxy`]; `ssh_args` (ansible.cfg or `ansible_ssh_args`) come first on Ansible's
//! command line, so their proxy wins over the other args'.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use super::ssh_config::{self, ConfigFiles};
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

/// One bastion of a ProxyJump chain (`[user@]host[:port]`, or the `ssh://[user@]host[:port]`
/// form), with what the bastion's own ssh_config blocks say filled in (HostName, Port,
/// User, IdentityFile), as the `ssh -W` OpenSSH runs for it would read them. An unset user
/// is the controller's user and an unset port 22; known_hosts and host key checking are
/// the target host's, and so are the keys tried after the bastion's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JumpHost {
    pub user: Option<String>,
    pub address: String,
    pub port: Option<u16>,
    /// The bastion's own IdentityFile lines.
    pub identity_files: Vec<PathBuf>,
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
            identity_files: Vec::new(),
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

    // Ansible's ssh command line, in its order: ssh_args, then its own `-o` options from
    // the host's variables, then ssh_common_args and ssh_extra_args; ssh keeps the first
    // value of each option, and reads ssh_config only after the command line.
    let mut command_line = CommandLine::default();
    match var_string(vars, &["ansible_ssh_args"]) {
        Some(args) => command_line.words("ansible_ssh_args", Some(&args), &config_error)?,
        None => command_line.words("ssh_args", defaults.ssh_args.as_deref(), &config_error)?,
    }

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
    if !host_key_checking {
        command_line.options.push("StrictHostKeyChecking=no".into());
    }
    if let Some(text) = var_string(vars, &["ansible_port", "ansible_ssh_port"]) {
        let port = parse_port(&text).ok_or_else(|| {
            config_error(format!(
                "ansible_port={text} is not a port number (1-65535)"
            ))
        })?;
        command_line.options.push(format!("Port={port}"));
    }
    let var_key = var_string(
        vars,
        &["ansible_ssh_private_key_file", "ansible_private_key_file"],
    );
    let default_key = defaults
        .private_key
        .as_ref()
        .map(|k| k.to_string_lossy().into_owned());
    for key in var_key.iter().chain(default_key.iter()) {
        command_line
            .options
            .push(format!("IdentityFile=\"{}\"", expand_tilde(key).display()));
    }
    if let Some(user) = var_string(vars, &["ansible_user", "ansible_ssh_user"])
        .or_else(|| defaults.remote_user.clone())
    {
        command_line.options.push(format!("User=\"{user}\""));
    }
    for (name, cli) in [
        ("ansible_ssh_common_args", &defaults.ssh_common_args),
        ("ansible_ssh_extra_args", &defaults.ssh_extra_args),
    ] {
        let args = var_string(vars, &[name]).or_else(|| cli.clone());
        command_line.words(name, args.as_deref(), &config_error)?;
    }

    let address = var_string(vars, &["ansible_host", "ansible_ssh_host"])
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| host.to_string());
    let home = super::local_home().unwrap_or_default();
    let local_name = current_user_name().ok_or_else(|| {
        config_error("no remote user: set ansible_user or remote_user".to_string())
    })?;
    let local = ssh_config::LocalUser::current(local_name.clone(), home.clone());
    let files = match &command_line.config_file {
        Some(file) if file == "none" => ConfigFiles::None,
        Some(file) => ConfigFiles::Only(expand_tilde(file)),
        None => defaults.ssh_config.clone().unwrap_or(ConfigFiles::Default {
            user: home.join(".ssh/config"),
            system: PathBuf::from(ssh_config::SYSTEM_CONFIG),
        }),
    };
    let resolved = ssh_config::resolve_cached(&ssh_config::Request {
        host: &address,
        command_line: &command_line.options,
        files: &files,
        local: &local,
        env,
        exec: &ssh_config::run_in_shell,
    })
    .map_err(config_error)?;
    let mut warnings = Vec::new();
    let proxy = proxy_of(&resolved, &mut |jump| {
        let request = ssh_config::Request {
            host: &jump.address,
            command_line: &[],
            files: &files,
            local: &local,
            env,
            exec: &ssh_config::run_in_shell,
        };
        let (bastion, said) = resolve_bastion(jump, &request)?;
        warnings.extend(said);
        Ok(bastion)
    })
    .map_err(config_error)?;

    let strict = match resolved.strict_host_key_checking.as_deref() {
        _ if !host_key_checking => StrictHostKeyChecking::No,
        // `ask` with nobody to answer is a refusal, as ssh's in batch mode.
        None | Some("yes") | Some("ask") | Some("true") => StrictHostKeyChecking::Yes,
        Some("accept-new") => StrictHostKeyChecking::AcceptNew,
        Some(_) => StrictHostKeyChecking::No,
    };

    let mut known_hosts_files: Vec<PathBuf> = match &resolved.user_known_hosts_files {
        Some(files) if files.is_empty() => vec![PathBuf::from("/dev/null")],
        Some(files) => files.clone(),
        None => vec![
            home.join(".ssh/known_hosts"),
            home.join(".ssh/known_hosts2"),
        ],
    };
    match &resolved.global_known_hosts_files {
        Some(files) => known_hosts_files.extend(files.iter().cloned()),
        None => known_hosts_files
            .extend(["/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"].map(PathBuf::from)),
    }

    let timeout_var = match var_string(vars, &["ansible_timeout", "ansible_ssh_timeout"]) {
        None => None,
        Some(text) => Some(parse_seconds(&text).ok_or_else(|| {
            config_error(format!("ansible_timeout={text} is not a number of seconds"))
        })?),
    };
    let connect_timeout = timeout_var
        .or(defaults.timeout)
        .or(resolved.connect_timeout)
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT);

    // Ansible's `reconnection_retries` (a variable over ANSIBLE_SSH_RETRIES and ansible.cfg),
    // else OpenSSH's ConnectionAttempts counted as retries after the first attempt.
    let retries = match var_string(vars, &["ansible_ssh_retries"]) {
        Some(text) => Some(text.trim().parse::<u32>().map_err(|_| {
            config_error(format!(
                "ansible_ssh_retries={text} is not a non-negative integer"
            ))
        })?),
        None => defaults
            .retries
            .or(resolved.connection_attempts.map(|n| n.saturating_sub(1))),
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
        address: resolved.hostname.clone(),
        port: resolved.port.unwrap_or(22),
        user: resolved.user.clone().unwrap_or(local_name),
        identity_files: resolved.identity_files.clone(),
        strict,
        known_hosts_files,
        connect_timeout,
        proxy,
        password,
        retries,
        ssh: {
            let mut ssh = resolved.settings();
            for warning in warnings {
                if !ssh.warnings.contains(&warning) {
                    ssh.warnings.push(warning);
                }
            }
            ssh
        },
    })
}

/// The proxy the first ProxyJump or ProxyCommand gives (the command line's before the
/// files'); a `none` there already kept the files' out. Each bastion goes through
/// `bastion`, which fills in what its own ssh_config blocks say.
fn proxy_of(
    resolved: &ssh_config::Resolved,
    bastion: &mut dyn FnMut(&JumpHost) -> Result<JumpHost, String>,
) -> Result<Proxy, String> {
    if let Some((jump, origin)) = &resolved.proxy_jump {
        let at = |e: String| format!("{origin}: {e}");
        return match parse_proxy_jump(jump).map_err(at)? {
            Proxy::Jump(chain) => chain
                .iter()
                .map(|hop| bastion(hop).map_err(at))
                .collect::<Result<Vec<_>, _>>()
                .map(Proxy::Jump),
            other => Ok(other),
        };
    }
    if let Some((command, origin)) = &resolved.proxy_command {
        return parse_proxy_command(command).map_err(|e| format!("{origin}: {e}"));
    }
    Ok(Proxy::None)
}

/// A bastion as `ssh -l user -p port bastion` reads the same ssh_config files: the user and
/// port written in the chain win over its blocks. (Its own ProxyJump is not followed: the
/// chain as written is the way.) Returns the options of its blocks not acted on, too.
fn resolve_bastion(
    jump: &JumpHost,
    request: &ssh_config::Request<'_>,
) -> Result<(JumpHost, Vec<String>), String> {
    let mut command_line = Vec::new();
    if let Some(user) = &jump.user {
        command_line.push(format!("User=\"{}\"", user.replace('"', "\\\"")));
    }
    if let Some(port) = jump.port {
        command_line.push(format!("Port={port}"));
    }
    let own = ssh_config::resolve_cached(&ssh_config::Request {
        command_line: &command_line,
        ..*request
    })
    .map_err(|e| format!("jump host {}: {e}", jump.address))?;
    let bastion = JumpHost {
        user: own.user.clone(),
        address: own.hostname.clone(),
        port: own.port,
        identity_files: own.identity_files.clone(),
    };
    Ok((bastion, own.warnings.clone()))
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

/// The ssh command line as ssh reads it before its config files: `-o` options (and the
/// flags that stand for one) in order, and the last `-F`.
#[derive(Debug, Default)]
struct CommandLine {
    options: Vec<String>,
    config_file: Option<String>,
}

impl CommandLine {
    /// One of the ssh args settings.
    fn words(
        &mut self,
        name: &str,
        args: Option<&str>,
        config_error: &dyn Fn(String) -> ConnectError,
    ) -> Result<(), ConnectError> {
        let Some(args) = args else {
            return Ok(());
        };
        let words =
            crate::shell_words::split(args).map_err(|e| config_error(format!("{name}: {e}")))?;
        self.parse(&words)
            .map_err(|e| config_error(format!("{name}: {e}")))
    }

    fn parse(&mut self, words: &[String]) -> Result<(), String> {
        // ssh's flags that take a value, so that the value is not read as a flag.
        const WITH_VALUE: &str = "BbcDEeFIiJLlmOoPpQRSWw";
        let mut words = words.iter();
        while let Some(word) = words.next() {
            let Some(flag) = word.strip_prefix('-').and_then(|w| w.chars().next()) else {
                continue;
            };
            match flag {
                '4' => self.options.push("AddressFamily=inet".into()),
                '6' => self.options.push("AddressFamily=inet6".into()),
                _ => {}
            }
            if !WITH_VALUE.contains(flag) {
                continue;
            }
            let attached = &word[1 + flag.len_utf8()..];
            let value = if attached.is_empty() {
                words
                    .next()
                    .ok_or_else(|| format!("`-{flag}` needs a value"))?
                    .clone()
            } else {
                attached.to_string()
            };
            let quoted = || format!("\"{}\"", value.replace('"', "\\\""));
            match flag {
                'o' => {
                    check_proxy_option(&value)?;
                    self.options.push(value.clone());
                }
                'p' => self.options.push(format!("Port={value}")),
                'l' => self.options.push(format!("User={}", quoted())),
                'i' => self.options.push(format!("IdentityFile={}", quoted())),
                'J' => {
                    parse_proxy_jump(&value)?;
                    self.options.push(format!("ProxyJump={value}"));
                }
                'b' => self.options.push(format!("BindAddress={value}")),
                'c' => self.options.push(format!("Ciphers={value}")),
                'm' => self.options.push(format!("MACs={value}")),
                'F' => self.config_file = Some(value),
                _ => {}
            }
        }
        Ok(())
    }
}

/// A ProxyJump or ProxyCommand in a `-o` option is checked where it is written, so that
/// its error names the setting it came from.
fn check_proxy_option(option: &str) -> Result<(), String> {
    let option = option.trim();
    let (key, value) = option
        .split_once(|c: char| c == '=' || c.is_whitespace())
        .unwrap_or((option, ""));
    let value = value.trim_start_matches(|c: char| c == '=' || c.is_whitespace());
    match key.to_ascii_lowercase().as_str() {
        "proxyjump" => parse_proxy_jump(value).map(drop),
        "proxycommand" => parse_proxy_command(value).map(drop),
        _ => Ok(()),
    }
}

/// The name of the user running turbo-play: $USER, $LOGNAME, else the passwd entry.
fn current_user_name() -> Option<String> {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        .or_else(|| crate::tilde::current_user_passwd().map(|(name, _)| name))
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
