//! What `wait_for` runs on the target: the whole wait as one POSIX sh loop when the
//! target can decide each check itself (a path appears or goes, a port opens or closes),
//! the one-shot reads the controller matches a Python regex against, and the reading of
//! `/proc/net/tcp*` for `state: drained`, as Ansible's `LinuxTCPConnectionInfo` reads it.

use std::net::IpAddr;

use super::service_run::sh_quote;

/// What one check on the target looks at, in the sh loop.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    /// Nothing: the task only sleeps for its `timeout` (no port, no path).
    Nothing,
    /// The path exists (`os.stat` succeeds: a final symlink is followed).
    PathPresent(String),
    PathAbsent(String),
    /// A TCP connection to `host:port` succeeds.
    PortOpen {
        host: String,
        port: i64,
    },
    PortClosed {
        host: String,
        port: i64,
    },
}

/// Timing as Ansible's module counts it: `delay` is inside `timeout`; checks repeat
/// `sleep` seconds apart while the clock is before the end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub timeout: i64,
    pub delay: i64,
    pub sleep: i64,
    pub connect_timeout: i64,
}

/// The exit status of the loop script when the time ran out.
pub const TIMED_OUT: i32 = 3;
/// The exit status when the target has nothing to open a TCP connection with.
pub const NO_CONNECT_TOOL: i32 = 4;

/// Centiseconds of uptime: a clock that does not jump, read without forking.
const CLOCK: &str = r#"now() {
  if read -r t _ </proc/uptime 2>/dev/null; then
    c=${t#*.}; c=${c#0}; echo $(( ${t%.*} * 100 + c ))
  else
    echo $(( $(date +%s) * 100 ))
  fi
}
"#;

/// `connect CT HOST PORT`: true when a TCP connection opens within CT seconds. bash's
/// /dev/tcp first (every Debian has bash), then nc, then python3.
const CONNECT: &str = r#"if command -v bash >/dev/null 2>&1; then tool=bash
elif command -v nc >/dev/null 2>&1; then tool=nc
elif command -v python3 >/dev/null 2>&1; then tool=python3
else echo "wait_for needs bash, nc or python3 on the target to open TCP connections" >&2; exit 4
fi
limit() { if command -v timeout >/dev/null 2>&1; then timeout "$@"; else shift; "$@"; fi; }
connect() {
  case $tool in
  bash) limit "$1" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$2" "$3" 2>/dev/null ;;
  nc) limit "$1" nc -z -w "$1" "$2" "$3" >/dev/null 2>&1 ;;
  *) limit "$1" python3 -c 'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), float(sys.argv[3])).close()' "$2" "$3" "$1" 2>/dev/null ;;
  esac
}
"#;

/// The whole wait as one script: exit 0 when the condition held, [`TIMED_OUT`] when the
/// time ran out first. The task's `elapsed` is the command's own duration.
pub fn loop_script(check: &Check, timing: Timing) -> String {
    let mut s = String::from("set -u\n");
    if matches!(check, Check::Nothing) {
        if timing.delay > 0 {
            s.push_str(&format!("sleep {}\n", timing.delay));
        }
        s.push_str(&format!("sleep {}\n", timing.timeout.max(0)));
        return s;
    }
    s.push_str(CLOCK);
    let test = match check {
        Check::Nothing => unreachable!("handled above"),
        Check::PathPresent(path) => format!("[ -e {} ]", sh_quote(path)),
        Check::PathAbsent(path) => format!("[ ! -e {} ]", sh_quote(path)),
        Check::PortOpen { host, port } => {
            s.push_str(CONNECT);
            // Ansible's connect timeout never reaches past the end of the wait.
            format!(
                "{{ left=$(( (end - $(now) + 99) / 100 )); [ $left -gt {ct} ] && left={ct}; \
                 connect $left {} {port}; }}",
                sh_quote(host),
                ct = timing.connect_timeout,
            )
        }
        Check::PortClosed { host, port } => {
            s.push_str(CONNECT);
            format!(
                "! connect {} {} {port}",
                timing.connect_timeout,
                sh_quote(host)
            )
        }
    };
    s.push_str(&format!(
        "start=$(now); end=$(( start + {} * 100 ))\n",
        timing.timeout
    ));
    if timing.delay > 0 {
        s.push_str(&format!("sleep {}\n", timing.delay));
    }
    s.push_str(&format!(
        "while [ \"$(now)\" -lt \"$end\" ]; do\n  if {test}; then exit 0; fi\n  sleep {}\ndone\nexit {TIMED_OUT}\n",
        timing.sleep.max(0)
    ));
    s
}

/// One connection to `host:port`, printing what the peer sends within `read_secs`:
/// exit 1 when it does not open. The controller matches the regex on what came.
pub fn read_port_script(host: &str, port: i64, connect_timeout: i64, read_secs: i64) -> String {
    format!(
        "{CONNECT}[ \"$tool\" = bash ] || {{ echo \"wait_for search_regex on a port needs bash on the target\" >&2; exit 4; }}\n\
         limit {total} bash -c 'exec 3<>\"/dev/tcp/$0/$1\" 2>/dev/null || exit 1; limit() {{ if command -v timeout >/dev/null 2>&1; then timeout \"$@\"; else shift; \"$@\"; fi; }}; limit \"$2\" cat <&3; exit 0' {} {port} {read_secs}\n\
         rc=$?; [ $rc -eq 1 ] && exit 1; exit 0\n",
        sh_quote(host),
        total = connect_timeout + read_secs,
    )
}

/// Names to resolve on the target, one `getent ahosts` each, in sections.
pub fn resolve_script(names: &[String]) -> String {
    let mut s = String::new();
    for name in names {
        s.push_str(&format!(
            "echo \"== \"{q}; getent ahosts {q} | while read -r a _; do echo \"$a\"; done | sort -u\n",
            q = sh_quote(name)
        ));
    }
    s
}

/// The addresses each name resolved to, from [`resolve_script`]'s output.
pub fn parse_resolved(stdout: &str) -> Vec<(String, Vec<IpAddr>)> {
    let mut out: Vec<(String, Vec<IpAddr>)> = Vec::new();
    for line in stdout.lines() {
        if let Some(name) = line.strip_prefix("== ") {
            out.push((name.to_string(), Vec::new()));
        } else if let (Some(last), Ok(ip)) = (out.last_mut(), line.trim().parse::<IpAddr>())
            && !last.1.contains(&ip)
        {
            last.1.push(ip);
        }
    }
    out
}

/// The `/proc/net/tcp` and `/proc/net/tcp6` spelling of addresses (Ansible's
/// `_convert_host_to_hex`): each 4-byte word in host (little-endian) order, upper hex; an
/// IPv4 address counts as its IPv4-mapped IPv6 address too.
pub fn proc_hex(ips: &[IpAddr]) -> Vec<(Family, String)> {
    let word = |b: &[u8]| format!("{:08X}", u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let mut out = Vec::new();
    for ip in ips {
        match ip {
            IpAddr::V4(v4) => {
                out.push((Family::V4, word(&v4.octets())));
                let mapped = v4.to_ipv6_mapped().octets();
                out.push((Family::V6, mapped.chunks(4).map(word).collect()));
            }
            IpAddr::V6(v6) => {
                out.push((Family::V6, v6.octets().chunks(4).map(word).collect()));
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

/// `/proc/net/tcp`'s number for a connection state Ansible names.
pub fn state_id(state: &str) -> Option<&'static str> {
    Some(match state {
        "ESTABLISHED" => "01",
        "SYN_SENT" => "02",
        "SYN_RECV" => "03",
        "FIN_WAIT1" => "04",
        "FIN_WAIT2" => "05",
        "TIME_WAIT" => "06",
        _ => return None,
    })
}

/// What `drained` counts, as Ansible's `get_active_connections_count` on Linux.
pub struct Drain {
    pub port: i64,
    pub ips: Vec<(Family, String)>,
    pub excluded: Vec<(Family, String)>,
    pub states: Vec<&'static str>,
}

impl Drain {
    /// Active connections on the port in one `/proc/net/tcp*` file's text.
    pub fn count(&self, family: Family, table: &str) -> usize {
        let port = format!("{:04X}", self.port);
        let match_all = match family {
            Family::V4 => "00000000",
            Family::V6 => "00000000000000000000000000000000",
        };
        let has = |ip: &str| self.ips.iter().any(|(f, i)| *f == family && i == ip);
        table
            .lines()
            .filter(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                if fields.len() < 4 || fields[1] == "local_address" {
                    return false;
                }
                if !self.states.contains(&fields[3]) {
                    return false;
                }
                let Some((local_ip, local_port)) = fields[1].split_once(':') else {
                    return false;
                };
                if local_port != port {
                    return false;
                }
                let remote_ip = fields[2].split_once(':').map_or("", |(ip, _)| ip);
                if self
                    .excluded
                    .iter()
                    .any(|(f, i)| *f == family && i == remote_ip)
                {
                    return false;
                }
                has(local_ip)
                    || has(match_all)
                    || (local_ip.starts_with("0000000000000000FFFF0000")
                        && has("0000000000000000FFFF000000000000"))
            })
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_spelled_as_proc_net_tcp_spells_them() {
        let ips = proc_hex(&["127.0.0.1".parse().unwrap()]);
        assert_eq!(
            ips,
            [
                (Family::V4, "0100007F".to_string()),
                (Family::V6, "0000000000000000FFFF00000100007F".to_string())
            ]
        );
        assert_eq!(
            proc_hex(&["::1".parse().unwrap()]),
            [(Family::V6, "00000000000000000000000001000000".to_string())]
        );
    }

    #[test]
    fn counts_active_connections_on_the_port() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1\n\
   2: 0100007F:1F90 0200007F:C351 06 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1\n\
   3: 0100007F:1F91 0100007F:C352 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1\n";
        let mut drain = Drain {
            port: 8080,
            ips: proc_hex(&["127.0.0.1".parse().unwrap()]),
            excluded: Vec::new(),
            states: vec!["01", "06"],
        };
        assert_eq!(drain.count(Family::V4, table), 2);
        drain.excluded = proc_hex(&["127.0.0.2".parse().unwrap()]);
        assert_eq!(drain.count(Family::V4, table), 1);
        drain.ips = proc_hex(&["10.0.0.1".parse().unwrap()]);
        assert_eq!(drain.count(Family::V4, table), 0);
        drain.ips = proc_hex(&["0.0.0.0".parse().unwrap()]);
        assert_eq!(drain.count(Family::V4, table), 1);
    }

    #[test]
    fn resolved_names_come_back_per_section() {
        let out = "== localhost\n127.0.0.1\n::1\n== db\n10.0.0.5\n";
        let parsed = parse_resolved(out);
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].1.len(), 2);
        assert_eq!(parsed[1].1, vec!["10.0.0.5".parse::<IpAddr>().unwrap()]);
    }

    #[test]
    fn the_loop_script_waits_in_ansibles_order() {
        let timing = Timing {
            timeout: 10,
            delay: 2,
            sleep: 1,
            connect_timeout: 5,
        };
        let s = loop_script(&Check::PathPresent("/tmp/a b".into()), timing);
        assert!(s.contains("end=$(( start + 10 * 100 ))"), "{s}");
        assert!(s.contains("sleep 2\nwhile"), "{s}");
        assert!(s.contains("if [ -e '/tmp/a b' ]; then exit 0; fi\n  sleep 1\ndone\nexit 3"));
        assert_eq!(
            loop_script(&Check::Nothing, timing),
            "set -u\nsleep 2\nsleep 10\n"
        );
        let port = loop_script(
            &Check::PortClosed {
                host: "127.0.0.1".into(),
                port: 22,
            },
            timing,
        );
        assert!(
            port.contains("if ! connect 5 '127.0.0.1' 22; then exit 0"),
            "{port}"
        );
    }
}
