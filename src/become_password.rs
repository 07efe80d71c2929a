//! Where the become password comes from on the command line: `--become-password-file`
//! (a file, or an executable whose output is the password, as Ansible runs it), or the
//! `-K` prompt without echo. It is kept in memory only: never in argv, the environment of
//! children, a temp file or a log.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// The password file's content (its first line), or an executable's output.
pub fn from_file(path: &Path) -> Result<String, String> {
    read_password_file(path, "become")
}

/// A password file for `what` ("become", "connection"), read as `--become-password-file`
/// is: the first line, or an executable's output.
pub fn read_password_file(path: &Path, what: &str) -> Result<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path)
        .map_err(|e| format!("the {what} password file {}: {e}", path.display()))?;
    let text = if meta.permissions().mode() & 0o111 != 0 && meta.is_file() {
        let out = Command::new(path)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running the {what} password script {}: {e}", path.display()))?;
        if !out.status.success() {
            return Err(format!(
                "the {what} password script {} failed ({}): {}",
                path.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else {
        std::fs::read_to_string(path)
            .map_err(|e| format!("the {what} password file {}: {e}", path.display()))?
    };
    Ok(text.lines().next().unwrap_or_default().to_string())
}

/// Asks on the terminal, as Ansible's `BECOME password: ` prompt, echo off.
pub fn prompt() -> Result<String, String> {
    ask_hidden("BECOME password: ").map_err(|e| match e {
        Hidden::NoTerminal(e) => format!("-K needs a terminal to ask for the become password ({e}); use --become-password-file or ansible_become_password"),
        Hidden::Read(e) => format!("reading the become password: {e}"),
    })
}

/// Why a prompt without echo got no answer.
pub enum Hidden {
    NoTerminal(String),
    Read(String),
}

impl std::fmt::Display for Hidden {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Hidden::NoTerminal(e) => write!(f, "no terminal: {e}"),
            Hidden::Read(e) => write!(f, "{e}"),
        }
    }
}

/// Asks `prompt` on the controlling terminal with echo off and reads one line (a
/// password, a passphrase; the vault password prompts use it too).
pub fn ask_hidden(prompt: &str) -> Result<String, Hidden> {
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(|e| Hidden::NoTerminal(e.to_string()))?;
    let stty = |arg: &str| {
        Command::new("stty")
            .arg(arg)
            .stdin(
                tty.try_clone()
                    .map(Stdio::from)
                    .unwrap_or_else(|_| Stdio::null()),
            )
            .status()
    };
    let mut out = tty.try_clone().map_err(|e| Hidden::Read(e.to_string()))?;
    // Echo off before the prompt shows: an answer typed (or sent) as soon as it appears
    // must not be echoed either.
    let _ = stty("-echo");
    let _ = write!(out, "{prompt}");
    let _ = out.flush();
    let mut line = String::new();
    let read = std::io::BufReader::new(&tty).read_line(&mut line);
    let _ = stty("echo");
    let _ = writeln!(out);
    read.map_err(|e| Hidden::Read(e.to_string()))?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_gives_its_first_line_and_a_script_its_output() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "s3cret\nignored\n").unwrap();
        assert_eq!(from_file(&file).unwrap(), "s3cret");
        let script = dir.path().join("pw.sh");
        std::fs::write(&script, "#!/bin/sh\necho from-script\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(from_file(&script).unwrap(), "from-script");
        assert!(
            from_file(&dir.path().join("nope"))
                .unwrap_err()
                .contains("nope")
        );
    }
}
