//! `systemctl show`'s output as ansible-core's systemd_service module parses it (its
//! `parse_systemctl_show`: `{ ... }` values of `Exec*` keys may span lines).

use serde_json::{Map, Value};

pub fn parse_show(text: &str) -> Map<String, Value> {
    let mut parsed = Map::new();
    let mut multival: Vec<&str> = Vec::new();
    let mut key: Option<String> = None;
    for line in text.split('\n') {
        match &key {
            None => {
                if let Some((k, v)) = line.split_once('=') {
                    if k.starts_with("Exec")
                        && v.trim_start().starts_with('{')
                        && !v.trim_end().ends_with('}')
                    {
                        multival.push(v);
                        key = Some(k.to_string());
                        continue;
                    }
                    parsed.insert(k.to_string(), Value::String(v.trim().to_string()));
                }
            }
            Some(k) => {
                multival.push(line);
                if line.trim_end().ends_with('}') {
                    parsed.insert(
                        k.clone(),
                        Value::String(multival.join("\n").trim().to_string()),
                    );
                    multival.clear();
                    key = None;
                }
            }
        }
    }
    parsed
}

/// The daemon said it ignored the request (systemd inside some containers).
pub fn request_was_ignored(out: &str) -> bool {
    !out.contains('=') && (out.contains("ignoring request") || out.contains("ignoring command"))
}

/// `systemctl is-enabled` answers that still mean the unit file is systemd's.
pub const VALID_ENABLED_STATES: &[&str] = &[
    "enabled",
    "enabled-runtime",
    "linked",
    "linked-runtime",
    "masked",
    "masked-runtime",
    "static",
    "indirect",
    "disabled",
    "generated",
    "transient",
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_show_with_multiline_exec_values() {
        let text = "Id=cron.service\nActiveState=active\nExecStart={ path=/usr/sbin/cron ; argv[]=/usr/sbin/cron -f\n  ; ignore_errors=no }\nDescription= Regular  \nNoEquals\n";
        assert_eq!(
            Value::Object(parse_show(text)),
            json!({
                "Id": "cron.service",
                "ActiveState": "active",
                "ExecStart": "{ path=/usr/sbin/cron ; argv[]=/usr/sbin/cron -f\n  ; ignore_errors=no }",
                "Description": "Regular",
            })
        );
        assert!(request_was_ignored("Running in chroot, ignoring request."));
        assert!(!request_was_ignored("Id=x"));
    }
}
