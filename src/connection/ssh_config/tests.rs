use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

struct Fixture {
    dir: tempfile::TempDir,
    local: LocalUser,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home/.ssh")).unwrap();
        std::fs::create_dir_all(dir.path().join("etc/ssh")).unwrap();
        let local = LocalUser {
            name: "me".into(),
            home: dir.path().join("home"),
            uid: 1000,
            hostname: "ctl.example".into(),
        };
        Fixture { dir, local }
    }

    fn home(&self) -> &Path {
        &self.local.home
    }

    fn user_config(&self, text: &str) -> &Self {
        self.write("home/.ssh/config", text)
    }

    fn system_config(&self, text: &str) -> &Self {
        self.write("etc/ssh/ssh_config", text)
    }

    fn write(&self, relative: &str, text: &str) -> &Self {
        let path = self.dir.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        self
    }

    fn files(&self) -> ConfigFiles {
        ConfigFiles::Default {
            user: self.home().join(".ssh/config"),
            system: self.dir.path().join("etc/ssh/ssh_config"),
        }
    }

    fn resolve_with(
        &self,
        host: &str,
        options: &[&str],
        files: &ConfigFiles,
    ) -> Result<Resolved, String> {
        let options: Vec<String> = options.iter().map(|o| o.to_string()).collect();
        let env = |name: &str| (name == "KEYDIR").then(|| "/srv/keys".to_string());
        let exec = |command: &str| Ok(command == "test real-web1 = real-web1" || command == "true");
        resolve(&Request {
            host,
            command_line: &options,
            files,
            local: &self.local,
            env: &env,
            exec: &exec,
        })
    }

    fn resolve(&self, host: &str, options: &[&str]) -> Resolved {
        self.resolve_with(host, options, &self.files()).unwrap()
    }

    fn error(&self, host: &str) -> String {
        self.resolve_with(host, &[], &self.files()).unwrap_err()
    }
}

#[test]
fn a_host_alias_with_hostname_port_user_and_keys() {
    let f = Fixture::new();
    f.user_config(
        "# my hosts\n\
         Host web1\n\
         \tHostName 10.0.0.5\n\
         \tPort 2222\n\
         \tUser deploy\n\
         \tIdentityFile ~/.ssh/id_web\n\
         Host *\n\
         \tIdentityFile ~/.ssh/id_all\n\
         \tPort 22\n",
    );
    let r = f.resolve("web1", &[]);
    assert_eq!(r.hostname, "10.0.0.5");
    assert_eq!(r.port, Some(2222));
    assert_eq!(r.user.as_deref(), Some("deploy"));
    assert_eq!(
        r.identity_files,
        vec![f.home().join(".ssh/id_web"), f.home().join(".ssh/id_all")]
    );
    let other = f.resolve("db1", &[]);
    assert_eq!(other.hostname, "db1");
    assert_eq!(other.port, Some(22));
    assert_eq!(other.user, None);
}

#[test]
fn first_value_wins_in_any_spelling_and_the_command_line_first() {
    let f = Fixture::new();
    f.user_config("PORT=2000\nport 3000\nHost *\n  User = alice\n")
        .system_config("Host *\n  User bob\n  ConnectTimeout 7\n");
    let r = f.resolve("x", &[]);
    assert_eq!(r.port, Some(2000));
    assert_eq!(r.user.as_deref(), Some("alice"));
    assert_eq!(r.connect_timeout, Some(Duration::from_secs(7)));
    let r = f.resolve("x", &["Port=4000", "User carol"]);
    assert_eq!(r.port, Some(4000));
    assert_eq!(r.user.as_deref(), Some("carol"));
}

#[test]
fn identity_files_accumulate_known_hosts_files_do_not() {
    let f = Fixture::new();
    f.user_config(
        "Host *\n  IdentityFile /k/one\n  UserKnownHostsFile /kh/a ~/kh/b\n  UserKnownHostsFile /kh/c\n",
    )
    .system_config("IdentityFile /k/two\nIdentityFile /k/one\nGlobalKnownHostsFile /g/1 /g/2\n");
    let r = f.resolve("x", &["IdentityFile=/k/cli"]);
    assert_eq!(
        r.identity_files,
        vec![
            PathBuf::from("/k/cli"),
            PathBuf::from("/k/one"),
            PathBuf::from("/k/two")
        ]
    );
    assert_eq!(
        r.user_known_hosts_files,
        Some(vec![PathBuf::from("/kh/a"), f.home().join("kh/b")])
    );
    assert_eq!(
        r.global_known_hosts_files,
        Some(vec![PathBuf::from("/g/1"), PathBuf::from("/g/2")])
    );
    f.user_config("UserKnownHostsFile none\n");
    assert_eq!(f.resolve("x", &[]).user_known_hosts_files, Some(vec![]));
}

#[test]
fn host_patterns_wildcards_and_negation() {
    let f = Fixture::new();
    f.user_config(
        "Host *.prod !bastion.prod\n  User ops\n\
         Host web?\n  Port 2001\n\
         Host *\n  User nobody\n",
    );
    assert_eq!(f.resolve("db.prod", &[]).user.as_deref(), Some("ops"));
    assert_eq!(
        f.resolve("bastion.prod", &[]).user.as_deref(),
        Some("nobody")
    );
    assert_eq!(f.resolve("web7", &[]).port, Some(2001));
    assert_eq!(f.resolve("web77", &[]).port, None);
    // ssh lowercases the name it is given before matching.
    assert_eq!(f.resolve("DB.prod", &[]).user.as_deref(), Some("ops"));
}

#[test]
fn match_blocks() {
    let f = Fixture::new();
    f.user_config(
        "Host web1\n  HostName real-%h\n\
         Match user deploy\n  Port 2100\n\
         Match originalhost web1 host real-web1\n  ConnectionAttempts 3\n\
         Match host real-web1 exec \"test %h = real-web1\"\n  ServerAliveInterval 1m\n\
         Match localuser me\n  BindAddress 127.0.0.2\n\
         Match !localuser me\n  BindAddress 127.0.0.3\n\
         Match all\n  ServerAliveCountMax 9\n",
    );
    let r = f.resolve("web1", &["User=deploy"]);
    assert_eq!(r.hostname, "real-web1");
    assert_eq!(r.port, Some(2100));
    assert_eq!(r.connection_attempts, Some(3));
    assert_eq!(r.server_alive_interval, Some(Duration::from_secs(60)));
    assert_eq!(r.bind_address.as_deref(), Some("127.0.0.2"));
    assert_eq!(r.server_alive_count_max, Some(9));
    // `Match user` sees the user set so far, else the local user.
    assert_eq!(f.resolve("web1", &[]).port, None);
    assert_eq!(f.resolve("web1", &["User=alice"]).port, None);
}

#[test]
fn match_final_reads_again_with_the_hostname() {
    let f = Fixture::new();
    f.user_config(
        "Host alias\n  HostName target.example\n\
         Host target.example\n  Port 2200\n\
         Match final host target.example\n  User finaluser\n",
    );
    let r = f.resolve("alias", &[]);
    assert_eq!(r.port, Some(2200));
    assert_eq!(r.user.as_deref(), Some("finaluser"));
    // Without `Match final` nothing reads the files again.
    f.user_config("Host alias\n  HostName target.example\nHost target.example\n  Port 2200\n");
    assert_eq!(f.resolve("alias", &[]).port, None);
}

#[test]
fn includes_relative_to_their_directory_with_globs() {
    let f = Fixture::new();
    f.user_config("Include conf.d/*.conf\nHost *\n  User last\n")
        .write("home/.ssh/conf.d/20-b.conf", "Host web1\n  Port 2020\n")
        .write(
            "home/.ssh/conf.d/10-a.conf",
            "Host web1\n  Port 2010\n  User a\n",
        )
        .system_config("Include ssh_config.d/*.conf\n")
        .write(
            "etc/ssh/ssh_config.d/x.conf",
            "Host *\n  ConnectTimeout 4\n",
        );
    let r = f.resolve("web1", &[]);
    assert_eq!(r.port, Some(2010));
    assert_eq!(r.user.as_deref(), Some("a"));
    assert_eq!(r.connect_timeout, Some(Duration::from_secs(4)));
    // An Include in a block that does not apply brings nothing.
    f.user_config("Host other\n  Include conf.d/*.conf\n");
    assert_eq!(f.resolve("web1", &[]).port, None);
}

#[test]
fn include_loops_are_bounded() {
    let f = Fixture::new();
    f.user_config("Include config\n");
    let err = f.error("x");
    assert!(
        err.contains("Too many recursive configuration includes"),
        "{err}"
    );
    assert!(err.starts_with("~/.ssh/config line 1: "), "{err}");
}

#[test]
fn tokens_and_environment_in_paths() {
    let f = Fixture::new();
    f.user_config(
        "Host web1\n  HostName %h.example.com\n  User deploy\n  Port 2222\n\
         IdentityFile ~/.ssh/%r@%h:%p\nIdentityFile ${KEYDIR}/%n-%u-%L\n\
         UserKnownHostsFile %d/kh-%l\n",
    );
    let r = f.resolve("web1", &[]);
    assert_eq!(r.hostname, "web1.example.com");
    assert_eq!(
        r.identity_files,
        vec![
            f.home().join(".ssh/deploy@web1.example.com:2222"),
            PathBuf::from("/srv/keys/web1-me-ctl"),
        ]
    );
    assert_eq!(
        r.user_known_hosts_files,
        Some(vec![f.home().join("kh-ctl.example")])
    );
    f.user_config("HostName %r.example\n");
    assert!(f.error("x").contains("unknown key %r"), "{}", f.error("x"));
}

#[test]
fn bad_lines_name_the_file_and_line_as_openssh_does() {
    let f = Fixture::new();
    f.user_config("Host x\n  Foo bar\n");
    assert_eq!(
        f.error("y"),
        "~/.ssh/config: line 2: Bad configuration option: foo"
    );
    f.user_config("Port abc\n");
    assert_eq!(f.error("y"), "~/.ssh/config line 1: Bad port 'abc'.");
    f.user_config("\n\nPort\n");
    assert_eq!(
        f.error("y"),
        "~/.ssh/config line 3: no argument after keyword \"port\""
    );
    f.user_config("Host x\n  Compression maybe\n");
    assert_eq!(
        f.error("y"),
        "~/.ssh/config line 2: unsupported option \"maybe\"."
    );
    f.user_config("Match foo x\n");
    assert_eq!(
        f.error("y"),
        "~/.ssh/config line 1: Bad Match condition (Unsupported Match attribute foo)"
    );
    f.user_config("User \"a b\n");
    assert_eq!(f.error("y"), "~/.ssh/config line 1: invalid quotes");
    f.user_config("IgnoreUnknown UseKeychain,Foo*\nUseKeychain yes\nFooBar 1\n");
    assert!(f.resolve_with("y", &[], &f.files()).is_ok());
    let err = f.resolve_with("y", &["Host=x"], &f.files()).unwrap_err();
    assert!(
        err.contains("not supported as a command-line option"),
        "{err}"
    );
}

#[test]
fn only_the_f_file_when_given() {
    let f = Fixture::new();
    f.user_config("Port 1111\n")
        .system_config("User sys\n")
        .write("alt", "Port 3333\n");
    let only = ConfigFiles::Only(f.dir.path().join("alt"));
    let r = f.resolve_with("x", &[], &only).unwrap();
    assert_eq!((r.port, r.user), (Some(3333), None));
    let missing = ConfigFiles::Only(f.dir.path().join("nope"));
    let err = f.resolve_with("x", &[], &missing).unwrap_err();
    assert!(err.starts_with("Can't open user config file"), "{err}");
    let r = f.resolve_with("x", &[], &ConfigFiles::None).unwrap();
    assert_eq!(r.port, None);
}

#[test]
fn options_not_acted_on_are_reported_with_their_line() {
    let f = Fixture::new();
    f.user_config(
        "Host web1\n  ForwardAgent yes\n  ControlMaster auto\n  LocalForward 8080 localhost:80\n\
         Host other\n  SetEnv A=1\n",
    )
    .system_config("Host *\n  SendEnv LANG LC_*\n  GSSAPIAuthentication yes\n  ForwardAgent no\n");
    let r = f.resolve("web1", &[]);
    assert_eq!(
        r.warnings,
        vec![
            "~/.ssh/config line 2: ForwardAgent is not supported by turbo-play and was ignored",
            "~/.ssh/config line 4: LocalForward is not supported by turbo-play and was ignored",
        ]
    );
    assert!(f.resolve("db1", &[]).warnings[0].contains("line 4: ForwardAgent"));
}

#[test]
fn proxies_are_resolved_with_their_origin() {
    let f = Fixture::new();
    f.user_config(
        "Host web1\n  ProxyJump bastion\nHost web2\n  ProxyCommand ssh -W '%h:%p' gw\nHost *\n  ProxyJump none\n",
    );
    let r = f.resolve("web1", &[]);
    let (jump, origin) = r.proxy_jump.unwrap();
    assert_eq!(jump, "bastion");
    assert_eq!(origin.to_string(), "~/.ssh/config line 2");
    // The command keeps its tokens: the transport expands them with the final values.
    let r = f.resolve("web2", &["Port=2022"]);
    assert_eq!(r.proxy_command.unwrap().0, "ssh -W '%h:%p' gw");
    assert_eq!(r.proxy_jump, None);
    assert_eq!(f.resolve("web3", &[]).proxy_jump, None);
    // The first of ProxyJump and ProxyCommand wins, `none` included.
    let r = f.resolve("web2", &["ProxyJump=none"]);
    assert_eq!((r.proxy_jump, r.proxy_command), (None, None));
    let r = f.resolve("web1", &["ProxyCommand=nc %h %p"]);
    assert_eq!(r.proxy_jump, None);
    assert_eq!(r.proxy_command.unwrap().0, "nc %h %p");
}

#[test]
fn algorithms_against_russh() {
    let f = Fixture::new();
    f.user_config("Ciphers aes256-ctr,3des-cbc\nKexAlgorithms +diffie-hellman-group14-sha1\n");
    let r = f.resolve("x", &[]);
    assert_eq!(r.algorithms.ciphers, Some(vec!["aes256-ctr".to_string()]));
    assert!(
        r.algorithms
            .kex
            .unwrap()
            .contains(&"diffie-hellman-group14-sha1".to_string())
    );
    assert_eq!(
        r.warnings,
        vec![
            "~/.ssh/config line 1: Ciphers: turbo-play's ssh implementation has no 3des-cbc: left out"
        ]
    );
}

/// OpenSSH's own reading (`ssh -G`, which connects nowhere) of the same file agrees.
#[test]
fn agrees_with_ssh_dash_g() {
    let Ok(version) = std::process::Command::new("ssh").arg("-V").output() else {
        return;
    };
    assert!(version.status.success());
    let f = Fixture::new();
    let config = "Host web? !web9\n  HostName %h.example.com\n  Port 2201\n\
                  Host *.example.com web*\n  User ops\n  IdentityFile /k/ops-key\n\
                  Match user deploy\n  ConnectTimeout 7\n  IdentityFile /k/deploy\n\
                  Match originalhost web1 exec true\n  ServerAliveInterval 1m30s\n\
                  Host *\n  UserKnownHostsFile /kh/%n /kh/b\n  StrictHostKeyChecking accept-new\n  Port 22\n";
    f.write("alt", config);
    let path = f.dir.path().join("alt");
    let files = ConfigFiles::Only(path.clone());
    for (host, options) in [
        ("web1", vec![]),
        ("web9", vec![]),
        ("web2", vec!["User=deploy"]),
        ("db.example.com", vec!["Port=2300"]),
    ] {
        let mut ssh = std::process::Command::new("ssh");
        ssh.arg("-G").arg("-F").arg(&path);
        for o in &options {
            ssh.arg("-o").arg(o);
        }
        let out = ssh
            .arg(host)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let field = |name: &str| -> Vec<String> {
            text.lines()
                .filter_map(|l| l.strip_prefix(&format!("{name} ")))
                .map(str::to_string)
                .collect()
        };
        let r = f.resolve_with(host, &options, &files).unwrap();
        assert_eq!(field("hostname"), vec![r.hostname.clone()], "{host}");
        assert_eq!(
            field("port"),
            vec![r.port.unwrap_or(22).to_string()],
            "{host}"
        );
        let user = r.user.clone().unwrap_or_else(|| {
            String::from_utf8(
                std::process::Command::new("id")
                    .arg("-un")
                    .output()
                    .unwrap()
                    .stdout,
            )
            .unwrap()
            .trim()
            .to_string()
        });
        assert_eq!(field("user"), vec![user], "{host}");
        if !r.identity_files.is_empty() {
            let ours: Vec<String> = r
                .identity_files
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            assert_eq!(field("identityfile"), ours, "{host}");
        }
        let kh: Vec<String> = r
            .user_known_hosts_files
            .clone()
            .unwrap_or_default()
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(field("userknownhostsfile"), vec![kh.join(" ")], "{host}");
        assert_eq!(
            field("connecttimeout"),
            vec![
                r.connect_timeout
                    .map_or("none".into(), |d| d.as_secs().to_string())
            ],
            "{host}"
        );
        assert_eq!(
            field("serveraliveinterval"),
            vec![
                r.server_alive_interval
                    .map_or(0, |d| d.as_secs())
                    .to_string()
            ],
            "{host}"
        );
        assert_eq!(
            field("stricthostkeychecking"),
            vec!["accept-new".to_string()]
        );
    }
}
