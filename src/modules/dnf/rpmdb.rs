//! What rpm's database says, read without starting dnf: the one query the dnf module sends
//! first, its parsed answer, and how a name as dnf takes it (`tp-hello`, `tp-hello-1.0`,
//! `tp-hello.noarch`, `tp-hello >= 1.0`, `tp-*`) matches an installed package.

use std::cmp::Ordering;

/// A package as rpm describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    pub epoch: u64,
    pub version: String,
    pub release: String,
    pub arch: String,
}

impl Package {
    /// dnf's `str(package)`: `name-[epoch:]version-release.arch`, the epoch only when set.
    pub fn nevra(&self) -> String {
        let epoch = if self.epoch == 0 {
            String::new()
        } else {
            format!("{}:", self.epoch)
        };
        format!(
            "{}-{epoch}{}-{}.{}",
            self.name, self.version, self.release, self.arch
        )
    }

    fn evr(&self) -> Evr<'_> {
        Evr {
            epoch: self.epoch,
            version: &self.version,
            release: Some(&self.release),
        }
    }
}

/// What the query found: installed packages, and the headers of local rpm files.
#[derive(Debug, Default, PartialEq)]
pub struct Query {
    pub installed: Vec<Package>,
    pub files: Vec<(String, Package)>,
}

/// One line per package: `I<TAB>name<TAB>epoch<TAB>version<TAB>release<TAB>arch`, and for a
/// file `F<TAB>path<TAB>...`; anything else (rpm's "package x is not installed") is not a
/// package.
const FORMAT: &str = r"%{NAME}\t%{EPOCHNUM}\t%{VERSION}\t%{RELEASE}\t%{ARCH}\n";

/// The shell script that lists the installed packages whose name is among `names` (every
/// package when one is a glob) and describes the local `files`: rpm when the target has
/// it, else the rpm bindings dnf itself runs on (Debian's dnf comes without the rpm
/// command). It always exits 0: a package it cannot see is one dnf is asked about.
pub fn query_script(root: &str, names: &[String], files: &[String]) -> String {
    let q = shell_quote;
    let all = names.iter().any(|n| is_glob(n));
    let mut script = format!("root={}\nfmt='{FORMAT}'\n", q(root));
    script.push_str("if command -v rpm >/dev/null 2>&1; then\n");
    if all {
        script.push_str("  rpm -qa --root \"$root\" --qf \"I\\t$fmt\" 2>/dev/null\n");
    } else if !names.is_empty() {
        let words: Vec<String> = names.iter().map(|n| q(n)).collect();
        script.push_str(&format!(
            "  rpm -q --root \"$root\" --qf \"I\\t$fmt\" {} 2>/dev/null\n",
            words.join(" ")
        ));
    }
    for file in files {
        script.push_str(&format!(
            "  rpm -qp --qf \"F\\t{}\\t$fmt\" {} 2>/dev/null\n",
            file.replace('%', "%%")
                .replace('\\', "\\\\")
                .replace('"', "\\\""),
            q(file)
        ));
    }
    script.push_str("  exit 0\nfi\n");
    let files: Vec<String> = files.iter().map(|f| q(f)).collect();
    script.push_str(&format!(
        "for py in /usr/libexec/platform-python python3; do\n  command -v \"$py\" >/dev/null 2>&1 || continue\n  \"$py\" - \"$root\" {} <<'PY' 2>/dev/null\n{PYTHON}PY\n  exit 0\ndone\nexit 0\n",
        files.join(" ")
    ));
    script
}

const PYTHON: &str = r#"import sys
import rpm
def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)
def line(tag, h):
    fields = [h[rpm.RPMTAG_NAME], h[rpm.RPMTAG_EPOCHNUM], h[rpm.RPMTAG_VERSION], h[rpm.RPMTAG_RELEASE], h[rpm.RPMTAG_ARCH]]
    print("\t".join([tag] + [text(f) for f in fields]))
ts = rpm.TransactionSet(sys.argv[1])
ts.setVSFlags(-1)
for h in ts.dbMatch():
    line("I", h)
for path in sys.argv[2:]:
    try:
        with open(path, "rb") as f:
            line("F\t" + path, ts.hdrFromFdno(f.fileno()))
    except Exception:
        pass
"#;

/// The query's answer.
pub fn parse_query(stdout: &str) -> Query {
    let mut query = Query::default();
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let package = |f: &[&str]| -> Option<Package> {
            let [name, epoch, version, release, arch] = f else {
                return None;
            };
            Some(Package {
                name: name.to_string(),
                epoch: epoch.parse().ok()?,
                version: version.to_string(),
                release: release.to_string(),
                arch: arch.to_string(),
            })
        };
        match fields.as_slice() {
            ["I", rest @ ..] => {
                if let Some(p) = package(rest)
                    && !query.installed.contains(&p)
                {
                    query.installed.push(p);
                }
            }
            ["F", path, rest @ ..] => {
                if let Some(p) = package(rest) {
                    query.files.push((path.to_string(), p));
                }
            }
            _ => {}
        }
    }
    query
}

/// The names rpm is asked about for a spec: every way of cutting a version or an arch off
/// it (`tp-hello-1.0-1.noarch` could be package `tp-hello`, or `tp-hello-1.0`...).
pub fn candidate_names(spec: &str) -> Vec<String> {
    let head = split_operator(spec).map_or(spec, |(name, _, _)| name);
    let mut out = vec![head.to_string()];
    let mut push = |s: &str| {
        if !s.is_empty() && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    if let Some((base, _)) = head.rsplit_once('.') {
        push(base);
    }
    for (i, _) in head.match_indices('-') {
        push(&head[..i]);
    }
    out
}

pub fn is_glob(spec: &str) -> bool {
    spec.contains(['*', '?', '['])
}

/// `name OP evr` (`tp-hello >= 1.0`, `tp-hello>=1.0`).
fn split_operator(spec: &str) -> Option<(&str, &str, &str)> {
    let at = spec.find(['<', '>', '='])?;
    let name = spec[..at].trim();
    let rest = &spec[at..];
    let op_len = rest
        .find(|c: char| !matches!(c, '<' | '>' | '='))
        .unwrap_or(rest.len());
    let (op, evr) = rest.split_at(op_len);
    Some((name, op, evr.trim()))
}

/// Whether the installed `package` is one that `spec` names, in the forms dnf reads a
/// name in.
pub fn matches(spec: &str, package: &Package) -> bool {
    if let Some((name, op, evr)) = split_operator(spec) {
        if !name_matches(name, &package.name) {
            return false;
        }
        let want = Evr::parse(evr);
        let ord = compare_to(package, &want);
        return match op {
            "=" | "==" => ord == Ordering::Equal,
            ">=" | "=>" => ord != Ordering::Less,
            "<=" | "=<" => ord != Ordering::Greater,
            ">" => ord == Ordering::Greater,
            "<" => ord == Ordering::Less,
            _ => false,
        };
    }
    let p = package;
    let epoch = format!("{}:", p.epoch);
    let forms = [
        p.name.clone(),
        format!("{}.{}", p.name, p.arch),
        format!("{}-{}", p.name, p.version),
        format!("{}-{}-{}", p.name, p.version, p.release),
        format!("{}-{}-{}.{}", p.name, p.version, p.release, p.arch),
        format!("{}-{epoch}{}", p.name, p.version),
        format!("{}-{epoch}{}-{}", p.name, p.version, p.release),
        format!("{}-{epoch}{}-{}.{}", p.name, p.version, p.release, p.arch),
    ];
    forms.iter().any(|form| name_matches(spec, form))
}

fn name_matches(pattern: &str, name: &str) -> bool {
    if is_glob(pattern) {
        crate::fnmatch::fnmatch(pattern, name)
    } else {
        pattern == name
    }
}

/// Whether `spec` asks for a version of an installed package older than the one installed
/// (dnf leaves it be unless downgrades are allowed).
pub fn newer_installed(spec: &str, installed: &[Package]) -> bool {
    if is_glob(spec) || split_operator(spec).is_some() {
        return false;
    }
    installed.iter().any(|p| {
        let Some(rest) = spec
            .strip_prefix(p.name.as_str())
            .and_then(|r| r.strip_prefix('-'))
        else {
            return false;
        };
        let rest = rest.strip_suffix(&format!(".{}", p.arch)).unwrap_or(rest);
        !rest.is_empty() && compare_to(p, &Evr::parse(rest)) == Ordering::Greater
    })
}

/// An epoch, version and (maybe) release as written in a spec.
#[derive(Debug, PartialEq)]
struct Evr<'a> {
    epoch: u64,
    version: &'a str,
    release: Option<&'a str>,
}

impl<'a> Evr<'a> {
    fn parse(text: &'a str) -> Evr<'a> {
        let (epoch, rest) = match text.split_once(':') {
            Some((e, rest)) if e.bytes().all(|b| b.is_ascii_digit()) && !e.is_empty() => {
                (e.parse().unwrap_or(0), rest)
            }
            _ => (0, text),
        };
        let (version, release) = match rest.rsplit_once('-') {
            Some((v, r)) => (v, Some(r)),
            None => (rest, None),
        };
        Evr {
            epoch,
            version,
            release,
        }
    }
}

/// The installed package against a wanted version; a release left out is not compared.
fn compare_to(package: &Package, want: &Evr) -> Ordering {
    let have = package.evr();
    have.epoch
        .cmp(&want.epoch)
        .then_with(|| rpmvercmp(have.version, want.version))
        .then_with(|| match (have.release, want.release) {
            (Some(h), Some(w)) => rpmvercmp(h, w),
            _ => Ordering::Equal,
        })
}

/// rpm's version comparison: alternating runs of digits (numerically) and letters
/// (lexically), separators ignored, `~` sorting before anything and `^` after the end.
pub fn rpmvercmp(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    let separator = |c: u8| !c.is_ascii_alphanumeric() && c != b'~' && c != b'^';
    loop {
        while let Some((&c, rest)) = a.split_first()
            && separator(c)
        {
            a = rest;
        }
        while let Some((&c, rest)) = b.split_first()
            && separator(c)
        {
            b = rest;
        }
        match (a.first(), b.first()) {
            (Some(b'~'), Some(b'~')) => {
                a = &a[1..];
                b = &b[1..];
                continue;
            }
            (Some(b'~'), _) => return Ordering::Less,
            (_, Some(b'~')) => return Ordering::Greater,
            (Some(b'^'), Some(b'^')) => {
                a = &a[1..];
                b = &b[1..];
                continue;
            }
            (Some(b'^'), None) => return Ordering::Greater,
            (None, Some(b'^')) => return Ordering::Less,
            (Some(b'^'), _) => return Ordering::Less,
            (_, Some(b'^')) => return Ordering::Greater,
            (None, None) => return Ordering::Equal,
            (None, _) => return Ordering::Less,
            (_, None) => return Ordering::Greater,
            _ => {}
        }
        let numeric = a[0].is_ascii_digit();
        let run = |s: &[u8]| {
            s.iter()
                .take_while(|c| {
                    if numeric {
                        c.is_ascii_digit()
                    } else {
                        c.is_ascii_alphabetic()
                    }
                })
                .count()
        };
        let (la, lb) = (run(a), run(b));
        if lb == 0 {
            // A number is newer than letters.
            return if numeric {
                Ordering::Greater
            } else {
                Ordering::Less
            };
        }
        let (sa, sb) = (&a[..la], &b[..lb]);
        let ord = if numeric {
            let trim = |s: &'_ [u8]| -> usize { s.iter().take_while(|&&c| c == b'0').count() };
            let (ta, tb) = (&sa[trim(sa)..], &sb[trim(sb)..]);
            ta.len().cmp(&tb.len()).then_with(|| ta.cmp(tb))
        } else {
            sa.cmp(sb)
        };
        if ord != Ordering::Equal {
            return ord;
        }
        a = &a[la..];
        b = &b[lb..];
    }
}

/// A word for `/bin/sh`, in single quotes unless it needs none.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=+@%,".contains(&b))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(name: &str, epoch: u64, version: &str, release: &str) -> Package {
        Package {
            name: name.into(),
            epoch,
            version: version.into(),
            release: release.into(),
            arch: "noarch".into(),
        }
    }

    #[test]
    fn versions_compare_as_rpm() {
        use Ordering::*;
        for (a, b, want) in [
            ("1.0", "1.0", Equal),
            ("1.0", "2.0", Less),
            ("2.0", "1.10", Greater),
            ("1.10", "1.9", Greater),
            ("1.0a", "1.0", Greater),
            ("1.0", "1.0.1", Less),
            ("1.0~rc1", "1.0", Less),
            ("1.0^git1", "1.0", Greater),
            ("1.0^git1", "1.0.1", Less),
            ("010", "10", Equal),
            ("1.a", "1.1", Less),
            ("1_0", "1.0", Equal),
        ] {
            assert_eq!(rpmvercmp(a, b), want, "{a} vs {b}");
        }
    }

    #[test]
    fn names_in_dnfs_forms() {
        let p = pkg("tp-hello", 0, "1.0", "1");
        for yes in [
            "tp-hello",
            "tp-hello.noarch",
            "tp-hello-1.0",
            "tp-hello-1.0-1",
            "tp-hello-1.0-1.noarch",
            "tp-hello-0:1.0-1",
            "tp-*",
            "tp-hello >= 1.0",
            "tp-hello<2",
            "tp-hello = 1.0-1",
        ] {
            assert!(matches(yes, &p), "{yes}");
        }
        for no in [
            "tp",
            "tp-hello-2.0",
            "tp-hello-1.0-2",
            "tp-hello.x86_64",
            "tp-hello > 1.0",
            "other*",
        ] {
            assert!(!matches(no, &p), "{no}");
        }
        assert_eq!(pkg("a", 2, "1", "3").nevra(), "a-2:1-3.noarch");
        assert_eq!(p.nevra(), "tp-hello-1.0-1.noarch");
    }

    #[test]
    fn an_older_version_asked_for_is_left_be() {
        let installed = [pkg("tp-hello", 0, "2.0", "1")];
        assert!(newer_installed("tp-hello-1.0", &installed));
        assert!(newer_installed("tp-hello-1.0-1.noarch", &installed));
        assert!(!newer_installed("tp-hello-3.0", &installed));
        assert!(!newer_installed("tp-hello", &installed));
        assert!(!newer_installed("tp-lib-1.0", &installed));
    }

    #[test]
    fn candidates_cut_versions_and_arches() {
        assert_eq!(
            candidate_names("tp-hello-1.0-1.noarch"),
            [
                "tp-hello-1.0-1.noarch",
                "tp-hello-1.0-1",
                "tp",
                "tp-hello",
                "tp-hello-1.0"
            ]
        );
        assert_eq!(candidate_names("tp-hello >= 1.0"), ["tp-hello", "tp"]);
    }

    #[test]
    fn parses_the_querys_lines() {
        let out = "I\ttp-hello\t0\t1.0\t1\tnoarch\npackage tp-x is not installed\n\
                   I\ttp-hello\t0\t1.0\t1\tnoarch\nF\t/tmp/a b.rpm\ttp-lib\t1\t1.0\t1\tnoarch\n";
        let q = parse_query(out);
        assert_eq!(q.installed, [pkg("tp-hello", 0, "1.0", "1")]);
        assert_eq!(
            q.files,
            [("/tmp/a b.rpm".into(), pkg("tp-lib", 1, "1.0", "1"))]
        );
    }

    #[test]
    fn the_query_asks_rpm_then_python() {
        let script = query_script("/srv/root", &["tp-hello".into(), "it's".into()], &[]);
        assert!(
            script.contains(r#"rpm -q --root "$root" --qf "I\t$fmt" tp-hello 'it'\''s'"#),
            "{script}"
        );
        assert!(script.starts_with("root=/srv/root\n"), "{script}");
        assert!(script.contains("ts.dbMatch()"));
        let all = query_script("/", &["tp-*".into()], &["/tmp/x.rpm".into()]);
        assert!(all.contains("rpm -qa --root"), "{all}");
        assert!(
            all.contains(r#"rpm -qp --qf "F\t/tmp/x.rpm\t$fmt" /tmp/x.rpm"#),
            "{all}"
        );
    }
}
