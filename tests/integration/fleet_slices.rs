//! `--slice K/N` and `--merge-recaps`: a fleet split over several runs (as several
//! controllers of a CI matrix would run it) reaches every host exactly once, and the
//! slices' `--json` logs merge into the recap and exit code one unsliced run gives.

use std::collections::BTreeSet;

use crate::support::hosts::LocalHosts;
use crate::support::run::TestRun;

const NAMES: [&str; 12] = [
    "h01", "h02", "h03", "h04", "h05", "h06", "h07", "h08", "h09", "h10", "h11", "h12",
];

/// Each host notes its name in its own directory; h07 fails its second task.
const PLAY: &str = r#"- hosts: all
  gather_facts: false
  tasks:
    - name: note
      shell: echo {{ inventory_hostname }} >> ~/{{ inventory_hostname }}/ran
    - name: h07 fails
      fail:
        msg: h07 is broken
      when: inventory_hostname == 'h07'
    - name: skipped elsewhere
      debug:
        msg: only h01
      when: inventory_hostname == 'h01'
"#;

fn run(hosts: &LocalHosts, args: &[&str]) -> crate::support::run::Outcome {
    TestRun::new()
        .playbook(PLAY)
        .local_hosts(hosts)
        .args(args)
        .run()
}

/// The PLAY RECAP section of a human run (from its banner to the end).
fn recap_section(stdout: &str) -> &str {
    let start = stdout.find("PLAY RECAP").expect("a PLAY RECAP");
    &stdout[start..]
}

#[test]
fn slices_reach_every_host_once_and_their_logs_merge_into_one_runs_recap() {
    let whole = LocalHosts::new(&NAMES);
    let unsliced = run(&whole, &[]);
    unsliced.assert_code(2);

    let hosts = LocalHosts::new(&NAMES);
    let logs = tempfile::tempdir().unwrap();
    let mut reached = Vec::new();
    let mut log_paths = Vec::new();
    for k in 1..=3 {
        let slice = format!("{k}/3");
        let listed = run(&hosts, &["--slice", &slice, "--list-hosts"]);
        listed.assert_code(0);
        let listed: BTreeSet<String> = listed
            .stdout
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with('h') && l.len() == 3)
            .map(str::to_string)
            .collect();

        let out = run(&hosts, &["--slice", &slice, "--json"]);
        let ran: BTreeSet<String> = NAMES
            .iter()
            .filter(|n| hosts.dir(n).join("ran").exists())
            .map(|n| n.to_string())
            .filter(|n| !reached.contains(n))
            .collect();
        assert_eq!(ran, listed, "slice {slice} ran what --list-hosts listed");
        // The slice with the broken host exits as a run with it does.
        out.assert_code(if ran.contains("h07") { 2 } else { 0 });
        reached.extend(ran);
        let path = logs.path().join(format!("slice-{k}.jsonl"));
        std::fs::write(&path, &out.stdout).unwrap();
        log_paths.push(path.display().to_string());
    }
    reached.sort();
    assert_eq!(reached, NAMES, "every host in exactly one slice");
    for name in NAMES {
        let ran = std::fs::read_to_string(hosts.dir(name).join("ran")).unwrap();
        assert_eq!(ran, format!("{name}\n"), "{name} ran once");
    }

    let mut args = vec!["--merge-recaps"];
    args.extend(log_paths.iter().map(String::as_str));
    let merged = TestRun::new().args(&args).run();
    merged.assert_code(2);
    assert_eq!(
        merged.stdout,
        format!("\n{}", recap_section(&unsliced.stdout)),
        "the merged recap is the unsliced run's"
    );
    assert_eq!(merged.stderr, "");
}

#[test]
fn bad_slices_and_unfinished_logs_are_refused_with_the_fix() {
    let hosts = LocalHosts::new(&["h1"]);
    let out = run(&hosts, &["--slice", "4/3"]);
    // A bad flag value is a usage error, as argparse's.
    out.assert_code(2);
    assert!(
        out.stderr.contains(
            "--slice 4/3: K is out of range; give K/N with 1 <= K <= N, e.g. --slice 2/4 for the second of four slices"
        ),
        "{}",
        out.stderr
    );

    let unfinished =
        TestRun::new().file("cut.jsonl", "{\"event\":\"play_start\",\"play\":\"p\"}\n");
    let path = unfinished.dir().join("cut.jsonl").display().to_string();
    let out = unfinished.args(&["--merge-recaps", &path]).run();
    out.assert_code(1);
    assert_eq!(
        out.stderr,
        format!(
            "ERROR! --merge-recaps {path}: no \"recap\" event, so that run did not finish (or the file is not a `turbo-play --json` log); rerun it, or leave it out to merge the others\n"
        )
    );
    assert_eq!(out.stdout, "");
}
