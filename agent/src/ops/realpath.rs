//! Python's `os.path.realpath` (not strict), which Ansible's `stat` reports as
//! `lnk_source`: unlike canonicalize(3), a missing part is kept as written and a symlink
//! loop is left unresolved from the link on, so a dangling link still has an answer.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// Resolution of each link met so far: `None` while it is being resolved (a loop).
type Seen = HashMap<PathBuf, Option<PathBuf>>;

pub fn realpath(path: &Path) -> PathBuf {
    let start = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
    };
    join_real(start, path, &mut Seen::new()).0
}

/// `base` (already resolved) joined with `rest`, links in `rest` resolved; false when a
/// loop stopped the resolution.
fn join_real(mut base: PathBuf, rest: &Path, seen: &mut Seen) -> (PathBuf, bool) {
    if rest.is_absolute() {
        base = PathBuf::from("/");
    }
    let parts: Vec<&OsStr> = rest
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            Component::ParentDir => Some(OsStr::new("..")),
            _ => None,
        })
        .collect();
    for (i, name) in parts.iter().enumerate() {
        if *name == ".." {
            base.pop();
            continue;
        }
        let next = base.join(name);
        let is_link = fs::symlink_metadata(&next).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            base = next;
            continue;
        }
        match seen.get(&next) {
            Some(Some(resolved)) => {
                base = resolved.clone();
                continue;
            }
            Some(None) => return (joined(next, &parts[i + 1..]), false),
            None => {}
        }
        let Ok(target) = fs::read_link(&next) else {
            base = next;
            continue;
        };
        seen.insert(next.clone(), None);
        let (resolved, ok) = join_real(base, &target, seen);
        if !ok {
            return (joined(resolved, &parts[i + 1..]), false);
        }
        seen.insert(next, Some(resolved.clone()));
        base = resolved;
    }
    (base, true)
}

fn joined(mut base: PathBuf, rest: &[&OsStr]) -> PathBuf {
    for part in rest {
        base.push(part);
    }
    base
}

#[cfg(test)]
mod tests {
    use super::super::testutil::TempDir;
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn resolves_like_python_without_strictness() {
        let dir = TempDir::new();
        // TMPDIR may itself sit behind a symlink: compare against its own resolution.
        let root = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir(root.join("real")).unwrap();
        fs::write(root.join("real/f"), b"").unwrap();
        symlink("real", root.join("rel")).unwrap();
        symlink(root.join("rel/f"), root.join("abs")).unwrap();
        symlink("nowhere/x", root.join("dangling")).unwrap();
        symlink("loop2", root.join("loop1")).unwrap();
        symlink("loop1", root.join("loop2")).unwrap();

        assert_eq!(realpath(&root.join("abs")), root.join("real/f"));
        assert_eq!(realpath(&root.join("rel/../rel/f")), root.join("real/f"));
        assert_eq!(realpath(&root.join("dangling")), root.join("nowhere/x"));
        // Python: the loop is returned from the link that closes it, unresolved.
        assert_eq!(realpath(&root.join("loop1/x")), root.join("loop1/x"));
        assert_eq!(realpath(Path::new("/")), PathBuf::from("/"));
        assert_eq!(realpath(Path::new("/..")), PathBuf::from("/"));
    }
}
