//! What dnf's command line prints, read back: the transaction table it shows before it
//! acts (with `-y` and with `--assumeno` alike), the names it found no package for, and
//! its error.

/// One row of the transaction table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub action: Action,
    pub name: String,
    pub arch: String,
    /// `[epoch:]version-release`, as the table shows it.
    pub evr: String,
}

impl Row {
    /// dnf's `str(package)`.
    pub fn nevra(&self) -> String {
        format!("{}-{}.{}", self.name, self.evr, self.arch)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Installing, reinstalling, and the dependencies that come along.
    Install,
    /// Upgrading or downgrading: the installed version goes.
    Replace,
    Remove,
}

/// What one dnf run said.
#[derive(Debug, Default, PartialEq)]
pub struct Transcript {
    pub rows: Vec<Row>,
    /// Names from "No match for argument: NAME".
    pub no_match: Vec<String>,
    /// The text after "Error: " (and the lines that follow it), if dnf failed.
    pub error: Option<String>,
    /// "Nothing to do.": dnf resolved and found nothing to change.
    pub nothing_to_do: bool,
    /// "Operation aborted.": `--assumeno` said no, as check mode asks.
    pub aborted: bool,
}

pub fn parse(stdout: &str, stderr: &str) -> Transcript {
    let mut out = Transcript::default();
    let mut section: Option<Option<Action>> = None;
    let mut pending_name: Option<String> = None;
    let mut error_lines: Vec<&str> = Vec::new();
    for line in stdout.lines().chain(stderr.lines()) {
        if let Some(name) = line.strip_prefix("No match for argument: ") {
            let name = name.trim().to_string();
            if !out.no_match.contains(&name) {
                out.no_match.push(name);
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("Error: ") {
            error_lines.push(rest);
            continue;
        }
        if !error_lines.is_empty() {
            error_lines.push(line);
            continue;
        }
        match line.trim() {
            "Nothing to do." => out.nothing_to_do = true,
            "Operation aborted." => out.aborted = true,
            _ => {}
        }
        if line.starts_with("Transaction Summary") {
            section = None;
            continue;
        }
        if !line.starts_with(' ') && line.ends_with(':') {
            section = Some(action_of(line));
            continue;
        }
        let Some(Some(action)) = section else {
            continue;
        };
        let mut words: Vec<&str> = line.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        if words[0] == "replacing" {
            // An obsoleted package: `replacing  name.arch  evr`.
            if let [_, name_arch, evr, ..] = words[..]
                && let Some((name, arch)) = name_arch.rsplit_once('.')
            {
                out.rows.push(Row {
                    action: Action::Remove,
                    name: name.into(),
                    arch: arch.into(),
                    evr: evr.into(),
                });
            }
            continue;
        }
        // A name too long for its column is on a line of its own.
        if words.len() == 1 {
            pending_name = Some(words[0].to_string());
            continue;
        }
        let name = match pending_name.take() {
            Some(name) => name,
            None => words.remove(0).to_string(),
        };
        if words.len() < 2 {
            continue;
        }
        out.rows.push(Row {
            action,
            name,
            arch: words[0].into(),
            evr: words[1].into(),
        });
    }
    if !error_lines.is_empty() {
        let text = error_lines.join("\n");
        out.error = Some(text.trim_end().to_string());
    }
    out
}

/// The table's section headings, by what they do to the packages under them; `None` for a
/// section of groups or modules (their rows are not packages).
fn action_of(heading: &str) -> Option<Action> {
    let heading = heading.trim_end_matches(':');
    if heading.contains("Groups") || heading.contains("Environment") || heading.contains("module") {
        return None;
    }
    if heading.starts_with("Installing") || heading.starts_with("Reinstalling") {
        Some(Action::Install)
    } else if heading.starts_with("Upgrading") || heading.starts_with("Downgrading") {
        Some(Action::Replace)
    } else if heading.starts_with("Removing") {
        Some(Action::Remove)
    } else {
        None
    }
}

/// `dnf repoquery --qf` lines of [`REPOQUERY_FORMAT`] as Ansible's `list` results.
pub const REPOQUERY_FORMAT: &str =
    "%{name}\t%{epoch}\t%{version}\t%{release}\t%{arch}\t%{repoid}\t%{installtime}";

pub fn parse_repoquery(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .filter_map(|line| {
            let [name, epoch, version, release, arch, repo, installtime] =
                line.split('\t').collect::<Vec<_>>()[..]
            else {
                return None;
            };
            let envra = format!("{epoch}:{name}-{version}-{release}.{arch}");
            let installed = !matches!(installtime.trim(), "" | "0" | "(none)");
            Some(serde_json::json!({
                "name": name,
                "arch": arch,
                "epoch": epoch,
                "release": release,
                "version": version,
                "repo": repo,
                "envra": envra,
                "nevra": envra,
                "yumstate": if installed { "installed" } else { "available" },
            }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const INSTALL: &str = "\
tp local                                        191 kB/s | 1.2 kB     00:00
Dependencies resolved.
================================================================================
 Package           Architecture      Version          Repository           Size
================================================================================
Installing:
 tp-app            noarch            1.0-1            tp-local            6.0 k
Installing dependencies:
 tp-lib            noarch            1.0-1            tp-local            6.0 k
Upgrading:
 a-package-with-a-very-long-name-indeed-that-wraps
                   noarch            1:2.0-1          tp-local            6.0 k
     replacing  tp-old.noarch 0.9-1

Transaction Summary
================================================================================
Install  2 Packages

Installed:
  tp-app-1.0-1.noarch                    tp-lib-1.0-1.noarch

Complete!
";

    fn row(action: Action, name: &str, evr: &str) -> Row {
        Row {
            action,
            name: name.into(),
            arch: "noarch".into(),
            evr: evr.into(),
        }
    }

    #[test]
    fn reads_the_transaction_table() {
        let t = parse(INSTALL, "");
        assert_eq!(
            t.rows,
            [
                row(Action::Install, "tp-app", "1.0-1"),
                row(Action::Install, "tp-lib", "1.0-1"),
                row(
                    Action::Replace,
                    "a-package-with-a-very-long-name-indeed-that-wraps",
                    "1:2.0-1"
                ),
                row(Action::Remove, "tp-old", "0.9-1"),
            ]
        );
        assert_eq!(
            t.rows[2].nevra(),
            "a-package-with-a-very-long-name-indeed-that-wraps-1:2.0-1.noarch"
        );
        assert!(!t.nothing_to_do && !t.aborted && t.error.is_none());
    }

    #[test]
    fn reads_removals_and_check_modes_answer() {
        let out = "Dependencies resolved.\n=====\n Package  Arch  Version  Repository  Size\n=====\n\
                   Removing:\n tp-lib  noarch  1.0-1  @tp-local  4  \n\
                   Removing dependent packages:\n tp-app  noarch  1.0-1  @tp-local  4  \n\n\
                   Transaction Summary\n=====\nRemove  2 Packages\n\nFreed space: 8  \nOperation aborted.\n";
        let t = parse(out, "");
        assert_eq!(
            t.rows,
            [
                row(Action::Remove, "tp-lib", "1.0-1"),
                row(Action::Remove, "tp-app", "1.0-1")
            ]
        );
        assert!(t.aborted);
    }

    #[test]
    fn reads_missing_names_and_errors() {
        let t = parse(
            "Last metadata expiration check: 0:00:05 ago.\n",
            "No match for argument: nosuch\nError: Unable to find a match: nosuch\n",
        );
        assert_eq!(t.no_match, ["nosuch"]);
        assert_eq!(t.error.as_deref(), Some("Unable to find a match: nosuch"));
        let t = parse("Dependencies resolved.\nNothing to do.\nComplete!\n", "");
        assert!(t.nothing_to_do && t.rows.is_empty());
        let t = parse(
            "",
            "Error: \n Problem: conflicting requests\n  - nothing provides tp-lib needed by tp-app-1.0-1.noarch\n",
        );
        assert_eq!(
            t.error.as_deref(),
            Some(
                "\n Problem: conflicting requests\n  - nothing provides tp-lib needed by tp-app-1.0-1.noarch"
            )
        );
    }

    #[test]
    fn repoquery_lines_as_ansible_lists_them() {
        let got = parse_repoquery("tp-hello\t0\t2.0\t1\tnoarch\t@System\t1700000000\nbad\n");
        assert_eq!(
            got,
            [
                serde_json::json!({"name": "tp-hello", "arch": "noarch", "epoch": "0",
                "release": "1", "version": "2.0", "repo": "@System",
                "envra": "0:tp-hello-2.0-1.noarch", "nevra": "0:tp-hello-2.0-1.noarch",
                "yumstate": "installed"})
            ]
        );
    }
}
