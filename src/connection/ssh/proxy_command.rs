//! ProxyCommand: the command runs under `sh -c` (its `%h %p %r %n %%` expanded) and SSH
//! is spoken over its stdin and stdout. Its stderr is kept (bounded) for the message when
//! it ends before the handshake; it is killed when the connection goes.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::Connection;
use super::retry::Failure;
use super::transport::{self, Hop};
use crate::connection::{ConnectError, ConnectionSpec};

/// stderr kept from the command.
const STDERR_LIMIT: usize = 8 * 1024;

/// How long a command whose stream ended may take to report its exit status.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// OpenSSH's tokens: %h the host, %p the port, %r the remote user, %n the host as given
/// (here the same as %h), %% a percent sign.
pub(super) fn expand_tokens(command: &str, hop: &Hop) -> Result<String, String> {
    let mut out = String::with_capacity(command.len());
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('h') | Some('n') => out.push_str(&hop.address),
            Some('p') => out.push_str(&hop.port.to_string()),
            Some('r') => out.push_str(&hop.user),
            Some('%') => out.push('%'),
            Some(other) => {
                return Err(format!(
                    "ProxyCommand `{command}`: unknown token %{other} (turbo-play knows %h %p %r %n %%)"
                ));
            }
            None => return Err(format!("ProxyCommand `{command}` ends with a lone %")),
        }
    }
    Ok(out)
}

/// Keeps the command running while the connection lives, and its stderr drained.
struct ProxyChild {
    _child: tokio::process::Child,
    _stderr: tokio::task::JoinHandle<()>,
}

pub(super) async fn connect(
    spec: &ConnectionSpec,
    hop: &Hop,
    command: &str,
) -> Result<Connection, Failure> {
    let expanded = expand_tokens(command, hop).map_err(|message| {
        Failure::Final(ConnectError::Config {
            host: spec.host.clone(),
            message,
        })
    })?;
    let failed = |outcome: String| ConnectError::ProxyCommand {
        command: expanded.clone(),
        outcome,
    };
    let mut child = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(&expanded)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| Failure::Final(failed(format!("could not start: {e}"))))?;
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let kept = Arc::new(Mutex::new(Vec::new()));
    let sink = kept.clone();
    let stderr_task = tokio::spawn(async move {
        let mut buffer = [0u8; 4096];
        // Read to the end whatever the size, so the command never blocks on a full pipe.
        while let Ok(n) = stderr.read(&mut buffer).await {
            if n == 0 {
                break;
            }
            let mut kept = sink.lock().expect("stderr lock");
            let room = STDERR_LIMIT.saturating_sub(kept.len());
            kept.extend_from_slice(&buffer[..n.min(room)]);
        }
    });
    match transport::login(hop, tokio::io::join(stdout, stdin)).await {
        Ok(handle) => {
            let mut connection = Connection::new(handle);
            connection.keep.push(Box::new(ProxyChild {
                _child: child,
                _stderr: stderr_task,
            }));
            Ok(connection)
        }
        Err(Failure::Final(e)) => Err(Failure::Final(e)),
        Err(failure) => {
            let Ok(Ok(status)) = tokio::time::timeout(EXIT_WAIT, child.wait()).await else {
                return Err(failure);
            };
            let _ = tokio::time::timeout(EXIT_WAIT, stderr_task).await;
            let stderr = String::from_utf8_lossy(&kept.lock().expect("stderr lock"))
                .trim()
                .to_string();
            let status = match status.code() {
                Some(code) => format!("exited with status {code}"),
                None => format!("ended ({status})"),
            };
            let said = if stderr.is_empty() {
                "without a word on stderr".to_string()
            } else {
                format!("saying: {stderr}")
            };
            Err(Failure::Network(failed(format!(
                "{status} before the SSH handshake was done, {said}"
            ))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_expand_as_openssh_does() {
        let spec = crate::connection::ConnectionSpec {
            host: "web1".into(),
            kind: crate::connection::ConnectionKind::Ssh,
            address: "10.0.0.5".into(),
            port: 2222,
            user: "deploy".into(),
            identity_files: vec![],
            strict: crate::connection::StrictHostKeyChecking::Yes,
            known_hosts_files: vec![],
            connect_timeout: Duration::from_secs(1),
            proxy: crate::connection::Proxy::None,
            password: None,
            retries: None,
            ssh: Default::default(),
        };
        let hop = Hop::target(&spec);
        assert_eq!(
            expand_tokens("ssh -W %h:%p -l %r gw # %n 100%%", &hop).unwrap(),
            "ssh -W 10.0.0.5:2222 -l deploy gw # 10.0.0.5 100%"
        );
        assert!(
            expand_tokens("nc %x", &hop)
                .unwrap_err()
                .contains("unknown token %x")
        );
        assert!(expand_tokens("nc %", &hop).unwrap_err().contains("lone %"));
    }
}
