//! What the service modules learn before they act, as Ansible's modules learn it: the
//! `ansible_service_mgr` fact's answer (facts/system/service_mgr.py), the tools on the
//! path (`get_bin_path` with /sbin, /usr/sbin, /bin, /usr/bin), the init script, the rc
//! links, whether systemd manages the host (module_utils/service.py's canaries) and whether
//! the module runs in a chroot. One sh probe prints `key=value` lines; [`parse`] reads them.

use super::service_run::Cmd;

/// The probe, run as `sh -c PROBE sh NAME`.
const PROBE: &str = r#"name=$1
bin() {
  for d in /sbin /usr/sbin /bin /usr/bin $(printf '%s' "$PATH" | tr ':' ' '); do
    if [ -f "$d/$1" ] && [ -x "$d/$1" ]; then printf '%s\n' "$d/$1"; return; fi
  done
}
for b in service chkconfig update-rc.d rc-service rc-update rc-status initctl systemctl insserv ps; do
  printf 'bin.%s=%s\n' "$b" "$(bin "$b")"
done
proc1=$(cat /proc/1/comm 2>/dev/null)
[ -z "$proc1" ] && [ -L /sbin/init ] && proc1=$(readlink /sbin/init)
printf 'proc1=%s\n' "${proc1##*/}"
for c in /run/systemd/system/ /dev/.run/systemd/ /dev/.systemd/; do
  [ -e "$c" ] && echo canary=1
done
[ -L /sbin/init ] && printf 'sbin_init=%s\n' "$(readlink /sbin/init)"
[ -d /etc/init/ ] && echo etc_init=1
[ -e /sbin/openrc ] && echo openrc=1
[ -d /etc/init.d/ ] && echo initd_dir=1
[ -d /etc/dinit.d/ ] && echo dinit_dir=1
[ -e "/etc/init/$name.conf" ] && echo upstart_conf=1
case $name in /*) script=$name ;; *) script=/etc/init.d/$name ;; esac
[ -e "$script" ] && echo "sysv_exists=1"
[ -f "/etc/init.d/$name" ] && echo initscript=1
[ -x "/etc/init.d/$name" ] && echo initscript_x=1
[ -d /etc/rc0.d/ ] && echo rc0d=1
[ "${SYSTEMD_OFFLINE:-}" = 1 ] && echo systemd_offline=1
for l in /etc/rc?.d/[SK]??"$name" /etc/init.d/rc?.d/[SK]??"$name"; do
  [ -e "$l" ] || [ -L "$l" ] && printf 'link=%s\n' "$l"
done
if [ -n "$debian_chroot" ]; then echo chroot=1
elif r=$(stat -c '%d %i' / 2>/dev/null) && p=$(stat -c '%d %i' /proc/1/root/. 2>/dev/null); then
  [ "$r" = "$p" ] || echo chroot=1
else
  ino=2
  case $(stat -f --format=%T / 2>/dev/null) in *btrfs*) ino=256 ;; *xfs*) ino=128 ;; esac
  [ "$(stat -c %i /)" = "$ino" ] || echo chroot=1
fi
exit 0
"#;

/// The probe as the first command of a step.
pub fn probe(name: &str) -> Cmd {
    Cmd::new(
        "detect",
        vec![
            "sh".into(),
            "-c".into(),
            PROBE.into(),
            "sh".into(),
            name.into(),
        ],
    )
}

/// What the probe found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Detected {
    pub service: Option<String>,
    pub chkconfig: Option<String>,
    pub update_rc_d: Option<String>,
    pub rc_service: Option<String>,
    pub rc_update: Option<String>,
    pub rc_status: Option<String>,
    pub initctl: Option<String>,
    pub systemctl: Option<String>,
    pub insserv: Option<String>,
    pub ps: Option<String>,
    /// /proc/1/comm's base name (or /sbin/init's target's when /proc says nothing).
    pub proc1: Option<String>,
    pub canary: bool,
    pub sbin_init: Option<String>,
    pub etc_init: bool,
    pub openrc: bool,
    pub initd_dir: bool,
    pub dinit_dir: bool,
    pub upstart_conf: bool,
    /// `/etc/init.d/NAME` (or NAME itself when absolute) exists: module_utils' sysv_exists.
    pub sysv_exists: bool,
    /// `/etc/init.d/NAME` is a file (service's init script).
    pub initscript: bool,
    pub initscript_executable: bool,
    pub rc0d: bool,
    /// Every `/etc/rc?.d/[SK]??NAME` (and `/etc/init.d/rc?.d/...`).
    pub links: Vec<String>,
    pub chroot: bool,
    /// `SYSTEMD_OFFLINE=1` in the module's environment.
    pub systemd_offline: bool,
}

pub fn parse(text: &str) -> Detected {
    let mut d = Detected::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let some = || (!value.is_empty()).then(|| value.to_string());
        match key {
            "bin.service" => d.service = some(),
            "bin.chkconfig" => d.chkconfig = some(),
            "bin.update-rc.d" => d.update_rc_d = some(),
            "bin.rc-service" => d.rc_service = some(),
            "bin.rc-update" => d.rc_update = some(),
            "bin.rc-status" => d.rc_status = some(),
            "bin.initctl" => d.initctl = some(),
            "bin.systemctl" => d.systemctl = some(),
            "bin.insserv" => d.insserv = some(),
            "bin.ps" => d.ps = some(),
            "proc1" => d.proc1 = some(),
            "canary" => d.canary = true,
            "sbin_init" => d.sbin_init = some(),
            "etc_init" => d.etc_init = true,
            "openrc" => d.openrc = true,
            "initd_dir" => d.initd_dir = true,
            "dinit_dir" => d.dinit_dir = true,
            "upstart_conf" => d.upstart_conf = true,
            "sysv_exists" => d.sysv_exists = true,
            "initscript" => d.initscript = true,
            "initscript_x" => d.initscript_executable = true,
            "rc0d" => d.rc0d = true,
            "link" => d.links.push(value.to_string()),
            "chroot" => d.chroot = true,
            "systemd_offline" => d.systemd_offline = true,
            _ => {}
        }
    }
    d
}

impl Detected {
    /// module_utils/service.py's is_systemd_managed.
    pub fn systemd_managed(&self) -> bool {
        self.systemctl.is_some() && (self.canary || self.proc1.as_deref() == Some("systemd"))
    }

    /// The `ansible_service_mgr` fact on Linux.
    pub fn service_mgr(&self) -> String {
        let proc1 = self
            .proc1
            .as_deref()
            .filter(|p| *p != "init" && !p.ends_with("sh"));
        if let Some(p) = proc1 {
            return match p {
                "procd" => "openwrt_init",
                "runit-init" => "runit",
                "svscan" => "svc",
                "openrc-init" => "openrc",
                other => other,
            }
            .to_string();
        }
        let offline = self.systemctl.is_some()
            && self
                .sbin_init
                .as_deref()
                .is_some_and(|t| t.rsplit('/').next() == Some("systemd"));
        if self.systemd_managed() {
            "systemd"
        } else if self.initctl.is_some() && self.etc_init {
            "upstart"
        } else if self.openrc {
            "openrc"
        } else if offline {
            "systemd"
        } else if self.initd_dir {
            "sysvinit"
        } else if self.dinit_dir {
            "dinit"
        } else {
            "service"
        }
        .to_string()
    }

    fn links_of(&self, kind: char, runlevel: Option<&str>) -> bool {
        self.links.iter().any(|l| {
            let (dir, file) = l.rsplit_once('/').unwrap_or(("", l));
            let in_rc_d = if self.rc0d {
                dir.starts_with("/etc/rc")
            } else {
                dir.starts_with("/etc/init.d/rc")
            };
            let level_ok = runlevel.is_none_or(|rl| dir.ends_with(&format!("rc{rl}.d")));
            in_rc_d && level_ok && file.starts_with(kind)
        })
    }

    /// module_utils' sysv_is_enabled: an `S??NAME` link (in that runlevel).
    pub fn sysv_enabled(&self, runlevel: Option<&str>) -> bool {
        self.links_of('S', runlevel)
    }

    /// service's update-rc.d check: any `/etc/rc?.d/S??NAME`.
    pub fn start_links(&self) -> bool {
        self.links.iter().any(|l| {
            l.starts_with("/etc/rc") && l.rsplit('/').next().is_some_and(|f| f.starts_with('S'))
        })
    }

    pub fn kill_links(&self) -> bool {
        self.links.iter().any(|l| {
            l.starts_with("/etc/rc") && l.rsplit('/').next().is_some_and(|f| f.starts_with('K'))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN_SSHD_PID1: &str = "bin.service=/usr/sbin/service\nbin.chkconfig=\n\
        bin.update-rc.d=/usr/sbin/update-rc.d\nbin.rc-service=\nbin.rc-update=\nbin.initctl=\n\
        bin.systemctl=/bin/systemctl\nbin.insserv=\nbin.ps=/bin/ps\nproc1=sshd\ninitd_dir=1\n\
        sysv_exists=1\ninitscript=1\ninitscript_x=1\nrc0d=1\nlink=/etc/rc0.d/K01cron\n\
        link=/etc/rc2.d/S01cron\n";

    #[test]
    fn reads_a_debian_host_whose_pid_1_is_sshd() {
        let d = parse(DEBIAN_SSHD_PID1);
        assert_eq!(d.service.as_deref(), Some("/usr/sbin/service"));
        assert_eq!(d.chkconfig, None);
        assert!(!d.systemd_managed());
        // Ansible names the fact after PID 1 when it is not an init: `service` falls back.
        assert_eq!(d.service_mgr(), "sshd");
        assert!(d.sysv_enabled(None));
        assert!(d.sysv_enabled(Some("2")));
        assert!(!d.sysv_enabled(Some("3")));
        assert!(d.start_links() && d.kill_links());
        assert!(!d.chroot);
    }

    #[test]
    fn service_mgr_follows_ansibles_order() {
        let with = |text: &str| parse(text).service_mgr();
        assert_eq!(with("proc1=systemd\n"), "systemd");
        assert_eq!(with("proc1=openrc-init\n"), "openrc");
        assert_eq!(with("proc1=bash\ninitd_dir=1\n"), "sysvinit");
        assert_eq!(
            with("proc1=init\nbin.systemctl=/bin/systemctl\ncanary=1\n"),
            "systemd"
        );
        assert_eq!(with("proc1=init\nopenrc=1\ninitd_dir=1\n"), "openrc");
        assert_eq!(
            with("bin.systemctl=/bin/systemctl\nsbin_init=/lib/systemd/systemd\ninitd_dir=1\n"),
            "systemd"
        );
        assert_eq!(with(""), "service");
    }

    #[test]
    fn the_probe_runs_under_posix_sh() {
        let out = std::process::Command::new("/bin/sh")
            .args(["-c", PROBE, "sh", "no-such-service-here"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let d = parse(&String::from_utf8_lossy(&out.stdout));
        assert!(!d.sysv_exists && d.links.is_empty());
        assert!(d.proc1.is_some());
    }
}
