//! Whether a service runs, read from its init script's `status` or the process table with
//! the heuristics of Ansible's `service` (LinuxService.get_service_status, check_ps) and
//! `sysvinit` modules, which differ in their details.

/// `service`: the status command's exit code and stdout; `None` when it cannot tell.
pub fn service_running(name: &str, rc: i32, stdout: &str) -> Option<bool> {
    if matches!(rc, 1 | 2 | 3 | 4 | 69) {
        return Some(false);
    }
    if stdout.matches('\n').count() <= 1 {
        let clean = stdout.to_lowercase().replace(&name.to_lowercase(), "");
        if clean.contains("stop") {
            return Some(false);
        } else if clean.contains("run") {
            return Some(!clean.contains("not "));
        } else if clean.contains("start") && !clean.contains("not ") {
            return Some(true);
        } else if [
            "could not access pid file",
            "is dead and pid file exists",
            "dead but subsys locked",
            "dead but pid file exists",
        ]
        .iter()
        .any(|s| clean.contains(s))
        {
            return Some(false);
        }
    }
    if rc == 0 {
        return Some(true);
    }
    (name == "iptables" && stdout.contains("ACCEPT")).then_some(true)
}

/// `service`'s `pattern`: a line of `ps auxww` containing it (and not the module's own).
pub fn ps_matches(ps_out: &str, pattern: &str) -> bool {
    ps_out
        .split('\n')
        .any(|line| line.contains(pattern) && !line.contains("pattern="))
}

/// `sysvinit`'s reading: (whether it could tell, whether it runs). `ps_name` says whether
/// `ps` shows the name, its last resort.
pub fn sysvinit_status(name: &str, rc: i32, stdout: &str, ps_name: bool) -> (bool, bool, bool) {
    let (mut worked, mut started, mut by_ps) = (false, false, false);
    if name == "iptables" && stdout.contains("ACCEPT") {
        worked = true;
        started = true;
    }
    if !worked && stdout.matches('\n').count() <= 1 {
        let clean = stdout.to_lowercase().replace(&name.to_lowercase(), "");
        if [
            "stop",
            "is dead ",
            "dead but ",
            "could not access pid file",
            "inactive",
        ]
        .iter()
        .any(|s| clean.contains(s))
        {
            worked = true;
        } else if ["run", "start", "active"]
            .iter()
            .any(|s| clean.contains(s) && !clean.contains("not "))
        {
            worked = true;
            started = true;
        }
    }
    if !worked && matches!(rc, 1 | 2 | 3 | 4 | 69) {
        worked = true;
    }
    if !worked {
        if rc == 0 {
            worked = true;
            started = true;
        } else if ps_name {
            worked = true;
            started = true;
            by_ps = true;
        }
    }
    (worked, started, by_ps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_init_script_status_as_service_does() {
        assert_eq!(service_running("cron", 0, "cron is running.\n"), Some(true));
        assert_eq!(
            service_running("cron", 3, "cron is not running ... failed!\n"),
            Some(false)
        );
        assert_eq!(service_running("x", 0, "x is not running\n"), Some(false));
        assert_eq!(service_running("x", 0, "Stopped\n"), Some(false));
        assert_eq!(service_running("x", 5, "two\nlines\nhere\n"), None);
        assert_eq!(service_running("x", 0, "two\nlines\nhere\n"), Some(true));
        assert_eq!(
            service_running("svc", 7, "svc dead but pid file exists\n"),
            Some(false)
        );
        assert_eq!(service_running("iptables", 9, "a\nACCEPT\nb\n"), Some(true));
    }

    #[test]
    fn reads_init_script_status_as_sysvinit_does() {
        assert_eq!(
            sysvinit_status("t", 0, "t is running\n", false),
            (true, true, false)
        );
        assert_eq!(
            sysvinit_status("tpdemo", 3, "tpdemo is not running\n", false),
            (true, false, false)
        );
        assert_eq!(
            sysvinit_status("svc", 0, "inactive\n", false),
            (true, false, false)
        );
        assert_eq!(
            sysvinit_status("t", 9, "a\nb\nc\n", true),
            (true, true, true)
        );
        assert_eq!(
            sysvinit_status("t", 9, "a\nb\nc\n", false),
            (false, false, false)
        );
    }

    #[test]
    fn patterns_skip_the_modules_own_process() {
        let ps = "root 1 sshd\nroot 9 sleep 1000001\nroot 10 python pattern=sleep 1000001\n";
        assert!(ps_matches(ps, "sleep 1000001"));
        assert!(!ps_matches(
            "root 10 python pattern=sleep 1000001\n",
            "sleep 1000001"
        ));
    }
}
