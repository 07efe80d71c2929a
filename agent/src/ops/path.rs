//! `Op::EnsurePath`: the states of Ansible's `file` module.

use std::fs::{self, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use turbo_proto::{EnsurePath, ErrorKind, FileKind, FileMode, OpError, OpResult, PathState};

use super::{
    Agent, Flags, WantedIds, apply_ids, chmod, io_error, kind_of, lstat, mode, op_error,
    stat_follow,
};
use crate::sys;

pub fn ensure_path(agent: &mut Agent, spec: EnsurePath, flags: Flags) -> Result<OpResult, OpError> {
    let path = agent.expand(&spec.path);
    let mode = spec.mode.as_ref();
    let ids = agent.wanted_ids(&spec.owner)?;
    // A link's own owner is set, not its target's (Ansible's `follow: false` for links).
    let follow = !matches!(spec.state, PathState::Link { .. });
    let removing = spec.state == PathState::Absent;
    let mut outcome = match spec.state {
        PathState::Directory => directory(agent, &path, mode, spec.recurse_parents, flags)?,
        PathState::Absent => absent(agent, &path, flags)?,
        PathState::Touch => touch(agent, &path, mode, flags)?,
        PathState::File => existing_file(agent, &path, mode, flags)?,
        PathState::AsFound { follow } => {
            let found = if follow {
                stat_follow(&path)?
            } else {
                lstat(&path)?
            };
            match found {
                Some(meta) if meta.is_dir() => directory(agent, &path, mode, true, flags)?,
                _ => existing_file(agent, &path, mode, flags)?,
            }
        }
        PathState::Link { target, force } => {
            // Ansible's `src` is a path argument like `path`: `~/x` is the target user's home
            // (relative targets stay relative to the link's directory).
            let target = agent.expand(&target).to_string_lossy().into_owned();
            link(agent, &path, &target, force, flags)?
        }
    };
    if !removing && !ids.is_empty() {
        owner_after(agent, &path, &mut outcome, ids, follow, flags.check)?;
    }
    Ok(OpResult::File(outcome))
}

/// `owner`/`group` once the state holds; in check mode a path that is not there yet only
/// gets the prediction.
fn owner_after(
    agent: &mut Agent,
    path: &Path,
    outcome: &mut Outcome,
    ids: WantedIds,
    follow: bool,
    check: bool,
) -> Result<(), OpError> {
    let meta = if follow {
        stat_follow(path)?
    } else {
        lstat(path)?
    };
    let Some(meta) = meta else {
        agent.predict_ids(outcome, ids);
        return Ok(());
    };
    if apply_ids(path, &meta, ids, follow, check)? {
        outcome.changed = true;
        agent.predict_ids(outcome, ids);
        // chown clears set-id bits: put back the mode the op settled on.
        if !check && follow && outcome.mode & 0o6000 != 0 {
            chmod(path, outcome.mode)?;
        }
    }
    Ok(())
}

type Outcome = turbo_proto::FileOutcome;

fn kind_word(meta: &Metadata) -> &'static str {
    match kind_of(meta) {
        FileKind::Directory => "directory",
        FileKind::Symlink => "link",
        FileKind::File => "file",
        _ => "special file",
    }
}

/// Applies `wanted` to an existing path; returns whether that changes its mode.
fn apply_mode(
    agent: &Agent,
    path: &Path,
    meta: &Metadata,
    wanted: Option<&FileMode>,
    check: bool,
) -> Result<(bool, u32), OpError> {
    let current = meta.mode() & 0o7777;
    let Some(wanted) = wanted else {
        return Ok((false, current));
    };
    let target = mode::resolve(wanted, current, meta.is_dir(), agent.umask)
        .map_err(|msg| op_error(ErrorKind::InvalidArgument, msg))?;
    if target == current {
        return Ok((false, current));
    }
    if !check {
        chmod(path, target)?;
    }
    Ok((true, target))
}

/// The outcome after a change: re-read, except in check mode where nothing changed.
fn finish(
    agent: &mut Agent,
    path: &Path,
    changed: bool,
    predicted_mode: u32,
    check: bool,
) -> Result<Outcome, OpError> {
    let meta = fs::metadata(path).map_err(|e| io_error(e, path))?;
    let mut o = agent.outcome(path, &meta, changed);
    if check {
        o.mode = predicted_mode;
    }
    Ok(o)
}

fn directory(
    agent: &mut Agent,
    path: &Path,
    wanted: Option<&FileMode>,
    recurse_parents: bool,
    flags: Flags,
) -> Result<Outcome, OpError> {
    if let Some(meta) = stat_follow(path)? {
        if !meta.is_dir() {
            return Err(op_error(
                ErrorKind::InvalidArgument,
                format!(
                    "{} already exists as a {}",
                    path.display(),
                    kind_word(&meta)
                ),
            ));
        }
        let (changed, mode) = apply_mode(agent, path, &meta, wanted, flags.check)?;
        return finish(agent, path, changed, mode, flags.check);
    }
    // The missing directories, outermost first.
    let mut missing: Vec<PathBuf> = Vec::new();
    let mut cur = Some(path);
    while let Some(dir) = cur.filter(|d| !d.as_os_str().is_empty()) {
        if lstat(dir)?.is_some() {
            break;
        }
        missing.push(dir.to_path_buf());
        cur = dir.parent();
    }
    missing.reverse();
    if missing.len() > 1 && !recurse_parents {
        return Err(op_error(
            ErrorKind::NotFound,
            format!(
                "parent directory {} does not exist; create it first or allow recursion",
                missing[0].display()
            ),
        ));
    }
    let default = agent.default_mode(true);
    let target = match wanted {
        Some(m) => mode::resolve(m, default, true, agent.umask)
            .map_err(|msg| op_error(ErrorKind::InvalidArgument, msg))?,
        None => default,
    };
    if flags.check {
        return Ok(agent.predicted_outcome(path, FileKind::Directory, target, 0, true));
    }
    // Like Ansible, every directory this creates gets the requested mode, not just the last.
    for dir in &missing {
        match fs::create_dir(dir) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => continue,
            other => other.map_err(|e| io_error(e, dir))?,
        }
        if wanted.is_some() {
            chmod(dir, target)?;
        }
    }
    finish(agent, path, true, target, false)
}

fn absent(agent: &mut Agent, path: &Path, flags: Flags) -> Result<Outcome, OpError> {
    let Some(meta) = lstat(path)? else {
        return Ok(agent.predicted_outcome(path, FileKind::Missing, 0, 0, false));
    };
    if !flags.check {
        let removed = if meta.is_dir() {
            fs::remove_dir_all(path)
        } else {
            fs::remove_file(path)
        };
        removed.map_err(|e| io_error(e, path))?;
    }
    Ok(agent.predicted_outcome(path, FileKind::Missing, 0, 0, true))
}

fn touch(
    agent: &mut Agent,
    path: &Path,
    wanted: Option<&FileMode>,
    flags: Flags,
) -> Result<Outcome, OpError> {
    match stat_follow(path)? {
        Some(meta) => {
            if !flags.check {
                sys::touch_times(path).map_err(|e| io_error(e, path))?;
            }
            let (_, mode) = apply_mode(agent, path, &meta, wanted, flags.check)?;
            finish(agent, path, true, mode, flags.check)
        }
        None => {
            let default = agent.default_mode(false);
            let target = match wanted {
                Some(m) => mode::resolve(m, default, false, agent.umask)
                    .map_err(|msg| op_error(ErrorKind::InvalidArgument, msg))?,
                None => default,
            };
            if flags.check {
                return Ok(agent.predicted_outcome(path, FileKind::File, target, 0, true));
            }
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| io_error(e, path))?;
            chmod(path, target)?;
            finish(agent, path, true, target, false)
        }
    }
}

fn existing_file(
    agent: &mut Agent,
    path: &Path,
    wanted: Option<&FileMode>,
    flags: Flags,
) -> Result<Outcome, OpError> {
    let meta = match stat_follow(path)? {
        Some(meta) if meta.is_file() => meta,
        other => {
            let what = other.as_ref().map_or("absent", kind_word);
            return Err(op_error(
                if other.is_none() {
                    ErrorKind::NotFound
                } else {
                    ErrorKind::InvalidArgument
                },
                format!("file ({}) is {what}, cannot continue", path.display()),
            ));
        }
    };
    let (changed, mode) = apply_mode(agent, path, &meta, wanted, flags.check)?;
    finish(agent, path, changed, mode, flags.check)
}

fn link(
    agent: &mut Agent,
    path: &Path,
    target: &str,
    force: bool,
    flags: Flags,
) -> Result<Outcome, OpError> {
    if !force {
        let resolved = match path.parent() {
            Some(dir) if !Path::new(target).is_absolute() => dir.join(target),
            _ => PathBuf::from(target),
        };
        if !resolved.exists() {
            return Err(op_error(
                ErrorKind::NotFound,
                format!(
                    "src file does not exist, use 'force=yes' if you really want to create the link: {}",
                    resolved.display()
                ),
            ));
        }
    }
    let current = lstat(path)?;
    let replace = match &current {
        None => false,
        Some(meta) if meta.file_type().is_symlink() => {
            let now = fs::read_link(path).map_err(|e| io_error(e, path))?;
            if now.as_os_str() == target {
                let meta = meta.clone();
                return Ok(agent.outcome(path, &meta, false));
            }
            true
        }
        Some(meta) => {
            let what = kind_word(meta);
            if !force {
                return Err(op_error(
                    ErrorKind::InvalidArgument,
                    format!(
                        "refusing to convert from {what} to symlink for {}",
                        path.display()
                    ),
                ));
            }
            if meta.is_dir() {
                let empty = fs::read_dir(path)
                    .map_err(|e| io_error(e, path))?
                    .next()
                    .is_none();
                if !empty {
                    return Err(op_error(
                        ErrorKind::InvalidArgument,
                        format!(
                            "the directory {} is not empty, refusing to convert it",
                            path.display()
                        ),
                    ));
                }
                if !flags.check {
                    fs::remove_dir(path).map_err(|e| io_error(e, path))?;
                }
                false
            } else {
                true
            }
        }
    };
    if flags.check {
        return Ok(agent.predicted_outcome(
            path,
            FileKind::Symlink,
            0o777,
            target.len() as u64,
            true,
        ));
    }
    if replace {
        // A new link under a temp name renamed over the old path: never a moment without it.
        let temp = agent.temp_path(path);
        std::os::unix::fs::symlink(target, &temp).map_err(|e| io_error(e, &temp))?;
        if let Err(e) = fs::rename(&temp, path) {
            let _ = fs::remove_file(&temp);
            return Err(io_error(e, path));
        }
    } else {
        std::os::unix::fs::symlink(target, path).map_err(|e| io_error(e, path))?;
    }
    let meta = fs::symlink_metadata(path).map_err(|e| io_error(e, path))?;
    Ok(agent.outcome(path, &meta, true))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    fn run(
        a: &mut Agent,
        path: &str,
        state: PathState,
        mode: Option<FileMode>,
    ) -> Result<Outcome, OpError> {
        run_with(a, path, state, mode, Flags::default())
    }

    #[test]
    fn owner_applies_to_directories_and_to_links_themselves() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let with_owner = |path: String, state: PathState, user: &str| EnsurePath {
            path,
            state,
            mode: None,
            recurse_parents: true,
            owner: turbo_proto::Ownership {
                user: Some(user.into()),
                group: None,
            },
        };
        let outcome = |r: Result<OpResult, OpError>| match r {
            Ok(OpResult::File(o)) => o,
            other => panic!("{other:?}"),
        };
        let err = ensure_path(
            &mut a,
            with_owner(dir.str("d"), PathState::Directory, "no-such-user-here"),
            Flags::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "chown failed: failed to look up user no-such-user-here"
        );
        if crate::sys::effective_uid() != 0 {
            return;
        }
        let spec = || with_owner(dir.str("d"), PathState::Directory, "1");
        let o = outcome(ensure_path(&mut a, spec(), Flags::default()));
        assert!(o.changed);
        assert_eq!(fs::metadata(dir.join("d")).unwrap().uid(), 1);
        assert!(!outcome(ensure_path(&mut a, spec(), Flags::default())).changed);
        // An existing directory whose owner differs: changed by the chown alone.
        std::os::unix::fs::chown(dir.join("d"), Some(0), None).unwrap();
        let o = outcome(ensure_path(&mut a, spec(), Flags::default()));
        assert!(o.changed);
        assert_eq!((o.uid, o.owner.as_str()), (1, a.names.user(1).as_str()));

        let link = with_owner(
            dir.str("l"),
            PathState::Link {
                target: dir.str("d"),
                force: false,
            },
            "2",
        );
        let o = outcome(ensure_path(&mut a, link, Flags::default()));
        assert!(o.changed);
        assert_eq!(fs::symlink_metadata(dir.join("l")).unwrap().uid(), 2);
        assert_eq!(
            fs::metadata(dir.join("d")).unwrap().uid(),
            1,
            "the target keeps its owner"
        );
    }

    fn run_with(
        a: &mut Agent,
        path: &str,
        state: PathState,
        mode: Option<FileMode>,
        flags: Flags,
    ) -> Result<Outcome, OpError> {
        match ensure_path(
            a,
            EnsurePath {
                path: path.into(),
                state,
                mode,
                recurse_parents: true,
                owner: Default::default(),
            },
            flags,
        )? {
            OpResult::File(o) => Ok(o),
            other => panic!("{other:?}"),
        }
    }

    fn mode_of(p: &Path) -> u32 {
        fs::metadata(p).unwrap().mode() & 0o7777
    }

    const CHECK: Flags = Flags {
        check: true,
        diff: false,
    };

    #[test]
    fn as_found_keeps_a_directory_a_file_a_file_and_a_missing_path_fails() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        fs::create_dir(dir.join("d")).unwrap();
        fs::write(dir.join("f"), "x").unwrap();
        std::os::unix::fs::symlink(dir.join("d"), dir.join("l")).unwrap();
        let follow = PathState::AsFound { follow: true };
        let mode = Some(FileMode::Bits(0o700));
        let o = run(&mut a, "~/d", follow.clone(), mode.clone()).unwrap();
        assert_eq!(
            (o.kind, o.mode, o.changed),
            (FileKind::Directory, 0o700, true)
        );
        let o = run(&mut a, "~/f", follow.clone(), mode.clone()).unwrap();
        assert_eq!((o.kind, o.mode, o.changed), (FileKind::File, 0o700, true));
        // Followed, a link to a directory is one; not followed, it is not a file either.
        let o = run(&mut a, "~/l", follow.clone(), None).unwrap();
        assert_eq!(o.kind, FileKind::Directory);
        let e = run(&mut a, "~/l", PathState::AsFound { follow: false }, None).unwrap_err();
        assert!(
            e.message.ends_with("is directory, cannot continue"),
            "{}",
            e.message
        );
        let e = run(&mut a, "~/n", follow, None).unwrap_err();
        assert!(
            e.message.ends_with("is absent, cannot continue"),
            "{}",
            e.message
        );
    }

    #[test]
    fn directory_is_created_with_parents_and_then_left_alone() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let o = run(
            &mut a,
            "~/a/b/c",
            PathState::Directory,
            Some(FileMode::Bits(0o750)),
        )
        .unwrap();
        assert!(o.changed);
        assert_eq!((o.kind, o.mode), (FileKind::Directory, 0o750));
        assert_eq!(mode_of(&dir.join("a")), 0o750);
        assert_eq!(mode_of(&dir.join("a/b/c")), 0o750);
        let o = run(
            &mut a,
            "~/a/b/c",
            PathState::Directory,
            Some(FileMode::Bits(0o750)),
        )
        .unwrap();
        assert!(!o.changed);
        let o = run(
            &mut a,
            "~/a/b/c",
            PathState::Directory,
            Some(FileMode::Bits(0o700)),
        )
        .unwrap();
        assert!(o.changed);
        assert_eq!(mode_of(&dir.join("a/b/c")), 0o700);
        let o = run(&mut a, "~/d", PathState::Directory, None).unwrap();
        assert_eq!(o.mode, 0o755);
    }

    #[test]
    fn directory_over_a_file_or_without_parents_fails() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        fs::write(dir.join("f"), b"").unwrap();
        let err = run(&mut a, &dir.str("f"), PathState::Directory, None).unwrap_err();
        assert_eq!(
            err.message,
            format!("{} already exists as a file", dir.str("f"))
        );
        let err = ensure_path(
            &mut a,
            EnsurePath {
                path: dir.str("x/y"),
                state: PathState::Directory,
                mode: None,
                recurse_parents: false,
                owner: Default::default(),
            },
            Flags::default(),
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
        assert!(!dir.join("x").exists());
    }

    #[test]
    fn check_mode_changes_nothing() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        assert!(
            run_with(&mut a, "~/new", PathState::Directory, None, CHECK)
                .unwrap()
                .changed
        );
        assert!(
            run_with(&mut a, "~/new", PathState::Touch, None, CHECK)
                .unwrap()
                .changed
        );
        assert!(!dir.join("new").exists());
        fs::write(dir.join("f"), b"").unwrap();
        chmod(&dir.join("f"), 0o600).unwrap();
        let o = run_with(
            &mut a,
            "~/f",
            PathState::File,
            Some(FileMode::Bits(0o644)),
            CHECK,
        )
        .unwrap();
        assert!(o.changed);
        assert_eq!(o.mode, 0o644);
        assert_eq!(mode_of(&dir.join("f")), 0o600);
        assert!(
            run_with(&mut a, "~/f", PathState::Absent, None, CHECK)
                .unwrap()
                .changed
        );
        assert!(dir.join("f").exists());
    }

    #[test]
    fn absent_removes_files_links_and_trees() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        fs::create_dir_all(dir.join("t/u")).unwrap();
        fs::write(dir.join("t/u/f"), b"x").unwrap();
        std::os::unix::fs::symlink("t", dir.join("l")).unwrap();
        let o = run(&mut a, "~/l", PathState::Absent, None).unwrap();
        assert!(o.changed);
        assert_eq!(o.kind, FileKind::Missing);
        assert!(dir.join("t/u/f").exists(), "a link's target survives");
        assert!(run(&mut a, "~/t", PathState::Absent, None).unwrap().changed);
        assert!(!dir.join("t").exists());
        assert!(!run(&mut a, "~/t", PathState::Absent, None).unwrap().changed);
    }

    #[test]
    fn touch_creates_or_updates_and_always_reports_changed() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let o = run(&mut a, "~/t", PathState::Touch, None).unwrap();
        assert!(o.changed);
        assert_eq!((o.kind, o.mode, o.size), (FileKind::File, 0o644, 0));
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000);
        fs::File::options()
            .write(true)
            .open(dir.join("t"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let o = run(
            &mut a,
            "~/t",
            PathState::Touch,
            Some(FileMode::Symbolic("u+x".into())),
        )
        .unwrap();
        assert!(o.changed);
        assert_eq!(o.mode, 0o744);
        let mtime = fs::metadata(dir.join("t")).unwrap().modified().unwrap();
        assert!(mtime.elapsed().unwrap().as_secs() < 60);
    }

    #[test]
    fn state_file_requires_an_existing_file() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let err = run(&mut a, &dir.str("nope"), PathState::File, None).unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
        assert_eq!(
            err.message,
            format!("file ({}) is absent, cannot continue", dir.str("nope"))
        );
        let err = run(&mut a, &dir.str(""), PathState::File, None).unwrap_err();
        assert!(err.message.contains("is directory"), "{}", err.message);
        fs::write(dir.join("f"), b"").unwrap();
        chmod(&dir.join("f"), 0o644).unwrap();
        assert!(!run(&mut a, "~/f", PathState::File, None).unwrap().changed);
        let o = run(
            &mut a,
            "~/f",
            PathState::File,
            Some(FileMode::Symbolic("go-r".into())),
        )
        .unwrap();
        assert!(o.changed);
        assert_eq!(mode_of(&dir.join("f")), 0o600);
        assert!(
            run(
                &mut a,
                "~/f",
                PathState::File,
                Some(FileMode::Bits(0o777 + 0o10000))
            )
            .is_err()
        );
    }

    #[test]
    fn links_are_created_retargeted_and_protected() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        fs::write(dir.join("one"), b"1").unwrap();
        fs::write(dir.join("two"), b"2").unwrap();
        let link = |target: &str, force| PathState::Link {
            target: target.into(),
            force,
        };
        let o = run(&mut a, "~/l", link("one", false), None).unwrap();
        assert!(o.changed);
        assert_eq!(o.kind, FileKind::Symlink);
        assert_eq!(fs::read_link(dir.join("l")).unwrap(), PathBuf::from("one"));
        assert!(
            !run(&mut a, "~/l", link("one", false), None)
                .unwrap()
                .changed
        );
        assert!(
            run(&mut a, "~/l", link("two", false), None)
                .unwrap()
                .changed
        );
        assert_eq!(fs::read(dir.join("l")).unwrap(), b"2");

        assert!(
            run(&mut a, "~/home_link", link("~/one", false), None)
                .unwrap()
                .changed
        );
        assert_eq!(
            fs::read_link(dir.join("home_link")).unwrap(),
            dir.join("one")
        );

        let err = run(&mut a, "~/l", link("missing", false), None).unwrap_err();
        assert!(
            err.message.starts_with("src file does not exist"),
            "{}",
            err.message
        );
        assert!(
            run(&mut a, "~/dangling", link("missing", true), None)
                .unwrap()
                .changed
        );

        let err = run(&mut a, "~/one", link("two", false), None).unwrap_err();
        assert_eq!(
            err.message,
            format!(
                "refusing to convert from file to symlink for {}",
                dir.str("one")
            )
        );
        assert!(
            run(&mut a, "~/one", link("two", true), None)
                .unwrap()
                .changed
        );
        assert_eq!(
            fs::read_link(dir.join("one")).unwrap(),
            PathBuf::from("two")
        );

        fs::create_dir_all(dir.join("full/x")).unwrap();
        let err = run(&mut a, "~/full", link("two", true), None).unwrap_err();
        assert!(err.message.contains("is not empty"), "{}", err.message);
        fs::create_dir(dir.join("empty")).unwrap();
        assert!(
            run(&mut a, "~/empty", link("two", true), None)
                .unwrap()
                .changed
        );
        let leftovers = fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains("turbo-tmp")
            })
            .count();
        assert_eq!(leftovers, 0);
    }
}
