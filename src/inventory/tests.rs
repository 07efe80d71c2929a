use std::fs;

use serde_json::json;

use super::*;

const BRIEF_INI: &str = "\
[web]
h1 ansible_host=127.0.0.1 ansible_port=2201 ansible_user=alice
h[2:3] ansible_host=127.0.0.1
[db]
h3
[app:children]
web
db
[app:vars]
n=5
flag=True
name=\"quoted\"
";

const BRIEF_YAML: &str = "\
all:
  children:
    web:
      hosts:
        h1:
          ansible_host: 127.0.0.1
          ansible_port: 2201
          ansible_user: alice
        h[2:3]:
          ansible_host: 127.0.0.1
    db:
      hosts:
        h3:
    app:
      children:
        web:
        db:
      vars:
        n: 5
        flag: true
        name: quoted
";

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        Files {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    fn path(&self) -> String {
        self.dir.path().display().to_string()
    }
}

fn load_text(name: &str, text: &str) -> Inventory {
    let files = Files::new();
    let path = files.write(name, text);
    Inventory::load(&[path]).expect("inventory loads")
}

/// What Ansible says of a file it cannot parse: warnings, the source left out.
fn load_err(name: &str, text: &str) -> String {
    let files = Files::new();
    let path = files.write(name, text);
    let inv = Inventory::load(std::slice::from_ref(&path)).expect("a warning, not an error");
    let warnings = inv.warnings().join("\n");
    assert!(
        warnings.contains(&format!("Unable to parse {path} as an inventory source")),
        "{warnings}"
    );
    assert_eq!(
        sel(&inv, "all"),
        Vec::<String>::new(),
        "nothing of it is kept"
    );
    warnings
}

fn sel(inv: &Inventory, pattern: &str) -> Vec<String> {
    inv.select(pattern).expect("pattern evaluates")
}

/// Host vars minus where the host was read from, which differs between two files.
fn vars_without_source(inv: &Inventory, host: &str) -> Map<String, Value> {
    let mut vars = inv.host_vars(host);
    vars.remove("inventory_file");
    vars.remove("inventory_dir");
    vars
}

#[test]
fn brief_ini_example_loads_as_ansible_does() {
    let inv = load_text("hosts", BRIEF_INI);
    assert_eq!(sel(&inv, "all"), ["h1", "h2", "h3"]);
    assert_eq!(sel(&inv, "web"), ["h1", "h2", "h3"]);
    assert_eq!(sel(&inv, "db"), ["h3"]);
    assert_eq!(sel(&inv, "app"), ["h1", "h2", "h3"]);
    assert_eq!(
        vars_without_source(&inv, "h1"),
        json!({"n": 5, "flag": true, "name": "quoted",
               "ansible_host": "127.0.0.1", "ansible_port": 2201, "ansible_user": "alice"})
        .as_object()
        .unwrap()
        .clone()
    );
    assert_eq!(inv.host_vars("h3")["ansible_host"], json!("127.0.0.1"));
    assert_eq!(inv.host_vars("h3")["n"], json!(5));
    assert_eq!(inv.group_names("h3"), ["app", "db", "web"]);
    assert_eq!(inv.group_names("h1"), ["app", "web"]);
    let groups = inv.groups();
    assert_eq!(groups["all"], ["h1", "h2", "h3"]);
    assert_eq!(groups["ungrouped"], Vec::<String>::new());
    assert_eq!(groups["app"], ["h1", "h2", "h3"]);
    assert_eq!(groups.len(), 5);
    let h1 = inv.host("h1").unwrap();
    assert_eq!(h1.name, "h1");
    assert_eq!(h1.vars, inv.host_vars("h1"));
    assert!(
        h1.vars["inventory_file"]
            .as_str()
            .unwrap()
            .ends_with("/hosts")
    );
}

#[test]
fn brief_yaml_example_gives_the_same_inventory() {
    let ini = load_text("hosts", BRIEF_INI);
    let yaml = load_text("hosts.yml", BRIEF_YAML);
    for pattern in [
        "all", "web", "db", "app", "web:&db", "app:!db", "h*", "web[1:]",
    ] {
        assert_eq!(sel(&ini, pattern), sel(&yaml, pattern), "{pattern}");
    }
    for host in ["h1", "h2", "h3"] {
        assert_eq!(
            vars_without_source(&ini, host),
            vars_without_source(&yaml, host),
            "{host}"
        );
        assert_eq!(ini.group_names(host), yaml.group_names(host), "{host}");
    }
    assert_eq!(ini.groups(), yaml.groups());
}

#[test]
fn yaml_is_recognised_without_an_extension() {
    let inv = load_text("inventory", BRIEF_YAML);
    assert_eq!(sel(&inv, "db"), ["h3"]);
    // A plain host list reads as YAML text, not a mapping, so it stays INI.
    let inv = load_text("hosts", "a\nb ansible_port=2\n");
    assert_eq!(sel(&inv, "ungrouped"), ["a", "b"]);
}

#[test]
fn variables_merge_parents_before_children_then_host() {
    let inv = load_text(
        "hosts",
        "[all:vars]\nv=all\nonly_all=1\n\
         [top:children]\nmid\n[top:vars]\nv=top\n\
         [mid:children]\nleaf\n[mid:vars]\nv=mid\n\
         [leaf]\nh1\nh2 v=host\n[leaf:vars]\nv=leaf\n\
         [alpha]\nh1\n[alpha:vars]\nsib=alpha\n[beta]\nh1\n[beta:vars]\nsib=beta\n",
    );
    assert_eq!(inv.host_vars("h1")["v"], json!("leaf"));
    assert_eq!(inv.host_vars("h1")["only_all"], json!(1));
    assert_eq!(inv.host_vars("h2")["v"], json!("host"));
    // Siblings at one depth: later name wins.
    assert_eq!(inv.host_vars("h1")["sib"], json!("beta"));
    assert_eq!(
        inv.group_names("h1"),
        ["alpha", "beta", "leaf", "mid", "top"]
    );
}

#[test]
fn group_priority_reorders_siblings() {
    let inv = load_text(
        "hosts",
        "[alpha]\nh1\n[alpha:vars]\nsib=alpha\nansible_group_priority=10\n[beta]\nh1\n[beta:vars]\nsib=beta\n",
    );
    assert_eq!(inv.host_vars("h1")["sib"], json!("alpha"));
    assert!(!inv.host_vars("h1").contains_key("ansible_group_priority"));
}

#[test]
fn deeper_group_beats_shallower_even_if_named_later() {
    let inv = load_text(
        "hosts",
        "[zz:children]\naa\n[aa]\nh1\n[zz:vars]\nv=zz\n[aa:vars]\nv=aa\n",
    );
    assert_eq!(inv.host_vars("h1")["v"], json!("aa"));
}

fn pattern_inventory() -> Inventory {
    load_text(
        "hosts",
        "lone\n\
         [web]\nweb1\nweb2\nweb3.example.com\n\
         [db]\ndb1\nweb2\n\
         [prod:children]\nweb\n\
         [staging]\nstage1\n",
    )
}

#[test]
fn patterns_all_star_host_and_group() {
    let inv = pattern_inventory();
    // `all` lists its direct children's hosts (ungrouped, web's sibling groups) before
    // those of `web`, which is nested one level deeper under `prod`.
    let everyone = ["lone", "db1", "web2", "stage1", "web1", "web3.example.com"];
    assert_eq!(sel(&inv, "all"), everyone);
    assert_eq!(sel(&inv, "*"), everyone);
    assert_eq!(sel(&inv, "web1"), ["web1"]);
    assert_eq!(sel(&inv, "web"), ["web1", "web2", "web3.example.com"]);
    assert_eq!(sel(&inv, "prod"), ["web1", "web2", "web3.example.com"]);
    assert_eq!(sel(&inv, "ungrouped"), ["lone"]);
}

#[test]
fn patterns_union_intersection_exclusion() {
    let inv = pattern_inventory();
    assert_eq!(sel(&inv, "db:staging"), ["db1", "web2", "stage1"]);
    assert_eq!(sel(&inv, "db,staging"), ["db1", "web2", "stage1"]);
    assert_eq!(sel(&inv, "db, staging, db1"), ["db1", "web2", "stage1"]);
    assert_eq!(sel(&inv, "web:&db"), ["web2"]);
    assert_eq!(sel(&inv, "web:!db"), ["web1", "web3.example.com"]);
    assert_eq!(sel(&inv, "web,!web2"), ["web1", "web3.example.com"]);
    // Operators apply after every union, wherever they are written.
    assert_eq!(sel(&inv, "!db:web"), ["web1", "web3.example.com"]);
    assert_eq!(sel(&inv, "&db:web:staging"), ["web2"]);
    // Only operators: they apply to all.
    assert_eq!(sel(&inv, "!web"), ["lone", "db1", "stage1"]);
    assert_eq!(sel(&inv, "all:!prod:!ungrouped"), ["db1", "stage1"]);
}

#[test]
fn patterns_globs_and_regexes() {
    let inv = pattern_inventory();
    assert_eq!(sel(&inv, "web*"), ["web1", "web2", "web3.example.com"]);
    assert_eq!(sel(&inv, "*.example.com"), ["web3.example.com"]);
    assert_eq!(sel(&inv, "db?"), ["db1"]);
    assert_eq!(sel(&inv, "st*"), ["stage1"]);
    assert_eq!(sel(&inv, r"~web\d+"), ["web1", "web2", "web3.example.com"]);
    assert_eq!(sel(&inv, r"~(db|stage)1$"), ["db1", "stage1"]);
    let err = inv.select("~web(").unwrap_err().to_string();
    assert!(err.contains("Invalid host list pattern"), "{err}");
}

#[test]
fn patterns_subscripts() {
    let inv = pattern_inventory();
    assert_eq!(sel(&inv, "web[0]"), ["web1"]);
    assert_eq!(sel(&inv, "web[-1]"), ["web3.example.com"]);
    assert_eq!(sel(&inv, "web[0:1]"), ["web1", "web2"]);
    assert_eq!(sel(&inv, "web[1:]"), ["web2", "web3.example.com"]);
    assert_eq!(sel(&inv, "web[0:1]:db"), ["web1", "web2", "db1"]);
    assert_eq!(sel(&inv, "web*[1]"), ["web2"]);
    let err = inv.select("web[5]").unwrap_err().to_string();
    assert!(
        err.contains("No hosts matched the subscripted pattern 'web[5]'"),
        "{err}"
    );
}

#[test]
fn unknown_names_match_nothing_and_are_reported() {
    let inv = pattern_inventory();
    assert_eq!(sel(&inv, "nosuch"), Vec::<String>::new());
    let s = inv.select_reporting("web1:nosuch:!other").unwrap();
    assert_eq!(s.hosts, ["web1"]);
    assert_eq!(s.unmatched, ["nosuch", "other"]);
    assert!(inv.select_reporting("all").unwrap().unmatched.is_empty());
}

#[test]
fn a_plain_host_name_wins_over_a_group_of_that_name() {
    let inv = load_text("hosts", "[web]\nweb\nw2\n");
    assert_eq!(sel(&inv, "web"), ["web"]);
    assert_eq!(sel(&inv, "w*"), ["web", "w2"]);
    // `!web` is not a host name, so it names the group, which holds both hosts.
    assert_eq!(sel(&inv, "all:!web"), Vec::<String>::new());
    assert_eq!(sel(&inv, "all:!w2"), ["web"]);
    assert!(inv.warnings().iter().any(|w| w.contains("same name: web")));
}

#[test]
fn implicit_localhost_only_when_named() {
    let inv = pattern_inventory();
    assert!(!sel(&inv, "all").contains(&"localhost".to_string()));
    assert_eq!(sel(&inv, "localhost"), ["localhost"]);
    assert_eq!(sel(&inv, "127.0.0.1"), ["127.0.0.1"]);
    assert_eq!(sel(&inv, "web1:localhost"), ["web1", "localhost"]);
    assert_eq!(sel(&inv, "local*"), Vec::<String>::new());
    let local = inv.host("localhost").unwrap();
    assert_eq!(local.vars["ansible_connection"], json!("local"));
    assert_eq!(inv.group_names("localhost"), Vec::<String>::new());
    assert!(!inv.groups()["all"].contains(&"localhost".to_string()));
}

#[test]
fn implicit_localhost_gets_all_group_vars() {
    let inv = load_text("hosts", "h1\n[all:vars]\nx=1\n");
    assert_eq!(inv.host_vars("localhost")["x"], json!(1));
    assert_eq!(
        inv.host_vars("localhost")["ansible_connection"],
        json!("local")
    );
}

#[test]
fn localhost_defined_in_the_inventory_is_used_for_its_aliases() {
    let inv = load_text("hosts", "[local]\n127.0.0.1 ansible_connection=local x=1\n");
    assert_eq!(sel(&inv, "all"), ["127.0.0.1"]);
    assert_eq!(sel(&inv, "localhost"), ["127.0.0.1"]);
    assert_eq!(inv.host("localhost").unwrap().name, "127.0.0.1");
    assert_eq!(inv.host_vars("localhost")["x"], json!(1));
    assert_eq!(inv.group_names("localhost"), ["local"]);
}

#[test]
fn empty_inventory_has_only_implicit_localhost() {
    let inv = Inventory::load(&[]).unwrap();
    assert_eq!(sel(&inv, "all"), Vec::<String>::new());
    assert_eq!(sel(&inv, "localhost"), ["localhost"]);
    assert_eq!(
        inv.groups().keys().collect::<Vec<_>>(),
        ["all", "ungrouped"]
    );
    assert!(inv.warnings().is_empty());
    assert!(inv.select_reporting("all").unwrap().unmatched.is_empty());
}

#[test]
fn comma_lists_are_ungrouped_hosts() {
    let inv = Inventory::load(&["h1,127.0.0.1:2222, h3".to_string()]).unwrap();
    assert_eq!(sel(&inv, "ungrouped"), ["h1", "127.0.0.1", "h3"]);
    assert_eq!(inv.host_vars("127.0.0.1")["ansible_port"], json!(2222));
    assert_eq!(
        inv.host_vars("h1")["inventory_file"],
        json!("h1,127.0.0.1:2222, h3")
    );
    let single = Inventory::load(&["web1,".to_string()]).unwrap();
    assert_eq!(sel(&single, "all"), ["web1"]);
    // No ranges in comma lists, as in Ansible's host_list plugin.
    let raw = Inventory::load(&["w[1:2],".to_string()]).unwrap();
    assert_eq!(sel(&raw, "all"), ["w[1:2]"]);
}

#[test]
fn several_sources_merge_in_order() {
    let files = Files::new();
    let a = files.write("a.ini", "[web]\nw1 x=1\n[web:vars]\ng=a\n");
    let b = files.write(
        "b.yml",
        "web:\n  hosts:\n    w1:\n      x: 2\n    w2:\n  vars:\n    g: b\n",
    );
    let inv = Inventory::load(&[a, b, "extra,".into()]).unwrap();
    // `ungrouped` is the first child of `all`, so its hosts come first.
    assert_eq!(sel(&inv, "all"), ["extra", "w1", "w2"]);
    assert_eq!(
        inv.hosts().map(|h| h.name.as_str()).collect::<Vec<_>>(),
        ["w1", "w2", "extra"]
    );
    assert_eq!(inv.host_vars("w1")["x"], json!(2));
    assert_eq!(inv.host_vars("w1")["g"], json!("b"));
    // inventory_file is the first file that named the host.
    assert!(
        inv.host_vars("w1")["inventory_file"]
            .as_str()
            .unwrap()
            .ends_with("a.ini")
    );
}

#[test]
fn directories_read_every_inventory_file_in_name_order() {
    let files = Files::new();
    files.write("02-web.yml", "web:\n  hosts:\n    w1:\n");
    files.write("01-db", "[db]\nd1\n");
    files.write("03-more.ini", "[web]\nw2\n");
    files.write("sub/04-app", "[app]\na1\n");
    files.write("old.retry", "junk junk\n");
    files.write("notes.txt", "junk junk\n");
    files.write(".hidden", "junk junk\n");
    files.write("group_vars/all.yml", "x: 1\n");
    files.write("host_vars/w1", "junk junk\n");
    let inv = Inventory::load(&[files.path()]).unwrap();
    assert_eq!(sel(&inv, "all"), ["d1", "w1", "w2", "a1"]);
    assert_eq!(sel(&inv, "web"), ["w1", "w2"]);
    assert_eq!(inv.source_dirs(), [files.dir.path().to_path_buf()]);
    let d1 = inv.host_vars("d1");
    assert_eq!(d1["inventory_dir"], json!(files.path()));
}

#[test]
fn missing_sources_are_warnings() {
    let inv = Inventory::load(&["/nonexistent/turbo-play-inventory".to_string()]).unwrap();
    assert_eq!(sel(&inv, "all"), Vec::<String>::new());
    assert_eq!(
        inv.warnings(),
        [
            "Unable to parse /nonexistent/turbo-play-inventory as an inventory source",
            "No inventory was parsed, only implicit localhost is available"
        ]
    );
}

#[test]
fn file_errors_carry_position_and_quote_the_line() {
    let text = load_err("hosts", "[web]\nh1\n[group:bad]\n");
    assert!(
        text.contains("/hosts:3:1: Section [group:bad] has unknown type: bad"),
        "{text}"
    );
    assert!(text.contains("3 | [group:bad]"), "{text}");
    let text = load_err("hosts", "[web]\nweb[1:x]\n");
    assert!(
        text.contains("/hosts:2:1: Invalid host range in 'web[1:x]'"),
        "{text}"
    );
    let text = load_err("hosts", "h1 a=1 oops\n");
    assert!(
        text.contains("/hosts:1:1: Expected key=value host variable assignment, got: oops"),
        "{text}"
    );
    let text = load_err("inv.yml", "all:\n  children:\n    web:\n      vars: [1]\n");
    assert!(
        text.contains("/inv.yml:4:13: `vars` of group `web` must be a mapping"),
        "{text}"
    );
    let text = load_err("inv.yml", "all: {hosts: [\n");
    assert!(text.contains("YAML syntax error"), "{text}");
}

#[test]
fn broken_yaml_without_extension_reports_the_yaml_error() {
    let text = load_err("inventory", "all:\n  hosts:\n    h1: {a: 1\n");
    assert!(text.contains("YAML syntax error"), "{text}");
    let text = load_err("inventory", "[web]\nh1 a=1 oops\n");
    assert!(
        text.contains("Expected key=value host variable assignment"),
        "{text}"
    );
}

#[test]
fn unreadable_files_are_left_out_with_a_warning() {
    let files = Files::new();
    let path = files.dir.path().join("binary");
    fs::write(&path, [0xff, 0xfe, 0x00]).unwrap();
    let inv = Inventory::load(&[path.display().to_string()]).unwrap();
    let warnings = inv.warnings().join("\n");
    assert!(warnings.contains("could not read the file"), "{warnings}");
    assert!(
        warnings.ends_with("No inventory was parsed, only implicit localhost is available"),
        "{warnings}"
    );
}

#[test]
fn a_source_that_would_close_a_group_loop_is_left_out_with_a_warning() {
    let files = Files::new();
    let a = files.write("a", "[x:children]\ny\n[y]\n");
    let b = files.write("b", "[y:children]\nx\n");
    let inv = Inventory::load(&[a, b.clone()]).unwrap();
    let warnings = inv.warnings().join("\n");
    assert!(warnings.contains("recursive dependency loop"), "{warnings}");
    assert!(
        warnings.ends_with(&format!("Unable to parse {b} as an inventory source")),
        "{warnings}"
    );
    assert_eq!(inv.group_view("x").unwrap().children, ["y"]);
}

#[test]
fn limit_keeps_hosts_the_limit_also_selects() {
    let inv = pattern_inventory();
    let hosts = sel(&inv, "all");
    // The play's order is kept, not the limit's.
    assert_eq!(
        inv.limit(hosts.clone(), "web").unwrap(),
        ["web2", "web1", "web3.example.com"]
    );
    assert_eq!(
        inv.limit(hosts.clone(), "web:!web2").unwrap(),
        ["web1", "web3.example.com"]
    );
    assert_eq!(
        inv.limit(hosts.clone(), "db1,stage1").unwrap(),
        ["db1", "stage1"]
    );
    assert_eq!(
        inv.limit(hosts.clone(), "stage1,lone").unwrap(),
        ["lone", "stage1"]
    );
    let s = inv.limit_reporting(hosts.clone(), "nosuch").unwrap();
    assert!(s.hosts.is_empty());
    assert_eq!(s.unmatched, ["nosuch"]);
    assert_eq!(
        inv.limit(vec!["localhost".into()], "localhost").unwrap(),
        ["localhost"]
    );
}

#[test]
fn limit_from_a_file() {
    let inv = pattern_inventory();
    let files = Files::new();
    let list = files.write("retry", "web1\n\ndb*\n");
    let hosts = sel(&inv, "all");
    // `db*` names the db group (db1, web2) as well as matching the host db1.
    assert_eq!(
        inv.limit(hosts.clone(), &format!("@{list}")).unwrap(),
        ["db1", "web2", "web1"]
    );
    let err = inv.limit(hosts.clone(), "@/nonexistent/limit").unwrap_err();
    assert!(matches!(err, InventoryError::LimitFile { .. }));
    let err = inv.limit(hosts, &format!("@{}", files.path())).unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
}

#[test]
fn group_host_order_follows_ansible() {
    // A group lists its own hosts, then its children's, level by level; `all` therefore
    // lists top-level groups' hosts before those of nested groups.
    let inv = load_text(
        "hosts",
        "[web]\nw1\n[app:children]\nweb\n[db]\nd1\n[app]\na1\n",
    );
    assert_eq!(sel(&inv, "app"), ["a1", "w1"]);
    assert_eq!(sel(&inv, "all"), ["a1", "d1", "w1"]);
    assert_eq!(inv.groups()["all"], ["a1", "d1", "w1"]);
    assert_eq!(
        inv.hosts().map(|h| h.name.as_str()).collect::<Vec<_>>(),
        ["w1", "d1", "a1"]
    );
}

#[test]
fn large_inventories_load_whole() {
    let mut text = String::from(
        "h[00001:20000]\n[web]\nh[00001:10000]\n[db]\nh[10001:20000]\n[app:children]\nweb\ndb\n",
    );
    text.push_str("[app:vars]\nx=1\n");
    // How fast it loads is the benchmark's to say (tests/bench), not a test's.
    let inv = load_text("hosts", &text);
    assert_eq!(sel(&inv, "all").len(), 20000);
    assert_eq!(sel(&inv, "app:!db").len(), 10000);
    assert_eq!(inv.host_vars("h20000")["x"], json!(1));
}

/// An inventory in `inv/` with a playbook directory `pb/` beside it; each layer of the
/// precedence table sets `layer` plus a variable of its own, so both the winner and the
/// presence of every layer can be checked.
fn vars_dirs_fixture() -> (Files, Inventory, PathBuf) {
    let files = Files::new();
    let hosts = files.write(
        "inv/hosts",
        "[web]\nw1 layer=inv_host\n[app:children]\nweb\n[app:vars]\nlayer=inv_app\n[all:vars]\nlayer=inv_all\n",
    );
    files.write(
        "inv/group_vars/all.yml",
        "layer: gv_inv_all\nfrom_inv_all: 1\n",
    );
    files.write("pb/group_vars/all", "layer: gv_pb_all\nfrom_pb_all: 1\n");
    files.write("inv/group_vars/app.yaml", "layer: gv_inv_app\n");
    files.write("inv/group_vars/web/10.yml", "layer: gv_inv_web\n");
    files.write("inv/group_vars/web/20.json", r#"{"web_json": true}"#);
    files.write(
        "pb/group_vars/app.json",
        r#"{"layer": "gv_pb_app", "from_pb_app": 1}"#,
    );
    files.write("inv/host_vars/w1.yml", "layer: hv_inv\nfrom_hv_inv: 1\n");
    files.write("pb/host_vars/w1", "layer: hv_pb\n");
    let inv = Inventory::load(&[hosts]).unwrap();
    let pb = files.dir.path().join("pb");
    (files, inv, pb)
}

#[test]
fn vars_dirs_layer_in_ansible_order() {
    let (files, inv, pb) = vars_dirs_fixture();
    let vars = inv.host_vars_for("w1", &pb).unwrap();
    // Playbook host_vars beat everything; every other layer still contributes.
    assert_eq!(vars["layer"], json!("hv_pb"));
    for key in [
        "from_inv_all",
        "from_pb_all",
        "from_pb_app",
        "from_hv_inv",
        "web_json",
    ] {
        assert!(vars.contains_key(key), "{key} missing: {vars:?}");
    }
    // Peel layers off from the top to see each step of the order.
    let expect_after_removing = [
        ("pb/host_vars/w1", "hv_inv"),
        ("inv/host_vars/w1.yml", "inv_host"),
    ];
    for (file, winner) in expect_after_removing {
        fs::remove_file(files.dir.path().join(file)).unwrap();
        let fresh =
            Inventory::load(&[files.dir.path().join("inv/hosts").display().to_string()]).unwrap();
        assert_eq!(
            fresh.host_vars_for("w1", &pb).unwrap()["layer"],
            json!(winner),
            "{file}"
        );
    }
}

#[test]
fn group_vars_files_order_all_then_groups_inventory_then_playbook() {
    let files = Files::new();
    let hosts = files.write(
        "inv/hosts",
        "[web]\nw1\n[app:children]\nweb\n[app:vars]\nlayer=inv_app\n",
    );
    let pb = files.dir.path().join("pb");
    let reload = || Inventory::load(std::slice::from_ref(&hosts)).unwrap();
    let layer = |inv: &Inventory| inv.host_vars_for("w1", &pb).unwrap()["layer"].clone();
    // Inventory group vars lose to any group_vars/ file, even `all`.
    files.write("inv/group_vars/all.yml", "layer: gv_inv_all\n");
    assert_eq!(layer(&reload()), json!("gv_inv_all"));
    files.write("pb/group_vars/all.yml", "layer: gv_pb_all\n");
    assert_eq!(layer(&reload()), json!("gv_pb_all"));
    // A group file beats `all` files, playbook-adjacent `all` included.
    files.write("inv/group_vars/app.yml", "layer: gv_inv_app\n");
    assert_eq!(layer(&reload()), json!("gv_inv_app"));
    // Child group beats parent group within one directory.
    files.write("inv/group_vars/web.yml", "layer: gv_inv_web\n");
    assert_eq!(layer(&reload()), json!("gv_inv_web"));
    // The playbook's parent-group file beats the inventory's child-group file.
    files.write("pb/group_vars/app.yml", "layer: gv_pb_app\n");
    assert_eq!(layer(&reload()), json!("gv_pb_app"));
    files.write("pb/group_vars/web.yml", "layer: gv_pb_web\n");
    assert_eq!(layer(&reload()), json!("gv_pb_web"));
}

#[test]
fn vars_dirs_for_implicit_localhost_and_unknown_hosts() {
    let files = Files::new();
    let hosts = files.write("hosts", "[web]\nw1\n");
    files.write("group_vars/all.yml", "everyone: 1\n");
    files.write("group_vars/web.yml", "web_only: 1\n");
    files.write("host_vars/localhost.yml", "ansible_connection: ssh\n");
    let inv = Inventory::load(&[hosts]).unwrap();
    let dir = files.dir.path();
    let local = inv.host_vars_for("localhost", dir).unwrap();
    assert_eq!(local["everyone"], json!(1));
    assert!(!local.contains_key("web_only"));
    assert_eq!(local["ansible_connection"], json!("ssh"));
    assert_eq!(
        inv.host_vars_for("127.0.0.1", dir).unwrap()["ansible_connection"],
        json!("local")
    );
    assert!(inv.host_vars_for("nope", dir).unwrap().is_empty());
    // The playbook dir is the inventory dir: same files, same result, spelled relatively too.
    assert_eq!(inv.host_vars_for("w1", dir).unwrap()["web_only"], json!(1));
}

#[test]
fn broken_vars_dir_files_are_load_errors_with_position() {
    let files = Files::new();
    let hosts = files.write("hosts", "[web]\nw1\n");
    files.write("group_vars/web.yml", "ok: 1\nbad: [\n");
    let inv = Inventory::load(&[hosts]).unwrap();
    let err = inv
        .load_vars_dirs(files.dir.path())
        .unwrap_err()
        .to_string();
    let file = files.dir.path().join("group_vars/web.yml");
    assert!(err.starts_with(&format!("{}:", file.display())), "{err}");
    let err = inv
        .host_vars_for("w1", Path::new("/nonexistent"))
        .unwrap_err();
    assert!(matches!(err, InventoryError::Load(_)));
    files.write("group_vars/web.yml", "- a list\n");
    let inv = Inventory::load(&[files.dir.path().join("hosts").display().to_string()]).unwrap();
    let err = inv
        .load_vars_dirs(files.dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(":1:1: a variables file must be a mapping, got a list"),
        "{err}"
    );
}

#[test]
fn the_groups_variable_keeps_ansibles_definition_order() {
    let inv = load_text(
        "hosts",
        "[web]\nw1\n[db]\nd1\n[prod:children]\nweb\ndb\n[app]\na1\n",
    );
    let ordered = inv.groups_in_order(&inv.groups());
    let keys: Vec<&String> = ordered.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["all", "ungrouped", "web", "db", "prod", "app"]);
    let mut with_runtime = inv.groups();
    with_runtime.insert("added".into(), vec!["x".into()]);
    let ordered = inv.groups_in_order(&with_runtime);
    assert_eq!(
        ordered.as_object().unwrap().keys().next_back().unwrap(),
        "added"
    );
}

#[test]
fn groups_joined_at_run_time_bring_their_group_vars() {
    let files = Files::new();
    let hosts = files.write("hosts", "[web]\nw1\n[zoo]\n[zoo:vars]\nfrom_zoo=1\n");
    files.write("group_vars/all.yml", "layer: all\neveryone: 1\n");
    files.write("group_vars/web.yml", "layer: web\n");
    files.write("group_vars/zed.yml", "layer: zed\n");
    files.write("group_vars/aaa.yml", "layer: aaa\n");
    let inv = Inventory::load(&[hosts]).unwrap();
    let pb = files.dir.path();
    let joined = |groups: &[&str], added| {
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        inv.host_vars_joined("w1", pb, &groups, added).unwrap()
    };
    // A group group_by made sorts by name among the host's depth-1 groups.
    assert_eq!(joined(&["zed"], false)["layer"], json!("zed"));
    assert_eq!(joined(&["aaa"], false)["layer"], json!("web"));
    // An inventory group the host joins brings its inventory vars too.
    assert_eq!(joined(&["zoo"], false)["from_zoo"], json!(1));
    assert_eq!(inv.host_vars_for("w1", pb).unwrap()["layer"], json!("web"));
    // A host add_host made gets `all`'s and its groups' files; an unknown one nothing.
    let added = inv
        .host_vars_joined("n1", pb, &["zed".to_string()], true)
        .unwrap();
    assert_eq!(
        (&added["layer"], &added["everyone"]),
        (&json!("zed"), &json!(1))
    );
    assert!(
        inv.host_vars_joined("n2", pb, &[], false)
            .unwrap()
            .is_empty()
    );
}
