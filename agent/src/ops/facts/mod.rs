//! Ansible's `setup` facts, read natively from /proc, /sys, /etc and a few libc calls:
//! a millisecond instead of a Python interpreter and a dozen subprocesses. Names and value
//! shapes follow what Ansible's fact collectors report on Linux, without the `ansible_`
//! prefix (the controller adds it). Every parser takes the file's text, so tests can feed
//! samples; a missing file leaves its facts out rather than failing the op.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use turbo_proto::{FactValue, OpResult};

use crate::sys;
use crate::users;

mod hardware;
mod lsb;
mod network;
use hardware::hardware;
use network::network;
#[cfg(test)]
use network::parse_default_route;

pub type Facts = Vec<(String, FactValue)>;

/// Groups of facts, as `gather_subset` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Subset {
    Platform,
    Distribution,
    Lsb,
    PkgMgr,
    ServiceMgr,
    User,
    Env,
    DateTime,
    Hardware,
    Network,
}

const MIN: &[Subset] = &[
    Subset::Platform,
    Subset::Distribution,
    Subset::Lsb,
    Subset::PkgMgr,
    Subset::ServiceMgr,
    Subset::User,
    Subset::Env,
    Subset::DateTime,
];

const ALL: &[Subset] = &[
    Subset::Platform,
    Subset::Distribution,
    Subset::Lsb,
    Subset::PkgMgr,
    Subset::ServiceMgr,
    Subset::User,
    Subset::Env,
    Subset::DateTime,
    Subset::Hardware,
    Subset::Network,
];

fn subset_named(name: &str) -> Option<&'static [Subset]> {
    Some(match name {
        "all" => ALL,
        "min" => MIN,
        "platform" => &[Subset::Platform],
        "distribution" => &[Subset::Distribution],
        "lsb" => &[Subset::Lsb],
        "pkg_mgr" => &[Subset::PkgMgr],
        "service_mgr" => &[Subset::ServiceMgr],
        "user" => &[Subset::User],
        "env" => &[Subset::Env],
        "date_time" => &[Subset::DateTime],
        "hardware" | "devices" | "mounts" => &[Subset::Hardware],
        "network" | "interfaces" => &[Subset::Network],
        _ => return None,
    })
}

/// Ansible's subset arithmetic: what is named is added (everything when only exclusions
/// are named), `min` always comes along unless `!min`, `!all` drops all but `min`,
/// and a subset named outright is never excluded.
pub fn selected(subsets: &[String]) -> BTreeSet<Subset> {
    let mut add = BTreeSet::new();
    let mut exclude: BTreeSet<Subset> = BTreeSet::new();
    // What is named outright survives an exclusion (`[!all, network]` = min + network).
    let mut explicit: BTreeSet<Subset> = BTreeSet::new();
    for raw in subsets {
        let name = raw.trim();
        if let Some(excluded) = name.strip_prefix('!') {
            if excluded == "all" {
                exclude.extend(ALL.iter().filter(|s| !MIN.contains(s)));
            } else if let Some(group) = subset_named(excluded) {
                exclude.extend(group);
            }
        } else if let Some(group) = subset_named(name) {
            add.extend(group);
            if name != "all" && name != "min" {
                explicit.extend(group);
            }
        }
    }
    if add.is_empty() {
        add.extend(ALL);
    }
    add.extend(MIN);
    add.retain(|s| explicit.contains(s) || !exclude.contains(s));
    add
}

/// The `Facts` op.
pub fn facts(subsets: &[String]) -> OpResult {
    let chosen = selected(subsets);
    let mut out = Facts::new();
    let mut family = String::new();
    for subset in chosen {
        match subset {
            Subset::Platform => platform(&mut out),
            Subset::Distribution => {
                let d = distribution(&DistroFiles::read());
                family = match d.iter().find(|(k, _)| k == "os_family") {
                    Some((_, FactValue::Str(f))) => f.clone(),
                    _ => String::new(),
                };
                out.extend(d);
            }
            Subset::Lsb => out.push(lsb::lsb()),
            Subset::PkgMgr => out.push(str_fact(
                "pkg_mgr",
                pkg_mgr(&family, |p| Path::new(p).exists()),
            )),
            Subset::ServiceMgr => out.push(str_fact(
                "service_mgr",
                &service_mgr(read("/proc/1/comm").as_deref(), |p| Path::new(p).exists()),
            )),
            Subset::User => user(&mut out),
            Subset::Env => out.push((
                "env".into(),
                FactValue::Map(
                    std::env::vars_os()
                        .map(|(k, v)| {
                            (
                                k.to_string_lossy().into_owned(),
                                FactValue::Str(v.to_string_lossy().into_owned()),
                            )
                        })
                        .collect(),
                ),
            )),
            Subset::DateTime => out.push(("date_time".into(), date_time())),
            Subset::Hardware => hardware(&mut out),
            Subset::Network => network(&mut out),
        }
    }
    OpResult::Facts(out)
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn str_fact(name: &str, value: &str) -> (String, FactValue) {
    (name.to_string(), FactValue::Str(value.to_string()))
}

fn s(value: impl Into<String>) -> FactValue {
    FactValue::Str(value.into())
}

fn map(entries: Vec<(&str, FactValue)>) -> FactValue {
    FactValue::Map(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

// ---- platform ----

fn platform(out: &mut Facts) {
    let Some([system, nodename, kernel, kernel_version, machine]) = sys::uname_fields() else {
        return;
    };
    let fqdn = fqdn_from_hosts(&read("/etc/hosts").unwrap_or_default(), &nodename);
    let domain = fqdn
        .split_once('.')
        .map(|(_, d)| d)
        .unwrap_or("")
        .to_string();
    out.push(str_fact("system", &system));
    out.push(str_fact("kernel", &kernel));
    out.push(str_fact("kernel_version", &kernel_version));
    out.push(str_fact("machine", &machine));
    out.push(str_fact("architecture", &architecture(&machine)));
    out.push(str_fact(
        "userspace_bits",
        &(usize::BITS as usize).to_string(),
    ));
    if machine == "x86_64" {
        out.push(str_fact(
            "userspace_architecture",
            if usize::BITS == 64 { "x86_64" } else { "i386" },
        ));
    }
    out.push(str_fact(
        "hostname",
        nodename.split('.').next().unwrap_or(&nodename),
    ));
    out.push(str_fact("nodename", &nodename));
    out.push(str_fact("fqdn", &fqdn));
    out.push(str_fact("domain", &domain));
    let machine_id = read("/var/lib/dbus/machine-id").or_else(|| read("/etc/machine-id"));
    if let Some(id) = machine_id.as_deref().and_then(|t| t.lines().next())
        && !id.is_empty()
    {
        out.push(str_fact("machine_id", id));
    }
}

/// Ansible names every 32-bit x86 `i386`.
pub fn architecture(machine: &str) -> String {
    let b = machine.as_bytes();
    if b.len() == 4 && b[0] == b'i' && (b'3'..=b'6').contains(&b[1]) && &b[2..] == b"86" {
        "i386".into()
    } else {
        machine.to_string()
    }
}

/// What Python's `socket.getfqdn()` answers from the hosts file: the name's address, the
/// first line naming that address, and of its names the first with a dot, else its first.
/// A name missing from the file stays as it is.
pub fn fqdn_from_hosts(hosts: &str, name: &str) -> String {
    let entries: Vec<(&str, Vec<&str>)> = hosts
        .lines()
        .filter_map(|line| {
            let line = line.split('#').next().unwrap_or("");
            let mut words = line.split_whitespace();
            let address = words.next()?;
            let names: Vec<&str> = words.collect();
            (!names.is_empty()).then_some((address, names))
        })
        .collect();
    let Some((address, _)) = entries.iter().find(|(_, names)| names.contains(&name)) else {
        return name.to_string();
    };
    let Some((_, names)) = entries.iter().find(|(a, _)| a == address) else {
        return name.to_string();
    };
    names
        .iter()
        .find(|n| n.contains('.'))
        .unwrap_or(&names[0])
        .to_string()
}

// ---- distribution ----

/// The release files distribution facts are read from.
#[derive(Debug, Default)]
pub struct DistroFiles {
    pub os_release: String,
    pub debian_version: Option<String>,
    pub alpine_release: Option<String>,
    pub redhat_release: Option<String>,
}

impl DistroFiles {
    fn read() -> Self {
        DistroFiles {
            os_release: read("/etc/os-release")
                .or_else(|| read("/usr/lib/os-release"))
                .unwrap_or_default(),
            debian_version: read("/etc/debian_version"),
            alpine_release: read("/etc/alpine-release"),
            redhat_release: read("/etc/redhat-release"),
        }
    }
}

/// os-release(5): `KEY=value` lines, values maybe quoted, `#` comments.
pub fn parse_os_release(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            if line.starts_with('#') {
                return None;
            }
            let (key, value) = line.split_once('=')?;
            let value = value.trim();
            let unquoted = ['"', '\'']
                .iter()
                .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
                .unwrap_or(value);
            let mut plain = String::with_capacity(unquoted.len());
            let mut chars = unquoted.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    plain.extend(chars.next());
                } else {
                    plain.push(c);
                }
            }
            Some((key.trim().to_string(), plain))
        })
        .collect()
}

/// os-release's ID to the distribution name Ansible reports.
fn distribution_name(id: &str) -> String {
    let known = [
        ("debian", "Debian"),
        ("raspbian", "Debian"),
        ("ubuntu", "Ubuntu"),
        ("linuxmint", "Linux Mint"),
        ("pop", "Pop!_OS"),
        ("kali", "Kali"),
        ("devuan", "Devuan"),
        ("fedora", "Fedora"),
        ("centos", "CentOS"),
        ("rhel", "RedHat"),
        ("rocky", "Rocky"),
        ("almalinux", "AlmaLinux"),
        ("ol", "OracleLinux"),
        ("amzn", "Amazon"),
        ("arch", "Archlinux"),
        ("manjaro", "Manjaro"),
        ("alpine", "Alpine"),
        ("gentoo", "Gentoo"),
        ("opensuse-leap", "openSUSE Leap"),
        ("opensuse-tumbleweed", "openSUSE Tumbleweed"),
        ("sles", "SLES"),
        ("sled", "SLED"),
        ("clear-linux-os", "Clear Linux OS"),
    ];
    if let Some((_, name)) = known.iter().find(|(k, _)| *k == id) {
        return name.to_string();
    }
    // Python's str.capitalize, as Ansible's fallback uses.
    let mut chars = id.chars();
    match chars.next() {
        Some(first) => first
            .to_uppercase()
            .chain(chars.flat_map(char::to_lowercase))
            .collect(),
        None => "NA".into(),
    }
}

fn os_family(distribution: &str) -> String {
    const FAMILIES: &[(&str, &[&str])] = &[
        (
            "RedHat",
            &[
                "RedHat",
                "Fedora",
                "CentOS",
                "Scientific",
                "SLC",
                "Ascendos",
                "CloudLinux",
                "PSBM",
                "OracleLinux",
                "OVS",
                "OEL",
                "Amazon",
                "Virtuozzo",
                "XenServer",
                "Alibaba",
                "EulerOS",
                "openEuler",
                "AlmaLinux",
                "Rocky",
                "TencentOS",
                "EuroLinux",
                "Kylin Linux Advanced Server",
                "MIRACLE",
            ],
        ),
        (
            "Debian",
            &[
                "Debian",
                "Ubuntu",
                "Raspbian",
                "Neon",
                "KDE neon",
                "Linux Mint",
                "SteamOS",
                "Devuan",
                "Kali",
                "Cumulus Linux",
                "Pop!_OS",
                "Parrot",
                "Pardus GNU/Linux",
                "Uos",
                "Deepin",
                "OSMC",
            ],
        ),
        (
            "Suse",
            &[
                "SuSE",
                "SLES",
                "SLED",
                "openSUSE",
                "openSUSE Tumbleweed",
                "SLES_SAP",
                "SUSE_LINUX",
                "openSUSE Leap",
                "ALP-Dolomite",
                "SL-Micro",
                "openSUSE MicroOS",
            ],
        ),
        ("Archlinux", &["Archlinux", "Antergos", "Manjaro"]),
        ("Mandrake", &["Mandrake", "Mandriva"]),
        ("Gentoo", &["Gentoo", "Funtoo"]),
        ("Alpine", &["Alpine"]),
        ("ClearLinux", &["Clear Linux OS", "Clear Linux Mix"]),
    ];
    FAMILIES
        .iter()
        .find(|(_, names)| names.contains(&distribution))
        .map(|(family, _)| family.to_string())
        .unwrap_or_else(|| distribution.to_string())
}

/// distribution, distribution_version, distribution_major_version, distribution_release,
/// os_family.
pub fn distribution(files: &DistroFiles) -> Facts {
    let release = parse_os_release(&files.os_release);
    let get = |key: &str| {
        release
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    let id = get("ID").unwrap_or("");
    let name = distribution_name(id);
    let numeric = |text: &str| {
        text.split_whitespace()
            .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
            .map(|w| w.to_string())
    };
    // Debian's and CentOS's os-release only say the major version; Ansible reports the
    // point release from the distribution's own file.
    let version = match id {
        "debian" => files
            .debian_version
            .as_deref()
            .map(str::trim)
            .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()))
            .map(str::to_string),
        "alpine" => files
            .alpine_release
            .as_deref()
            .map(|v| v.trim().to_string()),
        "centos" => files
            .redhat_release
            .as_deref()
            .and_then(numeric)
            .map(|v| v.split('.').take(2).collect::<Vec<_>>().join(".")),
        _ => None,
    }
    .or_else(|| get("VERSION_ID").map(str::to_string))
    .unwrap_or_else(|| "NA".into());
    let major = version.split('.').next().unwrap_or("").to_string();
    let minor = version.split('.').nth(1).map(str::to_string);
    let codename = get("VERSION_CODENAME")
        .or_else(|| get("UBUNTU_CODENAME"))
        .map(str::to_string)
        .or_else(|| {
            let v = get("VERSION")?;
            let inner = v.split_once('(')?.1.split_once(')')?.0;
            Some(inner.to_string())
        })
        .unwrap_or_default();
    let mut facts = vec![
        str_fact("distribution", &name),
        str_fact("distribution_version", &version),
        str_fact("distribution_major_version", &major),
        str_fact("distribution_release", &codename),
        str_fact("os_family", &os_family(&name)),
    ];
    if let Some(minor) = minor {
        facts.push(str_fact("distribution_minor_version", &minor));
    }
    facts
}

/// The package manager Ansible's `package` module would pick.
pub fn pkg_mgr(family: &str, exists: impl Fn(&str) -> bool) -> &'static str {
    let by_family: &[(&str, &str)] = match family {
        "Debian" => &[("/usr/bin/apt-get", "apt")],
        "RedHat" => &[
            ("/usr/bin/dnf5", "dnf5"),
            ("/usr/bin/dnf", "dnf"),
            ("/usr/bin/yum", "yum"),
        ],
        "Suse" => &[("/usr/bin/zypper", "zypper")],
        "Archlinux" => &[("/usr/bin/pacman", "pacman")],
        "Alpine" => &[("/sbin/apk", "apk")],
        "Gentoo" => &[("/usr/bin/emerge", "portage")],
        _ => &[],
    };
    const ANY: &[(&str, &str)] = &[
        ("/usr/bin/apt-get", "apt"),
        ("/usr/bin/dnf", "dnf"),
        ("/usr/bin/yum", "yum"),
        ("/usr/bin/zypper", "zypper"),
        ("/usr/bin/pacman", "pacman"),
        ("/sbin/apk", "apk"),
        ("/usr/bin/emerge", "portage"),
    ];
    by_family
        .iter()
        .chain(ANY)
        .find(|(path, _)| exists(path))
        .map(|(_, name)| *name)
        .unwrap_or("unknown")
}

/// What runs services, as Ansible decides it: PID 1's name unless it is a generic `init`
/// or a shell, else the traces each init system leaves.
pub fn service_mgr(proc1_comm: Option<&str>, exists: impl Fn(&str) -> bool) -> String {
    if let Some(comm) = proc1_comm {
        let name = comm.trim();
        let name = name.rsplit('/').next().unwrap_or(name);
        if !name.is_empty() && name != "init" && !name.ends_with("sh") {
            return name.to_string();
        }
    }
    if exists("/run/systemd/system") || exists("/dev/.run/systemd") {
        "systemd".into()
    } else if exists("/sbin/openrc") {
        "openrc".into()
    } else if exists("/etc/init.d/") {
        "sysvinit".into()
    } else {
        "service".into()
    }
}

// ---- user ----

fn user(out: &mut Facts) {
    let uid = sys::real_uid();
    let gid = sys::real_gid();
    let entries = users::read_passwd();
    let by_uid = entries.iter().find(|e| e.uid == uid);
    // Python's getpass.getuser(): the login variables first, then the passwd entry.
    let name = ["LOGNAME", "USER", "LNAME", "USERNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|n| !n.is_empty()))
        .or_else(|| by_uid.map(|e| e.name.clone()))
        .unwrap_or_else(|| uid.to_string());
    let entry = entries.iter().find(|e| e.name == name).or(by_uid);
    out.push(str_fact("user_id", &name));
    // As Ansible: the passwd entry of that name, which differs from the process's ids
    // when su to root kept the login user's LOGNAME.
    let (user_uid, user_gid) = entry.map_or((uid, gid), |e| (e.uid, e.gid));
    out.push(("user_uid".into(), FactValue::Int(user_uid.into())));
    out.push(("user_gid".into(), FactValue::Int(user_gid.into())));
    if let Some(e) = entry {
        out.push(str_fact("user_gecos", &e.gecos));
        out.push(str_fact("user_dir", &e.home));
        out.push(str_fact("user_shell", &e.shell));
    }
    out.push(("real_user_id".into(), FactValue::Int(uid.into())));
    out.push((
        "effective_user_id".into(),
        FactValue::Int(sys::effective_uid().into()),
    ));
    out.push(("real_group_id".into(), FactValue::Int(gid.into())));
    out.push((
        "effective_group_id".into(),
        FactValue::Int(sys::effective_gid().into()),
    ));
}

// ---- date_time ----

/// Ansible's date_time dict: every value a string, local time except the iso8601 forms.
fn date_time() -> FactValue {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let epoch = now.as_secs() as i64;
    let micros = now.subsec_micros();
    let (Some(local), Some(utc)) = (
        sys::BrokenDownTime::local(epoch),
        sys::BrokenDownTime::utc(epoch),
    ) else {
        return FactValue::Map(Vec::new());
    };
    let l = |f: &str| s(local.format(f));
    map(vec![
        ("year", l("%Y")),
        ("month", l("%m")),
        ("weekday", l("%A")),
        ("weekday_number", l("%w")),
        ("weeknumber", l("%W")),
        ("day", l("%d")),
        ("hour", l("%H")),
        ("minute", l("%M")),
        ("second", l("%S")),
        ("epoch", s(epoch.to_string())),
        ("epoch_int", s(epoch.to_string())),
        ("date", l("%Y-%m-%d")),
        ("time", l("%H:%M:%S")),
        (
            "iso8601_micro",
            s(format!("{}.{micros:06}Z", utc.format("%Y-%m-%dT%H:%M:%S"))),
        ),
        ("iso8601", s(utc.format("%Y-%m-%dT%H:%M:%SZ"))),
        (
            "iso8601_basic",
            s(format!("{}{micros:06}", local.format("%Y%m%dT%H%M%S"))),
        ),
        ("iso8601_basic_short", l("%Y%m%dT%H%M%S")),
        ("tz", l("%Z")),
        ("tz_dst", s(sys::dst_zone_name())),
        ("tz_offset", l("%z")),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn get<'f>(facts: &'f Facts, name: &str) -> &'f FactValue {
        &facts
            .iter()
            .find(|(k, _)| k == name)
            .unwrap_or_else(|| panic!("no fact {name} in {facts:?}"))
            .1
    }

    fn names(subsets: &[&str]) -> BTreeSet<Subset> {
        selected(&subsets.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn subsets_follow_ansibles_arithmetic() {
        let all: BTreeSet<Subset> = ALL.iter().copied().collect();
        let min: BTreeSet<Subset> = MIN.iter().copied().collect();
        assert_eq!(names(&["all"]), all);
        assert_eq!(names(&[]), all);
        assert_eq!(names(&["min"]), min);
        assert_eq!(names(&["!all"]), min);
        assert_eq!(names(&["!all", "!min"]), BTreeSet::new());
        let mut net = min.clone();
        net.insert(Subset::Network);
        assert_eq!(names(&["network"]), net);
        assert_eq!(names(&["!all", "network"]), net);
        let mut no_hw = all.clone();
        no_hw.remove(&Subset::Hardware);
        assert_eq!(names(&["!hardware"]), no_hw);
        assert_eq!(names(&["all", "!hardware", "bogus"]), no_hw);
    }

    #[test]
    fn os_release_values_are_unquoted() {
        let parsed =
            parse_os_release("# c\nNAME=\"Debian GNU/Linux\"\nID=debian\nX='a b'\nY=\"q\\\"x\"\n");
        assert_eq!(
            parsed,
            vec![
                ("NAME".into(), "Debian GNU/Linux".into()),
                ("ID".into(), "debian".into()),
                ("X".into(), "a b".into()),
                ("Y".into(), "q\"x".into()),
            ]
        );
    }

    fn distro(files: DistroFiles) -> Vec<String> {
        distribution(&files)
            .into_iter()
            .map(|(_, v)| match v {
                FactValue::Str(s) => s,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn debian_reports_its_point_release() {
        let files = DistroFiles {
            os_release: "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nVERSION=\"12 (bookworm)\"\nVERSION_CODENAME=bookworm\nID=debian\n".into(),
            debian_version: Some("12.11\n".into()),
            ..DistroFiles::default()
        };
        assert_eq!(
            distro(files),
            ["Debian", "12.11", "12", "bookworm", "Debian", "11"]
        );
    }

    #[test]
    fn other_distributions() {
        let ubuntu = DistroFiles {
            os_release: "NAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\nVERSION=\"22.04.3 LTS (Jammy Jellyfish)\"\nID=ubuntu\nID_LIKE=debian\nVERSION_CODENAME=jammy\nUBUNTU_CODENAME=jammy\n".into(),
            debian_version: Some("bookworm/sid\n".into()),
            ..DistroFiles::default()
        };
        assert_eq!(
            distro(ubuntu),
            ["Ubuntu", "22.04", "22", "jammy", "Debian", "04"]
        );
        let rocky = DistroFiles {
            os_release: "NAME=\"Rocky Linux\"\nVERSION=\"9.2 (Blue Onyx)\"\nID=\"rocky\"\nVERSION_ID=\"9.2\"\n".into(),
            redhat_release: Some("Rocky Linux release 9.2 (Blue Onyx)\n".into()),
            ..DistroFiles::default()
        };
        assert_eq!(
            distro(rocky),
            ["Rocky", "9.2", "9", "Blue Onyx", "RedHat", "2"]
        );
        let centos = DistroFiles {
            os_release:
                "NAME=\"CentOS Linux\"\nVERSION=\"7 (Core)\"\nID=\"centos\"\nVERSION_ID=\"7\"\n"
                    .into(),
            redhat_release: Some("CentOS Linux release 7.9.2009 (Core)\n".into()),
            ..DistroFiles::default()
        };
        assert_eq!(
            distro(centos),
            ["CentOS", "7.9", "7", "Core", "RedHat", "9"]
        );
        let alpine = DistroFiles {
            os_release: "NAME=\"Alpine Linux\"\nID=alpine\nVERSION_ID=3.19.1\n".into(),
            alpine_release: Some("3.19.1\n".into()),
            ..DistroFiles::default()
        };
        assert_eq!(
            distro(alpine),
            ["Alpine", "3.19.1", "3", "", "Alpine", "19"]
        );
        let odd = DistroFiles {
            os_release: "ID=myos\n".into(),
            ..DistroFiles::default()
        };
        assert_eq!(distro(odd), ["Myos", "NA", "NA", "", "Myos"]);
    }

    #[test]
    fn package_and_service_managers() {
        let only = |paths: &'static [&'static str]| move |p: &str| paths.contains(&p);
        assert_eq!(pkg_mgr("Debian", only(&["/usr/bin/apt-get"])), "apt");
        assert_eq!(
            pkg_mgr("RedHat", only(&["/usr/bin/yum", "/usr/bin/dnf"])),
            "dnf"
        );
        assert_eq!(pkg_mgr("RedHat", only(&["/usr/bin/yum"])), "yum");
        assert_eq!(pkg_mgr("Myos", only(&["/sbin/apk"])), "apk");
        assert_eq!(pkg_mgr("Myos", only(&[])), "unknown");
        assert_eq!(service_mgr(Some("systemd\n"), only(&[])), "systemd");
        assert_eq!(
            service_mgr(Some("init\n"), only(&["/run/systemd/system"])),
            "systemd"
        );
        assert_eq!(
            service_mgr(Some("bash\n"), only(&["/etc/init.d/"])),
            "sysvinit"
        );
        assert_eq!(service_mgr(None, only(&["/sbin/openrc"])), "openrc");
        assert_eq!(service_mgr(Some("tini\n"), only(&[])), "tini");
    }

    #[test]
    fn fqdn_comes_from_the_first_line_of_the_names_address() {
        let hosts =
            "127.0.0.1 localhost\n# x\n10.0.0.5 web1.example.com web1 # comment\n127.0.1.1 box\n";
        assert_eq!(fqdn_from_hosts(hosts, "web1"), "web1.example.com");
        assert_eq!(fqdn_from_hosts(hosts, "box"), "box");
        assert_eq!(
            fqdn_from_hosts("127.0.0.1 localhost\n127.0.0.1 vm\n", "vm"),
            "localhost"
        );
        assert_eq!(fqdn_from_hosts(hosts, "elsewhere"), "elsewhere");
        assert_eq!(architecture("i686"), "i386");
        assert_eq!(architecture("x86_64"), "x86_64");
        assert_eq!(architecture("aarch64"), "aarch64");
    }

    #[test]
    fn default_route_and_gateway() {
        let text = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n";
        assert_eq!(
            parse_default_route(text),
            Some(("eth0".into(), Ipv4Addr::new(192, 0, 2, 1)))
        );
        assert_eq!(parse_default_route("Iface\tDestination\n"), None);
    }

    #[test]
    fn live_facts_describe_this_machine_quickly() {
        let start = std::time::Instant::now();
        let OpResult::Facts(facts) = facts(&["all".to_string()]) else {
            panic!()
        };
        let took = start.elapsed();
        assert!(took.as_millis() < 500, "{took:?}");
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(
            get(&facts, "hostname"),
            &s(hostname.trim().split('.').next().unwrap())
        );
        assert_eq!(get(&facts, "system"), &s("Linux"));
        assert_eq!(
            get(&facts, "user_uid"),
            &FactValue::Int(sys::real_uid().into())
        );
        assert!(matches!(get(&facts, "memtotal_mb"), FactValue::Int(n) if *n > 0));
        assert!(matches!(get(&facts, "interfaces"), FactValue::List(l) if l.contains(&s("lo"))));
        let FactValue::Map(dt) = get(&facts, "date_time") else {
            panic!()
        };
        assert_eq!(dt.len(), 20);
        let OpResult::Facts(min) = super::facts(&["!all".to_string()]) else {
            panic!()
        };
        assert!(min.iter().all(|(k, _)| k != "mounts" && k != "interfaces"));
        assert!(min.iter().any(|(k, _)| k == "distribution"));
    }
}
