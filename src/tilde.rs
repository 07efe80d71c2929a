//! `~` in controller-side paths, as Python's `os.path.expanduser` (posixpath), which
//! Ansible applies to every path it resolves on the controller (`unfrackpath`,
//! `path_dwim`, config `resolve_path`, the `expanduser` filter, ssh's private key file).
//!
//! This module sits at the bottom of the dependency graph: it uses nothing from the crate.

use std::path::{Path, PathBuf};

/// `~` and `~/x` against the controller user's home (`$HOME` when it is set, else the
/// passwd entry of our uid), `~user` and `~user/x` against that user's passwd entry.
/// Anything else, or a home that cannot be found, leaves the path as written.
pub fn expand_user(path: &str) -> String {
    if !path.starts_with('~') {
        return path.to_string();
    }
    expand_user_with(path, home_dir().as_deref())
}

/// [`expand_user`] with the current user's home given (`None`: leave `~` and `~/x` as
/// written), for callers that carry the home they were started with.
pub fn expand_user_with(path: &str, current_home: Option<&Path>) -> String {
    let Some(rest) = path.strip_prefix('~') else {
        return path.to_string();
    };
    let (user, tail) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    let home = if user.is_empty() {
        current_home.map(Path::to_path_buf)
    } else {
        passwd_home_of(user).map(PathBuf::from)
    };
    let Some(home) = home else {
        return path.to_string();
    };
    let home = home.to_string_lossy();
    let joined = format!("{}{tail}", home.trim_end_matches('/'));
    if joined.is_empty() {
        "/".to_string()
    } else {
        joined
    }
}

/// [`expand_user`] as a path.
pub fn expand_user_path(path: &str) -> PathBuf {
    PathBuf::from(expand_user(path))
}

/// The controller user's home as `~` means it: `$HOME` when set (even empty, as Python),
/// else the passwd entry of our uid.
pub fn home_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("HOME") {
        return Some(PathBuf::from(home));
    }
    current_user_passwd().map(|(_, home)| PathBuf::from(home))
}

/// (name, home) from /etc/passwd for our uid, found without libc via /proc/self's owner.
pub fn current_user_passwd() -> Option<(String, String)> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 6 && fields[2].parse::<u32>().ok() == Some(uid))
            .then(|| (fields[0].to_string(), fields[5].to_string()))
    })
}

fn passwd_home_of(user: &str) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 6 && fields[0] == user).then(|| fields[5].to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_as_python_expanduser() {
        let home = home_dir().expect("the test runs with a home");
        let home = home.to_string_lossy().trim_end_matches('/').to_string();
        assert_eq!(expand_user("~"), if home.is_empty() { "/" } else { &home });
        assert_eq!(expand_user("~/x/y"), format!("{home}/x/y"));
        assert_eq!(expand_user("/abs/~/x"), "/abs/~/x");
        assert_eq!(expand_user("rel/x"), "rel/x");
        assert_eq!(expand_user("~no-such-user-here/x"), "~no-such-user-here/x");
        // root is in every /etc/passwd this runs on.
        let root = passwd_home_of("root").expect("root in /etc/passwd");
        assert_eq!(
            expand_user("~root/x"),
            format!("{}/x", root.trim_end_matches('/'))
        );
        assert_eq!(expand_user("~root"), root.trim_end_matches('/'));
    }
}
