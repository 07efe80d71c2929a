//! setup's local facts (`fact_path`, `ansible_local`) as ansible-playbook 2.21.5 gathers
//! them: JSON files, INI files (configparser's DEFAULT and interpolation, its errors),
//! fact scripts that print JSON or fail, a dangling link, hidden and non-`.fact` files
//! left out, the `local` subset excluded, a missing fact_path. Ansible's side is recorded:
//! fixtures/local_facts/record.sh ran site.yml on the local connection and kept what it
//! registered and warned, with the run's directory written DIR.

use std::path::Path;

use crate::support::run::TestRun;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/integration/fixtures/local_facts"
);

fn expected(name: &str) -> String {
    let path = Path::new(FIXTURE).join("expected").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .map(|ids| ids.split_whitespace().next() == Some("0"))
        })
        .unwrap_or(false)
}

#[test]
fn local_facts_are_gathered_as_ansible_gathers_them() {
    let run = TestRun::new()
        .playbook(&std::fs::read_to_string(Path::new(FIXTURE).join("site.yml")).unwrap());
    let dir = run.dir().to_str().unwrap().to_string();
    let run = run
        .inventory("localhost ansible_connection=local\n")
        .args(&["-e", &format!("dir={dir}")]);
    let out = run.run();
    out.assert_code(0);
    let read = |name: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(Path::new(&dir).join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}\n{}\n{}", out.stdout, out.stderr));
        serde_json::from_str(&text.replace(&dir, "DIR")).unwrap()
    };
    let mut want: serde_json::Value = serde_json::from_str(&expected("gathered.json")).unwrap();
    if !is_root() {
        // Recorded as root; anyone else reads a 0000 file as empty, as Ansible does.
        want["ansible_facts"]["ansible_local"]["unreadable"] = serde_json::json!({});
    }
    assert_eq!(read("gathered.json"), want, "{}", out.stderr);
    let want: serde_json::Value = serde_json::from_str(&expected("others.json")).unwrap();
    assert_eq!(read("others.json"), want);
    let warnings: Vec<String> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("[WARNING]: "))
        .map(|l| l.replace(&dir, "DIR"))
        .collect();
    assert_eq!(
        warnings,
        expected("warnings.txt").lines().collect::<Vec<_>>()
    );
}
