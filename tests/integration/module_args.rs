//! Module arguments as Ansible checks them: when the task runs (a skipped task never fails
//! on them), with Ansible's messages, failing only that task; and arguments the module
//! layer honours through the agent's primitives (copy's backup, stat's follow).

use crate::support::hosts::LocalHosts;
use crate::support::run::{PLAY_HEAD, TestRun, assert_contains, recap};

#[test]
fn wrong_arguments_fail_their_task_with_ansibles_messages() {
    let hosts = LocalHosts::new(&["h"]);
    let playbook = format!(
        "{PLAY_HEAD}  tasks:
    - name: unknown
      file: path=/tmp/x foo=1
      ignore_errors: true
    - name: missing
      file: state=directory
      ignore_errors: true
    - name: wrong type
      file: path=/tmp/x force=maybe
      ignore_errors: true
    - name: bad choice
      file: path=/tmp/x state=bogus
      ignore_errors: true
    - name: mutually exclusive
      command:
        cmd: ls
        argv: [ls]
      ignore_errors: true
    - name: one of
      shell:
        chdir: /
      ignore_errors: true
    - name: skipped, so its arguments do not matter
      copy: nonsense=1
      when: false
"
    );
    let out = TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    out.assert_code(0);
    for message in [
        "Unsupported parameters for (file) module: foo. Supported parameters include: _diff_peek, _original_basename, access_time, access_time_format, attributes, follow, force, group, mode, modification_time, modification_time_format, owner, path, recurse, selevel, serole, setype, seuser, src, state, unsafe_writes (attr, dest, name).",
        "missing required arguments: path",
        "argument 'force' is of type str and we were unable to convert to bool: The value 'maybe' is not a valid boolean.",
        "value of state must be one of: absent, directory, file, hard, link, touch, got: bogus",
        "parameters are mutually exclusive: _raw_params|cmd|argv",
        "one of the following is required: _raw_params, cmd, argv",
    ] {
        assert_contains(&out, message);
    }
    let r = out.recap("h");
    assert_eq!(
        (r.failed, r.ignored, r.skipped),
        (0, 6, 1),
        "{}",
        out.stdout
    );
}

#[test]
fn copy_backup_keeps_the_old_file_and_stat_follows_links() {
    let hosts = LocalHosts::new(&["h"]);
    let home = hosts.home().to_path_buf();
    std::fs::write(home.join("app.conf"), "old\n").unwrap();
    std::os::unix::fs::symlink(home.join("app.conf"), home.join("link.conf")).unwrap();
    let playbook = format!(
        "{PLAY_HEAD}  tasks:
    - copy:
        content: \"new\\n\"
        dest: ~/app.conf
        backup: true
      register: copied
    - stat:
        path: ~/link.conf
        follow: true
      register: followed
    - stat:
        path: ~/link.conf
      register: link
    - assert:
        that:
          - copied.changed
          - copied.backup_file is match('.*/app\\.conf\\.[0-9]+\\.[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}@[0-9:]{{8}}~$')
          - followed.stat.isreg and not followed.stat.islnk
          - link.stat.islnk
    - copy:
        content: \"new\\n\"
        dest: ~/app.conf
        backup: true
      register: again
    - assert:
        that:
          - not again.changed
          - again.backup_file is not defined
"
    );
    let out = TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    out.assert_code(0);
    assert_eq!(out.recap("h"), recap(6, 1), "{}", out.stdout);
    assert_eq!(
        std::fs::read_to_string(home.join("app.conf")).unwrap(),
        "new\n"
    );
    let backups: Vec<_> = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("app.conf."))
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(
        std::fs::read_to_string(home.join(&backups[0])).unwrap(),
        "old\n"
    );
}

#[test]
fn arguments_written_as_one_template_and_templated_keys() {
    let hosts = LocalHosts::new(&["h"]);
    let playbook = format!(
        "{PLAY_HEAD}  vars:
    host_data: {{name: extra1, groups: [new]}}
    debug_args: {{msg: from a template}}
  tasks:
    - set_fact: \"{{{{ item }}}}=moo\"
      loop: [a, b]
    - add_host: \"{{{{ host_data }}}}\"
    - debug:
      args: \"{{{{ debug_args }}}}\"
      register: d
    - name: raw params on a module that takes none
      file: /tmp/x
      ignore_errors: true
      register: raw
    - assert:
        that:
          - a == 'moo' and b == 'moo'
          - \"'extra1' in groups['new']\"
          - d.msg == 'from a template'
          - raw is failed
          - raw.msg == \"Task failed: Action 'ansible.builtin.file' does not support raw params.\"
"
    );
    let out = TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    out.assert_code(0);
    assert_contains(
        &out,
        "[WARNING]: Using a template for task args is unsafe in some situations",
    );
    let r = out.recap("h");
    assert_eq!((r.failed, r.ignored), (0, 1), "{}", out.stdout);
}
