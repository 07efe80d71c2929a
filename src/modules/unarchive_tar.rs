//! GNU tar as Ansible's `TgzArchive` family drives it: the command lines of `--list`,
//! `--diff` and `--extract` (the compression flag of the handler that could list the
//! archive, `extra_opts` after `--show-transformed-names`, excludes, the include names),
//! the listing read back as Ansible reads it, and `--diff`'s lines that mean the archive
//! is not (all) unpacked.

use super::assemble_fragments::escape_decode;

/// The handlers Ansible tries after the zip ones, in its order: class name and flag.
pub(super) const HANDLERS: &[(&str, &str)] = &[
    ("TgzArchive", "-z"),
    ("TarArchive", ""),
    ("TarBzipArchive", "-j"),
    ("TarXzArchive", "-J"),
];

/// What every tar command line of a task shares.
pub(super) struct TarCall<'a> {
    pub tar: &'a str,
    pub dest: &'a str,
    pub src: &'a str,
    pub flag: &'a str,
    pub extra_opts: &'a [String],
    /// With their trailing `/` taken off, as Ansible takes it.
    pub excludes: &'a [String],
    pub includes: &'a [String],
    pub keep_newer: bool,
}

impl TarCall<'_> {
    /// `action` is `--list`, `--diff` or `--extract`.
    pub fn argv(&self, action: &str) -> Vec<String> {
        let mut argv = vec![
            self.tar.to_string(),
            action.to_string(),
            "-C".into(),
            self.dest.to_string(),
        ];
        if !self.flag.is_empty() {
            argv.push(self.flag.to_string());
        }
        if !self.extra_opts.is_empty() {
            argv.push("--show-transformed-names".into());
            argv.extend(self.extra_opts.iter().cloned());
        }
        if action != "--list" && self.keep_newer {
            argv.push("--keep-newer-files".into());
        }
        argv.extend(self.excludes.iter().map(|e| format!("--exclude={e}")));
        argv.push("-f".into());
        argv.push(self.src.to_string());
        argv.extend(self.includes.iter().cloned());
        argv
    }
}

/// `--list`'s output as Ansible's `files_in_archive`: escapes decoded, a leading `/`
/// dropped, excluded names (fnmatch) left out.
pub(super) fn files_in_archive(listing: &str, excludes: &[String]) -> Vec<String> {
    listing
        .lines()
        .map(|line| {
            let decoded = String::from_utf8_lossy(&escape_decode(line)).into_owned();
            decoded
                .strip_prefix('/')
                .map(str::to_string)
                .unwrap_or(decoded)
        })
        .filter(|name| !excludes.iter().any(|e| crate::fnmatch::fnmatch(e, name)))
        .collect()
}

/// Whether `--diff`'s output (stdout then stderr) says the archive is unpacked, as
/// `TgzArchive.is_unarchived` decides it for a task without owner, group or mode, run as
/// root when `root`.
pub(super) fn is_unarchived(out: &str, err: &str, root: bool) -> bool {
    const DIFFER: &[&str] = &[
        ": Mod time differs",
        ": Symlink differs",
        ": Contents differ",
        ": Size differs",
    ];
    for line in out.lines().chain(err.lines()) {
        if line.ends_with(": : Warning: Cannot stat: No such file or directory") {
            continue;
        }
        let differs = (root
            && (line.ends_with(": Uid differs") || line.ends_with(": Gid differs")))
            || line.ends_with(": Mode differs")
            || line.ends_with(": Warning: Cannot stat: No such file or directory")
            || line.contains(": Invalid owner")
            || line.contains(": Invalid group")
            || DIFFER.iter().any(|d| line.ends_with(d));
        if differs {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_ansibles_command_lines() {
        let opts = vec!["--strip-components=1".to_string()];
        let excludes = vec!["b/x".to_string()];
        let call = TarCall {
            tar: "/usr/bin/tar",
            dest: "/d",
            src: "/s.tgz",
            flag: "-z",
            extra_opts: &opts,
            excludes: &excludes,
            includes: &[],
            keep_newer: true,
        };
        assert_eq!(
            call.argv("--extract").join(" "),
            "/usr/bin/tar --extract -C /d -z --show-transformed-names --strip-components=1 --keep-newer-files --exclude=b/x -f /s.tgz"
        );
        assert_eq!(
            call.argv("--list").join(" "),
            "/usr/bin/tar --list -C /d -z --show-transformed-names --strip-components=1 --exclude=b/x -f /s.tgz"
        );
    }

    #[test]
    fn reads_the_listing_and_the_diff_as_ansible() {
        assert_eq!(
            files_in_archive("a/\na/b\n/abs\na/x.log\n", &["*.log".into()]),
            ["a/", "a/b", "abs"]
        );
        assert!(is_unarchived("", "", true));
        assert!(!is_unarchived("a/b: Mod time differs\n", "", true));
        assert!(!is_unarchived(
            "",
            "tar: a/c: Warning: Cannot stat: No such file or directory\n",
            true
        ));
        assert!(is_unarchived("a/b: Uid differs\n", "", false));
        assert!(!is_unarchived("a/b: Uid differs\n", "", true));
    }
}
