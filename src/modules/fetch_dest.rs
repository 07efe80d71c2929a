//! Where `fetch` puts a remote file on the controller, as Ansible's fetch action computes
//! it: `dest/<inventory_hostname>/<src>` normally, `dest` itself (or `dest/<basename>` for a
//! trailing slash) with `flat`, relative paths beside the playbook, then `normpath`.

use std::path::{Path, PathBuf};

/// What the destination depends on besides the arguments.
pub(super) struct Where<'a> {
    /// The remote path with `~` expanded (the result's `file`).
    pub source: &'a str,
    pub dest: &'a str,
    pub flat: bool,
    pub host: &'a str,
    /// Ansible's `path_dwim` base: the playbook's directory (a role's tasks too).
    pub base: &'a Path,
}

/// The local path, or Ansible's message for a `flat` dest that names a directory.
pub(super) fn local_dest(w: &Where, is_dir: impl Fn(&Path) -> bool) -> Result<PathBuf, String> {
    let dwim = |p: &str| -> String {
        let expanded = crate::tilde::expand_user(p);
        if expanded.starts_with('/') {
            expanded
        } else {
            w.base.join(expanded).to_string_lossy().into_owned()
        }
    };
    let dest = if w.flat {
        if is_dir(Path::new(w.dest)) && !w.dest.ends_with('/') {
            return Err("dest is an existing directory, use a trailing slash if you want to fetch src into that directory".into());
        }
        let mut dest = w.dest.to_string();
        if dest.ends_with('/') {
            let base = w.source.rsplit('/').next().unwrap_or(w.source);
            // The remote path comes from the agent's reply: a name that is no name would
            // put the file beside the folder instead of in it.
            if matches!(base, "" | "." | "..") {
                return Err(traversal(&dest, &format!("{dest}{base}")));
            }
            dest.push_str(base);
            if is_dir(Path::new(&dest)) {
                return Err(format!(
                    "calculated dest '{dest}' is an existing directory, use another path that does not point to an existing directory"
                ));
            }
        }
        if dest.starts_with('/') {
            dest
        } else {
            dwim(&dest)
        }
    } else {
        let root = normpath(&format!("{}/{}", dwim(w.dest), w.host));
        let dest = normpath(&format!("{root}/{}", w.source));
        // Ansible joins the path it asked for; here the remote path is the one the agent
        // reported, so a lying agent (or a `src` with `..`) must not climb out of
        // `dest/<host>/`.
        if !dest.starts_with(&format!("{}/", root.trim_end_matches('/'))) {
            return Err(traversal(&root, &dest));
        }
        return Ok(PathBuf::from(dest));
    };
    Ok(PathBuf::from(normpath(&dest)))
}

fn traversal(root: &str, dest: &str) -> String {
    format!("Detected directory traversal, expected to be contained in '{root}' but got '{dest}'")
}

/// The folder a per-host fetch must stay inside, `dest/<host>`; `None` with `flat`, where
/// the user names the file itself.
pub(super) fn host_root(w: &Where) -> Option<PathBuf> {
    if w.flat {
        return None;
    }
    let expanded = crate::tilde::expand_user(w.dest);
    let dest = if expanded.starts_with('/') {
        expanded
    } else {
        w.base.join(expanded).to_string_lossy().into_owned()
    };
    Some(PathBuf::from(normpath(&format!("{dest}/{}", w.host))))
}

/// Whether the directories that already exist on the way to `dest` lead out of `root`
/// through a symlink (one planted in a shared folder such as /tmp, say): the write would
/// land wherever it points. Checked on what exists; `Download::start` creates the rest as
/// real directories.
pub(super) fn leaves_through_symlink(dest: &Path, root: &Path) -> Option<String> {
    let Ok(real_root) = root.canonicalize() else {
        // Nothing of the root exists yet, so nothing below it can be a link.
        return None;
    };
    let mut existing = dest.parent()?;
    while !existing.exists() {
        existing = existing.parent()?;
    }
    let real = existing.canonicalize().ok()?;
    (!real.starts_with(&real_root)).then(|| {
        format!(
            "fetch will not write {}: {} leads out of {} (to {}) through a symbolic link",
            dest.display(),
            existing.display(),
            root.display(),
            real.display()
        )
    })
}

/// Python's `os.path.normpath` for POSIX paths: no empty or `.` parts, `..` taken back
/// where it can be, a leading `//` (exactly two) kept.
pub(super) fn normpath(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let initial = if path.starts_with("//") && !path.starts_with("///") {
        "//"
    } else if path.starts_with('/') {
        "/"
    } else {
        ""
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if initial.is_empty() {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = format!("{initial}{}", parts.join("/"));
    if joined.is_empty() {
        ".".into()
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest(source: &str, dest: &str, flat: bool, dirs: &[&str]) -> Result<String, String> {
        let w = Where {
            source,
            dest,
            flat,
            host: "web1",
            base: Path::new("/play"),
        };
        local_dest(&w, |p| dirs.iter().any(|d| Path::new(d) == p)).map(|p| p.display().to_string())
    }

    #[test]
    fn per_host_layout_keeps_the_remote_path() {
        assert_eq!(
            dest("/var/log/syslog", "out", false, &[]).unwrap(),
            "/play/out/web1/var/log/syslog"
        );
        assert_eq!(
            dest("/etc/hosts", "/tmp/f/", false, &[]).unwrap(),
            "/tmp/f/web1/etc/hosts"
        );
        assert_eq!(
            dest("rel/file", "/tmp/f", false, &[]).unwrap(),
            "/tmp/f/web1/rel/file"
        );
    }

    #[test]
    fn flat_names_the_file_itself() {
        assert_eq!(dest("/etc/hosts", "/tmp/h", true, &[]).unwrap(), "/tmp/h");
        assert_eq!(
            dest("/etc/hosts", "got/", true, &[]).unwrap(),
            "/play/got/hosts"
        );
        assert_eq!(
            dest("/etc/hosts", "/tmp/d", true, &["/tmp/d"]).unwrap_err(),
            "dest is an existing directory, use a trailing slash if you want to fetch src into that directory"
        );
        assert_eq!(
            dest("/etc/hosts", "/tmp/d/", true, &["/tmp/d/hosts"]).unwrap_err(),
            "calculated dest '/tmp/d/hosts' is an existing directory, use another path that does not point to an existing directory"
        );
    }

    #[test]
    fn normpath_is_pythons() {
        assert_eq!(normpath("/a//b/./c/../d"), "/a/b/d");
        assert_eq!(normpath("a/../../b"), "../b");
        assert_eq!(normpath("/../x"), "/x");
        assert_eq!(normpath("//x/y/"), "//x/y");
        assert_eq!(normpath("///x"), "/x");
        assert_eq!(normpath(""), ".");
        assert_eq!(normpath("a/.."), ".");
    }
}
