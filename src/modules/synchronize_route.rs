//! Where synchronize's two ends are, as ansible.posix's action plugin decides it: which
//! host rsync runs on (the controller, the host the task is delegated to, or the host
//! itself when delegated to itself), which end `src` and `dest` name (`mode: pull` swaps
//! them), how each path is written (a relative path on the end rsync runs on is the
//! controller's, found beside the playbook; on the other end it is the login user's), and
//! the rsync command line the module would have run, for the result's `cmd`.

use super::synchronize::Options;
use super::{Peer, PlanContext, local_search_dirs};

/// Who reads the source tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sender {
    /// The controller walks it itself.
    Controller,
    /// An agent lists it and reads its files.
    Agent(Peer),
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Route {
    pub(super) sender: Sender,
    /// The agent that holds `dest` (an agent on the controller for a pull).
    pub(super) receiver: Peer,
    /// `src` and `dest` as each end reads them.
    pub(super) src: String,
    pub(super) dest: String,
    /// rsync's `%i` letter for a file sent: `<` when it went to a remote host, `>` when
    /// it came to the host rsync runs on.
    pub(super) sent: char,
    /// The remote end as rsync names it (`user@host:`), when there is one.
    remote: Option<Remote>,
    /// How rsync starts on the remote end: `sudo -u USER rsync` under a sudo become.
    rsync_path: Option<String>,
    pull: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct Remote {
    prefix: String,
    port: String,
    key: Option<String>,
}

fn var(ctx: &PlanContext, name: &str) -> Option<String> {
    let value = ctx.vars?.get_attr(name).ok()?;
    if value.is_undefined() || value.is_none() {
        return None;
    }
    Some(
        value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_string),
    )
}

/// A variable of another host, through `hostvars`.
fn host_var(ctx: &PlanContext, host: &str, name: &str) -> Option<String> {
    let value = ctx
        .vars?
        .get_attr("hostvars")
        .ok()?
        .get_item(&minijinja::Value::from(host))
        .ok()?
        .get_attr(name)
        .ok()?;
    if value.is_undefined() || value.is_none() {
        return None;
    }
    Some(
        value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_string),
    )
}

const LOCALHOST: [&str; 3] = ["127.0.0.1", "localhost", "::1"];

/// Whether `host` is reached through the local connection.
fn connects_locally(ctx: &PlanContext, host: &str) -> bool {
    match host_var(ctx, host, "ansible_connection") {
        Some(kind) => kind == "local",
        None => LOCALHOST.contains(&host),
    }
}

impl Route {
    pub(super) fn decide(ctx: &PlanContext, src: &str, dest: &str, opts: &Options) -> Route {
        let pull = opts.pull;
        let inventory_hostname = var(ctx, "inventory_hostname").unwrap_or_default();
        let host_connection_local = var(ctx, "ansible_connection").as_deref() == Some("local");
        let ansible_host = var(ctx, "ansible_host");
        let host_ids = [Some(inventory_hostname.clone()), ansible_host.clone()];
        let delegate = ctx.delegate_to.clone();
        let on_host_itself = delegate
            .as_ref()
            .is_some_and(|d| host_ids.iter().flatten().any(|id| id == d));
        let delegate_remote = delegate
            .as_ref()
            .is_some_and(|d| !on_host_itself && !connects_locally(ctx, d));
        // Both ends on one host: a copy rsync makes without a connection.
        let one_host = on_host_itself || (delegate.is_none() && host_connection_local);
        if one_host {
            let (src, dest) = (absolute(ctx, src), absolute(ctx, dest));
            let sender = if pull || delegate.is_some() {
                Sender::Agent(Peer::Task)
            } else {
                Sender::Controller
            };
            return Route {
                sender,
                receiver: Peer::Task,
                src,
                dest,
                sent: '>',
                remote: None,
                rsync_path: None,
                pull,
            };
        }
        // The host's end, reached from where rsync runs as the host's login user, which
        // the task's become changes only through sudo (`--rsync-path`): the action plugin
        // knows no other method there, and drops the escalation on rsync's own end.
        let rsync_path = ctx
            .escalation
            .as_ref()
            .filter(|e| e.method == "sudo")
            .map(|e| match e.user.as_str() {
                "" => "sudo rsync".to_string(),
                user => format!("sudo -u {user} rsync"),
            });
        let host_peer = match (&ctx.escalation, &rsync_path, &delegate) {
            (Some(_), None, _) => Peer::HostAsLogin,
            (_, _, Some(_)) => Peer::Host,
            _ => Peer::Task,
        };
        let user = opts
            .set_remote_user
            .then(|| var(ctx, "ansible_user"))
            .flatten();
        let address = ansible_host.unwrap_or(inventory_hostname);
        let prefix = match (user, address.contains(':')) {
            (Some(user), true) => format!("[{user}@{address}]:"),
            (Some(user), false) => format!("{user}@{address}:"),
            (None, true) => format!("[{address}]:"),
            (None, false) => format!("{address}:"),
        };
        let remote = Remote {
            prefix,
            port: opts
                .dest_port
                .map(|p| p.to_string())
                .or_else(|| var(ctx, "ansible_port"))
                .unwrap_or_else(|| "22".into()),
            key: opts.private_key.clone().or_else(|| {
                var(ctx, "ansible_ssh_private_key_file")
                    .or_else(|| var(ctx, "ansible_private_key_file"))
            }),
        };
        // rsync's own end: the delegate, or the controller.
        let near = if delegate_remote {
            Peer::Delegate
        } else {
            Peer::Controller
        };
        if pull {
            Route {
                sender: Sender::Agent(host_peer),
                receiver: near,
                src: src.to_string(),
                dest: absolute(ctx, dest),
                sent: '>',
                remote: Some(remote),
                rsync_path,
                pull,
            }
        } else {
            Route {
                sender: if delegate_remote {
                    Sender::Agent(Peer::Delegate)
                } else {
                    Sender::Controller
                },
                receiver: host_peer,
                src: absolute(ctx, src),
                dest: dest.to_string(),
                sent: '<',
                remote: Some(remote),
                rsync_path,
                pull,
            }
        }
    }

    /// The rsync command Ansible's module would have run, for the result's `cmd`.
    pub(super) fn command_line(&self, opts: &Options, check_mode: bool) -> String {
        let mut cmd = vec!["/usr/bin/rsync".to_string()];
        if opts.delay_updates {
            cmd.push("--delay-updates".into());
            cmd.push("-F".into());
        }
        if opts.compress {
            cmd.push("--compress".into());
        }
        if check_mode {
            cmd.push("--dry-run".into());
        }
        if opts.delete {
            cmd.push("--delete-after".into());
        }
        if opts.existing_only {
            cmd.push("--existing".into());
        }
        if opts.checksum {
            cmd.push("--checksum".into());
        }
        if opts.copy_links {
            cmd.push("--copy-links".into());
        }
        if opts.archive {
            cmd.push("--archive".into());
            for (on, off) in [
                (opts.recursive, "--no-recursive"),
                (opts.links, "--no-links"),
                (opts.perms, "--no-perms"),
                (opts.times, "--no-times"),
                (opts.owner, "--no-owner"),
                (opts.group, "--no-group"),
            ] {
                if !on {
                    cmd.push(off.into());
                }
            }
        } else {
            for (on, flag) in [
                (opts.recursive, "--recursive"),
                (opts.links, "--links"),
                (opts.perms, "--perms"),
                (opts.times, "--times"),
                (opts.owner, "--owner"),
                (opts.group, "--group"),
            ] {
                if on {
                    cmd.push(flag.into());
                }
            }
        }
        if opts.dirs {
            cmd.push("--dirs".into());
        }
        let has_rsh = opts.rsync_opts.iter().any(|o| o.contains("--rsh"));
        if let Some(remote) = self.remote.as_ref().filter(|_| !has_rsh) {
            let mut ssh = vec!["/usr/bin/ssh".to_string()];
            if !opts.ssh_connection_multiplexing {
                ssh.extend(["-S".into(), "none".into()]);
            }
            if let Some(key) = &remote.key {
                ssh.extend(["-i".into(), crate::shell_words::quote(key)]);
            }
            ssh.extend(["-o".into(), format!("Port={}", remote.port)]);
            if !opts.verify_host {
                ssh.extend([
                    "-o".into(),
                    "StrictHostKeyChecking=no".into(),
                    "-o".into(),
                    "UserKnownHostsFile=/dev/null".into(),
                ]);
            }
            cmd.push(format!(
                "--rsh={}",
                crate::shell_words::quote(&ssh.join(" "))
            ));
        }
        if let Some(path) = &self.rsync_path {
            cmd.push(format!("--rsync-path={}", crate::shell_words::quote(path)));
        }
        cmd.extend(opts.rsync_opts.iter().cloned());
        if opts.partial {
            cmd.push("--partial".into());
        }
        cmd.push("--out-format='<<CHANGED>>%i %n%L'".into());
        let (src, dest) = match &self.remote {
            Some(remote) if self.pull => {
                (format!("{}{}", remote.prefix, self.src), self.dest.clone())
            }
            Some(remote) => (self.src.clone(), format!("{}{}", remote.prefix, self.dest)),
            None => (self.src.clone(), self.dest.clone()),
        };
        cmd.push(crate::shell_words::quote(&src));
        cmd.push(crate::shell_words::quote(&dest));
        cmd.join(" ")
    }
}

/// A path on the end rsync runs on, as the action plugin's `_get_absolute_path` makes
/// it: absolute (or `host:path`) as written, else the controller's file beside the role
/// or playbook (`files/` first), or the playbook's directory joined with it, made
/// absolute; a trailing `/` kept.
pub(super) fn absolute(ctx: &PlanContext, path: &str) -> String {
    if path.contains(':') || path.starts_with('/') {
        return path.to_string();
    }
    let expanded = crate::tilde::expand_user_path(path);
    if expanded.is_absolute() {
        return expanded.display().to_string();
    }
    let found = local_search_dirs(ctx, "files")
        .into_iter()
        .map(|dir| dir.join(path))
        .find(|candidate| candidate.exists());
    let found = found.unwrap_or_else(|| ctx.role_dir.unwrap_or(ctx.playbook_dir).join(path));
    // Ansible's loader works from the playbook's absolute directory, also when the
    // playbook was named relative to the current one.
    let mut out = normalized(&std::path::absolute(&found).unwrap_or(found))
        .display()
        .to_string();
    if path.ends_with('/') && !out.ends_with('/') {
        out.push('/');
    }
    out
}

/// An absolute path without `.` and `..` (each `..` drops the name before it), as
/// Python's `os.path.abspath` gives it.
fn normalized(path: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
#[path = "synchronize_route_tests.rs"]
mod tests;
