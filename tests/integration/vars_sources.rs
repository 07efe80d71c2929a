//! Where variables and settings come from, end to end on local hosts: group_vars/ and
//! host_vars/ beside the inventory and beside the playbook, play vars and vars_files,
//! task vars, include_vars, set_fact, extra vars (one precedence table, written to the
//! target with `copy`), and ansible.cfg in the current directory; connection variables
//! from vars files over a real sshd.

use std::time::{Duration, Instant};

use crate::support::hosts::{LocalHosts, SshHosts};
use crate::support::run::{TestRun, assert_contains, assert_not_contains};

/// The layers of the table, lowest precedence first, as Ansible orders them; and whether
/// each reaches `db1` (which is only in group `db`, with no host files).
const LAYERS: &[(&str, bool)] = &[
    ("inv_all", true),      // 1  [all:vars] in the inventory file
    ("inv_app", false),     // 2  [app:vars] (parent group)
    ("inv_web", false),     // 3  [web:vars] (child group)
    ("inv_gv_all", true),   // 4  inv/group_vars/all.yml
    ("pb_gv_all", true),    // 5  group_vars/all/10.yml (a directory)
    ("inv_gv_app", false),  // 6  inv/group_vars/app.yaml
    ("inv_gv_web", false),  // 7  inv/group_vars/web.json
    ("pb_gv_app", false),   // 8  group_vars/app (no extension)
    ("pb_gv_web", false),   // 9  group_vars/web.yml
    ("inv_host", false),    // 10 host vars in the inventory file
    ("inv_hv", false),      // 11 inv/host_vars/web1.yml
    ("pb_hv", false),       // 12 host_vars/web1/main.yml (a directory)
    ("play_vars", true),    // 13 play vars
    ("vars_files", true),   // 14 play vars_files
    ("task_vars", true),    // 15 task vars
    ("include_vars", true), // 16 include_vars
    ("set_fact", true),     // 17 set_fact
    ("extra", true),        // 18 -e
];

/// Layer `i` (1-based) sets `l<k>` for every k >= i, so `l<k>`'s value names the highest
/// layer that sets it: layer k itself when the order is right.
fn names(i: usize) -> impl Iterator<Item = (String, &'static str)> {
    (i..=LAYERS.len()).map(move |k| (format!("l{k}"), LAYERS[i - 1].0))
}

fn yaml(i: usize) -> String {
    names(i).map(|(k, v)| format!("{k}: {v}\n")).collect()
}

fn indented_yaml(i: usize, indent: &str) -> String {
    names(i)
        .map(|(k, v)| format!("{indent}{k}: {v}\n"))
        .collect()
}

fn json(i: usize) -> String {
    let pairs: Vec<String> = names(i).map(|(k, v)| format!("\"{k}\": \"{v}\"")).collect();
    format!("{{{}}}", pairs.join(", "))
}

fn ini(i: usize) -> String {
    names(i).map(|(k, v)| format!("{k}={v}\n")).collect()
}

fn ini_inline(i: usize) -> String {
    names(i)
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What `l1..l18` hold on a host that the given layers reach.
fn expected(reaches: impl Fn(usize) -> bool) -> String {
    let values: Vec<&str> = (1..=LAYERS.len())
        .map(|k| {
            let winner = (1..=k)
                .rev()
                .find(|&i| reaches(i))
                .expect("layer 1 reaches");
            LAYERS[winner - 1].0
        })
        .collect();
    format!("{}\n", values.join(","))
}

#[test]
fn precedence_table_over_every_variable_source() {
    let hosts = LocalHosts::new(&["web1", "db1"]);
    let inventory = format!(
        "[web]\n{} {}\n[db]\n{}\n[app:children]\nweb\n\
         [all:vars]\nansible_python_interpreter=/usr/bin/python3\n{}[app:vars]\n{}[web:vars]\n{}",
        hosts.line("web1"),
        ini_inline(10),
        hosts.line("db1"),
        ini(1),
        ini(2),
        ini(3),
    );
    let table: Vec<String> = (1..=LAYERS.len())
        .map(|k| format!("{{{{ l{k} }}}}"))
        .collect();
    let playbook = format!(
        "- hosts: all
  gather_facts: false
  vars:
    second_name: second
{play_vars}  vars_files:
    - common.yml
    - ['missing_{{{{ inventory_hostname }}}}.yml', '{{{{ second_name }}}}.yml']
  tasks:
    - include_vars: incl.yml
    - include_vars:
        file: named.json
        name: bundle
    - set_fact:
{set_fact}    - set_fact: from_fact=\"{{{{ l9 }}}}-then\" 
    - name: write the table
      copy:
        content: \"{table}\\n\"
        dest: ~/{{{{ inventory_hostname }}}}/table
      vars:
{task_vars}    - copy:
        content: \"{{{{ bundle.x }}}} {{{{ from_fact }}}} {{{{ second }}}} {{{{ ansible_python_interpreter }}}}\\n\"
        dest: ~/{{{{ inventory_hostname }}}}/extra
",
        play_vars = indented_yaml(13, "    "),
        set_fact = indented_yaml(17, "        "),
        task_vars = indented_yaml(15, "        "),
        table = table.join(","),
    );
    let out = TestRun::new()
        .playbook(&playbook)
        .file("inv/hosts", &inventory)
        .file("inv/group_vars/all.yml", &yaml(4))
        .file("group_vars/all/10.yml", &yaml(5))
        .file("inv/group_vars/app.yaml", &yaml(6))
        .file("inv/group_vars/web.json", &json(7))
        .file("group_vars/app", &yaml(8))
        .file("group_vars/web.yml", &yaml(9))
        .file("inv/host_vars/web1.yml", &yaml(11))
        .file("host_vars/web1/main.yml", &yaml(12))
        .file("vars/common.yml", &yaml(14))
        .file("vars/second.yml", "second: from_second_vars_file\n")
        .file("vars/incl.yml", &yaml(16))
        .file("named.json", r#"{"x": "in_bundle"}"#)
        .file("extra.yml", &yaml(18))
        .args(&["-i", "inv/hosts", "-e", "@extra.yml"])
        .local_home(&hosts)
        .run();
    out.assert_code(0);
    let (web1, db1) = (hosts.dir("web1"), hosts.dir("db1"));
    let read = |home: &std::path::Path, name: &str| {
        std::fs::read_to_string(home.join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}\n{}", out.stdout))
    };
    assert_eq!(read(&web1, "table"), expected(|_| true));
    assert_eq!(read(&db1, "table"), expected(|i| LAYERS[i - 1].1));
    assert_eq!(
        read(&web1, "extra"),
        "in_bundle pb_gv_web-then from_second_vars_file /usr/bin/python3\n"
    );
    assert_eq!(
        read(&db1, "extra"),
        "in_bundle pb_gv_all-then from_second_vars_file /usr/bin/python3\n"
    );
}

#[test]
fn ansible_cfg_in_the_cwd_sets_inventory_and_forks() {
    let hosts = LocalHosts::new(&["a", "b"]);
    let playbook = "- hosts: all
  gather_facts: false
  tasks:
    - command: sleep 1
";
    let run = TestRun::new()
        .playbook(playbook)
        .file("inventories/hosts", &hosts.inventory())
        .local_home(&hosts)
        .file(
            "ansible.cfg",
            "[defaults]\ninventory = inventories/hosts ; no -i needed\nforks = 1\n",
        );
    let started = Instant::now();
    let out = run.run();
    out.assert_code(0);
    // One host at a time: two one-second sleeps cannot overlap.
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "forks = 1 from ansible.cfg was not applied: {:?}",
        started.elapsed()
    );
    for name in ["a", "b"] {
        assert_eq!(out.recap(name).changed, 1, "{}", out.stdout);
    }
}

#[test]
fn bad_settings_and_files_are_reported_with_where_they_are() {
    let hosts = LocalHosts::new(&["a"]);
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n    - ping:\n";
    // A bad ansible.cfg value fails before anything runs, naming file and line...
    let bad_cfg = || {
        TestRun::new()
            .playbook(playbook)
            .local_hosts(&hosts)
            .file("ansible.cfg", "[defaults]\n\nforks = many\n")
    };
    let out = bad_cfg().run();
    out.assert_code(5);
    assert_contains(&out, "ansible.cfg:3: forks = 'many' is not an integer");
    // ...unless the environment, which wins over the file, sets it.
    bad_cfg().env("ANSIBLE_FORKS", "2").run().assert_code(0);

    // A broken group_vars file: file:line:col, before connecting.
    let out = TestRun::new()
        .playbook(playbook)
        .local_hosts(&hosts)
        .file("group_vars/all.yml", "ok: 1\nbroken: [\n")
        .run();
    out.assert_code(4);
    assert_contains(&out, "group_vars/all.yml:");

    // A missing vars_files entry fails the host with the file's name.
    let out = TestRun::new()
        .playbook(
            "- hosts: all\n  gather_facts: false\n  vars_files: [nope.yml]\n  tasks:\n    - ping:\n",
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(2);
    assert_contains(&out, "vars file nope.yml was not found");
}

/// ansible-core 2.21.5 (vars_files): an entry's template reads play vars that hold
/// templates of their own, resolved per host (`_files: ['vars/{{ foo }}.yml', ...]`).
#[test]
fn a_vars_files_entry_reads_templated_play_vars_per_host() {
    let hosts = LocalHosts::new(&["a", "b"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: all
  gather_facts: false
  vars:
    _files: ['vars/{{ foo }}.yml', 'vars/defaults.yml']
  vars_files:
    - \"{{ lookup('first_found', _files) }}\"
  tasks:
    - copy:
        dest: ~/is_bar_{{ inventory_hostname }}
        content: '{{ is_bar }}'
",
        )
        .inventory(&format!(
            "{} foo=bar\n{} foo=baz\n",
            hosts.line("a"),
            hosts.line("b")
        ))
        .local_home(&hosts)
        .file("vars/bar.yml", "is_bar: yes\n")
        .file("vars/defaults.yml", "is_bar: no\n")
        .run();
    out.assert_code(0);
    let read = |h: &str| std::fs::read_to_string(hosts.home().join(format!("is_bar_{h}"))).unwrap();
    assert_eq!((read("a"), read("b")), ("True".into(), "False".into()));
}

#[test]
fn connection_variables_from_group_vars_and_host_vars_files() {
    let hosts = SshHosts::start(&["w1"]);
    let user = hosts.user("w1");
    // The inventory names the host only; how to reach it lives in the vars directories,
    // the user in group_vars (a wrong one in `all`, overridden by the group), the rest in
    // host_vars.
    let group_vars = format!("ansible_user: {}\n", user.name);
    let host_vars = format!(
        "ansible_host: 127.0.0.1\nansible_port: {}\nansible_ssh_private_key_file: {}\n\
         ansible_ssh_common_args: '-o UserKnownHostsFile={}'\n",
        hosts.sshd.port,
        hosts.sshd.user_key.display(),
        hosts.known_hosts.display()
    );
    let out = TestRun::new()
        .playbook(
            "- hosts: web\n  gather_facts: false\n  tasks:\n    - copy: content=reached dest=~/reached\n",
        )
        .inventory("[web]\nw1\n")
        .file("group_vars/all.yml", "ansible_user: nobody-at-all\n")
        .file("group_vars/web.yml", &group_vars)
        .file("host_vars/w1.yml", &host_vars)
        .run();
    out.assert_code(0);
    assert_eq!(
        std::fs::read_to_string(user.home.join("reached")).unwrap(),
        "reached"
    );
}

#[test]
fn variables_that_reference_variables_are_templated_lazily() {
    let home = tempfile::tempdir().unwrap();
    let out = TestRun::new()
        .playbook(
            "- hosts: localhost
  gather_facts: false
  vars:
    base: /opt/app
    conf: \"{{ base }}/conf\"
    files: \"{{ [conf, log] }}\"
    log: \"{{ conf }}/log\"
    unused: \"{{ nothing_defines_this }}\"
  tasks:
    - copy:
        content: \"{{ files | join(',') }} {{ greeting }}\"
        dest: ~/lazy
",
        )
        .file(
            "group_vars/all.yml",
            "greeting: \"hello from {{ base }}\"\n",
        )
        .env("HOME", home.path().to_str().unwrap())
        .run();
    out.assert_code(0);
    assert_eq!(
        std::fs::read_to_string(home.path().join("lazy")).unwrap(),
        "/opt/app/conf,/opt/app/conf/log hello from /opt/app"
    );
}

/// ansible-playbook 2.21.5 on the same play: a variable whose template names an undefined
/// variable is undefined where it is read (`default` and `is defined` see no value), and
/// a template that needs its value fails with its template's error, never with its text;
/// debug's `var` shows the error in its place; one that names the loop variable takes
/// each item's value.
#[test]
fn a_variable_whose_template_is_undefined_fails_where_it_is_used() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  vars:
    a: "{{ nope }}"
    b: "x{{ a }}"
    per_item: "item {{ item }}"
  tasks:
    - debug:
        msg: "{{ a | default('dflt') }} {{ a is defined }} {{ b | default('dflt2') }}"
    - debug:
        var: a
    - debug:
        msg: "{{ per_item }}"
      loop: [1, 2]
    - debug:
        msg: "{{ b }}"
      ignore_errors: true
      register: used
    - set_fact:
        copied: "{{ a }}"
      ignore_errors: true
      register: copied
    - debug:
        msg: "{{ used.msg }} | {{ copied.msg }}"
"#,
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_contains(&out, r#""msg": "dflt False dflt2""#);
    assert_contains(&out, r#""a": "<< error 1 - 'nope' is undefined >>""#);
    assert_contains(
        &out,
        "[WARNING]: Encountered 1 template error.\nerror 1 - 'nope' is undefined\n",
    );
    assert_contains(&out, r#""msg": "item 2""#);
    assert_contains(
        &out,
        r#""msg": "Task failed: Finalization of task args for 'ansible.builtin.debug' failed: Error while resolving value for 'msg': 'nope' is undefined | Task failed: Finalization of task args for 'ansible.builtin.set_fact' failed: Error while resolving value for 'copied': 'nope' is undefined""#,
    );
    assert_not_contains(&out, "{{ nope }}");
    let recap = out.recap("h");
    assert_eq!((recap.ok, recap.ignored), (6, 2), "{}", out.stdout);
}

/// ansible-playbook 2.21.5 on the same play: the deprecated `vars` dictionary holds every
/// variable the task sees, and a task that reads it carries Ansible's deprecation.
#[test]
fn the_vars_dictionary_reads_every_variable_and_is_deprecated() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  vars:
    name_a: play
  tasks:
    - debug:
        msg: "{{ vars['name_' ~ 'a'] }} {{ vars.inventory_hostname }} {{ 'nope' in vars }}"
      register: read
    - debug:
        msg: "{{ vars.name_a }}"
    - debug:
        msg: "{{ read.deprecations | map(attribute='msg') | list }} {{ read.deprecations[0].version }}"
"#,
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_contains(&out, r#""msg": "play h False""#);
    assert_contains(
        &out,
        r#""msg": "['The internal \"vars\" dictionary is deprecated.'] 2.24""#,
    );
    assert_contains(
        &out,
        "[DEPRECATION WARNING]: The internal \"vars\" dictionary is deprecated. This feature will be removed from ansible-core version 2.24.\n",
    );
}

#[test]
fn unsafe_values_are_never_templated_wherever_they_flow() {
    let home = tempfile::tempdir().unwrap();
    let out = TestRun::new()
        .playbook(
            "- hosts: localhost
  gather_facts: false
  vars:
    secret: FAIL
    raw: !unsafe \"b{{ secret }}'\\\\\"
    refers: \"{{ raw }}!\"
    items: !unsafe ['{{ secret }}', {k: '{% if x %}'}]
  tasks:
    - set_fact:
        kept: \"{{ raw }}\"
    - copy:
        content: \"{{ [raw, refers, kept, items, item] | to_json }}\"
        dest: ~/unsafe
      loop: !unsafe ['{{ secret }}']
",
        )
        .env("HOME", home.path().to_str().unwrap())
        .run();
    out.assert_code(0);
    assert_eq!(
        std::fs::read_to_string(home.path().join("unsafe")).unwrap(),
        r#"["b{{ secret }}'\\", "b{{ secret }}'\\!", "b{{ secret }}'\\", ["{{ secret }}", {"k": "{% if x %}"}], "{{ secret }}"]"#
    );
}

#[test]
fn vars_prompt_takes_extra_vars_or_the_default_and_never_waits() {
    let home = tempfile::tempdir().unwrap();
    let out = TestRun::new()
        .playbook(
            "- hosts: localhost
  gather_facts: false
  ignore_errors: yes
  vars_prompt:
    - name: release
      prompt: Which release?
      default: stable
    - name: owner
      prompt: Who?
    - name: color
      prompt: Color?
  tasks:
    - command: /bin/false
    - copy:
        content: \"{{ release }} {{ owner }}\"
        dest: ~/prompted
",
        )
        .args(&["-e", "owner=ops"])
        .env("HOME", home.path().to_str().unwrap())
        .run();
    out.assert_code(0);
    assert_contains(&out, "...ignoring");
    assert_contains(&out, "vars_prompt 'color' has no default");
    assert_eq!(
        std::fs::read_to_string(home.path().join("prompted")).unwrap(),
        "stable ops"
    );
}

/// ansible-playbook 2.21 (its filter_mathstuff target): what `hostvars` holds is templated
/// when read, and a variable naming another not resolved yet is tried again.
#[test]
fn hostvars_values_are_templated_when_read() {
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  tasks:
    - vars:
        all_vars: "{{ hostvars[inventory_hostname] }}"
        test_var: "{{ all_vars.foo }}"
      block:
        - include_vars: {file: later.yml}
        - debug: msg="{{ test_var }}|{{ hostvars[inventory_hostname].foo }}"
"#,
        )
        .file("later.yml", "foo: \"{{ bar }}\"\nbar: test\n")
        .local_hosts(&LocalHosts::new(&["h"]))
        .run();
    out.assert_code(0);
    assert_contains(&out, "\"msg\": \"test|test\"");
}

/// `ansible_verbosity` is the count of `-v`; a play file with a repeated key keeps the
/// last value and warns, as ansible-playbook 2.21 does by default
/// (DUPLICATE_YAML_DICT_KEY), or fails to load under `error`.
#[test]
fn verbosity_variable_and_duplicate_keys() {
    let hosts = LocalHosts::new(&["h"]);
    let play = r#"- hosts: all
  gather_facts: false
  vars:
    foo: bar
    foo: baz
  tasks:
    - debug: msg="verbosity={{ ansible_verbosity }} foo={{ foo }}"
"#;
    let out = TestRun::new()
        .playbook(play)
        .local_hosts(&hosts)
        .arg("-vv")
        .run();
    out.assert_code(0);
    assert_contains(&out, "verbosity=2 foo=baz");
    assert!(
        out.stderr
            .contains("[WARNING]: Found duplicate mapping key 'foo'."),
        "{}",
        out.stderr
    );
    let refused = TestRun::new()
        .playbook(play)
        .local_hosts(&hosts)
        .env("ANSIBLE_DUPLICATE_YAML_DICT_KEY", "error")
        .run();
    refused.assert_code(4);
    assert!(
        refused
            .stderr
            .contains("YAML parsing failed: Found duplicate mapping key 'foo'."),
        "{}",
        refused.stderr
    );
}

/// A variable named like a keyword or a Jinja global is warned about, with where it is
/// defined, as ansible-playbook 2.21 does (vars/reserved.py): play vars at load, set_fact
/// when it runs.
#[test]
fn reserved_variable_names_are_warned_about() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  vars:
    lipsum: mine
  tasks:
    - set_fact:
        lookup: mine too
    - debug: msg="{{ lipsum }}"
"#,
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    for (name, origin) in [("lipsum", "site.yml:4:5"), ("lookup", "site.yml:6:7")] {
        let warning = format!("[WARNING]: Found variable using reserved name '{name}'.\nOrigin: ");
        let at = out
            .stderr
            .find(&warning)
            .unwrap_or_else(|| panic!("{}", out.stderr));
        let line = out.stderr[at + warning.len()..].lines().next().unwrap();
        assert!(line.ends_with(origin), "{line}");
    }
    assert_contains(&out, "\"msg\": \"mine\"");
}

#[test]
fn hash_behaviour_merge_merges_dictionaries_across_layers() {
    let hosts = LocalHosts::new(&["a"]);
    let play = "- hosts: all
  gather_facts: false
  vars:
    h: {play: 1, deep: {p: 1}}
  tasks:
    - debug: msg=\"{{ h | to_json }} {{ inv | to_json }}\"
";
    let run = |behaviour: &str| {
        TestRun::new()
            .playbook(play)
            .local_home(&hosts)
            .inventory(&format!("{}\n", hosts.line("a")))
            .file(
                "group_vars/all.yml",
                "h: {group: 1, deep: {g: 1}}\ninv: {group: 1}\n",
            )
            .file("host_vars/a.yml", "inv: {host: 1}\n")
            .args(&["-e", "{\"h\": {\"extra\": 1}}"])
            .env("ANSIBLE_HASH_BEHAVIOUR", behaviour)
            .run()
    };
    let out = run("merge");
    out.assert_code(0);
    assert_contains(
        &out,
        r#""msg": "{\"group\": 1, \"deep\": {\"g\": 1, \"p\": 1}, \"play\": 1, \"extra\": 1} {\"group\": 1, \"host\": 1}""#,
    );
    let out = run("replace");
    out.assert_code(0);
    assert_contains(&out, r#""msg": "{\"extra\": 1} {\"host\": 1}""#);
}
