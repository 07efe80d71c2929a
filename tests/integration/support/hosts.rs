//! Several inventory hosts on one throw-away sshd: one fresh user per host, and the INI
//! lines a user would write to reach them.

use std::path::PathBuf;

use super::sshd::{Sshd, TestUser};

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
        let sshd = Sshd::start();
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
