//! PEP 440 versions and version specifiers, as `packaging` orders and matches them: for
//! deciding on the controller whether an installed distribution already satisfies a pip
//! requirement, and for the `version` test's `pep440` type. Anything outside PEP 440 is
//! `None`: the caller then lets pip decide, or fails as Ansible does.

use std::cmp::Ordering;

#[derive(Debug, Clone, PartialEq, Eq)]
enum LocalPart {
    Num(u64),
    Text(String),
}

/// A parsed PEP 440 version. Equal when they compare equal (`1.0 == 1.0.0`).
#[derive(Debug, Clone)]
pub struct Version {
    epoch: u64,
    release: Vec<u64>,
    /// (0 = a, 1 = b, 2 = rc, number)
    pre: Option<(u8, u64)>,
    post: Option<u64>,
    dev: Option<u64>,
    local: Vec<LocalPart>,
}

/// A little cursor over the lowercased version text.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn number(&mut self) -> Option<u64> {
        let start = self.i;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.i += 1;
        }
        if start == self.i {
            return None;
        }
        std::str::from_utf8(&self.s[start..self.i])
            .ok()?
            .parse()
            .ok()
    }
    fn word(&mut self, words: &[&str]) -> Option<usize> {
        let rest = &self.s[self.i..];
        // Longest first, so "preview" wins over "pre" and "rc" over "r".
        let mut best: Option<(usize, usize)> = None;
        for (index, w) in words.iter().enumerate() {
            if rest.starts_with(w.as_bytes()) && best.is_none_or(|(_, len)| w.len() > len) {
                best = Some((index, w.len()));
            }
        }
        let (index, len) = best?;
        self.i += len;
        Some(index)
    }
    fn separator(&mut self) -> bool {
        if matches!(self.peek(), Some(b'.' | b'-' | b'_')) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    /// `[-_.]?N?` after a pre/post/dev word; a missing number is 0.
    fn suffix_number(&mut self) -> u64 {
        let save = self.i;
        let had_sep = self.separator();
        match self.number() {
            Some(n) => n,
            None => {
                if had_sep {
                    self.i = save;
                }
                0
            }
        }
    }
}

impl Version {
    pub fn parse(text: &str) -> Option<Version> {
        let lower = text.trim().to_ascii_lowercase();
        let mut c = Cursor {
            s: lower.as_bytes(),
            i: 0,
        };
        if c.peek() == Some(b'v') {
            c.i += 1;
        }
        let mut first = c.number()?;
        let mut epoch = 0;
        if c.peek() == Some(b'!') {
            c.i += 1;
            epoch = first;
            first = c.number()?;
        }
        let mut release = vec![first];
        while c.peek() == Some(b'.') && c.s.get(c.i + 1).is_some_and(u8::is_ascii_digit) {
            c.i += 1;
            release.push(c.number()?);
        }
        let mut version = Version {
            epoch,
            release,
            pre: None,
            post: None,
            dev: None,
            local: Vec::new(),
        };
        // pre-release
        let save = c.i;
        c.separator();
        const PRE: [&str; 7] = ["a", "b", "c", "rc", "alpha", "beta", "pre"];
        const PRE_MORE: [&str; 1] = ["preview"];
        if let Some(kind) = c.word(&[PRE.as_slice(), PRE_MORE.as_slice()].concat()) {
            let kind = match kind {
                0 | 4 => 0,
                1 | 5 => 1,
                _ => 2,
            };
            version.pre = Some((kind, c.suffix_number()));
        } else {
            c.i = save;
        }
        // post-release: "-N" or "[-_.]?(post|rev|r)[-_.]?N?"
        let save = c.i;
        if c.peek() == Some(b'-') && c.s.get(c.i + 1).is_some_and(u8::is_ascii_digit) {
            c.i += 1;
            version.post = c.number();
        } else {
            c.separator();
            if c.word(&["post", "rev", "r"]).is_some() {
                version.post = Some(c.suffix_number());
            } else {
                c.i = save;
            }
        }
        // dev-release
        let save = c.i;
        c.separator();
        if c.word(&["dev"]).is_some() {
            version.dev = Some(c.suffix_number());
        } else {
            c.i = save;
        }
        if c.peek() == Some(b'+') {
            c.i += 1;
            let rest = std::str::from_utf8(&c.s[c.i..]).ok()?;
            for part in rest.split(['.', '-', '_']) {
                if part.is_empty() || !part.bytes().all(|b| b.is_ascii_alphanumeric()) {
                    return None;
                }
                version.local.push(match part.parse() {
                    Ok(n) if part.bytes().all(|b| b.is_ascii_digit()) => LocalPart::Num(n),
                    _ => LocalPart::Text(part.to_string()),
                });
            }
            c.i = c.s.len();
        }
        (c.i == c.s.len()).then_some(version)
    }

    pub fn is_prerelease(&self) -> bool {
        self.pre.is_some() || self.dev.is_some()
    }

    fn public(&self) -> Version {
        Version {
            local: Vec::new(),
            ..self.clone()
        }
    }

    fn base(&self) -> Version {
        Version {
            epoch: self.epoch,
            release: self.release.clone(),
            pre: None,
            post: None,
            dev: None,
            local: Vec::new(),
        }
    }

    fn release_trimmed(&self) -> &[u64] {
        let mut end = self.release.len();
        while end > 0 && self.release[end - 1] == 0 {
            end -= 1;
        }
        &self.release[..end]
    }
}

/// packaging's `_cmpkey`: a dev release sorts before its pre-releases, a final release
/// after them, post-releases after it; a local version after its public one.
impl Ord for Version {
    fn cmp(&self, other: &Version) -> Ordering {
        // (rank, kind, number): rank 0 = below every pre (dev only), 1 = a pre, 2 = none.
        let pre_key = |v: &Version| match v.pre {
            None if v.post.is_none() && v.dev.is_some() => (0, 0, 0),
            None => (2, 0, 0),
            Some((kind, n)) => (1, kind, n),
        };
        let post_key = |v: &Version| v.post.map_or((0, 0), |n| (1, n));
        let dev_key = |v: &Version| v.dev.map_or((1, 0), |n| (0, n));
        self.epoch
            .cmp(&other.epoch)
            .then_with(|| self.release_trimmed().cmp(other.release_trimmed()))
            .then_with(|| pre_key(self).cmp(&pre_key(other)))
            .then_with(|| post_key(self).cmp(&post_key(other)))
            .then_with(|| dev_key(self).cmp(&dev_key(other)))
            .then_with(|| compare_local(&self.local, &other.local))
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Version) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Version {}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Version) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// No local version sorts first; numbers sort after text; a longer one after its prefix.
fn compare_local(a: &[LocalPart], b: &[LocalPart]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let order = match (x, y) {
            (LocalPart::Num(x), LocalPart::Num(y)) => x.cmp(y),
            (LocalPart::Num(_), LocalPart::Text(_)) => Ordering::Greater,
            (LocalPart::Text(_), LocalPart::Num(_)) => Ordering::Less,
            (LocalPart::Text(x), LocalPart::Text(y)) => x.cmp(y),
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// One clause of a specifier set, e.g. `>=1.0` or `==2.*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Specifier {
    pub op: &'static str,
    /// The version as written, trimmed (`str(Specifier)` is op + this).
    pub version: String,
}

const OPERATORS: [&str; 8] = ["===", "~=", "==", "!=", "<=", ">=", "<", ">"];

impl Specifier {
    /// One clause, `None` when it is not PEP 440.
    pub fn parse(text: &str) -> Option<Specifier> {
        let text = text.trim();
        let op = OPERATORS.into_iter().find(|op| text.starts_with(op))?;
        let version = text[op.len()..].trim().to_string();
        if version.is_empty() {
            return None;
        }
        let spec = Specifier { op, version };
        // Reject what could never match, so callers leave it to pip.
        match spec.op {
            "===" => {}
            "==" | "!=" if spec.version.ends_with(".*") => {
                Version::parse(&spec.version[..spec.version.len() - 2])?;
            }
            "~=" => {
                let v = Version::parse(&spec.version)?;
                if v.release.len() < 2 || !v.local.is_empty() {
                    return None;
                }
            }
            _ => {
                Version::parse(&spec.version)?;
            }
        }
        Some(spec)
    }

    /// Whether `candidate` matches, prereleases allowed (Ansible asks `contains(version,
    /// prereleases=True)`). A candidate that is not PEP 440 matches nothing.
    pub fn contains(&self, candidate: &str) -> bool {
        if self.op == "===" {
            return candidate.trim().eq_ignore_ascii_case(&self.version);
        }
        let Some(have) = Version::parse(candidate) else {
            return false;
        };
        if let Some(prefix) = self.version.strip_suffix(".*") {
            let Some(prefix) = Version::parse(prefix) else {
                return false;
            };
            let matched = prefix_matches(&prefix, &have);
            return if self.op == "==" { matched } else { !matched };
        }
        let Some(want) = Version::parse(&self.version) else {
            return false;
        };
        match self.op {
            "==" => equal(&want, &have),
            "!=" => !equal(&want, &have),
            "<=" => have.public() <= want,
            ">=" => have.public() >= want,
            // `<V` excludes V's own pre-releases unless V is one; `>V` excludes V's
            // post-releases unless V is one, and V's local versions.
            "<" => {
                let same_base = have.base() == want.base();
                have < want && (want.is_prerelease() || !have.is_prerelease() || !same_base)
            }
            ">" => {
                let same_base = have.base() == want.base();
                have > want
                    && (want.post.is_some() || have.post.is_none() || !same_base)
                    && (have.local.is_empty() || !same_base)
            }
            "~=" => {
                let mut prefix = want.base();
                prefix.release.pop();
                have.public() >= want && prefix_matches(&prefix, &have)
            }
            _ => false,
        }
    }
}

/// `==V` ignores the candidate's local version unless V has one.
fn equal(want: &Version, have: &Version) -> bool {
    if want.local.is_empty() {
        have.public() == *want
    } else {
        have == want
    }
}

/// `==X.Y.*`: same epoch and the release starts with X.Y (zero-padded), suffixes of the
/// prefix compared too.
fn prefix_matches(prefix: &Version, have: &Version) -> bool {
    if prefix.epoch != have.epoch {
        return false;
    }
    let n = prefix.release.len();
    let padded: Vec<u64> = (0..n.max(have.release.len()))
        .map(|i| have.release.get(i).copied().unwrap_or(0))
        .collect();
    if padded[..n] != prefix.release[..] {
        return false;
    }
    if prefix.pre.is_some() && (have.pre != prefix.pre || have.release.len() > n) {
        return false;
    }
    if prefix.post.is_some() && have.post != prefix.post {
        return false;
    }
    if prefix.dev.is_some() && have.dev != prefix.dev {
        return false;
    }
    true
}

/// A comma-separated specifier set; `None` when any clause is not PEP 440.
pub fn parse_specifiers(text: &str) -> Option<Vec<Specifier>> {
    if text.trim().is_empty() {
        return Some(Vec::new());
    }
    text.split(',').map(Specifier::parse).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap_or_else(|| panic!("{s} is PEP 440"))
    }

    fn ok(spec: &str, candidate: &str) -> bool {
        Specifier::parse(spec).unwrap().contains(candidate)
    }

    #[test]
    fn orders_as_packaging() {
        let sorted = [
            "1.0.dev0",
            "1.0a1",
            "1.0a2.dev1",
            "1.0a2",
            "1.0b1",
            "1.0rc1",
            "1.0",
            "1.0+abc",
            "1.0+5",
            "1.0.post1.dev1",
            "1.0.post1",
            "1.1",
            "1!0.1",
        ];
        for pair in sorted.windows(2) {
            assert!(v(pair[0]) < v(pair[1]), "{} < {}", pair[0], pair[1]);
        }
        assert_eq!(v("1.0"), v("1.0.0").public().base());
        assert_eq!(v("1.0").cmp(&v("1.0.0")), Ordering::Equal);
        assert_eq!(v("V1.0-1"), v("1.0.post1"));
        assert_eq!(v("1.0alpha1"), v("1.0a1"));
        assert_eq!(v("1.0-preview-2"), v("1.0rc2"));
        assert_eq!(v("1.0.dev"), v("1.0dev0"));
        for bad in ["", "abc", "1.0+", "1..0", "1.0-foo", "1.0 2"] {
            assert!(Version::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn matches_as_packaging() {
        assert!(ok("==1.0", "1.0.0"));
        assert!(ok("==1.0", "1.0+local"));
        assert!(!ok("==1.0+a", "1.0+b"));
        assert!(ok("==1.*", "1.5.2"));
        assert!(!ok("==1.*", "2.0"));
        assert!(ok("!=1.*", "2.0"));
        assert!(ok(">=1.0", "1.0"));
        assert!(ok(">=1.0", "2.0rc1"));
        assert!(!ok(">=2.0", "2.0rc1"));
        assert!(ok("<2.0", "1.9"));
        assert!(!ok("<2.0", "2.0rc1"));
        assert!(ok("<2.0rc2", "2.0rc1"));
        assert!(!ok(">1.0", "1.0.post1"));
        assert!(ok(">1.0.post1", "1.0.post2"));
        assert!(!ok(">1.0", "1.0+local"));
        assert!(ok(">1.0", "1.1"));
        assert!(ok("<=1.0", "1.0+local"));
        assert!(ok("~=1.4", "1.9"));
        assert!(!ok("~=1.4", "2.0"));
        assert!(ok("~=1.4.5", "1.4.9"));
        assert!(!ok("~=1.4.5", "1.5.0"));
        assert!(ok("===1.0", "1.0"));
        assert!(!ok("===1.0", "1.0.0"));
        assert!(!ok(">=1.0", "not-a-version"));
        assert!(Specifier::parse("~=1").is_none());
        assert!(Specifier::parse(">=").is_none());
        assert!(Specifier::parse("1.0").is_none());
        assert_eq!(
            parse_specifiers(">=1.0, <2").unwrap(),
            [
                Specifier {
                    op: ">=",
                    version: "1.0".into()
                },
                Specifier {
                    op: "<",
                    version: "2".into()
                }
            ]
        );
    }
}
