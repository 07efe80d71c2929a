use std::os::unix::fs::PermissionsExt;

use super::*;

fn opts(args: &[(&str, bool)]) -> Options {
    let mut o = Options {
        checksum: false,
        delete: false,
        existing_only: false,
        dirs: false,
        recursive: true,
        links: true,
        copy_links: false,
        perms: true,
        times: true,
        owner: true,
        group: true,
        filters: Vec::new(),
        rsync_opts: Vec::new(),
        archive: true,
        compress: true,
        delay_updates: true,
        pull: false,
        set_remote_user: true,
        dest_port: None,
        private_key: None,
        ssh_connection_multiplexing: false,
        verify_host: false,
        partial: false,
    };
    for (name, on) in args {
        match *name {
            "delete" => o.delete = *on,
            "checksum" => o.checksum = *on,
            "existing_only" => o.existing_only = *on,
            "links" => o.links = *on,
            _ => panic!("no option {name}"),
        }
    }
    o
}

fn stat(path: &str, kind: FileKind, mode: u32, size: u64, mtime: i64) -> StatInfo {
    StatInfo {
        path: path.into(),
        exists: kind != FileKind::Missing,
        kind,
        mode,
        size,
        mtime,
        ..StatInfo::default()
    }
}

/// A source tree `src/{a, sub/c}` with fixed modes and times.
fn source_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    std::fs::write(src.join("a"), "alpha\n").unwrap();
    std::fs::write(src.join("sub/c"), "c\n").unwrap();
    for (name, mode) in [("a", 0o644), ("sub/c", 0o600), ("sub", 0o755), ("", 0o755)] {
        let path = src.join(name);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        file.set_times(
            std::fs::FileTimes::new()
                .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1000)),
        )
        .unwrap();
    }
    dir
}

fn listing(entries: Vec<(&str, StatInfo)>, root: StatInfo, dest: StatInfo) -> Listing {
    Listing {
        dest,
        root,
        entries: entries
            .into_iter()
            .map(|(rel, s)| (rel.to_string(), s))
            .collect(),
        root_user: false,
        dest_path: "/d".into(),
        target: "/d".into(),
    }
}

#[test]
fn excludes_match_names_paths_and_directories_as_rsync_does() {
    let name = Filter::new(true, "*.log");
    assert!(name.matches("x.log", false));
    assert!(name.matches("deep/dir/x.log", false));
    assert!(!name.matches("x.logs", false));
    let path = Filter::new(true, "sub/c");
    assert!(path.matches("sub/c", false));
    assert!(path.matches("top/sub/c", false));
    assert!(!path.matches("c", false));
    let anchored = Filter::new(true, "/sub/c");
    assert!(anchored.matches("sub/c", false));
    assert!(!anchored.matches("top/sub/c", false));
    let dirs = Filter::new(true, "cache/");
    assert!(dirs.matches("cache", true));
    assert!(!dirs.matches("cache", false));
    let deep = Filter::new(true, "a/**/z");
    assert!(deep.matches("a/b/c/z", false));
    let rules = [Filter::new(false, "keep.log"), Filter::new(true, "*.log")];
    assert!(!excluded(&rules, "keep.log", false));
    assert!(excluded(&rules, "drop.log", false));
}

#[test]
fn rsync_opts_take_filters_in_both_spellings_and_refuse_the_rest() {
    let filters = parse_rsync_opts(&[
        "--exclude=.git".into(),
        "--include keep".into(),
        "--no-motd".into(),
    ])
    .unwrap();
    assert_eq!(
        filters,
        vec![Filter::new(true, ".git"), Filter::new(false, "keep")]
    );
    let err = parse_rsync_opts(&["--chmod=F644".into()])
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "rsync_opts: '--chmod=F644' is not supported by turbo-play's synchronize, which copies \
         without rsync (it takes --exclude, --include and --no-motd); remove it, or run this \
         task with ansible-playbook"
    );
    assert!(parse_rsync_opts(&["--exclude".into()]).is_err());
}

#[test]
fn a_new_tree_is_itemized_in_rsyncs_order_with_one_write_each_and_times_last() {
    let dir = source_tree();
    let source = walk_source(&dir.path().join("src"), false, &opts(&[])).unwrap();
    let missing = stat("/d/src", FileKind::Missing, 0, 0, 0);
    let mut there = listing(
        vec![],
        missing,
        stat("/d", FileKind::Directory, 0o755, 0, 5),
    );
    there.target = "/d/src".into();
    let changes = Comparison::new(&source, &there, &opts(&[]), '<', true)
        .run()
        .unwrap();
    assert_eq!(
        changes.lines,
        [
            "cd+++++++++ src/",
            "<f+++++++++ src/a",
            "cd+++++++++ src/sub/",
            "<f+++++++++ src/sub/c"
        ]
    );
    assert_eq!(changes.steps.len(), 1);
    assert!(changes.moves.is_empty());
    let kinds: Vec<String> = changes.steps[0]
        .iter()
        .chain(&changes.finals)
        .map(|op| match op {
            Op::EnsurePath(p) => format!("dir {} {:?}", p.path, p.mode),
            Op::EnsureFile(f) => format!("file {} {:?}", f.path, f.mode),
            Op::SetTimes { path, mtime, .. } => format!("times {path} {mtime}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "dir /d/src Some(Bits(493))",
            "file /d/src/a Some(Bits(420))",
            "dir /d/src/sub Some(Bits(493))",
            "file /d/src/sub/c Some(Bits(384))",
            "times /d/src/a 1000",
            "times /d/src/sub/c 1000",
            "times /d/src/sub 1000",
            "times /d/src 1000",
        ]
    );
}

#[test]
fn an_equal_tree_costs_nothing_and_a_changed_one_only_what_differs() {
    let dir = source_tree();
    let source = walk_source(&dir.path().join("src"), true, &opts(&[])).unwrap();
    let same = || {
        vec![
            ("a", stat("/d/a", FileKind::File, 0o644, 6, 1000)),
            (
                "sub",
                stat("/d/sub", FileKind::Directory, 0o755, 4096, 1000),
            ),
            ("sub/c", stat("/d/sub/c", FileKind::File, 0o600, 2, 1000)),
        ]
    };
    let root = || stat("/d", FileKind::Directory, 0o755, 4096, 1000);
    let equal = listing(same(), root(), root());
    let changes = Comparison::new(&source, &equal, &opts(&[]), '<', true)
        .run()
        .unwrap();
    assert!(changes.lines.is_empty(), "{:?}", changes.lines);
    assert!(
        changes.steps.iter().all(Vec::is_empty) && changes.finals.is_empty(),
        "{:?}",
        changes.steps
    );

    let mut entries = same();
    entries[0].1.mtime = 2000;
    entries[2].1.mode = 0o644;
    entries.push(("old", stat("/d/old", FileKind::File, 0o644, 1, 1000)));
    let changed = listing(entries, root(), root());
    let changes = Comparison::new(&source, &changed, &opts(&[("delete", true)]), '<', true)
        .run()
        .unwrap();
    assert_eq!(
        changes.lines,
        ["<f..t...... a", ".f...p..... sub/c", "*deleting   old"]
    );
    // The file, the mode, the deletion, the file's time, then the directories' where
    // something inside them was written (sub's chmod leaves its time, which the agent
    // then finds right).
    let ops: Vec<&str> = changes.steps[0]
        .iter()
        .chain(&changes.finals)
        .map(|op| match op {
            Op::EnsureFile(_) => "write",
            Op::EnsurePath(p) if p.state == PathState::Absent => "delete",
            Op::EnsurePath(_) => "mode",
            Op::SetTimes { path, .. } if path == "/d" => "root time",
            Op::SetTimes { .. } => "time",
            _ => "other",
        })
        .collect();
    assert_eq!(
        ops,
        ["write", "mode", "delete", "time", "time", "root time"]
    );
}
