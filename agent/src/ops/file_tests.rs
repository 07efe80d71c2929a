use super::super::testutil::*;
use super::*;
use turbo_proto::{FileMode, FileOutcome};

fn ensure(
    a: &mut Agent,
    path: &str,
    content: FileContent,
    mode: Option<FileMode>,
    flags: Flags,
) -> Result<OpResult, OpError> {
    ensure_file(
        a,
        EnsureFile {
            path: path.into(),
            content,
            mode,
            force: true,
            owner: Default::default(),
            validate: None,
            backup: false,
        },
        flags,
    )
}

fn inline(a: &mut Agent, path: &str, bytes: &[u8]) -> FileOutcome {
    match ensure(
        a,
        path,
        FileContent::Inline(bytes.to_vec()),
        None,
        Flags::default(),
    ) {
        Ok(OpResult::File(o)) => o,
        other => panic!("{other:?}"),
    }
}

fn mode_of(p: &Path) -> u32 {
    fs::metadata(p).unwrap().mode() & 0o7777
}

fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("turbo-tmp"))
        .collect()
}

#[test]
fn creates_then_leaves_alone_then_replaces() {
    let dir = TempDir::new();
    let mut a = agent(dir.path());
    let o = inline(&mut a, "~/f", b"one\n");
    assert!(o.changed);
    assert_eq!(o.path, dir.str("f"));
    assert_eq!((o.kind, o.mode, o.size), (FileKind::File, 0o644, 4));
    assert_eq!(o.uid, a.uid);
    assert!(!o.owner.is_empty());
    assert_eq!(fs::read(dir.join("f")).unwrap(), b"one\n");

    assert!(!inline(&mut a, "~/f", b"one\n").changed);
    // Same size, other bytes: must still be seen.
    assert!(inline(&mut a, "~/f", b"two\n").changed);
    assert_eq!(fs::read(dir.join("f")).unwrap(), b"two\n");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn a_copy_of_another_file_on_the_host_is_written_as_any_content() {
    let dir = TempDir::new();
    let mut a = agent(dir.path());
    fs::write(dir.join("from"), b"same host\n").unwrap();
    let copy = |a: &mut Agent, mode| match ensure(
        a,
        "~/to",
        FileContent::CopyOf {
            path: "~/from".into(),
        },
        mode,
        Flags::default(),
    ) {
        Ok(OpResult::File(o)) => o,
        other => panic!("{other:?}"),
    };
    let o = copy(&mut a, Some(FileMode::Bits(0o640)));
    assert!(o.changed);
    assert_eq!((o.mode, o.size), (0o640, 10));
    assert_eq!(fs::read(dir.join("to")).unwrap(), b"same host\n");
    assert!(!copy(&mut a, None).changed);
    // Same size, other bytes.
    fs::write(dir.join("from"), b"SAME HOST\n").unwrap();
    assert!(copy(&mut a, None).changed);
    assert_eq!(fs::read(dir.join("to")).unwrap(), b"SAME HOST\n");
    assert!(leftovers(dir.path()).is_empty());
    let missing = ensure(
        &mut a,
        "~/to",
        FileContent::CopyOf {
            path: "~/nothing".into(),
        },
        None,
        Flags::default(),
    );
    assert!(missing.is_err(), "{missing:?}");
}

#[test]
fn replacing_keeps_the_old_owner_when_running_as_root() {
    if crate::sys::effective_uid() != 0 {
        return;
    }
    let dir = TempDir::new();
    let mut a = agent(dir.path());
    let p = dir.join("owned");
    fs::write(&p, b"old").unwrap();
    std::os::unix::fs::chown(&p, Some(1), Some(1)).unwrap();
    chmod(&p, 0o4755).unwrap();
    let o = inline(&mut a, &dir.str("owned"), b"new");
    assert!(o.changed);
    assert_eq!((o.uid, o.gid), (1, 1));
    assert_eq!(o.mode, 0o4755, "set-id bits survive the chown");
    assert_eq!(fs::read(&p).unwrap(), b"new");
}

fn owned(
    a: &mut Agent,
    path: &str,
    bytes: &[u8],
    user: &str,
    flags: Flags,
) -> Result<FileOutcome, OpError> {
    let spec = EnsureFile {
        path: path.into(),
        content: FileContent::Inline(bytes.to_vec()),
        mode: Some(FileMode::Bits(0o640)),
        force: true,
        owner: turbo_proto::Ownership {
            user: Some(user.into()),
            group: Some("2".into()),
        },
        validate: None,
        backup: false,
    };
    ensure_file(a, spec, flags).map(|r| match r {
        OpResult::File(o) => o,
        other => panic!("{other:?}"),
    })
}

#[test]
fn owner_and_group_are_set_on_new_and_existing_files() {
    let dir = TempDir::new();
    let mut a = agent(dir.path());
    let p = dir.join("conf");
    let err = owned(
        &mut a,
        &dir.str("conf"),
        b"x",
        "no-such-user-here",
        Flags::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.message,
        "chown failed: failed to look up user no-such-user-here"
    );
    assert!(!p.exists(), "nothing is written when the owner is unknown");
    if crate::sys::effective_uid() != 0 {
        let err = owned(&mut a, &dir.str("conf"), b"x", "1", Flags::default()).unwrap_err();
        assert!(err.message.starts_with("chown failed: "), "{}", err.message);
        assert!(!p.exists(), "a refused chown leaves no file behind");
        return;
    }
    let o = owned(&mut a, &dir.str("conf"), b"x", "1", Flags::default()).unwrap();
    assert!(o.changed);
    assert_eq!((o.uid, o.gid, o.mode), (1, 2, 0o640));
    let meta = fs::metadata(&p).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (1, 2));
    assert!(
        !owned(&mut a, &dir.str("conf"), b"x", "1", Flags::default())
            .unwrap()
            .changed
    );
    // Only the owner differs: changed, content untouched.
    std::os::unix::fs::chown(&p, Some(0), Some(0)).unwrap();
    let check = Flags {
        check: true,
        diff: false,
    };
    let o = owned(&mut a, &dir.str("conf"), b"x", "1", check).unwrap();
    assert!(o.changed);
    assert_eq!((o.uid, o.gid), (1, 2), "check mode predicts the ids");
    assert_eq!(
        fs::metadata(&p).unwrap().uid(),
        0,
        "check mode changes nothing"
    );
    let o = owned(&mut a, &dir.str("conf"), b"x", "root", Flags::default()).unwrap();
    assert!(o.changed);
    assert_eq!((o.uid, o.gid, o.owner.as_str()), (0, 2, "root"));
    assert_eq!(fs::read(&p).unwrap(), b"x");
}

#[test]
fn replacing_keeps_the_old_mode_unless_one_is_given() {
    let dir = TempDir::new();
    let mut a = agent(dir.path());
    let p = dir.join("f");
    fs::write(&p, b"old").unwrap();
    chmod(&p, 0o600).unwrap();
    inline(&mut a, &dir.str("f"), b"new");
    assert_eq!(mode_of(&p), 0o600);
    let o = ensure(
        &mut a,
        &dir.str("f"),
        FileContent::Inline(b"new".to_vec()),
        Some(FileMode::Bits(0o640)),
        Flags::default(),
    )
    .unwrap();
    assert!(matches!(o, OpResult::File(ref o) if o.changed && o.mode == 0o640));
    assert_eq!(mode_of(&p), 0o640);
    let o = ensure(
        &mut a,
        &dir.str("f"),
        FileContent::Inline(b"new".to_vec()),
        Some(FileMode::Symbolic("u=rw,g=r".into())),
        Flags::default(),
    )
    .unwrap();
    assert!(matches!(o, OpResult::File(ref o) if !o.changed && o.mode == 0o640));
}

#[test]
fn new_file_with_symbolic_mode_starts_from_the_default() {
    let dir = TempDir::new();
    let mut a = agent(dir.path());
    ensure(
        &mut a,
        &dir.str("x"),
        FileContent::Inline(vec![]),
        Some(FileMode::Symbolic("u+x".into())),
        Flags::default(),
    )
    .unwrap();
    assert_eq!(mode_of(&dir.join("x")), 0o744);
    let err = ensure(
        &mut a,
        &dir.str("x"),
        FileContent::Inline(vec![]),
        Some(FileMode::Symbolic("q+x".into())),
        Flags::default(),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
}

#[test]
fn force_false_leaves_an_existing_file() {
    let dir = TempDir::new();
    let mut a = agent(dir.path());
    fs::write(dir.join("f"), b"keep").unwrap();
    let spec = |force| EnsureFile {
        path: dir.str("f"),
        content: FileContent::Inline(b"other".to_vec()),
        mode: None,
        force,
        owner: Default::default(),
        validate: None,
        backup: false,
    };
    let r = ensure_file(&mut a, spec(false), Flags::default()).unwrap();
    assert!(matches!(r, OpResult::File(ref o) if !o.changed));
    assert_eq!(fs::read(dir.join("f")).unwrap(), b"keep");
    fs::remove_file(dir.join("f")).unwrap();
    let r = ensure_file(&mut a, spec(false), Flags::default()).unwrap();
    assert!(matches!(r, OpResult::File(ref o) if o.changed));
}

#[test]
fn validate_runs_on_the_new_content_and_a_refusal_keeps_the_old_file() {
    let dir = TempDir::new();
    let mut a = agent(dir.path());
    fs::write(dir.join("f"), b"old\n").unwrap();
    let spec = |bytes: &[u8], argv: &[&str]| EnsureFile {
        path: dir.str("f"),
        content: FileContent::Inline(bytes.to_vec()),
        mode: None,
        force: true,
        owner: Default::default(),
        validate: Some(argv.iter().map(|s| s.to_string()).collect()),
        backup: false,
    };
    // grep sees the new content, not the old file.
    let refuse = spec(b"bad\n", &["grep", "-q", "good", "%s"]);
    let err = ensure_file(&mut a, refuse, Flags::default()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(
        err.message.starts_with("failed to validate: grep -q good ")
            && err.message.ends_with(" exited with 1"),
        "{}",
        err.message
    );
    assert_eq!(fs::read(dir.join("f")).unwrap(), b"old\n");
    assert!(leftovers(dir.path()).is_empty());

    let accept = spec(b"good\n", &["grep", "-q", "good", "%s"]);
    let r = ensure_file(&mut a, accept, Flags::default()).unwrap();
    assert!(matches!(r, OpResult::File(ref o) if o.changed));
    assert_eq!(fs::read(dir.join("f")).unwrap(), b"good\n");
    // Unchanged content is not validated again (a validator that always refuses).
    let r = ensure_file(&mut a, spec(b"good\n", &["false"]), Flags::default()).unwrap();
    assert!(matches!(r, OpResult::File(ref o) if !o.changed));
    // Nor in check mode.
    let check = Flags {
        check: true,
        ..Flags::default()
    };
    let r = ensure_file(&mut a, spec(b"new\n", &["false"]), check).unwrap();
    assert!(matches!(r, OpResult::File(ref o) if o.changed));
    assert_eq!(fs::read(dir.join("f")).unwrap(), b"good\n");
}

#[test]
fn missing_directory_and_directory_destination_are_errors() {
    let dir = TempDir::new();
    let mut a = agent(dir.path());
    let err = ensure(
        &mut a,
        &dir.str("no/f"),
        FileContent::Inline(vec![1]),
        None,
        Flags::default(),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
    assert_eq!(
        err.message,
        format!("Destination directory {} does not exist", dir.str("no"))
    );
    fs::create_dir(dir.join("d")).unwrap();
    let err = ensure(
        &mut a,
        &dir.str("d"),
        FileContent::Inline(vec![1]),
        None,
        Flags::default(),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(err.message.contains("is a directory"), "{}", err.message);
}

#[test]
fn check_mode_reports_without_writing_and_diff_mode_shows_both_sides() {
    let dir = TempDir::new();
    let mut a = agent(dir.path());
    let check = Flags {
        check: true,
        diff: true,
    };
    let r = ensure(
        &mut a,
        &dir.str("f"),
        FileContent::Inline(b"new\n".to_vec()),
        None,
        check,
    )
    .unwrap();
    let OpResult::File(o) = r else { panic!() };
    assert!(o.changed);
    assert_eq!(
        o.diff,
        Some(FileDiff {
            before: None,
            after: "new\n".into()
        })
    );
    assert!(!dir.join("f").exists());

    fs::write(dir.join("f"), b"old\n").unwrap();
    let r = ensure(
        &mut a,
        &dir.str("f"),
        FileContent::Inline(b"new\n".to_vec()),
        None,
        check,
    )
    .unwrap();
    let OpResult::File(o) = r else { panic!() };
    assert!(o.changed);
    assert_eq!(
        o.diff,
        Some(FileDiff {
            before: Some("old\n".into()),
            after: "new\n".into()
        })
    );
    assert_eq!(fs::read(dir.join("f")).unwrap(), b"old\n");

    // Binary content: changed, but no diff text.
    let diff_only = Flags {
        check: false,
        diff: true,
    };
    let r = ensure(
        &mut a,
        &dir.str("f"),
        FileContent::Inline(vec![0xff, 0]),
        None,
        diff_only,
    )
    .unwrap();
    assert!(matches!(r, OpResult::File(ref o) if o.changed && o.diff.is_none()));
}

#[test]
fn digest_only_asks_for_content_when_it_differs() {
    let dir = TempDir::new();
    let mut a = agent(dir.path());
    fs::write(dir.join("f"), b"abc").unwrap();
    let digest = |sha256, size| FileContent::Digest { sha256, size };
    let r = ensure(
        &mut a,
        &dir.str("f"),
        digest(sha256::digest(b"abc"), 3),
        None,
        Flags::default(),
    )
    .unwrap();
    assert!(matches!(r, OpResult::File(ref o) if !o.changed));
    let r = ensure(
        &mut a,
        &dir.str("f"),
        digest(sha256::digest(b"abd"), 3),
        None,
        Flags::default(),
    )
    .unwrap();
    assert_eq!(r, OpResult::NeedContent);
    let r = ensure(
        &mut a,
        &dir.str("g"),
        digest(sha256::digest(b"abc"), 3),
        None,
        Flags::default(),
    )
    .unwrap();
    assert_eq!(r, OpResult::NeedContent);
    // Matching content with another mode only needs a chmod.
    let r = ensure(
        &mut a,
        &dir.str("f"),
        digest(sha256::digest(b"abc"), 3),
        Some(FileMode::Bits(0o600)),
        Flags::default(),
    )
    .unwrap();
    assert!(matches!(r, OpResult::File(ref o) if o.changed && o.mode == 0o600));
}

#[test]
fn replacing_writes_only_over_the_content_it_was_computed_from() {
    let dir = TempDir::new();
    let mut a = agent(dir.path());
    fs::write(dir.join("f"), b"one\n").unwrap();
    let replacing = |bytes: &[u8], was: &[u8]| FileContent::Replacing {
        bytes: bytes.to_vec(),
        was_sha256: sha256::digest(was),
    };
    let path = dir.str("f");
    let r = ensure(
        &mut a,
        &path,
        replacing(b"one\ntwo\n", b"one\n"),
        None,
        Flags::default(),
    );
    assert!(matches!(r, Ok(OpResult::File(ref o)) if o.changed), "{r:?}");
    // Computed from what the file held before: refused, the file left as it is.
    let r = ensure(
        &mut a,
        &path,
        replacing(b"one\nthree\n", b"one\n"),
        None,
        Flags::default(),
    );
    let e = r.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Conflict);
    assert_eq!(e.message, format!("{path} changed since it was read"));
    assert_eq!(fs::read(dir.join("f")).unwrap(), b"one\ntwo\n");
    let r = ensure(
        &mut a,
        &dir.str("g"),
        replacing(b"x", b""),
        None,
        Flags::default(),
    );
    assert_eq!(r.unwrap_err().kind, ErrorKind::Conflict);
    assert!(!dir.join("g").exists());
}

#[test]
fn staged_uploads_are_verified_used_once_and_cleaned() {
    let dir = TempDir::new();
    let mut a = agent(dir.path());
    assert_eq!(
        write_chunk(&mut a, 5, b"hello ").unwrap(),
        OpResult::Chunk { size: 6 }
    );
    assert_eq!(
        write_chunk(&mut a, 5, b"world").unwrap(),
        OpResult::Chunk { size: 11 }
    );
    let staging = dir.join(".cache/turbo-play/staging");
    assert_eq!(mode_of(&staging), 0o700);
    let staged = |upload_id, sha256| FileContent::Staged { upload_id, sha256 };
    let r = ensure(
        &mut a,
        &dir.str("f"),
        staged(5, sha256::digest(b"hello world")),
        None,
        Flags::default(),
    )
    .unwrap();
    assert!(matches!(r, OpResult::File(ref o) if o.changed && o.size == 11));
    assert_eq!(fs::read(dir.join("f")).unwrap(), b"hello world");
    assert_eq!(fs::read_dir(&staging).unwrap().count(), 0);

    let err = ensure(
        &mut a,
        &dir.str("f"),
        staged(5, sha256::digest(b"x")),
        None,
        Flags::default(),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Protocol);

    write_chunk(&mut a, 6, b"corrupted").unwrap();
    let err = ensure(
        &mut a,
        &dir.str("f"),
        staged(6, sha256::digest(b"expected")),
        None,
        Flags::default(),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(err.message.contains("send it again"), "{}", err.message);
    assert_eq!(fs::read(dir.join("f")).unwrap(), b"hello world");

    write_chunk(&mut a, 7, b"left over").unwrap();
    a.clean_staging();
    assert_eq!(fs::read_dir(&staging).unwrap().count(), 0);
}

#[test]
fn backup_copies_the_old_file_only_when_the_content_changes() {
    let dir = TempDir::new();
    let mut a = agent(dir.path());
    let spec = |bytes: &[u8]| EnsureFile {
        path: dir.str("f"),
        content: FileContent::Inline(bytes.to_vec()),
        mode: None,
        force: true,
        owner: Default::default(),
        validate: None,
        backup: true,
    };
    let outcome = |r| match r {
        Ok(OpResult::File(o)) => o,
        other => panic!("{other:?}"),
    };
    let o = outcome(ensure_file(&mut a, spec(b"one"), Flags::default()));
    assert_eq!(o.backup_file, None, "nothing to back up");
    chmod(&dir.join("f"), 0o600).unwrap();
    let o = outcome(ensure_file(&mut a, spec(b"one"), Flags::default()));
    assert_eq!((o.changed, o.backup_file), (false, None));
    let check = Flags {
        check: true,
        diff: false,
    };
    let o = outcome(ensure_file(&mut a, spec(b"two"), check));
    assert_eq!((o.changed, o.backup_file), (true, None));
    let o = outcome(ensure_file(&mut a, spec(b"two"), Flags::default()));
    let backup = PathBuf::from(o.backup_file.expect("a backup"));
    assert_eq!(fs::read(&backup).unwrap(), b"one");
    assert_eq!(mode_of(&backup), 0o600);
    assert_eq!(fs::read(dir.join("f")).unwrap(), b"two");
    assert!(leftovers(dir.path()).is_empty());
}
