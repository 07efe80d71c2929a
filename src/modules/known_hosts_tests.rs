use super::*;
use serde_json::json;
use std::path::Path;

const KEY: &str = "example.org ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIInU root@vm";

fn plan(args: Value) -> Result<Plan, String> {
    let ctx = PlanContext::new(Path::new("/"));
    let args = crate::modules::check(&KnownHosts, args);
    plan_with_salt(&args, &ctx, std::array::from_fn(|i| i as u8)).map_err(|e| e.to_string())
}

fn failure(plan: Result<Plan, String>) -> String {
    match plan.unwrap() {
        Plan::Done(out) if out.failed => out.msg.unwrap(),
        other => panic!("not a failure: {other:?}"),
    }
}

#[test]
fn a_key_is_needed_to_add_and_names_are_single() {
    assert_eq!(
        failure(plan(json!({"name": "x.org"}))),
        "No key specified when adding a host"
    );
    assert_eq!(
        failure(plan(json!({"name": "a.org, b.org", "key": KEY}))),
        "Comma separated list of names is not supported. Please pass a single name to lookup in the known_hosts file."
    );
    let unknown = crate::modules::try_plan(
        &KnownHosts,
        json!({"name": "a", "x": 1}),
        &PlanContext::new(Path::new("/")),
    )
    .unwrap_err();
    assert_eq!(
        unknown,
        "Unsupported parameters for (known_hosts) module: x. Supported parameters include: hash_host, key, name, path, state (host)."
    );
}

#[test]
fn the_first_step_reads_the_file_as_written() {
    let Plan::Step(Op::Batch(ops), _) = plan(json!({"name": "Example.org", "key": KEY})).unwrap()
    else {
        panic!("a read first")
    };
    assert_eq!(
        ops[1],
        Op::ReadFile {
            path: "~/.ssh/known_hosts".into(),
            offset: 0,
            limit: None
        }
    );
}

#[test]
fn hashed_names_are_hmac_sha1_of_the_lowercased_host() {
    let salt: [u8; 20] = std::array::from_fn(|i| i as u8);
    assert_eq!(
        hash_host_key("example.org", KEY, &salt),
        "|1|AAECAwQFBgcICQoLDA0ODxAREhM=|bFDVYqbsfLlUB0fPAZemUYx8Gnc= ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIInU root@vm"
    );
    assert_eq!(
        hash_host_key("example.org", &format!("@revoked {KEY}"), &salt),
        "@revoked |1|AAECAwQFBgcICQoLDA0ODxAREhM=|bFDVYqbsfLlUB0fPAZemUYx8Gnc= ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIInU root@vm"
    );
}

#[test]
fn search_reads_ssh_keygen_output_as_ansible() {
    let key = format!("{KEY}\n");
    assert_eq!(search(Some(&key), 1, "", ""), Ok(NOT_FOUND));
    let same =
        "# Host example.org found: line 3 \nexample.org ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIInU\n";
    assert_eq!(
        search(Some(&key), 0, same, ""),
        Ok(Search {
            found: true,
            replace_or_add: false,
            found_line: Some(3)
        })
    );
    let other = "# Host example.org found: line 2 \nexample.org ssh-ed25519 BBBB\n";
    assert_eq!(
        search(Some(&key), 0, other, ""),
        Ok(Search {
            found: true,
            replace_or_add: true,
            found_line: Some(2)
        })
    );
    let other_type = "# Host example.org found: line 2 \nexample.org ssh-rsa BBBB\n";
    assert_eq!(
        search(Some(&key), 0, other_type, ""),
        Ok(Search {
            found: true,
            replace_or_add: true,
            found_line: None
        })
    );
    assert_eq!(
        search(None, 0, other, ""),
        Ok(Search {
            found: true,
            replace_or_add: false,
            found_line: None
        })
    );
    assert_eq!(
        search(Some(&key), 255, "", "boom\n").unwrap_err(),
        "ssh-keygen failed (rc=255, stdout='',stderr='boom\n')"
    );
}

#[test]
fn new_text_drops_the_replaced_line_and_appends_the_key() {
    let before = "a.org ssh-rsa A\nexample.org ssh-ed25519 B\nc.org ssh-rsa C";
    let replace = Search {
        found: true,
        replace_or_add: true,
        found_line: Some(2),
    };
    assert_eq!(
        new_text(before, replace, true, Some("example.org ssh-ed25519 N\n")),
        "a.org ssh-rsa A\nc.org ssh-rsa Cexample.org ssh-ed25519 N\n"
    );
    assert_eq!(
        new_text("x\r\ny\n", NOT_FOUND, true, Some("k\n")),
        "x\r\ny\nk\n"
    );
}

#[test]
fn in_check_mode_only_changed_and_diff_come_back() {
    let request = Request {
        name: "a.org".into(),
        host: "a.org".into(),
        key_arg: Some("a.org ssh-rsa K".into()),
        key: Some("a.org ssh-rsa K\n".into()),
        hash_host: false,
        present: true,
        check: true,
    };
    let current = Current {
        path: "/none/kh".into(),
        write_path: "/none/kh".into(),
        stat: StatInfo::missing("/none/kh".into()),
        bytes: Vec::new(),
    };
    let Plan::Done(out) = decide(request, current, None) else {
        panic!("nothing is sent in check mode")
    };
    assert!(out.changed);
    assert_eq!(
        Value::Object(out.data),
        json!({"diff": {"before_header": "/dev/null", "after_header": "/none/kh", "before": "", "after": "a.org ssh-rsa K\n"}})
    );
}
