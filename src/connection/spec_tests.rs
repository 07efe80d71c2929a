//! Tests of the connection spec: host variables and ssh_config turned into a ConnectionSpec.

use super::*;
use serde_json::json;

fn vars(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("vars must be an object"),
    }
}

fn spec_with(
    v: Value,
    defaults: &ConnectionDefaults,
    env: &[(&str, &str)],
) -> Result<ConnectionSpec, ConnectError> {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    // Hermetic: the machine's own ssh_config files stay out unless a test names one.
    let mut defaults = defaults.clone();
    defaults.ssh_config.get_or_insert(ConfigFiles::None);
    from_vars_with_env("web1", &vars(v), &defaults, &|name| {
        env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    })
}

fn spec(v: Value) -> ConnectionSpec {
    spec_with(v, &ConnectionDefaults::default(), &[]).unwrap()
}

fn home() -> PathBuf {
    super::super::local_home().unwrap()
}

#[test]
fn defaults_for_a_bare_host() {
    let s = spec(json!({}));
    assert_eq!(s.host, "web1");
    assert_eq!(s.kind, ConnectionKind::Ssh);
    assert_eq!(s.address, "web1");
    assert_eq!(s.port, 22);
    assert_eq!(s.user, current_user_name().unwrap());
    assert!(s.identity_files.is_empty());
    assert_eq!(s.strict, StrictHostKeyChecking::Yes);
    assert_eq!(s.known_hosts_files[0], home().join(".ssh/known_hosts"));
    assert_eq!(s.connect_timeout, Duration::from_secs(10));
}

#[test]
fn host_vars() {
    let s = spec(json!({
        "ansible_connection": "ssh",
        "ansible_host": "127.0.0.1",
        "ansible_port": "2222",
        "ansible_user": "deploy",
        "ansible_ssh_private_key_file": "~/keys/id_deploy",
    }));
    assert_eq!(s.address, "127.0.0.1");
    assert_eq!(s.port, 2222);
    assert_eq!(s.user, "deploy");
    assert_eq!(s.identity_files, vec![home().join("keys/id_deploy")]);
    assert_eq!(spec(json!({"ansible_port": 2200})).port, 2200);
    assert_eq!(
        spec(json!({"ansible_connection": "local"})).kind,
        ConnectionKind::Local
    );
    assert_eq!(
        spec(json!({"ansible_connection": "smart"})).kind,
        ConnectionKind::Ssh
    );
}

#[test]
fn bad_values_name_the_variable() {
    let err = spec_with(
        json!({"ansible_connection": "winrm"}),
        &Default::default(),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("ansible_connection=winrm"), "{err}");
    assert!(err.starts_with("host web1:"), "{err}");
    let err = spec_with(json!({"ansible_port": "http"}), &Default::default(), &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("ansible_port=http"), "{err}");
    let err = spec_with(
        json!({"ansible_ssh_common_args": "-o 'StrictHostKeyChecking=maybe'"}),
        &Default::default(),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("StrictHostKeyChecking=maybe"), "{err}");
}

#[test]
fn defaults_apply_under_host_vars() {
    let defaults = ConnectionDefaults {
        remote_user: Some("ops".into()),
        private_key: Some(PathBuf::from("/keys/ops")),
        host_key_checking: Some(false),
        timeout: Some(Duration::from_secs(3)),
        ..Default::default()
    };
    let s = spec_with(json!({}), &defaults, &[]).unwrap();
    assert_eq!(s.user, "ops");
    assert_eq!(s.identity_files, vec![PathBuf::from("/keys/ops")]);
    assert_eq!(s.strict, StrictHostKeyChecking::No);
    assert_eq!(s.connect_timeout, Duration::from_secs(3));

    let s = spec_with(
        json!({"ansible_user": "deploy", "ansible_ssh_private_key_file": "/keys/d"}),
        &defaults,
        &[],
    )
    .unwrap();
    assert_eq!(s.user, "deploy");
    assert_eq!(
        s.identity_files,
        vec![PathBuf::from("/keys/d"), PathBuf::from("/keys/ops")]
    );
}

#[test]
fn host_key_checking_precedence() {
    let on = ConnectionDefaults {
        host_key_checking: Some(true),
        ..Default::default()
    };
    let off = ConnectionDefaults {
        host_key_checking: Some(false),
        ..Default::default()
    };
    let strict = |v: Value, d: &ConnectionDefaults, env: &[(&str, &str)]| {
        spec_with(v, d, env).unwrap().strict
    };
    use StrictHostKeyChecking::*;
    // env beats defaults
    assert_eq!(
        strict(json!({}), &on, &[("ANSIBLE_HOST_KEY_CHECKING", "False")]),
        No
    );
    assert_eq!(
        strict(json!({}), &off, &[("ANSIBLE_HOST_KEY_CHECKING", "True")]),
        Yes
    );
    // host var beats env, as a bool or as a string
    assert_eq!(
        strict(
            json!({"ansible_host_key_checking": false}),
            &on,
            &[("ANSIBLE_HOST_KEY_CHECKING", "True")]
        ),
        No
    );
    assert_eq!(strict(json!({"host_key_checking": "False"}), &on, &[]), No);
    assert_eq!(
        strict(
            json!({"ansible_host_key_checking": "yes"}),
            &off,
            &[("ANSIBLE_HOST_KEY_CHECKING", "False")]
        ),
        Yes
    );
    assert_eq!(strict(json!({}), &Default::default(), &[]), Yes);
    assert_eq!(strict(json!({}), &off, &[]), No);
    // Not a true spelling: false, as Ansible's config reads a boolean option.
    let unset = ConnectionDefaults::default();
    assert_eq!(
        strict(json!({"ansible_host_key_checking": "maybe"}), &unset, &[]),
        No
    );
    assert_eq!(
        strict(
            json!({}),
            &unset,
            &[("ANSIBLE_HOST_KEY_CHECKING", "garbage")]
        ),
        No
    );
}

fn jump(user: Option<&str>, address: &str, port: Option<u16>) -> JumpHost {
    JumpHost {
        user: user.map(str::to_string),
        address: address.into(),
        port,
        identity_files: Vec::new(),
    }
}

#[test]
fn jump_host_forms() {
    assert_eq!(JumpHost::parse("gw").unwrap(), jump(None, "gw", None));
    assert_eq!(
        JumpHost::parse("ops@gw:2222").unwrap(),
        jump(Some("ops"), "gw", Some(2222))
    );
    assert_eq!(
        JumpHost::parse("ssh://ops@gw:2222").unwrap(),
        jump(Some("ops"), "gw", Some(2222))
    );
    assert_eq!(
        JumpHost::parse("[2001:db8::1]:22").unwrap(),
        jump(None, "2001:db8::1", Some(22))
    );
    assert_eq!(
        JumpHost::parse("a@b@gw").unwrap(),
        jump(Some("a@b"), "gw", None)
    );
    assert_eq!(JumpHost::parse("::1").unwrap(), jump(None, "::1", None));
    assert!(
        JumpHost::parse("gw:http")
            .unwrap_err()
            .contains("the port is not 1-65535")
    );
    assert!(JumpHost::parse("@gw").unwrap_err().contains("user"));
    assert_eq!(
        jump(Some("ops"), "2001:db8::1", None).describe("me"),
        "ops@[2001:db8::1]:22"
    );
    assert_eq!(jump(None, "gw", Some(2)).describe("me"), "me@gw:2");
}

#[test]
fn proxies_in_the_ssh_args() {
    let proxy = |name: &str, args: &str| {
        let mut v = Map::new();
        v.insert(name.to_string(), Value::String(args.to_string()));
        spec_with(Value::Object(v), &ConnectionDefaults::default(), &[])
            .unwrap()
            .proxy
    };
    let chain = Proxy::Jump(vec![
        jump(None, "a", None),
        jump(Some("ops"), "b", Some(2222)),
    ]);
    assert_eq!(proxy("ansible_ssh_common_args", "-J a,ops@b:2222"), chain);
    assert_eq!(proxy("ansible_ssh_extra_args", "-Ja,ops@b:2222"), chain);
    assert_eq!(
        proxy("ansible_ssh_common_args", "-o ProxyJump=a,ops@b:2222"),
        chain
    );
    assert_eq!(
        proxy("ansible_ssh_common_args", "-o 'ProxyJump a,ops@b:2222'"),
        chain
    );
    assert_eq!(
        proxy(
            "ansible_ssh_common_args",
            "-o 'ProxyCommand ssh -W %h:%p bastion'"
        ),
        Proxy::Command("ssh -W %h:%p bastion".into())
    );
    assert_eq!(
        proxy("ansible_ssh_common_args", "-oProxyCommand='nc gw 22'"),
        Proxy::Command("nc gw 22".into())
    );
    // The first of ProxyJump and ProxyCommand wins, `none` included.
    assert_eq!(
        proxy(
            "ansible_ssh_common_args",
            "-o ProxyCommand=none -J a -o ProxyJump=b"
        ),
        Proxy::None
    );
    assert_eq!(
        proxy("ansible_ssh_common_args", "-J a -o ProxyCommand=nc"),
        Proxy::Jump(vec![jump(None, "a", None)])
    );
    // ssh_args come first on Ansible's command line: their proxy and options win.
    let s = spec(json!({
        "ansible_ssh_args": "-C -o ControlMaster=auto -o ProxyJump=gw -o Port=2022",
        "ansible_ssh_common_args": "-J other",
    }));
    assert_eq!(s.proxy, Proxy::Jump(vec![jump(None, "gw", None)]));
    assert_eq!(s.port, 2022);
    let defaults = ConnectionDefaults {
        ssh_args: Some("-o ControlMaster=auto -J gw".into()),
        ssh_common_args: Some("-J ignored-after-ssh-args -o Port=2200".into()),
        ..Default::default()
    };
    let s = spec_with(json!({}), &defaults, &[]).unwrap();
    assert_eq!(s.proxy, Proxy::Jump(vec![jump(None, "gw", None)]));
    assert_eq!(s.port, 2200, "--ssh-common-args are read");
    // The host's own args win over --ssh-common-args.
    let defaults = ConnectionDefaults {
        ssh_common_args: Some("-J from-cli".into()),
        ..Default::default()
    };
    let s = spec_with(
        json!({"ansible_ssh_common_args": "-J mine"}),
        &defaults,
        &[],
    )
    .unwrap();
    assert_eq!(s.proxy, Proxy::Jump(vec![jump(None, "mine", None)]));
    let s = spec_with(json!({}), &defaults, &[]).unwrap();
    assert_eq!(s.proxy, Proxy::Jump(vec![jump(None, "from-cli", None)]));
    // Errors name where they are.
    let err = spec_with(
        json!({"ansible_ssh_common_args": "-J gw:notaport"}),
        &Default::default(),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("host web1: ansible_ssh_common_args: jump host `gw:notaport`"),
        "{err}"
    );
    assert_eq!(spec(json!({})).proxy, Proxy::None);
}

#[test]
fn passwords_and_retries() {
    let s = spec(json!({"ansible_ssh_pass": "s3cret"}));
    assert_eq!(s.password, Some(Secret("s3cret".into())));
    assert!(!format!("{s:?}").contains("s3cret"), "Debug hides it");
    let s = spec(json!({"ansible_password": "a", "ansible_ssh_pass": "b"}));
    assert_eq!(s.password, Some(Secret("a".into())));
    let defaults = ConnectionDefaults {
        password: Some(Secret("cli".into())),
        retries: Some(3),
        ..Default::default()
    };
    let s = spec_with(json!({}), &defaults, &[]).unwrap();
    assert_eq!(
        (s.password, s.retries),
        (Some(Secret("cli".into())), Some(3))
    );
    let s = spec_with(json!({"ansible_ssh_retries": 0}), &defaults, &[]).unwrap();
    assert_eq!(s.retries, Some(0));
    assert_eq!(spec(json!({})).retries, None);
    let s = spec(json!({"ansible_ssh_extra_args": "-o ConnectionAttempts=4"}));
    assert_eq!(s.retries, Some(3));
    let err = spec_with(
        json!({"ansible_ssh_retries": "many"}),
        &Default::default(),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("ansible_ssh_retries=many"), "{err}");
}

#[test]
fn ssh_args_are_read_first() {
    // `none` turns a proxy off; ssh_args come first on Ansible's ssh command line, so
    // their options win over the host's variables, as with OpenSSH.
    let s = spec(json!({
        "ansible_ssh_common_args": "-o ProxyJump=none -o ProxyCommand=none",
        "ansible_ssh_args": "-C -o ControlMaster=auto -o ControlPersist=60s -o Port=2022",
        "ansible_port": 2200,
    }));
    assert_eq!(s.port, 2022);
    assert_eq!(s.proxy, Proxy::None);
    assert!(s.ssh.warnings.is_empty(), "{:?}", s.ssh.warnings);
}

/// An ssh_config file in a temp dir, named by `-F` or as the user's file.
fn config_file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ssh.cfg");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn ssh_config_under_the_host_variables() {
    let (_dir, path) = config_file(
        "Host web1 alias
  HostName 10.1.1.1
  Port 2222
  User cfguser
  IdentityFile /k/cfg
           StrictHostKeyChecking accept-new
  HashKnownHosts yes
  ServerAliveInterval 5
         Match user deploy
  ConnectTimeout 3
",
    );
    let defaults = ConnectionDefaults {
        ssh_config: Some(ConfigFiles::Only(path.clone())),
        ..Default::default()
    };
    let s = spec_with(json!({}), &defaults, &[]).unwrap();
    assert_eq!(s.address, "10.1.1.1");
    assert_eq!((s.port, s.user.as_str()), (2222, "cfguser"));
    assert_eq!(s.identity_files, vec![PathBuf::from("/k/cfg")]);
    assert_eq!(s.strict, StrictHostKeyChecking::AcceptNew);
    assert!(s.ssh.hash_known_hosts);
    assert_eq!(s.ssh.server_alive_interval, Some(Duration::from_secs(5)));
    assert_eq!(s.connect_timeout, DEFAULT_CONNECT_TIMEOUT);

    // The inventory's variables go first on ssh's command line: they win, and `Match
    // user` sees ansible_user.
    let s = spec_with(
        json!({"ansible_port": 22, "ansible_user": "deploy",
               "ansible_ssh_private_key_file": "/k/inv", "host_key_checking": false}),
        &defaults,
        &[],
    )
    .unwrap();
    assert_eq!((s.port, s.user.as_str()), (22, "deploy"));
    assert_eq!(
        s.identity_files,
        vec![PathBuf::from("/k/inv"), PathBuf::from("/k/cfg")]
    );
    assert_eq!(s.strict, StrictHostKeyChecking::No);
    assert_eq!(s.connect_timeout, Duration::from_secs(3));

    // ansible_host is the name ssh is given: the `Host` patterns match it.
    let s = spec_with(json!({"ansible_host": "alias"}), &defaults, &[]).unwrap();
    assert_eq!(s.address, "10.1.1.1");
    let s = spec_with(json!({"ansible_host": "127.0.0.1"}), &defaults, &[]).unwrap();
    assert_eq!((s.address.as_str(), s.port), ("127.0.0.1", 22));
}

#[test]
fn f_in_the_ssh_args_and_proxies_in_the_file() {
    let (_dir, path) = config_file(
        "Host web1
  Port 2201
Host gw-*
  ProxyJump bastion,ops@second:2200
Host cmd
  ProxyCommand nc %h %p
Host bastion
  HostName 10.0.0.1
  Port 2022
  User jumper
  IdentityFile /k/bastion
  ForwardAgent yes
Host second
  User ignored
  Port 1
",
    );
    let common = format!("-F {}", path.display());
    let s = spec(json!({"ansible_ssh_common_args": common}));
    assert_eq!((s.port, &s.proxy), (2201, &Proxy::None));
    // The bastions are read through the same files: their own blocks fill in what the
    // chain does not say, and what it says wins.
    let s = spec(json!({"ansible_ssh_common_args": common, "ansible_host": "gw-1"}));
    let mut first = jump(Some("jumper"), "10.0.0.1", Some(2022));
    first.identity_files = vec![PathBuf::from("/k/bastion")];
    assert_eq!(
        s.proxy,
        Proxy::Jump(vec![first, jump(Some("ops"), "second", Some(2200))])
    );
    assert!(
        s.ssh
            .warnings
            .iter()
            .any(|w| w.contains("line 12: ForwardAgent")),
        "{:?}",
        s.ssh.warnings
    );
    let defaults = ConnectionDefaults {
        ssh_common_args: Some(common.clone()),
        ..Default::default()
    };
    let s = spec_with(json!({"ansible_host": "cmd"}), &defaults, &[]).unwrap();
    assert_eq!(s.proxy, Proxy::Command("nc %h %p".into()));
    // The command line's proxy, `none` included, wins over the file's.
    let s = spec(json!({
        "ansible_ssh_common_args": format!("{common} -o ProxyJump=none"),
        "ansible_host": "gw-1",
    }));
    assert_eq!(s.proxy, Proxy::None);
    let s = spec(json!({
        "ansible_ssh_common_args": format!("{common} -o ProxyCommand=none"),
        "ansible_host": "cmd",
    }));
    assert_eq!(s.proxy, Proxy::None);
    let s = spec(json!({
        "ansible_ssh_extra_args": "-J other",
        "ansible_ssh_common_args": common,
        "ansible_host": "cmd",
    }));
    assert_eq!(s.proxy, Proxy::Jump(vec![jump(None, "other", None)]));
    // ConnectionAttempts in the file counts the attempts, retries are one less.
    let (_dir, attempts) = config_file(
        "Host *
  ConnectionAttempts 3
",
    );
    let s = spec(json!({"ansible_ssh_common_args": format!("-F {}", attempts.display())}));
    assert_eq!(s.retries, Some(2));
    // A bad line stops the host, naming the file and line.
    let (_dir, bad) = config_file(
        "Host *
  Bogus yes
",
    );
    let err = spec_with(
        json!({"ansible_ssh_extra_args": format!("-F {}", bad.display())}),
        &Default::default(),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.ends_with("ssh.cfg: line 2: Bad configuration option: bogus"),
        "{err}"
    );
}

#[test]
fn ssh_args_options() {
    let s = spec(json!({
        "ansible_ssh_common_args": "-o UserKnownHostsFile='/tmp/kh1 ~/kh2' -oStrictHostKeyChecking=accept-new -o \"ConnectTimeout 4\"",
        "ansible_ssh_extra_args": "-o Port=2022 -o User=bob -o IdentityFile=~/.ssh/extra -o StrictHostKeyChecking=no",
    }));
    assert_eq!(
        s.known_hosts_files,
        vec![
            PathBuf::from("/tmp/kh1"),
            home().join("kh2"),
            PathBuf::from("/etc/ssh/ssh_known_hosts"),
            PathBuf::from("/etc/ssh/ssh_known_hosts2"),
        ]
    );
    // The first StrictHostKeyChecking wins, as in ssh.
    assert_eq!(s.strict, StrictHostKeyChecking::AcceptNew);
    assert_eq!(s.connect_timeout, Duration::from_secs(4));
    assert_eq!(s.port, 2022);
    assert_eq!(s.user, "bob");
    assert_eq!(s.identity_files, vec![home().join(".ssh/extra")]);

    // ansible_* vars come first on Ansible's ssh command line, so they win.
    let s = spec(json!({
        "ansible_port": 2200,
        "ansible_user": "alice",
        "ansible_ssh_extra_args": "-o Port=2022 -o User=bob -o UserKnownHostsFile=/dev/null",
    }));
    assert_eq!((s.port, s.user.as_str()), (2200, "alice"));
    assert_eq!(s.known_hosts_files[0], PathBuf::from("/dev/null"));

    // host_key_checking=false beats StrictHostKeyChecking=yes in the args.
    let s = spec(json!({
        "host_key_checking": false,
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=yes",
    }));
    assert_eq!(s.strict, StrictHostKeyChecking::No);
    let s = spec(json!({"ansible_ssh_common_args": "-o StrictHostKeyChecking=off"}));
    assert_eq!(s.strict, StrictHostKeyChecking::No);
}
