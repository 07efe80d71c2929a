//! Which `Host` and `Match` blocks apply, with OpenSSH's rules: `Host` patterns against
//! the (lowercased) host name, a `!pattern` vetoing the line; `Match` criteria all holding,
//! each a comma list of patterns (`Match exec` run only when the criteria before it held).

use crate::fnmatch::Pattern;

/// OpenSSH's match_pattern: `*` and `?`.
fn matches(pattern: &str, text: &str) -> bool {
    Pattern::openssh(pattern).matches(text)
}

/// A `Host` line's arguments against `host` (already lowercased).
pub fn host_line_matches(patterns: &[String], host: &str) -> bool {
    let mut active = false;
    for pattern in patterns {
        match pattern.strip_prefix('!') {
            Some(negated) if matches(negated, host) => return false,
            Some(_) => {}
            None if matches(pattern, host) => active = true,
            None => {}
        }
    }
    active
}

/// OpenSSH's match_pattern_list: a comma list where a matching `!pattern` vetoes.
pub fn pattern_list_matches(list: &str, text: &str, lowercase: bool) -> bool {
    let text = if lowercase {
        text.to_ascii_lowercase()
    } else {
        text.to_string()
    };
    let mut matched = false;
    for pattern in list.split(',') {
        let pattern = if lowercase {
            pattern.to_ascii_lowercase()
        } else {
            pattern.to_string()
        };
        match pattern.strip_prefix('!') {
            Some(negated) if matches(negated, &text) => return false,
            Some(_) => {}
            None if matches(&pattern, &text) => matched = true,
            None => {}
        }
    }
    matched
}

/// What `Match` criteria are checked against at the line where they appear.
pub struct MatchContext<'a> {
    /// HostName so far (with %h expanded), else the name given.
    pub host: &'a str,
    /// The name given on the command line.
    pub original_host: &'a str,
    /// User so far, else the local user.
    pub remote_user: &'a str,
    pub local_user: &'a str,
    /// The value of `Tag`, if set.
    pub tag: Option<&'a str>,
    pub final_pass: bool,
    /// Runs a `Match exec` command (tokens expanded by the caller): exit status 0 is a match.
    pub exec: &'a mut dyn FnMut(&str) -> Result<bool, String>,
}

/// What a `Match` line said.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MatchOutcome {
    pub active: bool,
    /// `Match final` was seen: the files are read a second time.
    pub wants_final: bool,
    /// Criteria turbo-play cannot evaluate (treated as not matching).
    pub unsupported: Vec<String>,
}

/// Evaluates a `Match` line's arguments; errors are OpenSSH's "Bad Match condition" kind.
pub fn match_line(args: &[String], ctx: &mut MatchContext<'_>) -> Result<MatchOutcome, String> {
    let mut outcome = MatchOutcome {
        active: true,
        ..Default::default()
    };
    let is_all = |a: &String| a.eq_ignore_ascii_case("all");
    if args.iter().any(is_all) {
        let others = args.iter().filter(|a| {
            !is_all(a) && !a.eq_ignore_ascii_case("canonical") && !a.eq_ignore_ascii_case("final")
        });
        if others.count() > 0 || args.iter().filter(|a| is_all(a)).count() > 1 {
            return Err("'all' cannot be combined with other Match attributes".into());
        }
    }
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let (negate, attribute) = match word.strip_prefix('!') {
            Some(rest) => (true, rest.to_ascii_lowercase()),
            None => (false, word.to_ascii_lowercase()),
        };
        let hold = |result: bool, outcome: &mut MatchOutcome| {
            if result == negate {
                outcome.active = false;
            }
        };
        match attribute.as_str() {
            "all" => {
                hold(true, &mut outcome);
                continue;
            }
            "canonical" | "final" => {
                if attribute == "final" {
                    outcome.wants_final = true;
                }
                // Without canonicalisation, `canonical` holds in the final pass too, as in
                // OpenSSH, which reaches it only there.
                hold(ctx.final_pass, &mut outcome);
                continue;
            }
            _ => {}
        }
        let Some(arg) = words
            .next()
            .filter(|a| !a.is_empty() && !a.starts_with('#'))
        else {
            return Err(format!("Missing Match criteria for {attribute}"));
        };
        match attribute.as_str() {
            "host" => hold(pattern_list_matches(arg, ctx.host, true), &mut outcome),
            "originalhost" => hold(
                pattern_list_matches(arg, ctx.original_host, true),
                &mut outcome,
            ),
            "user" => hold(
                pattern_list_matches(arg, ctx.remote_user, false),
                &mut outcome,
            ),
            "localuser" => hold(
                pattern_list_matches(arg, ctx.local_user, false),
                &mut outcome,
            ),
            "tagged" => hold(
                pattern_list_matches(arg, ctx.tag.unwrap_or(""), false),
                &mut outcome,
            ),
            "exec" => {
                // OpenSSH skips the command once an earlier criterion failed.
                if outcome.active {
                    let status = (ctx.exec)(arg)?;
                    hold(status, &mut outcome);
                }
            }
            "localnetwork" | "command" | "version" | "sessiontype" => {
                outcome.unsupported.push(format!("{attribute} {arg}"));
                outcome.active = false;
            }
            other => return Err(format!("Unsupported Match attribute {other}")),
        }
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn host_lines() {
        assert!(host_line_matches(&words("web* db1"), "web3"));
        assert!(host_line_matches(&words("web? db1"), "db1"));
        assert!(!host_line_matches(&words("web?"), "web10"));
        assert!(!host_line_matches(&words("* !bastion"), "bastion"));
        assert!(!host_line_matches(&words("!bastion *"), "bastion"));
        assert!(host_line_matches(&words("* !bastion"), "web1"));
        // A negation alone never makes a line apply.
        assert!(!host_line_matches(&words("!bastion"), "web1"));
    }

    #[test]
    fn pattern_lists() {
        assert!(pattern_list_matches(
            "*.example.com,!bad.*",
            "a.example.com",
            true
        ));
        assert!(!pattern_list_matches(
            "*.example.com,!bad.*",
            "bad.example.com",
            true
        ));
        assert!(pattern_list_matches("WEB*", "web1", true));
        assert!(!pattern_list_matches("Deploy", "deploy", false));
    }

    fn run(args: &str, final_pass: bool, exec_result: bool) -> Result<MatchOutcome, String> {
        let mut ran = Vec::new();
        let mut exec = |cmd: &str| {
            ran.push(cmd.to_string());
            Ok(exec_result)
        };
        let mut ctx = MatchContext {
            host: "real-web1",
            original_host: "web1",
            remote_user: "deploy",
            local_user: "root",
            tag: None,
            final_pass,
            exec: &mut exec,
        };
        match_line(&words(args), &mut ctx)
    }

    #[test]
    fn match_criteria() {
        assert!(run("all", false, true).unwrap().active);
        assert!(run("host real-*", false, true).unwrap().active);
        assert!(!run("host web1", false, true).unwrap().active);
        assert!(run("originalhost web1", false, true).unwrap().active);
        assert!(
            run("user deploy localuser root", false, true)
                .unwrap()
                .active
        );
        assert!(
            !run("user deploy !localuser root", false, true)
                .unwrap()
                .active
        );
        assert!(run("exec true", false, true).unwrap().active);
        assert!(!run("exec false", false, false).unwrap().active);
        assert!(run("!exec false", false, false).unwrap().active);
        let outcome = run("final host real-web1", false, true).unwrap();
        assert!(!outcome.active && outcome.wants_final);
        assert!(run("final host real-web1", true, true).unwrap().active);
        assert!(run("canonical all", true, true).unwrap().active);
        assert!(!run("canonical", false, true).unwrap().active);
        let outcome = run("localnetwork 10.0.0.0/8", false, true).unwrap();
        assert!(!outcome.active);
        assert_eq!(outcome.unsupported, vec!["localnetwork 10.0.0.0/8"]);
    }

    #[test]
    fn exec_is_skipped_after_a_failed_criterion() {
        let mut ran = 0;
        let mut exec = |_: &str| {
            ran += 1;
            Ok(true)
        };
        let mut ctx = MatchContext {
            host: "h",
            original_host: "h",
            remote_user: "u",
            local_user: "l",
            tag: None,
            final_pass: false,
            exec: &mut exec,
        };
        let outcome = match_line(&words("user nobody exec true"), &mut ctx).unwrap();
        assert!(!outcome.active);
        assert_eq!(ran, 0);
    }

    #[test]
    fn bad_match_lines() {
        assert_eq!(
            run("all host x", false, true).unwrap_err(),
            "'all' cannot be combined with other Match attributes"
        );
        assert_eq!(
            run("host", false, true).unwrap_err(),
            "Missing Match criteria for host"
        );
        assert_eq!(
            run("foo x", false, true).unwrap_err(),
            "Unsupported Match attribute foo"
        );
    }
}
