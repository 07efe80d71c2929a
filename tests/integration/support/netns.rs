//! A throw-away network namespace joined to this one by a veth pair: an sshd started in
//! it (`SshdOptions::netns`) on the namespace's own 127.0.0.1 cannot be reached from here
//! at all, and one on its veth address can. Needs root and iproute2.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

pub struct NetNs {
    pub name: String,
    /// This side's end of the veth pair (deleting it deletes the pair).
    link: String,
    /// The namespace's address on the veth pair, reachable from here.
    pub inside: String,
}

impl NetNs {
    /// None when namespaces cannot be made here (not root, no iproute2).
    pub fn create() -> Option<NetNs> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let name = format!("tp{pid}n{n}");
        let link = format!("tpa{}{n}", pid % 100_000);
        let peer = format!("tpb{}{n}", pid % 100_000);
        // A /30 per namespace, from the pid so parallel test processes differ.
        let subnet = format!("10.251.{}", (pid as usize * 4 + n as usize) % 250);
        if !ip(&["netns", "add", &name]) {
            return None;
        }
        let netns = NetNs {
            name,
            link,
            inside: format!("{subnet}.2"),
        };
        let ok = ip(&[
            "netns",
            "exec",
            &netns.name,
            "ip",
            "link",
            "set",
            "lo",
            "up",
        ]) && ip(&[
            "link",
            "add",
            &netns.link,
            "type",
            "veth",
            "peer",
            "name",
            &peer,
        ]) && ip(&["link", "set", &peer, "netns", &netns.name])
            && ip(&["addr", "add", &format!("{subnet}.1/30"), "dev", &netns.link])
            && ip(&["link", "set", &netns.link, "up"])
            && ip(&[
                "netns",
                "exec",
                &netns.name,
                "ip",
                "addr",
                "add",
                &format!("{subnet}.2/30"),
                "dev",
                &peer,
            ])
            && ip(&[
                "netns",
                "exec",
                &netns.name,
                "ip",
                "link",
                "set",
                &peer,
                "up",
            ]);
        ok.then_some(netns)
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        ip(&["link", "del", &self.link]);
        ip(&["netns", "del", &self.name]);
    }
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .output()
        .is_ok_and(|out| out.status.success())
}
