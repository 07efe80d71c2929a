//! apt-get's command lines as Ansible's apt writes them (its messages quote them) and
//! what its output means: whether anything changed, the `--diff` text, and its errors in
//! Ansible's words.

use turbo_proto::{Command, Exec};

pub const APT_GET: &str = "/usr/bin/apt-get";
/// apt-get's summary when it does nothing.
pub const APT_GET_ZERO: &str = "\n0 upgraded, 0 newly installed, 0 to remove";
pub const DPKG_OPTIONS: &str = "force-confdef,force-confold";

/// `apt-get update` as python-apt's `Cache.update()` (Ansible's): any index that failed to
/// download fails it, a transient network error too (apt-get alone only warns of those).
pub fn update_argv(apt_get: &str) -> Vec<String> {
    [apt_get, "update", "-q", "-o", "APT::Update::Error-Mode=any"]
        .map(String::from)
        .to_vec()
}

/// apt's environment: no questions, and a locale whose messages are apt's English ones.
pub fn environment() -> Vec<(String, String)> {
    let locale = "C.UTF-8";
    let mut env = vec![
        ("DEBIAN_FRONTEND".to_string(), "noninteractive".to_string()),
        ("DEBIAN_PRIORITY".to_string(), "critical".to_string()),
    ];
    for key in ["LANG", "LC_ALL", "LC_MESSAGES", "LC_CTYPE", "LANGUAGE"] {
        env.push((key.to_string(), locale.to_string()));
    }
    env
}

/// `dpkg_options` as apt-get options (Ansible's `expand_dpkg_options`), then the lock
/// timeout.
pub fn dpkg_options(compressed: &str, lock_timeout: i64) -> String {
    let options: Vec<String> = compressed
        .split(',')
        .map(|o| format!("-o \"Dpkg::Options::=--{o}\""))
        .collect();
    format!(
        "{} -o DPkg::Lock::Timeout={lock_timeout}",
        options.join(" ")
    )
}

/// A package spec as Ansible quotes it in its command line.
pub fn quoted(spec: &str) -> String {
    format!("'{spec}'")
}

/// Runs Ansible's command line (split as its `run_command` splits a string), with
/// `/usr/sbin/policy-rc.d` answering `policy_rc_d` around it when asked.
pub fn exec(line: &str, policy_rc_d: Option<i64>) -> Result<Exec, String> {
    let argv = crate::shell_words::split(line)?;
    let command = match policy_rc_d {
        None => Command::Argv(argv),
        Some(code) => Command::Shell {
            script: with_policy_rc_d(&argv, code),
            executable: None,
        },
    };
    Ok(Exec {
        command,
        chdir: None,
        creates: None,
        removes: None,
        env: environment(),
        stdin: None,
        umask: None,
    })
}

/// A shell script that puts a policy-rc.d exiting `code` in place (keeping one that was
/// there), runs `argv`, restores, and exits as `argv` did.
fn with_policy_rc_d(argv: &[String], code: i64) -> String {
    let command: Vec<String> = argv.iter().map(|w| shell_quote(w)).collect();
    format!(
        "p=/usr/sbin/policy-rc.d; b=\n\
         if [ -e \"$p\" ]; then b=$(mktemp -d) && mv \"$p\" \"$b/\" || {{ echo \"Fail to move $p to $b\" >&2; exit 1; }}; fi\n\
         printf '#!/bin/sh\\nexit %d\\n' {code} >\"$p\" && chmod 0755 \"$p\" || {{ echo \"Failed to create or chmod $p\" >&2; exit 1; }}\n\
         {}\n\
         rc=$?\n\
         if [ -n \"$b\" ]; then mv \"$b/policy-rc.d\" \"$p\" && rmdir \"$b\"; else rm -f \"$p\"; fi\n\
         exit $rc\n",
        command.join(" ")
    )
}

/// Marks the parts of a squashed install's output (see [`squashed_install`]).
const BEFORE: &str = "@@turbo-play apt before ";
const INSTALL: &str = "@@turbo-play apt install\n";

/// One apt-get call for the packages of several loop items (`line` over all of them),
/// preceded by a simulation, for each package after the first, of installing the ones
/// before it: an item whose packages the earlier items pull in reports no change, as it
/// does in Ansible, where it runs after them.
pub fn squashed_install(specs: &[String], line: &str) -> Result<Exec, String> {
    let argv = crate::shell_words::split(line)?;
    let mut script = String::new();
    for (j, spec) in specs.iter().enumerate().skip(1) {
        let before: Vec<String> = specs[..j].iter().map(|s| shell_quote(s)).collect();
        script.push_str(&format!(
            "printf '%s%s\\n' {} {}\n{APT_GET} -s -y install {} 2>/dev/null | grep '^Inst '\n",
            shell_quote(BEFORE),
            shell_quote(spec),
            before.join(" ")
        ));
    }
    let command: Vec<String> = argv.iter().map(|w| shell_quote(w)).collect();
    script.push_str(&format!(
        "printf '%s' {}\nexec {}\n",
        shell_quote(INSTALL),
        command.join(" ")
    ));
    Ok(Exec {
        command: Command::Shell {
            script,
            executable: None,
        },
        chdir: None,
        creates: None,
        removes: None,
        env: environment(),
        stdin: None,
        umask: None,
    })
}

/// What a squashed install's output says to the item whose packages are `own`: `None`
/// when the earlier items' packages pull all of them in (the item changes nothing), else
/// apt-get's own output. Output that is not a squashed install's is the item's as it is.
pub fn squashed_view(stdout: &str, own: &[String]) -> Option<String> {
    let Some(at) = stdout.find(INSTALL) else {
        return Some(stdout.to_string());
    };
    let (simulations, real) = (&stdout[..at], &stdout[at + INSTALL.len()..]);
    let Some(first) = own.first() else {
        return Some(real.to_string());
    };
    let mut section = None;
    for part in simulations.split(BEFORE).skip(1) {
        let (spec, rest) = part.split_once('\n').unwrap_or((part, ""));
        if spec == first {
            section = Some(rest);
        }
    }
    let Some(section) = section else {
        return Some(real.to_string());
    };
    let pulled = |spec: &String| {
        let name = spec.split('=').next().unwrap_or(spec);
        section
            .lines()
            .any(|l| l.strip_prefix("Inst ").and_then(|r| r.split(' ').next()) == Some(name))
    };
    if own.iter().all(pulled) {
        None
    } else {
        Some(real.to_string())
    }
}

fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// Ansible's `parse_diff`: apt-get's output from after "Reading state information..."
/// to its summary line.
pub fn prepared_diff(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let start = lines
        .iter()
        .position(|l| *l == "Resolving dependencies...")
        .or_else(|| {
            lines
                .iter()
                .position(|l| *l == "Reading state information...")
        })
        .map_or(0, |i| i + 1);
    let end = lines
        .iter()
        .position(|l| is_summary(l))
        .map_or(lines.len(), |i| i + 1);
    lines
        .get(start..end.max(start))
        .unwrap_or_default()
        .join("\n")
}

/// `[0-9]+ (packages )?upgraded` at the start of a line.
fn is_summary(line: &str) -> bool {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && {
        let rest = &line[digits..];
        rest.starts_with(" upgraded") || rest.starts_with(" packages upgraded")
    }
}

/// The error Ansible reports before it runs apt-get, read back from apt-get's own
/// stderr when it was apt-get that found it: a name apt does not know, or a version it
/// has not got.
pub fn known_error(stderr: &str) -> Option<String> {
    for line in stderr.lines() {
        if let Some(name) = line.strip_prefix("E: Unable to locate package ") {
            return Some(format!(
                "No package matching '{}' is available",
                name.trim()
            ));
        }
        if let Some(rest) = line.strip_prefix("E: Package '")
            && let Some((name, _)) = rest.split_once("' has no installation candidate")
        {
            return Some(format!("No package matching '{name}' is available"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_squashed_install_simulates_what_the_earlier_items_pull_in() {
        let specs = vec!["a".to_string(), "b=1.0".to_string()];
        let exec = squashed_install(&specs, "/usr/bin/apt-get -y install 'a' 'b=1.0'").unwrap();
        let Command::Shell { script, .. } = exec.command else {
            panic!("a script")
        };
        assert_eq!(
            script,
            "printf '%s%s\\n' '@@turbo-play apt before ' 'b=1.0'\n\
             /usr/bin/apt-get -s -y install 'a' 2>/dev/null | grep '^Inst '\n\
             printf '%s' '@@turbo-play apt install\n'\n\
             exec '/usr/bin/apt-get' '-y' 'install' 'a' 'b=1.0'\n"
        );
        let out = "@@turbo-play apt before b=1.0\nInst b (1.0 x)\nInst a (2 x)\n\
                   @@turbo-play apt install\nReading...\n";
        assert_eq!(
            squashed_view(out, &["a".into()]).as_deref(),
            Some("Reading...\n")
        );
        assert_eq!(squashed_view(out, &["b=1.0".into()]), None);
        let alone = "@@turbo-play apt before b=1.0\nInst a (2 x)\n@@turbo-play apt install\nR\n";
        assert_eq!(
            squashed_view(alone, &["b=1.0".into()]).as_deref(),
            Some("R\n")
        );
        assert_eq!(
            squashed_view("plain", &["a".into()]).as_deref(),
            Some("plain")
        );
    }

    #[test]
    fn writes_dpkg_options_as_ansible() {
        assert_eq!(
            dpkg_options(DPKG_OPTIONS, 60),
            "-o \"Dpkg::Options::=--force-confdef\" -o \"Dpkg::Options::=--force-confold\" -o DPkg::Lock::Timeout=60"
        );
        let exec = exec(
            &format!(
                "{APT_GET} -y {}  install 'a' 'b=1.0'",
                dpkg_options("force-confnew", 5)
            ),
            None,
        )
        .unwrap();
        assert_eq!(
            exec.command,
            Command::Argv(
                [
                    "/usr/bin/apt-get",
                    "-y",
                    "-o",
                    "Dpkg::Options::=--force-confnew",
                    "-o",
                    "DPkg::Lock::Timeout=5",
                    "install",
                    "a",
                    "b=1.0"
                ]
                .map(String::from)
                .to_vec()
            )
        );
        assert!(
            exec.env
                .contains(&("DEBIAN_FRONTEND".into(), "noninteractive".into()))
        );
    }

    #[test]
    fn policy_rc_d_wraps_the_command() {
        let exec = exec("/usr/bin/apt-get -y install 'it'\\''s'", Some(101)).unwrap();
        let Command::Shell { script, .. } = exec.command else {
            panic!("a script")
        };
        assert!(script.contains("exit %d\\n' 101"), "{script}");
        assert!(
            script.contains("'/usr/bin/apt-get' '-y' 'install' 'it'\\''s'"),
            "{script}"
        );
    }

    #[test]
    fn reads_the_prepared_part_of_the_output() {
        let out = "Reading package lists...\nBuilding dependency tree...\nReading state information...\nThe following NEW packages will be installed:\n  tree\n0 upgraded, 1 newly installed, 0 to remove and 0 not upgraded.\nInst tree (2.1.0-1 Debian:12)\n";
        assert_eq!(
            prepared_diff(out),
            "The following NEW packages will be installed:\n  tree\n0 upgraded, 1 newly installed, 0 to remove and 0 not upgraded."
        );
        assert_eq!(prepared_diff("x\ny"), "x\ny");
    }

    #[test]
    fn words_apt_errors_as_ansible() {
        assert_eq!(
            known_error("W: x\nE: Unable to locate package nope\n").as_deref(),
            Some("No package matching 'nope' is available")
        );
        assert_eq!(
            known_error("E: Package 'mta' has no installation candidate\n").as_deref(),
            Some("No package matching 'mta' is available")
        );
        assert_eq!(known_error("E: something else"), None);
    }
}
