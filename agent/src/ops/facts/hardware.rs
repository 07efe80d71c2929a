//! The hardware facts: processors, memory, mounts and uptime, from /proc.

use turbo_proto::FactValue;

use super::{Facts, map, read, s};
use crate::sys;

pub(super) fn hardware(out: &mut Facts) {
    if let Some(text) = read("/proc/cpuinfo") {
        let nproc = std::thread::available_parallelism()
            .map(|n| n.get() as i64)
            .ok();
        out.extend(parse_cpuinfo(&text, nproc));
    }
    if let Some(text) = read("/proc/meminfo") {
        out.extend(parse_meminfo(&text));
    }
    if let Some(text) = read("/proc/mounts") {
        let mounts = parse_mounts(&text).into_iter().map(mount_fact).collect();
        out.push(("mounts".into(), FactValue::List(mounts)));
    }
    if let Some(seconds) = read("/proc/uptime").as_deref().and_then(parse_uptime) {
        out.push(("uptime_seconds".into(), FactValue::Int(seconds)));
    }
}

/// processor (index, vendor, model per CPU), processor_count (sockets), processor_cores
/// (per socket), processor_threads_per_core, processor_vcpus, processor_nproc.
pub fn parse_cpuinfo(text: &str, nproc: Option<i64>) -> Facts {
    let mut processor = Vec::new();
    let mut occurrences = 0i64;
    // physical id -> cores per socket; core id -> siblings, as Ansible keys them.
    let mut sockets: Vec<(String, i64)> = Vec::new();
    let mut cores: Vec<(String, i64)> = Vec::new();
    let (mut physid, mut coreid) = (String::new(), String::new());
    fn set(table: &mut Vec<(String, i64)>, key: &str, value: i64, only_new: bool) {
        match table.iter_mut().find(|(k, _)| k == key) {
            Some(entry) if !only_new => entry.1 = value,
            Some(_) => {}
            None => table.push((key.to_string(), value)),
        }
    }
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "processor" => {
                occurrences += 1;
                processor.push(s(value));
            }
            "vendor_id" | "model name" | "Processor" | "cpu" | "Vendor" => processor.push(s(value)),
            "physical id" => {
                physid = value.to_string();
                set(&mut sockets, &physid, 1, true);
            }
            "core id" => {
                coreid = value.to_string();
                set(&mut cores, &coreid, 1, true);
            }
            "cpu cores" => {
                if let Ok(n) = value.parse() {
                    set(&mut sockets, &physid, n, false);
                }
            }
            "siblings" => {
                if let Ok(n) = value.parse() {
                    set(&mut cores, &coreid, n, false);
                }
            }
            _ => {}
        }
    }
    let count = if sockets.is_empty() {
        occurrences
    } else {
        sockets.len() as i64
    };
    let per_socket = sockets.first().map_or(1, |(_, n)| *n).max(1);
    let threads = (cores.first().map_or(1, |(_, n)| *n) / per_socket).max(1);
    vec![
        ("processor".into(), FactValue::List(processor)),
        ("processor_count".into(), FactValue::Int(count)),
        ("processor_cores".into(), FactValue::Int(per_socket)),
        ("processor_threads_per_core".into(), FactValue::Int(threads)),
        (
            "processor_vcpus".into(),
            FactValue::Int(threads * count * per_socket),
        ),
        (
            "processor_nproc".into(),
            FactValue::Int(nproc.unwrap_or(occurrences)),
        ),
    ]
}

/// memtotal_mb, memfree_mb, swaptotal_mb, swapfree_mb and the memory_mb dict.
pub fn parse_meminfo(text: &str) -> Facts {
    let kib = |name: &str| -> Option<i64> {
        text.lines().find_map(|line| {
            let (key, rest) = line.split_once(':')?;
            (key.trim() == name).then(|| rest.split_whitespace().next()?.parse().ok())?
        })
    };
    let mb = |name: &str| kib(name).map(|k| k / 1024);
    let mut out = Facts::new();
    for (fact, key) in [
        ("memtotal_mb", "MemTotal"),
        ("memfree_mb", "MemFree"),
        ("swaptotal_mb", "SwapTotal"),
        ("swapfree_mb", "SwapFree"),
    ] {
        if let Some(v) = mb(key) {
            out.push((fact.into(), FactValue::Int(v)));
        }
    }
    let (Some(total), Some(free)) = (mb("MemTotal"), mb("MemFree")) else {
        return out;
    };
    let nocache_free = free + mb("Buffers").unwrap_or(0) + mb("Cached").unwrap_or(0);
    let (swap_total, swap_free) = (mb("SwapTotal").unwrap_or(0), mb("SwapFree").unwrap_or(0));
    let int = FactValue::Int;
    out.push((
        "memory_mb".into(),
        map(vec![
            (
                "real",
                map(vec![
                    ("total", int(total)),
                    ("used", int(total - free)),
                    ("free", int(free)),
                ]),
            ),
            (
                "nocache",
                map(vec![
                    ("free", int(nocache_free)),
                    ("used", int(total - nocache_free)),
                ]),
            ),
            (
                "swap",
                map(vec![
                    ("total", int(swap_total)),
                    ("free", int(swap_free)),
                    ("used", int(swap_total - swap_free)),
                    ("cached", int(mb("SwapCached").unwrap_or(0))),
                ]),
            ),
        ]),
    ));
    out
}

#[derive(Debug, Clone, PartialEq)]
pub struct Mount {
    pub device: String,
    pub mount: String,
    pub fstype: String,
    pub options: String,
    pub dump: i64,
    pub passno: i64,
}

/// The mounts Ansible lists: those of devices (`/dev/...`) and network shares (`host:/x`),
/// not the kernel's pseudo file systems. Octal escapes (`\040`) are decoded.
pub fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let device = unescape_mount(fields.next()?);
            let mount = unescape_mount(fields.next()?);
            let fstype = fields.next()?.to_string();
            let options = fields.next()?.to_string();
            let dump = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
            let passno = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
            let real = device.starts_with('/') || device.contains(":/");
            (real && fstype != "none").then_some(Mount {
                device,
                mount,
                fstype,
                options,
                dump,
                passno,
            })
        })
        .collect()
}

fn unescape_mount(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let code =
                (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(code);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn mount_fact(m: Mount) -> FactValue {
    let mut entries = vec![
        ("mount", s(&m.mount)),
        ("device", s(&m.device)),
        ("fstype", s(&m.fstype)),
        ("options", s(&m.options)),
        ("dump", FactValue::Int(m.dump)),
        ("passno", FactValue::Int(m.passno)),
    ];
    // Network shares can hang statvfs when the server is away: sizes only for local ones.
    let network = m.device.contains(":/") || m.fstype.starts_with("nfs") || m.fstype == "cifs";
    if !network && let Ok(st) = sys::fs_stats(&m.mount) {
        let int = |v: u64| FactValue::Int(v as i64);
        entries.extend([
            ("size_total", int(st.f_frsize * st.f_blocks)),
            ("size_available", int(st.f_frsize * st.f_bavail)),
            ("block_size", int(st.f_bsize)),
            ("block_total", int(st.f_blocks)),
            ("block_available", int(st.f_bavail)),
            // Ansible counts reserved blocks as used: total minus what users may take.
            ("block_used", int(st.f_blocks.saturating_sub(st.f_bavail))),
            ("inode_total", int(st.f_files)),
            ("inode_available", int(st.f_favail)),
            ("inode_used", int(st.f_files.saturating_sub(st.f_favail))),
        ]);
    }
    entries.push(("uuid", s("N/A")));
    map(entries)
}

/// Whole seconds since boot, from /proc/uptime's first field.
pub fn parse_uptime(text: &str) -> Option<i64> {
    let first: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some(first as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::facts::tests::get;

    #[test]
    fn cpuinfo_counts_sockets_cores_and_threads() {
        let mut text = String::new();
        for (cpu, core) in [(0, 0), (1, 1), (2, 0), (3, 1)] {
            text.push_str(&format!(
                "processor\t: {cpu}\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon\nphysical id\t: 0\nsiblings\t: 4\ncore id\t\t: {core}\ncpu cores\t: 2\n\n"
            ));
        }
        let facts = parse_cpuinfo(&text, None);
        assert_eq!(get(&facts, "processor_count"), &FactValue::Int(1));
        assert_eq!(get(&facts, "processor_cores"), &FactValue::Int(2));
        assert_eq!(
            get(&facts, "processor_threads_per_core"),
            &FactValue::Int(2)
        );
        assert_eq!(get(&facts, "processor_vcpus"), &FactValue::Int(4));
        assert_eq!(get(&facts, "processor_nproc"), &FactValue::Int(4));
        let FactValue::List(list) = get(&facts, "processor") else {
            panic!()
        };
        assert_eq!(list[..3], [s("0"), s("GenuineIntel"), s("Xeon")]);
        assert_eq!(list.len(), 12);
        // No topology lines (some VMs, ARM): one socket per processor line.
        let arm = parse_cpuinfo("processor : 0\nprocessor : 1\n", Some(2));
        assert_eq!(get(&arm, "processor_count"), &FactValue::Int(2));
        assert_eq!(get(&arm, "processor_vcpus"), &FactValue::Int(2));
    }

    #[test]
    fn meminfo_in_megabytes() {
        let text = "MemTotal:        2048000 kB\nMemFree:          512000 kB\nBuffers:  102400 kB\nCached:  204800 kB\nSwapCached: 0 kB\nSwapTotal: 1048576 kB\nSwapFree: 1048576 kB\n";
        let facts = parse_meminfo(text);
        assert_eq!(get(&facts, "memtotal_mb"), &FactValue::Int(2000));
        assert_eq!(get(&facts, "memfree_mb"), &FactValue::Int(500));
        assert_eq!(get(&facts, "swaptotal_mb"), &FactValue::Int(1024));
        let FactValue::Map(mem) = get(&facts, "memory_mb") else {
            panic!()
        };
        assert_eq!(
            mem[1].1,
            map(vec![
                ("free", FactValue::Int(800)),
                ("used", FactValue::Int(1200))
            ])
        );
    }

    #[test]
    fn mounts_keep_devices_and_shares_only() {
        let text = "proc /proc proc rw 0 0\n/dev/vda / ext4 rw,relatime 0 0\nsrv:/export /mnt/my\\040share nfs4 rw 0 0\ntmpfs /tmp tmpfs rw 0 0\n/dev/sdb none none rw 0 0\n";
        let mounts = parse_mounts(text);
        assert_eq!(mounts.len(), 2);
        assert_eq!(
            mounts[0],
            Mount {
                device: "/dev/vda".into(),
                mount: "/".into(),
                fstype: "ext4".into(),
                options: "rw,relatime".into(),
                dump: 0,
                passno: 0,
            }
        );
        assert_eq!(mounts[1].mount, "/mnt/my share");
        let FactValue::Map(root) = mount_fact(mounts[0].clone()) else {
            panic!()
        };
        assert!(
            root.iter()
                .any(|(k, v)| k == "size_total" && matches!(v, FactValue::Int(n) if *n > 0))
        );
        assert_eq!(parse_uptime("12345.67 2345.00\n"), Some(12345));
        assert_eq!(parse_uptime(""), None);
    }
}
