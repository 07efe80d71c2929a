//! The local account files as `user` and `group` read them on the target: /etc/passwd,
//! /etc/group and /etc/shadow, parsed as glibc's files backend reads them (first entry of
//! a name wins, malformed lines skipped), plus /etc/login.defs' home mode.

/// One /etc/passwd line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Passwd {
    pub name: String,
    pub password: String,
    pub uid: u32,
    pub gid: u32,
    pub gecos: String,
    pub home: String,
    pub shell: String,
}

/// One /etc/group line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Group {
    pub name: String,
    pub gid: u32,
    pub members: Vec<String>,
}

/// One /etc/shadow line; empty numeric fields are -1, as `getspnam` gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shadow {
    pub name: String,
    pub password: String,
    pub min: i64,
    pub max: i64,
    pub warn: i64,
    pub expire: i64,
}

/// What the three files held. A file that could not be read is empty here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Accounts {
    pub users: Vec<Passwd>,
    pub groups: Vec<Group>,
    pub shadow: Vec<Shadow>,
    /// Whether /etc/shadow could be read (Ansible's spwd fallback then reads nothing).
    pub shadow_readable: bool,
}

fn fields(line: &str) -> Option<Vec<&str>> {
    if line.is_empty() || line.starts_with('#') || line.starts_with('+') || line.starts_with('-') {
        return None;
    }
    Some(line.split(':').collect())
}

pub(super) fn parse_passwd(text: &str) -> Vec<Passwd> {
    text.lines()
        .filter_map(|line| {
            let f = fields(line)?;
            if f.len() != 7 {
                return None;
            }
            Some(Passwd {
                name: f[0].into(),
                password: f[1].into(),
                uid: f[2].parse().ok()?,
                gid: f[3].parse().ok()?,
                gecos: f[4].into(),
                home: f[5].into(),
                shell: f[6].into(),
            })
        })
        .collect()
}

pub(super) fn parse_group(text: &str) -> Vec<Group> {
    text.lines()
        .filter_map(|line| {
            let f = fields(line)?;
            if f.len() != 4 {
                return None;
            }
            Some(Group {
                name: f[0].into(),
                gid: f[2].parse().ok()?,
                members: f[3]
                    .split(',')
                    .filter(|m| !m.is_empty())
                    .map(str::to_string)
                    .collect(),
            })
        })
        .collect()
}

pub(super) fn parse_shadow(text: &str) -> Vec<Shadow> {
    let number = |s: &str| s.parse::<i64>().unwrap_or(-1);
    text.lines()
        .filter_map(|line| {
            let f = fields(line)?;
            if f.len() < 8 {
                return None;
            }
            Some(Shadow {
                name: f[0].into(),
                password: f[1].into(),
                min: number(f[3]),
                max: number(f[4]),
                warn: number(f[5]),
                expire: number(f[7]),
            })
        })
        .collect()
}

/// The home directory mode `user` gives a home it creates itself, from /etc/login.defs:
/// `HOME_MODE`, else `0777 & !UMASK`, else 0755.
pub(super) fn home_mode(login_defs: &str) -> u32 {
    let mut mode = 0o755;
    for line in login_defs.lines() {
        let mut words = line.split_whitespace();
        let (Some(key), Some(value), None) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        if !line.starts_with(key) || !value.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        match key {
            "HOME_MODE" => return u32::from_str_radix(value, 8).unwrap_or(mode),
            "UMASK" => {
                if let Ok(umask) = u32::from_str_radix(value, 8) {
                    mode = 0o777 & !umask;
                }
            }
            _ => {}
        }
    }
    mode
}

impl Accounts {
    pub fn user(&self, name: &str) -> Option<&Passwd> {
        self.users.iter().find(|u| u.name == name)
    }

    pub fn shadow(&self, name: &str) -> Option<&Shadow> {
        self.shadow.iter().find(|s| s.name == name)
    }

    /// `grp.getgrnam`.
    pub fn group_named(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// A group as Ansible's `user` looks one up: as a gid first, then as a name.
    pub fn group(&self, name_or_gid: &str) -> Option<&Group> {
        name_or_gid
            .parse::<u32>()
            .ok()
            .and_then(|gid| self.groups.iter().find(|g| g.gid == gid))
            .or_else(|| self.group_named(name_or_gid))
    }

    /// The groups that list `user` as a member, in file order; the one whose gid is
    /// `primary` left out when given.
    pub fn memberships(&self, user: &str, primary: Option<u32>) -> Vec<String> {
        self.groups
            .iter()
            .filter(|g| g.members.iter().any(|m| m == user))
            .filter(|g| Some(g.gid) != primary)
            .map(|g| g.name.clone())
            .collect()
    }
}

/// The reads every `user` and `group` decision starts from, in [`Accounts::from_replies`]'
/// order: one round trip, so a task with nothing to do costs one read.
pub(super) fn read_ops() -> Vec<turbo_proto::Op> {
    ["/etc/passwd", "/etc/group", "/etc/shadow"]
        .into_iter()
        .map(|path| turbo_proto::Op::ReadFile {
            path: path.into(),
            offset: 0,
            limit: None,
        })
        .collect()
}

impl Accounts {
    /// The accounts from the replies to [`read_ops`] (the first three of `replies`); an
    /// unreadable or missing file reads as empty, as the lookups then find nothing.
    pub fn from_replies(replies: &[turbo_proto::OpResult]) -> Accounts {
        let text = |i: usize| match replies.get(i) {
            Some(turbo_proto::OpResult::Read(read)) if read.stat.exists => {
                Some(String::from_utf8_lossy(&read.data).into_owned())
            }
            _ => None,
        };
        let shadow = text(2);
        Accounts {
            users: parse_passwd(&text(0).unwrap_or_default()),
            groups: parse_group(&text(1).unwrap_or_default()),
            shadow_readable: shadow.is_some(),
            shadow: parse_shadow(&shadow.unwrap_or_default()),
        }
    }
}

/// A command of the useradd family, run without a shell, with the umask an Ansible module
/// gets through sudo (022): directories it makes itself (a home's parents) get 0755.
pub(super) fn command(argv: Vec<String>) -> turbo_proto::Op {
    turbo_proto::Op::Exec(turbo_proto::Exec {
        command: turbo_proto::Command::Argv(argv),
        chdir: None,
        creates: None,
        removes: None,
        env: vec![("LC_ALL".into(), "C".into())],
        stdin: None,
        umask: Some(0o022),
    })
}

/// A command's exit code, stdout and stderr, or the failure to run it at all.
pub(super) fn ran(reply: turbo_proto::OpResult) -> Result<(i32, String, String), String> {
    match reply {
        turbo_proto::OpResult::Exec(e) => Ok((
            e.rc,
            String::from_utf8_lossy(&e.stdout).into_owned(),
            String::from_utf8_lossy(&e.stderr).into_owned(),
        )),
        turbo_proto::OpResult::Error(e) => Err(e.message),
        other => Err(format!("unexpected reply from the agent: {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_files() {
        let users = parse_passwd(
            "root:x:0:0:root:/root:/bin/bash\n# comment\nbad line\nwww:x:33:33:www-data:/var/www:/usr/sbin/nologin\n",
        );
        assert_eq!(users.len(), 2);
        assert_eq!(users[1].home, "/var/www");
        assert_eq!(users[1].gid, 33);
        let groups = parse_group("root:x:0:\nsudo:x:27:deploy,admin\n");
        assert_eq!(groups[1].members, ["deploy", "admin"]);
        assert!(groups[0].members.is_empty());
        let shadow = parse_shadow("deploy:$6$x:19000:0:99999:7:::\nlocked:!:19000::::::1\n");
        assert_eq!(shadow[0].min, 0);
        assert_eq!(shadow[0].expire, -1);
        assert_eq!(shadow[1].max, -1);
        assert_eq!(shadow[1].expire, -1);
        assert_eq!(shadow[1].password, "!");
    }

    #[test]
    fn looks_groups_up_by_gid_first() {
        let accounts = Accounts {
            groups: parse_group("a:x:100:u\nb:x:101:u,v\n100:x:102:\n"),
            ..Accounts::default()
        };
        assert_eq!(accounts.group("100").unwrap().name, "a");
        assert_eq!(accounts.group("b").unwrap().gid, 101);
        assert!(accounts.group("zz").is_none());
        assert_eq!(accounts.memberships("u", Some(100)), ["b"]);
        assert_eq!(accounts.memberships("u", None), ["a", "b"]);
    }

    #[test]
    fn home_mode_from_login_defs() {
        assert_eq!(home_mode(""), 0o755);
        assert_eq!(home_mode("UMASK\t\t027\n"), 0o750);
        assert_eq!(home_mode("UMASK 022\nHOME_MODE 0700\n"), 0o700);
        assert_eq!(home_mode("#HOME_MODE 0700\nUMASK 077\n"), 0o700);
    }
}
