//! The one-line APT sources (`/etc/apt/sources.list`, `sources.list.d/*.list`) as
//! ansible-core 2.21's `apt_repository` reads, changes and writes them: every line kept as
//! (valid, enabled, source, comment) and written back normalised, so the files turbo-play
//! writes are the files Ansible writes.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

pub const VALID_SOURCE_TYPES: [&str; 2] = ["deb", "deb-src"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The line's number when the file was read (Ansible's `n`, used as an index later).
    pub n: usize,
    pub valid: bool,
    pub enabled: bool,
    pub source: String,
    pub comment: String,
}

/// Ansible's `SourcesList._parse`. Returns the line and, for an invalid or disabled one,
/// the text Ansible's `InvalidSource` carries.
pub fn parse(n: usize, line: &str) -> (Line, Option<String>) {
    let mut line = line.trim();
    let mut enabled = true;
    if let Some(rest) = line.strip_prefix('#') {
        enabled = false;
        line = rest;
    }
    let mut comment = String::new();
    if let Some(i) = line.find('#').filter(|i| *i > 0) {
        comment = line[i + 1..].trim().to_string();
        line = &line[..i];
    }
    let mut source = line.trim().to_string();
    let mut valid = false;
    let chunks: Vec<&str> = source.split_whitespace().collect();
    if chunks
        .first()
        .is_some_and(|c| VALID_SOURCE_TYPES.contains(c))
    {
        valid = true;
        source = chunks.join(" ");
    }
    let invalid = (!valid || !enabled).then(|| line.to_string());
    (
        Line {
            n,
            valid,
            enabled,
            source,
            comment,
        },
        invalid,
    )
}

/// A file's lines as Python's text-mode iteration splits them.
pub fn load(text: &str) -> Vec<Line> {
    text.split_inclusive('\n')
        .enumerate()
        .map(|(n, line)| parse(n, line).0)
        .collect()
}

/// Ansible's `dump` of one file: disabled lines behind `# `, comments after ` # `.
pub fn render(lines: &[Line]) -> String {
    let mut out = String::new();
    for line in lines {
        if !line.enabled {
            out.push_str("# ");
        }
        out.push_str(&line.source);
        if !line.comment.is_empty() {
            out.push_str(" # ");
            out.push_str(&line.comment);
        }
        out.push('\n');
    }
    out
}

/// Every file read, by path; a file whose lines are all gone is kept empty (Ansible then
/// removes it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourcesList {
    pub files: BTreeMap<String, Vec<Line>>,
}

impl SourcesList {
    /// Ansible's `dump()`: the text of every file that still has lines.
    pub fn dump(&self) -> BTreeMap<String, String> {
        self.files
            .iter()
            .filter(|(_, lines)| !lines.is_empty())
            .map(|(path, lines)| (path.clone(), render(lines)))
            .collect()
    }

    /// `_add_valid_source`: every entry with this source is enabled; with none, the line is
    /// appended to `file`. Returns whether the line was appended (the file's mode applies).
    pub fn add(&mut self, source: &str, file: &str) -> bool {
        let mut found = false;
        for lines in self.files.values_mut() {
            for line in lines.iter_mut().filter(|l| l.valid && l.source == source) {
                line.enabled = true;
                found = true;
            }
        }
        if !found {
            let lines = self.files.entry(file.to_string()).or_default();
            lines.push(Line {
                n: lines.len(),
                valid: true,
                enabled: true,
                source: source.to_string(),
                comment: String::new(),
            });
        }
        !found
    }

    /// `_remove_valid_source`, as its loop really runs: it pops by the line's first number
    /// while it walks the same list, so after one removal in a file the index is stale
    /// (and Python raises `pop index out of range` past the end).
    pub fn remove(&mut self, source: &str) -> Result<(), String> {
        for lines in self.files.values_mut() {
            let mut i = 0;
            while i < lines.len() {
                let line = &lines[i];
                if line.valid && line.enabled && line.source == source {
                    let n = line.n;
                    if n >= lines.len() {
                        return Err("pop index out of range".into());
                    }
                    lines.remove(n);
                }
                i += 1;
            }
        }
        Ok(())
    }
}

static OPTIONS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[[^\]]+\]").unwrap());
static SCHEME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\w+://").unwrap());
static NOT_ALNUM: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[^a-zA-Z0-9]").unwrap());

/// `_suggest_filename`: the first word after the type, without options, scheme and
/// credentials, its other characters turned into `_` (or the `filename` option), `.list`.
pub fn suggest_filename(source: &str, filename: Option<&str>) -> Result<String, String> {
    let line = OPTIONS.replace_all(source, "");
    let line = SCHEME.replace_all(&line, "");
    let first = line
        .split_whitespace()
        .find(|part| !VALID_SOURCE_TYPES.contains(part))
        .ok_or_else(|| "list index out of range".to_string())?;
    let name = match filename {
        Some(name) => name.to_string(),
        None => {
            let host = first.split_once('@').map_or(first, |(_, rest)| rest);
            NOT_ALNUM
                .replace_all(host, " ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join("_")
        }
    };
    Ok(format!("{name}.list"))
}

/// `_expand_path`: a name with a `/` as given, else under sources.list.d (a name without
/// `/` is a single component, so `os.path.abspath` has nothing to normalise).
pub fn expand_path(filename: &str, sources_dir: &str) -> String {
    if filename.contains('/') {
        filename.to_string()
    } else {
        format!("{sources_dir}/{filename}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_renders_lines_as_ansible() {
        let text = "deb  http://a/debian  bookworm main # mine\n#deb-src http://a/debian bookworm main\n\n## a note\nbad line\n";
        let lines = load(text);
        assert_eq!(
            render(&lines),
            "deb http://a/debian bookworm main # mine\n# deb-src http://a/debian bookworm main\n\n# # a note\nbad line\n"
        );
        assert!(lines[1].valid && !lines[1].enabled);
        assert_eq!(parse(0, "  foo bar ").1.as_deref(), Some("foo bar"));
        assert_eq!(
            parse(0, "#deb http://x y").1.as_deref(),
            Some("deb http://x y")
        );
    }

    #[test]
    fn suggests_ansibles_file_names() {
        let name = |s| suggest_filename(s, None).unwrap();
        assert_eq!(
            name("deb http://mirror.example.org/debian bookworm main"),
            "mirror_example_org_debian.list"
        );
        assert_eq!(
            name("deb [trusted=yes arch=amd64] file:/srv/repo ./"),
            "file_srv_repo.list"
        );
        assert_eq!(
            name("deb-src https://user:pw@repo.example.invalid:8080/apt/ stable main"),
            "repo_example_invalid_8080_apt.list"
        );
        assert_eq!(
            suggest_filename("deb http://x y", Some("custom")).unwrap(),
            "custom.list"
        );
        assert_eq!(
            expand_path("custom.list", "/etc/apt/sources.list.d"),
            "/etc/apt/sources.list.d/custom.list"
        );
        assert_eq!(expand_path("/etc/apt/x.list", "/d"), "/etc/apt/x.list");
    }

    #[test]
    fn adds_enables_and_removes() {
        let mut list = SourcesList::default();
        list.files.insert(
            "/etc/apt/sources.list".into(),
            load("# deb http://a b c\ndeb http://k l m\n"),
        );
        assert!(!list.add("deb http://a b c", "/etc/apt/sources.list.d/a.list"));
        assert_eq!(
            list.dump()["/etc/apt/sources.list"],
            "deb http://a b c\ndeb http://k l m\n"
        );
        assert!(list.add("deb http://n o p", "/etc/apt/sources.list.d/n.list"));
        list.remove("deb http://a b c").unwrap();
        list.remove("deb http://n o p").unwrap();
        let dump = list.dump();
        assert_eq!(dump["/etc/apt/sources.list"], "deb http://k l m\n");
        assert!(!dump.contains_key("/etc/apt/sources.list.d/n.list"));
        // Python's loop pops by a stale index: the second match takes its neighbour.
        let mut twice = SourcesList::default();
        twice.files.insert(
            "/f".into(),
            load("deb http://a b\nx\ndeb http://a b\nkeep\n"),
        );
        twice.remove("deb http://a b").unwrap();
        assert_eq!(twice.dump()["/f"], "x\ndeb http://a b\n");
    }
}
