//! /etc/passwd and /etc/group read by hand: the agent is linked statically against glibc,
//! whose getpwuid needs NSS modules a static binary cannot load.

use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasswdEntry {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub gecos: String,
    pub home: String,
    pub shell: String,
}

/// Entries of a passwd(5) file. Comments, NIS `+`/`-` lines and malformed lines are
/// skipped rather than failing: one odd line must not stop the agent.
pub fn parse_passwd(text: &str) -> Vec<PasswdEntry> {
    text.lines()
        .filter_map(|line| {
            if line.starts_with(['#', '+', '-']) {
                return None;
            }
            let fields: Vec<&str> = line.split(':').collect();
            if fields.len() < 7 || fields[0].is_empty() {
                return None;
            }
            Some(PasswdEntry {
                name: fields[0].to_string(),
                uid: fields[2].parse().ok()?,
                gid: fields[3].parse().ok()?,
                gecos: fields[4].to_string(),
                home: fields[5].to_string(),
                shell: fields[6].to_string(),
            })
        })
        .collect()
}

/// (name, gid) pairs of a group(5) file.
pub fn parse_group(text: &str) -> Vec<(String, u32)> {
    text.lines()
        .filter_map(|line| {
            if line.starts_with(['#', '+', '-']) {
                return None;
            }
            let mut fields = line.split(':');
            let name = fields.next().filter(|n| !n.is_empty())?;
            let _password = fields.next()?;
            let gid = fields.next()?.parse().ok()?;
            Some((name.to_string(), gid))
        })
        .collect()
}

pub fn read_passwd() -> Vec<PasswdEntry> {
    parse_passwd(&std::fs::read_to_string("/etc/passwd").unwrap_or_default())
}

/// Python's `os.path.expanduser` on this host: `~` and `~/x` against `home` (the agent
/// user's), `~user` and `~user/x` against that user's passwd entry; an unknown user, or
/// anything else, stays as written.
pub fn expand_tilde(path: &str, home: &str) -> String {
    let Some(rest) = path.strip_prefix('~') else {
        return path.to_string();
    };
    let (user, tail) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    let home = if user.is_empty() {
        home.to_string()
    } else {
        match read_passwd().into_iter().find(|e| e.name == user) {
            Some(entry) => entry.home,
            None => return path.to_string(),
        }
    };
    let joined = format!("{}{tail}", home.trim_end_matches('/'));
    if joined.is_empty() {
        "/".to_string()
    } else {
        joined
    }
}

pub fn user_by_uid(uid: u32) -> Option<PasswdEntry> {
    read_passwd().into_iter().find(|e| e.uid == uid)
}

/// uid/gid to names for file results, loaded on first use. A miss reloads once, because a
/// command run earlier in the same session may have created the user.
#[derive(Default)]
pub struct Names {
    users: Option<HashMap<u32, String>>,
    groups: Option<HashMap<u32, String>>,
    user_ids: Option<HashMap<String, u32>>,
    group_ids: Option<HashMap<String, u32>>,
}

impl Names {
    pub fn user(&mut self, uid: u32) -> String {
        lookup(&mut self.users, uid, || {
            read_passwd().into_iter().map(|e| (e.uid, e.name)).collect()
        })
    }

    /// The uid an `owner` argument names; `None` when no such user exists.
    pub fn uid_of(&mut self, written: &str) -> Option<u32> {
        id_of(&mut self.user_ids, written, || {
            read_passwd().into_iter().map(|e| (e.name, e.uid)).collect()
        })
    }

    pub fn gid_of(&mut self, written: &str) -> Option<u32> {
        id_of(&mut self.group_ids, written, || {
            parse_group(&std::fs::read_to_string("/etc/group").unwrap_or_default())
        })
    }

    pub fn group(&mut self, gid: u32) -> String {
        lookup(&mut self.groups, gid, || {
            parse_group(&std::fs::read_to_string("/etc/group").unwrap_or_default())
                .into_iter()
                .map(|(name, gid)| (gid, name))
                .collect()
        })
    }
}

/// An `owner`/`group` argument as an id: a number is taken as it is (as chown does), a
/// name is looked up.
fn id_of(
    cache: &mut Option<HashMap<String, u32>>,
    written: &str,
    load: impl Fn() -> Vec<(String, u32)>,
) -> Option<u32> {
    if let Ok(id) = written.parse() {
        return Some(id);
    }
    if let Some(id) = cache.as_ref().and_then(|m| m.get(written)) {
        return Some(*id);
    }
    let mut map = HashMap::new();
    for (name, id) in load() {
        map.entry(name).or_insert(id);
    }
    cache.insert(map).get(written).copied()
}

fn lookup(
    cache: &mut Option<HashMap<u32, String>>,
    id: u32,
    load: impl Fn() -> Vec<(u32, String)>,
) -> String {
    let fill = |load: &dyn Fn() -> Vec<(u32, String)>| {
        let mut map = HashMap::new();
        for (id, name) in load() {
            // The first line wins, as getpwuid does.
            map.entry(id).or_insert(name);
        }
        map
    };
    if let Some(name) = cache.as_ref().and_then(|m| m.get(&id)) {
        return name.clone();
    }
    let map = cache.insert(fill(&load));
    map.get(&id).cloned().unwrap_or_else(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str = "\
root:x:0:0:root:/root:/bin/bash
# a comment
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
+nisuser::::::
broken line
deploy:x:1000:1001:Deploy User,,,:/home/deploy:/bin/bash
badid:x:abc:1:x:/x:/bin/sh
";

    #[test]
    fn passwd_entries_are_parsed_and_junk_is_skipped() {
        let entries = parse_passwd(PASSWD);
        assert_eq!(entries.len(), 3);
        assert_eq!(
            entries[2],
            PasswdEntry {
                name: "deploy".into(),
                uid: 1000,
                gid: 1001,
                gecos: "Deploy User,,,".into(),
                home: "/home/deploy".into(),
                shell: "/bin/bash".into(),
            }
        );
        assert_eq!(entries[0].home, "/root");
    }

    #[test]
    fn group_entries_are_parsed() {
        let groups = parse_group("root:x:0:\nwheel:x:10:alice,bob\n\n#x:x:1:\nodd\n");
        assert_eq!(groups, vec![("root".into(), 0), ("wheel".into(), 10)]);
    }

    #[test]
    fn unknown_ids_become_numbers_and_known_ones_names() {
        let mut names = Names::default();
        assert_eq!(names.user(0), "root");
        assert_eq!(names.group(0), "root");
        assert_eq!(names.user(4_000_000_000), "4000000000");
    }

    #[test]
    fn owner_arguments_are_names_or_numbers() {
        let mut names = Names::default();
        assert_eq!(names.uid_of("root"), Some(0));
        assert_eq!(names.gid_of("root"), Some(0));
        assert_eq!(names.uid_of("4242"), Some(4242));
        assert_eq!(names.uid_of("no-such-user-here"), None);
        assert_eq!(names.gid_of("no-such-group-here"), None);
    }
}
