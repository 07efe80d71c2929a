//! The service lists service_facts reads, parsed as ansible-core 2.21's module parses
//! them: `service --status-all`, `systemctl list-units`/`list-unit-files`, OpenRC's
//! `rc-status`/`rc-update show -v`.

use serde_json::{Map, Value, json};

pub type Services = Map<String, Value>;

/// ` [ + ]  cron` lines.
pub fn status_all(stdout: &str, services: &mut Services) {
    for line in stdout.split('\n') {
        let rest = line.trim_start();
        let Some(rest) = rest.strip_prefix("[ ") else {
            continue;
        };
        let mut chars = rest.chars();
        let state = match chars.next() {
            Some('+') => "running",
            Some('-') => "stopped",
            _ => continue,
        };
        let Some(after) = chars.as_str().strip_prefix(" ]") else {
            continue;
        };
        if !after.starts_with(char::is_whitespace) {
            continue;
        }
        let name = after.trim_start();
        if name.is_empty() {
            continue;
        }
        services.insert(
            name.to_string(),
            json!({"name": name, "state": state, "source": "sysv"}),
        );
    }
}

const BAD_STATES: &[&str] = &["not-found", "masked", "failed"];

/// `systemctl list-units --no-pager --type service --all --plain`.
pub fn list_units(stdout: &str, services: &mut Services) {
    for line in stdout.split('\n').filter(|l| l.contains(".service")) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 4 {
            continue;
        }
        let head = &fields[..fields.len() - 1];
        let status = BAD_STATES
            .iter()
            .find(|bad| head.contains(bad))
            .copied()
            .unwrap_or(fields[2]);
        let state = if fields[3] == "running" {
            "running"
        } else {
            "stopped"
        };
        services.insert(
            fields[0].to_string(),
            json!({"name": fields[0], "state": state, "status": status, "source": "systemd"}),
        );
    }
}

/// `systemctl list-unit-files --no-pager --type service --all`: updates what list-units
/// found and returns the units it did not, with their status, for `show` to complete.
pub fn list_unit_files(stdout: &str, services: &mut Services) -> Vec<(String, String)> {
    let mut unseen = Vec::new();
    for line in stdout.split('\n').filter(|l| l.contains(".service")) {
        let mut words = line.split_whitespace();
        let (Some(name), Some(status)) = (words.next(), words.next()) else {
            continue;
        };
        match services.get_mut(name) {
            None => unseen.push((name.to_string(), status.to_string())),
            Some(entry) => {
                let known = entry["status"].as_str().unwrap_or_default();
                if !BAD_STATES.contains(&known) {
                    entry["status"] = json!(status);
                }
            }
        }
    }
    unseen
}

/// OpenRC: `rc-status -a -s -m` lines (brackets removed) and `rc-update show -v` lines;
/// returns the warnings for services rc-update does not list.
pub fn openrc(status: &str, update: &str, services: &mut Services) -> Vec<String> {
    let mut runlevels: Map<String, Value> = Map::new();
    for line in update.split('\n').filter(|l| l.contains('|')) {
        let mut parts = line.split('|');
        let (Some(name), Some(levels)) = (parts.next(), parts.next()) else {
            continue;
        };
        let levels = levels.trim();
        let value = if levels.is_empty() {
            Value::Null
        } else {
            json!(levels.split_whitespace().collect::<Vec<_>>())
        };
        runlevels.insert(name.trim().to_string(), value);
    }
    let mut warnings = Vec::new();
    for line in status
        .split('\n')
        .filter(|l| l.starts_with(' '))
        .map(|l| l.replace(['[', ']'], ""))
    {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 2 || fields[0] == "*" {
            continue;
        }
        let Some(levels) = runlevels.get(fields[0]) else {
            warnings.push(format!(
                "Service {} not found in the service list",
                fields[0]
            ));
            continue;
        };
        services.insert(
            fields[0].to_string(),
            json!({"name": fields[0], "runlevels": levels, "state": fields[1], "source": "openrc"}),
        );
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_service_status_all() {
        let mut s = Services::new();
        status_all(
            " [ + ]  cron\n [ - ]  hwclock.sh\n [ ? ]  x\nnoise\n",
            &mut s,
        );
        assert_eq!(
            Value::Object(s),
            json!({
                "cron": {"name": "cron", "state": "running", "source": "sysv"},
                "hwclock.sh": {"name": "hwclock.sh", "state": "stopped", "source": "sysv"},
            })
        );
    }

    #[test]
    fn reads_systemd_units_then_unit_files() {
        let mut s = Services::new();
        list_units(
            "cron.service loaded active running Regular background program processing daemon\n\
             gone.service not-found inactive dead gone.service\n",
            &mut s,
        );
        let unseen = list_unit_files(
            "cron.service enabled enabled\nssh.service disabled enabled\ngone.service masked x\n",
            &mut s,
        );
        assert_eq!(unseen, vec![("ssh.service".into(), "disabled".into())]);
        assert_eq!(
            s["cron.service"],
            json!({"name": "cron.service", "state": "running", "status": "enabled", "source": "systemd"})
        );
        assert_eq!(s["gone.service"]["status"], json!("not-found"));
    }

    #[test]
    fn reads_openrc() {
        let mut s = Services::new();
        let warnings = openrc(
            " sshd started\n cron stopped\n",
            " sshd | default\n local |\n",
            &mut s,
        );
        assert_eq!(warnings, vec!["Service cron not found in the service list"]);
        assert_eq!(
            s["sshd"],
            json!({"name": "sshd", "runlevels": ["default"], "state": "started", "source": "openrc"})
        );
    }
}
