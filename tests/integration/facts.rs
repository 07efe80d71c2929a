//! Fact gathering end to end: the implicit `Gathering Facts` task, the facts it makes
//! available (checked against what this machine reports, since the sshd runs here, and
//! against the user the sshd logs in as), the `setup` module's `gather_subset` and
//! `filter`, and `gather_facts: false` (those on local hosts).

use crate::support::hosts::{LocalHosts, SshHosts, refusing_host_line};
use crate::support::run::{TestRun, assert_contains, file_bytes_and_mode, recap};

#[track_caller]
fn file_text(path: &std::path::Path) -> String {
    String::from_utf8(file_bytes_and_mode(path).0).expect("utf-8 file")
}

/// The distribution name Ansible reports for this machine, where the test knows it.
fn expected_distribution() -> Option<&'static str> {
    let os_release = std::fs::read_to_string("/etc/os-release").ok()?;
    let id = os_release
        .lines()
        .find_map(|l| l.strip_prefix("ID="))?
        .trim_matches('"');
    match id {
        "debian" => Some("Debian"),
        "ubuntu" => Some("Ubuntu"),
        "fedora" => Some("Fedora"),
        _ => None,
    }
}

#[test]
fn plays_gather_facts_by_default_and_expose_them_both_ways() {
    let hosts = SshHosts::start(&["h"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: all
  tasks:
    - debug: var=ansible_distribution
    - copy:
        content: \"{{ ansible_facts.hostname }} {{ ansible_user_id }} {{ ansible_hostname == ansible_facts['hostname'] }} {{ ansible_facts.user_dir }}\"
        dest: ~/facts
    - copy:
        content: \"{{ ansible_default_ipv4 is mapping }} {{ ansible_date_time.epoch | int > 0 }} {{ ansible_memtotal_mb > 0 }} {{ ansible_processor_vcpus > 0 }} {{ 'lo' in ansible_interfaces }} {{ ansible_mounts | length > 0 }} {{ ansible_system }} {{ ansible_uptime_seconds > 0 }} {{ ansible_env.HOME == ansible_user_dir }}\"
        dest: ~/more
",
        )
        .inventory(&hosts.inventory())
        .run();
    out.assert_code(0);
    assert_contains(&out, "TASK [Gathering Facts]");
    assert_contains(&out, "ok: [h]");
    // Gathering Facts counts as one ok, like Ansible's.
    assert_eq!(out.recap("h"), recap(4, 2));
    let banner = out.stdout.find("TASK [Gathering Facts]").unwrap();
    let first_task = out.stdout.find("TASK [debug]").unwrap();
    assert!(banner < first_task, "{}", out.stdout);
    // The facts themselves are never printed, as in Ansible.
    assert!(!out.stdout.contains("ansible_facts"), "{}", out.stdout);

    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let short = hostname.trim().split('.').next().unwrap().to_string();
    let user = hosts.user("h");
    assert_eq!(
        file_text(&user.home.join("facts")),
        format!("{short} {} True {}", user.name, user.home.display())
    );
    assert_eq!(
        file_text(&user.home.join("more")),
        "True True True True True True Linux True True"
    );
    match expected_distribution() {
        Some(name) => assert_contains(&out, &format!("\"ansible_distribution\": \"{name}\"")),
        None => assert_contains(&out, "\"ansible_distribution\": \""),
    }
}

#[test]
fn gather_facts_false_gathers_nothing() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: all
  gather_facts: false
  tasks:
    - copy:
        content: \"{{ ansible_hostname is defined }}\"
        dest: ~/defined
",
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert!(!out.stdout.contains("Gathering Facts"), "{}", out.stdout);
    assert_eq!(out.recap("h"), recap(1, 1));
    assert_eq!(file_text(&hosts.home().join("defined")), "False");
}

#[test]
fn play_gather_subset_and_the_setup_module_with_filter() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: all
  gather_subset: ['!all']
  tasks:
    - copy:
        content: \"{{ ansible_mounts is defined }} {{ ansible_distribution is defined }}\"
        dest: ~/min
- hosts: all
  gather_facts: no
  tasks:
    - name: only network facts, only the interface list
      setup:
        gather_subset: [network]
        filter: ansible_interf*
      register: gathered
    - copy:
        content: \"{{ gathered.ansible_facts | list | sort | join(',') }} {{ 'lo' in ansible_interfaces }}\"
        dest: ~/filtered
",
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    let home = hosts.home();
    assert_eq!(file_text(&home.join("min")), "False True");
    assert_eq!(file_text(&home.join("filtered")), "ansible_interfaces True");
}

#[test]
fn an_unreachable_host_fails_at_gathering_facts() {
    let hosts = LocalHosts::new(&["good"]);
    let inventory = format!("{}\n{}\n", hosts.line("good"), refusing_host_line("bad"));
    let out = TestRun::new()
        .playbook("- hosts: all\n  tasks:\n    - copy: content=x dest=~/after\n")
        .inventory(&inventory)
        .local_home(&hosts)
        .run();
    out.assert_code(4);
    assert_contains(&out, "TASK [Gathering Facts]");
    assert_contains(&out, "fatal: [bad]: UNREACHABLE!");
    assert_eq!(out.recap("bad").unreachable, 1);
    assert_eq!(out.recap("good"), recap(2, 1));
    assert_eq!(file_text(&hosts.home().join("after")), "x");
}

#[test]
fn python_facts_describe_the_hosts_interpreter() {
    let hosts = LocalHosts::new(&["h"]);
    let python = ["/usr/bin/python3", "/work/ansible-venv/bin/python"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let Some(python) = python else {
        eprintln!("skipped: no python3 on this machine");
        return;
    };
    let inventory = format!("{} ansible_python_interpreter={python}\n", hosts.line("h"));
    let out = TestRun::new()
        .playbook(
            "- hosts: all\n  tasks:\n    - copy:\n        dest: ~/h/python\n        content: \"{{ ansible_python.executable }} {{ ansible_python.version.major }} {{ ansible_python_version is match('3\\\\.') }}\"\n",
        )
        .inventory(&inventory)
        .local_home(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(
        file_text(&hosts.dir("h").join("python")),
        format!("{python} 3 True")
    );
}

#[test]
fn gathering_setting_decides_which_plays_gather() {
    let hosts = LocalHosts::new(&["a"]);
    let playbook = "- hosts: all
  tasks:
    - debug: msg=one
- hosts: all
  tasks:
    - debug: msg=two
- hosts: all
  gather_facts: true
  tasks:
    - debug: msg=three
";
    let run = |mode: &str| {
        TestRun::new()
            .playbook(playbook)
            .local_hosts(&hosts)
            .env("ANSIBLE_GATHERING", mode)
            .run()
    };
    // smart: a host gathered once is not gathered again, and a task left with no host
    // has no banner.
    let out = run("smart");
    out.assert_code(0);
    assert_eq!(out.stdout.matches("TASK [Gathering Facts]").count(), 1);
    assert_eq!(out.recap("a"), recap(4, 0));
    // explicit: only the play that asks.
    let out = run("explicit");
    out.assert_code(0);
    assert_eq!(out.stdout.matches("TASK [Gathering Facts]").count(), 1);
    let banner = out.stdout.find("TASK [Gathering Facts]").unwrap();
    assert!(
        banner > out.stdout.find("\"two\"").unwrap(),
        "{}",
        out.stdout
    );
    // implicit (the default): every play.
    let out = run("implicit");
    assert_eq!(out.stdout.matches("TASK [Gathering Facts]").count(), 3);
}

/// ansible-playbook 2.21.5 on the same play: `ansible_facts_modules` names the modules
/// fact gathering runs (a `library/` module and setup), their facts merged; a module that
/// is not setup is not given the subset, and says so.
#[test]
fn ansible_facts_modules_run_their_modules_and_merge_the_facts() {
    if !std::path::Path::new("/usr/bin/python3").is_file() {
        eprintln!("skipped: no /usr/bin/python3 to run the facts module with");
        return;
    }
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: all
  gather_facts: true
  gather_subset: [min]
  vars:
    ansible_facts_modules: [custom_facts, setup]
    ansible_python_interpreter: /usr/bin/python3
  tasks:
    - copy:
        content: \"{{ custom_fact }} {{ ansible_facts.custom_fact }} {{ ansible_system }}\"
        dest: ~/facts
",
        )
        .file(
            "library/custom_facts.py",
            "#!/usr/bin/python\nimport json\nprint(json.dumps({\"ansible_facts\": {\"custom_fact\": \"required\"}}))\n",
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_contains(
        &out,
        "[WARNING]: Not passing subset(['min']) to custom_facts",
    );
    assert_eq!(out.recap("h"), recap(2, 1));
    assert_eq!(
        file_text(&hosts.home().join("facts")),
        "required required Linux"
    );
}
