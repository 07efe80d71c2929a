//! Ansible's Jinja dialect in a real run: filters, tests and lookups in module arguments,
//! checked in the files they produce on local hosts.

use crate::support::hosts::LocalHosts;
use crate::support::run::TestRun;

const PLAYBOOK: &str = r#"- hosts: all
  gather_facts: false
  vars:
    packages: [nginx, curl, nginx]
    users:
      - {name: alice, uid: 1001, admin: true}
      - {name: bob, uid: 1002, admin: false}
    base: {a: 1, nested: {x: 1}}
    extra: {nested: {y: 2}}
    port: "8080"
    enabled: "yes"
    app_version: "1.10.2"
  tasks:
    - name: render with filters
      copy:
        dest: ~/report.txt
        content: |
          pkgs={{ packages | unique | sort | join(',') }}
          admins={{ users | selectattr('admin') | map(attribute='name') | join(',') }}
          uids={{ users | map(attribute='uid') | sum }}
          port={{ port | int + 1 }}
          enabled={{ enabled | bool }}
          merged={{ base | combine(extra, recursive=true) | to_json }}
          keys={{ base | dict2items | map(attribute='key') | join(',') }}
          host={{ inventory_hostname | regex_replace('^web(\d+)$', 'server-\1') }}
          missing={{ nope.deeper | default('fallback') }}
          newer={{ app_version is version('1.9', '>') }}
          motd={{ lookup('file', 'motd.txt') }}
          env={{ lookup('env', 'TURBO_TEMPLATING_TEST') }}
          sha={{ 'abc' | hash('sha1') }}
          py={{ 'a-b'.split('-') | length }} {{ inventory_hostname.startswith('web') }}
          list={{ packages | unique }}
          b64={{ 'hi' | b64encode }}
          name={{ '/etc/nginx/nginx.conf' | basename }}
          ternary={{ (users | length > 1) | ternary('many', 'one') }}
          yaml={{ {'k': [1]} | to_nice_yaml }}
        mode: "{{ file_mode | default(omit) }}"
      register: written
    - name: result tests
      copy:
        content: "{{ 'changed' if written is changed else 'same' }} {{ written is succeeded }}"
        dest: ~/result.txt
      when: written is not failed and nope.x is not defined
"#;

#[test]
fn filters_tests_and_lookups_render_into_files() {
    let hosts = LocalHosts::new(&["web1"]);
    let out = TestRun::new()
        .playbook(PLAYBOOK)
        .file("files/motd.txt", "Welcome to turbo-play\n")
        .local_hosts(&hosts)
        .env("TURBO_TEMPLATING_TEST", "from-the-controller")
        .run();
    out.assert_code(0);
    let home = hosts.home();
    let report = std::fs::read_to_string(home.join("report.txt")).expect("report.txt");
    assert_eq!(
        report,
        "pkgs=curl,nginx
admins=alice
uids=2003
port=8081
enabled=True
merged={\"a\": 1, \"nested\": {\"x\": 1, \"y\": 2}}
keys=a,nested
host=server-1
missing=fallback
newer=True
motd=Welcome to turbo-play
env=from-the-controller
sha=a9993e364706816aba3e25717850c26c9cd0d89d
py=2 True
list=['nginx', 'curl']
b64=aGk=
name=nginx.conf
ternary=many
yaml=k:
- 1
",
        "{}",
        out.stdout
    );
    let result = std::fs::read_to_string(home.join("result.txt")).expect("result.txt");
    assert_eq!(result, "changed True");
}

/// Lookups that read the run itself: the inventory (`add_host`'s hosts too) and the
/// variables' names; and `lines`, run on the controller. The expected text is what
/// ansible-playbook 2.21 printed for the same expressions.
#[test]
fn inventory_hostnames_varnames_and_lines_lookups() {
    let hosts = LocalHosts::new(&["web1", "web2"]);
    let inventory = format!(
        "[web]\n{}\n{}\n[db]\ndb1 ansible_connection=local\n",
        hosts.line("web1"),
        hosts.line("web2")
    );
    let out = TestRun::new()
        .playbook(
            r#"- hosts: web
  gather_facts: false
  vars:
    qz_alpha: 1
    qz_beta: 2
  tasks:
    - add_host: name=extra1 groups=web ansible_connection=local
      run_once: true
    - copy:
        dest: ~/{{ inventory_hostname }}/lookups.txt
        content: |
          web={{ query('inventory_hostnames', 'web') | join(',') }}
          some={{ lookup('inventory_hostnames', 'web:db', '!web2') }}
          names={{ lookup('varnames', '^qz_') }}
          lines={{ query('lines', 'printf "one\ntwo\n"') }}
"#,
        )
        .inventory(&inventory)
        .local_home(&hosts)
        .run();
    out.assert_code(0);
    for host in ["web1", "web2"] {
        let text = std::fs::read_to_string(hosts.dir(host).join("lookups.txt")).unwrap();
        assert_eq!(
            text,
            "web=web1,web2,extra1\nsome=web1,extra1,db1\nnames=qz_alpha,qz_beta\nlines=['one', 'two']\n",
            "{}",
            out.stdout
        );
    }
}

/// Data-file lookups as loops (`with_ini`, `with_csvfile`, `with_random_choice`), the
/// connection variables the vars lookup sees, the controller's Python, and a variable
/// whose lookup fails failing the task that uses it, as ansible-playbook 2.21 does.
#[test]
fn data_file_loops_connection_vars_and_failing_variables() {
    let hosts = LocalHosts::new(&["web1"]);
    let out = TestRun::new()
        .file(
            "files/app.ini",
            "[db]\nuser = admin\nport = 5432\nname = app\n",
        )
        .file("files/people.csv", "Smith,Jane\nDoe,John\n")
        .playbook(
            r#"- hosts: web1
  gather_facts: false
  tasks:
    - debug: msg={{ item }}
      with_ini: "^(user|port) section=db file=app.ini re=true"
      register: ini_items
    - set_fact:
        picked: "{{ item }}"
      with_random_choice: [red, green]
    - set_fact:
        bad: "{{ broken }}"
      vars:
        broken: "{{ lookup('dict', 1) }}"
      register: bad_result
      ignore_errors: true
    - copy:
        dest: ~/{{ inventory_hostname }}/out.txt
        content: |
          ini={{ ini_items.results | map(attribute='item') | join(',') }}
          csv={{ lookup('csvfile', 'Doe', file='people.csv', delimiter=',') }}
          picked={{ picked in ['red', 'green'] }}
          host={{ lookup('vars', 'ansible_host') }} {{ ansible_host }}
          python={{ ansible_playbook_python is search('python3$') }}
          bad={{ bad_result is failed }} {{ 'expects a dictionary' in bad_result.msg }}
"#,
        )
        .inventory(&hosts.inventory())
        .local_home(&hosts)
        .run();
    out.assert_code(0);
    let text = std::fs::read_to_string(hosts.dir("web1").join("out.txt")).unwrap();
    assert_eq!(
        text, "ini=admin,5432\ncsv=John\npicked=True\nhost=web1 web1\npython=True\nbad=True True\n",
        "{}",
        out.stdout
    );
}

/// An argument whose template fails fails its task in ansible-playbook 2.21.5's words:
/// the module, the argument and the cause, an attribute a defined value lacks named as
/// Python names it, an undefined value inside a value printed into text failing as the
/// variable itself would, and a division by zero failing as Python's does (per item).
#[test]
fn failing_argument_templates_name_module_argument_and_cause() {
    let out = TestRun::new()
        .inventory("localhost ansible_connection=local\n")
        .playbook(
            r#"- hosts: localhost
  gather_facts: false
  tasks:
    - set_fact:
        names: '{{ things | map(attribute="name") }}'
      vars:
        things: [{name: one}, {notname: two}]
      register: mapped
      ignore_errors: true
    - command: "echo {{ [{'key': nope}] }} second"
      register: printed
      ignore_errors: true
    - debug:
        msg: "{{ {'a': 1}.b }}"
      register: attr
      ignore_errors: true
    - ping:
        data: "{{ 5 / item }}"
      loop: [0, 2]
      register: divided
      ignore_errors: true
    - assert:
        that:
          - >-
            mapped.msg == "Task failed: Finalization of task args for 'ansible.builtin.set_fact' failed: Error while resolving value for 'names': object of type 'dict' has no attribute 'name'"
          - mapped.exception is defined
          - >-
            printed.msg == "Task failed: Finalization of task args for 'ansible.builtin.command' failed: Error while resolving value for '_raw_params': 'nope' is undefined"
          - >-
            attr.msg is contains "'msg': object of type 'dict' has no attribute 'b'"
          - >-
            divided.results[0].msg is contains "'data': division by zero"
          - divided.results[1].ping == '2.5'
"#,
        )
        .run();
    out.assert_code(0);
}
