//! `wait_for` against what ansible-playbook 2.21 did with the same playbook (`-c local`,
//! recorded here as data): a file, a regex in it, a path going away, a port opening (with
//! a banner), staying closed or open, draining, a plain sleep, check mode, and the
//! module's own refusals; a rerun changes nothing.

use std::io::Write;
use std::net::TcpListener;

use crate::everyday_modules::assert_results;
use crate::support::hosts::{LocalHosts, closed_port};
use crate::support::run::{Recap, TestRun, recap};

const PLAYBOOK: &str = r####"- hosts: all
  gather_facts: false
  vars:
    d: DIR
  tasks:
    - {name: log, copy: {dest: "{{ d }}/log", content: "booting\nready pid=42 on port 8080\n"}}
    - {name: wf_file, wait_for: {path: "{{ d }}/log"}, register: wf_file}
    - {name: wf_regex, wait_for: {path: "{{ d }}/log", search_regex: 'ready pid=(?P<pid>\d+) on port (\d+)', timeout: 5}, register: wf_regex}
    - {name: wf_noregex, wait_for: {path: "{{ d }}/log", search_regex: 'never', timeout: 2}, register: wf_noregex, ignore_errors: true}
    - {name: wf_absent, wait_for: {path: "{{ d }}/nothing", state: absent}, register: wf_absent}
    - {name: wf_gone, wait_for: {path: "{{ d }}/log", state: absent, timeout: 1, msg: "log stayed"}, register: wf_gone, ignore_errors: true}
    - {name: wf_port, wait_for: {port: PORT, host: 127.0.0.1, timeout: 5}, register: wf_port}
    - {name: wf_banner, wait_for: {port: PORT, search_regex: 'HELLO (\d+)', timeout: 5}, register: wf_banner}
    - {name: wf_closed, wait_for: {port: CLOSED, state: stopped, timeout: 3}, register: wf_closed}
    - {name: wf_notopen, wait_for: {port: CLOSED, timeout: 2, delay: 1}, register: wf_notopen, ignore_errors: true}
    - {name: wf_stays, wait_for: {port: PORT, state: stopped, timeout: 1}, register: wf_stays, ignore_errors: true}
    - {name: wf_drained, wait_for: {port: CLOSED, state: drained, exclude_hosts: [10.0.0.1]}, register: wf_drained}
    - {name: wf_sleep, wait_for: {timeout: 1}, register: wf_sleep}
    - {name: wf_check, wait_for: {port: PORT}, register: wf_check, check_mode: true}
    - {name: wf_bad, wait_for: {port: PORT, path: "{{ d }}/log"}, register: wf_bad, ignore_errors: true}
    - name: results
      debug:
        msg: "{{ lookup('vars', item) | dict2items | rejectattr('key', 'in', ['invocation', 'exception']) | items2dict }}"
      loop: [wf_file, wf_regex, wf_noregex, wf_absent, wf_gone, wf_port, wf_banner, wf_closed, wf_notopen, wf_stays, wf_drained, wf_sleep, wf_check, wf_bad]
"####;

/// ansible-playbook 2.21's results (minus `invocation` and `exception`).
const RECORDED: &[(&str, &str)] = &[
    (
        "wf_file",
        r#"{"changed": false, "elapsed": 0, "failed": false, "gid": 0, "group": "root", "match_groupdict": {}, "match_groups": [], "mode": "0644", "owner": "root", "path": "DIR/log", "port": null, "search_regex": null, "size": 34, "state": "file", "uid": 0}"#,
    ),
    (
        "wf_regex",
        r#"{"changed": false, "elapsed": 0, "failed": false, "gid": 0, "group": "root", "match_groupdict": {"pid": "42"}, "match_groups": ["42", "8080"], "mode": "0644", "owner": "root", "path": "DIR/log", "port": null, "search_regex": "ready pid=(?P<pid>\\d+) on port (\\d+)", "size": 34, "state": "file", "uid": 0}"#,
    ),
    (
        "wf_noregex",
        r#"{"changed": false, "elapsed": 2, "failed": true, "msg": "Timeout when waiting for search string never in DIR/log"}"#,
    ),
    (
        "wf_absent",
        r#"{"changed": false, "elapsed": 0, "failed": false, "match_groupdict": {}, "match_groups": [], "path": "DIR/nothing", "port": null, "search_regex": null, "state": "absent"}"#,
    ),
    (
        "wf_gone",
        r#"{"changed": false, "elapsed": 1, "failed": true, "msg": "log stayed"}"#,
    ),
    (
        "wf_port",
        r#"{"changed": false, "elapsed": 0, "failed": false, "match_groupdict": {}, "match_groups": [], "path": null, "port": PORT, "search_regex": null, "state": "started"}"#,
    ),
    (
        "wf_banner",
        r#"{"changed": false, "elapsed": 0, "failed": false, "match_groupdict": {}, "match_groups": [], "path": null, "port": PORT, "search_regex": "HELLO (\\d+)", "state": "started"}"#,
    ),
    (
        "wf_closed",
        r#"{"changed": false, "elapsed": 0, "failed": false, "match_groupdict": {}, "match_groups": [], "path": null, "port": CLOSED, "search_regex": null, "state": "stopped"}"#,
    ),
    (
        "wf_notopen",
        r#"{"changed": false, "elapsed": 2, "failed": true, "msg": "Timeout when waiting for 127.0.0.1:CLOSED"}"#,
    ),
    (
        "wf_stays",
        r#"{"changed": false, "elapsed": 1, "failed": true, "msg": "Timeout when waiting for 127.0.0.1:PORT to stop."}"#,
    ),
    (
        "wf_drained",
        r#"{"changed": false, "elapsed": 0, "failed": false, "match_groupdict": {}, "match_groups": [], "path": null, "port": CLOSED, "search_regex": null, "state": "drained"}"#,
    ),
    (
        "wf_sleep",
        r#"{"changed": false, "elapsed": 1, "failed": false, "match_groupdict": {}, "match_groups": [], "path": null, "port": null, "search_regex": null, "state": "started"}"#,
    ),
    (
        "wf_check",
        r#"{"changed": false, "failed": false, "msg": "remote module (wait_for) does not support check mode", "skipped": true}"#,
    ),
    (
        "wf_bad",
        r#"{"changed": false, "elapsed": 0, "failed": true, "msg": "port and path parameter can not both be passed to wait_for"}"#,
    ),
];

/// A listener on loopback that greets every connection with a banner and closes it.
fn banner_listener() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut conn = conn;
            let _ = conn.write_all(b"HELLO 42\n");
        }
    });
    port
}

#[test]
fn wait_for_does_what_ansible_did() {
    let hosts = LocalHosts::new(&["h"]);
    let dir = hosts.dir("h");
    let dir_text = dir.to_str().unwrap();
    let (port, closed) = (banner_listener().to_string(), closed_port().to_string());
    let fill = |text: &str| {
        text.replace("DIR", dir_text)
            .replace("CLOSED", &closed)
            .replace("PORT", &port)
    };
    let recorded: Vec<(String, String)> = RECORDED
        .iter()
        .map(|(name, value)| (name.to_string(), fill(value)))
        .collect();
    let recorded: Vec<(&str, &str)> = recorded
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let run = TestRun::new().playbook(&fill(PLAYBOOK)).local_hosts(&hosts);
    let expected = |changed| Recap {
        skipped: 1,
        ignored: 5,
        ..recap(15, changed)
    };
    let first = run.run();
    first.assert_code(0);
    assert_results(&first, dir_text, &[], &recorded, &[]);
    assert_eq!(first.recap("h"), expected(1), "{}", first.stdout);
    let again = run.run();
    again.assert_code(0);
    assert_results(&again, dir_text, &[], &recorded, &[]);
    assert_eq!(again.recap("h"), expected(0), "{}", again.stdout);
}
