//! OpenSSH's client configuration, read as `ssh` reads it for one host: the `-o` options
//! of the command line first, then `~/.ssh/config` and `/etc/ssh/ssh_config` (or only the
//! `-F` file), first value wins, `Host`/`Match` blocks, `Include`, `%` tokens, `~` and
//! `${VAR}`; a `Match final` reads the files a second time with the HostName.
//!
//! turbo-play puts the inventory's connection variables on that command line as Ansible's
//! ssh plugin does (`-o User=`, `-o Port=`...), before the user's ssh args, so they win over
//! the files as in Ansible; what no one sets falls back to turbo-play's defaults.

mod algorithms;
mod keywords;
mod matching;
mod parse;
mod reader;
mod tokens;

pub use algorithms::Algorithms;
pub use parse::Origin;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use algorithms::List;
use reader::{Reader, Settings, parse_time};
use tokens::Tokens;

pub const SYSTEM_CONFIG: &str = "/etc/ssh/ssh_config";

/// Which files are read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ConfigFiles {
    /// The user's file, then the system's (both may be missing).
    Default { user: PathBuf, system: PathBuf },
    /// Only this one, which must exist (`-F file`).
    Only(PathBuf),
    /// `-F none`.
    None,
}

/// Who runs ssh, for `%u %d %l %L %i`, `Match localuser`, the default user and `~`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LocalUser {
    pub name: String,
    pub home: PathBuf,
    pub uid: u32,
    pub hostname: String,
}

impl LocalUser {
    pub fn current(name: String, home: PathBuf) -> LocalUser {
        use std::os::unix::fs::MetadataExt;
        LocalUser {
            name,
            home,
            uid: std::fs::metadata("/proc/self")
                .map(|m| m.uid())
                .unwrap_or(0),
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default(),
        }
    }
}

pub struct Request<'a> {
    /// The name given to ssh: `ansible_host`, else the inventory name.
    pub host: &'a str,
    /// `-o` options in command-line order (`Key=Value` or `Key Value`).
    pub command_line: &'a [String],
    pub files: &'a ConfigFiles,
    pub local: &'a LocalUser,
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// Runs a `Match exec` command; true when it exits 0.
    pub exec: &'a dyn Fn(&str) -> Result<bool, String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AddressFamily {
    #[default]
    Any,
    Inet,
    Inet6,
}

/// What the configuration says for one host; `None` where it says nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// HostName (tokens expanded), else the name given.
    pub hostname: String,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub identity_files: Vec<PathBuf>,
    pub certificate_files: Vec<PathBuf>,
    pub identities_only: bool,
    /// IdentityAgent: a socket path, `none`, or `SSH_AUTH_SOCK`.
    pub identity_agent: Option<String>,
    /// `Some(empty)` for `none`.
    pub user_known_hosts_files: Option<Vec<PathBuf>>,
    pub global_known_hosts_files: Option<Vec<PathBuf>>,
    /// StrictHostKeyChecking as written, lowercased.
    pub strict_host_key_checking: Option<String>,
    pub hash_known_hosts: bool,
    pub connect_timeout: Option<Duration>,
    pub connection_attempts: Option<u32>,
    /// `Some(ZERO)`: keepalives off.
    pub server_alive_interval: Option<Duration>,
    pub server_alive_count_max: Option<u32>,
    pub address_family: AddressFamily,
    pub bind_address: Option<String>,
    pub algorithms: Algorithms,
    /// ProxyJump, tokens expanded; `None` for `none`.
    pub proxy_jump: Option<(String, Origin)>,
    /// ProxyCommand as written: its tokens are expanded when connecting, with the values
    /// the connection ends up with. `None` for `none`.
    pub proxy_command: Option<(String, Origin)>,
    /// Options read and not acted on, each naming its file and line: warned about.
    pub warnings: Vec<String>,
}

/// What the client configuration adds to a connection beyond address, port, user, keys,
/// known_hosts and timeout (which have fields of their own in the spec).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SshSettings {
    pub identities_only: bool,
    /// IdentityAgent: a socket path, `none`, or `SSH_AUTH_SOCK`.
    pub identity_agent: Option<String>,
    pub certificate_files: Vec<PathBuf>,
    /// accept-new writes `|1|salt|hash` names.
    pub hash_known_hosts: bool,
    /// `Some(ZERO)`: keepalives off.
    pub server_alive_interval: Option<Duration>,
    pub server_alive_count_max: Option<u32>,
    pub address_family: AddressFamily,
    pub bind_address: Option<String>,
    pub algorithms: Algorithms,
    /// Options read and not acted on, each naming its file and line.
    pub warnings: Vec<String>,
}

impl Resolved {
    pub fn settings(&self) -> SshSettings {
        SshSettings {
            identities_only: self.identities_only,
            identity_agent: self.identity_agent.clone(),
            certificate_files: self.certificate_files.clone(),
            hash_known_hosts: self.hash_known_hosts,
            server_alive_interval: self.server_alive_interval,
            server_alive_count_max: self.server_alive_count_max,
            address_family: self.address_family,
            bind_address: self.bind_address.clone(),
            algorithms: self.algorithms.clone(),
            warnings: self.warnings.clone(),
        }
    }
}

/// Resolves once per distinct request for the run: the executor asks for every task.
pub fn resolve_cached(request: &Request<'_>) -> Result<Arc<Resolved>, String> {
    type Key = (String, Vec<String>, ConfigFiles, LocalUser);
    type Cache = Mutex<HashMap<Key, Result<Arc<Resolved>, String>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key: Key = (
        request.host.to_string(),
        request.command_line.to_vec(),
        request.files.clone(),
        request.local.clone(),
    );
    let cache = CACHE.get_or_init(Default::default);
    if let Some(found) = cache.lock().expect("ssh_config cache").get(&key) {
        return found.clone();
    }
    let result = resolve(request).map(Arc::new);
    cache
        .lock()
        .expect("ssh_config cache")
        .insert(key, result.clone());
    result
}

pub fn resolve(request: &Request<'_>) -> Result<Resolved, String> {
    let mut reader = Reader::new(request);
    reader.command_line(request.command_line)?;
    read_files(&mut reader, request.files)?;
    if reader.wants_final {
        let hostname = hostname(&reader.settings, request.host)?;
        reader.start_final_pass(&hostname);
        read_files(&mut reader, request.files)?;
    }
    finish(request, reader.settings)
}

fn read_files(reader: &mut Reader<'_>, files: &ConfigFiles) -> Result<(), String> {
    match files {
        ConfigFiles::Default { user, system } => {
            reader.user_file(user, false)?;
            reader.system_file(system)
        }
        ConfigFiles::Only(path) => reader.user_file(path, true),
        ConfigFiles::None => Ok(()),
    }
}

fn hostname(settings: &Settings, host: &str) -> Result<String, String> {
    match settings.first.get("HostName") {
        None => Ok(host.to_string()),
        Some(setting) => Tokens {
            host: host.to_string(),
            ..Default::default()
        }
        .expand(&setting.args[0], tokens::HOSTNAME)
        .map_err(|e| format!("{}: HostName: {e}", setting.origin)),
    }
}

/// `/bin/sh -c command` (or `$SHELL`), output discarded: exit status 0 is a match.
pub fn run_in_shell(command: &str) -> Result<bool, String> {
    let shell = std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/sh".into());
    std::process::Command::new(&shell)
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map(|status| status.success())
        .map_err(|e| format!("Match exec '{command}': running {shell}: {e}"))
}

fn finish(request: &Request<'_>, settings: Settings) -> Result<Resolved, String> {
    let local = request.local;
    let hostname = hostname(&settings, request.host)?;
    let value = |name: &str| settings.first.get(name);
    let text = |name: &str| settings.value(name).map(str::to_string);
    let yes = |name: &str| {
        settings
            .value(name)
            .is_some_and(|v| v.eq_ignore_ascii_case("yes") || v.eq_ignore_ascii_case("true"))
    };
    let port: Option<u16> = settings.value("Port").and_then(|p| p.parse().ok());
    let user = text("User");
    let jump = text("ProxyJump").filter(|j| !j.eq_ignore_ascii_case("none"));
    let tokens = Tokens {
        host: hostname.clone(),
        original: request.host.to_string(),
        port: port.unwrap_or(22),
        remote_user: user.clone().unwrap_or_else(|| local.name.clone()),
        local_user: local.name.clone(),
        local_home: local.home.display().to_string(),
        local_host: local.hostname.clone(),
        uid: local.uid,
        host_key_alias: text("HostKeyAlias").unwrap_or_else(|| request.host.to_string()),
        jump: jump.clone().unwrap_or_default(),
    };
    let path = |setting: &reader::Setting, arg: &str, allowed: &str| {
        tokens
            .expand_path(arg, allowed, request.env)
            .map(PathBuf::from)
            .map_err(|e| format!("{}: {e}", setting.origin))
    };
    let files_of = |name: &str| -> Result<Vec<PathBuf>, String> {
        let mut files = Vec::new();
        for setting in settings.lists.get(name).into_iter().flatten() {
            let arg = &setting.args[0];
            if arg.eq_ignore_ascii_case("none") {
                continue;
            }
            let file = path(setting, arg, tokens::ALL)?;
            if !files.contains(&file) {
                files.push(file);
            }
        }
        Ok(files)
    };
    let file_list = |name: &str, allowed: &str| -> Result<Option<Vec<PathBuf>>, String> {
        let Some(setting) = value(name) else {
            return Ok(None);
        };
        if setting.args.len() == 1 && setting.args[0].eq_ignore_ascii_case("none") {
            return Ok(Some(Vec::new()));
        }
        setting
            .args
            .iter()
            .map(|arg| path(setting, arg, allowed))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    };
    let seconds = |name: &str| -> Option<Duration> {
        settings
            .value(name)
            .filter(|v| !v.eq_ignore_ascii_case("none"))
            .and_then(parse_time)
            .map(Duration::from_secs)
    };
    let count = |name: &str| settings.value(name).and_then(|v| v.parse::<u32>().ok());
    let proxy_jump = match jump {
        None => None,
        Some(text) => {
            let origin = value("ProxyJump").expect("set").origin.clone();
            let expanded = tokens
                .expand(&text, tokens::PROXY)
                .map_err(|e| format!("{origin}: ProxyJump: {e}"))?;
            Some((expanded, origin))
        }
    };
    let proxy_command = value("ProxyCommand")
        .filter(|s| !s.raw.trim().eq_ignore_ascii_case("none"))
        .map(|s| (s.raw.trim().to_string(), s.origin.clone()));

    let mut warnings = settings.not_honoured.clone();
    let mut algorithms = Algorithms::default();
    for (name, list, slot) in [
        ("Ciphers", List::Ciphers, &mut algorithms.ciphers),
        ("KexAlgorithms", List::Kex, &mut algorithms.kex),
        ("MACs", List::Macs, &mut algorithms.macs),
        (
            "HostKeyAlgorithms",
            List::HostKeys,
            &mut algorithms.host_keys,
        ),
    ] {
        let Some(setting) = value(name) else { continue };
        let (names, missing) = algorithms::apply(list, &setting.args[0])
            .map_err(|e| format!("{}: {name} {e}", setting.origin))?;
        if !missing.is_empty() {
            warnings.push(format!(
                "{}: {name}: turbo-play's ssh implementation has no {}: left out",
                setting.origin,
                missing.join(", ")
            ));
        }
        *slot = Some(names);
    }
    let mut seen = std::collections::HashSet::new();
    warnings.retain(|w| seen.insert(w.clone()));

    Ok(Resolved {
        port,
        user,
        identity_files: files_of("IdentityFile")?,
        certificate_files: files_of("CertificateFile")?,
        identities_only: yes("IdentitiesOnly"),
        identity_agent: match value("IdentityAgent") {
            None => None,
            Some(setting) => {
                let arg = &setting.args[0];
                if arg.eq_ignore_ascii_case("none") || arg == "SSH_AUTH_SOCK" {
                    Some(arg.clone())
                } else if let Some(var) = arg.strip_prefix('$') {
                    Some((request.env)(var).unwrap_or_else(|| "none".into()))
                } else {
                    Some(path(setting, arg, tokens::ALL)?.display().to_string())
                }
            }
        },
        user_known_hosts_files: file_list("UserKnownHostsFile", tokens::ALL)?,
        global_known_hosts_files: file_list("GlobalKnownHostsFile", "")?,
        strict_host_key_checking: settings
            .value("StrictHostKeyChecking")
            .map(str::to_ascii_lowercase),
        hash_known_hosts: yes("HashKnownHosts"),
        connect_timeout: seconds("ConnectTimeout").filter(|d| !d.is_zero()),
        connection_attempts: count("ConnectionAttempts"),
        server_alive_interval: seconds("ServerAliveInterval"),
        server_alive_count_max: count("ServerAliveCountMax"),
        address_family: match settings.value("AddressFamily").map(str::to_ascii_lowercase) {
            Some(f) if f == "inet" => AddressFamily::Inet,
            Some(f) if f == "inet6" => AddressFamily::Inet6,
            _ => AddressFamily::Any,
        },
        bind_address: text("BindAddress"),
        algorithms,
        proxy_jump,
        proxy_command,
        hostname,
        warnings,
    })
}

#[cfg(test)]
mod tests;
