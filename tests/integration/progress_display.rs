//! The progress display for many hosts, on a real terminal (a pty): it shows the fleet's
//! line, every Ansible line still arrives whole and in order, and a piped run shows none
//! of it.

use crate::support::hosts::LocalHosts;
use crate::support::run::TestRun;

/// Runs the program that follows on a new pty, copying what it draws to stdout, and exits
/// with its code.
const ON_A_PTY: &str =
    "import os, pty, sys; sys.exit(os.waitstatus_to_exitcode(pty.spawn(sys.argv[1:])))";

const PLAY: &str = r#"- hosts: all
  gather_facts: false
  tasks:
    - name: slow enough to be drawn
      shell: sleep 0.4
      changed_when: false
    - name: h03 fails
      fail:
        msg: broken
      when: inventory_hostname == 'h03'
"#;

#[test]
fn many_hosts_on_a_terminal_see_the_fleet_line_and_every_line_whole() {
    let names: Vec<String> = (1..=60).map(|i| format!("h{i:02}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let hosts = LocalHosts::new(&names);

    let piped_run = TestRun::new()
        .playbook(PLAY)
        .local_hosts(&hosts)
        .args(&["-f", "60"]);
    let piped = piped_run.run();
    piped.assert_code(2);
    assert!(!piped.stdout.contains("hosts: "), "{}", piped.stdout);
    assert!(!piped.stderr.contains("results"), "{}", piped.stderr);

    let tty_run = TestRun::new()
        .playbook(PLAY)
        .local_hosts(&hosts)
        .args(&["-f", "60"])
        .through(&["python3", "-c", ON_A_PTY]);
    let on_tty = tty_run.run();
    on_tty.assert_code(2);
    let screen = on_tty.stdout.replace("\r\n", "\n");
    for fleet in [
        " running, 0 failed, 0 unreachable · TASK [slow enough to be drawn]",
        " running, 1 failed, 0 unreachable · TASK [h03 fails]",
    ] {
        assert!(
            screen.contains(fleet),
            "the fleet line {fleet:?} was never drawn:\n{screen}"
        );
    }
    // Each of the piped run's lines is on the terminal whole, in the same order (results
    // of one task may come in another order on each run: compare those as sets).
    let mut from = 0;
    // The error block's Origin names each run's own playbook.
    let piped_stdout = piped.stdout.replace(
        piped_run.dir().to_str().unwrap(),
        tty_run.dir().to_str().unwrap(),
    );
    for line in piped_stdout
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("ok: [") && !l.starts_with("skipping: ["))
    {
        let whole = format!("{line}\n");
        let found = screen[from..].find(&whole).unwrap_or_else(|| {
            panic!("{line:?} is not on the terminal whole after byte {from}:\n{screen}")
        });
        let at = from + found;
        assert!(
            starts_a_line(&screen[..at]),
            "{line:?} starts mid-line:\n{:?}",
            &screen[at.saturating_sub(80)..at + whole.len()]
        );
        from = at + whole.len();
    }
    for name in &names {
        assert!(
            screen.contains(&format!("ok: [{name}]\n")),
            "ok: [{name}] missing:\n{screen}"
        );
    }
}

/// Whether text written after `before` starts at the left edge: after a line break, a
/// carriage return, or a cursor movement or erase (`ESC [ n X`) of the display's.
fn starts_a_line(before: &str) -> bool {
    if before.is_empty() || before.ends_with('\n') || before.ends_with('\r') {
        return true;
    }
    let Some(escape) = before.rfind("\x1b[") else {
        return false;
    };
    let mut sequence = before[escape + 2..].chars();
    let last = sequence.next_back();
    last.is_some_and(|c| c.is_ascii_alphabetic()) && sequence.all(|c| c.is_ascii_digit())
}
