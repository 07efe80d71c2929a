//! Whole runs of the real binary: what a user checks after `turbo-play site.yml -i hosts`
//! (files on the target, the recap, the exit code, the error text). On local hosts, but
//! for what the ssh connection itself does (the agent's upload and cache, host keys, the
//! user and key, a large transfer), which runs against a real sshd.

use std::path::Path;

use crate::support::hosts::{LocalHosts, SshHosts, refusing_host_line};
use crate::support::run::{
    Outcome, PLAY_HEAD, Recap, TestRun, assert_contains, assert_file, assert_not_contains, recap,
};
use crate::support::sshd::keygen;

const FILE_CREATION: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/playbooks/file_creation.yml"
));

// 1. The foundation issue's playbook on three hosts, then again.

#[test]
fn file_creation_on_three_hosts_then_nothing_changes_and_the_agent_is_cached() {
    let hosts = SshHosts::start(&["host1", "host2", "host3"]);
    let run = TestRun::new()
        .playbook(FILE_CREATION)
        .inventory(&hosts.inventory())
        .args(&["-e", "n=100", "-vv"]);

    let first = run.run();
    first.assert_code(0);
    for (name, user) in &hosts.hosts {
        assert_eq!(first.recap(name), recap(1, 1), "{name}\n{}", first.stdout);
        assert_contains(&first, &format!("<{name}> agent uploaded"));
        for n in 1..=100 {
            assert_file(
                &user.home.join(format!("file_{n}")),
                format!("test file {n}\n").as_bytes(),
                0o644,
            );
        }
        assert!(!user.home.join("file_101").exists());
        assert!(!user.home.join("file_0").exists());
    }

    let second = run.run();
    second.assert_code(0);
    for (name, user) in &hosts.hosts {
        assert_eq!(second.recap(name), recap(1, 0), "{name}\n{}", second.stdout);
        assert_contains(&second, &format!("<{name}> agent cached"));
        assert_file(&user.home.join("file_42"), b"test file 42\n", 0o644);
    }
    assert_not_contains(&second, "agent uploaded");
    assert_not_contains(&second, "changed: [");
}

// 2. Modes as YAML 1.1 octal, a quoted string and symbolic.

#[test]
fn modes_in_every_spelling_are_exact_and_a_mode_change_alone_is_a_change() {
    let hosts = LocalHosts::new(&["h"]);
    let home = hosts.home();
    let playbook = |second_mode: &str| {
        format!(
            "{PLAY_HEAD}  tasks:
    - copy:
        content: \"octal\\n\"
        dest: ~/octal
        mode: 0600
    - copy:
        content: \"quoted\\n\"
        dest: ~/quoted
        mode: {second_mode}
    - copy:
        content: \"symbolic\\n\"
        dest: ~/symbolic
        mode: u=rw,g=r,o=
    - copy:
        content: \"partial\\n\"
        dest: ~/partial
        mode: u=rwx,g=r
"
        )
    };
    let out = TestRun::new()
        .playbook(&playbook("\"0640\""))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(out.recap("h"), recap(4, 4));
    assert_file(&home.join("octal"), b"octal\n", 0o600);
    assert_file(&home.join("quoted"), b"quoted\n", 0o640);
    assert_file(&home.join("symbolic"), b"symbolic\n", 0o640);
    // Classes a symbolic mode leaves out keep the new file's umask default (0644).
    assert_file(&home.join("partial"), b"partial\n", 0o744);

    let again = TestRun::new()
        .playbook(&playbook("\"0640\""))
        .local_hosts(&hosts)
        .run();
    again.assert_code(0);
    assert_eq!(again.recap("h"), recap(4, 0));

    // Same content, another mode: only the mode changes, and that is a change.
    let mode_only = TestRun::new()
        .playbook(&playbook("0604"))
        .local_hosts(&hosts)
        .run();
    mode_only.assert_code(0);
    assert_eq!(mode_only.recap("h"), recap(4, 1));
    assert_file(&home.join("quoted"), b"quoted\n", 0o604);
}

// 3. One unreachable host among good ones.

#[test]
fn an_unreachable_host_does_not_stop_the_others() {
    let hosts = LocalHosts::new(&["good1", "good2"]);
    let inventory = format!("{}{}\n", hosts.inventory(), refusing_host_line("bad"));
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - copy: content=one dest=~/{{{{ inventory_hostname }}}}/one
    - copy: content=two dest=~/{{{{ inventory_hostname }}}}/two
"
        ))
        .inventory(&inventory)
        .local_home(&hosts)
        .run();
    out.assert_code(4);
    assert_contains(&out, "fatal: [bad]: UNREACHABLE!");
    assert_contains(&out, "Connection refused");
    assert_eq!(
        out.recap("bad"),
        Recap {
            unreachable: 1,
            ..Recap::default()
        }
    );
    for name in ["good1", "good2"] {
        assert_eq!(out.recap(name), recap(2, 2));
        let home = &hosts.dir(name);
        assert_file(&home.join("one"), b"one", 0o644);
        assert_file(&home.join("two"), b"two", 0o644);
    }
}

#[test]
fn unreachable_beats_failed_in_the_exit_code() {
    let hosts = LocalHosts::new(&["fails"]);
    let inventory = format!("{}{}\n", hosts.inventory(), refusing_host_line("gone"));
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - command: /bin/false
"
        ))
        .inventory(&inventory)
        .local_home(&hosts)
        .run();
    // As ansible-playbook: 4 when any host was unreachable, even if another failed.
    out.assert_code(4);
    assert_eq!(out.recap("fails").failed, 1);
    assert_eq!(out.recap("gone").unreachable, 1);
}

#[test]
fn the_recap_lists_hosts_sorted_by_name() {
    let hosts = LocalHosts::new(&["zeta", "alpha"]);
    let inventory = format!("{}{}\n", hosts.inventory(), refusing_host_line("beta"));
    let out = TestRun::new()
        .playbook(TOUCH_PLAYBOOK)
        .inventory(&inventory)
        .local_home(&hosts)
        .run();
    out.assert_code(4);
    let (_, tail) = out.stdout.split_once("PLAY RECAP").expect("recap");
    let order: Vec<&str> = tail
        .lines()
        .filter_map(|l| l.split_once(" : ").map(|(h, _)| h.trim()))
        .collect();
    assert_eq!(order, ["alpha", "beta", "zeta"], "{}", out.stdout);
}

// 4. Host key checking.

const TOUCH_PLAYBOOK: &str = "- hosts: all
  gather_facts: false
  tasks:
    - copy: content=hi dest=~/reached
";

#[test]
fn a_changed_host_key_is_refused() {
    let hosts = SshHosts::start(&["h"]);
    let other = hosts.sshd.dir.path().join("other_ed25519");
    keygen(&other);
    let other_pub = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let other_key: Vec<&str> = other_pub.split_whitespace().take(2).collect();
    let wrong = hosts.sshd.known_hosts_file(
        "wrong_known_hosts",
        &format!("[127.0.0.1]:{} {}\n", hosts.sshd.port, other_key.join(" ")),
    );
    let out = TestRun::new()
        .playbook(TOUCH_PLAYBOOK)
        .inventory(&hosts.line_with_known_hosts("h", &wrong))
        .run();
    out.assert_code(4);
    assert_contains(&out, "fatal: [h]: UNREACHABLE!");
    assert_contains(&out, "REMOTE HOST IDENTIFICATION HAS CHANGED");
    assert_contains(
        &out,
        &format!("ssh-keygen -R '[127.0.0.1]:{}'", hosts.sshd.port),
    );
    assert_eq!(out.recap("h").unreachable, 1);
    assert!(!hosts.user("h").home.join("reached").exists());
}

#[test]
fn an_unknown_host_key_is_refused_with_how_to_accept_it() {
    let hosts = SshHosts::start(&["h"]);
    let empty = hosts.sshd.known_hosts_file("empty_known_hosts", "");
    let inventory = hosts.line_with_known_hosts("h", &empty);
    let out = TestRun::new()
        .playbook(TOUCH_PLAYBOOK)
        .inventory(&inventory)
        .run();
    out.assert_code(4);
    assert_contains(&out, "fatal: [h]: UNREACHABLE!");
    assert_contains(
        &out,
        &format!("host key for [127.0.0.1]:{} is not known", hosts.sshd.port),
    );
    assert_contains(
        &out,
        &format!("ssh-keyscan -p {} 127.0.0.1", hosts.sshd.port),
    );
    assert_contains(&out, "ANSIBLE_HOST_KEY_CHECKING=False");
    assert!(!hosts.user("h").home.join("reached").exists());

    let by_env = TestRun::new()
        .playbook(TOUCH_PLAYBOOK)
        .inventory(&inventory)
        .env("ANSIBLE_HOST_KEY_CHECKING", "False")
        .run();
    by_env.assert_code(0);
    assert_eq!(by_env.recap("h"), recap(1, 1));
    assert_file(&hosts.user("h").home.join("reached"), b"hi", 0o644);
    assert_eq!(
        std::fs::read_to_string(&empty).unwrap(),
        "",
        "checking off records nothing"
    );

    let by_inventory = TestRun::new()
        .playbook(TOUCH_PLAYBOOK)
        .inventory(&format!(
            "{inventory}\n\n[all:vars]\nhost_key_checking=false\n"
        ))
        .run();
    by_inventory.assert_code(0);
    assert_eq!(by_inventory.recap("h"), recap(1, 0));
}

// 5. Load-time errors: reported before any connection.

#[test]
fn a_yaml_syntax_error_names_file_line_and_column_and_connects_nowhere() {
    let out = TestRun::new()
        .playbook(
            "- hosts: all
  gather_facts: false
  tasks:
    - name: a
      debug:
        msg: hi
       bad: indent
",
        )
        .inventory(&refusing_host_line("h"))
        .run();
    out.assert_code(4);
    assert!(
        out.stderr.contains("site.yml:7:8: "),
        "stderr: {}",
        out.stderr
    );
    assert!(out.stderr.contains("YAML syntax error"), "{}", out.stderr);
    assert!(
        out.stderr.contains("7 |        bad: indent"),
        "quotes the line: {}",
        out.stderr
    );
    assert_not_contains(&out, "UNREACHABLE");
    assert_not_contains(&out, "PLAY RECAP");
}

#[test]
fn an_unknown_module_suggests_the_closest() {
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - name: a
      cpy:
        content: x
        dest: ~/y
"
        ))
        .inventory(&refusing_host_line("h"))
        .run();
    out.assert_code(4);
    assert!(out.stderr.contains("site.yml:5:7: "), "{}", out.stderr);
    assert!(
        out.stderr.contains("Did you mean 'copy'?"),
        "{}",
        out.stderr
    );
    assert_not_contains(&out, "UNREACHABLE");
}

#[test]
fn an_unknown_task_keyword_is_named() {
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - name: a
      copy:
        content: x
        dest: ~/y
      frobnicate: yes
"
        ))
        .inventory(&refusing_host_line("h"))
        .run();
    out.assert_code(4);
    assert!(out.stderr.contains("site.yml:8:7: "), "{}", out.stderr);
    assert!(out.stderr.contains("'frobnicate'"), "{}", out.stderr);
    assert_not_contains(&out, "UNREACHABLE");
}

// 6. The local connection.

#[test]
fn connection_local_writes_into_the_controller_users_home() {
    let home = tempfile::tempdir().unwrap();
    let out = TestRun::new()
        .playbook(FILE_CREATION)
        .inventory("localhost ansible_connection=local\n")
        .args(&["-e", "n=3"])
        .env("HOME", home.path().to_str().unwrap())
        .run();
    out.assert_code(0);
    assert_eq!(out.recap("localhost"), recap(1, 1));
    for n in 1..=3 {
        assert_file(
            &home.path().join(format!("file_{n}")),
            format!("test file {n}\n").as_bytes(),
            0o644,
        );
    }
}

#[test]
fn hosts_localhost_uses_the_implicit_localhost() {
    let home = tempfile::tempdir().unwrap();
    let out = TestRun::new()
        .playbook(
            "- hosts: localhost
  gather_facts: false
  tasks:
    - copy: content=local dest=~/implicit
",
        )
        .inventory(&refusing_host_line("other"))
        .env("HOME", home.path().to_str().unwrap())
        .run();
    out.assert_code(0);
    assert_eq!(out.recap("localhost"), recap(1, 1));
    assert!(!out.recaps().contains_key("other"), "{}", out.stdout);
    assert_file(&home.path().join("implicit"), b"local", 0o644);
}

/// `hosts:` written as a template is rendered with the play's and extra vars: a string
/// of digits is a host name, a list its patterns (Ansible's hosts_field target).
#[test]
fn templated_hosts_take_extra_vars_strings_and_lists() {
    let hosts = LocalHosts::new(&["42", "h2"]);
    let play = "- hosts: \"{{ target }}\"
  gather_facts: false
  tasks:
    - debug: msg=\"Running on {{ inventory_hostname }}\"
";
    let one = TestRun::new()
        .playbook(play)
        .local_hosts(&hosts)
        .args(&["-e", "target=42"])
        .run();
    one.assert_code(0);
    assert_contains(&one, "PLAY [42] ");
    assert_contains(&one, "Running on 42");
    assert!(!one.recaps().contains_key("h2"), "{}", one.stdout);
    let both = TestRun::new()
        .playbook(play)
        .local_hosts(&hosts)
        .args(&["-e", r#"{"target": ["42", "h2"]}"#])
        .run();
    both.assert_code(0);
    assert_contains(&both, "PLAY [['42', 'h2']] ");
    assert_contains(&both, "Running on h2");
}

#[test]
fn play_keyword_connection_local_runs_locally_and_takes_fact_path() {
    let home = tempfile::tempdir().unwrap();
    let out = TestRun::new()
        .playbook(
            "- hosts: web
  connection: local
  gather_facts: false
  fact_path: /nowhere
  tasks:
    - copy: content=by-play-keyword dest=~/from_play
    - debug: msg=again
- hosts: web
  connection: local
  gather_facts: false
  fact_path: /nowhere
  tasks:
    - debug: msg=not-asked
",
        )
        .inventory("web\n")
        .env("HOME", home.path().to_str().unwrap())
        .run();
    out.assert_code(0);
    assert_eq!(out.recap("web"), recap(3, 1));
    // `fact_path` is a play keyword of Ansible's like any other: taken, no warning.
    assert!(!out.stdout.contains("[WARNING]") && !out.stderr.contains("[WARNING]"));
}

// 7. Failing commands, ignore_errors, creates.

#[test]
fn command_arguments_expand_home_and_variables_like_ansible() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - command: touch ~/by_tilde $HOME/by_var ${{HOME}}/by_braces
    - command: touch ~/$NAME_FROM_TASK
      environment:
        NAME_FROM_TASK: from_environment
"
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    let home = hosts.home();
    for name in ["by_tilde", "by_var", "by_braces", "from_environment"] {
        assert!(home.join(name).exists(), "{name} missing\n{}", out.stdout);
    }
}

#[test]
fn a_failing_command_fails_the_host_with_rc_and_stderr() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - name: boom
      command: /bin/sh -c \"echo oops >&2; exit 3\"
    - name: never
      copy: content=x dest=~/after
"
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(2);
    assert_contains(&out, "fatal: [h]: FAILED! =>");
    assert_contains(&out, "\"rc\": 3");
    assert_contains(&out, "\"stderr\": \"oops\"");
    assert_eq!(
        out.recap("h"),
        Recap {
            failed: 1,
            ..Recap::default()
        }
    );
    assert!(!hosts.home().join("after").exists());
}

#[test]
fn ignore_errors_goes_on_and_creates_skips_the_command() {
    let hosts = LocalHosts::new(&["h"]);
    let home = hosts.home();
    std::fs::write(home.join("exists"), "").unwrap();
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - name: boom
      command: /bin/sh -c \"echo oops >&2; exit 3\"
      ignore_errors: yes
    - name: guarded
      shell: echo ran > ~/guarded
      args:
        creates: ~/exists
    - name: unguarded
      shell: echo ran > ~/unguarded
      args:
        creates: ~/missing
"
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_contains(&out, "fatal: [h]: FAILED! =>");
    assert_contains(&out, "...ignoring");
    assert_eq!(
        out.recap("h"),
        Recap {
            ok: 3,
            changed: 2,
            ignored: 1,
            ..Recap::default()
        }
    );
    assert!(!home.join("guarded").exists());
    assert_eq!(
        std::fs::read_to_string(home.join("unguarded")).unwrap(),
        "ran\n"
    );
}

// 8. register, when, debug.

#[test]
fn register_when_and_debug() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - name: run
      command: echo hello from {{{{ inventory_hostname }}}}
      register: result
    - debug: var=result.stdout
    - name: when it worked
      copy:
        content: \"rc={{{{ result.rc }}}} out={{{{ result.stdout }}}}\"
        dest: ~/worked
      when: result.rc == 0
    - name: when it failed
      copy: content=x dest=~/failed
      when: result.rc != 0
"
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_contains(&out, "\"result.stdout\": \"hello from h\"");
    assert_contains(&out, "skipping: [h]");
    assert_eq!(
        out.recap("h"),
        Recap {
            ok: 3,
            changed: 2,
            skipped: 1,
            ..Recap::default()
        }
    );
    let home = hosts.home();
    assert_file(&home.join("worked"), b"rc=0 out=hello from h", 0o644);
    assert!(!home.join("failed").exists());
}

#[test]
fn a_skipped_task_prints_just_the_host_at_default_verbosity() {
    let home = tempfile::tempdir().unwrap();
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - debug: msg=never
      when: false
    - debug: msg={{{{ item }}}}
      loop: [1, 2]
      when: item > 1
"
        ))
        .inventory("localhost ansible_connection=local\n")
        .env("HOME", home.path().to_str().unwrap())
        .run();
    out.assert_code(0);
    assert!(
        out.stdout.contains("skipping: [localhost]\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("skipping: [localhost] => (item=1)"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("ok: [localhost] => (item=2) => {"),
        "{}",
        out.stdout
    );
    assert_not_contains(&out, "skip_reason");
}

// 9. Undefined variables.

#[test]
fn an_undefined_variable_names_the_variable_and_the_task() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - name: uses nope
      copy:
        content: x
        dest: ~/x_{{{{ nope }}}}
"
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(2);
    assert_contains(&out, "TASK [uses nope]");
    assert_contains(&out, "fatal: [h]: FAILED!");
    assert_contains(&out, "'nope' is undefined");
    assert_contains(&out, "site.yml:4:7");
    assert_eq!(out.recap("h").failed, 1);
    let leftovers: Vec<_> = std::fs::read_dir(hosts.home())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with("x_"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

// 10. Extra vars beat play vars.

#[test]
fn extra_vars_beat_play_vars() {
    let hosts = LocalHosts::new(&["h"]);
    let playbook = "- hosts: all
  gather_facts: false
  vars:
    word: play
    other: kept
  tasks:
    - copy:
        content: \"{{ word }} {{ other }}\"
        dest: ~/word
";
    let out = TestRun::new()
        .playbook(playbook)
        .local_hosts(&hosts)
        .args(&["-e", "word=extra"])
        .run();
    out.assert_code(0);
    assert_file(&hosts.home().join("word"), b"extra kept", 0o644);

    let json = TestRun::new()
        .playbook(playbook)
        .local_hosts(&hosts)
        .args(&["-e", r#"{"word": "json"}"#])
        .run();
    json.assert_code(0);
    assert_file(&hosts.home().join("word"), b"json kept", 0o644);
}

// 11. The file module.

#[test]
fn file_module_directory_touch_absent_and_link() {
    use std::os::unix::fs::PermissionsExt;

    let hosts = LocalHosts::new(&["h"]);
    let home = hosts.home().to_path_buf();
    std::fs::write(home.join("doomed"), "bye").unwrap();
    let playbook = format!(
        "{PLAY_HEAD}  tasks:
    - file: path=~/d/e state=directory mode=0750
    - file:
        path: ~/d/e/touched
        state: touch
        mode: 0600
    - file: path=~/doomed state=absent
    - file: src=~/d/e/touched dest=~/link state=link
    - file: src=e/touched dest=~/d/relative state=link
"
    );
    let out = TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    out.assert_code(0);
    assert_eq!(out.recap("h"), recap(5, 5));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert!(home.join("d/e").is_dir());
    assert_eq!(mode(&home.join("d/e")), 0o750);
    assert_file(&home.join("d/e/touched"), b"", 0o600);
    assert!(!home.join("doomed").exists());
    assert_eq!(
        std::fs::read_link(home.join("link")).unwrap(),
        home.join("d/e/touched")
    );
    assert_eq!(
        std::fs::read_link(home.join("d/relative")).unwrap(),
        Path::new("e/touched")
    );

    // Again: only touch reports a change (it always does, as in Ansible).
    let again = TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    again.assert_code(0);
    assert_eq!(again.recap("h"), recap(5, 1));
}

// 12. The template module.

#[test]
fn template_renders_vars_beside_the_playbook() {
    let hosts = LocalHosts::new(&["h"]);
    let run = TestRun::new()
        .playbook(
            "- hosts: all
  gather_facts: false
  vars:
    who: world
    items: [a, b, c]
  tasks:
    - template:
        src: t.j2
        dest: ~/rendered
        mode: 0640
",
        )
        .file(
            "templates/t.j2",
            "Hello {{ who }} from {{ inventory_hostname }}\n\
             {% for i in items %}{{ i }}{{ loop.index }} {% endfor %}\n",
        )
        .local_hosts(&hosts);
    let out = run.run();
    out.assert_code(0);
    assert_eq!(out.recap("h"), recap(1, 1));
    assert_file(
        &hosts.home().join("rendered"),
        b"Hello world from h\na1 b2 c3 \n",
        0o640,
    );
    let again = run.run();
    again.assert_code(0);
    assert_eq!(again.recap("h"), recap(1, 0));
}

// 13. --limit and --forks.

#[test]
fn limit_selects_hosts_and_one_fork_still_runs_them_all() {
    let hosts = LocalHosts::new(&["h1", "h2", "h3"]);
    let playbook = format!(
        "{PLAY_HEAD}  tasks:
    - copy: content={{{{ inventory_hostname }}}} dest=~/{{{{ inventory_hostname }}}}/who
"
    );
    let limited = TestRun::new()
        .playbook(&playbook)
        .local_hosts(&hosts)
        .args(&["--limit", "h2"])
        .run();
    limited.assert_code(0);
    assert_eq!(limited.recaps().len(), 1, "{}", limited.stdout);
    assert_eq!(limited.recap("h2"), recap(1, 1));
    assert_file(&hosts.dir("h2").join("who"), b"h2", 0o644);
    assert!(!hosts.dir("h1").join("who").exists());
    assert!(!hosts.dir("h3").join("who").exists());

    let serial = TestRun::new()
        .playbook(&playbook)
        .local_hosts(&hosts)
        .args(&["-f", "1"])
        .run();
    serial.assert_code(0);
    assert_eq!(serial.recaps().len(), 3, "{}", serial.stdout);
    assert_eq!(serial.recap("h1"), recap(1, 1));
    assert_eq!(serial.recap("h2"), recap(1, 0));
    assert_eq!(serial.recap("h3"), recap(1, 1));
    for name in ["h1", "h2", "h3"] {
        assert_file(&hosts.dir(name).join("who"), name.as_bytes(), 0o644);
    }
}

// 14. A large local file.

/// Deterministic bytes that do not compress much (xorshift), so the transfer is real.
fn noise(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bytes.extend_from_slice(&state.to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

#[test]
fn copy_of_a_large_local_file_is_exact_and_then_unchanged() {
    let hosts = SshHosts::start(&["h"]);
    let big = noise(3 * 1024 * 1024 + 17);
    let run = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - copy:
        src: big.bin
        dest: ~/big.bin
        mode: 0600
"
        ))
        .file_bytes("files/big.bin", &big)
        .inventory(&hosts.inventory());
    let out = run.run();
    out.assert_code(0);
    assert_eq!(out.recap("h"), recap(1, 1));
    assert_file(&hosts.user("h").home.join("big.bin"), &big, 0o600);

    let again = run.run();
    again.assert_code(0);
    assert_eq!(again.recap("h"), recap(1, 0));
}

// Beyond the list: inventory groups and vars, several plays, CLI connection options.

#[test]
fn groups_group_vars_and_several_plays() {
    let hosts = LocalHosts::new(&["web1", "web2", "db1"]);
    let inventory = format!(
        "[web]\n{}\n{} who=special\n\n[db]\n{}\n\n[web:vars]\nwho=web\nrole=frontend\n\n[all:vars]\nrole=generic\n",
        hosts.line("web1"),
        hosts.line("web2"),
        hosts.line("db1"),
    );
    let out = TestRun::new()
        .playbook(
            "- hosts: web
  gather_facts: false
  tasks:
    - copy:
        content: \"{{ who }} {{ role }} {{ groups['web'] | length }}\"
        dest: ~/{{ inventory_hostname }}/web
- name: second play
  hosts: db
  gather_facts: false
  tasks:
    - copy:
        content: \"{{ role }} {{ group_names | join(',') }}\"
        dest: ~/{{ inventory_hostname }}/db
",
        )
        .inventory(&inventory)
        .local_home(&hosts)
        .run();
    out.assert_code(0);
    assert_contains(&out, "PLAY [web]");
    assert_contains(&out, "PLAY [second play]");
    // Host vars beat group vars; a child group's vars beat all's.
    assert_file(&hosts.dir("web1").join("web"), b"web frontend 2", 0o644);
    assert_file(&hosts.dir("web2").join("web"), b"special frontend 2", 0o644);
    assert_file(&hosts.dir("db1").join("db"), b"generic db", 0o644);
    assert!(!hosts.dir("db1").join("web").exists());
    assert_eq!(out.recap("web1"), recap(1, 1));
    assert_eq!(out.recap("db1"), recap(1, 1));
}

#[test]
fn user_and_key_from_the_command_line() {
    let hosts = SshHosts::start(&["h"]);
    let user = hosts.user("h");
    let inventory = format!(
        "h ansible_host=127.0.0.1 ansible_port={} ansible_ssh_common_args='-o UserKnownHostsFile={}'\n",
        hosts.sshd.port,
        hosts.known_hosts.display()
    );
    let out = TestRun::new()
        .playbook(TOUCH_PLAYBOOK)
        .inventory(&inventory)
        .args(&["-u", &user.name, "--private-key"])
        .arg(hosts.sshd.user_key.to_str().unwrap())
        .run();
    out.assert_code(0);
    assert_file(&user.home.join("reached"), b"hi", 0o644);
}

#[test]
fn accept_new_records_the_key_then_trusts_it() {
    let hosts = SshHosts::start(&["h"]);
    let fresh = hosts.sshd.dir.path().join("fresh_known_hosts");
    let inventory = format!(
        "h ansible_host=127.0.0.1 ansible_port={} ansible_user={} ansible_ssh_private_key_file={} \
         ansible_ssh_common_args='-o UserKnownHostsFile={} -o StrictHostKeyChecking=accept-new -o HashKnownHosts=no'\n",
        hosts.sshd.port,
        hosts.user("h").name,
        hosts.sshd.user_key.display(),
        fresh.display()
    );
    let run = TestRun::new()
        .playbook(TOUCH_PLAYBOOK)
        .inventory(&inventory);
    run.run().assert_code(0);
    let recorded = std::fs::read_to_string(&fresh).expect("known_hosts written");
    assert!(
        recorded.contains(&hosts.sshd.known_hosts_line()),
        "{recorded}"
    );
    let again = run.run();
    again.assert_code(0);
    assert_eq!(again.recap("h"), recap(1, 0));
}

#[test]
fn copy_small_src_force_no_and_command_chdir_removes() {
    let hosts = LocalHosts::new(&["h"]);
    let home = hosts.home();
    std::fs::write(home.join("keep"), "mine").unwrap();
    let run = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - copy: src=small.txt dest=~/small.txt
    - copy: src=small.txt dest=~/keep force=no
    - command: pwd
      args:
        chdir: /tmp
      register: where
    - copy: content={{{{ where.stdout }}}} dest=~/where
    - command: touch ~/never
      args:
        removes: ~/does-not-exist
    - shell: echo $((6 * 7)) | tr -d '\\n' > ~/answer
"
        ))
        .file("files/small.txt", "small\n")
        .local_hosts(&hosts);
    let out = run.run();
    out.assert_code(0);
    assert_file(&home.join("small.txt"), b"small\n", 0o644);
    assert_file(&home.join("keep"), b"mine", 0o644);
    assert_file(&home.join("where"), b"/tmp", 0o644);
    assert!(!home.join("never").exists());
    // The local agent's working directory is the run's, not the home.
    for dir in [home, run.dir()] {
        assert!(!dir.join("~").exists(), "a literal ~ directory");
    }
    assert_file(&home.join("answer"), b"42", 0o644);
    assert_eq!(out.recap("h"), recap(6, 4));
}

#[test]
fn several_playbooks_and_extra_vars_from_a_file() {
    let hosts = LocalHosts::new(&["h"]);
    let run = TestRun::new()
        .file(
            "second.yml",
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: content={{ word }} dest=~/second\n",
        )
        .file("vars.yml", "word: from-file\n")
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:\n    - copy: content={{{{ word }}}} dest=~/first\n"
        ))
        .local_hosts(&hosts);
    let second = run.dir().join("second.yml");
    let out = run
        .arg(second.to_str().unwrap())
        .args(&["-e", "@vars.yml"])
        .run();
    out.assert_code(0);
    let home = hosts.home();
    assert_file(&home.join("first"), b"from-file", 0o644);
    assert_file(&home.join("second"), b"from-file", 0o644);
}

#[test]
fn a_limit_that_matches_nothing_is_an_error_before_anything_runs() {
    let out = TestRun::new()
        .playbook(TOUCH_PLAYBOOK)
        .inventory(&refusing_host_line("h"))
        .args(&["--limit", "nosuchhost"])
        .run();
    out.assert_code(1);
    assert!(
        out.stderr
            .contains("ERROR! Specified inventory, host pattern and/or --limit leaves us with no hosts to target"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--limit nosuchhost"), "{}", out.stderr);
    assert_not_contains(&out, "PLAY [");
}

#[test]
fn check_mode_reports_changes_and_makes_none() {
    let hosts = LocalHosts::new(&["h"]);
    let home = hosts.home();
    std::fs::write(home.join("existing"), "old\n").unwrap();
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - copy: content=new dest=~/existing
    - copy: content=new dest=~/created
    - file: path=~/dir state=directory
"
        ))
        .local_hosts(&hosts)
        .arg("--check")
        .run();
    out.assert_code(0);
    assert_eq!(out.recap("h"), recap(3, 3));
    assert_eq!(
        std::fs::read_to_string(home.join("existing")).unwrap(),
        "old\n"
    );
    assert!(!home.join("created").exists());
    assert!(!home.join("dir").exists());
}

#[test]
fn diff_shows_the_change_of_a_file() {
    let hosts = LocalHosts::new(&["h"]);
    std::fs::write(hosts.home().join("existing"), "old\n").unwrap();
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - copy:
        content: \"new\\n\"
        dest: ~/existing
"
        ))
        .local_hosts(&hosts)
        .args(&["--check", "--diff"])
        .run();
    out.assert_code(0);
    assert_contains(&out, "--- before");
    assert_contains(&out, "+++ after");
    assert_contains(&out, "\n-old\n");
    assert_contains(&out, "\n+new\n");
}

#[test]
fn two_runs_at_once_share_the_first_upload_safely() {
    let hosts = SshHosts::start(&["h"]);
    let inventory = hosts.inventory();
    let runs: Vec<TestRun> = (0..3)
        .map(|i| {
            TestRun::new()
                .playbook(&format!(
                    "{PLAY_HEAD}  tasks:\n    - copy: content=run{i} dest=~/run{i}\n"
                ))
                .inventory(&inventory)
        })
        .collect();
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = runs.iter().map(|r| s.spawn(|| r.run())).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, out) in outcomes.iter().enumerate() {
        out.assert_code(0);
        assert_file(
            &hosts.user("h").home.join(format!("run{i}")),
            format!("run{i}").as_bytes(),
            0o644,
        );
    }
    let cache = hosts.user("h").home.join(".cache/turbo-play");
    let names = |dir: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    // Beside the agent only its digest stamp (verified/<agent>), itself whole.
    let mut leftovers: Vec<String> = names(&cache)
        .into_iter()
        .filter(|n| n != "verified")
        .filter(|n| !n.starts_with("agent-") || n.contains('.'))
        .collect();
    if cache.join("verified").is_dir() {
        leftovers.extend(
            names(&cache.join("verified"))
                .into_iter()
                .filter(|n| !n.starts_with("agent-") || n.contains('.'))
                .map(|n| format!("verified/{n}")),
        );
    }
    assert!(
        leftovers.is_empty(),
        "temp files left in the cache: {leftovers:?}"
    );
}
