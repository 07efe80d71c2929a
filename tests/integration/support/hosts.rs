//! Inventory hosts for the tests: on the local connection (what most tests need: the
//! language, not the transport), or on one throw-away sshd with one fresh user per host
//! (where the connection itself is what is checked), and the INI lines a user would write
//! to reach them.

use std::path::{Path, PathBuf};

use super::sshd::{Sshd, SshdOptions, TestUser};

/// Hosts on `ansible_connection=local`: the agent runs as a child of turbo-play, as the
/// user running the tests (no sshd, no root). They share one home, `~` on every one of
/// them, kept for the whole test so later runs see what earlier ones left; each host also
/// has `~/<name>/` for files several hosts write under the same name
/// (`dest: ~/{{ inventory_hostname }}/x`). Pass them with [`TestRun::local_hosts`].
///
/// [`TestRun::local_hosts`]: super::run::TestRun::local_hosts
pub struct LocalHosts {
    home: tempfile::TempDir,
    names: Vec<String>,
}

impl LocalHosts {
    pub fn new(names: &[&str]) -> LocalHosts {
        let home = tempfile::tempdir().expect("tempdir");
        for name in names {
            std::fs::create_dir(home.path().join(name)).expect("host directory");
        }
        if names.len() > 1 {
            // Several local hosts of one run that find no agent in the cache install it at
            // once, through one temporary name per process (src/connection/local.rs): all
            // but one then fail. Until that is fixed, their agent is already in place.
            install_agent(home.path());
        }
        LocalHosts {
            home,
            names: names.iter().map(|n| n.to_string()).collect(),
        }
    }

    /// `~` on every local host (and the controller's HOME in their runs).
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// `~/<name>`: host `name`'s own directory in the shared home.
    #[track_caller]
    pub fn dir(&self, name: &str) -> PathBuf {
        assert!(self.names.iter().any(|n| n == name), "no host {name}");
        self.home.path().join(name)
    }

    /// The INI line for host `name`.
    pub fn line(&self, name: &str) -> String {
        format!("{name} ansible_connection=local")
    }

    /// An INI inventory listing every host, one per line.
    pub fn inventory(&self) -> String {
        self.names.iter().map(|n| self.line(n) + "\n").collect()
    }
}

/// The embedded agent where the local connection looks for it under `home`.
fn install_agent(home: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let agent = turbo_play::agent_binary::agent_binary().expect("the embedded agent");
    let dir = home.join(".cache/turbo-play");
    std::fs::create_dir_all(&dir).expect("agent cache directory");
    let path = dir.join(agent.remote_name());
    std::fs::write(&path, &agent.bytes).expect("agent in the cache");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).expect("chmod");
}

pub struct SshHosts {
    pub sshd: Sshd,
    /// `(inventory name, user)`, in the order given to `start`.
    pub hosts: Vec<(String, TestUser)>,
    /// A known_hosts file that trusts the sshd.
    pub known_hosts: PathBuf,
}

impl SshHosts {
    /// An sshd with one fresh user per name.
    pub fn start(names: &[&str]) -> SshHosts {
        SshHosts::start_with(&SshdOptions::default(), names)
    }

    /// [`SshHosts::start`] with an sshd started with `options`.
    pub fn start_with(options: &SshdOptions, names: &[&str]) -> SshHosts {
        let sshd = Sshd::start_with(options);
        let hosts = names
            .iter()
            .map(|name| (name.to_string(), sshd.add_user()))
            .collect();
        let known_hosts =
            sshd.known_hosts_file("known_hosts", &format!("{}\n", sshd.known_hosts_line()));
        SshHosts {
            sshd,
            hosts,
            known_hosts,
        }
    }

    #[track_caller]
    pub fn user(&self, name: &str) -> &TestUser {
        self.hosts
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, u)| u)
            .unwrap_or_else(|| panic!("no host {name}"))
    }

    /// The INI line for host `name`, trusting `known_hosts`.
    pub fn line_with_known_hosts(&self, name: &str, known_hosts: &std::path::Path) -> String {
        let user = self.user(name);
        format!(
            "{name} ansible_host=127.0.0.1 ansible_port={port} ansible_user={user} \
             ansible_ssh_private_key_file={key} \
             ansible_ssh_common_args='-o UserKnownHostsFile={kh}'",
            port = self.sshd.port,
            user = user.name,
            key = self.sshd.user_key.display(),
            kh = known_hosts.display(),
        )
    }

    /// The INI line for host `name`.
    pub fn line(&self, name: &str) -> String {
        self.line_with_known_hosts(name, &self.known_hosts)
    }

    /// An INI inventory listing every host, one per line.
    pub fn inventory(&self) -> String {
        let mut text = String::new();
        for (name, _) in &self.hosts {
            text.push_str(&self.line(name));
            text.push('\n');
        }
        text
    }
}

/// A port on 127.0.0.1 that nothing listens on (bound once, then released).
pub fn closed_port() -> u16 {
    super::sshd::free_port()
}

/// An INI line for a host that refuses connections.
pub fn refusing_host_line(name: &str) -> String {
    format!(
        "{name} ansible_host=127.0.0.1 ansible_port={} ansible_user=nobody",
        closed_port()
    )
}
