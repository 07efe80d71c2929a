//! `Op::ListTree`: everything under a directory, each entry described as `Stat` does.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use turbo_proto::{Digest, FileKind, OpError, OpResult, SkippedPath, StatInfo, TreeListing};

use super::stat::{describe, digest};
use super::{Agent, lstat, stat_follow};

/// What one walk asks for.
struct Walk {
    max_depth: Option<u32>,
    follow: bool,
    checksum: Option<Digest>,
    /// (dev, inode) of the directories from the root down to the current one: entering
    /// one of them again is a symlink loop.
    ancestors: Vec<(u64, u64)>,
}

pub fn list_tree(
    agent: &mut Agent,
    path: &str,
    max_depth: Option<u32>,
    follow: bool,
    checksum: Option<Digest>,
) -> Result<OpResult, OpError> {
    let root = agent.expand(path);
    let meta = if follow {
        stat_follow(&root)?
    } else {
        lstat(&root)?
    };
    let Some(meta) = meta else {
        return Ok(OpResult::Tree(TreeListing {
            root: StatInfo::missing(root.to_string_lossy().into_owned()),
            entries: Vec::new(),
            skipped: Vec::new(),
        }));
    };
    let mut listing = TreeListing {
        root: describe(agent, &root, &meta)?,
        entries: Vec::new(),
        skipped: Vec::new(),
    };
    // The root is entered through a symlink whatever `follow` says, as find and os.walk
    // enter it; `follow` is about the links beneath.
    if let Ok(dir) = fs::metadata(&root)
        && dir.is_dir()
        && max_depth != Some(0)
    {
        let mut walk = Walk {
            max_depth,
            follow,
            checksum,
            ancestors: vec![(dir.dev(), dir.ino())],
        };
        walk.dir(agent, &root, 1, &mut listing);
    }
    Ok(OpResult::Tree(listing))
}

impl Walk {
    /// Lists `dir`'s entries, which are at `depth`, and what is under them.
    fn dir(&mut self, agent: &mut Agent, dir: &Path, depth: u32, out: &mut TreeListing) {
        let skip = |out: &mut TreeListing, path: &Path, why: String| {
            out.skipped.push(SkippedPath {
                path: path.to_string_lossy().into_owned(),
                message: why,
            })
        };
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => return skip(out, dir, e.to_string()),
        };
        let mut names: Vec<OsString> = Vec::new();
        for entry in entries {
            match entry {
                Ok(entry) => names.push(entry.file_name()),
                Err(e) => skip(out, dir, e.to_string()),
            }
        }
        // Byte order, as the OS strings compare on Unix.
        names.sort();
        for name in names {
            let path = dir.join(&name);
            // A dangling link under `follow` is still listed, as the link it is.
            let meta = match self.follow.then(|| fs::metadata(&path)) {
                Some(Ok(meta)) => meta,
                _ => match fs::symlink_metadata(&path) {
                    Ok(meta) => meta,
                    // Gone since the directory was read: nothing to list.
                    Err(_) => continue,
                },
            };
            let mut info = match describe(agent, &path, &meta) {
                Ok(info) => info,
                Err(e) => {
                    skip(out, &path, e.message);
                    continue;
                }
            };
            if let Some(algorithm) = self.checksum
                && info.kind == FileKind::File
                && info.readable
            {
                match digest(&path, algorithm) {
                    Ok(sum) => info.checksum = Some(sum),
                    Err(e) => skip(out, &path, e.message),
                }
            }
            out.entries.push(info);
            let deeper = self.max_depth.is_none_or(|max| depth < max);
            let id = (meta.dev(), meta.ino());
            if meta.is_dir() && deeper && !self.ancestors.contains(&id) {
                self.ancestors.push(id);
                self.dir(agent, &path, depth + 1, out);
                self.ancestors.pop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use std::os::unix::fs::symlink;

    fn list(a: &mut Agent, path: &str, depth: Option<u32>, follow: bool) -> TreeListing {
        match list_tree(a, path, depth, follow, Some(Digest::Sha1)).unwrap() {
            OpResult::Tree(t) => t,
            other => panic!("{other:?}"),
        }
    }

    fn relative(t: &TreeListing) -> Vec<String> {
        let prefix = format!("{}/", t.root.path);
        t.entries
            .iter()
            .map(|e| e.path.strip_prefix(&prefix).unwrap().to_string())
            .collect()
    }

    fn tree(dir: &TempDir) {
        fs::create_dir_all(dir.join("r/a/deep")).unwrap();
        fs::create_dir_all(dir.join("elsewhere/inner")).unwrap();
        fs::write(dir.join("r/a/deep/f"), b"x").unwrap();
        fs::write(dir.join("r/a-b"), b"abc").unwrap();
        fs::write(dir.join("r/B"), b"").unwrap();
        fs::write(dir.join("elsewhere/inner/g"), b"").unwrap();
        symlink("../elsewhere", dir.join("r/link")).unwrap();
        symlink("..", dir.join("r/a/up")).unwrap();
    }

    #[test]
    fn depth_first_sorted_and_links_not_entered() {
        let dir = TempDir::new();
        tree(&dir);
        let mut a = agent(dir.path());
        let t = list(&mut a, "~/r", None, false);
        assert!(t.root.exists && t.root.kind == FileKind::Directory);
        assert_eq!(
            relative(&t),
            ["B", "a", "a/deep", "a/deep/f", "a/up", "a-b", "link"]
        );
        let by_name = |n: &str| &t.entries[relative(&t).iter().position(|r| r == n).unwrap()];
        assert_eq!(by_name("link").kind, FileKind::Symlink);
        assert_eq!(by_name("link").link_target.as_deref(), Some("../elsewhere"));
        assert_eq!(
            by_name("a-b")
                .checksum
                .as_deref()
                .map(crate::md::hex)
                .as_deref(),
            Some("a9993e364706816aba3e25717850c26c9cd0d89d")
        );
        assert_eq!(by_name("a").checksum, None);
        assert!(t.skipped.is_empty());

        assert_eq!(
            relative(&list(&mut a, "~/r", Some(1), false)),
            ["B", "a", "a-b", "link"]
        );
        assert!(list(&mut a, "~/r", Some(0), false).entries.is_empty());
    }

    #[test]
    fn follow_enters_links_and_stops_at_loops() {
        let dir = TempDir::new();
        tree(&dir);
        let mut a = agent(dir.path());
        let t = list(&mut a, "~/r", None, true);
        let names = relative(&t);
        assert!(names.contains(&"link/inner/g".to_string()), "{names:?}");
        // a/up is r itself: listed as a directory, not entered again.
        assert!(names.contains(&"a/up".to_string()));
        assert!(!names.iter().any(|n| n.starts_with("a/up/")), "{names:?}");
        let up = &t.entries[names.iter().position(|n| n == "a/up").unwrap()];
        assert_eq!(up.kind, FileKind::Directory);
    }

    #[test]
    fn missing_root_file_root_and_linked_root() {
        let dir = TempDir::new();
        tree(&dir);
        let mut a = agent(dir.path());
        let t = list(&mut a, "~/nope", None, false);
        assert!(!t.root.exists && t.entries.is_empty());
        let t = list(&mut a, "~/r/B", None, false);
        assert_eq!((t.root.kind, t.entries.len()), (FileKind::File, 0));
        // A root that is a link to a directory is listed, and described as the link.
        let t = list(&mut a, "~/r/link", None, false);
        assert_eq!(t.root.kind, FileKind::Symlink);
        assert_eq!(relative(&t), ["inner", "inner/g"]);
    }
}
