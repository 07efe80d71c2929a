//! The commands Ansible's `user` module runs on Linux, decided from the account files
//! ([`super::accounts`]) exactly as its `create_user_useradd`, `modify_user_usermod` and
//! `remove_user_userdel` decide them: which flags, and whether anything runs at all.

use super::accounts::Accounts;

/// `user`'s arguments that shape the commands.
#[derive(Debug, Clone, Default)]
pub(super) struct UserArgs {
    pub name: String,
    pub uid: Option<i64>,
    pub non_unique: bool,
    pub group: Option<String>,
    /// `groups` joined with commas, as Ansible keeps it (`Some("")` clears them).
    pub groups: Option<String>,
    pub comment: Option<String>,
    pub home: Option<String>,
    pub shell: Option<String>,
    pub password: Option<String>,
    pub force: bool,
    pub remove: bool,
    pub create_home: bool,
    pub move_home: bool,
    pub skeleton: Option<String>,
    pub system: bool,
    pub append: bool,
    pub update_password_always: bool,
    pub expires: Option<f64>,
    pub password_lock: Option<bool>,
    pub local: bool,
    pub umask: Option<String>,
    pub inactive: Option<i64>,
    pub uid_min: Option<i64>,
    pub uid_max: Option<i64>,
    pub expire_min: Option<i64>,
    pub expire_max: Option<i64>,
    pub expire_warn: Option<i64>,
}

/// Commands to run in order (the first failure stops them), or Ansible's failure message.
pub(super) type Commands = Result<Vec<Vec<String>>, String>;

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// `userdel` (`luserdel` with `local`).
pub(super) fn remove(a: &UserArgs) -> Vec<String> {
    let mut cmd = argv(&[if a.local { "luserdel" } else { "userdel" }]);
    if a.force && !a.local {
        cmd.push("-f".into());
    }
    if a.remove {
        cmd.push("-r".into());
    }
    cmd.push(a.name.clone());
    cmd
}

/// The groups of `groups` as Ansible's `get_groups_set` gives them: each must exist;
/// `primary` (the user's gid, when there is a user) is left out; `names` resolves gids.
fn groups_set(
    a: &UserArgs,
    accounts: &Accounts,
    primary: Option<u32>,
    names: bool,
) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for g in a.groups.as_deref().unwrap_or("").split(',') {
        let g = g.trim();
        if g.is_empty() {
            continue;
        }
        let Some(info) = accounts.group(g) else {
            return Err(format!("Group {g} does not exist"));
        };
        if Some(info.gid) == primary && !names {
            continue;
        }
        let item = if names {
            info.name.clone()
        } else {
            g.to_string()
        };
        if !out.contains(&item) {
            out.push(item);
        }
    }
    Ok(out)
}

/// The civil date (UTC) of a time in seconds since the epoch, as `%Y-%m-%d`.
pub(super) fn utc_date(seconds: f64) -> String {
    let days = (seconds / 86400.0).floor() as i64;
    let (y, m, d) = civil(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z.rem_euclid(146097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `useradd` and, with `local`, the libuser commands that follow it.
pub(super) fn create(a: &UserArgs, accounts: &Accounts) -> Commands {
    let mut cmd = argv(&[if a.local { "luseradd" } else { "useradd" }]);
    if let Some(uid) = a.uid {
        cmd.extend(["-u".into(), uid.to_string()]);
        if a.non_unique {
            cmd.push("-o".into());
        }
    }
    if let Some(group) = &a.group {
        if accounts.group(group).is_none() {
            return Err(format!("Group {group} does not exist"));
        }
        cmd.extend(["-g".into(), group.clone()]);
    } else if accounts.group(&a.name).is_some() {
        // A group of the user's name exists: no user group (useradd would fail on it).
        cmd.push(if a.local { "-n" } else { "-N" }.into());
    }
    let groups = match a.groups.as_deref() {
        Some(g) if !g.is_empty() => groups_set(a, accounts, None, false)?,
        _ => Vec::new(),
    };
    if !groups.is_empty() && !a.local {
        cmd.extend(["-G".into(), groups.join(",")]);
    }
    if let Some(comment) = &a.comment {
        cmd.extend(["-c".into(), comment.clone()]);
    }
    if let Some(home) = &a.home {
        cmd.extend(["-d".into(), home.clone()]);
    }
    if let Some(shell) = &a.shell {
        cmd.extend(["-s".into(), shell.clone()]);
    }
    if let Some(expires) = a.expires
        && !a.local
    {
        cmd.push("-e".into());
        cmd.push(if expires < 0.0 {
            String::new()
        } else {
            utc_date(expires)
        });
    }
    if let Some(inactive) = a.inactive {
        cmd.extend(["-f".into(), inactive.to_string()]);
    }
    if let Some(password) = &a.password {
        cmd.push("-p".into());
        cmd.push(if a.password_lock == Some(true) {
            format!("!{password}")
        } else {
            password.clone()
        });
    }
    if a.create_home {
        if !a.local {
            cmd.push("-m".into());
        }
        if let Some(skel) = &a.skeleton {
            cmd.extend(["-k".into(), skel.clone()]);
        }
        if let Some(umask) = &a.umask {
            cmd.extend(["-K".into(), format!("UMASK={umask}")]);
        }
    } else {
        cmd.push("-M".into());
    }
    if a.system {
        cmd.push("-r".into());
    }
    if let Some(min) = a.uid_min {
        cmd.extend(["-K".into(), format!("UID_MIN={min}")]);
    }
    if let Some(max) = a.uid_max {
        cmd.extend(["-K".into(), format!("UID_MAX={max}")]);
    }
    cmd.push(a.name.clone());
    let mut all = vec![cmd];
    if a.local {
        if let Some(expires) = a.expires {
            let days = if expires < 0.0 {
                -1
            } else {
                (expires.floor() as i64).div_euclid(86400)
            };
            all.push(argv(&["lchage", "-E", &days.to_string(), &a.name]));
        }
        for g in groups {
            all.push(argv(&["lgroupmod", "-M", &a.name, &g]));
        }
    }
    Ok(all)
}

/// The user's password hash as Ansible's `user_info` has it: the passwd field, or the
/// shadow one when that is `x` (or empty).
pub(super) fn password_hash(accounts: &Accounts, name: &str) -> String {
    let Some(user) = accounts.user(name) else {
        return String::new();
    };
    if user.password.len() > 1 {
        return user.password.clone();
    }
    accounts
        .shadow(name)
        .map(|s| s.password.clone())
        .unwrap_or_default()
}

/// `usermod` when anything differs (and the libuser commands with `local`); empty when
/// the user is as asked.
pub(super) fn modify(a: &UserArgs, accounts: &Accounts) -> Commands {
    let Some(info) = accounts.user(&a.name) else {
        return Ok(Vec::new());
    };
    let mut cmd = argv(&[if a.local { "lusermod" } else { "usermod" }]);
    let mut lgroup_add: Vec<String> = Vec::new();
    let mut lgroup_del: Vec<String> = Vec::new();
    let mut lexpires: Option<i64> = None;
    if let Some(uid) = a.uid
        && i64::from(info.uid) != uid
    {
        cmd.extend(["-u".into(), uid.to_string()]);
        if a.non_unique {
            cmd.push("-o".into());
        }
    }
    if let Some(group) = &a.group {
        let Some(g) = accounts.group(group) else {
            return Err(format!("Group {group} does not exist"));
        };
        if info.gid != g.gid {
            cmd.extend(["-g".into(), g.gid.to_string()]);
        }
    }
    if let Some(wanted) = &a.groups {
        let current = accounts.memberships(&a.name, None);
        let mut need = false;
        let mut groups = Vec::new();
        if wanted.is_empty() {
            need = !current.is_empty() && !a.append;
        } else {
            groups = groups_set(a, accounts, None, true)?;
            let differs = |g: &String| !current.contains(g);
            let extra = current.iter().any(|g| !groups.contains(g));
            if groups.iter().any(differs) || extra {
                if a.append {
                    if groups.iter().any(differs) {
                        cmd.push("-a".into());
                        need = true;
                    }
                } else {
                    need = true;
                }
            }
        }
        if need {
            if a.local {
                lgroup_add = groups
                    .iter()
                    .filter(|g| !current.contains(g))
                    .cloned()
                    .collect();
                if !a.append {
                    lgroup_del = current
                        .iter()
                        .filter(|g| !groups.contains(g))
                        .cloned()
                        .collect();
                }
            } else {
                cmd.extend(["-G".into(), groups.join(",")]);
            }
        }
    }
    if let Some(comment) = &a.comment
        && info.gecos != *comment
    {
        cmd.extend(["-c".into(), comment.clone()]);
    }
    if let Some(home) = &a.home
        && info.home != *home
    {
        cmd.extend(["-d".into(), home.clone()]);
        if a.move_home {
            cmd.push("-m".into());
        }
    }
    if let Some(shell) = &a.shell
        && info.shell != *shell
    {
        cmd.extend(["-s".into(), shell.clone()]);
    }
    if let Some(expires) = a.expires {
        // Unreadable shadow: Ansible's `'' or '0'`.
        let current = match accounts.shadow(&a.name) {
            Some(s) if accounts.shadow_readable => s.expire,
            _ => 0,
        };
        if expires < 0.0 {
            if current >= 0 {
                if a.local {
                    lexpires = Some(-1);
                } else {
                    cmd.extend(["-e".into(), String::new()]);
                }
            }
        } else {
            let wanted_day = (expires / 86400.0).floor() as i64;
            if current < 0 || current != wanted_day {
                if a.local {
                    lexpires = Some((expires.floor() as i64).div_euclid(86400));
                } else {
                    cmd.extend(["-e".into(), utc_date(expires)]);
                }
            }
        }
    }
    if let Some(inactive) = a.inactive {
        cmd.extend(["-f".into(), inactive.to_string()]);
    }
    let hash = password_hash(accounts, &a.name);
    match a.password_lock {
        Some(true) if !hash.starts_with('!') => cmd.push("-L".into()),
        Some(false) if hash.starts_with('!') => cmd.push("-U".into()),
        _ => {}
    }
    if a.update_password_always
        && let Some(password) = &a.password
        && hash.trim_start_matches('!') != password.trim_start_matches('!')
    {
        cmd.retain(|c| c != "-U" && c != "-L");
        cmd.push("-p".into());
        cmd.push(if a.password_lock == Some(true) {
            format!("!{password}")
        } else {
            password.clone()
        });
    }
    let mut all = Vec::new();
    if cmd.len() > 1 {
        cmd.push(a.name.clone());
        all.push(cmd);
    }
    if a.local {
        if let Some(days) = lexpires {
            all.push(argv(&["lchage", "-E", &days.to_string(), &a.name]));
        }
        for g in lgroup_add {
            all.push(argv(&["lgroupmod", "-M", &a.name, &g]));
        }
        for g in lgroup_del {
            all.push(argv(&["lgroupmod", "-m", &a.name, &g]));
        }
    }
    Ok(all)
}

/// `chage` for the `password_expire_*` values that differ from /etc/shadow's.
pub(super) fn password_expiry(a: &UserArgs, accounts: &Accounts) -> Option<Vec<String>> {
    let shadow = accounts.shadow(&a.name);
    let differs = |wanted: Option<i64>, current: fn(&super::accounts::Shadow) -> i64| {
        wanted.filter(|w| shadow.is_none_or(|s| current(s) != *w))
    };
    let min = differs(a.expire_min, |s| s.min);
    let max = differs(a.expire_max, |s| s.max);
    let warn = differs(a.expire_warn, |s| s.warn);
    if min.is_none() && max.is_none() && warn.is_none() {
        return None;
    }
    let mut cmd = argv(&["chage"]);
    for (flag, value) in [("-m", min), ("-M", max), ("-W", warn)] {
        if let Some(v) = value {
            cmd.extend([flag.to_string(), v.to_string()]);
        }
    }
    cmd.push(a.name.clone());
    Some(cmd)
}

/// Ansible's warning for a `password` that does not look like a crypt(3) hash.
pub(super) fn looks_unhashed(password: &str) -> bool {
    if password.is_empty() || ["*", "!", "*************"].contains(&password) {
        return false;
    }
    if password.contains([':', '*', '!']) || !password.contains('$') {
        return true;
    }
    let fields: Vec<&str> = password.split('$').collect();
    if fields.len() < 3 {
        return true;
    }
    let last = fields[fields.len() - 1];
    let bad_char = last
        .chars()
        .any(|c| !(c.is_ascii_alphanumeric() || c == '.' || c == '/' || c == '='));
    let bad_len = match fields[1] {
        "1" => last.len() != 22,
        "5" | "y" => last.len() != 43,
        "6" => last.len() != 86,
        _ => false,
    };
    bad_char || bad_len
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::accounts::{parse_group, parse_passwd, parse_shadow};

    fn accounts() -> Accounts {
        Accounts {
            users: parse_passwd("alice:x:1001:1001:Alice:/home/alice:/bin/bash\n"),
            groups: parse_group("alice:x:1001:\nsudo:x:27:alice\nweb:x:1002:\nbob:x:1003:\n"),
            shadow: parse_shadow("alice:$6$salt$hash:19000:0:99999:7:::\n"),
            shadow_readable: true,
        }
    }

    fn user(name: &str) -> UserArgs {
        UserArgs {
            name: name.into(),
            create_home: true,
            update_password_always: true,
            ..UserArgs::default()
        }
    }

    fn words(cmds: Commands) -> Vec<String> {
        cmds.unwrap().iter().map(|c| c.join(" ")).collect()
    }

    #[test]
    fn useradd_flags_in_ansibles_order() {
        let a = UserArgs {
            uid: Some(1500),
            groups: Some("web,sudo".into()),
            comment: Some("Bob B".into()),
            shell: Some("/bin/sh".into()),
            system: true,
            expires: Some(1_700_000_000.0),
            ..user("bob")
        };
        assert_eq!(
            words(create(&a, &accounts())),
            ["useradd -u 1500 -N -G web,sudo -c Bob B -s /bin/sh -e 2023-11-14 -m -r bob"]
        );
        let missing = UserArgs {
            group: Some("nope".into()),
            ..user("carol")
        };
        assert_eq!(
            create(&missing, &accounts()).unwrap_err(),
            "Group nope does not exist"
        );
        let no_home = UserArgs {
            create_home: false,
            ..user("carol")
        };
        assert_eq!(words(create(&no_home, &accounts())), ["useradd -M carol"]);
    }

    #[test]
    fn usermod_only_for_what_differs() {
        let same = UserArgs {
            uid: Some(1001),
            group: Some("alice".into()),
            groups: Some("sudo".into()),
            comment: Some("Alice".into()),
            shell: Some("/bin/bash".into()),
            password: Some("$6$salt$hash".into()),
            ..user("alice")
        };
        assert!(modify(&same, &accounts()).unwrap().is_empty());
        let more = UserArgs {
            groups: Some("web".into()),
            append: true,
            shell: Some("/bin/sh".into()),
            ..user("alice")
        };
        assert_eq!(
            words(modify(&more, &accounts())),
            ["usermod -a -G web -s /bin/sh alice"]
        );
        let cleared = UserArgs {
            groups: Some(String::new()),
            ..user("alice")
        };
        assert_eq!(words(modify(&cleared, &accounts())), ["usermod -G  alice"]);
        let lock = UserArgs {
            password_lock: Some(true),
            ..user("alice")
        };
        assert_eq!(words(modify(&lock, &accounts())), ["usermod -L alice"]);
        let expired = UserArgs {
            expires: Some(-1.0),
            ..user("alice")
        };
        assert!(modify(&expired, &accounts()).unwrap().is_empty());
    }

    #[test]
    fn userdel_chage_and_password_warning() {
        let a = UserArgs {
            force: true,
            remove: true,
            ..user("alice")
        };
        assert_eq!(remove(&a).join(" "), "userdel -f -r alice");
        let expiry = UserArgs {
            expire_max: Some(99999),
            expire_min: Some(1),
            ..user("alice")
        };
        assert_eq!(
            password_expiry(&expiry, &accounts()).unwrap().join(" "),
            "chage -m 1 alice"
        );
        assert!(looks_unhashed("secret"));
        assert!(!looks_unhashed(&format!("$6$salt${}", "a".repeat(86))));
        assert!(!looks_unhashed("!"));
        assert_eq!(utc_date(0.0), "1970-01-01");
        assert_eq!(utc_date(951_782_400.0), "2000-02-29");
    }
}
