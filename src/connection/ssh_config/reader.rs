//! Reading ssh_config files the way ssh does: lines before any `Host`/`Match` apply to
//! every host, a block applies while its line matched, `Include` reads files in place
//! (sorted glob matches, relative to ~/.ssh or /etc/ssh), and the first value of an option
//! wins. The command line's `-o` options are read first, so they win over every file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::keywords::{self, Check, Kind, Support};
use super::matching::{self, MatchContext};
use super::parse::{Origin, split_line};
use super::tokens::{self, Tokens};
use super::{LocalUser, Request};

/// OpenSSH's READCONF_MAX_DEPTH.
const MAX_INCLUDE_DEPTH: usize = 16;

/// One option's value as written.
#[derive(Debug, Clone)]
pub struct Setting {
    pub args: Vec<String>,
    /// The text after the keyword, for options that take a command.
    pub raw: String,
    pub origin: Origin,
}

/// The options that applied to the host, first value of each (every value of the
/// accumulating ones), keyed by the keyword's canonical name.
#[derive(Debug, Default)]
pub struct Settings {
    pub first: HashMap<&'static str, Setting>,
    pub lists: HashMap<&'static str, Vec<Setting>>,
    /// Options read but not acted on, in the order met.
    pub not_honoured: Vec<String>,
}

impl Settings {
    pub fn value(&self, name: &str) -> Option<&str> {
        self.first
            .get(name)
            .and_then(|s| s.args.first())
            .map(String::as_str)
    }
}

/// Where an `Include` without a leading `/` or `~` is looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base<'p> {
    User,
    System(&'p Path),
}

pub struct Reader<'r> {
    request: &'r Request<'r>,
    pub settings: Settings,
    /// What `Host` lines match: the name given, then (final pass) the HostName.
    host: String,
    pub final_pass: bool,
    pub wants_final: bool,
}

impl<'r> Reader<'r> {
    pub fn new(request: &'r Request<'r>) -> Reader<'r> {
        Reader {
            request,
            settings: Settings::default(),
            host: request.host.to_ascii_lowercase(),
            final_pass: false,
            wants_final: false,
        }
    }

    /// The second pass `Match final` asks for: `Host` lines now match the HostName.
    pub fn start_final_pass(&mut self, hostname: &str) {
        self.final_pass = true;
        self.host = hostname.to_ascii_lowercase();
    }

    /// `-o` options, in the order given.
    pub fn command_line(&mut self, options: &[String]) -> Result<(), String> {
        for option in options {
            let origin = Origin {
                file: Origin::COMMAND_LINE.into(),
                line: 0,
            };
            let (keyword, args, raw) = match split_line(option) {
                Ok(Some(parts)) => parts,
                Ok(None) => continue,
                Err(e) => return Err(format!("command-line option -o {option}: {e}")),
            };
            if matches!(keyword.as_str(), "host" | "match" | "include") {
                return Err(format!(
                    "command-line option -o {option}: {keyword} directive not supported as a command-line option"
                ));
            }
            self.option(&keyword, args, raw, origin, true)
                .map_err(|e| format!("command-line option -o {option}: {e}"))?;
        }
        Ok(())
    }

    /// The user's file: missing is fine, unless it was named with -F.
    pub fn user_file(&mut self, path: &Path, must_exist: bool) -> Result<(), String> {
        if must_exist && !path.exists() {
            return Err(format!(
                "Can't open user config file {}: No such file or directory",
                path.display()
            ));
        }
        let mut active = true;
        self.file(path, Base::User, 0, &mut active, false)
    }

    pub fn system_file(&mut self, path: &Path) -> Result<(), String> {
        let mut active = true;
        let base = path.parent().unwrap_or(Path::new("/etc/ssh"));
        self.file(path, Base::System(base), 0, &mut active, false)
    }

    fn file(
        &mut self,
        path: &Path,
        base: Base<'_>,
        depth: usize,
        active: &mut bool,
        never_match: bool,
    ) -> Result<(), String> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("reading {}: {e}", path.display())),
        };
        let shown = shown_path(path, &self.request.local.home);
        for (index, line) in text.lines().enumerate() {
            let origin = Origin {
                file: shown.clone(),
                line: index + 1,
            };
            self.line(line, &origin, base, depth, active, never_match)?;
        }
        Ok(())
    }

    fn line(
        &mut self,
        line: &str,
        origin: &Origin,
        base: Base<'_>,
        depth: usize,
        active: &mut bool,
        never_match: bool,
    ) -> Result<(), String> {
        let (keyword, args, raw) = match split_line(line) {
            Ok(Some(parts)) => parts,
            Ok(None) => return Ok(()),
            Err(e) => return Err(format!("{origin}: {e}")),
        };
        match keyword.as_str() {
            "host" => {
                *active = !never_match && matching::host_line_matches(&args, &self.host);
                Ok(())
            }
            "match" => {
                let outcome = self
                    .match_line(&args)
                    .map_err(|e| format!("{origin}: Bad Match condition ({e})"))?;
                self.wants_final |= outcome.wants_final;
                *active = !never_match && outcome.active;
                if !never_match {
                    for criterion in outcome.unsupported {
                        self.settings.not_honoured.push(format!(
                            "{origin}: Match {criterion} is not supported by turbo-play: the block was taken as not matching"
                        ));
                    }
                }
                Ok(())
            }
            "include" => self.include(&args, origin, base, depth, *active, never_match),
            _ => self
                .option(&keyword, args, raw, origin.clone(), *active)
                .map_err(|e| {
                    if e.starts_with("Bad configuration option") {
                        // OpenSSH's own wording, colon included.
                        format!("{}: line {}: {e}", origin.file, origin.line)
                    } else {
                        format!("{origin}: {e}")
                    }
                }),
        }
    }

    fn include(
        &mut self,
        args: &[String],
        origin: &Origin,
        base: Base<'_>,
        depth: usize,
        active: bool,
        never_match: bool,
    ) -> Result<(), String> {
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(format!(
                "{origin}: Too many recursive configuration includes (more than {MAX_INCLUDE_DEPTH} levels)"
            ));
        }
        for arg in args {
            let expanded = tokens::expand_tilde(arg, &self.request.local.home);
            let pattern = if expanded.starts_with('/') {
                PathBuf::from(expanded)
            } else {
                match base {
                    Base::User => self.request.local.home.join(".ssh").join(expanded),
                    Base::System(dir) => dir.join(expanded),
                }
            };
            for path in glob(&pattern) {
                // An Include inside a block that does not apply is still read for its
                // errors, but nothing in it applies.
                let mut inner_active = active;
                self.file(
                    &path,
                    base,
                    depth + 1,
                    &mut inner_active,
                    never_match || !active,
                )?;
            }
        }
        Ok(())
    }

    fn match_line(&mut self, args: &[String]) -> Result<matching::MatchOutcome, String> {
        let request = self.request;
        let local: &LocalUser = request.local;
        let hostname = match self.settings.value("HostName") {
            Some(name) => Tokens {
                host: request.host.to_string(),
                ..Default::default()
            }
            .expand(name, tokens::HOSTNAME)?,
            None => request.host.to_string(),
        };
        let remote_user = self
            .settings
            .value("User")
            .unwrap_or(&local.name)
            .to_string();
        let port = self
            .settings
            .value("Port")
            .and_then(|p| p.parse().ok())
            .unwrap_or(22);
        let exec_tokens = Tokens {
            host: hostname.clone(),
            original: request.host.to_string(),
            port,
            remote_user: remote_user.clone(),
            local_user: local.name.clone(),
            local_home: local.home.display().to_string(),
            local_host: local.hostname.clone(),
            uid: local.uid,
            host_key_alias: self
                .settings
                .value("HostKeyAlias")
                .unwrap_or(request.host)
                .to_string(),
            jump: self.settings.value("ProxyJump").unwrap_or("").to_string(),
        };
        let tag = self.settings.value("Tag").map(str::to_string);
        let mut exec = |command: &str| {
            let command = exec_tokens.expand(command, tokens::ALL)?;
            (request.exec)(&command)
        };
        let mut ctx = MatchContext {
            host: &hostname,
            original_host: request.host,
            remote_user: &remote_user,
            local_user: &local.name,
            tag: tag.as_deref(),
            final_pass: self.final_pass,
            exec: &mut exec,
        };
        matching::match_line(args, &mut ctx)
    }

    /// One option line: checked whether or not it applies (as OpenSSH checks), kept when it
    /// applies and is the first of its name.
    fn option(
        &mut self,
        keyword: &str,
        args: Vec<String>,
        raw: String,
        origin: Origin,
        active: bool,
    ) -> Result<(), String> {
        let Some(known) = keywords::find(keyword) else {
            if let Some(ignored) = self.settings.value("IgnoreUnknown")
                && matching::pattern_list_matches(ignored, keyword, true)
            {
                return Ok(());
            }
            return Err(format!("Bad configuration option: {keyword}"));
        };
        if let Kind::One(check) = known.kind {
            if args.len() > 1 {
                return Err(format!(
                    "keyword {} extra arguments at end of line",
                    known.name
                ));
            }
            check_value(check, &args[0])?;
        }
        if !active || known.support == Support::Deprecated {
            return Ok(());
        }
        let setting = Setting { args, raw, origin };
        let first = match known.kind {
            Kind::Accumulate => {
                let list = self.settings.lists.entry(known.name).or_default();
                list.push(setting.clone());
                list.len() == 1
            }
            _ => {
                // ProxyJump and ProxyCommand share one slot in OpenSSH: the first of
                // either (`none` included) keeps the other out.
                let rival = match known.name {
                    "ProxyJump" => Some("ProxyCommand"),
                    "ProxyCommand" => Some("ProxyJump"),
                    _ => None,
                };
                if self.settings.first.contains_key(known.name)
                    || rival.is_some_and(|r| self.settings.first.contains_key(r))
                {
                    false
                } else {
                    self.settings.first.insert(known.name, setting.clone());
                    true
                }
            }
        };
        if known.support == Support::NotHonoured && (first || known.kind == Kind::Accumulate) {
            self.settings.not_honoured.push(format!(
                "{}: {} is not supported by turbo-play and was ignored",
                setting.origin, known.name
            ));
        }
        Ok(())
    }
}

/// Checks a value as OpenSSH does when it reads the line, in its words.
fn check_value(check: Check, value: &str) -> Result<(), String> {
    let lower = value.to_ascii_lowercase();
    let ok = match check {
        Check::Any => true,
        Check::YesNo => matches!(lower.as_str(), "yes" | "no" | "true" | "false"),
        Check::Strict => matches!(
            lower.as_str(),
            "yes" | "no" | "ask" | "accept-new" | "off" | "true" | "false"
        ),
        Check::Family => matches!(lower.as_str(), "any" | "inet" | "inet6"),
        Check::Port => {
            return match value.parse::<u16>() {
                Ok(port) if port != 0 => Ok(()),
                _ => Err(format!("Bad port '{value}'.")),
            };
        }
        Check::Count => {
            return value
                .parse::<u32>()
                .map(|_| ())
                .map_err(|_| format!("Bad number '{value}'."));
        }
        Check::Seconds => {
            return if lower == "none" || parse_time(value).is_some() {
                Ok(())
            } else {
                Err("invalid time value.".into())
            };
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!("unsupported option \"{value}\"."))
    }
}

/// OpenSSH's convtime: `90`, `1m30s`, `2h`, `1w`...
pub fn parse_time(text: &str) -> Option<u64> {
    let mut total: u64 = 0;
    let mut digits = String::new();
    if text.is_empty() {
        return None;
    }
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c.to_ascii_lowercase() {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86400,
            'w' => 604800,
            _ => return None,
        };
        let n: u64 = digits.parse().ok()?;
        total = total.checked_add(n.checked_mul(unit)?)?;
        digits.clear();
    }
    if !digits.is_empty() {
        total = total.checked_add(digits.parse().ok()?)?;
    } else if !text.ends_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    Some(total)
}

/// `~/...` for paths under the home, as messages show them.
fn shown_path(path: &Path, home: &Path) -> String {
    match path.strip_prefix(home) {
        Ok(rest) if !home.as_os_str().is_empty() && home != Path::new("/") => {
            format!("~/{}", rest.display())
        }
        _ => path.display().to_string(),
    }
}

/// glob(3) for Include: `*`, `?`, `[...]` in any component, hidden names only when the
/// component starts with a dot, matches sorted.
fn glob(pattern: &Path) -> Vec<PathBuf> {
    let mut found = vec![PathBuf::from("/")];
    let components: Vec<String> = pattern
        .components()
        .filter(|c| !matches!(c, std::path::Component::RootDir))
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    for (index, component) in components.iter().enumerate() {
        let last = index + 1 == components.len();
        let mut next = Vec::new();
        for dir in &found {
            if !component.contains(['*', '?', '[']) {
                let path = dir.join(component);
                if last || path.is_dir() {
                    next.push(path);
                }
                continue;
            }
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| crate::fnmatch::glob_component(component, name))
                .collect();
            names.sort();
            next.extend(names.into_iter().map(|name| dir.join(name)));
        }
        found = next;
    }
    found.retain(|p| p.exists());
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("90"), Some(90));
        assert_eq!(parse_time("1m30s"), Some(90));
        assert_eq!(parse_time("2h"), Some(7200));
        assert_eq!(parse_time("1x"), None);
        assert_eq!(parse_time(""), None);
        assert_eq!(parse_time("-1"), None);
    }

    #[test]
    fn values_checked_in_openssh_words() {
        assert_eq!(
            check_value(Check::Port, "http").unwrap_err(),
            "Bad port 'http'."
        );
        assert_eq!(
            check_value(Check::YesNo, "maybe").unwrap_err(),
            "unsupported option \"maybe\"."
        );
        assert!(check_value(Check::Strict, "accept-new").is_ok());
        assert!(check_value(Check::Seconds, "none").is_ok());
        assert!(check_value(Check::Seconds, "soon").is_err());
    }

    #[test]
    fn glob_sorted_and_hidden_names() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.conf", "a.conf", ".hidden.conf", "c.txt"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let found = glob(&dir.path().join("*.conf"));
        let names: Vec<_> = found
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["a.conf", "b.conf"]);
        assert_eq!(glob(&dir.path().join("c.txt")).len(), 1);
        assert!(glob(&dir.path().join("missing")).is_empty());
    }
}
