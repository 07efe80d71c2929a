//! Asking the controller's Python where ansible-core and the `ansible_collections`
//! package are costs a Python start (50 ms, three times that on a busy machine: more than
//! the rest of a small run's controller work). The answer is kept in
//! `~/.cache/turbo-play/ansible-python/` and used again while nothing it came from has
//! changed: the interpreter (its resolved path, size and mtime) and every directory on its
//! `sys.path`, its user site directory and its venv's `pyvenv.cfg` (their mtimes, or their
//! absence). Installing, upgrading or removing a package, or adding a `.pth` file, changes
//! the directory it goes into; a new user site directory or a changed venv is seen too.
//! The cache is keyed by what else decides the answer: the interpreter as named, the
//! working directory, and the environment Python reads its paths from.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::plugins::python::ControllerPython;

/// Prints `V` + the version, `A` + the ansible package's directory, `C` + each directory holding an
/// `ansible_collections` package, `X` + the interpreter, and `D` + each path whose change
/// could change those answers. The working directory `-c` puts first on `sys.path` is not
/// where ansible-playbook looks (its own directory is), so it goes.
const PROBE: &str = "import os, site, sys
if sys.path and sys.path[0] == '':
 del sys.path[0]
print('V%d.%d' % sys.version_info[:2])
try:
 import ansible
 print('A' + os.path.dirname(ansible.__file__))
except Exception:
 pass
try:
 import ansible_collections
 for p in ansible_collections.__path__:
  print('C' + os.path.dirname(p))
except Exception:
 pass
print('X' + os.path.realpath(sys.executable))
for p in sys.path:
 print('D' + os.path.abspath(p or '.'))
print('D' + site.getusersitepackages())
print('D' + os.path.join(sys.prefix, 'pyvenv.cfg'))
";

/// The environment variables that change what the probe answers.
const ENVIRONMENT: &[&str] = &[
    "PATH",
    "HOME",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTHONNOUSERSITE",
    "PYTHONSAFEPATH",
    "PYTHONPLATLIBDIR",
];

// 2: the answer carries the version (`V`).
const HEADER: &str = "turbo-play ansible-python 2";

/// What `python` answers (None when it does not run), from the cache when nothing it
/// came from changed.
pub(crate) fn ask(python: &Path) -> Option<ControllerPython> {
    let cache = std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".cache/turbo-play/ansible-python"));
    ask_cached(python, cache.as_deref())
}

fn ask_cached(python: &Path, cache: Option<&Path>) -> Option<ControllerPython> {
    let file = cache.map(|dir| dir.join(key(python)));
    if let Some(found) = file.as_ref().and_then(|f| std::fs::read_to_string(f).ok())
        && let Some(answer) = still_valid(&found)
    {
        return answer_of(python, answer);
    }
    let out = std::process::Command::new(python)
        .arg("-c")
        .arg(PROBE)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let answer = String::from_utf8_lossy(&out.stdout).into_owned();
    let found = answer_of(python, &answer)?;
    // Only an answer that found ansible-core is kept: installing it later is seen at once.
    if found.ansible_dir.is_some()
        && let (Some(file), Some(text)) = (file, stamped(&answer))
    {
        store(&file, &text);
    }
    Some(found)
}

/// The cache file's name: what, besides the stamped paths, decides the answer.
fn key(python: &Path) -> String {
    let mut text = format!("{}\n", python.display());
    if let Ok(cwd) = std::env::current_dir() {
        text.push_str(&format!("{}\n", cwd.display()));
    }
    for name in ENVIRONMENT {
        let value = std::env::var_os(name).unwrap_or_default();
        text.push_str(&format!("{name}={}\n", value.to_string_lossy()));
    }
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The probe's answer, when the interpreter ran it.
fn answer_of(python: &Path, answer: &str) -> Option<ControllerPython> {
    let mut found = ControllerPython {
        python: python.to_path_buf(),
        ..ControllerPython::default()
    };
    let mut ran = false;
    for line in answer.lines() {
        if let Some(version) = line.strip_prefix('V') {
            let (major, minor) = version.split_once('.')?;
            found.version = (major.parse().ok()?, minor.parse().ok()?);
            ran = true;
        } else if let Some(dir) = line.strip_prefix('A') {
            found.ansible_dir = Some(PathBuf::from(dir));
            ran = true;
        } else if let Some(dir) = line.strip_prefix('C') {
            found.collection_roots.push(PathBuf::from(dir));
        }
    }
    ran.then_some(found)
}

/// A path's stamp: its size and mtime, or `-` when it does not exist.
fn stamp(path: &Path) -> String {
    match std::fs::metadata(path) {
        Ok(m) => format!("{}.{:09}/{}", m.mtime(), m.mtime_nsec(), m.size()),
        Err(_) => "-".into(),
    }
}

/// The cache file's text: the header, each path the answer came from with its stamp,
/// then the answer. None when a path cannot be written on a line of its own.
fn stamped(answer: &str) -> Option<String> {
    let mut text = format!("{HEADER}\n");
    for line in answer.lines() {
        if let Some(path) = line.strip_prefix('X').or_else(|| line.strip_prefix('D')) {
            if path.contains('\t') {
                return None;
            }
            text.push_str(&format!("{}\t{path}\n", stamp(Path::new(path))));
        }
    }
    text.push_str("--\n");
    text.push_str(answer);
    Some(text)
}

/// The cached answer, when every stamped path is as it was.
fn still_valid(cached: &str) -> Option<&str> {
    let rest = cached.strip_prefix(HEADER)?.strip_prefix('\n')?;
    let (stamps, answer) = rest.split_once("--\n")?;
    for line in stamps.lines() {
        let (was, path) = line.split_once('\t')?;
        if stamp(Path::new(path)) != was {
            return None;
        }
    }
    Some(answer)
}

/// Written aside and renamed into place: a run reading it meanwhile sees all or nothing.
fn store(file: &Path, text: &str) {
    let Some(dir) = file.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let staging = file.with_extension(format!("{}.tmp", std::process::id()));
    if std::fs::write(&staging, text).is_err() || std::fs::rename(&staging, file).is_err() {
        let _ = std::fs::remove_file(&staging);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A stand-in for the controller's Python: answers as the probe would, with the
    /// directories in `dirs`, and counts how often it was asked.
    fn fake_python(dir: &Path, dirs: &[&Path]) -> PathBuf {
        let script = dir.join("python");
        let mut text = format!(
            "#!/bin/sh\necho x >> {}\necho V3.12\necho A{}\necho C{}\necho X{}\n",
            dir.join("asked").display(),
            dir.join("site/ansible").display(),
            dir.join("site").display(),
            script.display()
        );
        for d in dirs {
            text.push_str(&format!("echo D{}\n", d.display()));
        }
        std::fs::write(&script, text).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        script
    }

    fn asked(dir: &Path) -> usize {
        std::fs::read_to_string(dir.join("asked")).map_or(0, |s| s.lines().count())
    }

    #[test]
    fn the_answer_is_kept_until_a_directory_it_came_from_changes() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("site");
        let user_site = dir.path().join("user-site");
        std::fs::create_dir_all(&site).unwrap();
        let python = fake_python(dir.path(), &[&site, &user_site]);
        let cache = dir.path().join("cache");
        let ask = || ask_cached(&python, Some(&cache)).expect("it ran");

        let first = ask();
        assert_eq!(first.ansible_dir, Some(site.join("ansible")));
        assert_eq!(first.version, (3, 12));
        assert_eq!(first.collection_roots, vec![site.clone()]);
        assert_eq!(asked(dir.path()), 1);
        let again = ask();
        assert_eq!(again.ansible_dir, first.ansible_dir);
        assert_eq!(asked(dir.path()), 1, "answered from the cache");

        // A package installed into site-packages changes it.
        // (Past the clock's granularity, so that the directory's mtime moves.)
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::fs::create_dir(site.join("ansible_collections")).unwrap();
        ask();
        assert_eq!(asked(dir.path()), 2);
        ask();
        assert_eq!(asked(dir.path()), 2);
        // So does a user site directory that did not exist.
        std::fs::create_dir(&user_site).unwrap();
        ask();
        assert_eq!(asked(dir.path()), 3);
        // And another interpreter in its place.
        let text = std::fs::read_to_string(&python).unwrap();
        std::fs::write(&python, format!("{text}\n")).unwrap();
        ask();
        assert_eq!(asked(dir.path()), 4);
    }

    #[test]
    fn an_answer_without_ansible_is_not_kept_and_a_damaged_cache_is_asked_again() {
        let dir = tempfile::tempdir().unwrap();
        let python = dir.path().join("python");
        std::fs::write(
            &python,
            format!(
                "#!/bin/sh\necho x >> {}\necho D/\n",
                dir.path().join("asked").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        let cache = dir.path().join("cache");
        assert!(ask_cached(&python, Some(&cache)).is_none());
        assert!(ask_cached(&python, Some(&cache)).is_none());
        assert_eq!(asked(dir.path()), 2);
        assert!(still_valid("not a cache").is_none());
        assert!(still_valid(&format!("{HEADER}\n-\t/nonexistent\n")).is_none());
    }
}
