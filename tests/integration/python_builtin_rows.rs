//! ansible-core's git, mount_facts, expect, subversion, dnf5 and iptables, which turbo-play
//! runs through the target's Python (`Entry::Python`), against what ansible-playbook 2.21.5
//! registered on the same playbook (tests/python_modules/builtin_rows/: site.yml,
//! expected-local.json). git clones a local bare repository that mkrepo.sh builds with the
//! real git; the modules whose tools this machine lacks (pexpect, svn, dnf, iptables) fail
//! with Ansible's own words, compared up to the part that names this machine.

use std::path::Path;

use serde_json::Value;

use crate::python_modules::{FIXTURES, controller_side, with_controller};
use crate::support::run::{Recap, TestRun};

/// A message up to where it names this machine (its PATH, its host name).
fn portable(value: &mut Value) {
    if let Some(msg) = value.get("msg").and_then(Value::as_str) {
        let cut = [" in paths: ", " on "]
            .iter()
            .filter_map(|at| msg.find(at))
            .min()
            .unwrap_or(msg.len());
        value["msg"] = Value::String(msg[..cut].to_string());
    }
}

#[test]
fn git_mount_facts_and_friends_register_what_ansible_registers() {
    let test = "git_mount_facts_and_friends_register_what_ansible_registers";
    let Some((core, collections)) = controller_side(test) else {
        return;
    };
    let fixture = Path::new(FIXTURES).join("builtin_rows");
    let run = TestRun::new();
    let dir = run.dir().join("d");
    let built = std::process::Command::new("bash")
        .arg(fixture.join("mkrepo.sh"))
        .arg(&dir)
        .output()
        .expect("bash");
    assert!(built.status.success(), "mkrepo.sh: {built:?}");
    let site = std::fs::read_to_string(fixture.join("site.yml")).unwrap();
    let dir_text = dir.to_str().unwrap();
    let run = with_controller(run, &core, &collections)
        .playbook(&site)
        .inventory("localhost ansible_connection=local\n")
        .args(&["-e", &format!("d={dir_text}")]);
    let out = run.run();
    out.assert_code(0);
    assert_eq!(
        out.recap("localhost"),
        Recap {
            ignored: 6,
            ..crate::support::run::recap(19, 8)
        },
        "{}",
        out.stdout
    );
    let mut got: serde_json::Map<String, Value> =
        crate::everyday_modules::results(&out).into_iter().collect();
    let facts = out
        .stdout
        .split("TASK [mount facts]")
        .nth(1)
        .and_then(|rest| rest.split("PLAY RECAP").next())
        .expect("the mount facts task");
    let facts: Value =
        serde_json::from_str(&facts[facts.find('{').unwrap()..=facts.rfind('}').unwrap()]).unwrap();
    got.insert("mount_facts".into(), facts["msg"].clone());
    let recorded = std::fs::read_to_string(fixture.join("expected-local.json"))
        .unwrap()
        .replace("DIR", dir_text);
    let want: serde_json::Map<String, Value> = serde_json::from_str(&recorded).unwrap();
    assert_eq!(got.len(), want.len(), "{}", out.stdout);
    for (task, expected) in want {
        let mut expected = expected;
        let mut value = got[&task].clone();
        portable(&mut expected);
        portable(&mut value);
        assert_eq!(value, expected, "task {task}\n{}", out.stdout);
    }
    // What the clones hold: the tag checked out after the forced reset, the shallow
    // branch with one commit, a bare mirror; nothing for check mode or clone: false.
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .output()
            .expect("git");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let clone = dir.join("clone");
    assert_eq!(
        std::fs::read_to_string(clone.join("a.txt")).unwrap(),
        "two\n"
    );
    let shallow = dir.join("shallow");
    assert_eq!(
        git(&[
            "-C",
            shallow.to_str().unwrap(),
            "rev-list",
            "--count",
            "HEAD"
        ]),
        "1"
    );
    assert!(dir.join("mirror.git/HEAD").is_file());
    assert!(!dir.join("never").exists());
}

/// ansible.posix's authorized_key and mount (`state: present` into the test's own fstab:
/// nothing is mounted) and community.general's archive, from ansible 14.5.0's collections,
/// against what ansible-playbook 2.21.5 registered (tests/python_modules/collection_rows/).
#[test]
fn authorized_key_mount_and_archive_register_what_ansible_registers() {
    let test = "authorized_key_mount_and_archive_register_what_ansible_registers";
    let Some((core, collections)) = controller_side(test) else {
        return;
    };
    let fixture = Path::new(FIXTURES).join("collection_rows");
    let run = TestRun::new();
    let dir = run.dir().join("d");
    std::fs::create_dir_all(&dir).unwrap();
    let dir_text = dir.to_str().unwrap();
    let site = std::fs::read_to_string(fixture.join("site.yml")).unwrap();
    let run = with_controller(run, &core, &collections)
        .playbook(&site)
        .inventory("localhost ansible_connection=local\n")
        .args(&["-e", &format!("d={dir_text}")]);
    let out = run.run();
    out.assert_code(0);
    assert_eq!(
        out.recap("localhost"),
        crate::support::run::recap(9, 5),
        "{}",
        out.stdout
    );
    let got: serde_json::Map<String, Value> =
        crate::everyday_modules::results(&out).into_iter().collect();
    let recorded = std::fs::read_to_string(fixture.join("expected-local.json"))
        .unwrap()
        .replace("DIR", dir_text);
    let want: serde_json::Map<String, Value> = serde_json::from_str(&recorded).unwrap();
    // archive lists files in the directory's own order, which differs between filesystems.
    let sorted = |mut v: Value| {
        if let Some(Value::Array(list)) = v.get_mut("archived") {
            list.sort_by_key(|x| x.to_string());
        }
        v
    };
    assert_eq!(got.len(), want.len(), "{}", out.stdout);
    for (task, expected) in want {
        assert_eq!(
            sorted(got[&task].clone()),
            sorted(expected),
            "task {task}\n{}",
            out.stdout
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("ak/authorized_keys")).unwrap(),
        "from=\"10.0.0.1\" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPl6M6n0ys/6f0HFKdgIj0V5O+9Bl8RSmjBXDaGqZZRe k@test\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("fstab")).unwrap(),
        "/dev/sdz1 /mnt/data ext4 noatime 0 0\n"
    );
    let listed = std::process::Command::new("tar")
        .arg("tzf")
        .arg(dir.join("tree.tar.gz"))
        .output()
        .expect("tar");
    let mut names: Vec<&str> = std::str::from_utf8(&listed.stdout)
        .unwrap()
        .lines()
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["tree/a.txt", "tree/b.txt"],
        "as Ansible's archive held"
    );
}

/// package_facts reads apt natively (with the system's PATH, whatever the task's
/// `environment` says: Ansible's apt manager reads python-apt), and any other manager
/// list runs ansible-core's own module, which probes managers as Ansible does: `apk`,
/// missing here, is "not usable" with Ansible's warning and failure (checked against
/// ansible-playbook 2.21.5 on the same playbook; its package_facts target greps them).
#[test]
fn package_facts_reads_apt_and_probes_other_managers_as_ansible() {
    let test = "package_facts_reads_apt_and_probes_other_managers_as_ansible";
    let Some((core, collections)) = controller_side(test) else {
        return;
    };
    if Path::new("/usr/bin/apk").exists() || !Path::new("/usr/bin/dpkg-query").exists() {
        eprintln!("{test}: skipped: needs a Debian controller without apk");
        return;
    }
    let site = "- hosts: localhost
  gather_facts: false
  tasks:
    - package_facts:
        manager: apk
      register: unusable
      failed_when: false
    - package_facts:
      environment:
        PATH: \"${PATH}:/nonexistent\"
    - assert:
        that:
          - unusable.msg == expected
          - unusable is not changed
          - unusable.warnings[0] is search('^Requested package manager apk was not usable by this module: Failed to find required executable \"apk\"')
          - ansible_facts.packages['dpkg'][0].source == 'apt'
      vars:
        expected: >-
          Could not detect a supported package manager from the following list: ['apk'],
          or the required Python library is not installed. Check warnings for details.
";
    let out = with_controller(TestRun::new(), &core, &collections)
        .playbook(site)
        .inventory("localhost ansible_connection=local\n")
        .run();
    out.assert_code(0);
    assert_eq!(
        out.recap("localhost"),
        crate::support::run::recap(3, 0),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr
            .contains("[WARNING]: Requested package manager apk was not usable by this module"),
        "{}",
        out.stderr
    );
}
