//! Corners of the playbook language checked against ansible-playbook 2.21 on local
//! hosts: tags and conditions on role entries, the `diff` keyword, `serial` and the play's
//! host lists, the precedence of include_vars below set_fact, run_once notifications,
//! templated tags and regex look-around.

use std::path::Path;

use crate::support::hosts::LocalHosts;
use crate::support::run::{Outcome, PLAY_HEAD, TestRun, assert_contains, assert_not_contains};

fn exists(dir: &Path, file: &str) -> bool {
    dir.join(file).exists()
}

const TAGGED_ROLES: &str = "  vars:
    wanted: false
  roles:
    - {role: web, tags: [web]}
    - role: db
      tags: db
    - role: optional
      when: wanted
  tasks:
    - import_role:
        name: extra
      tags: extra
";

fn tagged_roles_run(hosts: &LocalHosts, args: &[&str]) -> Outcome {
    let role = |name: &str| {
        format!("- name: {name} file\n  copy: {{content: \"{name}\\n\", dest: ~/{name}}}\n")
    };
    TestRun::new()
        .playbook(&format!("{PLAY_HEAD}{TAGGED_ROLES}"))
        .local_hosts(hosts)
        .file("roles/common/tasks/main.yml", &role("common"))
        .file("roles/web/tasks/main.yml", &role("web"))
        .file("roles/web/meta/main.yml", "dependencies: [common]\n")
        .file("roles/db/tasks/main.yml", &role("db"))
        .file("roles/db/meta/main.yml", "dependencies: [common]\n")
        .file("roles/optional/tasks/main.yml", &role("optional"))
        .file("roles/extra/tasks/main.yml", &role("extra"))
        .args(args)
        .run()
}

/// ansible-playbook 2.21: every task of a role entry (and of its dependencies) takes the
/// entry's tags; `common`, a dependency of both `web` and `db`, runs once, under the first
/// of them the tags select; `when:` on an entry holds for all of the role's tasks.
#[test]
fn tags_and_when_on_role_entries_reach_every_task_of_the_role() {
    let hosts = LocalHosts::new(&["h"]);
    let out = tagged_roles_run(&hosts, &["--tags", "db"]);
    out.assert_code(0);
    assert_eq!(out.recap("h").changed, 2, "{}", out.stdout);
    assert!(exists(hosts.home(), "common") && exists(hosts.home(), "db"));
    assert!(!exists(hosts.home(), "web") && !exists(hosts.home(), "extra"));
    assert_eq!(out.stdout.matches("TASK [common : common file]").count(), 1);

    let again = tagged_roles_run(&hosts, &["--tags", "db"]);
    again.assert_code(0);
    assert_eq!(
        (again.recap("h").ok, again.recap("h").changed),
        (2, 0),
        "{}",
        again.stdout
    );

    let skip = tagged_roles_run(&hosts, &["--skip-tags", "db"]);
    skip.assert_code(0);
    assert!(exists(hosts.home(), "web") && exists(hosts.home(), "extra"));
    // `optional` is listed but its entry's condition is false: its task is skipped.
    assert!(!exists(hosts.home(), "optional"));
    let recap = skip.recap("h");
    assert_eq!(
        (recap.ok, recap.changed, recap.skipped),
        (3, 2, 1),
        "{}",
        skip.stdout
    );
    assert_not_contains(&skip, "TASK [db : db file]");

    let listed = tagged_roles_run(&hosts, &["--list-tags"]);
    listed.assert_code(0);
    assert_contains(&listed, "TASK TAGS: [db, extra, web]");
}

const DIFF_TASKS: &str = "  tasks:
    - name: shown
      copy: {content: \"{{ v }}\\n\", dest: ~/shown}
      diff: true
    - name: follows -D
      copy: {content: \"{{ v }}\\n\", dest: ~/follows}
    - block:
        - name: hidden
          copy: {content: \"{{ v }}\\n\", dest: ~/hidden}
      diff: false
";

fn diff_run(hosts: &LocalHosts, v: &str, args: &[&str]) -> Outcome {
    TestRun::new()
        .playbook(&format!("{PLAY_HEAD}{DIFF_TASKS}"))
        .local_hosts(hosts)
        .args(&["-e", &format!("v={v}")])
        .args(args)
        .run()
}

/// ansible-playbook 2.21: `diff: true` shows a task's diff without `-D`, `diff: false`
/// (here from its block) hides it under `-D`.
#[test]
fn the_diff_keyword_shows_or_hides_a_tasks_diff_whatever_the_flag() {
    let hosts = LocalHosts::new(&["h"]);
    let out = diff_run(&hosts, "one", &[]);
    out.assert_code(0);
    assert_eq!(out.recap("h").changed, 3, "{}", out.stdout);
    assert_contains(&out, "+one");
    assert_eq!(out.stdout.matches("+++ after").count(), 1, "{}", out.stdout);
    assert_contains(&out, "/shown\n");
    assert_not_contains(&out, "/follows\n");

    let flagged = diff_run(&hosts, "two", &["-D"]);
    flagged.assert_code(0);
    assert_eq!(
        flagged.stdout.matches("-one\n+two").count(),
        2,
        "{}",
        flagged.stdout
    );
    assert_contains(&flagged, "/follows\n");
    assert_not_contains(&flagged, "/hidden\n");

    let again = diff_run(&hosts, "two", &["-D"]);
    again.assert_code(0);
    assert_eq!(again.recap("h").changed, 0, "{}", again.stdout);
    assert_not_contains(&again, "+++ after");
}

#[track_caller]
fn read(dir: &Path, file: &str) -> String {
    let path = dir.join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// ansible-playbook 2.21, `serial: 2` over a..d with b failing in the first batch:
/// `ansible_play_hosts` lists the play's hosts still in it across all batches,
/// `ansible_play_batch`/`play_hosts` those of the running batch; a later play cuts its
/// batches with the failed host still counted (`[a, b, c]` then `[d]` for `serial: 3`).
#[test]
fn serial_batches_see_the_plays_hosts_and_their_own_batch() {
    let hosts = LocalHosts::new(&["a", "b", "c", "d"]);
    let playbook = format!(
        "{PLAY_HEAD}  serial: 2
  tasks:
    - fail: msg=boom
      when: inventory_hostname == 'b'
    - copy:
        dest: ~/{{{{ inventory_hostname }}}}/lists
        content: \"{{{{ ansible_play_hosts | join(',') }}}} {{{{ ansible_play_batch | join(',') }}}} {{{{ play_hosts | join(',') }}}} {{{{ ansible_play_hosts_all | join(',') }}}}\\n\"
{PLAY_HEAD}  serial: 3
  tasks:
    - copy:
        dest: ~/{{{{ inventory_hostname }}}}/second
        content: \"{{{{ ansible_play_batch | join(',') }}}}\\n\"
"
    );
    let run = || TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    let out = run();
    out.assert_code(2);
    assert_eq!(read(&hosts.dir("a"), "lists"), "a,c,d a a a,b,c,d\n");
    assert_eq!(read(&hosts.dir("c"), "lists"), "a,c,d c,d c,d a,b,c,d\n");
    assert!(!exists(&hosts.dir("b"), "lists"));
    assert_eq!(read(&hosts.dir("a"), "second"), "a,c\n");
    assert_eq!(read(&hosts.dir("d"), "second"), "d\n");
    let again = run();
    again.assert_code(2);
    assert_eq!(again.recap("a").changed, 0, "{}", again.stdout);
}

/// ansible-playbook 2.21: a batch whose every host failed stops the whole run (later
/// plays too); `meta: end_play` under `serial` ends every batch, `end_batch` only its own.
#[test]
fn a_failed_batch_stops_the_run_and_end_play_ends_every_batch() {
    let hosts = LocalHosts::new(&["a", "b", "c"]);
    let playbook = format!(
        "{PLAY_HEAD}  serial: 1
  tasks:
    - meta: end_batch
      when: inventory_hostname == 'a'
    - copy: {{content: \"x\\n\", dest: \"~/{{{{ inventory_hostname }}}}/first\"}}
    - meta: end_play
      when: inventory_hostname == 'b'
    - copy: {{content: \"x\\n\", dest: \"~/{{{{ inventory_hostname }}}}/never\"}}
- hosts: c
  gather_facts: false
  tasks:
    - command: /bin/false
- hosts: a
  gather_facts: false
  tasks:
    - copy: {{content: \"x\\n\", dest: \"~/{{{{ inventory_hostname }}}}/after\"}}
"
    );
    let out = TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    out.assert_code(2);
    assert!(!exists(&hosts.dir("a"), "first"));
    assert!(exists(&hosts.dir("b"), "first"));
    assert!(!exists(&hosts.dir("c"), "first"));
    assert!(!exists(&hosts.dir("b"), "never"));
    assert!(!exists(&hosts.dir("a"), "after"), "{}", out.stdout);
    assert_eq!(out.recap("c").failed, 1, "{}", out.stdout);
}

/// ansible-playbook 2.21: include_vars sits above task vars and below set_fact, in
/// whichever order they ran; `register` and `set_fact` share a layer, the later wins;
/// `hostvars` and a later play see the same.
#[test]
fn include_vars_sits_below_set_fact_and_above_task_vars() {
    let hosts = LocalHosts::new(&["h"]);
    let playbook = format!(
        "{PLAY_HEAD}  tasks:
    - set_fact: {{a: fact}}
    - include_vars: file.yml
    - command: echo registered
      register: r
      changed_when: false
    - set_fact: {{r: fact}}
    - copy:
        dest: ~/precedence
        content: \"{{{{ a }}}} {{{{ b }}}} {{{{ r }}}} {{{{ hostvars['h'].a }}}}\\n\"
      vars:
        b: task
{PLAY_HEAD}  tasks:
    - copy:
        dest: ~/later
        content: \"{{{{ a }}}} {{{{ b }}}}\\n\"
"
    );
    let run = || {
        TestRun::new()
            .playbook(&playbook)
            .local_hosts(&hosts)
            .file("file.yml", "a: file\nb: file\nr: file\n")
            .run()
    };
    let out = run();
    out.assert_code(0);
    assert_eq!(read(hosts.home(), "precedence"), "fact file fact fact\n");
    assert_eq!(read(hosts.home(), "later"), "fact file\n");
    let again = run();
    again.assert_code(0);
    assert_eq!(again.recap("h").changed, 0, "{}", again.stdout);
}

/// ansible-playbook 2.21 notifies a handler from a run_once task on the host that ran it
/// only (its strategy notifies `original_host`), though the result reaches every host.
#[test]
fn a_run_once_notification_runs_the_handler_on_the_host_that_ran() {
    let hosts = LocalHosts::new(&["a", "b"]);
    let playbook = format!(
        "{PLAY_HEAD}  tasks:
    - copy: {{content: \"once\\n\", dest: \"~/{{{{ inventory_hostname }}}}/once\"}}
      run_once: true
      register: once
      notify: mark
    - copy: {{content: \"{{{{ once.changed }}}}\\n\", dest: \"~/{{{{ inventory_hostname }}}}/seen\"}}
  handlers:
    - name: mark
      copy: {{content: \"handled\\n\", dest: \"~/{{{{ inventory_hostname }}}}/handled\"}}
"
    );
    let out = TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    out.assert_code(0);
    assert!(exists(&hosts.dir("a"), "handled"));
    assert!(!exists(&hosts.dir("b"), "handled"), "{}", out.stdout);
    // `content: "{{ once.changed }}\n"` is the boolean alone (Jinja drops the final
    // newline): ansible-playbook 2.21.5 writes `True`, no newline (checked).
    assert_eq!(read(&hosts.dir("b"), "seen"), "True");
    assert!(exists(&hosts.dir("a"), "once") && !exists(&hosts.dir("b"), "once"));
}

/// ansible-core 2.21.5 (strategy_linear): a templated `run_once` is accepted at load and
/// decided when the task runs, with the first host's variables for every host (checked:
/// `run_once: "{{ inventory_hostname == 'b' }}"` on a, b, c runs on all three).
#[test]
fn a_templated_run_once_is_decided_when_the_task_runs() {
    let hosts = LocalHosts::new(&["a", "b", "c"]);
    let playbook = format!(
        "{PLAY_HEAD}  vars:
    flag: false
  tasks:
    - copy: {{content: \"all\\n\", dest: \"~/{{{{ inventory_hostname }}}}/all\"}}
      run_once: \"{{{{ inventory_hostname == 'b' }}}}\"
    - copy: {{content: \"once\\n\", dest: \"~/{{{{ inventory_hostname }}}}/once\"}}
      run_once: \"{{{{ not flag }}}}\"
      register: once
    - copy: {{content: \"{{{{ once.changed }}}}\\n\", dest: \"~/{{{{ inventory_hostname }}}}/seen\"}}
"
    );
    let out = TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    out.assert_code(0);
    for h in ["a", "b", "c"] {
        assert!(exists(&hosts.dir(h), "all"), "{h}: {}", out.stdout);
        assert_eq!(read(&hosts.dir(h), "seen"), "True");
    }
    assert!(exists(&hosts.dir("a"), "once"));
    assert!(!exists(&hosts.dir("b"), "once") && !exists(&hosts.dir("c"), "once"));
}

/// ansible-playbook 2.21 warns that any_errors_fatal does nothing under `strategy: free`
/// and runs on: the other hosts finish the play and the next play runs.
#[test]
fn any_errors_fatal_under_the_free_strategy_warns_and_runs_on() {
    let hosts = LocalHosts::new(&["a", "b"]);
    let playbook = format!(
        "{PLAY_HEAD}  strategy: free
  any_errors_fatal: true
  tasks:
    - fail: msg=boom
      when: inventory_hostname == 'a'
    - copy: {{content: \"x\\n\", dest: \"~/{{{{ inventory_hostname }}}}/after\"}}
- hosts: b
  gather_facts: false
  tasks:
    - copy: {{content: \"x\\n\", dest: \"~/{{{{ inventory_hostname }}}}/next\"}}
"
    );
    let out = TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    out.assert_code(2);
    assert_contains(
        &out,
        "[WARNING]: Using any_errors_fatal with the free strategy is not supported",
    );
    assert!(exists(&hosts.dir("b"), "after") && exists(&hosts.dir("b"), "next"));
    assert!(!exists(&hosts.dir("a"), "after"));
}

/// ansible-playbook 2.21 renders templated tags with play and extra vars before it
/// selects tasks (host vars are not seen: `hv` stays undefined here and the default
/// holds); an undefined name stops the run with exit code 1.
#[test]
fn templated_tags_select_with_play_and_extra_vars() {
    let hosts = LocalHosts::new(&["h"]);
    let inventory = format!("{} hv=from_host\n", hosts.line("h"));
    let playbook = format!(
        "{PLAY_HEAD}  vars:
    role_tag: web
  tasks:
    - copy: {{content: \"x\\n\", dest: ~/web}}
      tags: \"{{{{ role_tag }}}}\"
    - copy: {{content: \"x\\n\", dest: ~/extra}}
      tags: [\"{{{{ wanted }}}}\"]
    - copy: {{content: \"x\\n\", dest: ~/host}}
      tags: \"{{{{ hv | default('no_host_vars') }}}}\"
"
    );
    let run = |args: &[&str]| {
        TestRun::new()
            .playbook(&playbook)
            .inventory(&inventory)
            .local_home(&hosts)
            .args(args)
            .run()
    };
    let out = run(&["--tags", "web,picked,no_host_vars", "-e", "wanted=picked"]);
    out.assert_code(0);
    assert!(exists(hosts.home(), "web") && exists(hosts.home(), "extra"));
    assert!(exists(hosts.home(), "host"));
    let again = run(&["--tags", "web", "-e", "wanted=picked"]);
    again.assert_code(0);
    assert_eq!(
        (again.recap("h").ok, again.recap("h").changed),
        (1, 0),
        "{}",
        again.stdout
    );
    let undefined = run(&["--tags", "web"]);
    undefined.assert_code(1);
    assert_contains(&undefined, "'wanted' is undefined");
}

/// Python's look-around and back-references in Ansible's regex filters and tests (what
/// ansible-playbook 2.21 rendered): the `regex` crate refuses these patterns, the
/// backtracking fallback runs them; backslashes in a YAML value's Jinja strings stay as
/// YAML left them.
#[test]
fn regex_look_around_works_in_filters_and_tests() {
    let hosts = LocalHosts::new(&["h"]);
    let playbook = format!(
        "{PLAY_HEAD}  vars:
    line: \"port=8080 user=web\"
  tasks:
    - copy:
        dest: ~/regex
        content: |
          {{{{ line | regex_replace('(?<=port=)\\d+', '9090') }}}}
          {{{{ line | regex_findall('\\w+(?==)') | join(',') }}}}
          {{{{ line is search('user=(?!root)') }}}}
    - copy:
        dest: ~/backref
        content: \"{{{{ line | regex_replace('(\\\\w+)=(\\\\w+)', '\\\\2:\\\\1') }}}} {{{{ 'abab' is match('(ab)\\\\1') }}}}\\n\"
"
    );
    let run = || TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    let out = run();
    out.assert_code(0);
    assert_eq!(
        read(hosts.home(), "regex"),
        "port=9090 user=web\nport,user\nTrue\n"
    );
    // A double-quoted YAML string's `\\1` reaches the filter as `\1`, a back-reference.
    assert_eq!(read(hosts.home(), "backref"), "8080:port web:user True\n");
    assert_eq!(run().recap("h").changed, 0);
}

#[test]
fn environment_as_a_list_of_mappings_with_omitted_entries() {
    let hosts = LocalHosts::new(&["h"]);
    let playbook = format!(
        "{PLAY_HEAD}  tasks:
    - shell: echo \"$IAMHERE $ANOTHER ${{NOTHERE:-unset}}\"
      environment:
        - NOTHERE: '{{{{ omit }}}}'
          IAMHERE: hello
        - '{{{{ omit }}}}'
        - ANOTHER: stillhere
      register: out
    - assert:
        that: out.stdout == 'hello stillhere unset'
"
    );
    let run = TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    run.assert_code(0);
}

#[test]
fn a_templated_throttle_is_decided_when_the_task_runs() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let playbook = format!(
        "{PLAY_HEAD}  vars:
    limit: 1
  tasks:
    - debug: msg=one-at-a-time
      throttle: \"{{{{ limit }}}}\"
    - debug: msg=never
      throttle: \"{{{{ 'nope' }}}}\"
      ignore_errors: true
"
    );
    let out = TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    out.assert_code(0);
    assert_contains(
        &out,
        "Failed to convert the throttle value to an integer: invalid literal for int() with base 10: 'nope'",
    );
    assert_eq!(out.recap("h1").ignored, 1, "{}", out.stdout);
}

/// ansible-playbook 2.21 (its `omit` target): a keyword whose template renders to `omit`
/// is as if the task had not set it: the value of the block or play around it holds.
#[test]
fn a_keyword_set_to_omit_keeps_the_value_around_it() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: all
  gather_facts: false
  become: true
  become_user: nobody
  tasks:
    - command: id -un
      become: '{{ omit }}'
      register: omitted
    - command: id -un
      become: false
      register: plain
    - block:
        - copy: {content: x, dest: ~/omitted}
          check_mode: '{{ omit }}'
      check_mode: true
      become: false
    - block:
        - command: 'false'
          ignore_errors: '{{ omit }}'
      ignore_errors: true
      become: false
    - debug:
        msg: '{{ omitted.stdout }}/{{ plain.stdout }}'
",
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_contains(&out, "\"msg\": \"nobody/root\"");
    assert!(!exists(hosts.home(), "omitted"), "{}", out.stdout);
    assert_contains(&out, "...ignoring");
    let recap = out.recap("h");
    assert_eq!(
        (recap.ok, recap.changed, recap.ignored),
        (5, 4, 1),
        "{}",
        out.stdout
    );
}

/// ansible-playbook 2.21 on the same playbook: a templated play name is rendered with the
/// play's variables and extra vars; `validate_argspec: true` checks them against the spec
/// of that name in `<playbook>.meta.yml`, as a task of its own after fact gathering.
#[test]
fn validate_argspec_checks_the_plays_variables_against_its_meta_file() {
    let run = |args: &[&str]| {
        TestRun::new()
            .playbook(
                "- name: \"{{ play_name | default('Web servers') }}\"
  hosts: all
  gather_facts: false
  validate_argspec: true
  tasks:
    - debug: msg=\"port {{ port }}\"
",
            )
            .file(
                "site.meta.yml",
                "argument_specs:\n  Web servers:\n    options:\n      port: {type: int, required: true}\n      mode: {type: str, choices: [a, b]}\n",
            )
            .local_hosts(&LocalHosts::new(&["h"]))
            .args(args)
            .run()
    };
    let ok = run(&["-e", "port=80"]);
    ok.assert_code(0);
    assert_contains(&ok, "PLAY [Web servers] ***");
    assert_contains(
        &ok,
        "TASK [Validating arguments against arg spec Web servers] ***",
    );
    assert_contains(&ok, "\"msg\": \"port 80\"");

    let bad = run(&["-e", "mode=c"]);
    bad.assert_code(2);
    assert_contains(
        &bad,
        r#""msg": "Validation of arguments failed:\nmissing required arguments: port\nvalue of mode must be one of: a, b, got: c""#,
    );
    assert_not_contains(&bad, "TASK [debug]");
    assert_not_contains(&bad, "NO MORE HOSTS LEFT");

    let unknown = run(&["-e", "play_name=Other"]);
    unknown.assert_code(4);
    assert!(
        unknown.stderr.contains(
            "Error processing keyword 'validate_argspec': No argument spec named 'Other' in "
        ) && unknown.stderr.contains(
            "site.meta.yml. Minimally expected:\nargument_specs:\n  Other:\n    options: {}"
        ),
        "{}",
        unknown.stderr
    );
}

/// ansible-playbook 2.21: a module name that is a template is rendered per host when the
/// task runs (`debug` on one host, `ping` on the other), k=v arguments after it included;
/// the banner shows the action as written; a name that resolves to no module fails the
/// task with Ansible's message.
#[test]
fn a_templated_action_name_is_resolved_per_host_when_the_task_runs() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: all
  gather_facts: no
  vars:
    prefix: ansible.builtin.
  tasks:
    - set_fact:
        m: \"{{ 'debug' if inventory_hostname == 'h1' else 'ping' }}\"
    - action:
        module: \"{{ m }}\"
      register: out
    - action: \"{{ prefix }}file path=~/made-{{ inventory_hostname }} state=touch\"
    - action: \"{{ 'nope' }} a=1\"
      ignore_errors: true
      register: bad
    - debug:
        msg: \"{{ out.ping | default('no ping') }} {{ bad.msg }}\"
",
        )
        .local_hosts(&hosts)
        .args(&["--forks", "1"])
        .run();
    out.assert_code(0);
    assert_contains(&out, "TASK [{{ m }}] ***");
    assert_contains(
        &out,
        "ok: [h1] => {\n    \"msg\": \"Hello world!\"\n}\nok: [h2]\n",
    );
    assert_contains(&out, "TASK [{{ prefix }}file] ***");
    assert!(exists(hosts.home(), "made-h1") && exists(hosts.home(), "made-h2"));
    assert_contains(
        &out,
        "fatal: [h1]: FAILED! => {\"changed\": false, \"msg\": \"Task failed: Cannot resolve 'nope' to an action or module.\"}\n...ignoring",
    );
    assert_contains(
        &out,
        "\"msg\": \"pong Task failed: Cannot resolve 'nope' to an action or module.\"",
    );
    assert_eq!(out.recap("h1").ok, 5, "{}", out.stdout);
    assert_eq!(out.recap("h2").ignored, 1, "{}", out.stdout);
}

/// ansible-playbook 2.21.5 on the same template: a dict and a list a template sets
/// change in place (`update`, `append`), as Python's do, and `hostvars[host]` holds the
/// host's variables but not `omit`.
#[test]
fn a_template_builds_a_dict_and_a_list_in_place_from_hostvars() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - copy:
        dest: ~/collected
        content: |
          {{% set found = {{}} %}}
          {{% set names = [] %}}
          {{% for key, value in hostvars[inventory_hostname].items() %}}
          {{% if key is search('^from_') or key == 'omit' %}}
          {{% set _ = found.update({{key: value}}) %}}
          {{% set _ = names.append(key) %}}
          {{% endif %}}
          {{% endfor %}}
          {{{{ found }}}} {{{{ names | sort }}}}
"
        ))
        .local_hosts(&hosts)
        .args(&["-e", "from_cli=3", "-e", "{\"from_json\": [1]}"])
        .run();
    out.assert_code(0);
    assert_eq!(
        std::fs::read_to_string(hosts.home().join("collected")).unwrap(),
        "{'from_cli': '3', 'from_json': [1]} ['from_cli', 'from_json']\n"
    );
}

/// ansible-playbook 2.21 templates a dict or list variable lazily: one whose leaf names an
/// undefined variable stays a dict or list, that leaf alone undefined (`default` takes it,
/// `is defined` is false), its other values usable, in a loop item too; a template that
/// needs the leaf (or dumps the whole) fails with the leaf's error.
#[test]
fn a_dict_variable_with_an_undefined_leaf_stays_a_dict() {
    let hosts = LocalHosts::new(&["h"]);
    let playbook = format!(
        "{PLAY_HEAD}  vars:
    a_dict:
      a_key: \"{{{{ not_defined }}}}\"
      b_key: 5
    a_list: [1, \"{{{{ not_defined }}}}\", 3]
    per_item: {{k: \"{{{{ item }}}}\", other: \"{{{{ nope }}}}\"}}
    reads_leaf: \"{{{{ a_dict.a_key }}}}\"
  tasks:
    - copy:
        dest: ~/seen
        content: |
          {{{{ [a_dict.a_key, 42][1] }}}} {{{{ a_dict.keys() | list }}}} {{{{ a_dict.b_key }}}}
          {{{{ a_dict.a_key is defined }}}} {{{{ a_dict.a_key | default(1) }}}} {{{{ a_dict is defined }}}}
          {{{{ a_list | length }}}} {{{{ a_list[2] }}}} {{{{ a_list[1] is undefined }}}}
          {{{{ reads_leaf | default('rd') }}}}
    - copy: {{content: \"{{{{ per_item.k }}}}\\n\", dest: \"~/item_{{{{ item }}}}\"}}
      loop: [x, y]
    - debug: msg=\"{{{{ a_dict | to_json }}}}\"
      ignore_errors: true
    - debug: msg=\"{{{{ a_dict.missing }}}}\"
      ignore_errors: true
    - debug: msg=\"{{{{ a_list }}}}\"
"
    );
    let out = TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    out.assert_code(2);
    let seen = std::fs::read_to_string(hosts.home().join("seen")).expect("seen");
    assert_eq!(
        seen,
        "42 ['a_key', 'b_key'] 5\nFalse 1 True\n3 3 True\nrd\n"
    );
    for item in ["x", "y"] {
        let file = hosts.home().join(format!("item_{item}"));
        assert_eq!(
            std::fs::read_to_string(file).expect("item file"),
            format!("{item}\n")
        );
    }
    assert_eq!(out.recap("h").ignored, 2, "{}", out.stdout);
    // `to_json` and the last task fail with the leaf's error (`fatal:` and its message).
    let failures = out
        .stdout
        .lines()
        .filter(|l| {
            l.starts_with("    \"msg\"") && l.ends_with("'msg': 'not_defined' is undefined\"")
        })
        .count();
    assert_eq!(failures, 2, "{}", out.stdout);
    assert_contains(&out, "object of type 'dict' has no attribute 'missing'");
}
