//! The console reporter's tests: events in, Ansible-shaped text out.

use super::*;
use crate::report::events::TaskBanner;

fn render(events: &[Event], verbosity: u8) -> String {
    let mut r = ConsoleReporter::new(Vec::new(), Vec::new(), verbosity, false, false);
    for e in events {
        r.handle(e);
    }
    String::from_utf8(r.into_inner()).unwrap()
}

fn result(status: Status, item: Option<&str>, data: Value) -> Event {
    Event::HostResult(HostResult {
        host: "web1".into(),
        status,
        item: item.map(str::to_string),
        data: data.as_object().cloned().unwrap_or_default(),
        ignored: false,
        verbose_always: false,
        origin: None,
    })
}

/// On a terminal the bar exists (hidden at first, then on stderr): every line must
/// still reach the reporter's own output, the same as when piped.
#[test]
fn a_progress_bar_never_swallows_or_moves_lines() {
    let mut events = vec![
        Event::PlayStart {
            name: "all".into(),
            check_mode: false,
            free: false,
        },
        Event::TaskStart(TaskBanner {
            name: "Loop".into(),
            hosts: 1,
            ..TaskBanner::default()
        }),
        Event::ItemsPlanned {
            host: "web1".into(),
            count: 60,
        },
    ];
    for i in 0..60 {
        let item = i.to_string();
        events.push(result(Status::Ok, Some(&item), serde_json::json!({})));
    }
    let mut with_bar = ConsoleReporter::new(Vec::new(), Vec::new(), 0, false, true);
    for e in &events {
        with_bar.handle(e);
    }
    let with_bar = String::from_utf8(with_bar.into_inner()).unwrap();
    assert_eq!(with_bar, render(&events, 0));
    assert!(with_bar.contains("ok: [web1] => (item=59)\n"), "{with_bar}");
}

#[test]
fn prints_ansible_shapes() {
    let out = render(
        &[
            Event::PlayStart {
                name: "all".into(),
                check_mode: false,
                free: false,
            },
            Event::TaskStart(TaskBanner {
                name: "Create files".into(),
                hosts: 1,
                ..TaskBanner::default()
            }),
            result(
                Status::Changed,
                Some("1"),
                serde_json::json!({"changed": true}),
            ),
            result(Status::Ok, None, serde_json::json!({})),
            result(
                Status::Failed,
                None,
                serde_json::json!({"rc": 1, "msg": "The command exited with a non-zero return code."}),
            ),
            Event::Recap(vec![HostStats {
                host: "web1".into(),
                ok: 2,
                changed: 1,
                failed: 1,
                ..Default::default()
            }]),
        ],
        0,
    );
    let expected_play = format!("PLAY [all] {}", "*".repeat(69));
    assert!(out.contains(&expected_play), "{out}");
    assert!(out.contains("TASK [Create files] ****"), "{out}");
    assert!(out.contains("changed: [web1] => (item=1)\n"), "{out}");
    assert!(out.contains("ok: [web1]\n"), "{out}");
    assert!(
        out.contains(r#"fatal: [web1]: FAILED! => {"msg": "The command exited with a non-zero return code.", "rc": 1}"#),
        "{out}"
    );
    assert!(
        out.contains("web1                       : ok=2    changed=1    unreachable=0    failed=1    skipped=0    rescued=0    ignored=0"),
        "{out}"
    );
}

#[test]
fn diffs_print_before_the_result_and_leave_the_dump() {
    let data = serde_json::json!({"changed": true, "diff": {"before": "old\n", "after": "new\n", "before_header": "/x", "after_header": "/x"}});
    let out = render(&[result(Status::Changed, None, data)], 1);
    assert!(
        out.starts_with("--- before: /x\n+++ after: /x\n@@ -1 +1 @@\n-old\n+new\n"),
        "{out}"
    );
    assert!(
        out.contains("changed: [web1] => {\"changed\": true}"),
        "{out}"
    );
}

#[test]
fn status_keys_are_left_out_and_verbose_failures_are_indented() {
    let out = render(
        &[result(
            Status::Failed,
            None,
            serde_json::json!({"failed": true, "msg": "x", "changed": false}),
        )],
        0,
    );
    assert_eq!(
        out,
        "fatal: [web1]: FAILED! => {\"changed\": false, \"msg\": \"x\"}\n"
    );
    let mut e = result(
        Status::Failed,
        None,
        serde_json::json!({"failed": true, "assertion": "a", "msg": "Assertion failed"}),
    );
    if let Event::HostResult(r) = &mut e {
        r.verbose_always = true;
    }
    let out = render(&[e], 0);
    assert_eq!(
        out,
        "fatal: [web1]: FAILED! => {\n    \"assertion\": \"a\",\n    \"msg\": \"Assertion failed\"\n}\n"
    );
    let out = render(
        &[result(
            Status::Skipped,
            None,
            serde_json::json!({"skipped": true, "skip_reason": "r"}),
        )],
        1,
    );
    assert_eq!(out, "skipping: [web1] => {\"skip_reason\": \"r\"}\n");
    // Ansible's item skip line ends in a space; internal keys never show.
    let item = |status| {
        result(
            status,
            Some("b"),
            serde_json::json!({"item": "b", "_ansible_item_label": "b"}),
        )
    };
    assert_eq!(
        render(&[item(Status::Skipped)], 0),
        "skipping: [web1] => (item=b) \n"
    );
    assert_eq!(
        render(&[item(Status::Ok)], 1),
        "ok: [web1] => (item=b) => {\"item\": \"b\"}\n"
    );
    assert_eq!(
        render(&[item(Status::Skipped)], 1),
        "skipping: [web1] => (item=b)  => {\"item\": \"b\"}\n"
    );
}

#[test]
fn warnings_go_to_stderr_once_and_leave_the_dump() {
    let data = serde_json::json!({
        "changed": false,
        "warnings": ["careful"],
        "deprecations": [{"msg": "old", "version": "2.99", "collection_name": "ansible.legacy",
            "deprecator": {"resolved_name": "ansible.legacy.m", "type": "module"}}],
    });
    let events = [
        result(Status::Ok, None, data.clone()),
        result(Status::Ok, None, data),
        Event::Warning("careful".into()),
        Event::Warning("new".into()),
    ];
    let mut r = ConsoleReporter::new(Vec::new(), Vec::new(), 1, false, false);
    for e in &events {
        r.handle(e);
    }
    let (out, err) = r.into_parts();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "ok: [web1] => {\"changed\": false}\nok: [web1] => {\"changed\": false}\n"
    );
    assert_eq!(
        String::from_utf8(err).unwrap(),
        "[WARNING]: careful\n\
         [WARNING]: Deprecation warnings can be disabled by setting `deprecation_warnings=False` in ansible.cfg.\n\
         [DEPRECATION WARNING]: old. This feature will be removed from module 'm' in collection 'ansible.legacy' version 2.99.\n\
         [WARNING]: new\n"
    );
    let mut quiet = ConsoleReporter::new(Vec::new(), Vec::new(), 0, false, false)
        .with_deprecation_warnings(false);
    quiet.handle(&events[0]);
    let (out, err) = quiet.into_parts();
    assert_eq!(String::from_utf8(out).unwrap(), "ok: [web1]\n");
    assert_eq!(String::from_utf8(err).unwrap(), "[WARNING]: careful\n");
}

#[test]
fn handlers_have_their_own_banner() {
    let out = render(
        &[Event::HandlerStart(TaskBanner {
            name: "restart web".into(),
            hosts: 1,
            ..TaskBanner::default()
        })],
        0,
    );
    assert_eq!(
        out,
        format!("\nRUNNING HANDLER [restart web] {}\n", "*".repeat(50))
    );
}

#[test]
fn included_lines_read_as_ansible() {
    let out = render(
        &[
            Event::Included {
                file: "/srv/pb/setup.yml".into(),
                hosts: vec!["web1".into(), "web2".into()],
                item: None,
            },
            Event::Included {
                file: "/srv/pb/item.yml".into(),
                hosts: vec!["web1".into()],
                item: Some("a".into()),
            },
        ],
        0,
    );
    assert_eq!(
        out,
        "included: /srv/pb/setup.yml for web1, web2\nincluded: /srv/pb/item.yml for web1 => (item=a)\n"
    );
}

#[test]
fn retries_read_as_ansible() {
    let out = render(
        &[Event::Retry {
            host: "web1".into(),
            task: "wait".into(),
            item: None,
            retries_left: 2,
        }],
        0,
    );
    assert_eq!(out, "FAILED - RETRYING: [web1]: wait (2 retries left).\n");
}

#[test]
fn debug_results_are_indented_json() {
    let mut e = result(Status::Ok, None, serde_json::json!({"msg": "hi"}));
    if let Event::HostResult(r) = &mut e {
        r.verbose_always = true;
    }
    let out = render(&[e], 0);
    assert!(
        out.contains("ok: [web1] => {\n    \"msg\": \"hi\"\n}"),
        "{out}"
    );
}

/// A debug of a variable in a loop shows the variable alone: Ansible's callback hides the
/// loop's own keys as it hides the status keys.
#[test]
fn debug_var_in_a_loop_hides_the_loop_keys() {
    let mut e = result(
        Status::Ok,
        Some("a"),
        serde_json::json!({"item": "a", "ansible_loop_var": "item", "ansible_index_var": "i",
            "i": 0, "ansible_loop": {"index": 1}, "changed": false}),
    );
    if let Event::HostResult(r) = &mut e {
        r.verbose_always = true;
        r.origin = Some(crate::report::task_error::TaskOrigin {
            controller_action: false,
            location: crate::playbook::Location {
                file: std::path::Path::new("site.yml").into(),
                line: 3,
                column: 7,
            },
            action: "ansible.builtin.debug".into(),
            cause: None,
        });
    }
    let out = render(&[e], 0);
    assert_eq!(
        out,
        "ok: [web1] => (item=a) => {\n    \"i\": 0,\n    \"item\": \"a\"\n}\n"
    );
}

fn with_options(events: &[Event], display: DisplayOptions) -> (String, String) {
    let mut r = ConsoleReporter::new(Vec::new(), Vec::new(), 0, false, false).with_display(display);
    for e in events {
        r.handle(e);
    }
    let (out, err) = r.into_parts();
    (
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn task(name: &str, key: usize, host: Option<&str>) -> Event {
    Event::TaskStart(TaskBanner {
        name: name.into(),
        hosts: 1,
        key,
        check_mode: false,
        host: host.map(str::to_string),
    })
}

fn on(host: &str, event: Event) -> Event {
    match event {
        Event::HostResult(mut r) => {
            r.host = host.into();
            Event::HostResult(r)
        }
        other => other,
    }
}

/// ansible-core 2.21.5's default callback: with ok (or skipped) results hidden, a
/// banner shows with the first result it heads, and not at all for a task whose
/// results are all hidden.
#[test]
fn hidden_results_take_their_banner_with_them() {
    let display = DisplayOptions {
        ok_hosts: false,
        skipped_hosts: false,
        ..DisplayOptions::default()
    };
    let (out, _) = with_options(
        &[
            task("quiet", 1, None),
            result(Status::Ok, None, serde_json::json!({})),
            result(Status::Skipped, None, serde_json::json!({})),
            task("loud", 2, None),
            result(Status::Ok, None, serde_json::json!({})),
            result(Status::Changed, None, serde_json::json!({})),
        ],
        display,
    );
    assert_eq!(
        out,
        format!("\nTASK [loud] {}\nchanged: [web1]\n", "*".repeat(68))
    );
}

/// Under `free`, each result goes under its own task's banner, printed anew whenever
/// the task changes (ansible-core 2.21.5's `callback_default.out.free.stdout`).
#[test]
fn free_results_go_under_their_own_tasks_banner() {
    let free = Event::PlayStart {
        name: "p".into(),
        check_mode: false,
        free: true,
    };
    let (out, _) = with_options(
        &[
            free,
            task("one", 1, Some("a")),
            task("one", 1, Some("b")),
            on("a", result(Status::Changed, None, serde_json::json!({}))),
            task("two", 2, Some("a")),
            on("b", result(Status::Changed, None, serde_json::json!({}))),
            on("a", result(Status::Changed, None, serde_json::json!({}))),
        ],
        DisplayOptions::default(),
    );
    let banner = |t: &str| format!("TASK [{t}] {}", "*".repeat(79 - t.len() - 7));
    assert_eq!(
        out.split('\n')
            .filter(|l| !l.is_empty())
            .skip(1)
            .collect::<Vec<_>>(),
        [
            banner("one").as_str(),
            "changed: [a]",
            "changed: [b]",
            banner("two").as_str(),
            "changed: [a]"
        ]
    );
}

/// `display_failed_stderr`: the error block and the failure go to stderr,
/// `...ignoring` stays; a loop's failure is said after its items, and debug's as
/// the task's own result.
#[test]
fn failures_go_to_stderr_and_loops_ignore_once() {
    let mut item = result(Status::Failed, Some("x"), serde_json::json!({"msg": "no"}));
    if let Event::HostResult(r) = &mut item {
        r.ignored = true;
    }
    let summary = Event::LoopFailed(HostResult {
        host: "web1".into(),
        status: Status::Failed,
        item: None,
        data: serde_json::json!({"msg": "One or more items failed"})
            .as_object()
            .cloned()
            .unwrap(),
        ignored: true,
        verbose_always: false,
        origin: None,
    });
    let events = [task("t", 1, None), item, summary];
    let (out, err) = with_options(&events, DisplayOptions::default());
    assert!(
        out.ends_with(
            "failed: [web1] (item=x) => {\"msg\": \"no\"}\nfatal: [web1]: FAILED! => {\"msg\": \"One or more items failed\"}\n...ignoring\n"
        ),
        "{out}"
    );
    assert_eq!(err, "");
    let (out, err) = with_options(
        &events,
        DisplayOptions {
            failed_stderr: true,
            ..DisplayOptions::default()
        },
    );
    assert!(out.ends_with("*\n...ignoring\n"), "{out}");
    assert_eq!(
        err,
        "failed: [web1] (item=x) => {\"msg\": \"no\"}\nfatal: [web1]: FAILED! => {\"msg\": \"One or more items failed\"}\n"
    );
}

/// `check_mode_markers`: `DRY RUN` around a `--check` run, `[CHECK MODE]` on the plays
/// and tasks that run in check mode.
#[test]
fn check_mode_markers_mark_the_run_plays_and_tasks() {
    let events = [
        Event::RunStart { check: true },
        Event::PlayStart {
            name: "p".into(),
            check_mode: true,
            free: false,
        },
        Event::TaskStart(TaskBanner {
            name: "t".into(),
            hosts: 1,
            key: 1,
            check_mode: true,
            host: None,
        }),
        Event::Recap(Vec::new()),
    ];
    let (out, _) = with_options(
        &events,
        DisplayOptions {
            check_mode_markers: true,
            ..DisplayOptions::default()
        },
    );
    let titles: Vec<&str> = out
        .lines()
        .filter(|l| l.ends_with('*'))
        .map(|l| l.trim_end_matches('*').trim_end())
        .collect();
    assert_eq!(
        titles,
        [
            "DRY RUN",
            "PLAY [p] [CHECK MODE]",
            "TASK [t] [CHECK MODE]",
            "PLAY RECAP",
            "DRY RUN"
        ]
    );
    let (out, _) = with_options(&events, DisplayOptions::default());
    assert!(
        !out.contains("DRY RUN") && !out.contains("CHECK MODE"),
        "{out}"
    );
}
