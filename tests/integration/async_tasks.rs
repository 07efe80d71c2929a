//! `async:`/`poll:` and `async_status` (src/executor/host_task/async_job.rs,
//! src/modules/async_status.rs, agent/src/ops/job.rs). Ansible's side is recorded: the
//! lines and results below are what ansible-playbook 2.21.5 printed and registered for the
//! same tasks on the local connection ("ASYNC POLL on HOST: jid=J started=True
//! finished=False", "ASYNC OK on HOST: jid=J", "ASYNC FAILED on HOST: jid=J", a job not
//! finished in time failing with "async task produced unparsable results" and the last
//! status under `async_result`, "This action (copy) does not support async.", "could not
//! find job").

use std::time::Duration;

use serde_json::Value;

use crate::support::hosts::{LocalHosts, SshHosts};
use crate::support::run::{Outcome, TestRun, assert_contains, assert_not_contains, recap};

/// The JSON a `debug: var=NAME` task printed.
fn debugged(out: &Outcome, name: &str) -> Value {
    let marker = format!("    \"{name}\": ");
    let start = out
        .stdout
        .find(&marker)
        .unwrap_or_else(|| panic!("no debug of {name}\n{}", out.stdout));
    let text = &out.stdout[start + marker.len()..];
    let end = text.find("\n    }\n").expect("the end of the value") + "\n    }".len();
    serde_json::from_str(&text[..end]).expect("debug output is JSON")
}

fn job_id(value: &Value) -> String {
    value["ansible_job_id"]
        .as_str()
        .expect("a job id")
        .to_string()
}

#[test]
fn a_polled_job_reports_each_poll_and_the_modules_own_result() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: h
  gather_facts: false
  tasks:
    - name: polled
      command: sh -c 'sleep 3; echo out'
      async: 10
      poll: 1
      register: r
    - debug: var=r
",
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(out.recap("h"), recap(2, 1));
    let r = debugged(&out, "r");
    let jid = job_id(&r);
    assert!(
        jid.starts_with('j') && jid[1..].split('.').all(|p| p.parse::<u64>().is_ok()),
        "{jid}"
    );
    let polls = format!("ASYNC POLL on h: jid={jid} started=True finished=False");
    assert!(
        out.stdout.matches(&polls).count() >= 2,
        "{polls}\n{}",
        out.stdout
    );
    assert_contains(&out, &format!("ASYNC OK on h: jid={jid}\nchanged: [h]"));
    assert_eq!(r["stdout"], "out");
    assert_eq!(r["rc"], 0);
    assert_eq!(r["changed"], true);
    assert_eq!(r["finished"], true);
    assert_eq!(r["started"], true);
    let results_file = hosts.home().join(".ansible_async").join(&jid);
    assert_eq!(r["results_file"], results_file.to_str().unwrap());
    // Cleaned up once its result was in, as Ansible does.
    assert!(!results_file.exists());
}

#[test]
fn a_job_past_its_time_limit_fails_as_ansible_2_21_words_it_and_is_killed() {
    let hosts = LocalHosts::new(&["h"]);
    let marker = hosts.dir("h").join("late");
    let out = TestRun::new()
        .playbook(&format!(
            "- hosts: h
  gather_facts: false
  tasks:
    - name: too slow
      shell: sleep 4; touch {}
      async: 2
      poll: 1
      register: r
      ignore_errors: true
    - debug: var=r
",
            marker.display()
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(out.recap("h").ignored, 1);
    let r = debugged(&out, "r");
    let jid = job_id(&r["async_result"]);
    assert_contains(
        &out,
        &format!("ASYNC FAILED on h: jid={jid}\nfatal: [h]: FAILED!"),
    );
    assert_eq!(r["msg"], "async task produced unparsable results");
    assert_eq!(r["failed"], true);
    let status = &r["async_result"];
    assert_eq!(status["finished"], false);
    assert_eq!(status["started"], true);
    assert_eq!(status["warnings"], serde_json::json!([]));
    std::thread::sleep(Duration::from_secs(4));
    assert!(!marker.exists(), "the job was not killed at its limit");
}

#[test]
fn fire_and_forget_then_async_status_until_finished_then_cleanup() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: h
  gather_facts: false
  tasks:
    - command: sh -c 'sleep 2; echo later'
      async: 20
      poll: 0
      register: job
    - debug: var=job
    - async_status:
        jid: '{{ job.ansible_job_id }}'
      register: st
      until: st.finished
      retries: 10
      delay: 1
    - debug: var=st
    - async_status:
        jid: '{{ job.ansible_job_id }}'
        mode: cleanup
      register: cl
    - debug: var=cl
    - async_status:
        jid: '{{ job.ansible_job_id }}'
      register: gone
      ignore_errors: true
    - debug: var=gone
",
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    let job = debugged(&out, "job");
    let jid = job_id(&job);
    let results_file = hosts.home().join(".ansible_async").join(&jid);
    let file = results_file.to_str().unwrap();
    assert_eq!(
        job,
        serde_json::json!({
            "ansible_job_id": jid, "changed": true, "failed": false, "finished": false,
            "results_file": file, "started": true
        })
    );
    assert_contains(
        &out,
        "FAILED - RETRYING: [h]: async_status (9 retries left).",
    );
    let st = debugged(&out, "st");
    assert_eq!(st["finished"], true);
    assert_eq!(st["stdout"], "later");
    assert_eq!(st["changed"], true);
    assert_eq!(
        st["cmd"],
        serde_json::json!(["sh", "-c", "sleep 2; echo later"])
    );
    let cl = debugged(&out, "cl");
    assert_eq!(
        cl,
        serde_json::json!({
            "ansible_job_id": jid, "changed": false, "erased": file, "failed": false,
            "finished": false, "started": false, "stderr": "", "stderr_lines": [],
            "stdout": "", "stdout_lines": []
        })
    );
    assert!(!results_file.exists());
    let gone = debugged(&out, "gone");
    assert_eq!(gone["msg"], "could not find job");
    assert_eq!(gone["finished"], true);
    // Every task but the until (changed) and the retried cleanup ran once: 8 ok, the
    // command and the finished status changed, the missing job ignored.
    assert_eq!(out.recap("h").changed, 2);
    assert_eq!(out.recap("h").ignored, 1);
}

#[test]
fn actions_without_async_support_fail_with_ansibles_message() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: h
  gather_facts: false
  tasks:
    - copy: content=x dest=~/h/x
      async: 10
      poll: 1
      ignore_errors: true
    - debug: msg=hi
      async: 5
      ignore_errors: true
    - command: echo skipped
      async: 5
      poll: 0
      when: false
",
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_contains(
        &out,
        "fatal: [h]: FAILED! => {\"changed\": false, \"msg\": \"This action (copy) does not support async.\"}",
    );
    assert_contains(&out, "This action (debug) does not support async.");
    assert!(!hosts.dir("h").join("x").exists());
    assert_eq!(out.recap("h").ignored, 2);
    assert_eq!(out.recap("h").skipped, 1);
    assert_not_contains(&out, "[WARNING]");
}

#[test]
fn each_item_of_a_loop_is_its_own_job_and_a_rerun_changes_nothing() {
    let hosts = LocalHosts::new(&["h"]);
    let dir = hosts.dir("h");
    let playbook = format!(
        "- hosts: h
  gather_facts: false
  tasks:
    - command: touch {dir}/{{{{ item }}}}
      args:
        creates: {dir}/{{{{ item }}}}
      async: 10
      poll: 1
      loop: [a, b]
      register: r
    - debug: var=r
",
        dir = dir.display()
    );
    let run = TestRun::new().playbook(&playbook).local_hosts(&hosts);
    let first = run.run();
    first.assert_code(0);
    assert_eq!(first.recap("h"), recap(2, 1));
    let results = debugged(&first, "r");
    let ids: Vec<String> = results["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(job_id)
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    for id in &ids {
        assert_contains(&first, &format!("ASYNC OK on h: jid={id}"));
    }
    assert!(dir.join("a").exists() && dir.join("b").exists());
    let again = run.run();
    again.assert_code(0);
    assert_eq!(again.recap("h"), recap(2, 0));
}

#[test]
fn a_job_outlives_its_ssh_session_and_a_later_run_finds_it() {
    let hosts = SshHosts::start(&["web"]);
    let home = hosts.user("web").home.clone();
    let start = TestRun::new()
        .playbook(
            "- hosts: web
  gather_facts: false
  tasks:
    - shell: sleep 3; echo survived > ~/marker; echo done
      async: 60
      poll: 0
      register: job
    - copy:
        content: '{{ job.ansible_job_id }}'
        dest: ~/jid
",
        )
        .inventory(&hosts.inventory())
        .run();
    start.assert_code(0);
    assert_eq!(start.recap("web"), recap(2, 2));
    // The run (its agent and its connection) is over; the job is not.
    assert!(!home.join("marker").exists());
    let jid = std::fs::read_to_string(home.join("jid")).expect("the job id");
    let status = TestRun::new()
        .playbook(&format!(
            "- hosts: web
  gather_facts: false
  tasks:
    - async_status: jid={jid}
      register: st
      until: st is finished
      retries: 20
      delay: 1
    - debug: var=st
"
        ))
        .inventory(&hosts.inventory())
        .run();
    status.assert_code(0);
    let st = debugged(&status, "st");
    assert_eq!(st["finished"], true);
    assert_eq!(st["stdout"], "done");
    assert_eq!(st["rc"], 0);
    assert_eq!(
        std::fs::read_to_string(home.join("marker")).unwrap(),
        "survived\n"
    );
}

#[test]
fn a_polled_job_over_ssh_gives_the_synchronous_result() {
    let hosts = SshHosts::start(&["web"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: web
  gather_facts: false
  tasks:
    - command: echo over-ssh
      async: 10
      poll: 1
      register: r
    - debug: var=r
",
        )
        .inventory(&hosts.inventory())
        .run();
    out.assert_code(0);
    let r = debugged(&out, "r");
    assert_eq!(r["stdout"], "over-ssh");
    assert_eq!(r["finished"], true);
    assert_contains(&out, &format!("ASYNC OK on web: jid={}", job_id(&r)));
}

/// ansible-core's module_utils unpacked by tests/python_modules/fetch.sh, for a
/// `library/` module run through the target's Python.
fn python_side(test: &str) -> Option<std::path::PathBuf> {
    let core = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/python-modules/core");
    if !core.join("ansible/module_utils/basic.py").is_file()
        || !std::path::Path::new("/usr/bin/python3").is_file()
    {
        eprintln!("{test}: skipped: run `bash tests/python_modules/fetch.sh` first");
        return None;
    }
    Some(core)
}

const SLOW_MODULE: &str = "#!/usr/bin/python3
import time
from ansible.module_utils.basic import AnsibleModule

def main():
    module = AnsibleModule(argument_spec=dict(seconds=dict(type='int', default=1)))
    time.sleep(module.params['seconds'])
    module.exit_json(changed=False, slept=module.params['seconds'])

if __name__ == '__main__':
    main()
";

#[test]
fn a_python_module_runs_as_a_job_polled_and_fired_and_forgotten() {
    let test = "a_python_module_runs_as_a_job_polled_and_fired_and_forgotten";
    let Some(core) = python_side(test) else {
        return;
    };
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: h
  gather_facts: false
  tasks:
    - slow: seconds=2
      async: 10
      poll: 1
      register: polled
    - debug: var=polled
    - slow: seconds=1
      async: 10
      poll: 0
      register: job
    - async_status: jid={{ job.ansible_job_id }}
      register: st
      until: st is finished
      retries: 10
      delay: 1
    - debug: var=st
",
        )
        .file("library/slow.py", SLOW_MODULE)
        .local_hosts(&hosts)
        .env("PYTHONPATH", core.to_str().unwrap())
        .env("TURBO_ANSIBLE_PYTHON", "/usr/bin/python3")
        .args(&["-e", "ansible_python_interpreter=/usr/bin/python3"])
        .run();
    out.assert_code(0);
    let polled = debugged(&out, "polled");
    assert_eq!(polled["slept"], 2);
    assert_eq!(polled["changed"], false);
    assert_eq!(polled["finished"], true);
    assert_contains(
        &out,
        &format!("ASYNC OK on h: jid={}\nok: [h]", job_id(&polled)),
    );
    let st = debugged(&out, "st");
    assert_eq!(st["slept"], 1);
    assert_eq!(st["finished"], true);
    assert_ne!(job_id(&st), job_id(&polled));
}
