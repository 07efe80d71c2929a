//! Where synchronize's ends are under `become`, and the `cmd` ansible-playbook 2.21.5 with
//! ansible.posix reported for the same tasks (rsync 3.5 on both ends).

use serde_json::json;

use super::*;
use crate::modules::{Escalation, PlanContext};

fn options(pull: bool) -> Options {
    let mut args = serde_json::Map::new();
    args.insert("src".into(), json!("/srv/site"));
    args.insert("dest".into(), json!("/var/www"));
    args.insert("mode".into(), json!(if pull { "pull" } else { "push" }));
    let args = crate::modules::check(&super::super::synchronize::Synchronize, json!(args));
    Options::from_args(&args).unwrap()
}

/// The route and `cmd` of `/srv/site` → `/var/www` for host `web` (10.0.0.5:2222 as
/// deploy), escalating as `escalation`, delegated to `delegate`.
fn routed(
    pull: bool,
    escalation: Option<(&'static str, &str)>,
    delegate: Option<&str>,
) -> (Route, String) {
    let vars = minijinja::Value::from_serialize(json!({
        "inventory_hostname": "web",
        "ansible_host": "10.0.0.5",
        "ansible_port": 2222,
        "ansible_user": "deploy",
    }));
    let mut ctx = PlanContext::new(std::path::Path::new("/play"));
    ctx.vars = Some(&vars);
    ctx.delegated = delegate.is_some();
    ctx.delegate_to = delegate.map(str::to_string);
    ctx.escalation = escalation.map(|(method, user)| Escalation {
        method,
        user: user.to_string(),
    });
    let opts = options(pull);
    let route = Route::decide(&ctx, "/srv/site", "/var/www", &opts);
    let cmd = route.command_line(&opts, false);
    (route, cmd)
}

const RSH: &str = "--rsh='/usr/bin/ssh -S none -o Port=2222 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'";

#[test]
fn under_sudo_rsync_starts_through_sudo_on_the_hosts_end() {
    let (route, cmd) = routed(false, Some(("sudo", "root")), None);
    assert_eq!(
        cmd,
        format!(
            "/usr/bin/rsync --delay-updates -F --compress --archive {RSH} \
             --rsync-path='sudo -u root rsync' --out-format='<<CHANGED>>%i %n%L' \
             /srv/site deploy@10.0.0.5:/var/www"
        )
    );
    // The host's end is the task's session, escalated; the controller's is not.
    assert_eq!(
        (route.sender, route.receiver),
        (Sender::Controller, Peer::Task)
    );

    let (route, cmd) = routed(true, Some(("sudo", "alice")), None);
    assert!(
        cmd.contains(&format!(
            "{RSH} --rsync-path='sudo -u alice rsync' --out-format"
        )),
        "{cmd}"
    );
    assert_eq!(
        (route.sender, route.receiver),
        (Sender::Agent(Peer::Task), Peer::Controller)
    );

    // Delegated to another host, rsync runs there unescalated and reaches the host through
    // sudo.
    let (route, cmd) = routed(false, Some(("sudo", "root")), Some("other"));
    assert!(cmd.contains("--rsync-path='sudo -u root rsync'"), "{cmd}");
    assert_eq!(
        (route.sender, route.receiver),
        (Sender::Agent(Peer::Delegate), Peer::Host)
    );
}

#[test]
fn another_become_method_leaves_the_hosts_end_to_the_login_user() {
    let (route, cmd) = routed(false, Some(("su", "root")), None);
    assert!(!cmd.contains("--rsync-path"), "{cmd}");
    assert_eq!(route.receiver, Peer::HostAsLogin);
    let (route, _) = routed(true, Some(("su", "root")), Some("other"));
    assert_eq!(
        (route.sender, route.receiver),
        (Sender::Agent(Peer::HostAsLogin), Peer::Delegate)
    );
}

#[test]
fn without_become_or_on_one_host_there_is_no_rsync_path() {
    let (route, cmd) = routed(false, None, None);
    assert!(!cmd.contains("--rsync-path"), "{cmd}");
    assert_eq!(route.receiver, Peer::Task);
    // Delegated to the host itself, rsync runs there with the task's become and copies
    // within the host.
    let (route, cmd) = routed(false, Some(("sudo", "root")), Some("web"));
    assert_eq!(
        cmd,
        "/usr/bin/rsync --delay-updates -F --compress --archive \
         --out-format='<<CHANGED>>%i %n%L' /srv/site /var/www"
    );
    assert_eq!(
        (route.sender, route.receiver),
        (Sender::Agent(Peer::Task), Peer::Task)
    );
}

#[test]
fn a_relative_source_is_the_controllers_file_by_its_absolute_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("site")).unwrap();
    let here = std::env::current_dir().unwrap();
    // A playbook named relative to the current directory: its directory is relative too.
    let relative = pathdiff(dir.path(), &here);
    let mut ctx = PlanContext::new(&relative);
    ctx.task_dir = Some(&relative);
    assert_eq!(
        absolute(&ctx, "site/"),
        format!("{}/site/", dir.path().display())
    );
    assert_eq!(absolute(&ctx, "/srv/x"), "/srv/x");
}

/// `to` written relative to `from`.
fn pathdiff(to: &std::path::Path, from: &std::path::Path) -> std::path::PathBuf {
    let ups = from.components().count() - 1;
    let mut out: std::path::PathBuf = (0..ups).map(|_| "..").collect();
    out.push(to.strip_prefix("/").unwrap());
    out
}
