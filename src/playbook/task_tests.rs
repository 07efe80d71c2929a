use super::super::*;
use crate::playbook::TemplatedSwitches;
use crate::playbook::test_support::text::*;
use crate::template::Templar;
use serde_json::{Value as Json, json};

#[test]
fn task_keywords() {
    let t = task(
        "
name: Many
ansible.builtin.copy:
  content: x
  dest: /tmp/{{ item }}
  mode: 0644
with_items:
  - [1, 2]
  - 3
when:
  - a == 1
  - true
register: out
ignore_errors: yes
vars:
  v: 1
loop_control:
  loop_var: f
  label: '{{ f }}'
tags: [x]
notify: restart
changed_when: false
",
    );
    assert_eq!(t.action, "ansible.builtin.copy");
    assert_eq!(t.display_name(), "Many");
    assert_eq!(t.args["mode"], json!(420));
    assert_eq!(
        t.loop_spec,
        Some(LoopSpec::Items {
            value: json!([[1, 2], 3]),
            flatten: true
        })
    );
    assert_eq!(t.loop_var, "f");
    assert_eq!(t.when, ["a == 1", "True"]);
    assert_eq!(t.register.as_deref(), Some("out"));
    assert!(t.ignore_errors);
    assert_eq!(Json::Object(t.vars), json!({"v": 1}));
    assert!(t.unsupported.is_empty());
    assert_eq!(t.notify, ["restart"]);
    assert_eq!(t.changed_when, Some(vec!["False".to_string()]));
    assert_eq!(t.failed_when, None);
    assert_eq!(t.until, None);

    let t = task("file: path=/x state=absent\nloop: \"{{ things }}\"\nwhen: x");
    assert_eq!(
        t.loop_spec,
        Some(LoopSpec::Items {
            value: json!("{{ things }}"),
            flatten: false
        })
    );
    assert_eq!(t.when, ["x"]);
    assert_eq!(t.display_name(), "file");
}

#[test]
fn control_keywords() {
    let t = task(
        "
command: /bin/true
register: r
changed_when:
  - r.rc == 0
  - \"'x' in r.stdout\"
failed_when: r.rc > 1
until: r is succeeded
retries: 5
delay: '{{ wait }}'
",
    );
    assert_eq!(
        t.changed_when,
        Some(vec!["r.rc == 0".to_string(), "'x' in r.stdout".to_string()])
    );
    assert_eq!(t.failed_when, Some(vec!["r.rc > 1".to_string()]));
    assert_eq!(
        t.until,
        Some(Until {
            conditions: vec!["r is succeeded".into()],
            retries: Some(json!(5)),
            delay: Some(json!("{{ wait }}")),
        })
    );
    assert!(t.unsupported.is_empty());
    let t = task(
        "ping:
until: x
",
    );
    assert_eq!(
        t.until,
        Some(Until {
            conditions: vec!["x".into()],
            retries: None,
            delay: None,
        })
    );
    // Without `until`, retries and delay mean nothing (as in Ansible).
    assert_eq!(
        task(
            "ping:
retries: 2
"
        )
        .until,
        None
    );
    assert_eq!(
        task(
            "ping:
failed_when: false
"
        )
        .failed_when,
        Some(vec!["False".to_string()])
    );
}

#[test]
fn control_keyword_errors() {
    let play = |tasks: &str| format!("- hosts: all\n  tasks:\n{tasks}");
    assert_eq!(
        message_at(&play("    - ping:\n      failed_when: {rc: 1}\n")),
        (
            "failed_when must be a condition or a list of conditions, got a mapping".into(),
            4,
            20
        )
    );
    assert_eq!(
        message_at(&play("    - ping:\n      until: [[a]]\n")),
        (
            "until must be a condition or a list of conditions, got a list".into(),
            4,
            15
        )
    );
    assert_eq!(
        message_at(&play("    - ping:\n      until: x\n      retries: many\n")),
        (
            "retries must be a non-negative integer, got 'many'".into(),
            5,
            16
        )
    );
    assert_eq!(
        message_at(&play("    - ping:\n      until: x\n      delay: -1\n")),
        (
            "delay must be a non-negative number of seconds, got '-1'".into(),
            5,
            14
        )
    );
}

#[test]
fn handlers_and_meta() {
    let pb = ok("
- hosts: all
  force_handlers: yes
  tasks:
    - command: x
      notify: [restart web, web changed]
    - meta: flush_handlers
  handlers:
    - name: restart web
      command: restart
    - name: reload
      command: reload
      listen:
        - web changed
      notify: restart web
");
    let play = &pb.plays[0];
    assert!(play.force_handlers);
    assert_eq!(play.tasks[0].notify, ["restart web", "web changed"]);
    assert_eq!(play.tasks[1].module.name(), "meta");
    assert_eq!(play.tasks[1].args["_raw_params"], json!("flush_handlers"));
    assert_eq!(play.handlers.len(), 2);
    assert_eq!(play.handlers[1].listen, ["web changed"]);
    assert_eq!(play.handlers[1].notify, ["restart web"]);
    // A templated name is only known at run time.
    ok("- hosts: all\n  tasks:\n    - ping:\n      notify: '{{ h }}'\n");
}

#[test]
fn with_sequence_forms() {
    let t = task("debug: msg={{ item }}\nwith_sequence: start=1 end=5 format=%02d");
    assert_eq!(
        t.loop_spec,
        Some(LoopSpec::Sequence("start=1 end=5 format=%02d".into()))
    );
    let t = task("debug: msg={{ item }}\nwith_sequence:\n  start: 1\n  end: 3");
    assert_eq!(
        t.loop_spec,
        Some(LoopSpec::Sequence("start=1 end=3".into()))
    );
}

#[test]
fn with_lookup_forms() {
    let t = task("debug: msg={{ item.key }}\nwith_dict: \"{{ users }}\"");
    assert_eq!(
        t.loop_spec,
        Some(LoopSpec::Lookup {
            name: "dict".into(),
            terms: Json::from("{{ users }}"),
        })
    );
    let t = task("debug: msg={{ item }}\nwith_fileglob: ['a/*', 'b/*']");
    assert_eq!(
        t.loop_spec,
        Some(LoopSpec::Lookup {
            name: "fileglob".into(),
            terms: serde_json::json!(["a/*", "b/*"]),
        })
    );
    for (key, how) in [
        ("with_nested", Combinator::Nested),
        ("with_cartesian", Combinator::Nested),
        ("with_together", Combinator::Together),
        ("with_subelements", Combinator::Subelements),
        ("with_indexed_items", Combinator::IndexedItems),
    ] {
        let t = task(&format!("debug: msg=x\n{key}: [[1], [2]]"));
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Combine {
                how,
                terms: serde_json::json!([[1], [2]]),
            }),
            "{key}"
        );
    }
    assert_eq!(
        message_at("- hosts: all\n  tasks:\n    - debug: msg=x\n      with_dcit: {}\n"),
        (
            "lookup plugin 'dcit' for 'with_dcit' is not supported".into(),
            4,
            7
        )
    );
    assert_eq!(
        message_at(
            "- hosts: all\n  tasks:\n    - debug: msg=x\n      with_dict: {}\n      loop: []\n"
        )
        .0,
        "only one loop keyword per task: 'with_dict' and 'loop' both given"
    );
}

#[test]
fn no_log_and_ignore_errors_may_be_templates_decided_per_host() {
    let t = task(
        "command: x\nno_log: \"{{ 'false' if quiet is undefined else 'true' }}\"\nignore_errors: \"{{ lenient | bool }}\"",
    );
    assert_eq!(
        t.keywords.templated,
        TemplatedSwitches {
            no_log: Some("{{ 'false' if quiet is undefined else 'true' }}".into()),
            ignore_errors: Some("{{ lenient | bool }}".into()),
            ..TemplatedSwitches::default()
        }
    );
    let templar = Templar::new();
    let vars = minijinja::Value::from_serialize(serde_json::json!({"lenient": "yes"}));
    let decided = t.with_switches_decided(&templar, &vars).unwrap().unwrap();
    assert!(!decided.keywords.no_log && decided.ignore_errors);
    assert!(decided.keywords.templated.is_empty());
    let vars = minijinja::Value::from_serialize(serde_json::json!({"lenient": false, "quiet": 1}));
    let decided = t.with_switches_decided(&templar, &vars).unwrap().unwrap();
    assert!(decided.keywords.no_log && !decided.ignore_errors);
    // A fixed value on the task wins over a block's template.
    let pb = ok(
        "- hosts: all\n  tasks:\n    - block:\n        - command: x\n          ignore_errors: no\n      ignore_errors: \"{{ x }}\"\n",
    );
    let t = &pb.plays[0].tasks[0];
    assert!(t.keywords.templated.is_empty() && !t.ignore_errors);
    assert!(t.with_switches_decided(&templar, &vars).unwrap().is_none());
    // ansible-playbook 2.21: a template rendering to '' or 2 is no boolean; to None, the
    // default.
    let switch = |template: &str| {
        let t = task(&format!("command: x\nignore_errors: \"{template}\""));
        t.with_switches_decided(&templar, &vars)
            .map(|d| d.unwrap().ignore_errors)
    };
    assert_eq!(
        switch("{{ '' }}").unwrap_err(),
        "Task failed: Error processing keyword 'ignore_errors': The value '' could not be converted to 'bool'."
    );
    assert_eq!(
        switch("{{ 2 }}").unwrap_err(),
        "Task failed: Error processing keyword 'ignore_errors': The value 2 could not be converted to 'bool'."
    );
    assert_eq!(switch("{{ none }}"), Ok(false));
    assert_eq!(switch("{{ ' T ' }}"), Ok(true));
    // So is a string that is no boolean, as Ansible checks it when the task runs; so
    // are check_mode and diff, which keep the inherited value for a None.
    let t = task("command: x\nno_log: maybe\ndiff: yes.\ncheck_mode: \"{{ none }}\"");
    assert_eq!(
        t.with_switches_decided(&templar, &vars).unwrap_err(),
        "Task failed: Error processing keyword 'no_log': The value 'maybe' could not be converted to 'bool'."
    );
    let t = task("command: x\ndiff: yes.");
    assert_eq!(
        t.with_switches_decided(&templar, &vars).unwrap_err(),
        "Task failed: Error processing keyword 'diff': The value 'yes.' could not be converted to 'bool'."
    );
    let pb = ok(
        "- hosts: all\n  check_mode: true\n  tasks:\n    - command: x\n      check_mode: \"{{ none }}\"\n      diff: \"{{ flag }}\"\n",
    );
    let vars = minijinja::Value::from_serialize(serde_json::json!({"flag": "no"}));
    let decided = pb.plays[0].tasks[0]
        .with_switches_decided(&templar, &vars)
        .unwrap()
        .unwrap();
    assert_eq!(
        (decided.check_mode, decided.diff),
        (Some(true), Some(false))
    );
}

#[test]
fn run_keywords_on_tasks_blocks_and_plays() {
    let t = task(
        "command: x\nrun_once: true\ndelegate_to: \"{{ other }}\"\ndelegate_facts: yes\nno_log: true\nthrottle: 2\nenvironment:\n  A: \"{{ a }}\"",
    );
    assert_eq!(
        t.keywords,
        RunKeywords {
            run_once: true,
            delegate_to: Some("{{ other }}".into()),
            delegate_facts: true,
            environment: vec![serde_json::json!({"A": "{{ a }}"})],
            no_log: true,
            no_log_written: true,
            throttle: Some(2),
            any_errors_fatal: None,
            ignore_unreachable: false,
            templated: Default::default(),
            ..Default::default()
        }
    );
    let pb = ok(
        "- hosts: all\n  environment: {P: 1}\n  tasks:\n    - block:\n        - command: x\n          environment: {T: 3}\n      environment: \"{{ block_env }}\"\n      run_once: true\n      no_log: true\n",
    );
    let play = &pb.plays[0];
    assert_eq!(play.environment, Some(serde_json::json!({"P": 1})));
    let t = &play.tasks[0];
    assert!(t.keywords.run_once && t.keywords.no_log);
    assert_eq!(
        t.keywords.environment,
        [
            serde_json::json!("{{ block_env }}"),
            serde_json::json!({"T": 3})
        ]
    );
    assert!(play.unsupported.is_empty());
    assert_eq!(
        message_at("- hosts: all\n  tasks:\n    - command: x\n      environment: 3\n").0,
        "environment must be a mapping, got an integer"
    );
}

#[test]
fn loop_control_fields() {
    let t = task(
        "debug: msg=x\nloop: [1]\nloop_control:\n  loop_var: f\n  index_var: i\n  label: \"{{ f }}\"\n  extended: true\n  extended_allitems: false\n  pause: 0.5",
    );
    assert_eq!(t.loop_var, "f");
    assert_eq!(
        t.loop_control,
        LoopControl {
            label: Some("{{ f }}".into()),
            index_var: Some("i".into()),
            extended: true,
            extended_allitems: false,
            pause: Some(Json::from(0.5)),
            break_when: None,
            problem: None,
        }
    );
    let t = task("debug: msg=x\nloop: [1]\nloop_control:\n  break_when: item > 0");
    assert!(t.unsupported.is_empty());
    let Some(BreakWhen::Conditions(written)) = &t.loop_control.break_when else {
        panic!("{:?}", t.loop_control.break_when);
    };
    // Each condition keeps where it is written, for the error a failing one shows.
    assert_eq!(written.len(), 1);
    assert_eq!(written[0].text, "item > 0");
    assert_eq!((written[0].origin.line, written[0].origin.column), (6, 21));
    let t = task("debug: msg=x\nloop: [1]\nloop_control:\n  break_when: {a: b}");
    assert!(matches!(
        t.loop_control.break_when,
        Some(BreakWhen::NotStrings(_))
    ));
    let t = task("debug: msg=x\nloop: [1]\nloop_control:\n  pause: \"{{ p }}\"");
    assert_eq!(t.loop_control.pause, Some(Json::from("{{ p }}")));
    assert!(t.loop_control.extended_allitems);
    // Ansible refuses these when the loop runs, not at load: the task fails then.
    let problem = |control: &str| {
        task(&format!(
            "debug: msg=x\nloop: [1]\nloop_control:\n{control}"
        ))
        .loop_control
        .problem
        .unwrap_or_default()
    };
    assert_eq!(
        problem("  pause: soon"),
        "Error processing keyword 'pause': The value 'soon' could not be converted to 'float'."
    );
    assert_eq!(
        problem("  extended: maybe\n  loop_var: '0'"),
        "Error processing keyword 'extended': The value 'maybe' could not be converted to 'bool'."
    );
    assert_eq!(
        problem("  loop_var: '0'"),
        "Invalid 'loop_var': Invalid variable name '0'."
    );
    assert_eq!(
        problem("  index_var: class"),
        "Invalid 'index_var': Invalid variable name 'class'."
    );
    assert_eq!(problem("  loop_var: _x1\n  index_var: i"), "");
}

#[test]
fn task_errors() {
    let play = |tasks: &str| format!("- hosts: all\n  tasks:\n{tasks}");
    assert_eq!(
        message_at(&play("    - cpy:\n        dest: /x\n")),
        (
            "couldn't resolve module/action 'cpy'. Did you mean 'copy'?".into(),
            3,
            7
        )
    );
    assert_eq!(
        message_at(&play("    - debug: msg=x\n      whn: x\n")),
        (
            "couldn't resolve module/action 'whn'. Did you mean 'when'?".into(),
            4,
            7
        )
    );
    let e = err(&play("    - frobnicate: x\n"));
    assert_eq!(e.message, "couldn't resolve module/action 'frobnicate'");
    let help = e.help.unwrap();
    assert!(
        ["command, copy, ", "debug, "]
            .iter()
            .all(|n| help.contains(n)),
        "{help}"
    );
    assert_eq!(
        message_at(&play(
            "    - copy: content=x dest=/x\n      file: path=/x\n"
        )),
        ("conflicting action statements: copy, file".into(), 4, 7)
    );
    assert_eq!(
        message_at(&play("    - name: nothing\n")),
        ("no module/action detected in task.".into(), 3, 7)
    );
    assert_eq!(
        message_at(&play("    - rescue:\n        - ping:\n")),
        ("'rescue' needs a `block:` beside it".into(), 3, 7)
    );
    assert_eq!(
        message_at(&play("    - import_tasks: x.yml\n")),
        ("could not find or access 'x.yml'".into(), 3, 21)
    );
    assert_eq!(
        message_at(&play(
            "    - ping:\n      loop: [1]\n      with_items: [2]\n"
        )),
        (
            "only one loop keyword per task: 'loop' and 'with_items' both given".into(),
            5,
            7
        )
    );
    assert_eq!(
        message_at(&play("    - ping:\n      ignore_errors: [sometimes]\n")),
        ("ignore_errors must be a boolean, got a list".into(), 4, 22)
    );
    assert_eq!(
        message_at(&play(
            "    - ping:\n      loop_control:\n        loop_vr: x\n"
        )),
        (
            "'loop_vr' is not a valid attribute for a LoopControl".into(),
            5,
            9
        )
    );
    assert_eq!(
        message_at(&play("    - ping:\n      when: {a: 1}\n")),
        (
            "when must be a condition or a list of conditions, got a mapping".into(),
            4,
            13
        )
    );
}

/// `register:` as a mapping: each variable with its expression (or value) as written; a
/// name that is no variable name is refused at load, as Ansible refuses it.
#[test]
fn register_projections_are_read_as_written() {
    let t = task("debug: msg=x\nregister:\n  seen: _task.result\n  one: 1\n");
    assert_eq!(t.register, None);
    assert_eq!(
        t.register_projections,
        vec![
            ("seen".to_string(), Json::from("_task.result")),
            ("one".to_string(), Json::from(1)),
        ]
    );
    assert_eq!(t.registered_names(), ["seen", "one"]);
    let play = "- hosts: all\n  tasks:\n    - debug: msg=x\n      register:\n        1x: y\n";
    assert_eq!(
        message_at(play),
        (
            "Invalid 'register' specified: Invalid variable name '1x'.".into(),
            5,
            9
        )
    );
}
